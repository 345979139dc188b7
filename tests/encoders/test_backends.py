"""Every backend behind the one Encoder protocol, driven by a table of tiny random encoders (offline, CPU)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from PIL import Image

from bindlab.encoders.base import EncoderError, load_encoder


@dataclass(frozen=True)
class Case:
    """One tiny encoder: which builder, what it can do, what to expect."""

    kind: str  # bindlab.encoders.tiny builder
    backend: str  # id prefix it loads under
    dim: int  # embedding width
    images: bool  # has an image tower
    causal: bool  # text attention is left-to-right
    options: dict[str, Any] = field(default_factory=dict)  # load options (batch_size=2 exercises batching)


TEST_CASES = [
    Case("st", "st", 32, images=False, causal=False, options={"batch_size": 2}),
    Case("hf-clip", "hf", 16, images=True, causal=True, options={"batch_size": 2}),
    Case("hf-siglip", "hf", 32, images=True, causal=False, options={"batch_size": 2}),
    Case("hf-siglip-spm", "hf", 32, images=True, causal=False, options={"batch_size": 2}),
    Case("hf-siglip2", "hf", 32, images=True, causal=False, options={"batch_size": 2}),
    Case("open-clip", "open_clip", 16, images=True, causal=True, options={"batch_size": 2}),
    Case("qwen3vl", "qwen3vl", 32, images=True, causal=True, options={"batch_size": 2, "max_length": 256}),
]
IMAGE_CASES = [c for c in TEST_CASES if c.images]
TEXTS = [
    "a red cube and a blue sphere",
    "a dog",
    "a white and orange striped xylophone with a glowing hat",
    "A Wooden Chair, a metal lamp.",
]
LONG = " ".join(["red cube"] * 1000)  # 2,000 words


def _ids(cases: list[Case]) -> list[str]:
    return [c.kind for c in cases]


def _enc(tiny_encoder, case: Case):
    return tiny_encoder(case.kind, **case.options)


def _images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [
        Image.fromarray(rng.integers(0, 256, (48, 40, 3), dtype=np.uint8)),
        Image.new("RGB", (1, 1), (10, 200, 30)),
        Image.fromarray(rng.integers(0, 256, (30, 90, 3), dtype=np.uint8)),
    ]


# -- protocol: shapes, normalisation, batching ----------------------------------------------------------------
@pytest.mark.parametrize("case", TEST_CASES, ids=_ids(TEST_CASES))
def test_texts_shape_norm_and_batch_invariance(tiny_encoder, case):
    enc = _enc(tiny_encoder, case)
    assert enc.id.startswith(case.backend + ":") and enc.fingerprint.startswith(enc.id)
    together = enc.embed_texts(TEXTS)  # batch_size=2: several batches, length-sorted
    assert together.shape == (len(TEXTS), case.dim) and together.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    alone = np.concatenate([enc.embed_texts([t]) for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert not np.allclose(together[0], together[1])


@pytest.mark.parametrize("case", IMAGE_CASES, ids=_ids(IMAGE_CASES))
def test_images_shape_norm_and_batch_invariance(tiny_encoder, case):
    enc = _enc(tiny_encoder, case)
    ims = _images()
    together = enc.embed_images(ims)
    assert together.shape == (len(ims), case.dim) and together.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    alone = np.concatenate([enc.embed_images([im]) for im in ims])
    np.testing.assert_allclose(together, alone, atol=1e-5)


@pytest.mark.parametrize("case", IMAGE_CASES, ids=_ids(IMAGE_CASES))
def test_image_modes_follow_the_library(tiny_encoder, case, tmp_path):
    enc = _enc(tiny_encoder, case)
    a16 = np.arange(32 * 32, dtype=np.uint16).reshape(32, 32) * 60
    path = tmp_path / "rgba.png"
    Image.new("RGBA", (20, 20), (255, 0, 0, 128)).save(path)
    inputs = [
        Image.new("CMYK", (24, 24), (0, 255, 255, 0)),
        Image.new("RGBA", (24, 24), (0, 0, 255, 0)),
        Image.new("LA", (24, 24), (0, 0)),
        Image.new("P", (24, 24)),
        Image.fromarray(a16, mode="I;16"),
        Image.fromarray(a16.astype(np.int32), mode="I"),
        Image.new("1", (1, 1)),
        path,
        np.zeros((16, 16, 3), np.uint8),
    ]
    out = enc.embed_images(inputs)
    assert out.shape == (len(inputs), case.dim) and np.isfinite(out).all()
    if case.backend != "open_clip":  # open_clip drops alpha after resizing: see test_equivalence.py
        # transformers and qwen_vl_utils composite transparency on white
        white = enc.embed_images([Image.new("RGB", (24, 24), (255, 255, 255))])
        np.testing.assert_allclose(out[1], white[0], atol=1e-5)


def test_image_conversion_rules():
    from bindlab.encoders.images import load_images, to_rgb

    assert to_rgb(Image.new("RGBA", (2, 2), (0, 0, 0, 0))).getpixel((0, 0)) == (255, 255, 255)
    assert to_rgb(Image.new("CMYK", (2, 2), (0, 0, 0, 0))).getpixel((0, 0)) == (255, 255, 255)
    a16 = np.full((2, 2), 65535, np.uint16)
    assert to_rgb(Image.fromarray(a16, mode="I;16")).getpixel((0, 0)) == (255, 255, 255)
    big = Image.new("L", (10000, 10000), 128)  # 100 Mpx: accepted, downscaled before preprocessing, reported
    ims, notes = load_images([big, Image.new("RGB", (1, 1))], "test")
    assert ims[0].size == (8192, 8192) and ims[0].mode == "RGB" and ims[1].size == (1, 1)
    assert len(notes) == 1 and "10000x10000" in notes[0]
    # rgb=False keeps 8-bit modes for the library and scales only high-bit-depth greyscale
    kept, _ = load_images(
        [Image.new("P", (2, 2)), Image.new("RGBA", (2, 2)), Image.fromarray(a16, mode="I;16")], "test", rgb=False
    )
    assert [im.mode for im in kept] == ["P", "RGBA", "L"] and kept[2].getpixel((0, 0)) == 255


def test_very_large_image_embeds(tiny_encoder, caplog):
    enc = tiny_encoder("hf-clip", batch_size=2)
    with caplog.at_level(logging.WARNING):
        out = enc.embed_images([Image.new("L", (10000, 6000), 90)])  # over the 8192 px cap
    assert out.shape == (1, 16) and "downscaled from 10000x6000" in caplog.text
    assert enc.last_image_notes


# -- errors -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", TEST_CASES, ids=_ids(TEST_CASES))
def test_empty_text_and_long_caption(tiny_encoder, case, caplog):
    enc = _enc(tiny_encoder, case)
    with pytest.raises(EncoderError, match="text #1 is empty"):
        enc.embed_texts(["a cat", "  "])
    with caplog.at_level(logging.WARNING):
        out = enc.embed_texts([LONG, "a cat"])
    assert out.shape == (2, case.dim) and enc.last_truncated == 1
    assert "truncated" in caplog.text


def test_text_only_model_refuses_images(tiny_encoder):
    with pytest.raises(EncoderError, match="text-only"):
        tiny_encoder("st", batch_size=2).embed_images([Image.new("RGB", (4, 4))])


def test_bad_images_are_clear_errors(tiny_encoder, tmp_path):
    enc = tiny_encoder("hf-clip", batch_size=2)
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    with pytest.raises(EncoderError, match="broken.png"):
        enc.embed_images([bad])
    with pytest.raises(EncoderError, match="not found"):
        enc.embed_images([tmp_path / "missing.jpg"])
    with pytest.raises(EncoderError, match="not an image"):
        enc.embed_images([{"x": 1}])
    with pytest.raises(EncoderError, match="list of images"):
        enc.embed_images(Image.new("RGB", (4, 4)))


@pytest.mark.parametrize(
    "eid,pattern",
    [
        ("nope:thing", "unknown encoder backend"),
        ("hf:/no/such/folder", "not found"),
        ("qwen3vl:/no/such/folder", "not found"),
        ("open_clip:local-dir:/no/such/folder", "not found"),
        ("open_clip:NoSuchArch-1/tag", "unknown open_clip architecture"),
        ("hf:openai/clip-vit-base-patch32", "unreachable"),
        ("qwen3vl:Qwen/Qwen3-VL-Embedding-2B", "unreachable"),
        ("open_clip:hf-hub:timm/ViT-B-16-SigLIP", "unreachable"),
    ],
)
def test_load_errors_name_the_id(eid, pattern, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EncoderError, match=pattern) as info:
        load_encoder(eid, device="cpu")
    assert eid.split(":", 1)[1].split("/")[0] in str(info.value) or "nope" in str(info.value)


def test_pickle_only_weights_are_refused(tiny_id, tmp_path):
    import shutil

    oc = tmp_path / "oc"
    shutil.copytree(tiny_id("open-clip").split("local-dir:", 1)[1], oc)
    (oc / "open_clip_model.safetensors").rename(oc / "open_clip_pytorch_model.bin")
    with pytest.raises(EncoderError, match="safetensors only"):
        load_encoder(f"open_clip:local-dir:{oc}", device="cpu")
    hf = tmp_path / "hf"
    shutil.copytree(tiny_id("hf-clip").split(":", 1)[1], hf)
    (hf / "model.safetensors").rename(hf / "pytorch_model.bin")
    with pytest.raises(EncoderError, match="safetensors only"):
        load_encoder(f"hf:{hf}", device="cpu")


def test_hf_refuses_other_model_types(tiny_id):
    with pytest.raises(EncoderError, match="qwen3vl:"):
        load_encoder("hf:" + tiny_id("qwen3vl").split(":", 1)[1], device="cpu")


# -- runtime: dtype, device, OOM back-off -------------------------------------------------------------------------
def test_dtype_resolution(caplog):
    import torch

    from bindlab.encoders.runtime import resolve_dtype

    assert resolve_dtype("auto", "cpu") is torch.float32
    assert resolve_dtype("float32", "cpu") is torch.float32
    with caplog.at_level(logging.WARNING):
        assert resolve_dtype("bfloat16", "cpu") is torch.float32
    assert "float32" in caplog.text
    with pytest.raises(EncoderError, match="auto, float32, bfloat16, float16"):
        resolve_dtype("float8", "cpu")


def test_dtype_and_device_options(tiny_encoder):
    enc = tiny_encoder("hf-clip", dtype="bfloat16")  # CPU: falls back to float32
    assert "float32" in enc.fingerprint and next(enc.model.parameters()).dtype.is_floating_point
    with pytest.raises(EncoderError, match="device"):
        load_encoder(enc.id, device="tpu")


def test_oom_halves_the_batch(caplog):
    import torch

    from bindlab.encoders.runtime import BatchRunner

    seen = []

    def fn(batch):
        seen.append(len(batch))
        if len(batch) > 2:
            raise torch.cuda.OutOfMemoryError("fake")
        return np.array([[float(x), 1.0] for x in batch])

    runner = BatchRunner("test", batch_size=8)
    with caplog.at_level(logging.WARNING):
        out = runner.run(fn, list(range(10)), order=list(reversed(range(10))))
    np.testing.assert_array_equal(out[:, 0], np.arange(10))
    assert runner.batch_size == 2 and seen[:3] == [8, 4, 2]
    assert "out of memory" in caplog.text and "batch size 4" in caplog.text
    with pytest.raises(EncoderError, match="batch size 1"):
        BatchRunner("test", 1).run(lambda b: (_ for _ in ()).throw(torch.cuda.OutOfMemoryError()), [1])


# -- attention access ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", TEST_CASES, ids=_ids(TEST_CASES))
def test_attention_access(tiny_encoder, case):
    enc = _enc(tiny_encoder, case)
    acc = enc.attention_access()
    assert (acc.num_layers, acc.num_heads, acc.causal) == (2, 2, case.causal)
    text = "a striped xylophone and a red cube"
    words = acc.word_alignment(text)
    assert [w.word for w in words] == text.split()
    enc_text = acc.encode(text)
    for w in words:
        assert w.token_indices, w
        pieces = "".join(enc_text.tokens[i] for i in w.token_indices).lower()
        assert all(ch in pieces for ch in w.word.lower() if ch.isalpha()), (w, pieces)
    assert len(words[2].token_indices) > 1  # 'xylophone' is several sub-tokens
    if case.kind == "qwen3vl":
        assert acc.token_offset(text) > 5  # the caption sits inside the chat template
    maps = list(acc.attentions([text, "a dog"]))
    assert [(t, layer) for t, layer, _ in maps] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    attn = maps[0][2]
    assert attn.ndim == 3 and attn.shape[0] == 2 and attn.shape[1] == attn.shape[2] == len(enc_text.tokens)
    np.testing.assert_allclose(attn.sum(-1), 1.0, atol=1e-4)
    if case.causal:
        assert np.abs(np.triu(attn, k=1)).max() < 1e-6
    reduced = list(acc.attentions(["a dog"], reduce=lambda t, layer, a: float(a.mean())))
    assert all(isinstance(r, float) for _, _, r in reduced)


# -- qwen3vl recipe details -------------------------------------------------------------------------------------
def test_qwen3vl_instruction_and_resize(tiny_encoder):
    from bindlab.encoders.qwen3vl import MAX_PIXELS, MIN_PIXELS, format_instruction, smart_resize

    enc = tiny_encoder("qwen3vl", batch_size=2, max_length=256)
    default = enc.embed_texts(["a red cube"])
    custom = enc.embed_texts(["a red cube"], instruction="Find the matching image")
    assert not np.allclose(default, custom)
    np.testing.assert_allclose(
        enc.embed_texts(["a red cube"], instruction="Represent the user's input."), default, atol=1e-6
    )
    assert format_instruction("Find it") == "Find it." and format_instruction(None) == "Represent the user's input."
    for h, w in [(1, 1), (224, 224), (10000, 10000), (50, 3000)]:
        rh, rw = smart_resize(h, w)
        assert rh % 32 == 0 and rw % 32 == 0 and MIN_PIXELS <= rh * rw <= MAX_PIXELS
    with pytest.raises(EncoderError, match="aspect ratio"):
        smart_resize(1, 500)


# -- presets, throughput ------------------------------------------------------------------------------------
def test_presets_listing_offline():
    import open_clip

    from bindlab.encoders.presets import OPEN_CLIP_REPOS, PRESETS, list_models

    for name, repo in OPEN_CLIP_REPOS.items():
        assert open_clip.get_pretrained_cfg(*name.split("/")).get("hf_hub").rstrip("/") == repo
    rows = {r["id"]: r for r in list_models(offline=True)}
    assert set(rows) == {p.id for p in PRESETS}
    assert rows["minilm"]["loadable"] and "qwen3vl:Qwen/Qwen3-VL-Embedding-8B" in rows
    assert any(i.startswith("open_clip:EVA02") for i in rows) and any("siglip2" in i for i in rows)
    norm = {i: r["text_normalisation"] for i, r in rows.items()}
    assert "punctuation stripped" in norm["hf:google/siglip-base-patch16-224"]
    assert norm["hf:google/siglip2-base-patch16-224"].startswith("lowercase (")
    assert norm["qwen3vl:Qwen/Qwen3-VL-Embedding-2B"].startswith("none")
    for i in rows:  # the open_clip claims agree with open_clip's own model configs
        if i.startswith("open_clip:"):
            cfg = open_clip.get_model_config(i.split(":", 1)[1].split("/")[0])["text_cfg"]
            canon = cfg.get("tokenizer_kwargs", {}).get("clean") == "canonicalize"
            assert canon == norm[i].startswith("canonicalised"), i


def test_embedding_throughput(tiny_encoder):
    from bindlab.encoders.throughput import embedding_throughput

    r = embedding_throughput(tiny_encoder("hf-clip", batch_size=2), TEXTS * 3, _images())
    assert r["text"]["items"] == 12 and r["text"]["items_per_s"] > 0 and r["image"]["dim"] == 16


def test_tiny_builder_rejects_unknown_kind(tmp_path):
    from bindlab.encoders.tiny import build_tiny

    with pytest.raises(ValueError, match="hf-clip"):
        build_tiny("nope", tmp_path)


# -- real checkpoints (deselected by default) -------------------------------------------------------------------
REAL_IDS = [
    "hf:openai/clip-vit-base-patch32",
    "hf:google/siglip-base-patch16-224",
    "hf:google/siglip2-base-patch16-224",
    "open_clip:ViT-B-32/laion2b_s34b_b79k",
    "qwen3vl:Qwen/Qwen3-VL-Embedding-2B",
]


@pytest.mark.slow
@pytest.mark.parametrize("eid", REAL_IDS)
def test_real_checkpoint_prefers_matching_caption(eid):
    from bindlab.config import hub_offline
    from bindlab.encoders.presets import Preset, availability

    ok, why = availability(Preset(eid, "", "hub"), offline=hub_offline())
    if not ok:
        pytest.skip(why)
    enc = load_encoder(eid)
    red, blue = Image.new("RGB", (224, 224), (220, 20, 20)), Image.new("RGB", (224, 224), (20, 20, 220))
    t = enc.embed_texts(["a plain red square", "a plain blue square"])
    i = enc.embed_images([red, blue])
    sims = i @ t.T
    assert sims[0, 0] > sims[0, 1] and sims[1, 1] > sims[1, 0]
    acc = enc.attention_access()
    assert acc.word_alignment("a red cube")[1].token_indices


@pytest.mark.gpu
@pytest.mark.slow
def test_gpu_half_precision_close_to_float32():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    full = load_encoder(REAL_IDS[0], device="cuda", dtype="float32")
    half = load_encoder(REAL_IDS[0], device="cuda", dtype="auto")
    texts = ["a red cube and a blue sphere", "a blue cube and a red sphere"]
    assert (full.embed_texts(texts) * half.embed_texts(texts)).sum(1).min() > 0.99
