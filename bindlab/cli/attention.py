"""``attention``: per-layer attention binding margins (the Attention tab's feature)."""

from __future__ import annotations

import argparse

from bindlab.cli.common import (
    Groups,
    _fmt,
    _write_export,
    _write_json,
    _write_per_item,
    add_data_model,
    add_output_args,
    add_run_args,
)


def cmd_attention(a: argparse.Namespace) -> None:
    from bindlab.present.exports import attention_export
    from bindlab.studies.attention import AttentionRequest, run_attention
    from bindlab.studies.progress import progress_for

    request = AttentionRequest(
        a.model, a.data, a.limit, a.compare, a.direction, seed=a.seed, device=a.device, dtype=a.dtype
    )
    with progress_for(not a.no_progress, "attention") as report:
        result = run_attention(request, report)
    res = result.summary
    cmp = res.get("compare")
    for name, s in res["sets"].items():
        ratio = cmp["ratio"][name].get("ratio") if cmp else None
        print(
            f"{res['model']} · {name}: binding margin per layer ({res['direction']}, {s['n_captions']} captions, "
            f"{s['n_skipped']} skipped; 95% bootstrap CI)"
            + (f"; ratio = {cmp['model']} / {res['model']}" if cmp else "")
        )
        for i, layer in enumerate(s["layers"]):
            line = f"  layer {layer:>2}: {_fmt(s['margin_mean'][i])}  [{_fmt(s['ci_low'][i])}, {_fmt(s['ci_high'][i])}]"
            if cmp:
                line += f"  {cmp['model']}: {_fmt(cmp['sets'][name]['margin_mean'][i])}"
                line += f"  ratio {_fmt(ratio[i], '.2f') if ratio else 'n/a'}"
            print(line)
    _write_json(a.out, result.to_json())
    _write_per_item(a.per_item, result.rows)
    _write_export(a, lambda: attention_export(result), result.provenance)


def add_commands(g: Groups) -> None:
    p = g.top.add_parser("attention", help="attention binding margin per layer (own minus other attributes)")
    add_data_model(
        p,
        "MCQ JSONL (query texts), triplets JSONL (queries + positives) or captions JSONL "
        '({"text", "bindings"} per line)',
        "encoder with a text transformer: minilm, toy:clip, hf:…, qwen3vl:…",
    )
    p.add_argument("--compare", help="a second encoder id; prints and writes the per-layer ratio second / first")
    p.add_argument(
        "--direction",
        default="later_to_earlier",
        choices=["later_to_earlier", "earlier_to_later"],
        help="later_to_earlier (any model) or earlier_to_later (bidirectional models only)",
    )
    add_run_args(p, batch_size=False, limit="first N captions of each caption set (0 = all)", seed="bootstrap seed")
    add_output_args(p, per_item="write every caption's per-layer margins as JSONL here")
    p.set_defaults(func=cmd_attention)
