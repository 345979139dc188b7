"""Global alignment baselines for matched grounding (FactorAtlas §3.4, Appendix C.5/E.3): a full-rank linear map.

The aligned native query is ``q^G = norm(A q)`` with a bias-free ``A`` (``d x d``) initialised to the identity;
the encoders stay frozen. ``A`` is learnt either per factor (``A_f``) or shared across the three factors
(``A_shared``) from *calibration* image-caption pairs with factor-replacement hard negatives:

- captions alternate the paper's two templates, "a {pattern} {hue} {shape} object" and "a {hue} {shape} with a
  {pattern} surface" (one per image, by image position);
- the hard negatives of an image are its caption with one factor value replaced, cyclically, by each other value
  of that factor (``A_f``: factor ``f`` only; ``A_shared``: all three factors); the batch's other positives are
  negatives too;
- loss: softmax cross-entropy of ``x . norm(A t) / T`` over the positive and the negatives (``T`` = 0.07).

AdamW (weight decay 1e-5, batch 256) for each learning rate in ``{1e-4, 3e-4, 1e-3}``; the checkpoint (identity
included, as epoch 0 of every run) is chosen on *validation* by macro-mAP of the aligned native queries, then
top-1, then the earlier candidate. Nothing here takes test images: :func:`fit_global_map` receives calibration and
validation arrays only. Matched grounding then runs on top of ``A q`` (its directions and alpha re-estimated).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bindlab.analysis.grounding import best_index, readout

FACTOR_ORDER: tuple[str, ...] = ("shape", "hue", "pattern")  # column order of a cells array
CAPTION_TEMPLATES: tuple[str, str] = ("a {pattern} {hue} {shape} object", "a {hue} {shape} with a {pattern} surface")
LEARNING_RATES: tuple[float, ...] = (1e-4, 3e-4, 1e-3)
EPOCHS = 30
BATCH_SIZE = 256
WEIGHT_DECAY = 1e-5
TEMPERATURE = 0.07
SEED = 20260820  # the paper's seed
SCOPES = ("shared", "factor")


def caption_texts(vocab: dict[str, Sequence[str]]) -> list[str]:
    """Every caption of the grid vocabulary, in :func:`caption_table` order (template, shape, hue, pattern)."""
    return [
        t.format(shape=s, hue=h, pattern=p)
        for t in CAPTION_TEMPLATES
        for s in vocab["shape"]
        for h in vocab["hue"]
        for p in vocab["pattern"]
    ]


def caption_table(embeddings: np.ndarray, vocab: dict[str, Sequence[str]]) -> np.ndarray:
    """Reshape :func:`caption_texts` embeddings to ``(2, n_shape, n_hue, n_pattern, d)``."""
    sizes = [len(vocab[f]) for f in FACTOR_ORDER]
    return np.asarray(embeddings, dtype=np.float32).reshape(len(CAPTION_TEMPLATES), *sizes, -1)


@dataclass(frozen=True)
class AlignmentFit:
    """A global map chosen on validation, with its training record."""

    scope: str  # "shared" or "factor"
    factors: tuple[str, ...]  # factors whose hard negatives and validation readouts it used
    matrix: np.ndarray  # (d, d) float64 A; aligned query = A q (normalise afterwards)
    lr: float | None  # learning rate of the chosen checkpoint (None: the identity won)
    epoch: int  # its epoch (0 = identity)
    validation: dict[str, float]  # {"macro_map", "top1"} of the aligned native queries, mean over factors
    identity_validation: dict[str, float]  # the same for A = I
    loss: dict[str, list[float]] = field(default_factory=dict)  # lr -> calibration loss per epoch (epoch 0 first)
    candidates: list[dict[str, Any]] = field(default_factory=list)  # every checkpoint's validation scores

    def apply(self, queries: np.ndarray) -> np.ndarray:
        """``A q`` for ``(k, d)`` queries (float64, not normalised: ``norm`` comes with the readout)."""
        return np.asarray(queries, dtype=np.float64) @ self.matrix.T

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "factors": list(self.factors),
            "lr": self.lr,
            "epoch": self.epoch,
            "validation": self.validation,
            "identity_validation": self.identity_validation,
            "loss": self.loss,
            "candidates": self.candidates,
            "distance_from_identity": float(np.linalg.norm(self.matrix - np.eye(len(self.matrix)))),
        }


def _negatives(cells: np.ndarray, sizes: Sequence[int], factors: Sequence[int]) -> np.ndarray:
    """``(n, m, 3)`` cells of the hard negatives: each factor in ``factors`` replaced by each other value."""
    out = []
    for f in factors:
        for shift in range(1, sizes[f]):
            neg = cells.copy()
            neg[:, f] = (neg[:, f] + shift) % sizes[f]
            out.append(neg)
    return np.stack(out, axis=1)


def validation_score(
    val_x: np.ndarray,
    val_cells: np.ndarray,
    queries: dict[str, np.ndarray],
    factors: Sequence[str],
    matrix: np.ndarray | None = None,
) -> dict[str, float]:
    """Mean over ``factors`` of the validation macro-mAP and top-1 of the (aligned) native queries."""
    maps, tops = [], []
    for f in factors:
        q = np.asarray(queries[f], dtype=np.float64)
        if matrix is not None:
            q = q @ matrix.T
        col = FACTOR_ORDER.index(f)
        r = readout(val_x, val_cells[:, col], q, values=np.arange(len(q)))
        maps.append(r.macro_map)
        tops.append(r.top1)
    return {"macro_map": float(np.mean(maps)), "top1": float(np.mean(tops))}


def fit_global_map(
    cal_x: np.ndarray,
    cal_cells: np.ndarray,
    val_x: np.ndarray,
    val_cells: np.ndarray,
    captions: np.ndarray,
    queries: dict[str, np.ndarray],
    scope: str,
    factor: str | None = None,
    *,
    lrs: Sequence[float] = LEARNING_RATES,
    epochs: int = EPOCHS,
    batch_size: int = BATCH_SIZE,
    temperature: float = TEMPERATURE,
    seed: int = SEED,
) -> AlignmentFit:
    """Train ``A`` on calibration pairs and pick the checkpoint on validation.

    Args:
        cal_x, val_x: ``(n, d)`` calibration / validation image embeddings (normalised here).
        cal_cells, val_cells: ``(n, 3)`` value positions (shape, hue, pattern) of each image.
        captions: ``(2, n_shape, n_hue, n_pattern, d)`` caption embeddings (:func:`caption_table`).
        queries: factor -> ``(k, d)`` native queries, rows in value-position order.
        scope: ``"shared"`` (hard negatives and validation over all factors in ``queries``) or ``"factor"``.
        factor: the factor of an ``A_f`` (required with ``scope="factor"``).
        lrs, epochs, batch_size, temperature, seed: the optimisation (defaults: the paper's, temperature ours).

    Returns:
        :class:`AlignmentFit`; the identity is a candidate, so a map that does not help on validation stays ``I``.
    """
    import torch

    if scope not in SCOPES:
        raise ValueError(f"alignment scope must be one of {SCOPES}, got {scope!r}")
    if scope == "factor" and factor not in queries:
        raise ValueError(f"a factor map needs one of {sorted(queries)} as its factor, got {factor!r}")
    factors = tuple(f for f in FACTOR_ORDER if f in queries) if scope == "shared" else (str(factor),)
    d = captions.shape[-1]
    sizes = captions.shape[1:4]
    neg = _negatives(np.asarray(cal_cells), sizes, [FACTOR_ORDER.index(f) for f in factors])  # (n, m, 3)
    template = np.arange(len(cal_x)) % len(CAPTION_TEMPLATES)
    flat = torch.as_tensor(captions.reshape(-1, d), dtype=torch.float32)
    stride = np.array([sizes[0] * sizes[1] * sizes[2], sizes[1] * sizes[2], sizes[2], 1])

    def cap_index(cells: np.ndarray, tmpl: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(tmpl * stride[0] + cells @ stride[1:], dtype=torch.long)

    pos_i = cap_index(np.asarray(cal_cells), template)  # (n,)
    neg_i = cap_index(neg, template[:, None])  # (n, m)
    x = torch.nn.functional.normalize(torch.as_tensor(np.asarray(cal_x), dtype=torch.float32), dim=-1)

    def loss_of(a: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        t = torch.nn.functional.normalize(flat @ a.T, dim=-1)
        xb = x[rows]
        in_batch = xb @ t[pos_i[rows]].T  # (b, b): positives on the diagonal, other images' captions off it
        hard = torch.einsum("bd,bmd->bm", xb, t[neg_i[rows]])  # (b, m)
        logits = torch.cat([in_batch, hard], dim=1) / temperature
        return torch.nn.functional.cross_entropy(logits, torch.arange(len(rows)))

    def full_loss(a: torch.Tensor) -> float:  # calibration loss over fixed consecutive batches (comparable epochs)
        with torch.no_grad():
            parts = [(float(loss_of(a, rows)), len(rows)) for rows in torch.arange(len(x)).split(batch_size)]
        return sum(v * n for v, n in parts) / len(x)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a d x d map: more threads only fight over the cores
    try:
        return _train(
            torch,
            loss_of,
            full_loss,
            val_x,
            val_cells,
            queries,
            scope,
            factors,
            d,
            lrs,
            epochs,
            len(x),
            batch_size,
            seed,
        )
    finally:
        torch.set_num_threads(threads)


def _train(
    torch: Any,
    loss_of: Any,
    full_loss: Any,
    val_x: np.ndarray,
    val_cells: np.ndarray,
    queries: dict[str, np.ndarray],
    scope: str,
    factors: tuple[str, ...],
    d: int,
    lrs: Sequence[float],
    epochs: int,
    n: int,
    batch_size: int,
    seed: int,
) -> AlignmentFit:
    """AdamW from the identity for each learning rate; every epoch's map is a validation candidate."""
    ident = validation_score(val_x, val_cells, queries, factors)
    candidates: list[dict[str, Any]] = [{"lr": None, "epoch": 0, **ident}]
    matrices: list[np.ndarray] = [np.eye(d)]
    losses: dict[str, list[float]] = {}
    for lr in lrs:
        gen = torch.Generator().manual_seed(seed)
        a = torch.nn.Parameter(torch.eye(d))
        opt = torch.optim.AdamW([a], lr=lr, weight_decay=WEIGHT_DECAY)
        curve = [full_loss(a)]
        for epoch in range(1, epochs + 1):
            for rows in torch.randperm(n, generator=gen).split(batch_size):
                opt.zero_grad()
                loss_of(a, rows).backward()
                opt.step()
            curve.append(full_loss(a))
            m = a.detach().double().numpy().copy()
            candidates.append({"lr": lr, "epoch": epoch, **validation_score(val_x, val_cells, queries, factors, m)})
            matrices.append(m)
        losses[f"{lr:g}"] = curve
    best = best_index([c["macro_map"] for c in candidates], [c["top1"] for c in candidates])
    pick = candidates[best]
    return AlignmentFit(
        scope,
        factors,
        matrices[best],
        pick["lr"],
        pick["epoch"],
        {"macro_map": pick["macro_map"], "top1": pick["top1"]},
        ident,
        losses,
        candidates,
    )
