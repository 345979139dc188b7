"""The encoder-id check that study requests share (numbers, caps and paths: :mod:`bindlab.studies.validate`).

It raises ``ValueError`` with one line naming the id and what is allowed, before any work starts (a model loads, a
job is queued).
"""

from __future__ import annotations

from typing import Any


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
