"""``audit-splits``: prove from the data that held-out templates, words and combinations are absent from training."""

from __future__ import annotations

import argparse

from bindlab.cli.common import OUT_HELP, Groups, _write_json


def cmd_audit_splits(a: argparse.Namespace) -> None:
    from bindlab.studies.audit import audit_splits, format_audits

    models = [m.strip() for m in (a.models or "").split(",") if m.strip()]
    result = audit_splits(a.data, a.toy, models)
    print(format_audits(result))
    _write_json(a.out, result)
    if not all(r["clean"] for r in result.values()):
        raise SystemExit(1)


def add_commands(g: Groups) -> None:
    p = g.top.add_parser(
        "audit-splits",
        help="scan a triplet set (or a toy model's training streams) for held-out "
        "templates, words and combinations in training rows; exit 1 on a leak",
    )
    p.add_argument(
        "data",
        nargs="?",
        metavar="DIR",
        help="a folder 'generate triplets' wrote (triplets.jsonl, and holdout_vocab.json with --holdout-words)",
    )
    p.add_argument(
        "--toy",
        metavar="MODEL",
        help="a toy model (toy:shared, or a folder 'train toy' wrote): regenerate "
        "its training streams from training.json and scan them",
    )
    p.add_argument(
        "--models",
        default="minilm",
        help="comma-separated models whose tokenizers check held-out words below the word "
        "(e.g. cup inside cupcake's WordPiece pieces; default minilm)",
    )
    p.add_argument("--out", help=OUT_HELP)
    p.set_defaults(func=cmd_audit_splits)
