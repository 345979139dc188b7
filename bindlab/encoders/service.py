"""Embedding through the persistent cache: the one path every command and tab uses to get vectors.

``embed_texts``/``embed_image_files`` dedupe inputs, look them up in the :class:`EmbeddingCache` and run the
encoder only on what is missing (in one batched call), then return rows in input order. :func:`get_encoder` keeps
one instance per model weights in the process: every spelling of a local folder (``st://x``, ``st:///x``, ``st:x/``,
a symlink) shares one copy.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.encoders.base import (
    Encoder,
    EncoderError,
    canonical_id,
    check_batch_size,
    check_texts,
    load_encoder,
    parse_encoder_id,
)
from bindlab.encoders.cache import EmbeddingCache, content_key

Progress = Callable[[int, int], None]

_DEFAULT_CACHE: EmbeddingCache | None = None
_INSTANCES: dict[tuple[str, str, tuple[tuple[str, str], ...]], Encoder] = {}
_KEY_LOCKS: dict[tuple[str, str, tuple[tuple[str, str], ...]], threading.Lock] = {}
_LOCK = threading.Lock()


def instance_key(model: str, **options: Any) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """What makes two encoder instances the same: (canonical id, weights fingerprint, options).

    The canonical id spells a local folder as its real path; the fingerprint (a hash of the folder's safetensors
    and configs, memoised on disk) changes when the weights change, so new weights get a new instance.
    """
    eid = canonical_id(parse_encoder_id(model))
    if options.get("batch_size") is not None:
        options["batch_size"] = check_batch_size(options["batch_size"])
    weights = ""
    folder = Path(eid.name.removeprefix("local-dir:"))
    if folder.is_absolute() and folder.is_dir():
        from bindlab.encoders.weights import fingerprint_for_folder

        try:
            weights = fingerprint_for_folder(folder)
        except (EncoderError, OSError):
            weights = ""  # the backend's loader says what is wrong with the folder
    return str(eid), weights, tuple(sorted((k, repr(v)) for k, v in options.items()))


def get_encoder(model: str, **options: Any) -> Encoder:
    """One encoder instance per (resolved weights, options) for the whole process (thread-safe).

    Two visitors asking for the same model at once load it once: the second waits for the first.

    Raises:
        EncoderError: an unknown id, a batch size < 1, or a load failure (from :func:`load_encoder`).
    """
    key = instance_key(model, **options)
    with _LOCK:
        if key in _INSTANCES:
            return _INSTANCES[key]
        key_lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with key_lock:
        if key not in _INSTANCES:
            _INSTANCES[key] = load_encoder(model, **options)
        return _INSTANCES[key]


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
    from bindlab.data.files import DataError, read_bytes_bounded

    blobs = []
    for p in paths:
        try:  # regular files only (a FIFO never blocks), size-capped
            blobs.append(read_bytes_bounded(Path(p)))
        except DataError as e:
            raise EncoderError(f"image {e}") from None
    keys = [content_key(encoder.fingerprint, "image", b) for b in blobs]

    def compute(idx: list[int]) -> np.ndarray:
        # Backends open files through bindlab.encoders.images, which converts modes and names unreadable files.
        return encoder.embed_images([str(paths[i]) for i in idx])

    vecs, _ = cache.get_or_compute(keys, compute)
    return vecs
