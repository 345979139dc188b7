"""Embedding throughput of one encoder: items per second and peak GPU memory (for ``python -m bindlab bench``)."""

from __future__ import annotations

import time
from typing import Any

from bindlab.encoders.base import Encoder


def embedding_throughput(
    encoder: Encoder, texts: list[str], images: list[Any] | None = None, warmup: int = 2
) -> dict[str, Any]:
    """Time ``embed_texts`` (and ``embed_images`` when images are given and the encoder takes them).

    A short warm-up call on ``warmup`` items runs first so that lazy loading and kernel selection are not
    timed. On CUDA the peak allocated memory of each timed call is reported.

    Returns:
        ``{"encoder", "fingerprint", "device", "text": {"items", "seconds", "items_per_s", "peak_gpu_mb"},
        "image": {...} | None}``.
    """
    out: dict[str, Any] = {
        "encoder": encoder.id,
        "fingerprint": encoder.fingerprint,
        "device": str(getattr(encoder, "device", "cpu")),
        "text": None,
        "image": None,
    }
    out["text"] = _time(encoder.embed_texts, list(texts), warmup)
    if images and "image" in encoder.modalities:
        out["image"] = _time(encoder.embed_images, list(images), warmup)
    return out


def _time(fn: Any, items: list[Any], warmup: int) -> dict[str, Any]:
    cuda = _cuda()
    if warmup and items:
        fn(items[:warmup])
    if cuda is not None:
        cuda.synchronize()
        cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    emb = fn(items)
    if cuda is not None:
        cuda.synchronize()
    dt = time.perf_counter() - t0
    return {
        "items": len(items),
        "dim": int(emb.shape[1]) if emb.ndim == 2 else 0,
        "seconds": round(dt, 4),
        "items_per_s": round(len(items) / dt, 2) if dt > 0 else float("inf"),
        "peak_gpu_mb": round(cuda.max_memory_allocated() / 2**20, 1) if cuda is not None else None,
    }


def _cuda() -> Any:
    """``torch.cuda`` when torch is imported and a GPU is visible, else None (never imports torch itself)."""
    import sys

    torch = sys.modules.get("torch")
    return torch.cuda if torch is not None and torch.cuda.is_available() else None
