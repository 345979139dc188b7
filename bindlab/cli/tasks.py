"""``tasks``: the benchmarks bindlab can run (the registry of :mod:`bindlab.tasks`), one line each."""

from __future__ import annotations

import argparse
import json
from typing import Any

from bindlab.cli.common import Groups


def task_rows() -> list[dict[str, Any]]:
    """One row per registered task: name, label, modalities, main score, chance (and its note), data kind, source,
    citation."""
    from bindlab.tasks import list_tasks

    return [
        {
            "name": m.name,
            "label": m.label,
            "modalities": sorted(m.modalities),
            "main_score": m.main_score,
            "chance": m.chance,
            "chance_note": m.chance_note,
            "data_kind": m.data_kind,
            "source": m.source,
            "citation": m.citation,
        }
        for m in (t.metadata for t in list_tasks())
    ]


def tasks_text(rows: list[dict[str, Any]]) -> str:
    """The rows as a plain-text table: name, modalities, main score, chance, source."""
    header = ["name", "modalities", "main score", "chance", "source"]
    cells = [
        [
            r["name"],
            "+".join(r["modalities"]),
            r["main_score"],
            "—" if r["chance"] is None else f"{r['chance']:.3f}",
            r["source"] or "—",
        ]
        for r in rows
    ]
    widths = [max(len(x) for x in col) for col in zip(header, *cells, strict=True)]
    return "\n".join(
        "  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip() for line in [header, *cells]
    )


def cmd_tasks(a: argparse.Namespace) -> None:
    rows = task_rows()
    if a.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    print(tasks_text(rows))
    print(
        "chance: of one item of the task's shape (positives against negatives); compare --suite takes these names "
        "(a published benchmark also as benchmark:NAME[=PATH])"
    )


def add_commands(g: Groups) -> None:
    p = g.top.add_parser("tasks", help="list the benchmarks bindlab runs: name, modalities, main score, chance, source")
    p.add_argument("--json", action="store_true", help="every field of each task's metadata, as JSON")
    p.set_defaults(func=cmd_tasks)
