"""A phrase metric learnt by ranking: where the phrase targets of ``--arch lit`` must put a scene so that its own
captions prefer it to its binding twin (``train toy --lit-target phrases --target-rank-steps N``).

The phrase targets (:func:`bindlab.train.toy.lit.phrase_targets`) put a scene at ``W x``: its object phrases'
embeddings summed (``x``, :func:`bindlab.train.toy.lit.phrase_vectors`) in a fixed metric ``W``, the inverse of the
captions' within-scene covariance. That metric says which directions captions of one scene share; it does not ask
the question the image MCQs ask. A text→image (ti) answer is right when the query caption ``t`` scores its scene's
point above the binding twin's, ``t . (y_s - y_t) > 0`` (``y`` the unit targets); an image→text (it) answer when
``y_s . (t_s - t_t) > 0``. With the whitened metric the first holds for about half of the swaps (MiniLM's captions
of a scene and of its swap differ in few directions, and the phrase difference barely points along them).

:func:`ranked_metric` learns ``M`` (d x d, started from ``W``) on the training pool's cached captions and binding
twins: for a batch of (scene, twin) pairs and one caption of each (the same wording), a logistic loss on the four
margins above (ti and it, both ways round), scaled by :data:`RANK_SCALE`, plus :data:`RANK_NCE_WEIGHT` of InfoNCE
between the captions and the batch's scene points (so the points stay where captions retrieve them among other
scenes, not only ahead of their twins). Only training scenes and their captions are used; held-out pairs never
reach it (their phrases are not in the run's table). A share :data:`RANK_VALIDATION` of the pairs is kept out and
scored before and after, so the record says what the metric does on pairs it did not fit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

RANK_BATCH = 256  # (scene, twin) pairs per step
RANK_LR = 1e-3  # Adam
RANK_SCALE = 30.0  # margins (cosine differences, ~0.01-0.1) times this inside the logistic loss
RANK_NCE_WEIGHT = 0.5  # weight of InfoNCE between captions and scene points
RANK_NCE_SCALE = 20.0  # its inverse temperature
RANK_VALIDATION = 0.05  # share of the pairs kept out to score the metric


@dataclass
class RankedMetric:
    """The learnt ``metric`` (d, d) float64 (scale is arbitrary: the targets are normalised) and what it does on
    the kept-out pairs: ``before``/``after`` = shares of (caption, pair) decisions ranked right, ``{"ti", "it"}``."""

    metric: np.ndarray
    steps: int
    seconds: float
    pairs: int
    before: dict[str, float]
    after: dict[str, float]

    def record(self) -> dict:
        return {
            "steps": self.steps,
            "seconds": round(self.seconds, 1),
            "pairs": self.pairs,
            "validation_before": self.before,
            "validation_after": self.after,
        }


def twin_margins(ys, yt, ts, tt):
    """The four twin decisions as margins, stacked (4, ...) (torch tensors, unit rows, broadcast over the leading
    axes): ti ``ts . (ys - yt)`` and ``tt . (yt - ys)``, it ``ys . (ts - tt)`` and ``yt . (tt - ts)``, for points
    ``ys``/``yt`` of scenes and their twins and their captions ``ts``/``tt`` (the same wording); a decision is right
    when its margin is positive."""
    import torch

    return torch.stack(
        [
            (ts * (ys - yt)).sum(-1),
            (tt * (yt - ys)).sum(-1),  # ti, both ways round
            (ys * (ts - tt)).sum(-1),
            (yt * (tt - ts)).sum(-1),
        ]
    )  # it, both ways round


def twin_terms(ys: np.ndarray, yt: np.ndarray, ts: np.ndarray, tt: np.ndarray) -> dict[str, np.ndarray]:
    """The four :func:`twin_margins` taken apart (numpy, unit rows, broadcast over leading axes): the *binding* part
    ``I = (ts - tt) . (ys - yt) / 2``, shared by all four; the *image bias* ``B = (ts + tt) / 2 . (ys - yt)``, how
    much better one image matches the pair's common words whatever the binding; the *text bias*
    ``T = (ys + yt) / 2 . (ts - tt)``. The text->image margins are ``I + B`` and ``I - B``, the image->text ones
    ``I + T`` and ``I - T``: a decision is right both ways round only when its bias is smaller than ``I``."""
    d_img, d_txt = ys - yt, ts - tt
    return {
        "binding": (d_txt * d_img).sum(-1) / 2,
        "image_bias": ((ts + tt) / 2 * d_img).sum(-1),
        "text_bias": ((ys + yt) / 2 * d_txt).sum(-1),
    }


def twin_ranking(
    points: np.ndarray, twin_points: np.ndarray, captions: np.ndarray, twin_captions: np.ndarray
) -> dict[str, float]:
    """Shares of decisions ranked right (:func:`twin_margins` > 0) by unit ``points``/``twin_points`` (n, d) of scenes
    and their twins, with their captions (n, k, d; caption j of the twin worded as caption j of the scene): ti = a
    caption scores its own scene's point above the other's; it = a point scores its own caption above the other's
    (both ways round)."""
    import torch

    ys, yt = (torch.as_tensor(p, dtype=torch.float64)[:, None] for p in (points, twin_points))
    ts, tt = (torch.as_tensor(c, dtype=torch.float64) for c in (captions, twin_captions))
    right = twin_margins(ys, yt, ts, tt) > 0
    return {"ti": round(float(right[:2].double().mean()), 4), "it": round(float(right[2:].double().mean()), 4)}


def twin_rank_loss(ys, yt, ts, tt, scale: float = RANK_SCALE):
    """Mean logistic loss ``softplus(-scale * margin)`` over the four :func:`twin_margins` of each row (torch
    tensors, (b, d)). The fit of :func:`ranked_metric`, and ``train toy --image-rank-weight`` on the image
    embeddings themselves."""
    import torch.nn.functional as F

    return F.softplus(-scale * twin_margins(ys, yt, ts, tt)).mean()


def ranked_metric(
    vectors: np.ndarray,
    twin_vectors: np.ndarray,
    captions: np.ndarray,
    twin_captions: np.ndarray,
    init: np.ndarray,
    steps: int,
    seed: int = 0,
    lr: float = RANK_LR,
) -> RankedMetric:
    """Learn the ranked phrase metric (module docstring).

    Args:
        vectors, twin_vectors: (n, d) phrase vectors (:func:`bindlab.train.toy.lit.phrase_vectors`) of scenes and of
            their binding twins; rows with NaN (no twin) are skipped.
        captions, twin_captions: (n, k, d) unit embeddings of the scenes' and the twins' cached captions.
        init: (d, d) the metric to start from (the within-scene whitener).
        steps: optimizer steps (at least 1).
        seed: fixes the kept-out pairs and the batches.
        lr: Adam's learning rate (on the metric scaled to unit mean diagonal).
    """
    import torch
    import torch.nn.functional as F

    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    keep = ~(np.isnan(vectors).any(axis=1) | np.isnan(twin_vectors).any(axis=1))
    rows = np.flatnonzero(keep)
    if len(rows) < 2:
        raise ValueError("the ranked metric needs at least 2 scenes with a binding twin")
    rng = np.random.default_rng(seed)
    rows = rng.permutation(rows)
    n_val = max(1, int(round(len(rows) * RANK_VALIDATION)))
    val = rows[:n_val]
    fit = rows[n_val:] if len(rows) > n_val else rows
    x, xt = (torch.as_tensor(v, dtype=torch.float32) for v in (vectors, twin_vectors))
    c, ct = (torch.as_tensor(v, dtype=torch.float32) for v in (captions, twin_captions))
    w0 = torch.as_tensor(init, dtype=torch.float32)
    metric = torch.nn.Parameter(w0 / w0.diagonal().mean())  # scale only conditions Adam

    def points(v: torch.Tensor) -> torch.Tensor:
        return F.normalize(v @ metric, dim=-1)

    def score() -> dict[str, float]:
        with torch.no_grad():
            return twin_ranking(points(x[val]).numpy(), points(xt[val]).numpy(), c[val].numpy(), ct[val].numpy())

    before = score()
    opt = torch.optim.Adam([metric], lr=lr)
    gen = torch.Generator().manual_seed(seed)
    fit_t = torch.as_tensor(fit)
    t0 = time.perf_counter()
    for _ in range(steps):
        b = fit_t[torch.randint(len(fit_t), (min(RANK_BATCH, len(fit_t)),), generator=gen)]
        k = torch.randint(c.shape[1], (len(b),), generator=gen)
        ys, yt = points(x[b]), points(xt[b])
        ts = c[b, k]
        logits = RANK_NCE_SCALE * ts @ ys.t()
        labels = torch.arange(len(b))
        nce = 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels))
        loss = twin_rank_loss(ys, yt, ts, ct[b, k]) + RANK_NCE_WEIGHT * nce
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    seconds = time.perf_counter() - t0
    return RankedMetric(metric.detach().double().numpy(), steps, seconds, int(len(rows)), before, score())


__all__ = [
    "RankedMetric",
    "ranked_metric",
    "twin_margins",
    "twin_rank_loss",
    "twin_ranking",
    "twin_terms",
    "RANK_BATCH",
    "RANK_LR",
    "RANK_SCALE",
    "RANK_NCE_WEIGHT",
    "RANK_NCE_SCALE",
    "RANK_VALIDATION",
]
