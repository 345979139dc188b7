"""Shared run-time plumbing for torch backends: device, dtype, batching with CUDA out-of-memory back-off.

Every torch backend (``hf``, ``open_clip``, ``qwen3vl``) goes through this module so that the options mean the
same thing everywhere:

- ``device``: ``auto | cpu | cuda | cuda:N | mps`` (resolved by :func:`bindlab.config.resolve_device`).
- ``dtype``: ``auto | float32 | bfloat16 | float16``. ``auto`` is float32 on CPU, bfloat16 on a GPU that
  supports it (else float16), float16 on MPS. Half precision on CPU is slow and inexact, so it is refused
  with a warning and float32 is used instead; a backend whose model cannot run in half precision passes
  ``half_ok=False``.
- ``batch_size``: items per forward pass; by default :func:`default_batch_size` per device (large on a GPU, where
  the out-of-memory back-off settles it; :data:`CPU_BATCH` on CPU). A CUDA out-of-memory error halves the batch (a
  warning says so) and retries; the smaller size is kept for the rest of the encoder's life and remembered for the
  (model, device) in this process, so the next instance starts from it.
- preparation (:meth:`BatchRunner.run_prepared`): each item's decode and preprocessing run in worker threads
  (:func:`prepare_workers`, from the cores available), a batch ahead of the forward pass, on CPU as on a GPU (pinned
  memory and non-blocking copies there).

Torch is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from bindlab.encoders.base import EncoderError, check_batch_size

__all__ = [
    "CPU_BATCH",
    "DTYPES",
    "GPU_BATCH",
    "BatchRunner",
    "check_batch_size",
    "default_batch_size",
    "describe_device",
    "features",
    "prepare_workers",
    "resolve_dtype",
    "to_device",
]

log = logging.getLogger(__name__)

DTYPES = ("auto", "float32", "bfloat16", "float16")
CPU_BATCH = 32  # items per forward on CPU: measured best on 2 cores (bench vs_library; larger batches only pad more)
GPU_BATCH = 256  # the first batch tried on a GPU; out of memory halves it, and the size that fits is remembered
_SETTLED: dict[tuple[str, str], int] = {}  # (encoder id, device) -> the batch size the out-of-memory back-off settled
_SETTLED_LOCK = threading.Lock()


def default_batch_size(encoder_id: str, device: str) -> int:
    """The batch size an encoder starts with when none is asked for: the size already settled for this model and
    device in this process, else :data:`GPU_BATCH` on a CUDA device and :data:`CPU_BATCH` elsewhere."""
    with _SETTLED_LOCK:
        settled = _SETTLED.get((encoder_id, str(device)))
    if settled is not None:
        return settled
    return GPU_BATCH if str(device).startswith("cuda") else CPU_BATCH


def prepare_workers() -> int:
    """Threads that prepare items (decode, preprocess) for the forward pass: the cores this process may use,
    at most the ``max_workers`` limit, at least 1."""
    from bindlab.config import limits

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, limits().max_workers or 1))


def resolve_dtype(dtype: str | None, device: str, half_ok: bool = True) -> Any:
    """The torch dtype to run a model in.

    Args:
        dtype: one of :data:`DTYPES` (``None`` means ``auto``).
        device: a resolved device string (``cpu``, ``cuda``, ``cuda:1``, ``mps``).
        half_ok: False when the model does not support half precision.

    Raises:
        EncoderError: for an unknown dtype name, listing the choices.
    """
    import torch

    name = (dtype or "auto").strip().lower() if isinstance(dtype, str) else dtype
    if isinstance(name, torch.dtype):
        name = str(name).removeprefix("torch.")
    if name not in DTYPES:
        raise EncoderError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    if name == "auto":
        if device.startswith("cuda") and half_ok:
            idx = torch.device(device).index or 0
            return torch.bfloat16 if torch.cuda.get_device_capability(idx)[0] >= 8 else torch.float16
        if device == "mps" and half_ok:
            return torch.float16
        return torch.float32
    if name != "float32" and device == "cpu":
        log.warning("dtype %s asked for on CPU; using float32 (half precision on CPU is slow and inexact)", name)
        return torch.float32
    if name != "float32" and not half_ok:
        log.warning("dtype %s asked for, but this model does not support half precision; using float32", name)
        return torch.float32
    return getattr(torch, name)


class BatchRunner:
    """Runs ``fn(batch) -> (len(batch), d) array`` over items in batches, under ``torch.inference_mode``.

    On a CUDA out-of-memory error the batch size is halved (with a warning) and the failed batch is retried;
    the smaller size sticks. Out of memory at batch size 1 is an :class:`EncoderError` that says what to try.
    """

    def __init__(
        self, encoder_id: str, batch_size: int | None = None, device: str = "cpu", workers: int | None = None
    ) -> None:
        self.encoder_id = encoder_id
        self.device = str(device)
        self.batch_size = (
            default_batch_size(encoder_id, self.device) if batch_size is None else check_batch_size(batch_size)
        )
        self.workers = workers  # preparation threads of run_prepared (None: prepare_workers())

    def run_prepared(
        self, prepare: Callable[[int], Any], forward: Callable[[list[Any]], np.ndarray], n: int
    ) -> np.ndarray:
        """``forward`` over items ``0..n-1`` in batches, each item made ready by ``prepare(i)`` in worker threads
        while the batch before it runs (image decode and preprocessing release the GIL), in input order.

        The same out-of-memory back-off as :meth:`run`: a failed batch is retried smaller from the items already
        prepared. ``prepare`` errors (an unreadable file) are raised as they are, in item order.

        Returns:
            ``(n, d)`` float32 array (``(0, 0)`` for no items).
        """
        import torch

        if n == 0:
            return np.zeros((0, 0), dtype=np.float32)
        workers = self.workers or prepare_workers()
        out: np.ndarray | None = None
        pending: deque[Future[Any]] = deque()
        nxt = start = 0
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bindlab-prepare")
        try:
            with torch.inference_mode():
                while start < n:
                    while nxt < n and len(pending) < 2 * self.batch_size:  # this batch and the next one
                        pending.append(pool.submit(prepare, nxt))
                        nxt += 1
                    size = min(self.batch_size, n - start)
                    batch = [pending[i].result() for i in range(size)]
                    try:
                        rows = np.asarray(forward(batch), dtype=np.float32)  # (size, d)
                    except torch.cuda.OutOfMemoryError:
                        del batch
                        self._back_off(size)
                        continue
                    for _ in range(size):
                        pending.popleft()
                    if out is None:
                        out = np.empty((n, rows.shape[1]), dtype=np.float32)
                    out[start : start + size] = rows
                    start += size
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        assert out is not None
        return out

    def run(
        self, fn: Callable[[list[Any]], np.ndarray], items: Sequence[Any], order: Sequence[int] | None = None
    ) -> np.ndarray:
        """Apply ``fn`` to ``items`` in batches; rows come back in the order of ``items``.

        Args:
            fn: batch -> float array ``(len(batch), d)``.
            items: the inputs.
            order: optional processing order (e.g. longest text first, so batches pad little).

        Returns:
            ``(len(items), d)`` float32 array (``(0, 0)`` for no items).
        """
        import torch

        n = len(items)
        if n == 0:
            return np.zeros((0, 0), dtype=np.float32)
        order = list(range(n)) if order is None else list(order)
        out: np.ndarray | None = None
        start = 0
        with torch.inference_mode():
            while start < n:
                idx = order[start : start + self.batch_size]
                try:
                    rows = np.asarray(fn([items[i] for i in idx]), dtype=np.float32)  # (len(idx), d)
                except torch.cuda.OutOfMemoryError:
                    self._back_off(len(idx))
                    continue
                if out is None:
                    out = np.empty((n, rows.shape[1]), dtype=np.float32)
                out[idx] = rows
                start += len(idx)
        assert out is not None
        return out

    def _back_off(self, failed: int) -> None:
        import torch

        torch.cuda.empty_cache()
        if failed <= 1:
            raise EncoderError(
                f"{self.encoder_id}: CUDA ran out of memory even with batch size 1; use a smaller model, "
                "dtype=bfloat16/float16, shorter inputs, or device=cpu"
            )
        self.batch_size = max(1, failed // 2)
        with _SETTLED_LOCK:
            _SETTLED[(self.encoder_id, self.device)] = self.batch_size
        log.warning(
            "%s: CUDA out of memory with a batch of %d; retrying with batch size %d",
            self.encoder_id,
            failed,
            self.batch_size,
        )


def to_device_batch(tensor: Any, device: str, dtype: Any = None) -> Any:
    """A CPU batch on ``device``: pinned and copied without blocking on CUDA (the copy overlaps the next batch's
    preparation), a plain ``.to`` elsewhere."""
    if str(device).startswith("cuda"):
        return tensor.pin_memory().to(device, dtype, non_blocking=True)
    return tensor.to(device, dtype)


def to_device(batch: dict[str, Any], device: str, float_dtype: Any = None) -> dict[str, Any]:
    """Move a dict of tensors to ``device``; floating tensors are cast to ``float_dtype`` when given."""
    out = {}
    for k, v in batch.items():
        if hasattr(v, "to"):
            v = v.to(device)
            if float_dtype is not None and v.is_floating_point():
                v = v.to(float_dtype)
        out[k] = v
    return out


def features(output: Any) -> Any:
    """The pooled feature tensor of a ``get_text_features``/``get_image_features`` result.

    transformers 5 returns a ``BaseModelOutputWithPooling`` whose ``pooler_output`` holds the projected
    features; older versions returned the tensor itself. Both are accepted.
    """
    return output if hasattr(output, "shape") else output.pooler_output


def describe_device(device: str, dtype: Any) -> str:
    """``'cuda:0/bfloat16'`` style label for logs and fingerprints."""
    return f"{device}/{str(dtype).removeprefix('torch.')}"
