"""``map``: the embedding map as a standalone page (the Map tab's feature)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bindlab.cli.common import Groups, _export_args, _write_export, _write_json, add_data_model, add_run_option


# --- map ---------------------------------------------------------------------------------------------------------
def cmd_map(a: argparse.Namespace) -> None:
    from bindlab.present import exports
    from bindlab.present.map_figure import map_html
    from bindlab.studies.map import MapRequest, run_map

    out = Path(a.out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--out {a.out!r} must be an .html file (the layout JSON is written next to it)")
    request = MapRequest(
        model=a.model,
        data=a.data,
        n_objects=a.n_objects,
        limit=a.limit,
        method=a.method,
        color=a.color,
        n_neighbors=a.n_neighbors,
        min_dist=a.min_dist,
        metric=a.metric,
        seed=a.seed,
    )
    t = time.perf_counter()
    res = run_map(request)
    fig = res.figures_data
    print(
        res.summary["line"] + f" | {a.method} layout {'from cache' if res.summary['from_cache'] else 'computed'} "
        f"in {time.perf_counter() - t:.1f}s"
    )
    for note in res.notes:
        print(f"note: {note}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        map_html(fig["map"].points, fig["xy"], fig["color"], fig["title"], thumb_size=a.thumb_size), encoding="utf-8"
    )
    print(f"wrote {out}")
    _write_json(str(out.with_suffix(".json")), {"points": res.rows, "notes": res.notes, "provenance": res.provenance})
    _write_export(a, lambda: exports.map_export(res), res.provenance)


def add_commands(g: Groups) -> None:
    from bindlab.studies.map import (
        COLOR_BY,
        DEFAULT_LIMIT,
        DEFAULT_N_NEIGHBORS,
        MAX_LIMIT,
        MAX_N_NEIGHBORS,
        METHODS,
        METRICS,
    )

    p = g.top.add_parser(
        "map",
        help="UMAP/PCA map of the query and candidate embeddings of a SABER subset -> standalone HTML (+ layout JSON)",
    )
    add_data_model(
        p,
        "MCQ JSONL file (default: the embedded mini benchmark, with images for image+text models)",
        "encoder id, e.g. minilm, bow, toy:clip (image points when it has images)",
        data_required=False,
        data_default="",
    )
    p.add_argument("--n-objects", default="all", help="numbers of objects to keep, e.g. 2,3 or 2-4")
    add_run_option(
        p,
        "limit",
        default=DEFAULT_LIMIT,
        metavar=None,
        help=f"at most this many questions (seeded sample, 1..{MAX_LIMIT})",
    )
    p.add_argument("--method", choices=METHODS, default="umap", help="layout (UMAP layouts are cached on disk)")
    p.add_argument("--color", choices=COLOR_BY, default="role", help="colour points by")
    p.add_argument(
        "--n-neighbors",
        type=int,
        default=DEFAULT_N_NEIGHBORS,
        help=f"UMAP neighbourhood size, 2..{MAX_N_NEIGHBORS} and below the number of points",
    )
    p.add_argument("--min-dist", type=float, default=0.1, help="UMAP minimum distance")
    p.add_argument("--metric", choices=METRICS, default="cosine", help="UMAP distance")
    add_run_option(p, "seed", metavar=None, help="subset sampling and UMAP seed")
    p.add_argument("--thumb-size", type=int, default=64, help="hover thumbnail side in pixels (0 = none)")
    p.add_argument("--out", required=True, help="HTML file to write (map.html); the layout JSON goes next to it")
    _export_args(p)
    p.set_defaults(func=cmd_map)
