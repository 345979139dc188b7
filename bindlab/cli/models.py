"""``models`` and ``bench``."""

from __future__ import annotations

import argparse
import json

from bindlab.cli.common import Groups, _write_json


# --- models / bench ----------------------------------------------------------------------------------------------
def cmd_models(a: argparse.Namespace) -> None:
    from bindlab.encoders.base import backends
    from bindlab.encoders.presets import list_models

    rows = list_models()
    width = max(len(r["id"]) for r in rows)
    for r in rows:
        mark = "yes" if r["loadable"] else "no "
        print(f"{r['id']:<{width}}  {mark}  {r['description']} — {r['reason']}")
        print(f"{'':<{width}}       text: {r['text_normalisation']}")
    print("\nbackends: " + "; ".join(f"{k} ({v})" for k, v in backends().items()))
    _write_json(a.out, {"models": rows, "backends": backends()})


def cmd_bench(a: argparse.Namespace) -> None:
    from bindlab.speed.bench import run_bench

    result = run_bench(quick=a.quick, model=a.model, only=a.only.split(",") if a.only else None)
    print(json.dumps(result, indent=2))
    _write_json(a.out, result)


def _sections() -> list[str]:
    from bindlab.speed.bench import SECTIONS

    return [name for name, _ in SECTIONS]


def add_commands(g: Groups) -> None:
    mo = g.top.add_parser("models", help="list known encoder ids and whether they load here")
    mo.add_argument("--out", help="also write the list (and the backends) as JSON here")
    mo.set_defaults(func=cmd_models)

    b = g.top.add_parser("bench", help="measure pipeline overhead, cache speedup and throughput (JSON)")
    b.add_argument("--quick", action="store_true", help="smaller workloads (seconds instead of minutes)")
    b.add_argument("--model", default="minilm", help="text encoder to benchmark")
    b.add_argument(
        "--only",
        metavar="SECTION[,SECTION...]",
        help="run only these sections (default: all), comma-separated: " + ", ".join(_sections()),
    )
    b.add_argument("--out", help="also write the figures JSON here")
    b.set_defaults(func=cmd_bench)
