"""``generate composet``, ``eval pairs``, ``eval benchmark``: single-edit 2x2 pairs and published benchmarks (the Pairs tab's feature)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bindlab.cli.common import Groups, _export_args, _write_export, _write_json, _write_per_item


# --- pairs: CompoSET-style single-edit pairs and the published pairwise benchmarks ---------------------------------
def cmd_generate_composet(a: argparse.Namespace) -> None:
    from bindlab.data.composet import generate_composet

    t = time.perf_counter()
    path = generate_composet(a.out, scenes=a.scenes, foils_per_scene=a.foils_per_scene, seed=a.seed, size=a.size,
                             workers=a.workers)
    meta = json.loads((path.parent / "meta.json").read_text())
    px = meta["pixels_changed"]
    print(f"generated {meta['pairs']} pairs over {a.scenes} scenes ({meta['discarded_foils']} foils discarded) in "
          f"{time.perf_counter() - t:.1f}s -> {path}; pixels changed per pair: mean {px['mean']:.3f}, "
          f"median {px['median']:.3f}")


def cmd_eval_pairs(a: argparse.Namespace) -> None:
    from bindlab.data.pairs_schema import load_pairs
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.pairs import by_edit_type_rows, evaluate_pairs, format_table
    from bindlab.provenance import provenance

    encoder = load_encoder(a.model, device=a.device, batch_size=a.batch_size)
    pairs, report = load_pairs(a.data, strict=not a.skip_bad)
    if report.skipped:
        print(f"warning: {report.summary()}", file=sys.stderr)
    pairs = pairs[: a.limit] if a.limit else pairs
    t = time.perf_counter()
    summary, rows = evaluate_pairs(pairs, Path(a.data).parent, encoder, a.verbosity, seed=a.seed)
    settings = {"kind": "pairs", "verbosity": a.verbosity, "limit": a.limit, "batch_size": a.batch_size,
                "skipped_lines": len(report.skipped), "seconds": round(time.perf_counter() - t, 3)}
    o, c = summary["overall"], summary["controls"]
    print(f"{encoder.id} on {len(pairs)} pairs ({'/'.join(summary['levels'])}): I2T {o['i2t']:.3f} T2I {o['t2i']:.3f} "
          f"Group {o['group']:.3f} (95% CI {o['group_ci95'][0]:.3f}-{o['group_ci95'][1]:.3f}; chance .25/.25/.167)")
    print(format_table(by_edit_type_rows(summary)))
    sp = summary["scene_edit_split"]
    print(f"scene-hard / edit-hard split over {sp['counts']['scenes']} scenes: {sp['counts']} "
          f"(both expected under independence {sp['both_expected_under_independence']:.4f} of scenes); "
          f"within-scene share of margin variance {sp['within_scene_variance_share']:.3f}")
    print(f"within-pair image cosine {c['within_pair_image_cosine']['mean']:.4f} vs across scenes "
          f"{c['across_scene_image_cosine']:.4f}" + (f"; pixels changed {c['pixels_changed']['mean']:.3f}"
                                                    if c["pixels_changed"] else ""))
    prov = provenance(a.data, encoder, settings, a.seed)
    _write_json(a.out, {**summary, "provenance": prov})
    _write_per_item(a.per_item, rows)
    from bindlab.present.exports import pairs_export

    _write_export(a, lambda: pairs_export(summary, rows, encoder.id), prov)


def cmd_eval_benchmark(a: argparse.Namespace) -> None:
    from bindlab.data.adapters import load_benchmark
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.benchmarks import evaluate_benchmark
    from bindlab.provenance import provenance

    encoder = load_encoder(a.model, device=a.device, batch_size=a.batch_size)
    bench = load_benchmark(a.name, data=a.data, split=a.split, limit=a.limit, images=a.images, source=a.source)
    t = time.perf_counter()
    summary, rows = evaluate_benchmark(bench, encoder, task=a.task, seed=a.seed)
    nm, v = summary["native_metric"], summary["validity"]
    shown = {k: (round(x, 4) if isinstance(x, float) else x) for k, x in nm.items() if k != "name"}
    print(f"{encoder.id} on {bench.name} ({summary['n']} items from {bench.source}): {nm['name']} {shown}")
    print(f"validity: {v['same_bag_items']} items ({v['same_bag_share']:.1%}) have positive and negative captions "
          f"with the same bag of words; text-only bag-of-words score {summary['bow_text_only']}")
    settings = {"kind": "benchmark", "benchmark": bench.name, "source": bench.source, "split": a.split,
                "task": summary["task"], "limit": a.limit, "seconds": round(time.perf_counter() - t, 3),
                "manifest": {k: bench.manifest.get(k) for k in ("license", "citation", "url")}}
    dataset = bench.source if Path(bench.source).is_file() else None
    _write_json(a.out, {**summary, "provenance": provenance(dataset, encoder, settings, a.seed)})
    _write_per_item(a.per_item, rows)


def add_commands(g: Groups) -> None:
    p = g.generate.add_parser("composet", help="CompoSET-style same-scene single-edit pairs -> DIR/pairs.jsonl + images")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--scenes", type=int, default=80, help="base scenes (4-10 objects each)")
    p.add_argument("--foils-per-scene", type=int, default=22, help="foils per scene, each one edit (>= 15)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", type=int, default=256, help="image side in pixels")
    p.add_argument("--workers", type=int, default=2, help="rendering processes")
    p.set_defaults(func=cmd_generate_composet)

    e = g.eval.add_parser("pairs", help="Winoground-style 2x2 scoring of a Pairs file: I2T, T2I, Group by edit type")
    e.add_argument("--data", required=True, help="Pairs JSONL file (e.g. DIR/pairs.jsonl)")
    e.add_argument("--model", required=True, help="image+text encoder id, e.g. toy:clip, hf:/path/to/clip")
    e.add_argument("--verbosity", default="all", help="caption level: short|medium|long|all")
    e.add_argument("--out", help="write results JSON here")
    e.add_argument("--per-item", help="write every pair's 2x2 scores as JSONL here")
    _export_args(e)
    e.add_argument("--device", default="auto", help="auto|cpu|cuda|cuda:N|mps")
    e.add_argument("--batch-size", type=int, default=64)
    e.add_argument("--limit", type=int, default=0, help="score only the first N pairs")
    e.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    e.add_argument("--skip-bad", action="store_true", help="skip malformed lines (reported) instead of refusing the file")
    e.set_defaults(func=cmd_eval_pairs)

    b = g.eval.add_parser("benchmark", help="a published benchmark (data_manifests/) with its native metric + "
                                            "bag-of-words validity check")
    b.add_argument("--name", required=True, help="winoground | colorswap | sugarcrepe | sugarcrepe_pp | "
                                                 "aro_vg_attribution, or a manifest .json path")
    b.add_argument("--model", required=True, help="encoder id (image+text, or text-only for --task tot)")
    b.add_argument("--data", help="local copy in the published format (overrides the manifest's path)")
    b.add_argument("--images", help="image folder (COCO val2017 for SugarCrepe/SugarCrepe++, VG images for ARO)")
    b.add_argument("--split", help="split name(s), comma-separated (default: all)")
    b.add_argument("--task", help="itt (image-to-text, default) or tot (SugarCrepe++ text-only)")
    b.add_argument("--source", default="auto", help="auto|local|hub")
    b.add_argument("--limit", type=int, default=0, help="at most N items (per split)")
    b.add_argument("--out", help="write results JSON here")
    b.add_argument("--per-item", help="write per-item pass/fail as JSONL here")
    b.add_argument("--device", default="auto")
    b.add_argument("--batch-size", type=int, default=64)
    b.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    b.set_defaults(func=cmd_eval_benchmark)
