"""Input checks that study requests share: whole numbers in a range, finite numbers, encoder ids.

Each raises ``ValueError`` with one line naming the setting, the bad value and what is allowed, before any work
starts (a model loads, a job is queued).
"""

from __future__ import annotations

import math
from typing import Any


def whole(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    """``value`` as an int in ``[lo, hi]``; a float such as a ``gr.Number``'s ``60.0`` is fine when it is whole."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, got {value!r}") from None
    if not math.isfinite(f) or f != int(f):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    n = int(f)
    if n < lo or (hi is not None and n > hi):
        raise ValueError(f"{name} must be between {lo} and {hi}, got {n}" if hi is not None
                         else f"{name} must be at least {lo}, got {n}")
    return n


def finite(name: str, value: Any, lo: float | None = None, hi: float | None = None, strict_lo: bool = False) -> float:
    """``value`` as a finite float, ``> lo`` (``strict_lo``) or ``>= lo``, and ``<= hi`` where given."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    low_bad = lo is not None and (f <= lo if strict_lo else f < lo)
    if not math.isfinite(f) or low_bad or (hi is not None and f > hi):
        bounds = [f"> {lo:g}" if strict_lo else f">= {lo:g}"] if lo is not None else []
        bounds += [f"<= {hi:g}"] if hi is not None else []
        raise ValueError(f"{name} must be a finite number{' ' + ' and '.join(bounds) if bounds else ''}, "
                         f"got {value!r}")
    return f


def encoder_id(model: Any, default: str | None = None) -> str:
    """A stripped encoder id whose syntax parses and whose backend exists (nothing is loaded)."""
    from bindlab.encoders.base import EncoderError, backends, parse_encoder_id

    text = str(model or "").strip() or (default or "")
    if not text:
        raise ValueError("give an encoder id, e.g. minilm, bow or toy:shared")
    eid = parse_encoder_id(text)
    if eid.backend not in backends():
        raise EncoderError(f"unknown encoder backend {eid.backend!r} in {text!r}; known backends: "
                           f"{sorted(backends())}")
    return text
