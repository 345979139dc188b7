"""``generate composet``, ``eval pairs``, ``eval benchmark``: single-edit 2x2 pairs and published benchmarks (the Pairs tab's feature)."""

from __future__ import annotations

import argparse
import json
import sys
import time
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


# --- pairs: CompoSET-style single-edit pairs and the published pairwise benchmarks ---------------------------------
def cmd_generate_composet(a: argparse.Namespace) -> None:
    from bindlab.data.composet import generate_composet

    t = time.perf_counter()
    path = generate_composet(
        a.out, scenes=a.scenes, foils_per_scene=a.foils_per_scene, seed=a.seed, size=a.size, workers=a.workers
    )
    meta = json.loads((path.parent / "meta.json").read_text())
    px = meta["pixels_changed"]
    print(
        f"generated {meta['pairs']} pairs over {a.scenes} scenes ({meta['discarded_foils']} foils discarded) in "
        f"{time.perf_counter() - t:.1f}s -> {path}; pixels changed per pair: mean {px['mean']:.3f}, "
        f"median {px['median']:.3f}"
    )


def _edit_type_table(rows: list[dict[str, Any]]) -> str:
    """Plain-text table of the per-edit-type rows ``{edit_type, category, origin, n, i2t, t2i, group}``."""
    lines = [f"{'edit type':<22}{'category':<16}{'origin':<10}{'n':>6}{'I2T':>8}{'T2I':>8}{'Group':>8}"]
    for r in rows:
        lines.append(
            f"{r['edit_type']:<22}{r['category']:<16}{r.get('origin', ''):<10}{r['n']:>6}{r['i2t']:>8.3f}"
            f"{r['t2i']:>8.3f}{r['group']:>8.3f}"
        )
    return "\n".join(lines)


def cmd_eval_pairs(a: argparse.Namespace) -> None:
    from bindlab.present.exports import pairs_export
    from bindlab.studies.pairs import PairsRequest, origin_line, run_pairs
    from bindlab.studies.progress import progress_for

    request = PairsRequest(
        data=a.data,
        model=a.model,
        verbosity=a.verbosity,
        limit=a.limit,
        batch_size=a.batch_size,
        device=a.device,
        dtype=a.dtype,
        seed=a.seed,
        skip_bad=a.skip_bad,
    )
    with progress_for(not a.no_progress, "eval pairs") as report:
        result = run_pairs(request, report)
    for note in result.notes:
        print(f"warning: {note}", file=sys.stderr)
    summary = result.summary
    o, c = summary["overall"], summary["controls"]
    print(
        f"{result.provenance['encoder']['id']} on {summary['n_pairs']} pairs ({'/'.join(summary['levels'])}): "
        f"I2T {o['i2t']:.3f} T2I {o['t2i']:.3f} Group {o['group']:.3f} "
        f"(95% CI {o['group_ci95'][0]:.3f}-{o['group_ci95'][1]:.3f}; chance .25/.25/.167)"
    )
    by_origin = origin_line(summary)
    if by_origin:
        print(f"by origin: {by_origin}")
    print(_edit_type_table(result.tables["by_edit_type"]))
    sp = summary["scene_edit_split"]
    print(
        f"scene-hard / edit-hard split over {sp['counts']['scenes']} scenes: {sp['counts']} "
        f"(both expected under independence {sp['both_expected_under_independence']:.4f} of scenes); "
        f"within-scene share of margin variance {sp['within_scene_variance_share']:.3f}"
    )
    print(
        f"within-pair image cosine {c['within_pair_image_cosine']['mean']:.4f} vs across scenes "
        f"{c['across_scene_image_cosine']:.4f}"
        + (f"; pixels changed {c['pixels_changed']['mean']:.3f}" if c["pixels_changed"] else "")
    )
    _write_json(a.out, result.to_json())
    _write_per_item(a.per_item, result.rows)
    _write_export(a, lambda: pairs_export(result), result.provenance)


def cmd_eval_benchmark(a: argparse.Namespace) -> None:
    from bindlab.studies.benchmark import BenchmarkRequest, run_benchmark

    result = run_benchmark(
        BenchmarkRequest(
            name=a.name,
            model=a.model,
            data=a.data,
            images=a.images,
            split=a.split,
            task=a.task,
            source=a.source,
            limit=a.limit,
            batch_size=a.batch_size,
            device=a.device,
            dtype=a.dtype,
            seed=a.seed,
        )
    )
    summary, settings = result.summary, result.provenance["settings"]
    nm, v = summary["native_metric"], summary["validity"]
    splits = nm.get("by_split") or {}
    shown = {k: (round(x, 4) if isinstance(x, float) else x) for k, x in nm.items() if k not in ("name", "by_split")}
    print(
        f"{result.provenance['encoder']['id']} on {summary['benchmark']} ({summary['n']} items from "
        f"{settings['source']}): {nm['name']} {shown}"
    )
    for name, r in splits.items():  # per split first: each with its n, interval and chance
        print(
            f"  {name:<16} {r['accuracy']:.3f} (95% CI {r['ci95'][0]:.3f}-{r['ci95'][1]:.3f}, n {r['n']}; chance "
            f"{r['chance']:.3f}: {r['vs_chance'] or 'no interval'})"
        )
    if len(splits) > 1:
        lo, hi = summary["native_ci95"]
        print(
            f"  macro over {len(splits)} splits {nm['value']:.3f} (95% CI {lo:.3f}-{hi:.3f}); pooled over items "
            f"{nm['pooled']:.3f} (pooled weights the larger splits more)"
        )
    print(
        f"validity: {v['same_bag_items']} items ({v['same_bag_share']:.1%}) have positive and negative captions "
        f"with the same bag of words; text-only bag-of-words score {summary['bow_text_only']}"
    )
    _write_json(a.out, result.to_json())
    _write_per_item(a.per_item, result.rows)


def add_commands(g: Groups) -> None:
    p = g.generate.add_parser(
        "composet", help="CompoSET-style same-scene single-edit pairs -> DIR/pairs.jsonl + images"
    )
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--scenes", type=int, default=80, help="base scenes (4-10 objects each)")
    p.add_argument("--foils-per-scene", type=int, default=22, help="foils per scene, each one edit (>= 15)")
    p.add_argument("--seed", type=int, default=0, help="generator seed (same seed and settings, same pairs)")
    p.add_argument("--size", type=int, default=256, help="image side in pixels")
    p.add_argument("--workers", type=int, default=2, help="rendering processes")
    p.set_defaults(func=cmd_generate_composet)

    e = g.eval.add_parser("pairs", help="Winoground-style 2x2 scoring of a Pairs file: I2T, T2I, Group by edit type")
    add_data_model(
        e, "Pairs JSONL file (e.g. DIR/pairs.jsonl)", "image+text encoder id, e.g. toy:clip, hf:/path/to/clip"
    )
    e.add_argument("--verbosity", default="all", help="caption level: short|medium|long|all")
    add_run_args(e, limit="score only the first N pairs (0 = all)", seed="bootstrap seed", skip_bad=True)
    add_output_args(e, per_item="write every pair's 2x2 scores as JSONL here")
    e.set_defaults(func=cmd_eval_pairs)

    b = g.eval.add_parser(
        "benchmark", help="a published benchmark (data_manifests/) with its native metric + bag-of-words validity check"
    )
    b.add_argument(
        "--name",
        required=True,
        help="winoground | colorswap | sugarcrepe | sugarcrepe_pp | aro_vg_attribution, or a manifest .json path",
    )
    add_data_model(
        b,
        "local copy in the published format (default: the manifest's path)",
        "encoder id (image+text, or text-only for --task tot)",
        data_required=False,
    )
    b.add_argument("--images", help="image folder (COCO val2017 for SugarCrepe/SugarCrepe++, VG images for ARO)")
    b.add_argument("--split", help="split name(s), comma-separated (default: all)")
    b.add_argument("--task", help="itt (image-to-text, the default) or tot (SugarCrepe++ text-only)")
    b.add_argument(
        "--source",
        default="auto",
        choices=["auto", "local", "hub"],
        help="where the data comes from: local (--data or the manifest's path), hub (the manifest's "
        "Hugging Face dataset), auto (local when that path exists, else the hub)",
    )
    add_run_args(b, limit="at most N items per split (0 = all)", seed="bootstrap seed", progress=False)
    add_output_args(b, per_item="write per-item pass/fail as JSONL here", export=False)
    b.set_defaults(func=cmd_eval_benchmark)
