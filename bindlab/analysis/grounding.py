"""Matched visual grounding (FactorAtlas; docs/architecture.md, "Matched visual grounding (α and α*)"): pure numpy.

For one factor (shape, hue or pattern) with values ``v = 0..k-1``:

- image prototypes ``mu_v = norm(mean norm(I(x)))`` over the *calibration* images of value ``v``;
- target-versus-average-rest contrast ``Delta_v = mu_v - mean_{u != v} mu_u`` (the rest mean is not
  normalised) and its unit direction ``d_v``;
- grounded query ``q'_v(alpha) = norm(q_v + alpha d_v)`` for the native text query ``q_v`` (normalised mean of
  the factor's three prompt templates);
- closed-form matched margin ``M(alpha) = |Delta_v| (c + alpha) / sqrt(1 + alpha^2 + 2 alpha c)``, ``c = q_v.d_v``,
  non-decreasing in alpha; it crosses zero at ``alpha* = -c`` only when ``-1 < c < 0`` (a native margin below
  zero that grounding lifts). For ``c >= 0`` the margin is never negative for ``alpha >= 0`` and for ``c = -1``
  it is undefined at ``alpha = 1``: "no crossing" (``alpha*`` NaN, JSON ``null``).

Retrieval is read out on a gallery as per-value full-gallery AP, macro-mAP and image-wise factor-value top-1.
``alpha`` is chosen on validation only (grid 0..8 step 0.05; ties -> top-1 -> smaller alpha): :func:`select_alpha`
receives nothing but a validation :class:`SplitScores`, and :func:`evaluate_alpha` takes the already-chosen alpha.

Speed: every query studied here is a *pencil* ``norm(a q_v + b e_v)`` of the native query and one partner unit
vector ``e_v`` (the direction ``d_v``, or the prototype ``mu_v`` for the attraction control). Its gallery scores
are ``(a s_q + b s_e) / sqrt(a^2 + b^2 + 2ab q_v.e_v)`` with ``s_q = G q_v`` and ``s_e = G e_v`` precomputed once
(:class:`SplitScores`), so moving alpha costs O(n k) plus one sort per value, never a new matmul.
Controls, selective grounding and exact composition live in :mod:`bindlab.analysis.grounding_controls`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bindlab.encoders.base import l2_normalize
from bindlab.eval.metrics import average_precision_columns as _ap_columns
from bindlab.eval.metrics import mcq_credit

# The paper's three fixed prompt templates per factor (Appendix B); "{}" is the value word.
TEMPLATES: dict[str, tuple[str, str, str]] = {
    "pattern": ("{}", "a {} surface", "an object with a {} pattern"),
    "hue": ("{}", "a {} object", "a {} surface"),
    "shape": ("{}", "a {}", "an object shaped like a {}"),
}
ALPHA_GRID = np.round(np.arange(161) * 0.05, 10)  # {0, .05, ..., 8} (Appendix B)
SELECT_TOL = 1e-12  # validation scores closer than this count as tied (float summation noise only)


def _unit(x: np.ndarray, what: str = "vector") -> np.ndarray:
    """Float64 L2 normalisation along the last axis; refuses zero vectors (the direction would be undefined)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError(f"cannot normalise a zero {what}")
    return x / norms


def value_index(labels: np.ndarray, values: Sequence[Any]) -> np.ndarray:
    """Map labels to their position in ``values``.

    Args:
        labels: ``(n,)`` integer or string labels.
        values: the factor vocabulary, in the order used for queries and directions.

    Returns:
        ``(n,)`` int64 index into ``values``. Raises ``ValueError`` naming labels that are not in ``values``.
    """
    labels = np.asarray(labels)
    lookup = {v: i for i, v in enumerate(np.asarray(values).tolist())}
    uniq, inv = np.unique(labels, return_inverse=True)
    missing = [u for u in uniq.tolist() if u not in lookup]
    if missing:
        raise ValueError(f"labels {missing[:5]} are not in the vocabulary {list(lookup)}")
    return np.array([lookup[u] for u in uniq.tolist()], dtype=np.int64)[inv.reshape(-1)]


# ---------------------------------------------------------------------------------------------- queries, maths
def native_queries(
    embed_texts: Callable[[list[str]], np.ndarray],
    factor: str,
    values: Sequence[str],
    templates: Sequence[str] | None = None,
) -> np.ndarray:
    """Native text queries: normalised mean of the factor's prompt-template embeddings, one per value.

    Args:
        embed_texts: any ``list[str] -> (m, d)`` text embedder (e.g. ``Encoder.embed_texts``).
        factor: ``"shape"``, ``"hue"`` or ``"pattern"`` (selects :data:`TEMPLATES`).
        values: ``k`` value words, e.g. ``["red", "blue"]``.
        templates: override the paper's templates (prompt-robustness control); each contains ``"{}"``.

    Returns:
        ``(k, d)`` float32 unit queries.
    """
    if templates is None:
        if factor not in TEMPLATES:
            raise ValueError(f"unknown factor {factor!r}; choose one of {sorted(TEMPLATES)} or pass templates")
        templates = TEMPLATES[factor]
    if not templates or any("{}" not in t for t in templates):
        raise ValueError(f"templates must be non-empty and each contain '{{}}', got {list(templates)}")
    texts = [t.format(v) for v in values for t in templates]
    emb = np.asarray(embed_texts(texts), dtype=np.float64).reshape(len(values), len(templates), -1)
    return _unit(_unit(emb, "text embedding").mean(axis=1), "template mean").astype(np.float32)


def ground(q: np.ndarray, d: np.ndarray, alpha: float | np.ndarray) -> np.ndarray:
    """Grounded query ``norm(q + alpha d)``, Eq. (1).

    Args:
        q: ``(d,)`` or ``(k, d)`` native queries (normalised here).
        d: same shape, unit directions (normalised here).
        alpha: scalar or ``(k,)`` grounding strength.

    Returns:
        Unit vectors of ``q``'s shape (float64). ``alpha = 0`` returns ``norm(q)``. Raises ``ValueError`` where
        ``q + alpha d = 0`` (``q = -d`` and ``alpha = 1``), where the grounded query is undefined.
    """
    q, d = _unit(q, "query"), _unit(d, "direction")
    a = np.asarray(alpha, dtype=np.float64)
    if q.ndim == 2 and a.ndim == 1:
        a = a[:, None]
    return _unit(q + a * d, "grounded query (q + alpha d = 0)")


def grounded_margin(q: np.ndarray, delta: np.ndarray, alpha: float | np.ndarray) -> np.ndarray:
    """Closed-form matched margin ``M(q'(alpha)) = |Delta| (c + alpha) / sqrt(1 + alpha^2 + 2 alpha c)``, Eq. (2).

    This equals ``norm(q + alpha d) . Delta`` with ``d = Delta / |Delta|`` and ``c = q . d`` for unit ``q``.

    Args:
        q: ``(d,)`` or ``(k, d)`` native queries (normalised here).
        delta: same shape, contrasts ``Delta_v = mu_v - mean rest`` (not normalised).
        alpha: any array broadcastable against ``q.shape[:-1]`` (e.g. ``(m, 1)`` against ``(k,)``).

    Returns:
        Margins of the broadcast shape; NaN at the undefined point ``c = -1, alpha = 1``.
    """
    q = _unit(q, "query")
    delta = np.asarray(delta, dtype=np.float64)
    norm_delta = np.linalg.norm(delta, axis=-1)
    c = np.sum(q * delta, axis=-1) / norm_delta
    a = np.asarray(alpha, dtype=np.float64)
    denom = np.sqrt(np.maximum(1.0 + a**2 + 2.0 * a * c, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, norm_delta * (c + a) / np.where(denom > 0, denom, 1.0), np.nan)


def zero_crossing(c: float | np.ndarray) -> np.ndarray:
    """``alpha* = -c`` where the matched margin crosses zero, NaN where it has no crossing (docs/architecture.md, "Matched visual grounding (α and α*)").

    Args:
        c: ``q . d`` per value (any shape), in [-1, 1].

    Returns:
        ``-c`` where ``-1 < c < 0`` (then ``alpha*`` lies in (0, 1)); NaN for ``c >= 0`` (the margin is already
        >= 0 at alpha = 0 and never falls), for ``c <= -1`` (``q = -d``: undefined at alpha = 1, no sign change
        through zero) and for NaN input.
    """
    c = np.asarray(c, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where((c > -1.0) & (c < 0.0), -c, np.nan)


def crossings_json(alpha_star: np.ndarray) -> list[float | None]:
    """``alpha*`` per value as JSON-ready numbers, ``None`` (JSON ``null``) where there is no crossing."""
    return [float(a) if np.isfinite(a) else None for a in np.asarray(alpha_star, dtype=np.float64).reshape(-1)]


def margin_zero_crossing(q: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``alpha* = -c = -q . d`` where the grounded margin crosses zero (``-1 < c < 0``), else NaN."""
    return zero_crossing(np.sum(_unit(q, "query") * _unit(delta, "contrast"), axis=-1))


@dataclass(frozen=True)
class MatchedDirections:
    """Calibration prototypes and target-versus-average-rest directions of one factor (all ``(k, d)`` float64)."""

    values: np.ndarray  # (k,) vocabulary, in row order
    prototypes: np.ndarray  # mu_v = norm(mean norm(I(x)))
    rest: np.ndarray  # mean of the other values' prototypes (not normalised)
    deltas: np.ndarray  # Delta_v = mu_v - rest_v
    directions: np.ndarray  # d_v = Delta_v / |Delta_v|
    delta_norms: np.ndarray  # (k,) |Delta_v|
    counts: np.ndarray  # (k,) calibration images per value


def matched_directions(
    embeddings: np.ndarray, labels: np.ndarray, values: Sequence[Any] | None = None
) -> MatchedDirections:
    """Prototypes and matched directions from calibration images.

    Args:
        embeddings: ``(n, d)`` calibration image embeddings (normalised here, row by row).
        labels: ``(n,)`` value of each image.
        values: vocabulary order (default: sorted unique labels). Every value needs >= 1 image; k >= 2.

    Returns:
        :class:`MatchedDirections`.
    """
    values = np.unique(labels) if values is None else np.asarray(values)
    k = len(values)
    if k < 2:
        raise ValueError(f"a factor needs at least 2 values for a target-versus-rest contrast, got {k}")
    idx = value_index(labels, values)
    x = l2_normalize(embeddings).astype(np.float64)  # (n, d)
    counts = np.bincount(idx, minlength=k)
    if np.any(counts == 0):
        raise ValueError(f"values without calibration images: {values[counts == 0].tolist()}")
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, idx, x)
    mu = _unit(sums / counts[:, None], "prototype")  # (k, d)
    rest = (mu.sum(axis=0, keepdims=True) - mu) / (k - 1)  # (k, d) mean of the others
    deltas = mu - rest
    norms = np.linalg.norm(deltas, axis=1)
    if np.any(norms == 0):
        raise ValueError(f"values whose prototype equals the rest mean: {values[norms == 0].tolist()}")
    return MatchedDirections(values, mu, rest, deltas, deltas / norms[:, None], norms, counts)


# ---------------------------------------------------------------------------------------------- AP, readouts
@dataclass(frozen=True)
class Readout:
    """Retrieval of one factor on one gallery: per-value AP, macro-mAP and image-wise factor-value top-1."""

    ap: np.ndarray  # (k,) full-gallery one-vs-rest AP per value
    macro_map: float  # mean of ap (NaN-ignoring)
    top1: float  # share of images whose highest-scoring value query is their own value (ties: 1/t credit)

    @classmethod
    def from_ap(cls, ap: np.ndarray, top1: float) -> Readout:
        """Build from per-value AP; macro-mAP ignores NaN values (NaN when all are)."""
        ap = np.asarray(ap, dtype=np.float64)
        return cls(ap, float(np.nanmean(ap)) if np.any(~np.isnan(ap)) else float("nan"), float(top1))

    def to_dict(self) -> dict[str, Any]:
        return {"ap": self.ap.tolist(), "macro_map": self.macro_map, "top1": self.top1}


def _readout(scores: np.ndarray, value_idx: np.ndarray, pos_index: Sequence[np.ndarray]) -> Readout:
    return Readout.from_ap(_ap_columns(scores, pos_index), mcq_credit(scores, value_idx).mean())


def readout(
    gallery: np.ndarray, labels: np.ndarray, queries: np.ndarray, values: Sequence[Any] | None = None
) -> Readout:
    """Explicit readout: cosine of every gallery image to every value query.

    Args:
        gallery: ``(n, d)`` image embeddings (normalised here).
        labels: ``(n,)`` value of each image.
        queries: ``(k, d)`` one query per value, in ``values`` order (normalised here).
        values: vocabulary order (default: sorted unique labels).

    Returns:
        :class:`Readout`.
    """
    values = np.unique(labels) if values is None else np.asarray(values)
    idx = value_index(labels, values)
    scores = l2_normalize(gallery).astype(np.float64) @ _unit(queries, "query").T  # (n, k)
    return _readout(scores, idx, [np.flatnonzero(idx == v) for v in range(len(values))])


# ---------------------------------------------------------------------------------------------- precomputed scores
@dataclass(frozen=True)
class SplitScores:
    """One split's gallery scored once against the native queries and one unit partner vector per value.

    Every pencil query ``norm(a q_v + b e_v)`` is read out from these without touching the embeddings again.
    """

    value_idx: np.ndarray  # (n,) value of each gallery image
    s_q: np.ndarray  # (n, k) gallery @ native queries
    s_e: np.ndarray  # (n, k) gallery @ partner vectors
    qe: np.ndarray  # (k, k) native queries @ partner vectors (diagonal: matched pairs)
    partner: str  # "direction" (d_v) or "prototype" (mu_v)
    groups: np.ndarray | None = None  # (n,) bootstrap groups (context-replica), optional
    pos_index: tuple[np.ndarray, ...] = field(init=False, repr=False)  # positives of each value

    def __post_init__(self) -> None:
        k = self.s_q.shape[1]
        if self.s_e.shape != self.s_q.shape or self.qe.shape != (k, k) or self.value_idx.shape != (len(self.s_q),):
            raise ValueError("inconsistent SplitScores shapes")
        object.__setattr__(self, "pos_index", tuple(np.flatnonzero(self.value_idx == v) for v in range(k)))

    @property
    def n_values(self) -> int:
        return self.s_q.shape[1]


def score_split(
    gallery: np.ndarray,
    value_idx: np.ndarray,
    queries: np.ndarray,
    partners: np.ndarray,
    partner: str = "direction",
    groups: np.ndarray | None = None,
) -> SplitScores:
    """Score a gallery once against native queries and partner vectors.

    Args:
        gallery: ``(n, d)`` image embeddings of one split (normalised here).
        value_idx: ``(n,)`` value index of each image (see :func:`value_index`).
        queries: ``(k, d)`` native queries; partners: ``(k, d)`` directions or prototypes (both normalised here).
        partner: ``"direction"`` or ``"prototype"``.
        groups: optional ``(n,)`` group label of each image for cluster bootstraps.

    Returns:
        :class:`SplitScores` with float64 scores.
    """
    if partner not in ("direction", "prototype"):
        raise ValueError(f"partner must be 'direction' or 'prototype', got {partner!r}")
    q, e = _unit(queries, "query"), _unit(partners, partner)
    g = l2_normalize(gallery)  # (n, d) float32; one matmul for both sets of vectors
    s = (g @ np.concatenate([q, e]).T.astype(np.float32)).astype(np.float64)  # (n, 2k)
    k = len(q)
    return SplitScores(
        np.asarray(value_idx, dtype=np.int64),
        s[:, :k],
        s[:, k:],
        q @ e.T,
        partner,
        None if groups is None else np.asarray(groups),
    )


def pencil_scores(
    split: SplitScores, a: float | np.ndarray, b: float | np.ndarray, assignment: np.ndarray | None = None
) -> np.ndarray:
    """Gallery cosines of the queries ``norm(a q_v + b e_{pi(v)})``.

    Args:
        split: precomputed scores.
        a, b: scalars or ``(k,)`` coefficients (per value).
        assignment: optional ``(k,)`` permutation ``pi`` pairing query ``v`` with partner ``pi(v)``
            (identity = matched; used by the mismatched-direction control).

    Returns:
        ``(n, k)`` scores; NaN columns where ``a q + b e = 0``.
    """
    k = split.n_values
    pi = np.arange(k) if assignment is None else np.asarray(assignment)
    a = np.broadcast_to(np.asarray(a, dtype=np.float64), (k,))
    b = np.broadcast_to(np.asarray(b, dtype=np.float64), (k,))
    qe = split.qe[np.arange(k), pi]
    norms = np.sqrt(np.maximum(a**2 + b**2 + 2 * a * b * qe, 0.0))  # |a q + b e| for unit q, e
    with np.errstate(divide="ignore", invalid="ignore"):
        s_e = split.s_e if assignment is None else split.s_e[:, pi]  # no (n, k) copy for the matched case
        return (split.s_q * a + s_e * b) / np.where(norms > 0, norms, np.nan)


def pencil_readout(
    split: SplitScores, a: float | np.ndarray, b: float | np.ndarray, assignment: np.ndarray | None = None
) -> Readout:
    """:class:`Readout` of the pencil queries ``norm(a q_v + b e_{pi(v)})`` (see :func:`pencil_scores`)."""
    return _readout(pencil_scores(split, a, b, assignment), split.value_idx, split.pos_index)


# ---------------------------------------------------------------------------------------------- selection
@dataclass(frozen=True)
class GridSelection:
    """A hyperparameter chosen on validation: macro-mAP first, then top-1, then the smaller grid value."""

    value: float  # chosen grid point
    macro_map: float  # validation macro-mAP there
    top1: float  # validation top-1 there
    grid: np.ndarray  # (g,) ascending grid
    macro_map_curve: np.ndarray  # (g,)
    top1_curve: np.ndarray  # (g,)


def best_index(primary: Sequence[float], secondary: Sequence[float], tol: float = SELECT_TOL) -> int:
    """Index of the best ``primary``; ties (within ``tol``) go to the best ``secondary``, then the first index.

    NaN counts as worst. This is the paper's selection rule once candidates are in preference order.
    """
    p = np.nan_to_num(np.asarray(primary, dtype=np.float64), nan=-np.inf)
    s = np.nan_to_num(np.asarray(secondary, dtype=np.float64), nan=-np.inf)
    best = p >= p.max() - tol
    best &= s >= s[best].max() - tol
    return int(np.flatnonzero(best)[0])


def select_on_grid(grid: np.ndarray, macro_map: np.ndarray, top1: np.ndarray) -> GridSelection:
    """Apply the paper's tie rule (macro-mAP, then top-1, then smaller value) to validation curves.

    Args:
        grid: ``(g,)`` candidate values; macro_map, top1: ``(g,)`` validation scores.
    """
    grid, m, t = (np.asarray(x, dtype=np.float64) for x in (grid, macro_map, top1))
    order = np.argsort(grid, kind="stable")
    grid, m, t = grid[order], m[order], t[order]
    i = best_index(m, t)  # grid ascending: first = smallest
    return GridSelection(float(grid[i]), float(m[i]), float(t[i]), grid, m, t)


def select_alpha(validation: SplitScores, grid: np.ndarray = ALPHA_GRID) -> GridSelection:
    """Choose the factor-level grounding strength on validation only.

    Args:
        validation: validation-split scores against native queries and matched *directions*. The test split is
            not an argument: nothing here can see it.
        grid: candidate alphas (default ``0, .05, ..., 8``).

    Returns:
        :class:`GridSelection` with the chosen alpha and the validation curves.
    """
    if validation.partner != "direction":
        raise ValueError(f"select_alpha needs direction scores, got partner={validation.partner!r}")
    grid = np.asarray(grid, dtype=np.float64)
    if grid.size == 0 or np.any(grid < 0):
        raise ValueError("the alpha grid must be non-empty and >= 0")
    reads = [pencil_readout(validation, 1.0, a) for a in grid]
    return select_on_grid(grid, np.array([r.macro_map for r in reads]), np.array([r.top1 for r in reads]))


@dataclass(frozen=True)
class AlphaEvaluation:
    """Native versus grounded readout of one split at an alpha fixed beforehand."""

    alpha: float
    native: Readout
    grounded: Readout

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "native": self.native.to_dict(), "grounded": self.grounded.to_dict()}


def evaluate_alpha(test: SplitScores, alpha: float) -> AlphaEvaluation:
    """Evaluate native and grounded queries on the test split at an already-chosen alpha."""
    if test.partner != "direction":
        raise ValueError(f"evaluate_alpha needs direction scores, got partner={test.partner!r}")
    return AlphaEvaluation(float(alpha), pencil_readout(test, 1.0, 0.0), pencil_readout(test, 1.0, alpha))


# ---------------------------------------------------------------------------------------------- app state
class GroundingState:
    """Everything one factor's alpha slider needs, computed once; :meth:`at_alpha` costs O(n k) plus k sorts.

    Args:
        embeddings: ``(n, d)`` image embeddings of the whole grid.
        labels: ``(n,)`` value of each image for this factor.
        queries: ``(k, d)`` native text queries in ``values`` order (see :func:`native_queries`).
        calibration, validation, test: ``(n,)`` disjoint boolean split masks.
        values: vocabulary order (default: sorted unique labels).
        groups: optional ``(n,)`` context-replica group of each image (for bootstraps).
    """

    def __init__(
        self,
        embeddings: np.ndarray,
        labels: np.ndarray,
        queries: np.ndarray,
        calibration: np.ndarray,
        validation: np.ndarray,
        test: np.ndarray,
        values: Sequence[Any] | None = None,
        groups: np.ndarray | None = None,
    ) -> None:
        cal, val, tst = (np.asarray(m, dtype=bool) for m in (calibration, validation, test))
        labels = np.asarray(labels)
        if not (cal.shape == val.shape == tst.shape == labels.shape == (len(embeddings),)):
            raise ValueError("split masks and labels must all have shape (n,) matching embeddings")
        if np.any(cal & val) or np.any(cal & tst) or np.any(val & tst):
            raise ValueError("calibration, validation and test masks must be disjoint")
        self.values = np.unique(labels) if values is None else np.asarray(values)
        if len(queries) != len(self.values):
            raise ValueError(f"{len(queries)} queries for {len(self.values)} values {self.values.tolist()}")
        self.directions = matched_directions(embeddings[cal], labels[cal], self.values)
        self.queries = _unit(queries, "query")  # (k, d)
        self.c = np.sum(self.queries * self.directions.directions, axis=1)  # (k,) q_v . d_v

        def split(mask: np.ndarray, partners: np.ndarray, partner: str) -> SplitScores:
            return score_split(
                embeddings[mask],
                value_index(labels[mask], self.values),
                self.queries,
                partners,
                partner,
                None if groups is None else np.asarray(groups)[mask],
            )

        self.validation = split(val, self.directions.directions, "direction")
        self.test = split(tst, self.directions.directions, "direction")
        self.test_prototypes = split(tst, self.directions.prototypes, "prototype")
        self.native_test = pencil_readout(self.test, 1.0, 0.0)  # alpha-independent, cached
        self.prototype_test = pencil_readout(self.test_prototypes, 0.0, 1.0)  # image-prototype readout

    def select_alpha(self, grid: np.ndarray = ALPHA_GRID) -> GridSelection:
        """Validation-only alpha selection (see :func:`select_alpha`)."""
        return select_alpha(self.validation, grid)

    def at_alpha(self, alpha: float) -> dict[str, Any]:
        """Test-gallery readout at one alpha (for the slider; exploration, not selection).

        Returns:
            dict with ``alpha``, ``values``, per-value ``ap_native`` / ``ap_grounded``, ``map_native`` /
            ``map_grounded``, ``top1_native`` / ``top1_grounded``, closed-form ``margin_native`` /
            ``margin_grounded``, ``c`` (= q . d) and ``alpha_star`` (= -c where -1 < c < 0, else ``None``: no
            crossing), all as plain Python numbers/lists.
        """
        alpha = float(alpha)
        if not np.isfinite(alpha) or alpha < 0:
            raise ValueError(f"alpha must be a finite number >= 0, got {alpha}")
        g = pencil_readout(self.test, 1.0, alpha)
        dn = self.directions.delta_norms
        margin = grounded_margin(self.queries, self.directions.deltas, alpha)  # (k,), O(k d)
        return {
            "alpha": alpha,
            "values": self.values.tolist(),
            "ap_native": self.native_test.ap.tolist(),
            "ap_grounded": g.ap.tolist(),
            "map_native": self.native_test.macro_map,
            "map_grounded": g.macro_map,
            "top1_native": self.native_test.top1,
            "top1_grounded": g.top1,
            "margin_native": (dn * self.c).tolist(),
            "margin_grounded": margin.tolist(),
            "c": self.c.tolist(),
            "alpha_star": crossings_json(zero_crossing(self.c)),
        }

    def margin_curve(self, alphas: np.ndarray) -> dict[str, Any]:
        """Closed-form calibration margins over ``alphas``: ``margins`` is ``(m, k)``, ``alpha_star`` ``(k,)``
        (``None`` where a value's margin has no zero crossing)."""
        alphas = np.asarray(alphas, dtype=np.float64).reshape(-1)
        m = grounded_margin(self.queries, self.directions.deltas, alphas[:, None])
        return {
            "alphas": alphas.tolist(),
            "values": self.values.tolist(),
            "margins": m.tolist(),
            "alpha_star": crossings_json(zero_crossing(self.c)),
        }


def random_state(n_images: int = 23040, dim: int = 1024, n_values: int = 12, seed: int = 0) -> GroundingState:
    """A :class:`GroundingState` on random clustered embeddings (for benchmarks): ``n_images`` test images (the
    whole FactorAtlas size by default, a worst case), calibration and validation ``n_images // 4`` each on top."""
    rng = np.random.default_rng(seed)
    n_side = max(n_images // 4, 2 * n_values)
    n = n_images + 2 * n_side
    centres = rng.standard_normal((n_values, dim)).astype(np.float32)
    labels = rng.integers(0, n_values, n)
    labels[:n_values] = np.arange(n_values)  # every value present in calibration
    emb = centres[labels] * 0.3 + rng.standard_normal((n, dim)).astype(np.float32)
    split = np.repeat([0, 1, 2], [n_side, n_side, n_images])
    queries = centres + rng.standard_normal((n_values, dim)).astype(np.float32)
    names = np.array([f"value{i:02d}" for i in range(n_values)])
    return GroundingState(emb, names[labels], queries, split == 0, split == 1, split == 2, values=names)


def bench_slider(
    n_images: int = 23040, dim: int = 1024, n_values: int = 12, repeats: int = 20, seed: int = 0
) -> dict[str, Any]:
    """Median wall time of :meth:`GroundingState.at_alpha` on random data.

    The *test* gallery has ``n_images`` images (the whole FactorAtlas size, a worst case); calibration and
    validation get ``n_images // 4`` each on top.

    Returns:
        dict with ``median_ms``, ``min_ms``, ``build_s`` and the sizes.
    """
    t0 = time.perf_counter()
    state = random_state(n_images, dim, n_values, seed)
    build = time.perf_counter() - t0
    times, cpu = [], []
    for i in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        state.at_alpha(0.05 * (i + 1))
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    # Wall time includes waiting for a core on a busy machine; CPU time is what the move itself costs.
    return {
        "median_ms": 1e3 * float(np.median(times)),
        "min_ms": 1e3 * float(np.min(times)),
        "cpu_median_ms": 1e3 * float(np.median(cpu)),
        "build_s": build,
        "n_test_images": n_images,
        "dim": dim,
        "n_values": n_values,
        "repeats": repeats,
        "load_average_1min": _load_average(),
    }


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None
