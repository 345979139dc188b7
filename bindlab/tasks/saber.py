"""SABER-style 4-way MCQs (``mcq``) and pooled-gallery retrieval over the same questions (``retrieval``).

One loader (:func:`load`: an MCQ JSONL file) and one scorer (:func:`score`: ``bindlab.eval.mcq`` /
``bindlab.eval.retrieval`` into a :class:`~bindlab.result.Result`) — what ``eval mcq``, ``eval retrieval``, the
Browse tab and Compare report.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.data.schema import MCQ, LoadReport, load_mcqs_memo
from bindlab.encoders.truncation import truncation, truncation_text
from bindlab.eval.mcq import PAIRINGS, accuracy_by_n, evaluate_mcq, unknown_word_report
from bindlab.eval.metrics import bootstrap_ci
from bindlab.eval.retrieval import evaluate_retrieval
from bindlab.provenance import provenance
from bindlab.result import Result
from bindlab.tasks.base import Task, TaskMetadata, TaskOptions, register_task, with_options
from bindlab.tasks.summaries import McqSummary, RetrievalSummary

SOURCE = "bindlab generate saber"
CITATION = "SABER: attribute-object binding as 4-way multiple choice over N-object scenes (bindlab's SABER-style set)"


def load(data: str | Path, options: TaskOptions) -> tuple[list[MCQ], LoadReport]:
    """The questions of an MCQ JSONL file (the first ``options.limit``) and the loader's report of skipped lines; an
    unchanged file is parsed once per process (:func:`bindlab.data.schema.load_mcqs_memo`; the questions are only
    read)."""
    path = Path(data)
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: file not found; generate one with 'python -m bindlab generate saber --out DIR'"
        )
    questions, report = load_mcqs_memo(path, strict=not options.skip_bad)
    return (questions[: options.limit] if options.limit else questions), report


def expect_from_size(data: str | Path, limit: int, pairings: list[str]) -> None:
    """In an app request, announce the work from the file's line count before parsing it: a file too large for a
    light request takes a heavy slot (or is refused as busy) in milliseconds, instead of after seconds of parsing
    that hold up every other visitor's event. Cached vectors are not known yet, so a cached large file counts as
    heavy too; it then holds its slot only for as long as reading the cache takes."""
    from bindlab.encoders import admission

    path = Path(data)
    if not admission.in_scope() or not path.is_file():
        return
    from bindlab.data.files import DataError, read_bytes_bounded

    try:
        lines = sum(1 for line in read_bytes_bounded(path).split(b"\n") if line.strip())
    except DataError:
        return  # the loader says what is wrong with the file
    if limit:
        lines = min(lines, limit)
    modalities = {m for p in pairings for m in PAIRINGS[p]}
    admission.expect(5 * lines * len(modalities))


def accuracy_by_n_rows(rows: list[dict[str, Any]], pairing: str) -> list[dict[str, Any]]:
    """:func:`~bindlab.eval.mcq.accuracy_by_n` of one pairing, each row with the bootstrap 95 % interval of its
    accuracy (``ci95_low``, ``ci95_high``: :func:`~bindlab.eval.metrics.bootstrap_ci` of its questions' credit, the
    interval the summary gives the overall accuracy)."""
    sel = [r for r in rows if r["pairing"] == pairing]
    n_objects = np.array([int(r["n_objects"]) for r in sel], dtype=np.int64)
    subsets = np.array([r["subset"] for r in sel], dtype=object)
    credit = np.array([r["credit"] for r in sel], dtype=np.float64)
    out = accuracy_by_n(n_objects, subsets, credit, [r["chance"] for r in sel])
    for row in out:
        mask = n_objects == row["n_objects"]  # the row's questions, in file order (the bootstrap draws from them)
        if row["subset"] != "all":
            mask &= subsets == row["subset"]
        row["ci95_low"], row["ci95_high"] = bootstrap_ci(credit[mask])
    return out


class _SaberTask(Task):
    """Both SABER tasks: the same questions, loader and modality check (a pairing the encoder can embed)."""

    kind = ""

    def run(
        self, encoder: Any, data: str | Path | None, options: TaskOptions | None = None, progress: Any = None
    ) -> Result:
        if data is None:
            raise ValueError(f"{self.metadata.name}: give an MCQ JSONL file (python -m bindlab generate saber)")
        options = options or TaskOptions()
        expect_from_size(data, options.limit, options.pairings)
        questions, report = load(data, options)
        return self.score(encoder, questions, report, data, options, progress)

    def unable(self, encoder: Any, options: TaskOptions) -> str:
        ok = any(set(PAIRINGS[p]) <= set(encoder.modalities) for p in options.pairings)
        return "" if ok else "needs an image tower"

    def options_for(self, encoder: Any, options: TaskOptions) -> TaskOptions:
        return with_options(
            options, pairings=[p for p in options.pairings if set(PAIRINGS[p]) <= set(encoder.modalities)]
        )

    def cache_settings(self, spec: str, options: TaskOptions) -> dict[str, Any]:
        return {"task": spec, "pairings": list(options.pairings), "limit": options.limit}

    def score(
        self,
        encoder: Any,
        questions: list[MCQ],
        report: LoadReport,
        data: str | Path,
        options: TaskOptions,
        progress: Any = None,
    ) -> Result:
        """Loaded questions scored into the task's result (see :class:`McqTask` / :class:`RetrievalTask`)."""
        t = time.perf_counter()
        evaluate = evaluate_mcq if self.kind == "mcq" else evaluate_retrieval
        results, rows = evaluate(questions, Path(data).parent, encoder, options.pairings, progress=progress)
        settings = {
            "kind": self.kind,
            "pairings": list(options.pairings),
            "limit": options.limit,
            "batch_size": options.batch_size,
            "skipped_lines": len(report.skipped),
            "seconds": round(time.perf_counter() - t, 3),
        }
        reads_text = any("text" in PAIRINGS[p] for p in options.pairings)
        summary, tables = self.summarize(results, rows, questions, encoder, options.pairings[0], reads_text)
        # texts cut at the model's token limit: counted in the summary and said in the notes, not only the server log
        summary["truncated"] = (
            truncation(encoder, [it.text for q in questions for it in (q.query, *q.candidates)]) if reads_text else None
        )
        notes = ([report.summary()] if report.skipped else []) + [truncation_text(summary["truncated"])]
        return Result(
            self.kind,
            summary,
            rows,
            provenance=provenance(data, encoder, settings),
            primary_metric=self.metadata.main_score,
            tables=tables,
            notes=[n for n in notes if n],
        )

    def summarize(
        self, results: dict, rows: list, questions: list[MCQ], encoder: Any, first: str, reads_text: bool
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        raise NotImplementedError


class McqTask(_SaberTask):
    """4-way MCQ accuracy (tie-aware) per pairing, by N and subset.

    Result: summary :class:`~bindlab.tasks.summaries.McqSummary`; rows = one per (question, pairing) with scores,
    answer, predicted, credit and chance; ``tables["accuracy_by_n"]`` = ``{pairing, n_objects, subset, accuracy,
    n, chance, ci95_low, ci95_high}``.
    """

    kind = "mcq"
    summary_type = McqSummary
    metadata = TaskMetadata(
        name="mcq",
        label="SABER MCQ",
        description="pick the caption that binds each attribute to its object among 4 candidates, per N objects",
        modalities=frozenset({"text"}),
        main_score="accuracy",
        data_kind="saber",
        citation=CITATION,
        source=SOURCE,
        item_shape=(1, 3),
        chance_note="each question's own chance: 1/3 at N = 2 (two candidates say the same), 1/4 above",
        version=3,
    )

    def summarize(self, results, rows, questions, encoder, first, reads_text):  # noqa: D102
        summary: McqSummary = {
            "pairings": results,
            "pairing": first,
            "accuracy": results[first]["accuracy"],
            "unknown_words": unknown_word_report(questions, encoder) if reads_text else None,
        }
        tables = {"accuracy_by_n": [{"pairing": p, **r} for p in results for r in accuracy_by_n_rows(rows, p)]}
        return dict(summary), tables

    def scores(self, result: Result, seed: int = 0) -> list[dict[str, Any]]:
        return [
            {"column": f"MCQ {p}", "value": v["accuracy"], "ci95": v["ci95"], "n": v["n"], "chance": v["chance"]}
            for p, v in result.summary["pairings"].items()
        ]


class RetrievalTask(_SaberTask):
    """Pooled-gallery retrieval per pairing: mAP, R@1, R@5 and containment diagnostics.

    Result: summary :class:`~bindlab.tasks.summaries.RetrievalSummary`; rows = one per (query, pairing);
    ``tables["map_by_n"]`` = ``{pairing, n_objects, map}``.
    """

    kind = "retrieval"
    summary_type = RetrievalSummary
    metadata = TaskMetadata(
        name="retrieval",
        label="retrieval mAP",
        description="each question's query retrieves its exact caption from the pooled gallery of every candidate",
        modalities=frozenset({"text"}),
        main_score="map",
        data_kind="saber",
        citation=CITATION,
        source=SOURCE,
        item_shape=None,
        chance_note="a ranking score: no chance level",
        version=3,
    )

    def summarize(self, results, rows, questions, encoder, first, reads_text):  # noqa: D102
        summary: RetrievalSummary = {"pairings": results, "pairing": first, "map": results[first]["map"]["all"]}
        tables = {
            "map_by_n": [
                {"pairing": p, "n_objects": int(n), "map": v}
                for p, r in results.items()
                for n, v in r["map_by_n"].items()
            ]
        }
        return dict(summary), tables

    def scores(self, result: Result, seed: int = 0) -> list[dict[str, Any]]:
        out = []
        for p, v in result.summary["pairings"].items():
            ap = [row["ap"] for row in result.rows if row["pairing"] == p]
            ci = bootstrap_ci(np.array(ap), seed=seed)
            out.append(
                {"column": f"mAP {p}", "value": v["map"]["all"], "ci95": ci, "n": v["n_queries"], "chance": None}
            )
        return out


MCQ_TASK = register_task(McqTask())
RETRIEVAL_TASK = register_task(RetrievalTask())
