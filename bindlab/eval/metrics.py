"""Pure numpy metrics: tie-aware MCQ credit, average precision, recall@k, bootstrap intervals (over items, and
over training seeds then items), Holm adjustment, the drift test against its own null.

Every function takes arrays and returns numbers/arrays; no I/O, no models. Tests check them against naive loops
and ``sklearn.metrics``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

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


# every benchmark kind's item shape: (positives, negatives) that must all order right, and how many such independent
# orders an item needs (a 2x2 item's text score asks each of its two images to prefer its own caption)
TASK_SHAPES: dict[str, tuple[int, int, int]] = {
    "triplet": (1, 1, 1),  # query nearer the positive than the negative
    "choice": (1, 1, 1),  # SugarCrepe / ARO: one caption against one negative
    "sugarcrepe_pp_itt": (2, 1, 1),  # both paraphrases above the negative: 1/3
    "sugarcrepe_pp_tot": (1, 2, 1),  # the paraphrase pair's similarity highest of the three pairs: 1/3
    "pairs_i2t": (1, 1, 2),  # each image prefers its own caption: 1/4
    "pairs_t2i": (1, 1, 2),  # each caption prefers its own image: 1/4
    "pairs_group": (2, 2, 1),  # both matched scores above both mismatched (CompoSET / Winoground Group): 1/6
}


def task_chance(kind: str, candidates: int | None = None) -> float:
    """Chance of a benchmark item from its shape, through :func:`choice_chance`: the one place chance is computed.

    ``kind`` is a key of :data:`TASK_SHAPES` or ``"one_of"`` (one right answer among ``candidates``: a 4-way
    guess, R@1 among n, top-1 over a factor's values: ``1 / candidates``). A 2x2 item's text or image score is two
    independent one-against-one orders (1/4); its Group score needs both matched scores above both mismatched ones
    (``choice_chance(2, 2)`` = 1/6).

    Raises:
        ValueError: an unknown kind, or ``one_of`` without at least two candidates.
    """
    if kind == "one_of":
        if candidates is None or candidates < 2:
            raise ValueError(f"one_of chance needs at least two candidates, got {candidates}")
        return choice_chance(1, candidates - 1)
    if kind not in TASK_SHAPES:
        raise ValueError(f"unknown task kind {kind!r}; use one_of or one of {', '.join(TASK_SHAPES)}")
    k, m, times = TASK_SHAPES[kind]
    return choice_chance(k, m) ** times


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


def hierarchical_bootstrap(
    deltas: Sequence[np.ndarray], n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> dict[str, Any]:
    """Two-level bootstrap of a trained model's change against its base over training seeds.

    Each resample draws as many training seeds as were given, with replacement, then, for every seed drawn, that
    seed's items (questions, triplets, sentences) with replacement, and averages the per-seed means: the interval
    carries the seed-to-seed variance of the training as well as the items' sampling variance.

    Args:
        deltas: one ``(n_s,)`` array per training seed of per-item changes (tuned - base; NaNs ignored).
        n_boot: resamples.
        level: interval coverage.
        seed: bootstrap seed.

    Returns:
        ``{"n_seeds", "per_seed" (each seed's mean change), "mean" (mean over seeds), "seed_sd" (sd of the per-seed
        means, ddof 1; 0 for one seed), "ci95" [lo, hi], "p" (two-sided bootstrap p of "mean change = 0": twice the
        smaller tail share of resamples at or beyond 0, with the +1 correction), "verdict"}``. The verdict is
        "holds" when the interval excludes 0 and every seed's mean has the sign of the overall mean, "mixed" when
        the interval excludes 0 but some seed's sign differs, "n.s." when the interval includes 0, and "one seed"
        when only one seed was given (no seed variance is measured, so no claim about the training holds).

    Raises:
        ValueError: no seeds, or a seed without items.
    """
    arrays = _items_per_seed(deltas, "hierarchical_bootstrap")
    rng = np.random.default_rng(seed)
    item_means = np.stack([_item_resample_means(d, n_boot, len(arrays), rng) for d in arrays])
    return _over_seeds(item_means, [float(d.mean()) for d in arrays], rng, level)


def hierarchical_bootstrap_gap(
    groups: Sequence[tuple[np.ndarray, np.ndarray]], n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> dict[str, Any]:
    """:func:`hierarchical_bootstrap` of a gap between two sets of items within each training seed, e.g. retrieval
    of the pairs a model was shown minus the pairs it never saw, where every seed holds out its own pairs (so the
    items are not paired across the two sets, nor across seeds).

    Each resample draws the seeds with replacement, then for every seed drawn each set's items with replacement
    (the two sets apart), and averages the per-seed gaps ``mean(first) - mean(second)``. Returns the same fields.

    Raises:
        ValueError: no seeds, or a seed with an empty set.
    """
    firsts = _items_per_seed([a for a, _ in groups], "hierarchical_bootstrap_gap")
    seconds = _items_per_seed([b for _, b in groups], "hierarchical_bootstrap_gap")
    rng = np.random.default_rng(seed)
    s = len(firsts)
    item_means = np.stack(
        [
            _item_resample_means(a, n_boot, s, rng) - _item_resample_means(b, n_boot, s, rng)
            for a, b in zip(firsts, seconds, strict=True)
        ]
    )
    return _over_seeds(
        item_means, [float(a.mean() - b.mean()) for a, b in zip(firsts, seconds, strict=True)], rng, level
    )


def _items_per_seed(values: Sequence[np.ndarray], who: str) -> list[np.ndarray]:
    arrays = [np.asarray(d, dtype=np.float64) for d in values]
    arrays = [d[~np.isnan(d)] for d in arrays]
    if not arrays or any(d.size == 0 for d in arrays):
        raise ValueError(f"{who} needs at least one seed, each with at least one item")
    return arrays


def _item_resample_means(d: np.ndarray, n_boot: int, slots: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_boot, slots)`` means of item resamples of one seed: one independent resample per slot a seed can be
    drawn into at the seed level."""
    return d[rng.integers(0, d.size, size=(n_boot, slots, d.size))].mean(axis=2)


def _over_seeds(
    item_means: np.ndarray, per_seed: list[float], rng: np.random.Generator, level: float
) -> dict[str, Any]:
    """The seed level of the two-level bootstrap over ``item_means`` ``(seeds, n_boot, seeds)``, and its summary."""
    s, n_boot = item_means.shape[0], item_means.shape[1]
    picks = rng.integers(0, s, size=(n_boot, s))
    boots = item_means[picks, np.arange(n_boot)[:, None], np.arange(s)[None, :]].mean(axis=1)
    mean = float(np.mean(per_seed))
    alpha = (1 - level) / 2
    lo, hi = float(np.quantile(boots, alpha)), float(np.quantile(boots, 1 - alpha))
    tail = min(int((boots <= 0).sum()), int((boots >= 0).sum()))
    p = min(1.0, 2 * (tail + 1) / (n_boot + 1))
    return {
        "n_seeds": s,
        "per_seed": per_seed,
        "mean": mean,
        "seed_sd": float(np.std(per_seed, ddof=1)) if s > 1 else 0.0,
        "ci95": [lo, hi],
        "p": p,
        "verdict": seed_verdict(lo, hi, per_seed),
    }


def seed_verdict(lo: float, hi: float, per_seed: Sequence[float]) -> str:
    """ "holds" / "mixed" / "n.s." / "one seed" for an interval over seeds and the seeds' own means (see
    :func:`hierarchical_bootstrap`)."""
    if len(per_seed) < 2:
        return "one seed"
    if lo <= 0 <= hi:
        return "n.s."
    sign = 1.0 if lo > 0 else -1.0
    return "holds" if all(x * sign > 0 for x in per_seed) else "mixed"


def p_text(p: float | None) -> str:
    """A p-value as the reports print it: ``<.001``, ``.036``, ``1.000``; ``—`` for none (or NaN)."""
    if p is None or not np.isfinite(p):
        return "—"
    return "<.001" if p < 0.001 else f"{p:.3f}".lstrip("0")


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (controls the family-wise error rate).

    The i-th smallest of m p-values is multiplied by ``m - i`` (i from 0), the results made non-decreasing in that
    order and capped at 1; returned in the input order. NaN p-values are left NaN and do not count in m.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out.tolist()
    order = ok[np.argsort(p[ok], kind="stable")]
    adj = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out[order] = adj
    return out.tolist()


def drift_permutation_test(
    embeddings: Sequence[np.ndarray], base: int = 0, n_perm: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """Does a finetune move general sentences further than a change of training seed does? Drift is >= 0 by
    construction, so it is tested against its own null, not against 0.

    ``embeddings`` holds the same sentences embedded by the base model (index ``base``) and by the tuned model of
    each training seed. For a sentence and a model k, the statistic is k's mean distance (1 - cosine) to the other
    models minus the mean distance among the others. Under the null the base is exchangeable with the tuned seeds
    (a finetune moves a sentence no more than reseeding it does), so which model carries the base label is a
    random draw for every sentence: the null distribution relabels each sentence independently (``n_perm`` Monte
    Carlo draws), and p is ``(1 + #draws at least the observed mean) / (1 + n_perm)``.

    Returns:
        ``{"drift" (mean distance base -> tuned), "seed_drift" (mean distance between tuned seeds), "statistic",
        "p", "n_labels", "n_perm"}``.

    Raises:
        ValueError: fewer than two tuned seeds, or embeddings of different shapes.
    """
    e = [np.asarray(x, dtype=np.float64) for x in embeddings]
    if len(e) < 3:
        raise ValueError("drift_permutation_test needs the base and at least two tuned seeds")
    if any(x.shape != e[0].shape for x in e):
        raise ValueError("drift_permutation_test needs every model's embeddings of the same sentences")
    e = np.stack([x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12) for x in e])  # (m, n, d)
    m, n = e.shape[:2]
    dist = 1.0 - np.einsum("ind,jnd->ijn", e, e)  # (m, m, n) per sentence
    total = dist.sum(axis=(0, 1)) / 2  # (n,) sum over pairs
    to_k = dist.sum(axis=1) / (m - 1)  # (m, n)
    among = (total[None, :] - to_k * (m - 1)) / ((m - 1) * (m - 2) / 2)
    stat = to_k - among  # (m, n)
    observed = float(stat[base].mean())
    rng = np.random.default_rng(seed)
    draws = stat[rng.integers(0, m, size=(n_perm, n)), np.arange(n)[None, :]].mean(axis=1)
    p = (1 + int((draws >= observed - 1e-12).sum())) / (1 + n_perm)
    return {
        "drift": float(to_k[base].mean()),
        "seed_drift": float(among[base].mean()),
        "statistic": observed,
        "p": p,
        "n_labels": m,
        "n_perm": n_perm,
    }
