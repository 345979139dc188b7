"""Helpers every command shares: JSON/per-item writers, ``--export`` options, the parser groups."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _write_json(path: str | None, obj: Any) -> None:
    """``--out FILE``: the result as JSON, written atomically (temp file + rename) after the path is checked."""
    if path:
        from bindlab.studies.validate import output_file

        p = output_file(path, "out", allow_assets=True)  # assets/ is refused before work, in cli.main
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(obj, indent=2))
            os.replace(tmp, p)
        finally:
            tmp.unlink(missing_ok=True)
        print(f"wrote {p}")


def _write_per_item(path: str | None, rows: list[dict[str, Any]]) -> None:
    """``--per-item FILE``: one JSON line per item (never onto a device or a folder)."""
    if path:
        from bindlab.data.schema import write_jsonl
        from bindlab.studies.validate import output_file

        write_jsonl(output_file(path, "per_item", allow_assets=True), rows)
        print(f"wrote {len(rows)} per-item rows to {path}")


# --- typed arguments: argparse `type=` functions (a bad value is a usage error naming the flag) --------------------
def _typed(check: Callable[..., Any], *args: Any) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return check(text, "value", *args)
        except ValueError as e:
            msg = str(e)
            for prefix in ("--value: ", "--value "):  # argparse names the flag itself
                msg = msg.removeprefix(prefix)
            raise argparse.ArgumentTypeError(msg) from None
    parse.__name__ = check.__name__
    return parse


def positive_int(text: str) -> int:
    """``type=positive_int``: a whole number >= 1 (batch sizes, counts)."""
    from bindlab.studies.validate import positive_int as check

    return _typed(check)(text)


def nonneg_int(text: str) -> int:
    """``type=nonneg_int``: a whole number >= 0 (limits, where 0 means all)."""
    from bindlab.studies.validate import nonneg_int as check

    return _typed(check)(text)


def finite_float(text: str) -> float:
    """``type=finite_float``: a finite number (no nan/inf)."""
    from bindlab.studies.validate import finite_float as check

    return _typed(check)(text)


def positive_float(text: str) -> float:
    """``type=positive_float``: a finite number > 0 (learning rate, LoRA alpha)."""
    from bindlab.studies.validate import finite_float as check

    return _typed(check, 0.0, None, True)(text)


def out_file(text: str) -> str:
    """``type=out_file``: a regular file or a new one in a folder that exists or can be made (never a device,
    a folder, or a path under assets/)."""
    from bindlab.studies.validate import output_file

    _typed(output_file)(text)
    return text


def out_dir(text: str) -> str:
    """``type=out_dir``: an existing folder or a new one (never a file)."""
    from bindlab.studies.validate import output_dir

    _typed(output_dir)(text)
    return text


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
