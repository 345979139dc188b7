"""FactorAtlas controls around matched grounding, selective grounding and exact three-factor composition.

- **Prototype-only attraction** (App. C.2): ``q+_v(lambda) = norm((1 - lambda) q_v + lambda mu_v)``, one lambda per
  factor from ``{0, .0125, ..., 1}`` chosen on validation (same tie rule as alpha).
- **Mismatched directions** (Sec. 3.2): query ``v`` grounded with another value's direction ``d_u`` at the matched
  alpha, AP averaged over *all* ``u != v`` (the k-1 cyclic shifts cover every non-matching pair once).
- **Image-prototype readout** (App. C.1): the calibration prototype ``mu_v`` as query (visual discriminability).
- **Validation-guided selective grounding** (App. G.1): alpha chosen first; per value, a paired cluster bootstrap
  (context-replica groups, 2,000 resamples) of the validation AP gain; ground only where the lower end of the
  95 % interval is > 0.
- **Exact composition** (App. F.1): ``S(y, x) = sum_f w_f log p_f(y_f | x)`` with a softmax over each factor's
  vocabulary at a shared temperature tau; one gallery per context-replica group holding each triple once; AP of the
  single exact target = reciprocal rank (R@k: expected under random tie-breaking). tau and positive simplex weights (0.1 grid) chosen on validation by
  MRR, then R@1.

:func:`grounding_audit` runs the whole single-factor protocol with every choice made before the test split is
scored.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bindlab.analysis.grounding import (
    ALPHA_GRID,
    GridSelection,
    Readout,
    SplitScores,
    _unit,
    best_index,
    crossings_json,
    ground,
    grounded_margin,
    matched_directions,
    pencil_readout,
    pencil_scores,
    score_split,
    select_alpha,
    select_on_grid,
    value_index,
    zero_crossing,
)
from bindlab.encoders.base import l2_normalize

LAMBDA_GRID = np.round(np.arange(81) * 0.0125, 10)  # {0, .0125, ..., 1} (App. C.2)
TAU_GRID = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)  # App. F.1


# ---------------------------------------------------------------------------------------------- direction controls
def select_lambda(validation: SplitScores, grid: np.ndarray = LAMBDA_GRID) -> GridSelection:
    """Choose the prototype-attraction strength on validation (macro-mAP, then top-1, then smaller lambda).

    Args:
        validation: validation scores with ``partner="prototype"``.
        grid: candidate lambdas in [0, 1].
    """
    if validation.partner != "prototype":
        raise ValueError(f"select_lambda needs prototype scores, got partner={validation.partner!r}")
    grid = np.asarray(grid, dtype=np.float64)
    if grid.size == 0 or np.any((grid < 0) | (grid > 1)):
        raise ValueError("the lambda grid must be non-empty and inside [0, 1]")
    reads = [pencil_readout(validation, 1 - lam, lam) for lam in grid]
    return select_on_grid(grid, np.array([r.macro_map for r in reads]), np.array([r.top1 for r in reads]))


def attraction_readout(split: SplitScores, lam: float) -> Readout:
    """Readout of ``norm((1 - lambda) q_v + lambda mu_v)`` (``split`` has ``partner="prototype"``)."""
    if split.partner != "prototype":
        raise ValueError(f"attraction needs prototype scores, got partner={split.partner!r}")
    return pencil_readout(split, 1 - lam, lam)


def image_prototype_readout(split: SplitScores) -> Readout:
    """Visual discriminability: the calibration prototypes ``mu_v`` themselves as queries."""
    if split.partner != "prototype":
        raise ValueError(f"the image-prototype readout needs prototype scores, got partner={split.partner!r}")
    return pencil_readout(split, 0.0, 1.0)


def mismatched_readout(split: SplitScores, alpha: float) -> Readout:
    """Ground each query with every *other* value's direction and average.

    Args:
        split: scores with ``partner="direction"``.
        alpha: the grounding strength (normally the matched alpha chosen on validation).

    Returns:
        :class:`Readout` whose per-value AP is the mean over all ``u != v`` of AP(norm(q_v + alpha d_u)) and
        whose top-1 is the mean over the k-1 cyclic assignments ``v -> v + s (mod k)``.
    """
    if split.partner != "direction":
        raise ValueError(f"mismatched directions need direction scores, got partner={split.partner!r}")
    k = split.n_values
    reads = [pencil_readout(split, 1.0, alpha, (np.arange(k) + s) % k) for s in range(1, k)]
    return Readout.from_ap(np.mean([r.ap for r in reads], axis=0), np.mean([r.top1 for r in reads]))


# ---------------------------------------------------------------------------------------------- selective grounding
def group_bootstrap_counts(n_groups: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """``(n_boot, n_groups)`` multiplicity of each group in each resample (groups drawn with replacement)."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, n_groups, size=(n_boot, n_groups))
    return np.stack([np.bincount(p, minlength=n_groups) for p in pick]).astype(np.float64)


def group_bootstrap_ap(
    scores: np.ndarray, positives: np.ndarray, group_idx: np.ndarray, counts: np.ndarray, chunk: int = 256
) -> np.ndarray:
    """AP on each cluster-bootstrap gallery, without building the galleries.

    A resample repeats group ``g`` ``counts[b, g]`` times. Duplicates tie exactly, so the resampled AP is the
    weighted AP ``sum_pos w_i TP_w(>= s_i) / N_w(>= s_i) / sum_pos w_i``; the score order never changes, so one
    sort and per-run group counts turn all resamples into three small matmuls.

    Args:
        scores: ``(n,)`` scores of one query; positives: ``(n,)`` bool.
        group_idx: ``(n,)`` group of each item in ``0..G-1``.
        counts: ``(B, G)`` multiplicities (see :func:`group_bootstrap_counts`).

    Returns:
        ``(B,)`` AP per resample (NaN when a resample holds no positive).
    """
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-s, kind="stable")
    s_sorted = s[order]
    run = np.concatenate([[0], np.cumsum(s_sorted[1:] != s_sorted[:-1])])  # (n,) run id in descending order
    n_runs, n_groups = int(run[-1]) + 1, counts.shape[1]
    g, p = np.asarray(group_idx)[order], np.asarray(positives, dtype=bool)[order]
    items = np.zeros((n_runs, n_groups))
    np.add.at(items, (run, g), 1.0)
    pos = np.zeros((n_runs, n_groups))
    np.add.at(pos, (run[p], g[p]), 1.0)
    keep = pos.sum(axis=1) > 0  # only runs holding a positive contribute to the sum
    cum_items, cum_pos = np.cumsum(items, axis=0)[keep], np.cumsum(pos, axis=0)[keep]  # (R+, G) at or above
    pos = pos[keep]
    out = np.empty(len(counts))
    for lo in range(0, len(counts), chunk):
        c = counts[lo : lo + chunk]  # (b, G)
        n_ge, tp_ge, tp_in = c @ cum_items.T, c @ cum_pos.T, c @ pos.T  # (b, R+)
        with np.errstate(divide="ignore", invalid="ignore"):
            total = (np.where(tp_in > 0, tp_ge / n_ge, 0.0) * tp_in).sum(axis=1)
            out[lo : lo + chunk] = np.where(tp_in.sum(axis=1) > 0, total / tp_in.sum(axis=1), np.nan)
    return out


@dataclass(frozen=True)
class SelectiveGate:
    """Per-value grounding decisions fixed on validation."""

    alpha: float  # factor-level alpha (chosen on validation before the gate)
    ground: np.ndarray  # (k,) bool: keep the grounded query for this value
    gain: np.ndarray  # (k,) validation AP gain on the full validation gallery
    ci_low: np.ndarray  # (k,) bootstrap interval of the gain
    ci_high: np.ndarray  # (k,)

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "ground": self.ground.tolist(),
            "gain": self.gain.tolist(),
            "ci_low": self.ci_low.tolist(),
            "ci_high": self.ci_high.tolist(),
        }


def selective_gate(
    validation: SplitScores, alpha: float, n_boot: int = 2000, level: float = 0.95, seed: int = 0
) -> SelectiveGate:
    """Decide per value whether grounding helps, from validation alone.

    Args:
        validation: validation scores (``partner="direction"``) with ``groups`` (context-replica) set.
        alpha: the factor-level alpha already chosen on validation.
        n_boot: bootstrap resamples over groups (paired: native and grounded share each resample).
        level: interval level; grounding is kept where the lower end is > 0.

    Returns:
        :class:`SelectiveGate`.
    """
    if validation.partner != "direction" or validation.groups is None:
        raise ValueError("selective grounding needs direction scores with groups (context-replica) set")
    _, gidx = np.unique(validation.groups, return_inverse=True)
    counts = group_bootstrap_counts(int(gidx.max()) + 1, n_boot, seed)
    native = pencil_readout(validation, 1.0, 0.0)
    grounded = pencil_readout(validation, 1.0, alpha)
    s_nat, s_gr = pencil_scores(validation, 1.0, 0.0), pencil_scores(validation, 1.0, alpha)
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    low, high = np.empty(validation.n_values), np.empty(validation.n_values)
    for v in range(validation.n_values):
        pos = validation.value_idx == v
        diff = group_bootstrap_ap(s_gr[:, v], pos, gidx, counts) - group_bootstrap_ap(s_nat[:, v], pos, gidx, counts)
        low[v], high[v] = np.nanquantile(diff, lo_q), np.nanquantile(diff, hi_q)
    return SelectiveGate(float(alpha), low > 0, grounded.ap - native.ap, low, high)


def selective_readout(split: SplitScores, gate: SelectiveGate) -> Readout:
    """Readout with grounding applied only to the values the gate kept (alpha 0 elsewhere)."""
    return pencil_readout(split, 1.0, gate.alpha * gate.ground.astype(np.float64))


# ---------------------------------------------------------------------------------------------- full audit
@dataclass(frozen=True)
class GroundingAudit:
    """Single-factor FactorAtlas protocol: selections on validation, then every readout on test."""

    values: list[Any]
    alpha: GridSelection  # matched grounding strength (validation)
    lam: GridSelection  # prototype-attraction strength (validation)
    gate: SelectiveGate | None  # None without groups
    native: Readout
    grounded: Readout
    attraction: Readout
    mismatched: Readout
    image_prototype: Readout
    selective: Readout | None
    margin_native: np.ndarray  # (k,) closed-form calibration margin |Delta| c
    margin_grounded: np.ndarray  # (k,) at the chosen alpha
    alpha_star: np.ndarray  # (k,) -c where -1 < c < 0, NaN where the margin has no zero crossing

    def to_dict(self) -> dict[str, Any]:
        reads = {
            n: getattr(self, n)
            for n in ("native", "grounded", "attraction", "mismatched", "image_prototype", "selective")
        }
        return {
            "values": self.values,
            "alpha": self.alpha.value,
            "lambda": self.lam.value,
            "validation": {
                "alpha_map": self.alpha.macro_map,
                "alpha_top1": self.alpha.top1,
                "lambda_map": self.lam.macro_map,
                "lambda_top1": self.lam.top1,
            },
            "gate": None if self.gate is None else self.gate.to_dict(),
            "test": {n: None if r is None else r.to_dict() for n, r in reads.items()},
            "margin_native": self.margin_native.tolist(),
            "margin_grounded": self.margin_grounded.tolist(),
            "alpha_star": crossings_json(self.alpha_star),
        }


def grounding_audit(
    embeddings: np.ndarray,
    labels: np.ndarray,
    queries: np.ndarray,
    calibration: np.ndarray,
    validation: np.ndarray,
    test: np.ndarray,
    values: Sequence[Any] | None = None,
    groups: np.ndarray | None = None,
    alpha_grid: np.ndarray = ALPHA_GRID,
    lambda_grid: np.ndarray = LAMBDA_GRID,
    n_boot: int = 2000,
    seed: int = 0,
) -> GroundingAudit:
    """Run matched grounding and its controls for one factor.

    Args:
        embeddings: ``(n, d)`` image embeddings; labels: ``(n,)`` values of this factor.
        queries: ``(k, d)`` native text queries in ``values`` order.
        calibration, validation, test: ``(n,)`` disjoint boolean masks.
        values: vocabulary order (default: sorted unique labels).
        groups: ``(n,)`` context-replica group per image; enables the selective gate.
        alpha_grid, lambda_grid, n_boot, seed: selection grids and bootstrap settings.

    Returns:
        :class:`GroundingAudit`. The test split is scored only after alpha, lambda and the gate are fixed.
    """
    cal, val, tst = (np.asarray(m, dtype=bool) for m in (calibration, validation, test))
    if np.any(cal & val) or np.any(cal & tst) or np.any(val & tst):
        raise ValueError("calibration, validation and test masks must be disjoint")
    labels = np.asarray(labels)
    values = np.unique(labels) if values is None else np.asarray(values)
    dirs = matched_directions(embeddings[cal], labels[cal], values)
    q = _unit(queries, "query")

    def split(mask: np.ndarray, partner: str) -> SplitScores:
        e = dirs.directions if partner == "direction" else dirs.prototypes
        return score_split(
            embeddings[mask],
            value_index(labels[mask], values),
            q,
            e,
            partner,
            None if groups is None else np.asarray(groups)[mask],
        )

    val_d, val_p = split(val, "direction"), split(val, "prototype")
    alpha = select_alpha(val_d, alpha_grid)
    lam = select_lambda(val_p, lambda_grid)
    gate = None if groups is None else selective_gate(val_d, alpha.value, n_boot=n_boot, seed=seed)
    # Every choice is fixed; only now is the test split scored.
    test_d, test_p = split(tst, "direction"), split(tst, "prototype")
    c = np.sum(q * dirs.directions, axis=1)
    return GroundingAudit(
        values=values.tolist(),
        alpha=alpha,
        lam=lam,
        gate=gate,
        native=pencil_readout(test_d, 1.0, 0.0),
        grounded=pencil_readout(test_d, 1.0, alpha.value),
        attraction=attraction_readout(test_p, lam.value),
        mismatched=mismatched_readout(test_d, alpha.value),
        image_prototype=image_prototype_readout(test_p),
        selective=None if gate is None else selective_readout(test_d, gate),
        margin_native=dirs.delta_norms * c,
        margin_grounded=grounded_margin(q, dirs.deltas, alpha.value),
        alpha_star=zero_crossing(c),
    )


# ---------------------------------------------------------------------------------------------- composition
def factor_log_posteriors(gallery: np.ndarray, queries: np.ndarray, tau: float) -> np.ndarray:
    """``log p_f(v | x)``: log-softmax over one factor's value queries at temperature tau, Eq. (14).

    Args:
        gallery: ``(n, d)`` images (normalised here); queries: ``(k_f, d)`` (normalised here).

    Returns:
        ``(n, k_f)`` float64.
    """
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    z = (l2_normalize(gallery).astype(np.float64) @ _unit(queries, "query").T) / tau
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))


@dataclass(frozen=True)
class CompositionResult:
    """Exact-composition retrieval: each query is one image's full triple, its gallery that image's group."""

    r1: float
    r5: float
    mrr: float  # = mAP: a single exact positive per query
    n_queries: int

    def to_dict(self) -> dict[str, Any]:
        return {"r1": self.r1, "r5": self.r5, "mrr": self.mrr, "n_queries": self.n_queries}


def _group_members(labels: np.ndarray, groups: np.ndarray) -> list[np.ndarray]:
    members = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    for m in members:
        if len(np.unique(labels[m], axis=0)) != len(m):
            raise ValueError("each composition gallery (group) must hold every factor triple at most once")
    return members


def composition_ranks(
    log_post: Sequence[np.ndarray], labels: np.ndarray, groups: np.ndarray, weights: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Where the exact target lands for every query, as counts of gallery items above and tied with it.

    Args:
        log_post: per factor ``(n, k_f)`` log posteriors (:func:`factor_log_posteriors`).
        labels: ``(n, F)`` value index of each image per factor (same factor order).
        groups: ``(n,)`` gallery of each image (context-replica).
        weights: ``F`` factor weights.

    Returns:
        ``above`` and ``tied``, each ``(n,)``: for the query made of image ``i``'s own triple, the number of
        images in its group scoring strictly higher than ``i``, and scoring exactly as ``i`` (``i`` included).
    """
    labels = np.asarray(labels)
    members = _group_members(labels, np.asarray(groups))
    return _target_counts(members, (_gather(log_post, labels, m) for m in members), weights, len(labels))


def _gather(log_post: Sequence[np.ndarray], labels: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``(F, queries * images)`` C-contiguous: log p_f(query's value | image) within one group."""
    return np.ascontiguousarray(
        np.stack([lp[m][:, labels[m, f]].T for f, lp in enumerate(log_post)]).reshape(len(log_post), -1)
    )


def _target_counts(
    members: Sequence[np.ndarray], gathered: Any, weights: Sequence[float], n: int
) -> tuple[np.ndarray, np.ndarray]:
    above, tied = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    for m, a in zip(members, gathered, strict=False):
        s = (w @ a).reshape(len(m), len(m))  # (query, image); rows reduce along contiguous memory
        target = np.diag(s)[:, None]
        above[m], tied[m] = (s > target).sum(axis=1), (s == target).sum(axis=1)
    return above, tied


def evaluate_composition(
    gallery: np.ndarray,
    labels: np.ndarray,
    groups: np.ndarray,
    queries: Sequence[np.ndarray],
    tau: float,
    weights: Sequence[float],
) -> CompositionResult:
    """Exact three-factor (or F-factor) retrieval with the factor-posterior readout.

    Args:
        gallery: ``(n, d)`` images; labels: ``(n, F)`` value indices; groups: ``(n,)``.
        queries: per factor ``(k_f, d)`` value queries (native or grounded), rows indexed like ``labels``.
        tau: shared temperature; weights: ``F`` factor weights.

    Returns:
        :class:`CompositionResult`.
    """
    if len(queries) != np.asarray(labels).shape[1] or len(weights) != len(queries):
        raise ValueError("need one query matrix and one weight per factor (labels column)")
    lp = [factor_log_posteriors(gallery, q, tau) for q in queries]
    return _summarise_ranks(composition_ranks(lp, labels, groups, weights))


def simplex_weights(n_factors: int, step: float = 0.1) -> np.ndarray:
    """All strictly positive weight vectors on a ``step`` grid summing to 1: ``(m, n_factors)``."""
    units = int(round(1 / step))
    combos = [c for c in itertools.product(range(1, units), repeat=n_factors) if sum(c) == units]
    return np.array(combos, dtype=np.float64) / units


@dataclass(frozen=True)
class CompositionSelection:
    """tau and weights chosen on compositional validation (MRR, then R@1, then grid order)."""

    tau: float
    weights: tuple[float, ...]
    validation: CompositionResult


def select_composition(
    gallery: np.ndarray,
    labels: np.ndarray,
    groups: np.ndarray,
    queries: Sequence[np.ndarray],
    taus: Sequence[float] = TAU_GRID,
    weights: np.ndarray | None = None,
) -> CompositionSelection:
    """Choose tau and factor weights on the *validation* gallery (arguments as :func:`evaluate_composition`).

    ``weights`` defaults to :func:`simplex_weights` (0.1 grid, all positive). Ties go to the earlier grid point
    (smaller tau, then the lexicographically first weights).
    """
    weights = simplex_weights(len(queries)) if weights is None else np.atleast_2d(np.asarray(weights, float))
    if len(taus) == 0 or len(weights) == 0:
        raise ValueError("select_composition needs at least one tau and one weight vector")
    results: list[tuple[float, np.ndarray, CompositionResult]] = []
    labels = np.asarray(labels)
    members = _group_members(labels, np.asarray(groups))
    for tau in taus:
        lp = [factor_log_posteriors(gallery, q, tau) for q in queries]
        gathered = [_gather(lp, labels, m) for m in members]  # reused by every weight vector
        for w in weights:
            results.append((float(tau), w, _summarise_ranks(_target_counts(members, gathered, w, len(labels)))))
    i = best_index([res.mrr for _, _, res in results], [res.r1 for _, _, res in results])
    tau, w, res = results[i]
    return CompositionSelection(tau, tuple(float(x) for x in w), res)


def _summarise_ranks(ranks: tuple[np.ndarray, np.ndarray]) -> CompositionResult:
    """R@k expected under random tie-breaking (as ``metrics.recall_at_k``); MRR = AP = 1 / (above + tied).

    (sklearn's AP counts items tied with the single positive against it.)
    """
    above, tied = (np.asarray(r, dtype=np.float64) for r in ranks)

    def recall(k: int) -> float:
        return float(np.mean(np.clip((k - above) / tied, 0.0, 1.0)))

    return CompositionResult(recall(1), recall(5), float(np.mean(1.0 / (above + tied))), len(above))


@dataclass(frozen=True)
class CompositionAudit:
    """Native versus matched exact composition: tau/weights per query set on validation, then test."""

    alphas: tuple[GridSelection, ...]  # factor-level alpha per factor (validation)
    native_selection: CompositionSelection
    matched_selection: CompositionSelection
    native: CompositionResult  # test
    matched: CompositionResult  # test

    def to_dict(self) -> dict[str, Any]:
        sel = {
            n: {"tau": s.tau, "weights": list(s.weights), "validation": s.validation.to_dict()}
            for n, s in (("native", self.native_selection), ("matched", self.matched_selection))
        }
        return {
            "alphas": [a.value for a in self.alphas],
            "selection": sel,
            "test": {"native": self.native.to_dict(), "matched": self.matched.to_dict()},
        }


def composition_audit(
    gallery: np.ndarray,
    labels: np.ndarray,
    groups: np.ndarray,
    calibration: np.ndarray,
    validation: np.ndarray,
    test: np.ndarray,
    queries: Sequence[np.ndarray],
    alpha_grid: np.ndarray = ALPHA_GRID,
    taus: Sequence[float] = TAU_GRID,
    weights: np.ndarray | None = None,
) -> CompositionAudit:
    """Exact composition with native and matched-grounded queries under the same factor-posterior readout.

    Order (App. F.1): per factor, directions from calibration and alpha_f on factor-level validation; then tau
    and weights on compositional validation, separately for native and matched queries; then test.

    Args:
        gallery: ``(n, d)`` images; labels: ``(n, F)`` value index per factor (``0..k_f-1``).
        groups: ``(n,)`` context-replica group: one retrieval gallery per group, each triple at most once.
        calibration, validation, test: ``(n,)`` disjoint boolean masks.
        queries: per factor ``(k_f, d)`` native queries, row ``v`` for value index ``v``.
        alpha_grid, taus, weights: selection grids (defaults: the paper's; weights = positive 0.1 simplex).

    Returns:
        :class:`CompositionAudit`.
    """
    cal, val, tst = (np.asarray(m, dtype=bool) for m in (calibration, validation, test))
    if np.any(cal & val) or np.any(cal & tst) or np.any(val & tst):
        raise ValueError("calibration, validation and test masks must be disjoint")
    labels, groups = np.asarray(labels), np.asarray(groups)
    if labels.ndim != 2 or labels.shape[1] != len(queries):
        raise ValueError(f"labels must be (n, F) with one column per query matrix ({len(queries)}), got {labels.shape}")
    alphas, matched = [], []
    for f, q in enumerate(queries):
        k = np.arange(len(q))
        d = matched_directions(gallery[cal], labels[cal, f], values=k).directions
        pick = select_alpha(score_split(gallery[val], value_index(labels[val, f], k), q, d), alpha_grid)
        alphas.append(pick)
        matched.append(ground(q, d, pick.value))
    sel_n = select_composition(gallery[val], labels[val], groups[val], queries, taus, weights)
    sel_m = select_composition(gallery[val], labels[val], groups[val], matched, taus, weights)
    # Every choice is fixed; only now is the test split scored.
    return CompositionAudit(
        tuple(alphas),
        sel_n,
        sel_m,
        evaluate_composition(gallery[tst], labels[tst], groups[tst], queries, sel_n.tau, sel_n.weights),
        evaluate_composition(gallery[tst], labels[tst], groups[tst], matched, sel_m.tau, sel_m.weights),
    )
