"""SABER large-gallery retrieval: every query against the pooled candidates of all questions.

Positives of a query are the gallery candidates whose binding set contains all of the query's bindings, so a
nested-chain query has its own preserve candidate plus the preserve candidates of later, larger scenes in
its chain. Diagnostics separate binding errors from unrelated-scene errors:

- ``subset_outranks_exact``: share of queries (with such a candidate) where a candidate holding only *part* of
  the query's bindings scores above the exact match (the query's own preserve candidate);
- ``superset_outranks_exact``: the same for candidates holding *all* query bindings plus more;
- ``own_question_top4``: share of queries whose exact match and its three swaps fill the top four.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.data.schema import MCQ
from bindlab.encoders.base import Encoder, EncoderError
from bindlab.eval.mcq import PAIRINGS, embed_questions
from bindlab.eval.metrics import average_precision, rank_order, recall_at_k

Progress = Callable[[float, str], None]


def relevance(questions: Sequence[MCQ]) -> dict[str, np.ndarray]:
    """Binding-set relations between each query and each gallery candidate (gallery = candidates in order).

    Returns:
        ``positive`` (q, g): candidate contains all query bindings; ``exact`` (q, g): the query's own preserve
        candidate; ``subset`` (q, g): candidate bindings a non-empty strict subset of the query's;
        ``superset`` (q, g): strict superset; ``own`` (q, g): the query's own four candidates.
    """
    from scipy import sparse

    gallery = [c.binding_set() for q in questions for c in q.candidates]
    qsets = [q.query.binding_set() for q in questions]
    n_q, n_g = len(questions), len(gallery)
    # Index bindings to ints so the set relations become one sparse count matrix.
    vocab = {b: i for i, b in enumerate(sorted({b for s in gallery + qsets for b in s}))}

    def incidence(sets: list[frozenset]) -> sparse.csr_matrix:
        rows = [i for i, s in enumerate(sets) for _ in s]
        cols = [vocab[b] for s in sets for b in s]
        return sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(len(sets), len(vocab)))

    G, Q = incidence(gallery), incidence(qsets)
    shared = (Q @ G.T).toarray()  # (q, g) number of shared bindings
    q_size = np.asarray(Q.sum(1))
    g_size = np.asarray(G.sum(1)).T
    positive = shared == q_size
    exact = np.zeros((n_q, n_g), dtype=bool)
    own = np.zeros((n_q, n_g), dtype=bool)
    for i, q in enumerate(questions):
        own[i, 4 * i : 4 * i + 4] = True
        exact[i, 4 * i + q.answer] = True
    return {
        "positive": positive,
        "exact": exact,
        "subset": (shared == g_size) & (g_size < q_size) & (g_size > 0),
        "superset": positive & (g_size > q_size),
        "own": own,
    }


def _outranks(scores: np.ndarray, mask: np.ndarray, exact_score: np.ndarray) -> float | None:
    """Share of rows having any masked item, where some masked item scores strictly above the exact match."""
    has = mask.any(1)
    if not has.any():
        return None
    best = np.where(mask, scores, -np.inf).max(1)
    return float(np.mean(best[has] > exact_score[has]))


def evaluate_retrieval(
    questions: Sequence[MCQ],
    root: str | Path,
    encoder: Encoder,
    pairings: Sequence[str] = ("tt",),
    progress: Progress | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """mAP (all / independent / nested), R@1, R@5 and containment diagnostics per pairing.

    Returns:
        ``({pairing: summary}, per-query rows)``.
    """
    needed = {m for p in pairings for m in PAIRINGS[p]}
    if needed - set(encoder.modalities):
        raise EncoderError(
            f"{encoder.id} cannot embed {sorted(needed - set(encoder.modalities))} needed by pairings {list(pairings)}"
        )
    emb = {}
    for i, m in enumerate(sorted(needed, reverse=True)):
        if progress:
            progress(i / max(len(needed), 1), f"embedding {m}s with {encoder.id}")
        emb[m] = embed_questions(questions, root, encoder, m)
    rel = relevance(questions)
    subset = np.array([q.subset for q in questions])
    results: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for p in pairings:
        qm, gm = PAIRINGS[p]
        queries = emb[qm][0]  # (q, d)
        gallery = emb[gm][1].reshape(-1, emb[gm][1].shape[-1])  # (q*4, d)
        scores = queries @ gallery.T  # (q, g)
        order = rank_order(scores)  # sort once, reuse for AP, recall and top-4
        ap = average_precision(scores, rel["positive"], order)
        r1 = recall_at_k(scores, rel["positive"], 1, order)
        r5 = recall_at_k(scores, rel["positive"], 5, order)
        exact_score = scores[rel["exact"]]  # (q,)
        top4 = order[:, :4]
        own_top4 = np.take_along_axis(rel["own"], top4, axis=1).all(1)
        rank_exact = (scores > exact_score[:, None]).sum(1) + 1
        results[p] = {
            "map": {
                "all": float(np.mean(ap)),
                "independent": float(np.mean(ap[subset == "independent"])) if (subset == "independent").any() else None,
                "nested": float(np.mean(ap[subset == "nested"])) if (subset == "nested").any() else None,
            },
            "map_by_n": {
                str(n): float(np.mean(ap[[q.n_objects == n for q in questions]]))
                for n in sorted({q.n_objects for q in questions})
            },
            "r@1": float(np.mean(r1)),
            "r@5": float(np.mean(r5)),
            "containment": {
                "subset_outranks_exact": _outranks(scores, rel["subset"], exact_score),
                "superset_outranks_exact": _outranks(scores, rel["superset"], exact_score),
                "own_question_top4": float(np.mean(own_top4)),
                "mean_positives": float(rel["positive"].sum(1).mean()),
            },
            "n_queries": len(questions),
            "gallery_size": int(gallery.shape[0]),
        }
        for i, q in enumerate(questions):
            rows.append(
                {
                    "id": q.id,
                    "pairing": p,
                    "n_objects": q.n_objects,
                    "subset": q.subset,
                    "ap": float(ap[i]),
                    "r@1": float(r1[i]),
                    "r@5": float(r5[i]),
                    "n_positives": int(rel["positive"][i].sum()),
                    "rank_of_exact": int(rank_exact[i]),
                }
            )
    if progress:
        progress(1.0, "done")
    return results, rows
