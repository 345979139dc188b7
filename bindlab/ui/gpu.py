"""GPU-bound callbacks: the one queue they share, and ZeroGPU support on Hugging Face Spaces.

- Every event that may run an encoder joins one Gradio concurrency group (:data:`GPU_QUEUE`): at most
  ``$BINDLAB_GPU_CONCURRENCY`` of them run at once across all tabs and visitors (default 1 locally, 6 in public
  mode), the rest wait in the queue with their position shown. Cheap events (filters, sliders on cached vectors)
  stay outside it. Events that run together take the model in turns, one batch each in arrival order
  (:data:`bindlab.encoders.service.MODEL_TURN`), so a visitor's small request is not stuck behind all of another
  visitor's large one.
- :func:`gpu_task` marks such a callback. When the ``spaces`` package imports (it is preinstalled on Spaces), the
  callback is wrapped in ``spaces.GPU(duration=...)``: on ZeroGPU hardware a GPU is attached only while it runs;
  on any other machine ``spaces.GPU`` returns the function unchanged. Without ``spaces`` nothing changes at all.
  ``spaces`` must be imported before CUDA is initialised, which holds because tab modules import this module
  and models load lazily, on first use.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from bindlab.config import public_mode

F = TypeVar("F", bound=Callable[..., Any])

LOCAL_CONCURRENCY = 1  # one user: events run one after another, as they always did
# Many visitors: events run together and share the model batch by batch. Heavy requests are bounded apart from
# this (bindlab.encoders.admission: one per session and address, max_heavy_requests in all), so a small request
# finds a free slot even while the heavy ones run.
PUBLIC_CONCURRENCY = 6


def gpu_concurrency() -> int:
    """``$BINDLAB_GPU_CONCURRENCY``: how many GPU-bound events may run at once (default 1 locally, 6 in public mode).

    Raises:
        ValueError: the variable is set to something other than a positive integer.
    """
    default = str(PUBLIC_CONCURRENCY if public_mode() else LOCAL_CONCURRENCY)
    raw = os.environ.get("BINDLAB_GPU_CONCURRENCY", default).strip() or default
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"BINDLAB_GPU_CONCURRENCY must be a positive integer, got {raw!r}")
    return int(raw)


# Keyword arguments for every GPU-bound event listener: one shared concurrency group.
GPU_QUEUE: dict[str, Any] = {"concurrency_id": "gpu", "concurrency_limit": gpu_concurrency()}


def spaces_gpu() -> Callable[..., Any] | None:
    """``spaces.GPU`` when the ``spaces`` package is installed, else None."""
    try:
        import spaces
    except ImportError:
        return None
    return getattr(spaces, "GPU", None)


def gpu_task(duration: int = 60) -> Callable[[F], F]:
    """Decorator for a callback that may run an encoder on the GPU.

    Args:
        duration: ZeroGPU's time budget for one call, in seconds (what the scheduler reserves; keep it close to
            the real worst case, a visitor's quota is charged by it).

    Returns:
        ``spaces.GPU(duration=duration)`` when ``spaces`` is installed, else the identity. Put it above
        :func:`bindlab.ui.common.friendly` so user errors cross ZeroGPU's worker process as ``gr.Error``.
    """
    if duration < 1:
        raise ValueError(f"duration must be a positive number of seconds, got {duration}")
    gpu = spaces_gpu()

    def wrap(fn: F) -> F:
        return fn if gpu is None else gpu(duration=duration)(fn)

    return wrap
