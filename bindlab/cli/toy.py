"""``train toy``, ``eval toy``: the toy vision-language models and their cards."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import Any

from bindlab.cli.common import OUT_HELP, Groups, _write_json, _write_per_item, add_fields, add_run_option, option_fields


def _train_request(a: argparse.Namespace) -> Any:
    """The :class:`~bindlab.studies.toy.ToyTrainRequest` of a parsed ``train toy``: one keyword per option field."""
    from bindlab.studies.toy import ModelSize, ToyTrainRequest

    settings = {f.name: getattr(a, f.name) for f in option_fields(ToyTrainRequest)}
    model = ModelSize(**{f.name: getattr(a, f.name) for f in option_fields(ModelSize)}).overrides()
    return ToyTrainRequest(**settings, model=model, progress=not a.no_progress)


def cmd_train_toy(a: argparse.Namespace) -> None:
    from bindlab.studies.toy import run_toy_train

    request = _train_request(a)
    record = run_toy_train(request).summary
    out = Path(a.out)
    if not record["finished"]:
        print(
            f"stopped at step {record['steps']}/{a.steps}; run the same command again to resume from {out}/checkpoint"
        )
        return
    if record.get("captions"):
        c = record["captions"]
        print(
            f"captions: {c['captions']:,} ({c['distinct']:,} distinct) embedded once by {c['text_model']} in "
            f"{c['embed_seconds']:.0f}s -> {out / c['cache']}"
        )
    print(
        f"trained toy:{a.arch} ({record['parameters']:,} parameters) for {record['steps']} steps in "
        f"{record['train_seconds']:.0f}s (+{record['render_seconds']:.0f}s rendering); final loss "
        f"{record['final_loss']:.3f} -> toy:{out.resolve()}"
    )
    if a.eval_sample:
        cmd_eval_toy(
            argparse.Namespace(
                model=f"toy:{out.resolve()}",
                sample=a.eval_sample,
                per_size=a.eval_per_size,
                out=str(out / "eval.json"),
                seed=a.seed,
            )
        )


def cmd_eval_toy(a: argparse.Namespace) -> None:
    from bindlab.studies.toy import ToyEvalRequest, run_toy_eval

    request = ToyEvalRequest(
        model=a.model,
        sample=a.sample,
        per_size=a.per_size,
        seed=a.seed,
        card=bool(getattr(a, "card", False)),
        card_notes=tuple(getattr(a, "note", None) or ()),
    )
    res = run_toy_eval(request)
    for line in res.notes:
        print(line)
    _write_json(a.out, {**res.summary, "provenance": res.provenance})
    _write_per_item(getattr(a, "per_item", None), res.rows)


def add_commands(g: Groups) -> None:
    _add_train_toy(g)
    _add_eval_toy(g)


def _add_train_toy(g: Groups) -> None:
    """``train toy``: a flag per training setting (:class:`bindlab.train.toy.config.TrainConfig`, the model sizes
    where the config keeps them, ``--out`` after the architecture), then the final evaluation's and the bar's."""
    from bindlab.studies.toy import ModelSize, ToyTrainRequest

    tr = g.top.add_parser("train", help="train a model").add_subparsers(dest="what", required=True, metavar="KIND")
    p = tr.add_parser(
        "toy", help="train a toy vision-language model (toy:clip / toy:shared / toy:lit-minilm) on rendered scenes"
    )
    for f in fields(ToyTrainRequest):
        if f.metadata.get("sizes"):
            add_fields(p, ModelSize)
        elif "help" in f.metadata and f.name != "out":
            add_fields(p, ToyTrainRequest, [f.name])
        if f.name == "text":
            add_fields(p, ToyTrainRequest, ["out"])
    p.add_argument(
        "--eval-sample",
        type=int,
        default=300,
        help="held-out single-object renders for the final evaluation (0 = skip it)",
    )
    p.add_argument("--eval-per-size", type=int, default=10, help="MCQs per N = 2..10 in the final evaluation")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_train_toy)


def _add_eval_toy(g: Groups) -> None:
    e = g.eval.add_parser("toy", help="single-object retrieval and image MCQs on rendered scenes (toy model card)")
    add_run_option(e, "model", required=True, default=None, help="encoder id with text and images, e.g. toy:clip")
    e.add_argument(
        "--sample",
        type=int,
        default=0,
        help="held-out single-object renders (0 = all 1008 shape x attribute combinations)",
    )
    e.add_argument("--per-size", type=int, default=40, help="MCQs per N = 2..10")
    add_run_option(e, "seed", metavar=None, help="seed of the sampled renders and MCQs")
    e.add_argument("--out", help=OUT_HELP)
    e.add_argument(
        "--per-item",
        metavar="FILE",
        help="write each single-object render's hits (t2i, i2t: 0/1) and its combination (seen / unseen) as JSONL",
    )
    e.add_argument(
        "--card", action="store_true", help="also write the model card README.md into the toy model's folder"
    )
    e.add_argument(
        "--note",
        action="append",
        help="a line for the card's training section (repeatable), e.g. the machine's load during training",
    )
    e.set_defaults(func=cmd_eval_toy)
