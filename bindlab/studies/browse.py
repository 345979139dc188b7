"""Browse: the SABER MCQ study (``eval mcq``, ``eval retrieval``) and the Browse tab's session.

:func:`run_mcq` and :func:`run_retrieval` are the one pipeline both faces call: load the questions, embed and score
them (``bindlab.eval``), and return a :class:`~bindlab.result.Result` with provenance. The Browse tab's
:class:`ScoredSet` is built from :func:`run_mcq`'s result and memoised per (file contents, encoder id, pairing) in
this process, so switching questions never re-embeds anything and the tab shows the numbers ``eval mcq`` prints.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.data.schema import MCQ, LoadReport
from bindlab.encoders.truncation import truncation_text  # noqa: F401 (the Browse tab says what was cut)
from bindlab.eval.mcq import (
    PAIRINGS,
    embed_questions,
    parse_pairings,
)
from bindlab.eval.metrics import TIE_TOL
from bindlab.result import Result
from bindlab.studies.access import check_model_access
from bindlab.studies.common import IMAGE_MODELS, embedded_data_for, get_encoder, needs_images
from bindlab.studies.memo import forget_under, remember
from bindlab.studies.progress import Progress
from bindlab.studies.validate import check_run_options, data_input, run_option

_LOCK = threading.Lock()


# --- the request and the two studies -------------------------------------------------------------------------
@dataclass
class McqRequest:
    """What ``eval mcq`` / ``eval retrieval`` and the Browse tab ask for; validated on construction.

    Raises:
        ValueError: an empty data path or model id, an unknown pairing, ``limit`` < 0, ``batch_size`` < 1 or an
            empty device, each named with the value given.
    """

    data: str | Path  # MCQ JSONL file; image paths are relative to its folder
    model: str = run_option("model", required=True, empty="model: give an encoder id, e.g. minilm, bow or toy:clip")
    pairings: Sequence[str] | str = ("tt",)  # query->candidate modalities, subset of PAIRINGS; becomes a list
    limit: int = run_option("limit")  # score only the first N questions; 0 = all
    batch_size: int | None = run_option("batch_size")  # None = the backend's default
    device: str = run_option("device")
    skip_bad: bool = run_option("skip_bad")  # malformed lines are reported in the notes
    dtype: str = run_option("dtype")  # the precision a hub model runs in

    def __post_init__(self) -> None:
        if not str(self.data or "").strip():
            raise ValueError(
                "data: give an MCQ JSONL file, e.g. DIR/mcq.jsonl "
                "(make one with 'python -m bindlab generate saber --out DIR')"
            )
        self.data = data_input(self.data, "data", "mcq")  # inside the allowed data roots; a datasets folder read
        check_run_options(self)  # model, limit, batch size, device (RunOptions)
        self.pairings = parse_pairings(self.pairings)


def load_questions(request: McqRequest) -> tuple[list[MCQ], LoadReport]:
    """The request's questions (first ``limit`` of them) and the loader's report of skipped lines: the SABER task's
    loader (:func:`bindlab.tasks.saber.load`; an unchanged file is parsed once per process)."""
    from bindlab.tasks import TaskOptions
    from bindlab.tasks.saber import load

    return load(request.data, TaskOptions(limit=request.limit, skip_bad=request.skip_bad))


def run_mcq(request: McqRequest, progress: Progress | None = None) -> Result:
    """4-way MCQ accuracy (tie-aware) per pairing, by N and subset: what ``eval mcq`` and the Browse tab report.

    Returns:
        ``Result("mcq")``: summary ``{"pairings": {pairing: {accuracy, ci95, by_n, by_subset, n, chance, chance_by_n,
        chance_by_subset}}, "pairing": the first pairing, "accuracy": its accuracy, "unknown_words"}``; ``chance``
        is the mean of the questions' own chance levels (:func:`bindlab.eval.mcq.question_chance`: 1/3 at N = 2,
        1/4 above); ``unknown_words`` is :func:`bindlab.eval.mcq.unknown_word_summary` of the captions (share of
        words the model maps to its unknown token, the most frequent of them), None when the model cannot say or
        no pairing reads text; rows = one per (question, pairing) with scores, answer, predicted, credit and
        chance; ``tables["accuracy_by_n"]`` = ``{pairing, n_objects, subset, accuracy, n, chance, ci95_low,
        ci95_high}`` (the bootstrap 95 % interval of each row's accuracy).
    """
    return _run(request, "mcq", progress)[0]


def run_retrieval(request: McqRequest, progress: Progress | None = None) -> Result:
    """Pooled-gallery retrieval per pairing (mAP, R@1, R@5, containment diagnostics): what ``eval retrieval`` reports.

    Returns:
        ``Result("retrieval")``: summary ``{"pairings": {pairing: {map, map_by_n, r@1, r@5, containment, …}},
        "pairing": the first pairing, "map": its mAP over all queries}``; rows = one per (query, pairing);
        ``tables["map_by_n"]`` = ``{pairing, n_objects, map}``.
    """
    return _run(request, "retrieval", progress)[0]


def _expect_from_size(request: McqRequest) -> None:
    """:func:`bindlab.tasks.saber.expect_from_size`: in an app request, a file too large for a light request takes a
    heavy slot (or is refused as busy) before it is parsed."""
    from bindlab.tasks.saber import expect_from_size

    expect_from_size(request.data, request.limit, request.pairings)


def _run(request: McqRequest, kind: str, progress: Progress | None) -> tuple[Result, list[MCQ], Any]:
    """Both studies: encoder first (an unknown id is reported before the file is read), then questions, then the
    task's scoring (:mod:`bindlab.tasks.saber`, the one Compare runs too)."""
    from bindlab.tasks import TaskOptions, get_task

    encoder = get_encoder(
        request.model, request.device, request.batch_size, request.dtype
    )  # cheap: weights load on first use
    _expect_from_size(request)
    questions, report = load_questions(request)
    options = TaskOptions(pairings=list(request.pairings), limit=request.limit, batch_size=request.batch_size)
    result = get_task(kind).score(encoder, questions, report, request.data, options, progress)
    return result, questions, encoder


def unknown_words_text(report: dict[str, Any] | None, top: int = 8) -> str:
    """One line on a result's ``unknown_words``: the share of caption words the model does not know and the most
    frequent of them; "" when the model cannot say."""
    if not report:
        return ""
    if not report["n_unknown"]:
        return f"none of the {report['n_words']} caption words is unknown to the model"
    words = ", ".join(f"{t['word']} ({t['count']})" for t in report["top"][:top])
    return (
        f"{100 * report['share']:.1f} % of the caption words are unknown to the model ({100 * report['query_share']:.1f} % "
        f"of the query words; {report['questions_with_unknown']} of {report['n_questions']} questions have one); "
        f"most frequent: {words}"
    )


# --- the Browse tab's session: one scored pairing in memory ------------------------------------------------------
@dataclass
class ScoredSet:
    """Questions with their candidate scores in one pairing, from :func:`run_mcq`."""

    path: Path
    model: str  # the encoder's id
    pairing: str
    questions: list[MCQ]
    scores: np.ndarray  # (q, 4)
    credit: np.ndarray  # (q,)
    summary: dict[str, Any]  # run_mcq's summary of this pairing
    result: Result = field(repr=False)  # run_mcq's whole result (rows, tables, provenance)
    request: McqRequest = field(repr=False)

    def index(self, qid: str) -> int:
        for i, q in enumerate(self.questions):
            if q.id == qid:
                return i
        raise KeyError(f"question {qid!r} is not in {self.path}")

    @cached_property
    def _embeddings(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``{modality: (queries (q, d), candidates (q, 4, d))}`` from the embedding cache (filled by run_mcq)."""
        encoder = get_encoder(self.request.model, self.request.device, self.request.batch_size, self.request.dtype)
        return {
            m: embed_questions(self.questions, self.path.parent, encoder, m)
            for m in dict.fromkeys(PAIRINGS[self.pairing])
        }

    @property
    def queries(self) -> np.ndarray:
        """``(q, d)`` query embeddings in the pairing's query modality."""
        return self._embeddings[PAIRINGS[self.pairing][0]][0]

    @property
    def gallery(self) -> np.ndarray:
        """``(q*4, d)`` all candidates in the pairing's candidate modality (the retrieval gallery)."""
        cands = self._embeddings[PAIRINGS[self.pairing][1]][1]
        return cands.reshape(-1, cands.shape[-1])


_SCORED: dict[tuple[str, float, str, str], ScoredSet] = {}  # least recently used first
_KEY_LOCKS: dict[tuple[str, float, str, str], threading.Lock] = {}
MAX_SCORED_SETS = 8  # scored sets the Browse views keep in memory; the least recently used goes first, and their
# bytes (scores and loaded embeddings: a bow set of the largest allowed file holds ~410 MB of candidate vectors once
# its top-k view is used) are capped by scored_cap()


def scored_bytes(scored: ScoredSet) -> int:
    """Bytes a scored set holds: its scores plus its embeddings if a view has loaded them."""
    emb = scored.__dict__.get("_embeddings") or {}
    return int(scored.scores.nbytes + sum(q.nbytes + c.nbytes for q, c in emb.values()))


def default_model(pairing: str) -> str:
    """MiniLM for text–text; for pairings with images, the first bundled image+text model that is installed."""
    if not needs_images(pairing):
        return "minilm"
    from bindlab.config import assets_root

    for m in IMAGE_MODELS:
        if (assets_root() / m.replace(":", "-")).is_dir():
            return m
    raise ValueError(
        f"pairing {pairing!r} needs an image+text encoder and no bundled toy model is installed "
        f"(bindlab/assets/toy-clip); type an encoder id such as hf:/path/to/clip"
    )


def resolve_inputs(data: str, model: str, pairing: str, progress: Any = None) -> tuple[str, str]:
    """Fill the defaults of the Browse inputs: when no model is given, :func:`default_model`; when no data, the
    embedded benchmark the model can read (:func:`~bindlab.studies.common.default_dataset_for`: the renderable one for the toy models), with
    images when the pairing needs them."""
    model = (model or "").strip() or default_model(pairing)
    if not (data or "").strip():
        data = embedded_data_for(model, [pairing], progress=progress)
    return data.strip(), model


def scored_set(path: str | Path, model: str, pairing: str = "tt", progress: Any = None) -> ScoredSet:
    """Score a benchmark in one pairing through :func:`run_mcq` (memoised by file mtime, model and pairing)."""
    request = McqRequest(data=path, model=model, pairings=[pairing])  # validates the pairing and the model id
    if len(request.pairings) != 1:
        raise ValueError(f"the Browse session scores one pairing at a time, got {pairing!r}")
    p = Path(request.data)
    if not p.exists():
        raise FileNotFoundError(f"{p}: file not found; generate one with 'python -m bindlab generate saber --out DIR'")
    key = (str(p.resolve()), p.stat().st_mtime, request.model, request.pairings[0])
    check_model_access(request.model)  # before the memo: another visitor's scoring of their lora: model stays theirs
    with _LOCK:
        key_lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with key_lock:  # two visitors asking for the same set at once: the second waits for the first's result
        scored = _SCORED.get(key) or _score_set(request, progress)
    with _LOCK:  # now the most recently used; a dropped set is scored again (from the cache) when asked
        for old in remember(_SCORED, key, scored, MAX_SCORED_SETS, scored_bytes, scored_cap()):
            _KEY_LOCKS.pop(old, None)
    return scored


def scored_cap() -> int:
    """Bytes the scored sets may hold together: ``limits().scored_memory_mb`` (1 GiB locally, 256 MiB in public mode,
    ``$BINDLAB_SCORED_MEMORY_MB``; the newest set always stays, so one large set still works)."""
    from bindlab.config import MIB, limits

    return limits().scored_memory_mb * MIB


def forget_sets_under(folder: str | Path) -> int:
    """Drop the scored sets of files inside ``folder`` (a session's uploads, when it ends); how many went."""
    with _LOCK:
        gone = forget_under(_SCORED, folder)
        for key in gone:
            _KEY_LOCKS.pop(key, None)
    return len(gone)


def _score_set(request: McqRequest, progress: Progress | None = None) -> ScoredSet:
    result, questions, encoder = _run(request, "mcq", progress)
    pairing = request.pairings[0]
    scores = np.array([r["scores"] for r in result.rows], dtype=np.float64).reshape(len(questions), 4)
    credit = np.array([r["credit"] for r in result.rows], dtype=np.float64)
    return ScoredSet(
        Path(request.data),
        encoder.id,
        pairing,
        questions,
        scores,
        credit,
        result.summary["pairings"][pairing],
        result,
        request,
    )


def filter_ids(s: ScoredSet, n_objects: str = "all", subset: str = "all", outcome: str = "all") -> list[str]:
    """Question ids passing the filters. ``outcome``: all | correct (full credit) | incorrect (no full credit)."""
    out = []
    for q, c in zip(s.questions, s.credit, strict=True):
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
        kept (bool per binding: is it a query binding?), score, is_answer, rank, tied, image}], "margin", "credit"}``;
        margin = preserve score minus the best other candidate's score (positive = correct by that much). ``rank``
        is a competition rank under the tie rule MCQ credit uses (scores within
        :data:`~bindlab.eval.metrics.TIE_TOL` share the best rank among them, so two candidates tied for first are
        both rank 1, and credit is 1/2 if one is the answer); ``tied`` says the candidate shares its rank.
    """
    i = s.index(qid)
    q = s.questions[i]
    scores = s.scores[i]
    qset = q.query.binding_set()
    ranks, tied = tie_ranks(scores)
    cands = []
    root = s.path.parent
    for k, c in enumerate(q.candidates):
        cands.append(
            {
                "role": c.role,
                "text": c.text,
                "bindings": c.bindings,
                "image": str(root / c.image) if c.image else None,
                "kept": [tuple(b) in qset for b in c.bindings],
                "score": float(scores[k]),
                "is_answer": k == q.answer,
                "rank": ranks[k],
                "tied": tied[k],
            }
        )
    others = np.delete(scores, q.answer)
    return {
        "id": q.id,
        "n_objects": q.n_objects,
        "subset": q.subset,
        "chain_id": q.chain_id,
        "query": {
            "text": q.query.text,
            "bindings": q.query.bindings,
            "image": str(root / q.query.image) if q.query.image else None,
        },
        "candidates": cands,
        "margin": float(scores[q.answer] - others.max()),
        "credit": float(s.credit[i]),
    }


def tie_ranks(scores: Sequence[float], tol: float = TIE_TOL) -> tuple[list[int], list[bool]]:
    """Competition ranks (1 = best) of one question's candidate scores under MCQ credit's tie rule, and whether each
    is tied: a score within ``tol`` of a better-ranked group's best shares that group's rank (as
    :func:`bindlab.present.numbers.shared_ranks` prints them, ``=1``)."""
    vals = [float(v) for v in scores]
    order = sorted(range(len(vals)), key=lambda i: -vals[i])
    ranks, tied = [0] * len(vals), [False] * len(vals)
    k = 0
    while k < len(order):
        j = k
        while j + 1 < len(order) and vals[order[j + 1]] >= vals[order[k]] - tol:
            j += 1
        for i in order[k : j + 1]:
            ranks[i], tied[i] = k + 1, j > k
        k = j + 1
    return ranks, tied


def accuracy_table(s: ScoredSet) -> list[dict[str, Any]]:
    """Rows ``{n_objects, subset, accuracy, n, chance, ci95_low, ci95_high}`` for the accuracy-by-N chart (subset
    'all' included; the interval is each row's bootstrap 95 % interval)."""
    return [{k: v for k, v in r.items() if k != "pairing"} for r in s.result.tables["accuracy_by_n"]]


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
        rows.append(
            {
                "rank": rank,
                "question": s.questions[owner].id,
                "candidate": c,
                "role": cand.role,
                "text": cand.text,
                "image": str(s.path.parent / cand.image) if cand.image else None,
                "score": float(scores[g]),
                "positive": qset <= cand.binding_set(),
                "exact": owner == i and c == s.questions[i].answer,
            }
        )
    return rows
