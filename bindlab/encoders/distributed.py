"""Data parallelism under ``torchrun`` / ``accelerate launch`` (and ``srun`` starting either on a cluster).

A launcher starts N copies of the same command and tells each its place through the environment (``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT``). :func:`world_from_env` reads it; :func:`init`
joins the process group (gloo on CPU, NCCL on CUDA, each rank on GPU ``LOCAL_RANK``). The pure helpers
(:func:`shard_range`, :func:`merge_shards`) are what the sharded embedding in :mod:`bindlab.encoders.service` and
the data-parallel finetune loop build on; the collectives are thin wrappers over ``torch.distributed`` that are
no-ops in one process.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

TIMEOUT_ENV = "BINDLAB_DIST_TIMEOUT_S"  # seconds a rank waits in a collective (rank 0 may score for a long time)
BACKEND_ENV = "BINDLAB_DIST_BACKEND"  # force "gloo" or "nccl" (default: nccl when CUDA is visible, else gloo)
_DEFAULT_TIMEOUT_S = 7200


@dataclass(frozen=True)
class World:
    """This process's place in a launch: ``rank`` of ``size`` processes, ``local_rank`` on its node."""

    rank: int = 0  # global rank, 0 .. size-1; rank 0 scores, prints, writes outputs and the cache
    size: int = 1  # number of processes in the launch
    local_rank: int = 0  # rank on this node: the GPU index this process uses

    @property
    def main(self) -> bool:
        """True on rank 0 (and in a plain, single-process run)."""
        return self.rank == 0

    @property
    def active(self) -> bool:
        """True when more than one process takes part."""
        return self.size > 1


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "")
    if raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(
            f"environment variable {name}={raw!r} is not a whole number; a launcher (torchrun, "
            "accelerate launch) sets it — unset it to run in one process"
        ) from None


def world_from_env(env: Mapping[str, str] | None = None) -> World:
    """The launch this process belongs to, from ``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` (one process when unset).

    Raises:
        ValueError: when the variables are not whole numbers or do not fit together (rank outside 0..size-1).
    """
    env = os.environ if env is None else env
    size = _env_int(env, "WORLD_SIZE", 1)
    rank = _env_int(env, "RANK", 0)
    local = _env_int(env, "LOCAL_RANK", rank)
    if size < 1 or not 0 <= rank < size or local < 0:
        raise ValueError(
            f"RANK={rank}, WORLD_SIZE={size}, LOCAL_RANK={local} do not fit together (need "
            "0 <= RANK < WORLD_SIZE); start the command with torchrun or accelerate launch, or unset them"
        )
    return World(rank, size, local)


def shard_range(n: int, rank: int, size: int) -> tuple[int, int]:
    """The contiguous slice ``[start, stop)`` of ``n`` items that ``rank`` of ``size`` handles.

    Shards are disjoint, cover ``0..n`` in rank order and differ in length by at most one (the first ``n % size``
    ranks take one more), so concatenating them in rank order gives back the original order.
    """
    if size < 1 or not 0 <= rank < size or n < 0:
        raise ValueError(f"shard_range needs n >= 0 and 0 <= rank < size, got n={n}, rank={rank}, size={size}")
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def merge_shards(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Concatenate per-rank results ``(n_r, d)`` in rank order; empty shards are skipped. -> ``(sum n_r, d)``."""
    full = [np.asarray(p, dtype=np.float32) for p in parts if len(p)]
    if not full:
        return np.zeros((0, 0), dtype=np.float32)
    dims = {p.shape[1:] for p in full}
    if len(dims) != 1:
        raise ValueError(f"shards disagree on the embedding shape: {sorted(dims)}; every rank must load the same model")
    return np.concatenate(full, axis=0)


def backend_name() -> str:
    """``nccl`` when CUDA is visible (one GPU per rank), else ``gloo``; ``BINDLAB_DIST_BACKEND`` overrides."""
    forced = os.environ.get(BACKEND_ENV, "").strip().lower()
    if forced:
        if forced not in ("gloo", "nccl"):
            raise ValueError(f"{BACKEND_ENV}={forced!r}: choose gloo or nccl")
        return forced
    import torch

    return "nccl" if torch.cuda.is_available() else "gloo"


def _timeout() -> _dt.timedelta:
    raw = os.environ.get(TIMEOUT_ENV, "")
    try:
        seconds = int(raw) if raw.strip() else _DEFAULT_TIMEOUT_S
    except ValueError:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r} is not a whole number of seconds") from None
    return _dt.timedelta(seconds=max(seconds, 1))


def init() -> World:
    """Join the launch's process group (once; a no-op in one process) and return this process's :class:`World`.

    On NCCL each rank first selects GPU ``LOCAL_RANK``, so ``cuda`` means this rank's own GPU everywhere after.
    """
    world = world_from_env()
    if not world.active:
        return world
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        backend = backend_name()
        if backend == "nccl":
            torch.cuda.set_device(world.local_rank)
        dist.init_process_group(backend=backend, rank=world.rank, world_size=world.size, timeout=_timeout())
    return world


def active() -> bool:
    """True when this process is in an initialised group of more than one process."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return False
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def broadcast(obj: Any = None) -> Any:
    """``obj`` from rank 0 on every rank (picklable objects); returns ``obj`` itself in one process."""
    if not active():
        return obj
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather(obj: Any) -> list[Any] | None:
    """Every rank's ``obj``, in rank order, on rank 0 (None on the other ranks); ``[obj]`` in one process."""
    if not active():
        return [obj]
    import torch.distributed as dist

    out: list[Any] | None = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object(obj, out, dst=0)
    return out


def mean(value: float) -> float:
    """The mean of ``value`` over ranks (every rank gets it); ``value`` in one process."""
    if not active():
        return float(value)
    import torch
    import torch.distributed as dist

    t = torch.tensor([float(value)], dtype=torch.float64, device=_collective_device())
    dist.all_reduce(t)
    return float(t.item()) / dist.get_world_size()


def any_rank(flag: bool) -> bool:
    """True on every rank when ``flag`` is true on any rank (a stop that all ranks take at the same step)."""
    if not active():
        return bool(flag)
    import torch
    import torch.distributed as dist

    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=_collective_device())
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def average_grads(params: Sequence[Any]) -> None:
    """Average the gradients of ``params`` over ranks in place (data-parallel step); a no-op in one process."""
    if not active():
        return
    import torch.distributed as dist

    n = dist.get_world_size()
    for p in params:
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad.div_(n)


def barrier() -> None:
    """Wait until every rank gets here; a no-op in one process."""
    if active():
        import torch.distributed as dist

        dist.barrier()


def shutdown() -> None:
    """Leave the process group (at the end of a launched command), every rank together: a rank that tore its Gloo
    connections down while another was still finishing the last collective killed that one (SIGABRT, "terminate
    called without an active exception"; seen once in CI on 2 CPU ranks), so the ranks meet at a barrier first."""
    if active():
        import torch.distributed as dist

        dist.barrier()
        dist.destroy_process_group()


def _collective_device() -> str:
    import torch
    import torch.distributed as dist

    return f"cuda:{torch.cuda.current_device()}" if dist.get_backend() == "nccl" else "cpu"
