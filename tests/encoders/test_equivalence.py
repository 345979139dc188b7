"""bindlab embeds exactly as each library's own recommended API does, on random real-architecture models.

For every backend, the same captions and images go through bindlab (batched, length-sorted, several batches) and
through the library directly, one item at a time, as a user's own script would write it:

- ``hf`` CLIP: ``processor(text=..., padding=True)`` / ``processor(images=...)`` -> ``get_*_features``.
- ``hf`` SigLIP v1 (``SiglipTokenizer`` + ``spiece.model``) and SigLIP2: ``padding="max_length"`` (64) on the
  right, ``input_ids`` only (no attention mask), SigLIP2 captions lowercased — the setup the models were trained
  with in big_vision and that the hub folders declare; SigLIP2 images with transformers' ``do_convert_rgb``.
- ``open_clip``: ``create_model_and_transforms`` + ``get_tokenizer``; ``preprocess(image)`` on the image as given.
- ``qwen3vl``: the Qwen3-VL-Embedding recipe written out by hand: chat template with the default instruction,
  ``qwen_vl_utils``'s ``to_rgb`` + ``smart_resize`` + bicubic resize, the model's last hidden state at the last
  token of an unpadded single input.

Images cover every mode a user hands in (RGB, L, RGBA with partial transparency, P, P with a transparent index,
LA, CMYK, 1-bit, 16-bit ``I;16``, 1x1 and 3x3, a 5000x3000 photo-sized image). The one deliberate difference
from the libraries, 16-bit greyscale (PIL's conversion clips it to white), is fed to the reference with its usual
fix (``/257`` to 8-bit). All comparisons are on L2-normalised embeddings; the tolerance is 1e-5. The tiny configs
(2 layers, width 32) run by default in a few seconds; the ``slow`` test repeats the image-mode check on
real-size CLIP ViT-B/32 and SigLIP B/16 architectures (random weights).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from bindlab.encoders.base import load_encoder

TOL = 1e-5
TEXTS = [
    "a red cube and a blue sphere",
    "A Red Cube, and a BLUE sphere!",
    "a dog",
    "the cat",
    "a white and orange striped xylophone with a glowing hat",
    "a wooden chair; a metal lamp. a glass bottle?",
    "two  spaces   here",
    "a photo of a green apple on a black table next to a yellow banana and a pink cup",
    "book",
    "a furry brown dog with a shiny red ball",
    "(a) cone - cylinder / house & tree",
    "light dark",
]
QWEN_OPTIONS = {"max_pixels": 64 * 32 * 32}  # keeps the huge image's token count small in the tiny model


def _norm(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def images_of_every_mode() -> dict[str, Image.Image]:
    """name -> image; seeded, smooth enough that resampling choices matter."""
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (48, 40, 3), dtype=np.uint8)
    alpha = np.tile(np.linspace(0, 255, 40, dtype=np.uint8), (48, 1))
    huge = Image.fromarray(rng.integers(0, 256, (30, 50, 3), dtype=np.uint8)).resize((5000, 3000))  # smooth
    p_trans = Image.fromarray(rgb).quantize(16)
    p_trans.info["transparency"] = 0
    a16 = (np.arange(36 * 30, dtype=np.uint32).reshape(36, 30) * 60).astype(np.uint16)
    return {
        "RGB": Image.fromarray(rgb),
        "L": Image.fromarray(rng.integers(0, 256, (37, 53), dtype=np.uint8)),
        "RGBA": Image.fromarray(np.dstack([rgb, alpha])),
        "P": Image.fromarray(rgb).quantize(16),
        "P+transparency": p_trans,
        "LA": Image.fromarray(np.dstack([rgb[..., 0], alpha])),
        "CMYK": Image.fromarray(rgb).convert("CMYK"),
        "1": Image.fromarray(rgb[..., 0]).convert("1"),
        "I;16": Image.fromarray(a16),
        "1x1": Image.new("RGB", (1, 1), (200, 30, 90)),
        "3x3": Image.fromarray(rng.integers(0, 256, (3, 3, 4), dtype=np.uint8)),
        "5000x3000": huge,
    }


def usual_fix(image: Image.Image) -> Image.Image:
    """What a user does before handing a 16-bit greyscale image to a library (PIL alone clips it at 255)."""
    if image.mode.startswith("I;16"):
        a = np.asarray(image, dtype=np.float64)
        return Image.fromarray(np.round(a / 257.0).astype(np.uint8))
    return image


# -- the libraries' own APIs -------------------------------------------------------------------------------------
@functools.cache
def _hf(folder: str) -> tuple[Any, Any]:
    from transformers import AutoModel, AutoProcessor

    return AutoModel.from_pretrained(folder).eval(), AutoProcessor.from_pretrained(folder)


def _pooled(out: Any) -> np.ndarray:
    out = getattr(out, "pooler_output", out)
    return out.detach().float().numpy()


def hf_texts(folder: str, texts: list[str]) -> np.ndarray:
    import torch

    model, proc = _hf(folder)
    family = model.config.model_type
    rows = []
    for t in texts:
        with torch.inference_mode():
            if family == "clip":
                rows.append(
                    _pooled(
                        model.get_text_features(**proc(text=[t], padding=True, truncation=True, return_tensors="pt"))
                    )
                )
                continue
            proc.tokenizer.padding_side = "right"  # the trained setup (the hub folders' tokenizer.json says so)
            enc = proc(
                text=[t.lower() if family == "siglip2" else t],
                padding="max_length",
                max_length=64,
                truncation=True,
                return_tensors="pt",
            )
            rows.append(_pooled(model.get_text_features(input_ids=enc["input_ids"])))
    return _norm(np.concatenate(rows))


def hf_images(folder: str, images: list[Image.Image]) -> np.ndarray:
    import torch

    model, proc = _hf(folder)
    kw = {"do_convert_rgb": True} if model.config.model_type == "siglip2" else {}
    rows = []
    for im in images:
        with torch.inference_mode():
            # the image processor itself: Siglip2Processor's call would impose its 16-px patch default on the tiny model
            inputs = proc.image_processor(images=[usual_fix(im)], return_tensors="pt", **kw)
            rows.append(_pooled(model.get_image_features(**inputs)))
    return _norm(np.concatenate(rows))


@functools.cache
def _open_clip(folder: str) -> tuple[Any, Any, Any]:
    import open_clip

    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{folder}")
    return model.eval(), preprocess, open_clip.get_tokenizer(f"local-dir:{folder}")


def open_clip_texts(folder: str, texts: list[str]) -> np.ndarray:
    import torch

    model, _, tok = _open_clip(folder)
    with torch.inference_mode():
        return _norm(np.concatenate([model.encode_text(tok([t])).numpy() for t in texts]))


def open_clip_images(folder: str, images: list[Image.Image]) -> np.ndarray:
    import torch

    model, preprocess, _ = _open_clip(folder)
    with torch.inference_mode():
        return _norm(
            np.concatenate([model.encode_image(preprocess(usual_fix(im)).unsqueeze(0)).numpy() for im in images])
        )


def _qwen_smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """``qwen_vl_utils.smart_resize`` (0.0.14), written out."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _qwen_fetch_image(image: Image.Image) -> Image.Image:
    """``qwen_vl_utils.fetch_image`` for a PIL image with ``image_patch_size=16``: ``to_rgb``, then resize."""
    if image.mode == "RGBA":
        rgb = Image.new("RGB", image.size, (255, 255, 255))
        rgb.paste(image, mask=image.split()[3])
    else:
        rgb = image.convert("RGB")
    h, w = _qwen_smart_resize(rgb.height, rgb.width, 32, 4 * 32 * 32, QWEN_OPTIONS["max_pixels"])
    return rgb.resize((w, h))


def _qwen_embed(folder: str, content: list[dict[str, Any]], image: Image.Image | None) -> np.ndarray:
    import torch

    model, proc = _hf(folder)
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Represent the user's input."}]},
        {"role": "user", "content": content},
    ]
    prompt = proc.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    images = [_qwen_fetch_image(image)] if image is not None else None
    with torch.inference_mode():
        inputs = proc(text=[prompt], images=images, do_resize=False, return_tensors="pt")
        return model(**inputs).last_hidden_state[:, -1].float().numpy()  # (1, hidden): unpadded, last token


def qwen_texts(folder: str, texts: list[str]) -> np.ndarray:
    return _norm(np.concatenate([_qwen_embed(folder, [{"type": "text", "text": t}], None) for t in texts]))


def qwen_images(folder: str, images: list[Image.Image]) -> np.ndarray:
    return _norm(
        np.concatenate(
            [_qwen_embed(folder, [{"type": "image", "image": usual_fix(im)}], usual_fix(im)) for im in images]
        )
    )


Reference = tuple[Callable[[str, list[str]], np.ndarray], Callable[[str, list[Image.Image]], np.ndarray]]
REFERENCES: dict[str, Reference] = {
    "hf-clip": (hf_texts, hf_images),
    "hf-siglip-spm": (hf_texts, hf_images),
    "hf-siglip2": (hf_texts, hf_images),
    "open-clip": (open_clip_texts, open_clip_images),
    "qwen3vl": (qwen_texts, qwen_images),
}
OPTIONS = {"qwen3vl": QWEN_OPTIONS}


def _folder(eid: str) -> str:
    return eid.split(":", 1)[1].removeprefix("local-dir:")


def _max_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(_norm(a) - _norm(b)).max())


# -- the checks ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(REFERENCES))
def test_texts_match_the_library(tiny_id, tiny_encoder, kind):
    enc = tiny_encoder(kind, batch_size=4, **OPTIONS.get(kind, {}))  # 3 batches, length-sorted
    got = enc.embed_texts(TEXTS)
    want = REFERENCES[kind][0](_folder(tiny_id(kind)), TEXTS)
    assert _max_diff(got, want) <= TOL, kind


@pytest.mark.parametrize("kind", sorted(REFERENCES))
def test_images_of_every_mode_match_the_library(tiny_id, tiny_encoder, kind):
    enc = tiny_encoder(kind, batch_size=4, **OPTIONS.get(kind, {}))
    ims = images_of_every_mode()
    got = enc.embed_images(list(ims.values()))  # one call, several batches
    want = REFERENCES[kind][1](_folder(tiny_id(kind)), list(ims.values()))
    diffs = {name: float(np.abs(_norm(g) - w).max()) for name, g, w in zip(ims, got, want, strict=True)}
    assert max(diffs.values()) <= TOL, {k: f"{v:.1e}" for k, v in diffs.items() if v > TOL}
    assert enc.last_image_notes == []  # nothing below the size cap is downscaled


@pytest.mark.parametrize("kind", ["hf-clip", "open-clip"])
def test_batches_do_not_change_embeddings(tiny_encoder, kind):
    enc = tiny_encoder(kind, batch_size=4)
    ims = list(images_of_every_mode().values())[:8]
    np.testing.assert_allclose(enc.embed_texts(TEXTS), np.concatenate([enc.embed_texts([t]) for t in TEXTS]), atol=TOL)
    np.testing.assert_allclose(enc.embed_images(ims), np.concatenate([enc.embed_images([im]) for im in ims]), atol=TOL)


def test_open_clip_alpha_and_palette_follow_open_clip_not_white(tiny_encoder):
    """open_clip drops alpha after resizing; compositing on white first (the old path) differs by ~0.1."""
    enc = tiny_encoder("open-clip", batch_size=4)
    ims = images_of_every_mode()
    rgba = enc.embed_images([ims["RGBA"]])
    on_white = Image.alpha_composite(Image.new("RGBA", ims["RGBA"].size, "white"), ims["RGBA"]).convert("RGB")
    assert _max_diff(rgba, enc.embed_images([on_white])) > 1e-3
    assert _max_diff(rgba, enc.embed_images([ims["RGBA"].convert("RGB")])) > 0  # converted after, not before


def test_over_the_size_cap_is_downscaled_and_said(tiny_id, tiny_encoder):
    """Above ``max_image_side`` bindlab downscales first and says so; the result stays close to the library's."""
    enc = tiny_encoder("hf-clip", batch_size=4, max_image_side=2048)
    huge = images_of_every_mode()["5000x3000"]
    got = enc.embed_images([huge])
    assert len(enc.last_image_notes) == 1 and "5000x3000" in enc.last_image_notes[0]
    assert _max_diff(got, hf_images(_folder(tiny_id("hf-clip")), [huge])) < 5e-3


def test_siglip_text_setup_is_pinned_whatever_the_folder_says(tiny_id, tiny_encoder, tmp_path, caplog):
    """A SigLIP folder re-saved with transformers 5 defaults (attention mask, left padding) embeds the same."""
    import logging
    import shutil

    for kind in ("hf-siglip-spm", "hf-siglip2"):
        src = Path(_folder(tiny_id(kind)))
        dst = tmp_path / kind
        shutil.copytree(src, dst)
        cfg = dst / "tokenizer_config.json"
        text = cfg.read_text().replace('"model_input_names"', '"_dropped_model_input_names"')
        cfg.write_text(text.replace('"padding_side": "right"', '"padding_side": "left"'))
        with caplog.at_level(logging.WARNING):
            resaved = load_encoder(f"hf:{dst}", device="cpu", batch_size=4)
        assert "attention mask" in caplog.text and "right padding" in caplog.text
        caplog.clear()
        want = tiny_encoder(kind, batch_size=4).embed_texts(TEXTS)
        assert _max_diff(resaved.embed_texts(TEXTS), want) <= TOL, kind


def test_siglip_v1_normalisation_is_the_tokenizers(tiny_encoder):
    """SiglipTokenizer lowercases and strips punctuation, so these captions embed identically."""
    enc = tiny_encoder("hf-siglip-spm", batch_size=4)
    a, b = enc.embed_texts(["A Red Cube, and a BLUE sphere!", "a red cube and a blue sphere"])
    assert _max_diff(a, b) <= TOL


# -- real-size architectures (random weights; minutes on CPU) -----------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["hf-clip", "hf-siglip-spm", "open-clip"])
def test_real_size_architectures_match(kind, tmp_path, monkeypatch):
    """The same comparison on CLIP ViT-B/32 / SigLIP B/16 / open_clip ViT-B-32-sized towers."""
    from bindlab.encoders import tiny

    for name, value in {
        "WIDTH": 768,
        "LAYERS": 12,
        "HEADS": 12,
        "IMAGE_SIZE": 224,
        "PATCH_SIZE": 32 if kind != "hf-siglip-spm" else 16,
    }.items():
        monkeypatch.setattr(tiny, name, value)
    eid = tiny.build_tiny(kind, tmp_path / kind)
    enc = load_encoder(eid, device="cpu", batch_size=4)
    ims = images_of_every_mode()
    ref_texts, ref_images = REFERENCES[kind]
    assert _max_diff(enc.embed_texts(TEXTS), ref_texts(_folder(eid), TEXTS)) <= TOL
    assert _max_diff(enc.embed_images(list(ims.values())), ref_images(_folder(eid), list(ims.values()))) <= TOL
