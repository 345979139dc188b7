"""``bench --only vs_library``: bindlab against the library's own best loop, on the same generated files.

Models of the real architectures (open_clip ViT-B-32 / ViT-L-14, MiniLM-L6) are built on the fly with random
weights and saved as local folders, so nothing is downloaded and both sides load the same weights:

- images: bindlab's cold ``evaluate_mcq`` (pairing ``ii``: only images go through the model) vs open_clip's own
  loop over the same unique PNGs: a ``torch.utils.data.DataLoader`` with worker processes (pinned memory and
  non-blocking copies on CUDA) feeding ``encode_image``, in the dtype bindlab picks for the device;
- texts: bindlab's cold ``evaluate_mcq`` (``tt``) vs sentence-transformers' ``encode`` over the same unique captions
  (skipped with a note when sentence-transformers is not installed: it comes with the ``test`` extra), then the
  same bindlab run again with every vector cached (the warm run).

Each side reports its time, items/s and peak GPU memory; ``ratio`` is bindlab's time over the library's. On CPU
the workloads are small and ViT-B-32 alone (``sizes`` says so); the full sizes (1,080 image MCQs, 13,500 text
MCQs, ViT-L-14 included) are for a GPU (``scripts/gpu_check.sh``).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FULL = {"image_per_size": 120, "text_per_size": 1500, "archs": ("ViT-B-32", "ViT-L-14"), "library_batch": 256}
SMALL = {"image_per_size": 2, "text_per_size": 40, "archs": ("ViT-B-32",), "library_batch": 32}
IMAGE_SIDE = 256  # the rendered PNGs' side, as in the issue's measurement


def machine() -> dict[str, Any]:
    """The machine the figures come from: CPU cores, load, torch, and the GPU when there is one."""
    import torch

    out: dict[str, Any] = {
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cores_available": _cores(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
    }
    if torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(0)
    return out


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def random_open_clip(arch: str, folder: Path) -> str:
    """An open_clip model of architecture ``arch`` with random weights, saved as a ``local-dir:`` folder; its id."""
    import open_clip
    import torch
    from safetensors.torch import save_file

    if (folder / "open_clip_model.safetensors").exists():
        return f"open_clip:local-dir:{folder}"
    cfg = open_clip.get_model_config(arch)
    if cfg is None:
        raise ValueError(f"open_clip has no architecture {arch!r}")
    torch.manual_seed(0)
    model = open_clip.create_model(arch, pretrained=None)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "open_clip_model.safetensors"))
    (folder / "open_clip_config.json").write_text(
        json.dumps(
            {
                "model_cfg": cfg,
                "preprocess_cfg": {
                    "mean": [0.48145466, 0.4578275, 0.40821073],
                    "std": [0.26862954, 0.26130258, 0.27577711],
                },
            }
        )
    )
    return f"open_clip:local-dir:{folder}"


def random_minilm(folder: Path) -> str:
    """all-MiniLM-L6-v2's architecture, tokenizer and pooling with random weights, as an ``st:`` folder; its id."""
    import torch
    from transformers import AutoConfig, AutoModel

    from bindlab.encoders.sentence import bundled_folder

    if (folder / "model.safetensors").exists():
        return f"st:{folder}"
    src = bundled_folder("all-MiniLM-L6-v2")
    shutil.copytree(src, folder, ignore=shutil.ignore_patterns("*.safetensors", "README.md"), dirs_exist_ok=True)
    torch.manual_seed(0)
    model = AutoModel.from_config(AutoConfig.from_pretrained(src))
    model.save_pretrained(folder, safe_serialization=True)
    return f"st:{folder}"


def _peak_reset(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _peak_mib(device: str) -> float | None:
    import torch

    if not device.startswith("cuda"):
        return None
    torch.cuda.synchronize()
    return round(torch.cuda.max_memory_allocated() / (1 << 20), 1)


def _side(seconds: float, items: int, device: str, **extra: Any) -> dict[str, Any]:
    return {
        "seconds": round(seconds, 3),
        "items": items,
        "items_per_s": round(items / seconds, 1) if seconds else None,
        "peak_gpu_mib": _peak_mib(device),
        **extra,
    }


def _timed(fn: Callable[[], Any], device: str) -> tuple[float, Any]:
    import torch

    _peak_reset(device)
    t = time.perf_counter()
    out = fn()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - t, out


class _Images:
    """A map-style dataset of image files through open_clip's eval preprocess (picklable for worker processes)."""

    def __init__(self, paths: list[str], preprocess: Any) -> None:
        self.paths, self.preprocess = paths, preprocess

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> Any:
        from PIL import Image

        with Image.open(self.paths[i]) as im:
            return self.preprocess(im)


def open_clip_loop(folder: Path, paths: list[str], device: str, batch: int, workers: int) -> tuple[float, Any]:
    """open_clip's own best loop: DataLoader (``workers`` processes, pinned memory on CUDA) -> ``encode_image``.
    Returns (seconds, (n, d) normalised float32 vectors); model loading is not timed."""
    import open_clip
    import torch
    from torch.utils.data import DataLoader

    from bindlab.encoders.runtime import resolve_dtype

    dtype = resolve_dtype("auto", device)
    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{folder}", weights_only=True)
    model = model.eval().to(device, dtype)
    cuda = device.startswith("cuda")
    loader = DataLoader(
        _Images(paths, preprocess), batch_size=batch, num_workers=workers, pin_memory=cuda, persistent_workers=False
    )

    def run() -> Any:
        out = []
        with torch.inference_mode():
            for x in loader:
                f = model.encode_image(x.to(device, dtype, non_blocking=True)).float()
                out.append(torch.nn.functional.normalize(f, dim=-1).cpu())
        return torch.cat(out).numpy()

    return _timed(run, device)


def sentence_transformers_loop(folder: Path, texts: list[str], device: str, batch: int) -> tuple[float, Any] | None:
    """sentence-transformers' ``encode`` over ``texts`` (normalised); None when the package is not installed."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    model = SentenceTransformer(str(folder), device=device)
    model.encode(texts[:8], batch_size=batch)  # warm-up: kernels and allocator, as bindlab's model is loaded too
    return _timed(
        lambda: model.encode(
            texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        ),
        device,
    )


def _bindlab_eval(model_id: str, path: Path, pairing: str, device: str, batch_size: int | None) -> tuple[float, Any]:
    """bindlab's ``evaluate_mcq`` with the model already loaded (its loading is not timed, as on the library side)."""
    import bindlab
    from bindlab.encoders.service import get_encoder

    options: dict[str, Any] = {"device": device}
    if batch_size is not None:
        options["batch_size"] = batch_size
    encoder = get_encoder(model_id, **options)
    if pairing == "tt":
        encoder.embed_texts(["a warm-up caption"])  # weights loaded (lazily) before the clock starts
    return _timed(lambda: bindlab.evaluate_mcq(encoder, data=str(path), pairings=pairing, progress=False), device)


def _vector_gap(
    encoder_id: str, device: str, batch_size: int | None, modality: str, items: list[str], reference: Any
) -> float:
    """Largest |bindlab - library| over the vectors of ``items`` (bindlab's read back from its cache)."""
    import numpy as np

    from bindlab.encoders.service import cached_vectors, get_encoder

    options: dict[str, Any] = {"device": device}
    if batch_size is not None:
        options["batch_size"] = batch_size
    fingerprint = get_encoder(encoder_id, **options).fingerprint
    ours = cached_vectors(fingerprint, modality, items)
    return float(np.abs(ours - np.asarray(reference, dtype=np.float32)).max())


def bench_vs_library(
    full: bool | None = None,
    workers: int | None = None,
    batch_size: int | None = None,
    image_per_size: int | None = None,
    text_per_size: int | None = None,
    archs: tuple[str, ...] | None = None,
    work: str | Path | None = None,
) -> dict[str, Any]:
    """bindlab vs the libraries' own loops (see the module docstring).

    Args:
        full: the GPU sizes (default: True on a CUDA machine, else the small CPU sizes).
        workers: DataLoader worker processes of the library side (default: the cores available).
        batch_size: bindlab's batch size (default: its own per-device default).
        image_per_size, text_per_size, archs: override the size's workloads (a test uses a few dozen images).
        work: folder for the generated data and models (default: a temporary folder under a temporary home).
    """
    import torch

    from bindlab.config import temporary_home

    device = "cuda" if torch.cuda.is_available() else "cpu"
    full = device == "cuda" if full is None else full
    size = dict(FULL if full else SMALL)
    if image_per_size is not None:
        size["image_per_size"] = image_per_size
    if text_per_size is not None:
        size["text_per_size"] = text_per_size
    if archs is not None:
        size["archs"] = tuple(archs)
    workers = _cores() if workers is None else workers
    out: dict[str, Any] = {
        "machine": machine(),
        "device": device,
        "sizes": "full" if full else "small (CPU sizes)",
        "library_workers": workers,
        "library_batch": size["library_batch"],
        "bindlab_batch": batch_size or "default",
    }
    with temporary_home() as home:
        root = Path(work) if work else home / "work"
        out["images"] = _images(root, size, device, workers, batch_size)
        out["texts"] = _texts(root, size, device, batch_size, home)
    out["machine"]["load_avg_1m_after"] = round(os.getloadavg()[0], 2)
    return out


def _images(root: Path, size: dict[str, Any], device: str, workers: int, batch_size: int | None) -> dict[str, Any]:
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.data.saber_images import render_mcq_images

    qs = generate_saber(per_size=size["image_per_size"], seed=0, vocab=RENDER_VOCAB)
    render_mcq_images(qs, root / "saber-images", size=IMAGE_SIDE, workers=max(1, min(workers, 8)))
    path = write_benchmark(root / "saber-images", qs, {"seed": 0})
    paths = list(dict.fromkeys(str(path.parent / it.image) for q in qs for it in (q.query, *q.candidates)))
    result: dict[str, Any] = {"questions": len(qs), "unique_images": len(paths), "pairing": "ii"}
    for arch in size["archs"]:
        folder = root / f"open_clip-{arch}"
        model_id = random_open_clip(arch, folder)
        t_lib, ref = open_clip_loop(folder, paths, device, size["library_batch"], workers)
        library = _side(t_lib, len(paths), device)
        t_ours, _ = _bindlab_eval(model_id, path, "ii", device, batch_size)
        ours = _side(t_ours, len(paths), device)
        gap = _vector_gap(model_id, device, batch_size, "image", paths, ref)
        result[arch] = {
            "library": library,
            "bindlab_cold": ours,
            "ratio": round(t_ours / t_lib, 3),
            "max_abs_vector_difference": gap,
        }
        _forget(model_id)
    return result


def _texts(root: Path, size: dict[str, Any], device: str, batch_size: int | None, home: Path) -> dict[str, Any]:
    from bindlab.data.saber import generate_saber, write_benchmark

    qs = generate_saber(per_size=size["text_per_size"], seed=0)
    path = write_benchmark(root / "saber-texts", qs, {"seed": 0})
    texts = list(dict.fromkeys(it.text for q in qs for it in (q.query, *q.candidates)))
    folder = root / "minilm-random"
    model_id = random_minilm(folder)
    result: dict[str, Any] = {"questions": len(qs), "unique_texts": len(texts), "pairing": "tt"}
    lib = sentence_transformers_loop(folder, texts, device, size["library_batch"])
    t_ours, _ = _bindlab_eval(model_id, path, "tt", device, batch_size)
    result["bindlab_cold"] = _side(t_ours, len(texts), device)
    t_warm, _ = _bindlab_eval(model_id, path, "tt", device, batch_size)
    result["bindlab_warm"] = _side(
        t_warm, len(texts), device, note="every vector cached, in the same process (the model already loaded)"
    )
    if lib is None:
        result["library"] = None
        result["note"] = "sentence-transformers is not installed (pip install 'bindlab[test]'); library side skipped"
    else:
        t_lib, ref = lib
        result["library"] = _side(t_lib, len(texts), device)
        result["ratio"] = round(t_ours / t_lib, 3)
        result["max_abs_vector_difference"] = _vector_gap(model_id, device, batch_size, "text", texts, ref)
    _forget(model_id)
    return result


def _forget(model_id: str) -> None:
    """Drop the model from this process (a ViT-L-14 is 1.7 GB) before the next one loads."""
    import gc

    import torch

    from bindlab.encoders.base import canonical_id, parse_encoder_id
    from bindlab.encoders.service import forget

    forget(str(canonical_id(parse_encoder_id(model_id))))
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
