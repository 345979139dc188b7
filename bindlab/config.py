"""Process-wide settings: where bindlab keeps its files, which device to use, whether the hub is reachable."""

from __future__ import annotations

import os
import socket
from functools import lru_cache
from pathlib import Path

__version__ = "0.1.0"


def home() -> Path:
    """``$BINDLAB_HOME`` (default ``~/.cache/bindlab``): embedding cache, jobs, generated default data."""
    p = Path(os.environ.get("BINDLAB_HOME") or Path.home() / ".cache" / "bindlab").expanduser()
    p.mkdir(parents=True, exist_ok=True)
    return p


def repo_root() -> Path:
    """The folder holding ``app.py`` and ``assets/`` (one up from the package)."""
    return Path(__file__).resolve().parent.parent


def resolve_device(device: str = "auto") -> str:
    """``auto`` -> ``cuda`` if available, else ``mps``, else ``cpu``; explicit choices are checked.

    Raises:
        ValueError: for an unknown device string or one that is not available here.
    """
    import torch

    d = (device or "auto").strip().lower()
    if d == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if d == "cpu":
        return d
    if d == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ValueError("device 'mps' is not available on this machine; use --device cpu or auto")
        return d
    if d == "cuda" or d.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} asked for, but no CUDA GPU is visible; use --device cpu or auto")
        if ":" in d:
            idx = d.split(":", 1)[1]
            if not idx.isdigit() or int(idx) >= torch.cuda.device_count():
                raise ValueError(f"device {device!r}: there are {torch.cuda.device_count()} CUDA devices (0-based)")
        return d
    raise ValueError(f"unknown device {device!r}; choose auto, cpu, cuda, cuda:N or mps")


def hub_offline() -> bool:
    """True when the Hugging Face hub must not or cannot be used (env flags, or no route to it)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False") or os.environ.get(
        "TRANSFORMERS_OFFLINE", "0"
    ) not in ("", "0", "false", "False"):
        return True
    return not _hub_reachable()


@lru_cache(maxsize=1)
def _hub_reachable(timeout: float = 1.5) -> bool:
    try:
        with socket.create_connection(("huggingface.co", 443), timeout=timeout):
            return True
    except OSError:
        return False
