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

The name keys the embedding cache: the fingerprint is ``py:<name>|user-named``, the caller's name and not a hash of
the weights (an in-memory model has no files to hash), and results say so in their provenance. Give a new name when
the weights change (``name="mymodel-step200"``); adopting a different object under a name already used in this
process replaces it, with a warning that its cached vectors are reused. Every output is checked before anything is
scored or cached: a wrong shape or row count, or a non-finite value, is an :class:`EncoderError` naming the model and
what it returned. Rows are L2-normalised here (bindlab scores by cosine).
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from bindlab.encoders.base import EncoderError, EncoderId, check_texts, l2_normalize, register_backend
from bindlab.encoders.images import MAX_SIDE, load_images

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+\-]{0,99}")  # a name, never a path or a revision
USER_NAMED = "user-named"
FINGERPRINT_NOTE = ("the name given in Python (bindlab.adopt / wrap_*), not a hash of the weights: embeddings are "
                    "cached under it; use a new name when the weights change")
_REGISTRY: dict[str, Any] = {}  # "py:<name>" -> the encoder
_OWNERS: dict[str, int] = {}  # "py:<name>" -> id() of the object adopted under it
_WARNED: set[str] = set()  # ids whose replacement was warned about
_LOCK = threading.Lock()


def is_encoder(obj: Any) -> bool:
    """True for bindlab's own encoders (an ``id``, a ``fingerprint``, ``modalities`` and ``embed_texts``)."""
    return (isinstance(getattr(obj, "id", None), str) and isinstance(getattr(obj, "fingerprint", None), str)
            and isinstance(getattr(obj, "modalities", None), frozenset) and callable(getattr(obj, "embed_texts", None)))


def is_sentence_transformer(obj: Any) -> bool:
    """A ``sentence_transformers.SentenceTransformer`` (or subclass), recognised without importing the package."""
    return any(c.__module__.startswith("sentence_transformers") and c.__name__ == "SentenceTransformer"
               for c in type(obj).__mro__) and callable(getattr(obj, "encode", None))


def check_name(name: Any, what: str = "name") -> str:
    """A model name: letters, digits and ``._+-``, at most 100 characters, starting with a letter or digit."""
    text = str(name or "").strip() if isinstance(name, str) else ""
    if not NAME.fullmatch(text):
        raise EncoderError(f"{what} {str(name)[:120]!r}: give a short name of letters, digits and . _ + - (e.g. "
                           "'my-model-step200'); it labels the results and keys the embedding cache")
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
        raise EncoderError(f"{model_id}: {method} returned {type(out).__name__}, not an array of numbers; it must "
                           f"return an array of shape ({rows}, d)") from None
    if arr.ndim != 2 or arr.shape[0] != rows or arr.shape[1] < 1:
        raise EncoderError(f"{model_id}: {method} returned an array of shape {tuple(arr.shape)} for {rows} inputs; "
                           f"it must return one row per input, shape ({rows}, d)")
    bad = ~np.isfinite(arr)
    if bad.any():
        where = np.flatnonzero(bad.any(axis=1))
        raise EncoderError(f"{model_id}: {method} returned {int(bad.sum())} non-finite values (NaN or inf) in "
                           f"{len(where)} of {rows} rows (first: row {int(where[0])}); nothing was scored or cached")
    return arr


class AdoptedEncoder:
    """An object with ``encode_text`` (and ``encode_image``), or a SentenceTransformer, as a bindlab encoder."""

    def __init__(self, model: Any, name: str, batch_size: int = 64) -> None:
        self.model = model
        self.id = f"py:{name}"
        self.fingerprint = f"{self.id}|{USER_NAMED}"
        self.fingerprint_note = FINGERPRINT_NOTE
        self.batch_size = int(batch_size)
        self._dim: int | None = None
        self.last_image_notes: list[str] = []
        if is_sentence_transformer(model):
            self._text: Callable[[list[str]], Any] = lambda texts: model.encode(
                texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)
            self.source = "sentence-transformers encode"
        elif callable(getattr(model, "encode_text", None)):
            self._text = model.encode_text
            self.source = "encode_text"
        else:
            raise EncoderError(
                f"{self.id}: cannot use a {type(model).__name__}: give an object with encode_text(list[str]) -> "
                "array (n, d) (and encode_image(list[PIL.Image]) for image pairings), a sentence-transformers "
                "SentenceTransformer, or wrap an open_clip / transformers model with bindlab.wrap_open_clip / "
                "bindlab.wrap_transformers")
        self._image = getattr(model, "encode_image", None) if callable(getattr(model, "encode_image", None)) else None
        self.modalities = frozenset({"text", "image"} if self._image else {"text"})

    def _checked(self, out: Any, rows: int, method: str) -> np.ndarray:
        arr = as_array(out, rows, self.id, method)
        if self._dim is None:
            self._dim = arr.shape[1]
        elif arr.shape[1] != self._dim:
            raise EncoderError(f"{self.id}: {method} returned {arr.shape[1]}-dimensional vectors after "
                               f"{self._dim}-dimensional ones; every call must return the same d")
        return l2_normalize(arr)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Texts -> ``(n, d)`` L2-normalised float32 through the model's ``encode_text`` (or ``encode``)."""
        texts = check_texts(texts, self.id)
        return self._checked(self._text(list(texts)), len(texts), self.source)

    def embed_images(self, images: list[Any]) -> np.ndarray:
        """Images (PIL, paths or uint8 arrays) -> ``(n, d)`` through ``encode_image``, given RGB PIL images."""
        if self._image is None:
            raise EncoderError(f"{self.id} has no encode_image, so it cannot embed images; pick the tt pairing, or "
                               "give the object an encode_image(list[PIL.Image]) -> array (n, d) method")
        ims, self.last_image_notes = load_images(images, self.id, MAX_SIDE)
        return self._checked(self._image(ims), len(ims), "encode_image")


def register(encoder: Any) -> Any:
    """Make ``encoder`` (id ``py:<name>``) loadable by its id in this process; return it.

    A different object under an id already registered replaces it (the loaded instance is dropped, so the next
    study uses the new one), with a warning (once per name): the embedding cache still holds the old object's vectors under that
    name, so a model whose weights changed needs a new name.
    """
    from bindlab.encoders import service

    with _LOCK:
        owner = id(getattr(encoder, "model", encoder))
        previous = _OWNERS.get(encoder.id)
        if previous is not None and previous != owner and encoder.id not in _WARNED:
            _WARNED.add(encoder.id)  # once per name: a notebook re-running a cell makes a new object each time
            warnings.warn(f"{encoder.id} now names another model object; embeddings cached under this name are "
                          "reused — if its weights differ, adopt it under a new name", stacklevel=3)
        _REGISTRY[encoder.id] = encoder
        _OWNERS[encoder.id] = owner
    service.forget(encoder.id)
    return encoder


def adopt(model: Any, name: str | None = None, batch_size: int = 64) -> Any:
    """Any model object as a bindlab encoder, registered as ``py:<name>`` (see the module docstring).

    Args:
        model: an object with ``encode_text`` (and ``encode_image``), a SentenceTransformer, or a bindlab encoder
            (returned unchanged).
        name: labels the results and keys the embedding cache; default: the object's ``name`` attribute (a
            SentenceTransformer: its model's name).
        batch_size: texts or images per call of the model.

    Raises:
        EncoderError: an object bindlab cannot call, or no usable name.
    """
    if is_encoder(model):
        if name is not None and f"py:{name}" != model.id:
            raise EncoderError(f"{model.id} is already a bindlab encoder with its own id; name= applies to model "
                               "objects (wrap_open_clip / wrap_transformers take name= themselves)")
        return model
    if isinstance(model, str):
        raise EncoderError(f"adopt takes a model object; for an encoder id such as {model[:80]!r} use "
                           "bindlab.load_encoder")
    chosen = name if name is not None else _default_name(model)
    if chosen is None:
        raise EncoderError(f"a {type(model).__name__} has no name: pass name='…' (it labels the results and keys "
                           "the embedding cache)")
    return register(AdoptedEncoder(model, check_name(chosen), batch_size))


def registered() -> list[str]:
    """The ``py:`` ids registered in this process."""
    with _LOCK:
        return sorted(_REGISTRY)


def _load(eid: EncoderId, options: dict[str, Any]) -> Any:
    with _LOCK:
        found = _REGISTRY.get(f"py:{eid.name}")
    if found is None:
        raise EncoderError(f"py:{eid.name} names a model held in memory by a Python session, and none is registered "
                           "under that name in this process; pass the model object itself to bindlab's functions "
                           "(or call bindlab.adopt(model, name=...) first)")
    return found


register_backend("py", _load, "a model object adopted in Python (bindlab.adopt, wrap_open_clip, wrap_transformers)")
