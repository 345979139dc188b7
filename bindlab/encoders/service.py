"""Embedding through the persistent cache: the one path every command and tab uses to get vectors.

``embed_texts``/``embed_image_files`` dedupe inputs, look them up in the :class:`EmbeddingCache` and run the
encoder only on what is missing (in one batched call), then return rows in input order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bindlab.encoders.base import Encoder, EncoderError, check_texts
from bindlab.encoders.cache import EmbeddingCache, content_key

Progress = Callable[[int, int], None]

_DEFAULT_CACHE: EmbeddingCache | None = None


def default_cache() -> EmbeddingCache:
    """The process-wide cache under ``$BINDLAB_HOME`` (created on first use)."""
    global _DEFAULT_CACHE
    from bindlab.config import home

    path = home() / "cache" / "embeddings.sqlite"
    if _DEFAULT_CACHE is None or _DEFAULT_CACHE.path != path:
        _DEFAULT_CACHE = EmbeddingCache(path)
    return _DEFAULT_CACHE


def embed_texts(encoder: Encoder, texts: Sequence[str], cache: EmbeddingCache | None = None,
                instruction: str = "") -> np.ndarray:
    """Cached text embeddings ``(n, d)`` in input order. Empty texts raise :class:`EncoderError` naming the index."""
    texts = check_texts(list(texts), encoder.id)
    cache = cache or default_cache()
    keys = [content_key(encoder.fingerprint, "text", t, instruction) for t in texts]
    vecs, _ = cache.get_or_compute(keys, lambda idx: encoder.embed_texts([texts[i] for i in idx]))
    return vecs


def embed_image_files(encoder: Encoder, paths: Sequence[str | Path], cache: EmbeddingCache | None = None) -> np.ndarray:
    """Cached image embeddings ``(n, d)`` for image files, keyed by file content (not by path)."""
    if "image" not in encoder.modalities:
        raise EncoderError(f"{encoder.id} has no image tower; it cannot embed images (pick an image+text encoder)")
    cache = cache or default_cache()
    blobs = []
    for p in paths:
        try:
            blobs.append(Path(p).read_bytes())
        except OSError as e:
            raise EncoderError(f"image {p} could not be read ({e.strerror or e}); check the path") from None
    keys = [content_key(encoder.fingerprint, "image", b) for b in blobs]

    def compute(idx: list[int]) -> np.ndarray:
        # Backends open files through bindlab.encoders.images, which converts modes and names unreadable files.
        return encoder.embed_images([str(paths[i]) for i in idx])

    vecs, _ = cache.get_or_compute(keys, compute)
    return vecs
