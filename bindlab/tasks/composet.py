"""CompoSET-style 2x2 pairs (``pairs``): Winoground-style I2T / T2I / Group per edit type.

What ``eval pairs``, the Pairs tab and Compare report: :func:`load` reads a Pairs JSONL file, :meth:`PairsTask.score`
scores it (:func:`bindlab.eval.pairs.evaluate_pairs`) into a :class:`~bindlab.result.Result`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bindlab.data.pairs_schema import PairItem, load_pairs
from bindlab.data.schema import LoadReport
from bindlab.eval.metrics import TASK_SHAPES, task_chance
from bindlab.eval.pairs import by_edit_type_rows, evaluate_pairs
from bindlab.provenance import provenance
from bindlab.result import Result
from bindlab.tasks.base import Task, TaskMetadata, TaskOptions, register_task
from bindlab.tasks.summaries import PairsSummary


def metric_chance(metric: str) -> float:
    """The chance of a 2x2 item on ``metric`` (Group 1/6, I2T and T2I 1/4):
    :func:`bindlab.eval.metrics.task_chance` of ``pairs_<metric>``, the one place chance is computed."""
    return task_chance(f"pairs_{metric}")


def load(data: str | Path, options: TaskOptions) -> tuple[list[PairItem], LoadReport]:
    """The pairs of a Pairs JSONL file (the first ``options.limit``) and the loader's report of skipped lines."""
    path = Path(data)
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: file not found; generate one with 'python -m bindlab generate composet --out DIR'"
        )
    pairs, report = load_pairs(path, strict=not options.skip_bad)
    return (pairs[: options.limit] if options.limit else pairs), report


class PairsTask(Task):
    """2x2 pairs: result summary :class:`~bindlab.tasks.summaries.PairsSummary`; rows = one per (pair, level) with
    its 2x2 scores and verdicts; ``tables["by_edit_type"]`` = ``{edit_type, category, origin, n, i2t, t2i, group}``."""

    summary_type = PairsSummary
    metadata = TaskMetadata(
        name="pairs",
        label="Pairs 2x2",
        description="two images, two captions that differ by one edit: each caption to its image and back (Group)",
        modalities=frozenset({"text", "image"}),
        main_score="group",
        data_kind="composet",
        citation="CompoSET-style 2x2 pairs scored as Winoground (Thrush et al., CVPR 2022)",
        source="bindlab generate composet",
        item_shape=TASK_SHAPES["pairs_group"][:2],  # two positives against two negatives: 1/6
        chance_note="I2T and T2I: 1/4",
        version=3,
    )

    def unable(self, encoder: Any, options: TaskOptions) -> str:
        return (
            "" if self.metadata.modalities <= set(encoder.modalities) else "text-only: pairs need an image+text encoder"
        )

    def cache_settings(self, spec: str, options: TaskOptions) -> dict[str, Any]:
        return {"task": spec, "verbosity": options.verbosity, "limit": options.limit, "seed": options.seed}

    def run(
        self, encoder: Any, data: str | Path | None, options: TaskOptions | None = None, progress: Any = None
    ) -> Result:
        if data is None:
            raise ValueError("pairs: give a Pairs JSONL file (python -m bindlab generate composet)")
        options = options or TaskOptions()
        pairs, report = load(data, options)
        return self.score(encoder, pairs, report, data, options, progress)

    def score(
        self,
        encoder: Any,
        pairs: list[PairItem],
        report: LoadReport,
        data: str | Path,
        options: TaskOptions,
        progress: Any = None,
    ) -> Result:
        """Loaded pairs scored into the task's result."""
        path = Path(data)
        t = time.perf_counter()
        summary, rows = evaluate_pairs(
            pairs, path.parent, encoder, options.verbosity, progress=progress, seed=options.seed
        )
        settings = {
            "kind": "pairs",
            "verbosity": options.verbosity,
            "limit": options.limit,
            "batch_size": options.batch_size,
            "skipped_lines": len(report.skipped),
            "seconds": round(time.perf_counter() - t, 3),
        }
        summary = {**summary, "n_pairs": len(pairs), "group": summary["overall"]["group"]}
        return Result(
            "pairs",
            summary,
            rows,
            provenance=provenance(path, encoder, settings, options.seed),
            primary_metric="group",
            tables={"by_edit_type": by_edit_type_rows(summary)},
            notes=[report.summary()] if report.skipped else [],
        )

    def scores(self, result: Result, seed: int = 0) -> list[dict[str, Any]]:
        o = result.summary["overall"]
        return [
            {
                "column": f"Pairs {metric.upper() if metric != 'group' else 'Group'}",
                "value": o[metric],
                "ci95": o[f"{metric}_ci95"],
                "n": o["n"],
                "chance": metric_chance(metric),
            }
            for metric in ("group", "i2t", "t2i")
        ]


PAIRS_TASK = register_task(PairsTask())
