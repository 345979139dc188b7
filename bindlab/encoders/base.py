"""The one :class:`Encoder` protocol, encoder ids, and the registry of backends.

An encoder id is ``backend:name[@revision]`` (``minilm`` and ``bow`` are short aliases). The id is parsed once,
here, by :func:`parse_encoder_id`; each backend module registers a *loader* with :func:`register_backend` and
imports its heavy dependencies inside that loader, so importing bindlab stays cheap. This module knows no backend:
importing the package ``bindlab.encoders`` imports the built-in backend modules, which fills the registry.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

# Short names users type, expanded before parsing.
ALIASES: dict[str, str] = {
    "minilm": "st:all-MiniLM-L6-v2",
    "bow": "bow:words",
}


class EncoderError(ValueError):
    """A user-facing problem with an encoder id or with loading/running an encoder; the message says what to do."""


@dataclass(frozen=True)
class EncoderId:
    """A parsed encoder id: ``backend:name[@revision]``."""

    backend: str
    name: str
    revision: str | None = None

    def __str__(self) -> str:
        return f"{self.backend}:{self.name}" + (f"@{self.revision}" if self.revision else "")


def parse_encoder_id(text: str) -> EncoderId:
    """Parse ``backend:name[@revision]`` (or an alias such as ``minilm``) into an :class:`EncoderId`.

    Local paths may contain ``@``; the revision is only what follows the *last* ``@`` when no ``/`` follows it.
    """
    raw = (text or "").strip()
    if not raw:
        raise EncoderError(
            "empty encoder id; use backend:name, e.g. 'minilm', 'bow' or 'hf:openai/clip-vit-base-patch32'"
        )
    raw = ALIASES.get(raw, raw)
    if ":" not in raw:
        raise EncoderError(
            f"encoder id {text!r} has no backend; use backend:name with a backend from {sorted(_BACKENDS)} "
            f"or an alias from {sorted(ALIASES)}"
        )
    backend, name = raw.split(":", 1)
    revision = None
    if "@" in name and "/" not in name.rsplit("@", 1)[1]:
        name, revision = name.rsplit("@", 1)
        revision = revision or None
    if not name:
        raise EncoderError(f"encoder id {text!r} has an empty name after '{backend}:'")
    return EncoderId(backend, name, revision)


@runtime_checkable
class Encoder(Protocol):
    """What every backend provides. Embeddings are float32 numpy arrays, rows L2-normalised.

    Attributes:
        id: the canonical encoder id string.
        modalities: subset of ``{"text", "image"}``.
        fingerprint: id + revision/weights hash; changes whenever the embeddings could change.

    Optional methods (capabilities of a backend, read through the helpers that name them): ``text_tower()``
    (:func:`bindlab.encoders.text_tower.text_tower`), ``attention_access()``, and ``unknown_words(texts) ->
    list[list[str]] | None``: per text, the words its tokenizer maps to an unknown token, in order (None: it cannot
    say; read through :func:`unknown_words`).
    """

    id: str
    modalities: frozenset[str]
    fingerprint: str

    def embed_texts(self, texts: list[str]) -> np.ndarray:  # (n, d) float32
        ...

    def embed_images(self, images: list[Any]) -> np.ndarray:  # (n, d) float32; images are PIL.Image
        ...


def unknown_words(encoder: Any, texts: list[str]) -> list[list[str]] | None:
    """Per text, the words ``encoder`` does not know (its tokenizer maps them to an unknown token), in order; None
    when the encoder cannot say (it has no ``unknown_words`` method: an open vocabulary or an unknown tokenizer)."""
    report = getattr(encoder, "unknown_words", None)
    if report is None:
        return None
    out = report(list(texts))
    if out is None:  # a wrapper whose inner encoder cannot say
        return None
    if len(out) != len(texts):
        raise EncoderError(
            f"{getattr(encoder, 'id', encoder)}: unknown_words gave {len(out)} lists for {len(texts)} texts"
        )
    return [list(u) for u in out]


Loader = Callable[[EncoderId, dict[str, Any]], Encoder]
_BACKENDS: dict[str, Loader] = {}
_BACKEND_DOCS: dict[str, str] = {}


def register_backend(name: str, loader: Loader, doc: str = "") -> None:
    """Register a backend loader; a second registration of the same name is refused loudly."""
    if name in _BACKENDS:
        raise ValueError(f"encoder backend {name!r} is already registered")
    _BACKENDS[name] = loader
    _BACKEND_DOCS[name] = doc


def backends() -> dict[str, str]:
    """Registered backend names with one-line descriptions."""
    return dict(_BACKEND_DOCS)


def load_encoder(encoder_id: str, **options: Any) -> Encoder:
    """Load an encoder by id. Options (``device``, ``batch_size``, ...) are passed to the backend loader.

    Raises:
        EncoderError: unknown backend, unknown name, or a load failure, with a message that says what to do.
    """
    return load_parsed(canonical_id(parse_encoder_id(encoder_id)), **options)


def load_parsed(eid: EncoderId, **options: Any) -> Encoder:
    """:func:`load_encoder` of an id already parsed (and made canonical): the id is read once on its way in.

    Raises:
        EncoderError: unknown backend, unknown name, or a load failure, with a message that says what to do.
    """
    if options.get("batch_size") is not None:
        options["batch_size"] = check_batch_size(options["batch_size"])
    if eid.backend not in _BACKENDS:
        raise EncoderError(
            f"unknown encoder backend {eid.backend!r} in {str(eid)!r}; known backends: {sorted(_BACKENDS)}"
        )
    if eid.revision and names_local_weights(eid):
        raise no_revision(eid)
    return _BACKENDS[eid.backend](eid, options)


# Backends whose weights are always on this machine (bundled or built in): an "@revision" cannot choose among them.
LOCAL_BACKENDS = ("toy", "bow", "lora", "py")


def names_local_weights(eid: EncoderId) -> bool:
    """True when ``eid`` names weights on this machine (a built-in backend, a local folder): they have one version."""
    name = eid.name.removeprefix("local-dir:")
    return (
        eid.backend in LOCAL_BACKENDS
        or eid.name.startswith("local-dir:")
        or (name.startswith(("/", ".", "~")) and Path(name).expanduser().is_dir())
    )


def no_revision(eid: EncoderId) -> EncoderError:
    """The refusal of an ``@revision`` on weights that have one version, before anything loads (every spelling
    would otherwise load another copy of the same weights)."""
    return EncoderError(
        f"{eid.backend}:{eid.name} names weights on this machine, which have one version; drop "
        f"'@{eid.revision}' (a revision chooses a version of a hub model)"
    )


def check_batch_size(batch_size: Any) -> int:
    """A positive int, or :class:`EncoderError` naming the bad value (a batch size < 1 would embed nothing)."""
    if isinstance(batch_size, bool):
        batch_size = None
    try:
        b = int(batch_size)
    except (TypeError, ValueError, OverflowError):
        b = 0
    if b < 1 or (b != batch_size and not isinstance(batch_size, str)):
        raise EncoderError(f"batch_size must be a positive integer, got {batch_size!r}; use e.g. 32")
    return b


def canonical_id(eid: EncoderId) -> EncoderId:
    """The id with a local model folder spelled one way: its real path.

    ``st://x``, ``st:///x``, ``st:x/`` and a symlink to the same folder all become ``st:/real/x``, so they share
    one instance, one fingerprint and one set of cache rows. Names that are not path-like (``toy:clip``,
    ``st:all-MiniLM-L6-v2``, hub ids that are not local folders) are left alone; open_clip's ``local-dir:`` prefix
    is kept.
    """
    prefix = "local-dir:" if eid.name.startswith("local-dir:") else ""
    path = eid.name[len(prefix) :]
    if not (path.startswith((".", "~")) or "/" in path):
        return eid
    p = Path(path).expanduser()
    if not p.is_dir():
        return eid
    real = os.path.realpath(p)
    if real.startswith("//"):
        real = "/" + real.lstrip("/")  # POSIX keeps a leading '//'; on Linux it is '/'
    return EncoderId(eid.backend, prefix + real, eid.revision)


def l2_normalize(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Row-wise L2 normalisation; rows of zeros stay zero. (n, d) -> (n, d) float32."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.maximum(norms, eps)).astype(np.float32)


def check_texts(texts: list[str], encoder_id: str) -> list[str]:
    """Validate text inputs: a list of non-empty strings. Raises :class:`EncoderError` naming the bad item."""
    if isinstance(texts, str):
        raise EncoderError(f"{encoder_id}: embed_texts expects a list of strings, got one string")
    out = []
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise EncoderError(f"{encoder_id}: text #{i} is {type(t).__name__}, not a string")
        if not t.strip():
            raise EncoderError(f"{encoder_id}: text #{i} is empty; give a caption with at least one word")
        out.append(t)
    return out


def hash_files(paths: list[str]) -> str:
    """Short sha256 over the contents of weight files (for fingerprints)."""
    h = hashlib.sha256()
    for p in sorted(paths):
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


class TextOnlyMixin:
    """For encoders without an image tower: asking for images is a clear error, not a crash."""

    id: str

    def embed_images(self, images: list[Any]) -> np.ndarray:
        raise EncoderError(
            f"{self.id} is a text-only encoder and cannot embed images; pick an image+text encoder "
            "(e.g. toy:clip, hf:openai/clip-vit-base-patch32) for the ti/it/ii pairings"
        )
