"""Embedding through the persistent cache: the one path every command and tab uses to get vectors.

``embed_texts``/``embed_image_files`` dedupe inputs, look them up in the :class:`EmbeddingCache` and run the
encoder only on what is missing, then return rows in input order, :data:`LOOKUP_CHUNK` items at a time into one
output array (never the whole lookup plus a stacked copy). The missing items go to the encoder in batches
of its own batch size (:func:`fair_batch_size`), each batch holding :data:`MODEL_TURN`, a fair lock (fewest recent
turns first, then first come, first served; see :class:`FairLock`): when several requests embed at once (the app's
GPU queue lets a few events run together), a small request's batches go between a large one's instead of waiting
for all of it. Uncontended, the lock costs nothing. :func:`get_encoder` keeps
one instance per model weights in the process: every spelling of a local folder (``st://x``, ``st:///x``, ``st:x/``,
a symlink) shares one copy.

Under ``torchrun``/``accelerate launch`` (see :mod:`bindlab.encoders.distributed`) rank 0 runs the command and
the other ranks wait in :func:`serve_embedding_requests`: after rank 0's cache lookup, each rank embeds a disjoint
contiguous shard of the missing unique items, the shards are gathered on rank 0 in order, and rank 0 alone writes
the cache (no concurrent SQLite writers across ranks or nodes) and scores.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.config import limits
from bindlab.encoders import admission, distributed
from bindlab.encoders.base import (
    Encoder,
    EncoderError,
    EncoderId,
    canonical_id,
    check_batch_size,
    check_texts,
    load_parsed,
    parse_encoder_id,
)
from bindlab.encoders.cache import EmbeddingCache, content_key, content_keys, word_keys

Progress = Callable[[int, int], None]

log = logging.getLogger(__name__)

_DEFAULT_CACHE: EmbeddingCache | None = None
# Loaded encoders, least recently used first; at most limits().max_loaded_models of them (the oldest is dropped).
_INSTANCES: OrderedDict[tuple[str, str, tuple[tuple[str, str], ...]], Encoder] = OrderedDict()
_KEY_LOCKS: dict[tuple[str, str, tuple[tuple[str, str], ...]], threading.Lock] = {}
_LOCK = threading.Lock()
_RECIPES: dict[int, tuple[str, dict[str, Any]]] = {}  # id(instance) -> (model, options): how other ranks load it
_SHARD_TOTALS: list[int] = []  # on rank 0: items each rank embedded in this process's sharded calls
_SHARD_SECONDS: list[float] = []  # on rank 0: seconds each rank spent embedding its shards
DEFAULT_FAIR_BATCH = 64  # items per turn when an encoder does not say its batch size
LOOKUP_CHUNK = 2048  # items looked up in (and added to) the cache at once: ~33 MB of float32 at 4,096 dimensions


class FairLock:
    """A fair lock for turns on the model: fewest recent turns first, then first come, first served.

    A plain :class:`threading.Lock` lets the thread that just released it take it again at once, so a long job
    looping over batches could starve a short one. Here every waiter holds a ticket; the lock goes to the waiter
    whose thread has had the fewest turns lately (its count restarts after ``idle_reset_s`` without a turn, i.e.
    with the thread's next request), ties by ticket. So a new, small request goes before a long one that has had
    many turns, and its few batches finish about as fast as when idle. No waiter is passed over more than
    ``max_skips`` times, so a stream of small requests cannot starve a long one.
    """

    def __init__(self, max_skips: int = 4, idle_reset_s: float = 2.0) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._next = 0  # the next ticket to hand out
        self._holder: int | None = None  # the ticket holding the lock
        self._waiters: dict[int, list[int]] = {}  # ticket -> [recent turns of its thread, times passed over]
        self._turns: dict[int, tuple[int, float]] = {}  # thread id -> (turns, time of the last release)
        self.max_skips, self.idle_reset_s = max_skips, idle_reset_s

    def _recent_turns(self, thread: int) -> int:
        turns, last = self._turns.get(thread, (0, 0.0))
        return turns if time.monotonic() - last < self.idle_reset_s else 0

    def _next_ticket(self) -> int:
        overdue = [t for t, (_, skipped) in self._waiters.items() if skipped >= self.max_skips]
        if overdue:
            return min(overdue)
        return min(self._waiters, key=lambda t: (self._waiters[t][0], t))

    def acquire(self) -> None:
        """Wait for this thread's turn."""
        with self._cond:
            ticket = self._next
            self._next += 1
            self._waiters[ticket] = [self._recent_turns(threading.get_ident()), 0]
            while self._holder is not None or self._next_ticket() != ticket:
                self._cond.wait()
            self._holder = ticket
            del self._waiters[ticket]
            for waiter in self._waiters.values():
                waiter[1] += 1

    def release(self) -> None:
        """End this thread's turn; the next waiter (see the class) goes."""
        with self._cond:
            now, thread = time.monotonic(), threading.get_ident()
            self._turns[thread] = (self._recent_turns(thread) + 1, now)
            self._turns = {k: v for k, v in self._turns.items() if now - v[1] < self.idle_reset_s}
            self._holder = None
            self._cond.notify_all()

    def waiting(self) -> int:
        """Threads holding or waiting for the lock."""
        with self._cond:
            return len(self._waiters) + (self._holder is not None)

    @contextmanager
    def turn(self) -> Iterator[None]:
        """``with lock.turn():`` hold the lock for one unit of work."""
        self.acquire()
        try:
            yield
        finally:
            self.release()


MODEL_TURN = FairLock()  # one encoder forward pass (one batch) at a time across all requests, shared fairly


def fair_batch_size(encoder: Encoder) -> int:
    """Items per model turn: the encoder's own batch size (``batch_size`` or ``runner.batch_size``), else 64."""
    for owner in (encoder, getattr(encoder, "runner", None)):
        size = getattr(owner, "batch_size", None)
        if isinstance(size, int) and not isinstance(size, bool) and size >= 1:
            return size
    return DEFAULT_FAIR_BATCH


def in_turns(embed: Callable[[list[Any]], np.ndarray], items: Sequence[Any], batch: int) -> np.ndarray:
    """``embed`` over ``items`` in batches of ``batch``, each batch one turn of :data:`MODEL_TURN`.

    Returns:
        ``(len(items), d)`` float32, filled in place (no list of per-batch arrays plus a concatenated copy).
    """
    out: np.ndarray | None = None
    admission.charge(len(items))  # an app request: light ones share the model, heavy ones need a slot
    for start in range(0, len(items), batch):
        admission.check_time()
        with MODEL_TURN.turn():
            vecs = np.asarray(embed(list(items[start : start + batch])), dtype=np.float32)
        expected = min(batch, len(items) - start)
        if vecs.ndim != 2 or vecs.shape[0] != expected:
            raise RuntimeError(f"encoder returned {vecs.shape[0] if vecs.ndim else 0} vectors for {expected} inputs")
        if out is None:
            out = np.empty((len(items), vecs.shape[1]), dtype=np.float32)
        out[start : start + expected] = vecs
    return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def instance_key(model: str, **options: Any) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """What makes two encoder instances the same: (canonical id, weights fingerprint, options).

    The canonical id spells a local folder as its real path; the fingerprint (a hash of the folder's safetensors
    and configs, memoised on disk) changes when the weights change, so new weights get a new instance.
    """
    return _instance_key(canonical_id(parse_encoder_id(model)), options)


def _instance_key(eid: EncoderId, options: dict[str, Any]) -> tuple[str, str, tuple[tuple[str, str], ...]]:
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


FLOAT32_BACKENDS = ("toy", "bow", "st", "py")  # they ignore a dtype (hf, open_clip, qwen3vl run in it; lora: its base)


def _runs_float32(encoder: Encoder) -> bool:
    """Whether ``encoder`` ignores a dtype: a bundled backend, or a ``lora:`` model over one (it runs its base)."""
    base = getattr(encoder, "base", None) if parse_encoder_id(encoder.id).backend == "lora" else None
    return parse_encoder_id((base or encoder).id).backend in FLOAT32_BACKENDS


def loader_options(device: str = "auto", batch_size: int | None = None, dtype: str = "auto") -> dict[str, Any]:
    """The options :func:`get_encoder` passes for a device, batch size and dtype: none with the defaults, so the
    backend's own apply and the caller shares the instance the tabs use."""
    options: dict[str, Any] = {}
    if device != "auto" or batch_size is not None:
        options["device"] = device
    if batch_size is not None:
        options["batch_size"] = batch_size
    if dtype != "auto":
        options["dtype"] = dtype
    return options


def get_encoder(model: str, **options: Any) -> Encoder:
    """One encoder instance per (resolved weights, options) for the whole process (thread-safe).

    Two visitors asking for the same model at once load it once: the second waits for the first.

    Raises:
        EncoderError: an unknown id, a batch size < 1, or a load failure (from :func:`~bindlab.encoders.base.load_parsed`).
    """
    eid = canonical_id(parse_encoder_id(model))  # the one parse: the key and the loader read this
    key = _instance_key(eid, options)
    with _LOCK:
        if key in _INSTANCES:
            _INSTANCES.move_to_end(key)
            return _INSTANCES[key]
        key_lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with key_lock:
        with _LOCK:
            found = _INSTANCES.get(key)
        if found is not None:
            return found
        encoder = load_parsed(eid, **options)
        if options.get("dtype") not in (None, "auto", "float32") and _runs_float32(encoder):
            log.warning(
                "%s runs in float32: dtype %s applies to hub models (hf:, open_clip:, qwen3vl:)",
                f"{eid} (base {encoder.base.id})" if eid.backend == "lora" else eid,
                options["dtype"],
            )
        with _LOCK:
            _INSTANCES[key] = encoder
            _RECIPES[id(encoder)] = (model, dict(options))
            _evict_beyond(limits().max_loaded_models)
        return encoder


def _evict_beyond(cap: int) -> None:
    """Drop the least recently used encoders until at most ``cap`` stay loaded (call with ``_LOCK`` held). A caller
    still holding a dropped encoder keeps using it; its memory goes when the last reference does."""
    while len(_INSTANCES) > max(cap, 1):
        key, old = _INSTANCES.popitem(last=False)
        _RECIPES.pop(id(old), None)
        _KEY_LOCKS.pop(key, None)


def recipe(encoder: Encoder) -> tuple[str, dict[str, Any]] | None:
    """How :func:`get_encoder` loaded ``encoder``: ``(model id as given, options)``; None for one it did not load."""
    with _LOCK:
        return _RECIPES.get(id(encoder))


def keep(encoder: Encoder) -> None:
    """Make ``encoder`` (built outside :func:`get_encoder`) the instance its id loads, with the default options."""
    key = instance_key(encoder.id)
    with _LOCK:
        _INSTANCES[key] = encoder
        _RECIPES[id(encoder)] = (encoder.id, {})
        _evict_beyond(limits().max_loaded_models)


def forget(model_id: str) -> None:
    """Drop every loaded instance of ``model_id`` (a ``py:`` id whose object was replaced), so the next
    :func:`get_encoder` loads what the id names now."""
    with _LOCK:
        for key in [k for k in _INSTANCES if k[0] == model_id]:
            _RECIPES.pop(id(_INSTANCES.pop(key)), None)
            _KEY_LOCKS.pop(key, None)


def loaded_count() -> int:
    """How many encoder instances this process holds (for tests and the memory checks in docs/deploy.md)."""
    with _LOCK:
        return len(_INSTANCES)


def default_cache() -> EmbeddingCache:
    """The process-wide cache under ``$BINDLAB_HOME`` (created on first use)."""
    global _DEFAULT_CACHE
    from bindlab.config import home

    path = home() / "cache" / "embeddings.sqlite"
    if _DEFAULT_CACHE is None or _DEFAULT_CACHE.path != path:
        _DEFAULT_CACHE = EmbeddingCache(path)
    return _DEFAULT_CACHE


def embed_texts(
    encoder: Encoder, texts: Sequence[str], cache: EmbeddingCache | None = None, instruction: str = ""
) -> np.ndarray:
    """Cached text embeddings ``(n, d)`` in input order. Empty texts raise :class:`EncoderError` naming the index."""
    texts = check_texts(list(texts), encoder.id)
    cache = cache or default_cache()
    keys = _text_keys(encoder.fingerprint, texts, instruction)
    batch = fair_batch_size(encoder)

    def compute_for(lo: int, hi: int) -> Callable[[list[int]], np.ndarray]:
        part = texts[lo:hi]
        return _sharded(encoder, "text", part) or (
            lambda idx: in_turns(encoder.embed_texts, [part[i] for i in idx], batch)
        )

    return _in_chunks(cache, keys, compute_for)


def unknown_words_cached(
    encoder: Encoder, texts: Sequence[str], cache: EmbeddingCache | None = None
) -> list[list[str]] | None:
    """:func:`bindlab.encoders.base.unknown_words`, kept in the embedding cache by (tokenizer fingerprint, text).

    An encoder whose ``tokenizer_fingerprint`` says which tokenizer it reads with has its answers cached: only texts
    never seen by that tokenizer are tokenized (once each, in one batch), so a run whose vectors are all cached
    loads no tokenizer at all. An encoder without the attribute is asked every time.

    Returns:
        Per text, the words the encoder does not know, in order; None when it cannot say.
    """
    from bindlab.encoders.base import unknown_words

    texts = list(texts)
    fingerprint = getattr(encoder, "tokenizer_fingerprint", None)
    if not isinstance(fingerprint, str) or not fingerprint or getattr(encoder, "unknown_words", None) is None:
        return unknown_words(encoder, texts)
    cache = cache or default_cache()
    uniq = list(dict.fromkeys(texts))
    keys = dict(zip(uniq, word_keys(fingerprint, uniq), strict=True))
    found = cache.get_words(list(keys.values()))
    missing = [t for t in uniq if keys[t] not in found]
    if missing:
        fresh = unknown_words(encoder, missing)
        if fresh is None:
            return None
        new = {keys[t]: words for t, words in zip(missing, fresh, strict=True)}
        cache.put_words(new)
        found.update(new)
    return [list(found[keys[t]]) for t in texts]


def expect_work(
    encoder: Encoder, texts: Sequence[str] = (), images: Sequence[str | Path] = (), cache: EmbeddingCache | None = None
) -> None:
    """Inside an app request, announce how many items it will send through the model — the texts not yet cached,
    and the distinct image files (their cache keys need the files' bytes, read when they are embedded) — so a heavy
    request takes its slot, or is refused as busy, before its first batch (:func:`admission.expect`). Outside one,
    nothing is looked up."""
    if not admission.in_scope():
        return
    cache = cache or default_cache()
    keys = {content_key(encoder.fingerprint, "text", t) for t in texts if isinstance(t, str) and t.strip()}
    admission.expect(len(keys) - len(cache.present(list(keys))) + len({str(p) for p in images}))


def embed_image_files(encoder: Encoder, paths: Sequence[str | Path], cache: EmbeddingCache | None = None) -> np.ndarray:
    """Cached image embeddings ``(n, d)`` for image files, keyed by file content (not by path)."""
    if "image" not in encoder.modalities:
        raise EncoderError(f"{encoder.id} has no image tower; it cannot embed images (pick an image+text encoder)")
    cache = cache or default_cache()
    keys = _image_keys(encoder.fingerprint, paths)
    names = [str(p) for p in paths]

    def compute_for(lo: int, hi: int) -> Callable[[list[int]], np.ndarray]:
        # Backends open files through bindlab.encoders.images, which converts modes and names unreadable files.
        part = names[lo:hi]
        return _sharded(encoder, "image", part) or (
            lambda idx: in_turns(encoder.embed_images, [part[i] for i in idx], fair_batch_size(encoder))
        )

    return _in_chunks(cache, keys, compute_for)


def _text_keys(fingerprint: str, texts: Sequence[str], instruction: str = "") -> list[str]:
    """The cache keys of texts embedded by the encoder with ``fingerprint``."""
    return content_keys(fingerprint, "text", texts, instruction)


def _image_keys(fingerprint: str, paths: Sequence[str | Path]) -> list[str]:
    """The cache keys of image files embedded by the encoder with ``fingerprint``: keyed by the files' bytes."""
    from bindlab.data.files import DataError, read_bytes_bounded

    keys = []
    for p in paths:
        try:  # regular files only (a FIFO never blocks), size-capped
            keys.append(content_key(fingerprint, "image", read_bytes_bounded(Path(p))))
        except DataError as e:
            raise EncoderError(f"image {e}") from None
    return keys


def cached_vectors(
    fingerprint: str, modality: str, items: Sequence[str | Path], cache: EmbeddingCache | None = None
) -> np.ndarray:
    """The ``(n, d)`` vectors that :func:`embed_texts` (``modality="text"``, ``items`` = texts, no instruction) or
    :func:`embed_image_files` (``"image"``, ``items`` = image files) returned for the encoder with ``fingerprint``,
    read back from the cache: no model is loaded or run, so a caller outside the GPU queue may ask.

    Raises:
        LookupError: when some item is not (or no longer) in the cache.
    """
    if modality not in ("text", "image"):
        raise ValueError(f"unknown modality {modality!r}")
    cache = cache or default_cache()
    keys = _text_keys(fingerprint, items) if modality == "text" else _image_keys(fingerprint, items)

    def refuse(lo: int, hi: int) -> Callable[[list[int]], np.ndarray]:
        def missing(idx: list[int]) -> np.ndarray:
            raise LookupError(f"{len(idx)} of {len(keys)} {modality} embeddings are not in the embedding cache")

        return missing

    return _in_chunks(cache, keys, refuse)


def _in_chunks(
    cache: EmbeddingCache, keys: list[str], compute_for: Callable[[int, int], Callable[[list[int]], np.ndarray]]
) -> np.ndarray:
    """``(n, d)`` float32 for ``keys``, looked up (and the missing ones computed) :data:`LOOKUP_CHUNK` at a time.

    Each chunk's vectors are copied into one preallocated output and dropped, so the peak is the output plus one
    chunk, not the cache's lookup dict plus a stacked copy of all ``n`` (two full matrices, 820 MB for 25,000
    ``bow`` texts). Items repeated across chunks are computed once: the later chunk finds them in the cache.
    """

    def lazy(lo: int, hi: int) -> Callable[[list[int]], np.ndarray]:
        # compute_for runs only when a chunk has misses: a fully cached run never asks whether a launch is
        # active (which imports torch) nor builds a batch.
        return lambda idx: compute_for(lo, hi)(idx)

    if len(keys) <= LOOKUP_CHUNK:
        return cache.get_or_compute(keys, lazy(0, len(keys)))[0]
    out: np.ndarray | None = None
    for lo in range(0, len(keys), LOOKUP_CHUNK):
        hi = min(lo + LOOKUP_CHUNK, len(keys))
        vecs, _ = cache.get_or_compute(keys[lo:hi], lazy(lo, hi))
        if out is None:
            out = np.empty((len(keys), vecs.shape[1]), dtype=np.float32)
        out[lo:hi] = vecs
        del vecs
    assert out is not None
    return out


# ---------------------------------------------------------------------------------------------------------------
# Sharded embedding across the ranks of a launch
# ---------------------------------------------------------------------------------------------------------------
def _sharded(encoder: Encoder, modality: str, items: Sequence[str]) -> Callable[[list[int]], np.ndarray] | None:
    """On rank 0 of a launch, a ``compute(idx)`` that shards the missing items over every rank; else None.

    Only called for items the cache lacks, so cached items are never recomputed; the request names the model
    the way it was loaded (or by its id) and its fingerprint, which every rank checks.
    """
    if not distributed.active():
        return None
    model, options = _RECIPES.get(id(encoder), (encoder.id, {}))

    def compute(idx: list[int]) -> np.ndarray:
        request = {
            "op": "embed",
            "model": model,
            "options": options,
            "fingerprint": encoder.fingerprint,
            "modality": modality,
            "items": [items[i] for i in idx],
        }
        distributed.broadcast(request)
        return _embed_shard(request, encoder)

    return compute


def _embed_shard(request: dict[str, Any], encoder: Encoder | None = None) -> np.ndarray:
    """Embed this rank's shard of ``request["items"]`` and gather the shards; rank 0 gets ``(n, d)`` in order.

    Every rank takes part in the gather even when its shard failed, so no rank waits forever: the failure travels
    to rank 0 as a message and is raised there as :class:`EncoderError`.
    """
    import torch.distributed as dist

    rank, size = dist.get_rank(), dist.get_world_size()
    lo, hi = distributed.shard_range(len(request["items"]), rank, size)
    t0 = time.perf_counter()
    try:
        reply: tuple[str, Any, float] = ("ok", _embed_local(request, request["items"][lo:hi], encoder), 0.0)
    except Exception as e:  # noqa: BLE001 - sent to rank 0, which raises it
        reply = ("error", f"rank {rank}: {e}", 0.0)
    reply = (reply[0], reply[1], time.perf_counter() - t0)
    parts = distributed.gather(reply)
    if parts is None:
        return np.zeros((0, 0), dtype=np.float32)
    errors = [msg for kind, msg, _ in parts if kind == "error"]
    if errors:
        raise EncoderError(errors[0])
    if len(_SHARD_TOTALS) < len(parts):
        _SHARD_TOTALS.extend([0] * (len(parts) - len(_SHARD_TOTALS)))
        _SHARD_SECONDS.extend([0.0] * (len(parts) - len(_SHARD_SECONDS)))
    for r, (_, vecs, seconds) in enumerate(parts):
        _SHARD_TOTALS[r] += len(vecs)
        _SHARD_SECONDS[r] += seconds
    return distributed.merge_shards([vecs for _, vecs, _ in parts])


def shard_totals() -> list[int]:
    """On rank 0 of a launch: how many items each rank embedded so far (empty when nothing was sharded)."""
    return list(_SHARD_TOTALS)


def shard_seconds() -> list[float]:
    """On rank 0 of a launch: seconds each rank spent in its encoder on its shards (the bare compute)."""
    return list(_SHARD_SECONDS)


def _embed_local(request: dict[str, Any], shard: list[str], encoder: Encoder | None) -> np.ndarray:
    """This rank's vectors ``(len(shard), d)`` (empty shards embed nothing); other ranks load the same model."""
    if not shard:
        return np.zeros((0, 0), dtype=np.float32)
    if encoder is None:
        options = dict(request["options"])
        if str(options.get("device", "")).startswith("cuda"):
            options["device"] = "cuda"  # this rank's own GPU (distributed.init selected it)
        encoder = get_encoder(request["model"], **options)
        if encoder.fingerprint != request["fingerprint"]:
            raise EncoderError(
                f"{request['model']} loads different weights on this rank (fingerprint "
                f"{encoder.fingerprint[:12]} vs {request['fingerprint'][:12]} on rank 0); every rank "
                "must see the same model files"
            )
    texts = request["modality"] == "text"
    vecs = encoder.embed_texts(shard) if texts else encoder.embed_images(shard)
    return np.asarray(vecs, dtype=np.float32)


def serve_embedding_requests() -> None:
    """Ranks > 0: embed shards of rank 0's requests until rank 0 says stop (:func:`stop_serving`)."""
    while True:
        request = distributed.broadcast(None)
        if not isinstance(request, dict) or request.get("op") != "embed":
            return
        _embed_shard(request)


def stop_serving() -> None:
    """Rank 0, when its command has finished (or failed): release the ranks waiting in the serve loop."""
    distributed.broadcast({"op": "stop"})
