"""Helpers every command shares: JSON/per-item writers, ``--export`` options, the parser groups."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _write_json(path: str | None, obj: Any) -> None:
    if path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(obj, indent=2))
        print(f"wrote {p}")


def _write_per_item(path: str | None, rows: list[dict[str, Any]]) -> None:
    if path:
        from bindlab.data.schema import write_jsonl

        write_jsonl(path, rows)
        print(f"wrote {len(rows)} per-item rows to {path}")


def _export_formats(spec: str) -> list[str]:
    from bindlab.present.exports import parse_formats

    try:
        return parse_formats(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--export", metavar="DIR", help="also write the results as files into DIR: tables as CSV + JSON "
                                                   "(with provenance), figures as PNG + SVG + HTML, per-item JSONL")
    p.add_argument("--export-formats", type=_export_formats, default="all",
                   help="with --export: comma-separated subset of csv,json,jsonl,png,svg,html (default all)")


def _write_export(a: argparse.Namespace, build: Callable[[], Any], prov: dict[str, Any]) -> None:
    """``--export DIR``: write ``build()`` (a :class:`bindlab.present.exports.ResultView`) through :mod:`bindlab.present.exports`."""
    if getattr(a, "export", None):
        from bindlab.present.exports import write_view

        w = write_view(build(), a.export, prov, a.export_formats)
        print(f"exported {len(w.paths)} files to {a.export}")
        for note in w.notes:
            print(f"note: {note}", file=sys.stderr)


def _fmt(x: float | None, spec: str = "+.4f") -> str:
    return "nan" if x is None else format(x, spec)


# --- parser ------------------------------------------------------------------------------------------------------
@dataclass
class Groups:
    """Where commands attach: top-level commands, ``generate <kind>`` and ``eval <kind>``."""

    top: Any
    generate: Any
    eval: Any
