"""Backend of the Browse tab: a scored benchmark in memory, filters, and one question's view.

Scores come from the same cached pipeline as ``eval mcq``; a :class:`ScoredSet` is memoised per (file
contents, encoder id, pairing) in this process, so switching questions never re-embeds anything.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.config import home
from bindlab.data.schema import MCQ, load_mcqs
from bindlab.eval.mcq import PAIRINGS, evaluate_mcq

DEFAULT_SETTINGS = {"per_size": 20, "sizes": list(range(2, 11)), "seed": 0}


def default_dataset() -> Path:
    """The embedded default: a mini SABER benchmark (20 per size, N = 2..10, seed 0), generated on first use."""
    from bindlab.data.saber import generate_saber, write_benchmark

    path = home() / "default" / "saber-mini" / "mcq.jsonl"
    if not path.exists():
        qs = generate_saber(per_size=DEFAULT_SETTINGS["per_size"], sizes=DEFAULT_SETTINGS["sizes"],
                            seed=DEFAULT_SETTINGS["seed"])
        write_benchmark(path.parent, qs, DEFAULT_SETTINGS)
    return path


@dataclass
class ScoredSet:
    """Questions with their candidate scores in one pairing."""

    path: Path
    model: str
    pairing: str
    questions: list[MCQ]
    scores: np.ndarray  # (q, 4)
    credit: np.ndarray  # (q,)
    summary: dict[str, Any]

    def index(self, qid: str) -> int:
        for i, q in enumerate(self.questions):
            if q.id == qid:
                return i
        raise KeyError(f"question {qid!r} is not in {self.path}")


_SCORED: dict[tuple[str, float, str, str], ScoredSet] = {}
_ENCODERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def get_encoder(model: str) -> Any:
    """Load an encoder once per process (thread-safe); later calls reuse it."""
    from bindlab.encoders.base import load_encoder, parse_encoder_id

    key = str(parse_encoder_id(model))
    with _LOCK:
        if key not in _ENCODERS:
            _ENCODERS[key] = load_encoder(model)
        return _ENCODERS[key]


def scored_set(path: str | Path, model: str, pairing: str = "tt", progress: Any = None) -> ScoredSet:
    """Load and score a benchmark (memoised by file mtime, model and pairing)."""
    if pairing not in PAIRINGS:
        raise ValueError(f"unknown pairing {pairing!r}; choose from {list(PAIRINGS)}")
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: file not found; generate one with 'python -m bindlab generate saber --out DIR'")
    key = (str(p.resolve()), p.stat().st_mtime, model, pairing)
    if key in _SCORED:
        return _SCORED[key]
    questions, _ = load_mcqs(p)
    encoder = get_encoder(model)
    results, rows = evaluate_mcq(questions, p.parent, encoder, [pairing], progress=progress)
    scores = np.array([r["scores"] for r in rows])
    credit = np.array([r["credit"] for r in rows])
    s = ScoredSet(p, encoder.id, pairing, questions, scores, credit, results[pairing])
    _SCORED[key] = s
    return s


def filter_ids(s: ScoredSet, n_objects: str = "all", subset: str = "all", outcome: str = "all") -> list[str]:
    """Question ids passing the filters. ``outcome``: all | correct (full credit) | incorrect (no full credit)."""
    out = []
    for q, c in zip(s.questions, s.credit):
        if n_objects not in ("all", "", None) and q.n_objects != int(n_objects):
            continue
        if subset not in ("all", "", None) and q.subset != subset:
            continue
        if outcome == "correct" and c < 1.0:
            continue
        if outcome == "incorrect" and c >= 1.0:
            continue
        out.append(q.id)
    return out


def question_view(s: ScoredSet, qid: str) -> dict[str, Any]:
    """Everything the Browse tab shows for one question.

    Returns:
        ``{"id", "n_objects", "subset", "query": {text, bindings, image}, "candidates": [{role, text, bindings,
        kept (bool per binding: is it a query binding?), score, is_answer, rank, image}], "margin", "credit"}``;
        margin = preserve score minus the best other candidate's score (positive = correct by that much).
    """
    i = s.index(qid)
    q = s.questions[i]
    scores = s.scores[i]
    qset = q.query.binding_set()
    ranks = np.argsort(-scores, kind="stable").argsort() + 1
    cands = []
    for k, c in enumerate(q.candidates):
        cands.append({
            "role": c.role, "text": c.text, "bindings": c.bindings, "image": c.image,
            "kept": [tuple(b) in qset for b in c.bindings],
            "score": float(scores[k]), "is_answer": k == q.answer, "rank": int(ranks[k]),
        })
    others = np.delete(scores, q.answer)
    return {
        "id": q.id, "n_objects": q.n_objects, "subset": q.subset, "chain_id": q.chain_id,
        "query": {"text": q.query.text, "bindings": q.query.bindings, "image": q.query.image},
        "candidates": cands,
        "margin": float(scores[q.answer] - others.max()),
        "credit": float(s.credit[i]),
    }


def accuracy_table(s: ScoredSet) -> list[dict[str, Any]]:
    """Rows ``{n_objects, subset, accuracy, n}`` for the accuracy-by-N chart (subset 'all' included)."""
    rows = []
    ns = sorted({q.n_objects for q in s.questions})
    for subset in ("all", "independent", "nested"):
        for n in ns:
            sel = [c for q, c in zip(s.questions, s.credit) if q.n_objects == n and subset in ("all", q.subset)]
            if sel:
                rows.append({"n_objects": n, "subset": subset, "accuracy": float(np.mean(sel)), "n": len(sel)})
    return rows
