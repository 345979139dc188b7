"""``attention``: per-layer attention binding margins (the Attention tab's feature)."""

from __future__ import annotations

import argparse
import time

from bindlab.cli.common import Groups, _export_args, _fmt, _write_export, _write_json, _write_per_item


def cmd_attention(a: argparse.Namespace) -> None:
    from bindlab.analysis.attention import load_caption_sets, per_item_rows, results_json, run_attention
    from bindlab.encoders.base import load_encoder
    from bindlab.provenance import provenance

    sets = load_caption_sets(a.data, limit=a.limit)
    t = time.perf_counter()
    encoder = load_encoder(a.model, device=a.device)
    runs = run_attention(encoder, sets, a.direction)
    compare = None
    if a.compare:
        enc2 = load_encoder(a.compare, device=a.device)
        compare = (enc2, run_attention(enc2, sets, a.direction))
    res = results_json(encoder, runs, a.direction, compare, seed=a.seed)
    elapsed = time.perf_counter() - t
    for name, s in res["sets"].items():
        ratio = res["compare"]["ratio"][name].get("ratio") if compare else None
        print(f"{encoder.id} · {name}: binding margin per layer ({a.direction}, {s['n_captions']} captions, "
              f"{s['n_skipped']} skipped; 95% bootstrap CI)" + (f"; ratio = {compare[0].id} / {encoder.id}" if compare else ""))
        for i, layer in enumerate(s["layers"]):
            line = f"  layer {layer:>2}: {_fmt(s['margin_mean'][i])}  [{_fmt(s['ci_low'][i])}, {_fmt(s['ci_high'][i])}]"
            if compare:
                line += f"  {compare[0].id}: {_fmt(res['compare']['sets'][name]['margin_mean'][i])}"
                line += f"  ratio {_fmt(ratio[i], '.2f') if ratio else 'n/a'}"
            print(line)
    settings = {"direction": a.direction, "limit": a.limit, "compare": a.compare, "n_boot": 1000,
                "seconds": round(elapsed, 3)}
    res["provenance"] = provenance(a.data, encoder, settings, a.seed)
    _write_json(a.out, res)
    _write_per_item(a.per_item, per_item_rows(runs))
    from bindlab.present.exports import attention_export

    _write_export(a, lambda: attention_export(res, per_item_rows(runs)), res["provenance"])


def add_commands(g: Groups) -> None:
    p = g.top.add_parser("attention", help="attention binding margin per layer (own minus other attributes)")
    p.add_argument("--model", required=True, help="encoder with a text transformer: minilm, toy:clip, hf:…, qwen3vl:…")
    p.add_argument("--data", required=True, help="MCQ JSONL (query texts), triplets JSONL (queries + positives) or "
                                                 "captions JSONL ({\"text\", \"bindings\"} per line)")
    p.add_argument("--limit", type=int, default=0, help="first N captions of each caption set (0 = all)")
    p.add_argument("--compare", help="a second encoder id; prints and writes the per-layer ratio second / first")
    p.add_argument("--direction", default="later_to_earlier", choices=["later_to_earlier", "earlier_to_later"],
                   help="later_to_earlier (any model) or earlier_to_later (bidirectional models only)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--device", default="auto", help="auto|cpu|cuda|cuda:N|mps")
    p.add_argument("--out", help="write results JSON here")
    p.add_argument("--per-item", help="write every caption's per-layer margins as JSONL here")
    _export_args(p)
    p.set_defaults(func=cmd_attention)
