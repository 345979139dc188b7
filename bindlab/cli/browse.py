"""``generate saber``, ``eval mcq``, ``eval retrieval``: the SABER MCQ benchmark (the Browse tab's feature)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from bindlab.cli.common import (
    Groups,
    _write_export,
    _write_json,
    _write_per_item,
    add_data_model,
    add_output_args,
    add_run_args,
)
from bindlab.result import Result
from bindlab.studies.progress import progress_for


# --- generate ----------------------------------------------------------------------------------------------------
def cmd_generate_saber(a: argparse.Namespace) -> None:
    from tqdm import tqdm

    from bindlab.studies.generate import generate_saber_set

    t = time.perf_counter()
    with tqdm(total=0, desc="rendering", unit="img", disable=not a.images) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        path, settings, rendered = generate_saber_set(
            a.out,
            per_size=a.per_size,
            sizes=a.sizes,
            seed=a.seed,
            images=a.images,
            template=a.template,
            vocab_from=a.vocab_from,
            size=a.size,
            workers=a.workers,
            progress=progress,
        )
    n = sum(1 for _ in open(path, encoding="utf-8"))
    if a.images:
        print(f"rendered {rendered} new images ({5 * n - rendered} already there) at {a.size}px")
    sizes = settings["sizes"]
    print(
        f"generated {n} questions ({settings['template']} template, sizes {sizes[0]}-{sizes[-1]}, {a.per_size} per "
        f"size, seed {a.seed}) in {time.perf_counter() - t:.1f}s -> {path}"
    )


# --- eval: parse -> studies.browse.run_* -> print / write ------------------------------------------------------
def _request(a: argparse.Namespace):
    from bindlab.studies.browse import McqRequest

    return McqRequest(
        data=a.data or _embedded_data(a),
        model=a.model,
        pairings=a.pairings,
        limit=a.limit,
        batch_size=a.batch_size,
        device=a.device,
        dtype=a.dtype,
        skip_bad=a.skip_bad,
    )


def _embedded_data(a: argparse.Namespace) -> str:
    """No ``--data``: the embedded mini benchmark, as Browse picks it (with images when a pairing needs them, over the
    renderable words when the model does not know the full vocabulary), named on stderr."""
    from bindlab.studies.common import embedded_data_for

    path = embedded_data_for(a.model, str(a.pairings or "tt").replace(" ", "").split(","), device=a.device)
    print(f"data: the embedded mini benchmark ({path})", file=sys.stderr)
    return path


def _write(a: argparse.Namespace, result: Result, build: Callable[[Result], Any]) -> None:
    """Notes to stderr, then ``--out`` (summary + provenance), ``--per-item`` and ``--export``."""
    for note in result.notes:
        print(f"warning: {note}", file=sys.stderr)
    _write_json(a.out, result.to_json())
    _write_per_item(a.per_item, result.rows)
    _write_export(a, lambda: build(result), result.provenance)


def cmd_eval_mcq(a: argparse.Namespace) -> None:
    from bindlab.present.exports import mcq_export
    from bindlab.studies.browse import run_mcq, unknown_words_text

    with progress_for(not a.no_progress, "eval mcq") as report:
        result = run_mcq(_request(a), report)
    model = result.provenance["encoder"]["id"]
    for p, r in result.summary["pairings"].items():
        by_n = " ".join(f"{n}:{v:.3f}" for n, v in r["by_n"].items())
        lo, hi = r["ci95"]
        print(
            f"{model} {p}: accuracy {r['accuracy']:.3f} [{lo:.3f}, {hi:.3f}] (n={r['n']}, chance {r['chance']:.3f}: "
            f"{r['vs_chance']}) | by N {by_n}"
        )
    unknown = result.summary.get("unknown_words")
    if unknown:
        print(f"{model} unknown words: {unknown_words_text(unknown)}")
    _write(a, result, mcq_export)


def cmd_eval_retrieval(a: argparse.Namespace) -> None:
    from bindlab.present.exports import retrieval_export
    from bindlab.studies.browse import run_retrieval

    with progress_for(not a.no_progress, "eval retrieval") as report:
        result = run_retrieval(_request(a), report)
    model = result.provenance["encoder"]["id"]
    for p, r in result.summary["pairings"].items():
        m = r["map"]
        print(
            f"{model} {p}: mAP {m['all']:.3f} (independent {m['independent']}, nested {m['nested']}) "
            f"R@1 {r['r@1']:.3f} R@5 {r['r@5']:.3f}"
        )
    _write(a, result, retrieval_export)


def _eval_args(p: argparse.ArgumentParser, per_item: str) -> None:
    add_data_model(
        p,
        "MCQ JSONL file, e.g. DIR/mcq.jsonl (default: the embedded mini benchmark, with images when a "
        "pairing needs them, over the renderable words for the toy models)",
        "encoder id, e.g. minilm, bow, hf:openai/clip-vit-base-patch32",
        data_required=False,
    )
    p.add_argument("--pairings", default="tt", help="comma-separated subset of tt,ti,it,ii (query→candidates)")
    add_run_args(p, limit="evaluate only the first N questions (0 = all)", skip_bad=True)
    add_output_args(p, per_item=per_item)


def add_commands(g: Groups) -> None:
    p = g.generate.add_parser("saber", help="SABER-style 4-way binding MCQs -> DIR/mcq.jsonl")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--per-size", type=int, default=200, help="questions per scene size (half independent, half nested)")
    p.add_argument("--sizes", default="2-10", help="scene sizes, e.g. 2-10 or 2,3,5")
    p.add_argument("--seed", type=int, default=0, help="generator seed (same seed and settings, same questions)")
    p.add_argument(
        "--images",
        action="store_true",
        help="also render the query and candidate images (renderable vocabulary; resumable)",
    )
    p.add_argument("--size", type=int, default=256, help="image side in pixels (with --images)")
    p.add_argument("--workers", type=int, default=2, help="rendering processes (with --images)")
    p.add_argument(
        "--template",
        default="attributive",
        help="sentence template of every text: attributive ('A red cube and a blue sphere.'), "
        "predicative ('The cube is red and ...'), relative ('A cube that is red and ...') or with "
        "('A cube with a red colour and ...'; colour, material, pattern and texture attributes only)",
    )
    p.add_argument(
        "--vocab-from",
        help="holdout_vocab.json from 'generate triplets --holdout-words': use only its "
        "held-out objects and attributes",
    )
    p.set_defaults(func=cmd_generate_saber)

    m = g.eval.add_parser("mcq", help="4-way MCQ accuracy (tie-aware) by N and subset")
    _eval_args(m, "write every question's scores as JSONL here")
    m.set_defaults(func=cmd_eval_mcq)
    r = g.eval.add_parser("retrieval", help="pooled-gallery retrieval: mAP, R@1, R@5, containment diagnostics")
    _eval_args(r, "write one JSON line per query and pairing here")
    r.set_defaults(func=cmd_eval_retrieval)
