"""One number format per kind, for every table and summary line the app shows (pure: values -> text or a styled
frame; the numbers themselves are never rounded, so tables still sort as numbers).

- scores, accuracies, margins, AP / mAP and their intervals: :data:`DIGITS` (3) decimals, :func:`score`; a
  difference with its sign, :func:`signed`;
- a table: every float cell with 3 decimals, :func:`table` (a ``gr.Dataframe`` shows the Styler's text and keeps
  the numbers for sorting), so ``1`` never stands beside ``0.9967``;
- ranks of tied scores: one shared rank, ``=1``, :func:`shared_ranks` (ties as :func:`bindlab.eval.metrics.mcq_credit`
  counts them, within :data:`~bindlab.eval.metrics.TIE_TOL`); scores that are not tied but would read the same at 3
  decimals get the few more decimals that tell them apart, :func:`tie_digits`;
- a margin that decides a verdict, :func:`margin`: 3 decimals, ``0.000 (tie)`` within the tie tolerance, and
  ``+<0.001`` / ``-<0.001`` for a non-tie smaller than the rounding (never ``-6e-05``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from numbers import Integral, Real
from typing import Any

from bindlab.eval.metrics import TIE_TOL

DIGITS = 3


def score(x: Any, digits: int = DIGITS) -> str:
    """A score, accuracy or interval end as text with ``digits`` decimals ("n/a" for a missing or NaN value)."""
    if x is None:
        return "n/a"
    if isinstance(x, bool) or not isinstance(x, Real):
        return str(x)
    return "n/a" if math.isnan(float(x)) else f"{float(x):.{digits}f}"


def signed(x: float, digits: int = DIGITS) -> str:
    """A difference with its sign and ``digits`` decimals; one that is not zero but rounds to it keeps one significant
    digit (``+4e-05``), so a margin that decides a question never reads ``+0.000``."""
    x = float(x)
    if x != 0 and round(x, digits) == 0:
        return f"{x:+.0e}"
    return f"{x:+.{digits}f}"


def margin(x: float, tol: float = TIE_TOL, digits: int = DIGITS) -> str:
    """A margin (a winner's score minus the best rival's) with its sign and ``digits`` decimals, as far as it decides
    anything: within ``tol`` of zero it is a tie, ``"0.000 (tie)"``; one that is not a tie but rounds to zero reads
    ``"+<0.001"`` or ``"-<0.001"`` (its sign decides the verdict; its digits beyond the rounding do not).

    Args:
        x: the margin.
        tol: the tie rule of the verdict it decides (:data:`~bindlab.eval.metrics.TIE_TOL` for MCQ credit; 0 for
            the pairs' strict comparisons, where only an exact 0 is a tie).

    Example: ``margin(-6.5e-05) == "-<0.001"``, ``margin(0.0) == "0.000 (tie)"``, ``margin(0.0123) == "+0.012"``.
    """
    x = float(x)
    if math.isnan(x):
        return "n/a"
    if abs(x) <= tol:
        return f"{0:.{digits}f} (tie)"
    if round(x, digits) == 0:
        return f"{'+' if x > 0 else '-'}<{10**-digits:.{digits}f}"
    return f"{x:+.{digits}f}"


def tie_digits(scores: Sequence[float], tol: float = TIE_TOL, digits: int = DIGITS, most: int = 7) -> int:
    """The fewest decimals (``digits`` or more, ``most`` at most) at which every two scores that are not tied (more
    than ``tol`` apart) read differently, so that two ranks never stand beside the same printed score.

    Example: ``tie_digits([0.81234, 0.81241, 0.5]) == 4``; tied scores (``[0.5, 0.5]``) keep 3.
    """
    vals = sorted(float(s) for s in scores if not math.isnan(float(s)))
    apart = [(a, b) for a, b in zip(vals, vals[1:], strict=False) if b - a > tol]
    for d in range(digits, most):
        if all(f"{a:.{d}f}" != f"{b:.{d}f}" for a, b in apart):
            return d
    return most


def interval(ci: Sequence[float] | None, digits: int = DIGITS) -> str:
    """A 95 % interval as ``lo–hi`` with ``digits`` decimals ("n/a" when missing)."""
    if not ci:
        return "n/a"
    return f"{score(ci[0], digits)}–{score(ci[1], digits)}"


def cell(v: Any, digits: int = DIGITS) -> Any:
    """A table cell for display: a float (not an int, not a bool) with ``digits`` decimals, anything else as is."""
    if isinstance(v, bool) or isinstance(v, Integral) or not isinstance(v, Real):
        return v
    if math.isnan(float(v)):
        return "n/a"
    return f"{float(v):.{digits}f}"


def table(frame: Any, digits: int = DIGITS, keep: Iterable[str] = ()) -> Any:
    """``frame`` for a ``gr.Dataframe``: a pandas Styler that shows every float with ``digits`` decimals (columns
    named in ``keep`` as they are), the values underneath unchanged. An empty frame is returned as it is."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame) or frame.empty:
        return frame
    keep = set(keep)
    cols = [c for c in frame.columns if c not in keep]
    return frame.style.format(lambda v: cell(v, digits), subset=cols)


def shared_ranks(scores: Sequence[float], tol: float = TIE_TOL, offset: int = 0) -> list[str]:
    """Competition ranks as text, best (highest) first: scores within ``tol`` of their group's best share the group's
    rank, written ``=k``; an untied score is plain ``k``.

    Args:
        scores: the scores, in display order (the ranks come back in the same order).
        offset: added to every rank (for a list that continues another).

    Example: ``[1.0, 1.0, 0.75, 1.0]`` -> ``["=1", "=1", "4", "=1"]``.
    """
    vals = [float(s) for s in scores]
    order = sorted(range(len(vals)), key=lambda i: (-vals[i] if not math.isnan(vals[i]) else math.inf, i))
    out = [""] * len(vals)
    k = 0
    while k < len(order):
        top = vals[order[k]]
        j = k
        while j + 1 < len(order) and not math.isnan(top) and vals[order[j + 1]] >= top - tol:
            j += 1
        rank = str(offset + k + 1)
        for i in order[k : j + 1]:
            out[i] = f"={rank}" if j > k else rank
        k = j + 1
    return out
