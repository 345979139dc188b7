"""``python -m bindlab <command>``: the command-line face of the backend.

Every command prints a short human summary; ``--out FILE`` writes the full result as JSON with provenance.
User errors (bad ids, bad files) print one clear line to stderr and exit with status 2 — no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from bindlab.config import __version__


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


# --- generate ----------------------------------------------------------------------------------------------------
def cmd_generate_saber(a: argparse.Namespace) -> None:
    from bindlab.data.saber import generate_saber, parse_sizes, write_benchmark

    sizes = parse_sizes(a.sizes)
    t = time.perf_counter()
    questions = generate_saber(per_size=a.per_size, sizes=sizes, seed=a.seed)
    path = write_benchmark(a.out, questions, {"seed": a.seed, "per_size": a.per_size, "sizes": sizes})
    print(f"generated {len(questions)} questions (sizes {sizes[0]}-{sizes[-1]}, {a.per_size} per size, seed {a.seed}) "
          f"in {time.perf_counter() - t:.1f}s -> {path}")


# --- eval --------------------------------------------------------------------------------------------------------
def _load_questions(a: argparse.Namespace):
    from bindlab.data.schema import load_mcqs

    questions, report = load_mcqs(a.data, strict=not a.skip_bad)
    if report.skipped:
        print(f"warning: {report.summary()}", file=sys.stderr)
    if a.limit:
        questions = questions[: a.limit]
    return questions, report


def _eval(a: argparse.Namespace, evaluate: Callable, kind: str) -> None:
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.mcq import parse_pairings
    from bindlab.provenance import provenance

    pairings = parse_pairings(a.pairings)
    encoder = load_encoder(a.model, device=a.device, batch_size=a.batch_size)  # cheap: weights load on first use
    questions, report = _load_questions(a)
    t = time.perf_counter()
    results, rows = evaluate(questions, Path(a.data).parent, encoder, pairings)
    elapsed = time.perf_counter() - t
    settings = {"kind": kind, "pairings": pairings, "limit": a.limit, "batch_size": a.batch_size,
                "skipped_lines": len(report.skipped), "seconds": round(elapsed, 3)}
    out = {"pairings": results, "provenance": provenance(a.data, encoder, settings)}
    for p, r in results.items():
        if kind == "mcq":
            by_n = " ".join(f"{n}:{v:.3f}" for n, v in r["by_n"].items())
            print(f"{encoder.id} {p}: accuracy {r['accuracy']:.3f} (n={r['n']}, chance 0.25) | by N {by_n}")
        else:
            m = r["map"]
            print(f"{encoder.id} {p}: mAP {m['all']:.3f} (independent {m['independent']}, nested {m['nested']}) "
                  f"R@1 {r['r@1']:.3f} R@5 {r['r@5']:.3f}")
    _write_json(a.out, out)
    _write_per_item(a.per_item, rows)


def cmd_eval_mcq(a: argparse.Namespace) -> None:
    from bindlab.eval.mcq import evaluate_mcq

    _eval(a, evaluate_mcq, "mcq")


def cmd_eval_retrieval(a: argparse.Namespace) -> None:
    from bindlab.eval.retrieval import evaluate_retrieval

    _eval(a, evaluate_retrieval, "retrieval")


# --- models / bench ----------------------------------------------------------------------------------------------
def cmd_models(a: argparse.Namespace) -> None:
    from bindlab.encoders.base import backends
    from bindlab.encoders.presets import list_models

    rows = list_models()
    width = max(len(r["id"]) for r in rows)
    for r in rows:
        mark = "yes" if r["loadable"] else "no "
        print(f"{r['id']:<{width}}  {mark}  {r['description']} — {r['reason']}")
    print("\nbackends: " + "; ".join(f"{k} ({v})" for k, v in backends().items()))
    _write_json(a.out, {"models": rows, "backends": backends()})


def cmd_bench(a: argparse.Namespace) -> None:
    from bindlab.bench import run_bench

    result = run_bench(quick=a.quick, model=a.model, only=a.only.split(",") if a.only else None)
    print(json.dumps(result, indent=2))
    _write_json(a.out, result)


# --- parser ------------------------------------------------------------------------------------------------------
@dataclass
class Groups:
    """Where commands attach: top-level commands, ``generate <kind>`` and ``eval <kind>``."""

    top: Any
    generate: Any
    eval: Any


def _eval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, help="MCQ JSONL file (e.g. DIR/mcq.jsonl)")
    p.add_argument("--model", required=True, help="encoder id, e.g. minilm, bow, hf:openai/clip-vit-base-patch32")
    p.add_argument("--pairings", default="tt", help="comma-separated subset of tt,ti,it,ii (query→candidates)")
    p.add_argument("--out", help="write results JSON here")
    p.add_argument("--per-item", help="write every question's scores as JSONL here")
    p.add_argument("--device", default="auto", help="auto|cpu|cuda|cuda:N|mps")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--limit", type=int, default=0, help="evaluate only the first N questions")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed lines (reported) instead of refusing the file")


def _add_saber(g: Groups) -> None:
    p = g.generate.add_parser("saber", help="SABER-style 4-way binding MCQs -> DIR/mcq.jsonl")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--per-size", type=int, default=200, help="questions per scene size (half independent, half nested)")
    p.add_argument("--sizes", default="2-10", help="scene sizes, e.g. 2-10 or 2,3,5")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_generate_saber)

    m = g.eval.add_parser("mcq", help="4-way MCQ accuracy (tie-aware) by N and subset")
    _eval_args(m)
    m.set_defaults(func=cmd_eval_mcq)
    r = g.eval.add_parser("retrieval", help="pooled-gallery retrieval: mAP, R@1, R@5, containment diagnostics")
    _eval_args(r)
    r.set_defaults(func=cmd_eval_retrieval)


def _add_models_and_bench(g: Groups) -> None:
    mo = g.top.add_parser("models", help="list known encoder ids and whether they load here")
    mo.add_argument("--out")
    mo.set_defaults(func=cmd_models)

    b = g.top.add_parser("bench", help="measure pipeline overhead, cache speedup and throughput (JSON)")
    b.add_argument("--quick", action="store_true", help="smaller workloads (seconds instead of minutes)")
    b.add_argument("--model", default="minilm", help="text encoder to benchmark")
    b.add_argument("--only", help="comma-separated section names (default: all)")
    b.add_argument("--out")
    b.set_defaults(func=cmd_bench)


# Each feature adds its commands with one function here; the order is the order of --help.
COMMAND_GROUPS: list[Callable[[Groups], None]] = [
    _add_saber,
    _add_models_and_bench,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bindlab", description="bindlab: attribute–object binding lab bench")
    parser.add_argument("--version", action="version", version=f"bindlab {__version__}")
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    gen = top.add_parser("generate", help="generate a benchmark or dataset").add_subparsers(
        dest="what", required=True, metavar="KIND")
    ev = top.add_parser("eval", help="score an encoder on a benchmark").add_subparsers(
        dest="what", required=True, metavar="KIND")
    groups = Groups(top, gen, ev)
    for add in COMMAND_GROUPS:
        add(groups)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    from bindlab.data.schema import DataError
    from bindlab.encoders.base import EncoderError

    try:
        a.func(a)
    except (DataError, EncoderError, ValueError, FileNotFoundError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"error: {msg}", file=sys.stderr)
        return 2
    return 0
