"""Shared run-time plumbing for torch backends: device, dtype, batching with CUDA out-of-memory back-off.

Every torch backend (``hf``, ``open_clip``, ``qwen3vl``) goes through this module so that the options mean the
same thing everywhere:

- ``device``: ``auto | cpu | cuda | cuda:N | mps`` (resolved by :func:`bindlab.config.resolve_device`).
- ``dtype``: ``auto | float32 | bfloat16 | float16``. ``auto`` is float32 on CPU, bfloat16 on a GPU that
  supports it (else float16), float16 on MPS. Half precision on CPU is slow and inexact, so it is refused
  with a warning and float32 is used instead; a backend whose model cannot run in half precision passes
  ``half_ok=False``.
- ``batch_size``: items per forward pass. A CUDA out-of-memory error halves the batch (a warning says so)
  and retries; the smaller size is kept for the rest of the encoder's life.

Torch is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bindlab.encoders.base import EncoderError, check_batch_size

__all__ = ["DTYPES", "BatchRunner", "check_batch_size", "describe_device", "features", "resolve_dtype", "to_device"]

log = logging.getLogger(__name__)

DTYPES = ("auto", "float32", "bfloat16", "float16")


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

    def __init__(self, encoder_id: str, batch_size: int = 32) -> None:
        self.encoder_id = encoder_id
        self.batch_size = check_batch_size(batch_size)

    def run(self, fn: Callable[[list[Any]], np.ndarray], items: Sequence[Any],
            order: Sequence[int] | None = None) -> np.ndarray:
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
        log.warning("%s: CUDA out of memory with a batch of %d; retrying with batch size %d",
                    self.encoder_id, failed, self.batch_size)


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
