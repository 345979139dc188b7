"""Models held in memory, as encoders: the ``py:`` backend.

A researcher's model lives in a notebook — a checkpoint being trained, a sentence-transformers model, an open_clip
model with its own preprocess. :func:`adopt` turns such an object into an :class:`~bindlab.encoders.base.Encoder`
and registers it for this process under ``py:<name>``; every study then takes that id like any other, so a number
from a model object comes from the one pipeline the CLI and the app use (no second path).

What is adopted:

- any object with ``encode_text(list[str]) -> (n, d)`` and, for image pairings, ``encode_image(list[PIL.Image]) ->
  (n, d)`` (numpy arrays, torch tensors or nested lists); its ``name`` attribute, or ``name=``, names it;
- a ``sentence_transformers.SentenceTransformer``, through its ``encode`` (the package is optional: it is recognised
  by its class, never imported here);
- bindlab's own encoders (a :func:`~bindlab.encoders.base.load_encoder` result, :func:`wrap_open_clip`,
  :func:`wrap_transformers`), which are already encoders.

The embedding cache keys vectors by what the model is, not by its name: the fingerprint is ``py:<name>|<hash>``.

- ``weights:<hex>`` where the object holds torch weights — it is a ``torch.nn.Module`` itself (a SentenceTransformer
  is one) or has one as its ``model`` or ``module`` attribute; the wrappers hash the model they wrap, with its
  preprocess / processor settings. The hash (:func:`weights_hash`) is a blake2b over the module's ``state_dict``:
  every tensor's name, shape, dtype and raw bytes (bf16 and fp8 hashed as bytes, never converted), streamed to the
  CPU in 16 MiB pieces, after the module's printed structure (a SentenceTransformer's pooling among it). It is taken when first needed and taken again when a tensor is changed in place (an
  optimiser step, ``load_state_dict``: torch's version counters, :class:`WeightsWatch`), so training a held model
  between evaluations never reads the old weights' vectors. A change made through ``tensor.data`` is not counted by
  torch: adopt or wrap the model again after one. Code around the weights (your ``encode_text``'s pooling, a
  tokenizer outside the module) is not in the hash beyond the object's class name: change the name when only that
  changes.
- ``probe:<hex>`` for an object without torch weights: a hash of its own vectors for :data:`PROBE_TEXTS` (and two
  small generated images, :func:`probe_images`, where it has ``encode_image``), L2-normalised, rounded to 1e-5 and
  taken as float32 bytes. A model whose outputs change between runs (a hash seeded per process, dropout left on)
  gets a new fingerprint each time: its vectors are recomputed, never mistaken for another's.

So two different models under one name never share vectors, in one process or across processes, and the same
weights adopted again (another session, a re-run cell) find theirs. The results' provenance says which kind the
fingerprint is (``fingerprint_is``). Every output is checked before anything is scored or cached: a wrong shape or
row count, or a non-finite value, is an :class:`EncoderError` naming the model and what it returned. Rows are
L2-normalised here (bindlab scores by cosine).
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from bindlab.encoders.base import EncoderError, EncoderId, check_texts, l2_normalize, register_backend
from bindlab.encoders.images import MAX_SIDE, load_images

log = logging.getLogger(__name__)

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+\-]{0,99}")  # a name, never a path or a revision
HASH_CHUNK = 1 << 24  # bytes of a tensor hashed per update: at most this much is copied off the GPU at a time
PROBE_TEXTS = (
    "a red cube and a blue sphere",
    "a blue cube and a red sphere",
    "a small striped green torus left of a large yellow cone",
    "two purple cylinders",
)
PROBE_DECIMALS = 5  # probe vectors are rounded to 1e-5 before hashing
WRAPPED_NOTE = (
    "weights: blake2b of the wrapped model's state_dict and its preprocess / tokenizer settings, taken "
    "again when a tensor changes in place; embeddings are cached under what the model is, not its name"
)
_REGISTRY: dict[str, Any] = {}  # "py:<name>" -> the encoder
_LOCK = threading.Lock()


def class_name(obj: Any) -> str:
    """``module.QualName`` of an object's class."""
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def find_module(model: Any) -> Any | None:
    """The ``torch.nn.Module`` holding a model's weights: the object itself, or its ``model`` or ``module``
    attribute; None when there is none (or torch was never imported, so nothing can be a module)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for candidate in (model, getattr(model, "model", None), getattr(model, "module", None)):
        if isinstance(candidate, torch.nn.Module):
            return candidate
    return None


def weights_hash(module: Any, extra: str = "") -> tuple[str, int, int]:
    """A blake2b hash of a module's ``state_dict``: ``(hex, tensors, bytes)``.

    Each tensor's name, shape and dtype, then its raw bytes (a flat uint8 view, so bf16 / fp8 / bool hash as they are
    stored), are fed to the hash in order, at most :data:`HASH_CHUNK` bytes at a time (a GPU tensor is copied to the
    CPU piece by piece). The module's class name and printed structure (layer settings such as a LayerNorm's eps, or
    a SentenceTransformer's pooling and max length) and ``extra`` (other settings that change the vectors) go first.
    Cost: ViT-B-32 (open_clip, 151 M float32 parameters, 605 MB) took 0.8 s on one core of a busy 2-core VM
    (about 750 MB/s; bf16, half the bytes, 0.44 s).
    """
    import torch

    h = hashlib.blake2b(digest_size=10)
    structure = re.sub(r" at 0x[0-9a-fA-F]+", "", repr(module))  # no object addresses: the same in every process
    h.update(f"{class_name(module)}|{structure}|{extra}\n".encode())
    tensors = size = 0
    for key, value in module.state_dict().items():
        if not isinstance(value, torch.Tensor):  # a module's extra state: hashed by its text
            h.update(f"{key}|extra|{value!r}\n".encode())
            continue
        t = value.detach()
        if t.layout != torch.strided:
            t = t.to_dense()
        h.update(f"{key}|{tuple(t.shape)}|{t.dtype}\n".encode())
        raw = t.reshape(-1).contiguous().view(torch.uint8)
        for lo in range(0, raw.numel(), HASH_CHUNK):
            h.update(raw[lo : lo + HASH_CHUNK].cpu().numpy())
        tensors, size = tensors + 1, size + raw.numel()
    return h.hexdigest(), tensors, size


class WeightsWatch:
    """A module's :func:`weights_hash`, taken on first use and again whenever its ``state_dict`` changed.

    A change is seen through each tensor's storage address, shape, dtype, device and torch's in-place version counter
    (bumped by optimiser steps, ``load_state_dict`` and any in-place op; not by writes through ``tensor.data``), so
    checking costs a walk over the ``state_dict``, not a hash.
    """

    def __init__(self, module: Any, extra: str = "") -> None:
        self.module, self.extra = module, extra
        self.tensors = self.size = 0
        self._seen: tuple | None = None
        self._hex = ""
        self._lock = threading.Lock()

    def _signature(self) -> tuple:
        return tuple(
            (key, t.data_ptr(), getattr(t, "_version", 0), tuple(t.shape), str(t.dtype), str(t.device))
            if hasattr(t, "data_ptr")
            else (key, repr(t))
            for key, t in self.module.state_dict().items()
        )

    def current(self) -> str:
        """The hex hash of the weights as they are now."""
        with self._lock:
            seen = self._signature()
            if seen != self._seen:
                try:
                    self._hex, self.tensors, self.size = weights_hash(self.module, self.extra)
                except (RuntimeError, NotImplementedError, TypeError) as e:  # meta or quantised tensors
                    raise EncoderError(
                        f"cannot hash the weights of a {class_name(self.module)} ({e}); bindlab keys "
                        "cached vectors by the weights — give a model with materialised "
                        "tensors"
                    ) from None
                self._seen = seen
            return self._hex

    def label(self) -> str:
        """``weights:<hex>``, the hash part of a fingerprint."""
        return f"weights:{self.current()}"


def probe_images() -> list[Any]:
    """Two fixed 32x32 RGB images (a colour gradient, a red-green checkerboard) for :func:`probe_hash`."""
    from PIL import Image

    y, x = np.mgrid[0:32, 0:32]
    gradient = np.stack([x * 8, y * 8, (x + y) * 4], axis=-1)
    checker = np.where(((x // 8 + y // 8) % 2 == 1)[..., None], [200, 40, 40], [30, 160, 60])
    return [Image.fromarray(a.astype(np.uint8), "RGB") for a in (gradient, checker)]


def probe_hash(*vectors: np.ndarray) -> str:
    """A blake2b hash of probe vectors: shapes, then float32 bytes after rounding to 1e-5 (``-0.0`` made ``0.0``)."""
    h = hashlib.blake2b(digest_size=10)
    for vecs in vectors:
        rounded = np.round(np.asarray(vecs, dtype=np.float32), PROBE_DECIMALS) + np.float32(0.0)
        h.update(f"{rounded.shape}\n".encode())
        h.update(np.ascontiguousarray(rounded, dtype=np.float32).tobytes())
    return h.hexdigest()


def is_encoder(obj: Any) -> bool:
    """True for bindlab's own encoders (an ``id``, a ``fingerprint``, ``modalities`` and ``embed_texts``)."""
    return (
        isinstance(getattr(obj, "id", None), str)
        and isinstance(getattr(obj, "fingerprint", None), str)
        and isinstance(getattr(obj, "modalities", None), frozenset)
        and callable(getattr(obj, "embed_texts", None))
    )


def is_sentence_transformer(obj: Any) -> bool:
    """A ``sentence_transformers.SentenceTransformer`` (or subclass), recognised without importing the package."""
    return any(
        c.__module__.startswith("sentence_transformers") and c.__name__ == "SentenceTransformer"
        for c in type(obj).__mro__
    ) and callable(getattr(obj, "encode", None))


def check_name(name: Any, what: str = "name") -> str:
    """A model name: letters, digits and ``._+-``, at most 100 characters, starting with a letter or digit."""
    text = str(name or "").strip() if isinstance(name, str) else ""
    if not NAME.fullmatch(text):
        raise EncoderError(
            f"{what} {str(name)[:120]!r}: give a short name of letters, digits and . _ + - (e.g. "
            "'my-model-step200'); it labels the results, as py:<name>"
        )
    return text


def _default_name(model: Any) -> str | None:
    """The object's own name: a ``name`` attribute, or a SentenceTransformer's model folder / hub name."""
    own = getattr(model, "name", None)
    if isinstance(own, str) and own.strip():
        return own.strip()
    if is_sentence_transformer(model):
        card = getattr(model, "model_card_data", None)
        for candidate in (getattr(card, "base_model", None), getattr(card, "model_name", None)):
            if isinstance(candidate, str) and candidate.strip():
                return re.sub(r"[^A-Za-z0-9._+\-]", "-", candidate.strip().rstrip("/").rsplit("/", 1)[-1])
    return None


def as_array(out: Any, rows: int, model_id: str, method: str) -> np.ndarray:
    """A model's output as ``(rows, d)`` float32, or :class:`EncoderError` naming the model and what it returned."""
    if hasattr(out, "detach"):  # a torch tensor, on any device
        out = out.detach().float().cpu().numpy()
    try:
        arr = np.asarray(out, dtype=np.float32)
    except (TypeError, ValueError):
        raise EncoderError(
            f"{model_id}: {method} returned {type(out).__name__}, not an array of numbers; it must "
            f"return an array of shape ({rows}, d)"
        ) from None
    if arr.ndim != 2 or arr.shape[0] != rows or arr.shape[1] < 1:
        raise EncoderError(
            f"{model_id}: {method} returned an array of shape {tuple(arr.shape)} for {rows} inputs; "
            f"it must return one row per input, shape ({rows}, d)"
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.flatnonzero(bad.any(axis=1))
        raise EncoderError(
            f"{model_id}: {method} returned {int(bad.sum())} non-finite values (NaN or inf) in "
            f"{len(where)} of {rows} rows (first: row {int(where[0])}); nothing was scored or cached"
        )
    return arr


class AdoptedEncoder:
    """An object with ``encode_text`` (and ``encode_image``), or a SentenceTransformer, as a bindlab encoder."""

    def __init__(self, model: Any, name: str, batch_size: int = 64) -> None:
        self.model = model
        self.id = f"py:{name}"
        self.batch_size = int(batch_size)
        module = find_module(model)
        self.weights = WeightsWatch(module, class_name(model)) if module is not None else None
        self._probe: str | None = None
        self._probe_lock = threading.Lock()
        self._dim: int | None = None
        self.last_image_notes: list[str] = []
        if is_sentence_transformer(model):
            self._text: Callable[[list[str]], Any] = lambda texts: model.encode(
                texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
            )
            self.source = "sentence-transformers encode"
        elif callable(getattr(model, "encode_text", None)):
            self._text = model.encode_text
            self.source = "encode_text"
        else:
            raise EncoderError(
                f"{self.id}: cannot use a {type(model).__name__}: give an object with encode_text(list[str]) -> "
                "array (n, d) (and encode_image(list[PIL.Image]) for image pairings), a sentence-transformers "
                "SentenceTransformer, or wrap an open_clip / transformers model with bindlab.wrap_open_clip / "
                "bindlab.wrap_transformers"
            )
        self._image = getattr(model, "encode_image", None) if callable(getattr(model, "encode_image", None)) else None
        self.modalities = frozenset({"text", "image"} if self._image else {"text"})

    @property
    def fingerprint(self) -> str:
        """``py:<name>|weights:<hex>`` or ``py:<name>|probe:<hex>`` (see the module docstring); the probe is taken
        on first use, the weights hash on first use and whenever the weights changed."""
        if self.weights is not None:
            return f"{self.id}|{self.weights.label()}"
        with self._probe_lock:
            if self._probe is None:
                self._probe = self._take_probe()
        return f"{self.id}|probe:{self._probe}"

    @property
    def fingerprint_note(self) -> str:
        """What the fingerprint's hash is of (recorded in the results' provenance as ``fingerprint_is``)."""
        if self.weights is not None:
            w = self.weights
            w.current()
            where = (
                "the object"
                if w.module is self.model
                else ("its .model" if getattr(self.model, "model", None) is w.module else "its .module")
            )
            return (
                f"weights: blake2b of the state_dict of {class_name(w.module)} ({where}; {w.tensors} tensors, "
                f"{w.size / 1e6:.1f} MB); embeddings are cached under what the model is, not its name"
            )
        images = f" and {len(probe_images())} generated images" if self._image else ""
        return (
            f"probe of {len(PROBE_TEXTS)} texts{images}: blake2b of the model's own vectors for fixed inputs "
            "(rounded to 1e-5), as the object holds no torch weights; embeddings are cached under what the model "
            "returns, not its name"
        )

    def _take_probe(self) -> str:
        vectors = [
            self._checked(self._text(list(PROBE_TEXTS)), len(PROBE_TEXTS), f"{self.source} on bindlab's probe texts")
        ]
        if self._image is not None:
            ims = probe_images()
            vectors.append(self._checked(self._image(ims), len(ims), "encode_image on bindlab's probe images"))
        return probe_hash(*vectors)

    def _checked(self, out: Any, rows: int, method: str) -> np.ndarray:
        arr = as_array(out, rows, self.id, method)
        if self._dim is None:
            self._dim = arr.shape[1]
        elif arr.shape[1] != self._dim:
            raise EncoderError(
                f"{self.id}: {method} returned {arr.shape[1]}-dimensional vectors after "
                f"{self._dim}-dimensional ones; every call must return the same d"
            )
        return l2_normalize(arr)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Texts -> ``(n, d)`` L2-normalised float32 through the model's ``encode_text`` (or ``encode``)."""
        texts = check_texts(texts, self.id)
        return self._checked(self._text(list(texts)), len(texts), self.source)

    def embed_images(self, images: list[Any]) -> np.ndarray:
        """Images (PIL, paths or uint8 arrays) -> ``(n, d)`` through ``encode_image``, given RGB PIL images."""
        if self._image is None:
            raise EncoderError(
                f"{self.id} has no encode_image, so it cannot embed images; pick the tt pairing, or "
                "give the object an encode_image(list[PIL.Image]) -> array (n, d) method"
            )
        ims, self.last_image_notes = load_images(images, self.id, MAX_SIDE)
        return self._checked(self._image(ims), len(ims), "encode_image")


def register(encoder: Any) -> Any:
    """Make ``encoder`` (id ``py:<name>``) loadable by its id in this process; return it.

    A different object under an id already registered replaces it (the loaded instance is dropped, so the next
    study uses the new one). Nothing cached is shared by mistake: the fingerprint hashes the model, not the name.
    """
    from bindlab.encoders import service

    with _LOCK:
        previous = _REGISTRY.get(encoder.id)
        if previous is not None and getattr(previous, "model", previous) is not getattr(encoder, "model", encoder):
            log.info("%s now names another model object; cached embeddings follow its fingerprint", encoder.id)
        _REGISTRY[encoder.id] = encoder
    service.forget(encoder.id)
    return encoder


def adopt(model: Any, name: str | None = None, batch_size: int = 64) -> Any:
    """Any model object as a bindlab encoder, registered as ``py:<name>`` (see the module docstring).

    Args:
        model: an object with ``encode_text`` (and ``encode_image``), a SentenceTransformer, or a bindlab encoder
            (returned unchanged).
        name: labels the results (``py:<name>``); default: the object's ``name`` attribute (a SentenceTransformer:
            its model's name). Cached vectors are keyed by the model's hash, not by the name.
        batch_size: texts or images per call of the model.

    Raises:
        EncoderError: an object bindlab cannot call, or no usable name.
    """
    if is_encoder(model):
        if name is not None and f"py:{name}" != model.id:
            raise EncoderError(
                f"{model.id} is already a bindlab encoder with its own id; name= applies to model "
                "objects (wrap_open_clip / wrap_transformers take name= themselves)"
            )
        return model
    if isinstance(model, str):
        raise EncoderError(
            f"adopt takes a model object; for an encoder id such as {model[:80]!r} use bindlab.load_encoder"
        )
    chosen = name if name is not None else _default_name(model)
    if chosen is None:
        raise EncoderError(f"a {type(model).__name__} has no name: pass name='…' (it labels the results, as py:<name>)")
    return register(AdoptedEncoder(model, check_name(chosen), batch_size))


def registered() -> list[str]:
    """The ``py:`` ids registered in this process."""
    with _LOCK:
        return sorted(_REGISTRY)


def _load(eid: EncoderId, options: dict[str, Any]) -> Any:
    with _LOCK:
        found = _REGISTRY.get(f"py:{eid.name}")
    if found is None:
        raise EncoderError(
            f"py:{eid.name} names a model held in memory by a Python session, and none is registered "
            "under that name in this process; pass the model object itself to bindlab's functions "
            "(or call bindlab.adopt(model, name=...) first)"
        )
    return found


register_backend("py", _load, "a model object adopted in Python (bindlab.adopt, wrap_open_clip, wrap_transformers)")
