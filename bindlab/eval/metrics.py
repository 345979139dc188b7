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


def tie_chance(groups: np.ndarray, answer: np.ndarray) -> np.ndarray:
    """Each question's chance level: the expected credit of a model that sees which group each candidate is in and
    nothing else, so it ties among the answer's group (and picks that group, the one the query shares).

    Args:
        groups: ``(q, k)`` integer labels; candidates with the same label in a row are indistinguishable to the
            model (for SABER MCQs: the same attributes and objects, bound differently).
        answer: ``(q,)`` index of the correct candidate.

    Returns:
        ``(q,)`` ``1/t``, where ``t`` is the number of candidates in the answer's group (the answer included):
        exactly what :func:`mcq_credit` gives that model.
    """
    groups = np.asarray(groups)
    answer = np.asarray(answer, dtype=np.int64)
    same = groups == groups[np.arange(len(answer)), answer][:, None]  # (q, k)
    return 1.0 / same.sum(axis=1)


def choice_chance(positives: int, negatives: int = 1) -> float:
    """Chance of a choice item that passes when every positive outscores every negative: the probability of that
    order when the scores are in random order, ``k! m! / (k + m)! = 1 / C(k + m, k)``.

    So ``1/(k+1)`` for k positives and one negative (SugarCrepe++'s image task, two paraphrases against one
    negative: 1/3; SugarCrepe and ARO, one against one: 1/2), and ``1/k`` for one positive among k candidates.

    Raises:
        ValueError: fewer than one positive or one negative.
    """
    from math import comb

    if positives < 1 or negatives < 1:
        raise ValueError(f"a choice item needs at least one positive and one negative, got {positives} and {negatives}")
    return 1.0 / comb(positives + negatives, positives)


def chance_label(lo: float | None, hi: float | None, chance: float | None) -> str:
    """ "above chance" / "below chance" when the 95 % interval ``[lo, hi]`` lies wholly above / below ``chance``,
    else "at chance"; "" without an interval or a chance level."""
    if chance is None or lo is None or hi is None or not np.isfinite([lo, hi]).all():
        return ""
    return "above chance" if lo > chance else ("below chance" if hi < chance else "at chance")


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
        order: optional precomputed :func:`rank_order` of ``scores``; when given, it replaces the sort.

    Returns:
        ``(q,)`` AP; NaN for a query without positives or with a NaN score.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    positives = np.atleast_2d(np.asarray(positives, dtype=bool))
    if scores.shape != positives.shape:
        raise ValueError(f"scores {scores.shape} and positives {positives.shape} must have the same shape")
    ascending = None if order is None else np.take_along_axis(scores, order, axis=1)[:, ::-1]
    return average_precision_columns(scores.T, [np.flatnonzero(p) for p in positives], ascending)


def average_precision_columns(
    scores: np.ndarray, pos_index: list[np.ndarray] | tuple[np.ndarray, ...], ascending: np.ndarray | None = None
) -> np.ndarray:
    """AP of each column of ``scores`` with the positives given as row indices (the fast kernel of AP).

    AP = mean over positives i of TP(score >= s_i) / N(score >= s_i): items tied with a positive count as
    retrieved with it, exactly as one sklearn threshold per distinct score. One sort per column plus a
    ``searchsorted`` of the positives (no argsort, no gather of the whole gallery), so the alpha slider can
    score 12 values over a 23,040-image gallery in a few milliseconds.

    Args:
        scores: ``(n, k)`` scores of ``n`` gallery items for ``k`` queries.
        pos_index: ``k`` integer arrays, the rows that are positive for each column.
        ascending: optional ``(k, n)`` each column's scores sorted ascending (skips the sort).

    Returns:
        ``(k,)`` AP; NaN for a column without positives or with a NaN score.
    """
    st = np.ascontiguousarray(np.asarray(scores, dtype=np.float64).T)  # (k, n)
    n = st.shape[1]
    srt = np.sort(st, axis=1) if ascending is None else ascending  # ascending; NaNs go last with np.sort
    out = np.full(st.shape[0], np.nan)
    for v, pos in enumerate(pos_index):
        if len(pos) == 0 or np.isnan(st[v]).any():
            continue
        ps = np.sort(st[v, pos])
        n_ge = n - np.searchsorted(srt[v], ps, side="left")  # items scoring >= each positive
        tp_ge = len(ps) - np.searchsorted(ps, ps, side="left")  # positives scoring >= each positive
        out[v] = np.mean(tp_ge / n_ge)
    return out


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


def bootstrap_ci(
    values: np.ndarray, n_boot: int = 1000, level: float = 0.95, seed: int = 0, groups: np.ndarray | None = None
) -> tuple[float, float]:
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
