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
from bindlab.eval.mcq import PAIRINGS, accuracy_by_n, embed_questions, item_rows, score_mcq, summarize
from bindlab.eval.metrics import mcq_credit

DEFAULT_SETTINGS = {"per_size": 20, "sizes": list(range(2, 11)), "seed": 0}
DEFAULT_IMAGE_SIZE = 128


def default_dataset(images: bool = False, progress: Any = None) -> Path:
    """The embedded default mini SABER benchmark (20 per size, N = 2..10, seed 0), generated on first use.

    With ``images`` it is the image version: renderable vocabulary, query and candidate images at 128 px.
    """
    from bindlab.data.saber import generate_saber, write_benchmark

    name = "saber-mini-images" if images else "saber-mini"
    path = home() / "default" / name / "mcq.jsonl"
    if path.exists():
        return path
    with _LOCK:  # two visitors opening the page at once render the default only once
        if path.exists():
            return path
        kwargs: dict[str, Any] = dict(per_size=DEFAULT_SETTINGS["per_size"], sizes=DEFAULT_SETTINGS["sizes"],
                                      seed=DEFAULT_SETTINGS["seed"])
        if images:
            from bindlab.data.render import RENDER_VOCAB
            from bindlab.data.saber_images import render_mcq_images

            qs = generate_saber(**kwargs, vocab=RENDER_VOCAB)
            render_mcq_images(qs, path.parent, size=DEFAULT_IMAGE_SIZE, workers=2,
                              progress=(lambda d, t: progress(d / t, f"rendering default images {d}/{t}"))
                              if progress else None)
        else:
            qs = generate_saber(**kwargs)
        write_benchmark(path.parent, qs, {**DEFAULT_SETTINGS, "images": images})
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
    queries: np.ndarray  # (q, d) query embeddings in the pairing's query modality
    gallery: np.ndarray  # (q*4, d) all candidates in the pairing's candidate modality (retrieval gallery)

    def index(self, qid: str) -> int:
        for i, q in enumerate(self.questions):
            if q.id == qid:
                return i
        raise KeyError(f"question {qid!r} is not in {self.path}")


_SCORED: dict[tuple[str, float, str, str], ScoredSet] = {}
_ENCODERS: dict[str, Any] = {}
_KEY_LOCKS: dict[tuple[str, float, str, str], threading.Lock] = {}
_LOCK = threading.Lock()


IMAGE_MODELS = ("toy:clip", "toy:shared")  # the bundled image+text encoders, preferred in this order


def needs_images(pairing: str) -> bool:
    return "image" in PAIRINGS[pairing]


def default_model(pairing: str) -> str:
    """MiniLM for text–text; for pairings with images, the first bundled image+text model that is installed."""
    if not needs_images(pairing):
        return "minilm"
    from bindlab.config import repo_root

    for m in IMAGE_MODELS:
        if (repo_root() / "assets" / m.replace(":", "-")).is_dir():
            return m
    raise ValueError(f"pairing {pairing!r} needs an image+text encoder and no bundled toy model is installed "
                     f"(assets/toy-clip); type an encoder id such as hf:/path/to/clip")


def resolve_inputs(data: str, model: str, pairing: str, progress: Any = None) -> tuple[str, str]:
    """Fill the defaults of the Browse inputs: the embedded benchmark (with images when the pairing needs them)
    and, when no model is given, :func:`default_model`."""
    model = (model or "").strip() or default_model(pairing)
    data = (data or "").strip() or str(default_dataset(images=needs_images(pairing), progress=progress))
    return data, model


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
    with _LOCK:
        key_lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with key_lock:  # two visitors asking for the same set at once: the second waits for the first's result
        if key not in _SCORED:
            _SCORED[key] = _score_set(p, model, pairing, progress)
    return _SCORED[key]


def _score_set(p: Path, model: str, pairing: str, progress: Any = None) -> ScoredSet:
    questions, _ = load_mcqs(p)
    encoder = get_encoder(model)
    qm, cm = PAIRINGS[pairing]
    emb = {}
    for m in dict.fromkeys((cm, qm)):
        if progress:
            progress(0.1, f"embedding {m}s with {encoder.id}")
        emb[m] = embed_questions(questions, p.parent, encoder, m)
    scores = score_mcq(emb[qm][0], emb[cm][1])
    credit = mcq_credit(scores, np.array([q.answer for q in questions]))
    gallery = emb[cm][1].reshape(-1, emb[cm][1].shape[-1])
    return ScoredSet(p, encoder.id, pairing, questions, scores, credit, summarize(credit, questions), emb[qm][0], gallery)


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
    root = s.path.parent
    for k, c in enumerate(q.candidates):
        cands.append({
            "role": c.role, "text": c.text, "bindings": c.bindings, "image": str(root / c.image) if c.image else None,
            "kept": [tuple(b) in qset for b in c.bindings],
            "score": float(scores[k]), "is_answer": k == q.answer, "rank": int(ranks[k]),
        })
    others = np.delete(scores, q.answer)
    return {
        "id": q.id, "n_objects": q.n_objects, "subset": q.subset, "chain_id": q.chain_id,
        "query": {"text": q.query.text, "bindings": q.query.bindings,
                  "image": str(root / q.query.image) if q.query.image else None},
        "candidates": cands,
        "margin": float(scores[q.answer] - others.max()),
        "credit": float(s.credit[i]),
    }


def accuracy_table(s: ScoredSet) -> list[dict[str, Any]]:
    """Rows ``{n_objects, subset, accuracy, n}`` for the accuracy-by-N chart (subset 'all' included)."""
    return accuracy_by_n([q.n_objects for q in s.questions], [q.subset for q in s.questions], s.credit)


def item_rows_of(s: ScoredSet) -> list[dict[str, Any]]:
    """The per-question rows of a scored set, as ``eval mcq --per-item`` writes them."""
    return item_rows(s.questions, s.scores, s.credit, s.pairing)


def retrieval_topk(s: ScoredSet, qid: str, k: int = 8) -> list[dict[str, Any]]:
    """The top-``k`` gallery items (all candidates of all questions) for one query, best first.

    Each row: rank, question id, candidate index, role, caption, image path, score, and whether it is a positive
    (holds every query binding) and the query's own exact match.
    """
    i = s.index(qid)
    scores = s.gallery @ s.queries[i]  # (q*4,)
    top = np.argsort(-scores, kind="stable")[: max(1, int(k))]
    qset = s.questions[i].query.binding_set()
    rows = []
    for rank, g in enumerate(top, start=1):
        owner, c = divmod(int(g), 4)
        cand = s.questions[owner].candidates[c]
        rows.append({
            "rank": rank, "question": s.questions[owner].id, "candidate": c, "role": cand.role, "text": cand.text,
            "image": str(s.path.parent / cand.image) if cand.image else None, "score": float(scores[g]),
            "positive": qset <= cand.binding_set(), "exact": owner == i and c == s.questions[i].answer,
        })
    return rows
