"""``export-dataset``: any bindlab benchmark as a Hugging Face ``datasets`` folder (parquet + dataset card)."""

from __future__ import annotations

import argparse

from bindlab.cli.common import Groups


def cmd_export_dataset(a: argparse.Namespace) -> None:
    from bindlab.data.hf_datasets import detect_kind, export_dataset

    kind, path = detect_kind(a.data)
    out = export_dataset(a.data, a.out, name=a.name)
    shards = sorted((out / "data").glob("*.parquet"))
    size = sum(s.stat().st_size for s in shards)
    print(
        f"exported {path} ({kind}) -> {out}: {len(shards)} parquet shard(s), {size / 1e6:.1f} MB, dataset card "
        f"{out / 'README.md'}; open it with datasets.load_dataset({str(out)!r}) or pass it as --data"
    )


def add_commands(g: Groups) -> None:
    p = g.top.add_parser(
        "export-dataset",
        help="write a benchmark as a Hugging Face datasets folder (parquet with "
        "images + a dataset card) that --data and datasets.load_dataset read",
    )
    p.add_argument(
        "--data",
        required=True,
        help="mcq.jsonl, pairs.jsonl, triplets.jsonl, a grid's index.csv, or the folder holding one",
    )
    p.add_argument("--out", required=True, help="the folder to write (new, empty, or an earlier export)")
    p.add_argument("--name", help="the dataset card's title (default: the set's folder name)")
    p.set_defaults(func=cmd_export_dataset)
