"""Pure numpy metrics: tie-aware MCQ credit, average precision, recall@k, bootstrap intervals.

Every function takes arrays and returns numbers/arrays; no I/O, no models. Tests check them against naive loops
and ``sklearn.metrics``.
"""

from __future__ import annotations

import math

import numpy as np

TIE_TOL = 1e-6  # scores within this of the top score are tied


def mcq_credit(scores: np.ndarray, answer: np.ndarray, tol: float = TIE_TOL) -> np.ndarray:
    """Expected accuracy of each question under random tie-breaking.

    Args:
        scores: ``(q, k)`` candidate scores.
        answer: ``(q,)`` index of the correct candidate.
        tol: scores within ``tol`` of a row's maximum count as tied for first.

    Returns:
        ``(q,)`` credit: ``1/t`` when the answer is among the ``t`` tied top candidates, else 0.
        A row with any NaN gets credit 0 (a broken score never counts as correct).
    """
    scores = np.asarray(scores, dtype=np.float64)
    answer = np.asarray(answer, dtype=np.int64)
    top = np.max(scores, axis=1, keepdims=True)
    tied = scores >= top - tol  # (q, k)
    n_tied = tied.sum(axis=1)
    hit = tied[np.arange(len(answer)), answer]
    credit = np.where(hit, 1.0 / np.maximum(n_tied, 1), 0.0)
    return np.where(np.isnan(scores).any(axis=1), 0.0, credit)


def rank_order(scores: np.ndarray) -> np.ndarray:
    """Indices that sort each row by descending score, ties in gallery order. ``(q, n)`` -> ``(q, n)``."""
    return np.argsort(-np.atleast_2d(np.asarray(scores, dtype=np.float64)), axis=1, kind="stable")


def average_precision(scores: np.ndarray, positives: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Average precision per query, equal to ``sklearn.metrics.average_precision_score`` row by row.

    Tied scores are handled as sklearn does: items with equal scores form one threshold, so precision at that
    threshold counts all of them together.

    Args:
        scores: ``(q, n)`` similarity of each query to each gallery item (higher = more relevant).
        positives: ``(q, n)`` boolean relevance.
        order: optional precomputed :func:`rank_order` of ``scores`` (sorting is the expensive part).

    Returns:
        ``(q,)`` AP; NaN for a query without positives.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    positives = np.atleast_2d(np.asarray(positives, dtype=bool))
    if scores.shape != positives.shape:
        raise ValueError(f"scores {scores.shape} and positives {positives.shape} must have the same shape")
    q, n = scores.shape
    order = rank_order(scores) if order is None else order  # (q, n)
    s_sorted = np.take_along_axis(scores, order, axis=1)
    p_sorted = np.take_along_axis(positives, order, axis=1).astype(np.float64)
    tp = np.cumsum(p_sorted, axis=1)  # (q, n)
    # The last index of each run of equal scores is a threshold; precision/recall are read only there.
    last_of_run = np.ones((q, n), dtype=bool)
    last_of_run[:, :-1] = s_sorted[:, 1:] != s_sorted[:, :-1]
    n_pos = p_sorted.sum(axis=1)
    precision = tp / np.arange(1, n + 1)
    # Recall increment between consecutive thresholds = positives inside the run / n_pos.
    tp_at = np.where(last_of_run, tp, 0.0)
    prev_tp = np.maximum.accumulate(np.concatenate([np.zeros((q, 1)), tp_at[:, :-1]], axis=1), axis=1)
    gain = np.where(last_of_run, tp - prev_tp, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ap = (gain * precision).sum(axis=1) / n_pos
    return np.where(n_pos > 0, ap, np.nan)


def recall_at_k(scores: np.ndarray, positives: np.ndarray, k: int, order: np.ndarray | None = None) -> np.ndarray:
    """Expected recall@k per query under random tie-breaking: P(a positive is among the top ``k``). ``(q,)``.

    Items scoring above the k-th score are in; among the items tied *at* the k-th score, the remaining slots
    are filled uniformly at random, so a pure bag-of-words (swaps tie exactly) gets chance credit, not luck.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    positives = np.atleast_2d(np.asarray(positives, dtype=bool))
    k = min(k, scores.shape[1])
    order = rank_order(scores) if order is None else order
    kth = np.take_along_axis(scores, order[:, k - 1 : k], axis=1)  # (q, 1) the k-th best score
    above = scores > kth
    tied = scores == kth
    pos_above = (positives & above).sum(1)
    n_tied, pos_tied = tied.sum(1), (positives & tied).sum(1)
    slots = k - above.sum(1)  # how many of the tied items make the cut
    out = (pos_above > 0).astype(np.float64)
    for i in np.flatnonzero((pos_above == 0) & (pos_tied > 0)):
        out[i] = 1.0 - math.comb(int(n_tied[i] - pos_tied[i]), int(slots[i])) / math.comb(int(n_tied[i]), int(slots[i]))
    return out


def bootstrap_ci(values: np.ndarray, n_boot: int = 1000, level: float = 0.95, seed: int = 0,
                 groups: np.ndarray | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (NaNs ignored).

    Args:
        values: ``(n,)`` per-item values.
        groups: optional ``(n,)`` group labels; groups are resampled whole (cluster bootstrap).
    """
    v = np.asarray(values, dtype=np.float64)
    keep = ~np.isnan(v)
    v = v[keep]
    if v.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    if groups is None:
        idx = rng.integers(0, v.size, size=(n_boot, v.size))
        means = v[idx].mean(axis=1)
    else:
        g = np.asarray(groups)[keep]
        uniq, inv = np.unique(g, return_inverse=True)
        sums = np.bincount(inv, weights=v, minlength=len(uniq))
        counts = np.bincount(inv, minlength=len(uniq))
        pick = rng.integers(0, len(uniq), size=(n_boot, len(uniq)))
        means = sums[pick].sum(axis=1) / counts[pick].sum(axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))
