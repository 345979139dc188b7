"""Hub ids load offline from a pre-populated Hugging Face cache: the exact code a Space user runs, in CI.

A temporary hub cache (``HF_HOME``/``HF_HUB_CACHE`` pointed at ``tmp_path``, ``HF_HUB_OFFLINE=1``) is filled with
random tiny weights in the real layout — ``models--ORG--NAME/blobs/<sha256>``, ``snapshots/<commit>/<file>`` links
to the blobs, ``refs/main`` holding the commit — for one id per backend:

- ``hf:openai/clip-vit-base-patch32`` (CLIP), ``hf:google/siglip-base-patch16-224`` (SigLIP v1 with a real
  sentencepiece ``spiece.model``), ``hf:google/siglip2-base-patch16-224`` (SigLIP2);
- ``open_clip:ARCH/TAG`` through open_clip's pretrained registry: open_clip resolves a tag to
  ``get_pretrained_cfg(ARCH, TAG)["hf_hub"]`` (``ORG/NAME/``) and the file ``open_clip_model.safetensors`` in it;
  a tiny architecture and tag are registered for the test, and the ``slow`` test uses the real
  ``ViT-B-32/openai`` entry with random full-size weights;
- ``qwen3vl:Qwen/Qwen3-VL-Embedding-2B``.

Each id must load through its hub path (fingerprint = the cached commit), embed exactly as the same weights in a
local folder do, and ``eval mcq`` must run end to end in-process on it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bindlab.encoders.base import load_encoder

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TEXTS = ["a red cube and a blue sphere", "A blue cube, and a red sphere!", "a dog"]
HF_IDS = {  # encoder id -> tiny builder kind
    "hf:openai/clip-vit-base-patch32": "hf-clip",
    "hf:google/siglip-base-patch16-224": "hf-siglip-spm",
    "hf:google/siglip2-base-patch16-224": "hf-siglip2",
    "qwen3vl:Qwen/Qwen3-VL-Embedding-2B": "qwen3vl",
}
OC_ARCH, OC_TAG, OC_REPO = "bindlab-tiny-ViT", "bindlabtest", "bindlab-test/tiny-open-clip"


def cache_repo(cache: Path, repo: str, files: dict[str, Path], commit: str = COMMIT) -> Path:
    """Place ``files`` (name in repo -> source file) in the hub cache layout; returns the snapshot folder."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snap = root / "snapshots" / commit
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    for name, src in files.items():
        data = src.read_bytes()
        blob = root / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snap / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (root / "refs").mkdir(exist_ok=True)
    (root / "refs" / "main").write_text(commit)
    return snap


def cache_folder(cache: Path, repo: str, folder: Path) -> Path:
    files = {str(p.relative_to(folder)): p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")}
    return cache_repo(cache, repo, files)


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty, offline Hugging Face cache under ``tmp_path`` (env for subprocesses, constants for this one)."""
    from huggingface_hub import constants

    cache = tmp_path / "hf" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


@pytest.fixture
def tiny_open_clip_tag(tiny_id, hub_cache, monkeypatch):
    """Register a tiny architecture + pretrained tag in open_clip's registries; its weights in the hub cache."""
    import open_clip
    from open_clip import factory, pretrained

    folder = Path(tiny_id("open-clip").split("local-dir:", 1)[1])
    model_cfg = json.loads((folder / "open_clip_config.json").read_text())["model_cfg"]
    monkeypatch.setitem(factory._MODEL_CONFIGS, OC_ARCH, model_cfg)
    monkeypatch.setitem(pretrained._PRETRAINED, OC_ARCH, {OC_TAG: pretrained._pcfg(hf_hub=f"{OC_REPO}/")})
    cache_repo(hub_cache, OC_REPO, {"open_clip_model.safetensors": folder / "open_clip_model.safetensors"})
    assert open_clip.get_pretrained_cfg(OC_ARCH, OC_TAG)["hf_hub"] == f"{OC_REPO}/"
    return f"open_clip:{OC_ARCH}/{OC_TAG}", f"open_clip:local-dir:{folder}"


def _images() -> list[Image.Image]:
    rng = np.random.default_rng(1)
    return [
        Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)),
        Image.new("RGBA", (9, 9), (1, 2, 3, 90)),
    ]


def _same_as_local(hub_id: str, local_id: str) -> None:
    hub, local = load_encoder(hub_id, device="cpu"), load_encoder(local_id, device="cpu")
    assert hub.id == hub_id and hub.fingerprint.startswith(hub_id)
    np.testing.assert_allclose(hub.embed_texts(TEXTS), local.embed_texts(TEXTS), atol=1e-6)
    np.testing.assert_allclose(hub.embed_images(_images()), local.embed_images(_images()), atol=1e-6)


@pytest.mark.parametrize("eid", sorted(HF_IDS))
def test_hub_ids_load_offline_from_the_cache(eid, tiny_id, hub_cache):
    from bindlab.encoders.presets import Preset, availability

    kind = HF_IDS[eid]
    backend, repo = eid.split(":", 1)
    assert availability(Preset(eid, "", "hub"), offline=True)[0] is False  # empty cache: not loadable
    cache_folder(hub_cache, repo, Path(tiny_id(kind).split(":", 1)[1]))
    ok, why = availability(Preset(eid, "", "hub"), offline=True)
    assert ok and "cache" in why
    _same_as_local(eid, tiny_id(kind))
    assert COMMIT in load_encoder(eid, device="cpu").fingerprint  # the cached commit, not a folder hash


def test_open_clip_tag_resolves_through_the_pretrained_registry(tiny_open_clip_tag):
    hub_id, local_id = tiny_open_clip_tag
    _same_as_local(hub_id, local_id)


def test_uncached_hub_id_is_a_clear_offline_error(hub_cache):
    from bindlab.encoders.base import EncoderError

    with pytest.raises(EncoderError, match="unreachable"):
        load_encoder("hf:google/siglip-base-patch16-224", device="cpu")


def test_eval_mcq_end_to_end_on_cached_hub_ids(tiny_id, hub_cache, tmp_path, capsys):
    """``python -m bindlab generate saber`` + ``eval mcq --model hf:ORG/NAME`` in-process, offline."""
    from bindlab.cli import main

    data = tmp_path / "saber"
    assert (
        main(
            [
                "generate",
                "saber",
                "--out",
                str(data),
                "--per-size",
                "2",
                "--sizes",
                "2,3",
                "--images",
                "--size",
                "48",
                "--workers",
                "1",
            ]
        )
        == 0
    )
    for eid in ("hf:openai/clip-vit-base-patch32", "hf:google/siglip-base-patch16-224"):
        cache_folder(hub_cache, eid.split(":", 1)[1], Path(tiny_id(HF_IDS[eid]).split(":", 1)[1]))
        out = tmp_path / f"{HF_IDS[eid]}.json"
        code = main(
            [
                "eval",
                "mcq",
                "--data",
                str(data / "mcq.jsonl"),
                "--model",
                eid,
                "--pairings",
                "tt,ti",
                "--device",
                "cpu",
                "--batch-size",
                "4",
                "--out",
                str(out),
            ]
        )
        assert code == 0, capsys.readouterr().err
        result = json.loads(out.read_text())
        assert eid in json.dumps(result) and COMMIT in json.dumps(result)


@pytest.mark.slow
def test_real_open_clip_tag_vit_b_32_openai(hub_cache, tmp_path):
    """``open_clip:ViT-B-32/openai`` exactly as registered, with random full-size weights in the cache."""
    import open_clip
    from safetensors.torch import save_file

    repo = open_clip.get_pretrained_cfg("ViT-B-32", "openai")["hf_hub"].rstrip("/")
    model = open_clip.create_model("ViT-B-32", pretrained=None, force_quick_gelu=True)
    weights = tmp_path / "open_clip_model.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights))
    cache_repo(hub_cache, repo, {"open_clip_model.safetensors": weights})
    enc = load_encoder("open_clip:ViT-B-32/openai", device="cpu")
    assert enc.embed_texts(TEXTS).shape == (3, 512) and enc.embed_images(_images()).shape == (2, 512)
