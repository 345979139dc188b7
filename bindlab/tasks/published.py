"""Published benchmarks through their manifests (``bindlab/data_manifests/``): one :class:`PublishedTask` each.

The task reads the manifest (where the benchmark lives, its license and citation), loads the items with the
manifest's adapter (:func:`bindlab.data.adapters.load_benchmark`) and scores them with the benchmark's native metric
and the bag-of-words validity check (:func:`bindlab.eval.benchmarks.evaluate_benchmark`). Each benchmark registers
itself in a module of its own (``bindlab/tasks/winoground.py`` …); :func:`for_manifest` builds the task of a
manifest that has none (a manifest given by path).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bindlab.provenance import provenance
from bindlab.result import Result
from bindlab.tasks.base import Task, TaskMetadata, TaskOptions, with_options
from bindlab.tasks.summaries import BenchmarkSummary


def native_value(summary: dict) -> float | None:
    """The benchmark's headline number: its native metric's value, or the Group score for 2x2 benchmarks."""
    nm = summary["native_metric"]
    return nm.get("value", nm.get("group_score"))


def _manifest(name: str) -> dict[str, Any]:
    from bindlab.data.adapters import list_manifests

    return list_manifests().get(name, {})


class PublishedTask(Task):
    """A published benchmark: result summary :class:`~bindlab.tasks.summaries.BenchmarkSummary` plus rows of
    per-item pass/fail; provenance settings carry the source and the manifest's license, citation and URL.

    Args:
        name: the manifest's name (or a manifest .json path, for :func:`for_manifest`).
        item_shape: (positives, negatives) of an item (2x2 benchmarks: (2, 2), the Group score's).
        modalities: the towers it needs; ``{"text"}`` where it has a text-only task (SugarCrepe++'s TOT).
    """

    summary_type = BenchmarkSummary

    def __init__(
        self,
        name: str,
        item_shape: tuple[int, int] | None = None,
        modalities: frozenset[str] = frozenset({"text", "image"}),
    ) -> None:
        self.manifest_name = name
        m = _manifest(name)
        self.metadata = TaskMetadata(
            name=Path(name).stem.lower() if name.endswith(".json") else name,
            label=m.get("name", name),
            description=m.get("description") or f"the published benchmark {name}",
            modalities=frozenset(modalities),
            main_score="native_value",
            data_kind="published",
            citation=m.get("citation", ""),
            source=m.get("url", ""),
            item_shape=item_shape,
            chance_note="" if "image" in modalities else "its text-only task (TOT): 1/3",
            version=3,
            license=m.get("license", ""),
        )

    def unable(self, encoder: Any, options: TaskOptions) -> str:
        ok = self.metadata.modalities <= set(encoder.modalities)
        return "" if ok else "text-only: this benchmark needs an image+text encoder"

    def options_for(self, encoder: Any, options: TaskOptions) -> TaskOptions:
        """The image-to-text task where the encoder has an image tower, else the text-only one."""
        return with_options(options, variant="itt" if "image" in encoder.modalities else "tot")

    def cache_settings(self, spec: str, options: TaskOptions) -> dict[str, Any]:
        return {"task": spec, "bench_task": options.variant, "limit": options.limit, "seed": options.seed}

    def run(
        self, encoder: Any, data: str | Path | None, options: TaskOptions | None = None, progress: Any = None
    ) -> Result:
        """Score the benchmark from ``data`` (a local copy in its published format; None = the manifest's)."""
        from bindlab.data.adapters import load_benchmark
        from bindlab.eval.benchmarks import evaluate_benchmark

        o = options or TaskOptions()
        bench = load_benchmark(
            self.manifest_name,
            data=str(data) if data is not None else None,
            split=o.split,
            limit=o.limit,
            images=o.images,
            source=o.source,
        )
        t = time.perf_counter()
        summary, rows = evaluate_benchmark(bench, encoder, task=o.variant, seed=o.seed)
        settings = {
            "kind": "benchmark",
            "benchmark": bench.name,
            "source": bench.source,
            "split": o.split,
            "task": summary["task"],
            "limit": o.limit,
            "seconds": round(time.perf_counter() - t, 3),
            "manifest": {k: bench.manifest.get(k) for k in ("license", "citation", "url")},
        }
        dataset = bench.source if Path(bench.source).is_file() else None
        summary = {**summary, "native_value": native_value(summary)}
        return Result(
            "benchmark",
            summary,
            rows,
            provenance=provenance(dataset, encoder, settings, o.seed),
            primary_metric="native_value",
        )

    def scores(self, result: Result, seed: int = 0) -> list[dict[str, Any]]:
        from bindlab.tasks.composet import metric_chance

        s = result.summary
        if "overall" in s:  # a 2x2 benchmark: its Group score
            ci, chance = s["overall"]["group_ci95"], metric_chance("group")
        else:  # per split first: a benchmark with splits is headlined by its macro mean over them
            ci, chance = s.get("native_ci95", s.get("accuracy_ci95")), s.get("chance")
        task = f"{s['task']}, macro over splits" if s.get("headline") == "macro" else s["task"]
        return [
            {
                "column": f"{s['benchmark']} ({task})",
                "value": s["native_value"],
                "ci95": ci,
                "n": s["n"],
                "chance": chance,
            }
        ]


def for_manifest(name: str) -> PublishedTask:
    """The task of a manifest that registers none (e.g. one given by path): image+text, chance from its items."""
    return PublishedTask(name)
