"""Studies: one module per feature (browse, pairs, grounding, attention, map, finetune, walkthrough).

Each module exposes ``run_<feature>(request) -> Result`` (and that feature's cached session, where it has one).
A study validates its request, orchestrates the backend (data, encoders, eval, analysis, train, jobs) and returns
plain data: it never builds a figure or writes an export — that is :mod:`bindlab.present`, called by the two faces,
:mod:`bindlab.cli` and :mod:`bindlab.ui`. Both faces parse their inputs, call the same ``run_*``, and format what it
returns, so a command and its tab give the same numbers for the same inputs.
"""

from __future__ import annotations

from bindlab.result import Result

__all__ = ["Result"]
