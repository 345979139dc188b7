"""SABER MCQ evaluation: embed questions once per modality, score every pairing, aggregate by N and subset.

A pairing ``XY`` puts the query in modality X and the candidates in modality Y (t = text, i = image).
:func:`evaluate_mcq` embeds and scores :data:`SCORE_CHUNK` questions at a time and keeps only their ``(q, 4)``
scores, so its memory does not grow with the file: 5,000 questions with ``bow`` (4,096 dimensions) would otherwise
hold ~410 MB per copy of the vectors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.data.saber_images import require_images
from bindlab.data.schema import MCQ
from bindlab.encoders.base import Encoder, EncoderError
from bindlab.encoders.service import embed_image_files, embed_texts
from bindlab.eval.metrics import bootstrap_ci, mcq_credit

PAIRINGS: dict[str, tuple[str, str]] = {
    "tt": ("text", "text"),
    "ti": ("text", "image"),
    "it": ("image", "text"),
    "ii": ("image", "image"),
}

Progress = Callable[[float, str], None]
SCORE_CHUNK = 256  # questions embedded and scored at once: 1,280 texts, ~21 MB of float32 at 4,096 dimensions


def parse_pairings(spec: str | Sequence[str]) -> list[str]:
    """``"tt,ti"`` -> ``["tt", "ti"]``; raises ValueError listing the valid pairings."""
    parts = [p.strip().lower() for p in (spec.split(",") if isinstance(spec, str) else spec) if p.strip()]
    bad = [p for p in parts if p not in PAIRINGS]
    if bad or not parts:
        raise ValueError(f"unknown pairing(s) {bad or spec!r}; choose from {list(PAIRINGS)} (comma-separated)")
    return list(dict.fromkeys(parts))


def embed_questions(questions: Sequence[MCQ], root: str | Path, encoder: Encoder,
                    modality: str) -> tuple[np.ndarray, np.ndarray]:
    """Embed every query and candidate of ``questions`` in one modality, in one cached batch.

    Returns:
        ``(queries (q, d), candidates (q, 4, d))``.
    """
    items = [it for q in questions for it in (q.query, *q.candidates)]
    if modality == "text":
        vecs = embed_texts(encoder, [it.text for it in items])
    elif modality == "image":
        require_images(questions, root)  # names every missing file before any model runs
        vecs = embed_image_files(encoder, [Path(root) / it.image for it in items])
    else:
        raise ValueError(f"unknown modality {modality!r}")
    vecs = vecs.reshape(len(questions), 5, -1)
    return vecs[:, 0], vecs[:, 1:]


def score_mcq(queries: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Cosine scores of unit vectors: ``(q, d)`` x ``(q, 4, d)`` -> ``(q, 4)``."""
    return np.einsum("qd,qkd->qk", queries, candidates)


def summarize(credit: np.ndarray, questions: Sequence[MCQ]) -> dict[str, Any]:
    """Accuracy overall, by number of objects and by subset, with a bootstrap 95 % interval."""
    by_n: dict[str, list[float]] = defaultdict(list)
    by_subset: dict[str, list[float]] = defaultdict(list)
    for c, q in zip(credit, questions, strict=False):
        by_n[str(q.n_objects)].append(float(c))
        by_subset[q.subset].append(float(c))
    lo, hi = bootstrap_ci(credit)
    return {
        "accuracy": float(np.mean(credit)),
        "ci95": [lo, hi],
        "by_n": {k: float(np.mean(v)) for k, v in sorted(by_n.items(), key=lambda kv: int(kv[0]))},
        "by_subset": {k: float(np.mean(v)) for k, v in sorted(by_subset.items())},
        "n": int(len(credit)),
        "chance": 0.25,
    }


def item_rows(questions: Sequence[MCQ], scores: np.ndarray, credit: np.ndarray, pairing: str) -> list[dict[str, Any]]:
    """Per-question result rows (``eval mcq --per-item``, the Browse export): id, pairing, N, subset, roles, scores,
    answer, predicted (argmax) and credit. ``scores`` is ``(q, 4)``, ``credit`` ``(q,)``."""
    return [{"id": q.id, "pairing": pairing, "n_objects": q.n_objects, "subset": q.subset,
             "roles": [x.role for x in q.candidates], "scores": [float(v) for v in s],
             "answer": q.answer, "predicted": int(np.argmax(s)), "credit": float(c)}
            for q, s, c in zip(questions, scores, credit, strict=True)]


def accuracy_by_n(n_objects: Sequence[int], subsets: Sequence[str], credit: Sequence[float]) -> list[dict[str, Any]]:
    """Rows ``{n_objects, subset, accuracy, n}`` per (subset, N), subset ``all`` first, for the accuracy-by-N chart.

    Args:
        n_objects, subsets, credit: one entry per question.
    """
    rows = []
    ns = sorted(set(int(n) for n in n_objects))
    for subset in ("all", "independent", "nested"):
        for n in ns:
            sel = [float(c) for k, s, c in zip(n_objects, subsets, credit, strict=True) if int(k) == n and subset in ("all", s)]
            if sel:
                rows.append({"n_objects": n, "subset": subset, "accuracy": float(np.mean(sel)), "n": len(sel)})
    return rows


def evaluate_mcq(questions: Sequence[MCQ], root: str | Path, encoder: Encoder, pairings: Sequence[str] = ("tt",),
                 progress: Progress | None = None,
                 chunk: int | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score MCQs in each pairing, ``chunk`` questions at a time (embed, score, drop the vectors).

    Args:
        questions: validated questions.
        root: folder that image paths are relative to.
        encoder: any :class:`Encoder` with the modalities the pairings need.
        pairings: subset of :data:`PAIRINGS`.
        progress: optional ``(fraction, message)`` callback.
        chunk: questions embedded at once (>= 1; default :data:`SCORE_CHUNK`); only their vectors are in memory
            at a time. Texts repeated across chunks are embedded once (the cache answers the later chunks).

    Returns:
        ``({pairing: summary}, per-item rows)``; per-item rows carry id, pairing, scores, answer, credit.
    """
    needed = {m for p in pairings for m in PAIRINGS[p]}
    lacking = needed - set(encoder.modalities)
    if lacking:
        raise EncoderError(f"{encoder.id} cannot embed {sorted(lacking)}; pairings {list(pairings)} need "
                           f"{sorted(needed)} (this encoder has {sorted(encoder.modalities)})")
    chunk = SCORE_CHUNK if chunk is None else chunk
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1 question, got {chunk}")
    if "image" in needed:
        require_images(questions, root)  # every missing file named before any model runs
    scores = _score_in_chunks(questions, root, encoder, list(pairings), sorted(needed, reverse=True), chunk, progress)
    answer = np.array([q.answer for q in questions])
    results: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for p in pairings:
        credit = mcq_credit(scores[p], answer)
        results[p] = summarize(credit, questions)
        rows.extend(item_rows(questions, scores[p], credit, p))
    if progress:
        progress(1.0, "done")
    return results, rows


def _score_in_chunks(questions: Sequence[MCQ], root: str | Path, encoder: Encoder, pairings: list[str],
                     modalities: list[str], chunk: int, progress: Progress | None) -> dict[str, np.ndarray]:
    """``{pairing: (q, 4) float32 scores}``, embedding ``chunk`` questions at a time in each modality (text first)."""
    total = len(questions)
    scores = {p: np.empty((total, 4), dtype=np.float32) for p in pairings}
    steps = max(-(-total // chunk) * len(modalities), 1)
    step = 0
    for lo in range(0, total, chunk):
        part = questions[lo:lo + chunk]
        emb: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for m in modalities:  # text first: it is the fast one
            if progress:
                progress(step / steps, f"embedding {m}s with {encoder.id} ({lo}/{total} questions)")
            emb[m] = embed_questions(part, root, encoder, m)
            step += 1
        for p in pairings:
            qm, cm = PAIRINGS[p]
            scores[p][lo:lo + len(part)] = score_mcq(emb[qm][0], emb[cm][1])
        del emb  # this chunk's vectors go before the next chunk's arrive
    return scores
