"""``map``: the embedding map as a standalone page (the Map tab's feature)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bindlab.cli.common import Groups, _export_args, _write_export, _write_json


# --- map ---------------------------------------------------------------------------------------------------------
def cmd_map(a: argparse.Namespace) -> None:
    from bindlab.analysis.embedding_map import (
        LayoutParams,
        build_map,
        cached_layout,
        layout_records,
        map_provenance,
        summary_line,
    )
    from bindlab.present import exports
    from bindlab.present.map_figure import map_html

    out = Path(a.out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--out {a.out!r} must be an .html file (the layout JSON is written next to it)")
    params = LayoutParams(n_neighbors=a.n_neighbors, min_dist=a.min_dist, metric=a.metric, seed=a.seed)
    t = time.perf_counter()
    data = build_map(a.data, a.model, a.n_objects, a.limit, a.seed)
    xy, hit = cached_layout(data, a.method, params)
    print(summary_line(data) + f" | {a.method} layout {'from cache' if hit else 'computed'} "
          f"in {time.perf_counter() - t:.1f}s")
    for note in data.notes:
        print(f"note: {note}")
    title = f"{data.model} · {a.method.upper()} of {len(data.points)} points (circle = text, square = image)"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(map_html(data.points, xy, a.color, title, thumb_size=a.thumb_size), encoding="utf-8")
    print(f"wrote {out}")
    prov = map_provenance(data, {"method": a.method, "params": vars(params), "n_objects": a.n_objects,
                                 "limit": a.limit, "color": a.color}, a.seed)
    _write_json(str(out.with_suffix(".json")), {"points": layout_records(data, xy), "notes": data.notes,
                                                 "provenance": prov})
    _write_export(a, lambda: exports.map_export(data, {a.method: xy}, a.color), prov)


def add_commands(g: Groups) -> None:
    from bindlab.analysis.embedding_map import COLOR_BY, DEFAULT_LIMIT, METHODS, METRICS

    p = g.top.add_parser("map", help="UMAP/PCA map of the query and candidate embeddings of a SABER subset "
                                     "-> standalone HTML (+ layout JSON)")
    p.add_argument("--model", required=True, help="encoder id, e.g. minilm, bow, toy:clip (image points when it has images)")
    p.add_argument("--data", default="", help="MCQ JSONL file (default: the embedded mini benchmark, with images "
                                              "for image+text models)")
    p.add_argument("--n-objects", default="all", help="numbers of objects to keep, e.g. 2,3 or 2-4 (default all)")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="at most this many questions (seeded sample)")
    p.add_argument("--method", choices=METHODS, default="umap", help="layout (UMAP layouts are cached on disk)")
    p.add_argument("--color", choices=COLOR_BY, default="role", help="colour points by")
    p.add_argument("--n-neighbors", type=int, default=15, help="UMAP neighbourhood size")
    p.add_argument("--min-dist", type=float, default=0.1, help="UMAP minimum distance")
    p.add_argument("--metric", choices=METRICS, default="cosine", help="UMAP distance")
    p.add_argument("--seed", type=int, default=0, help="subset sampling and UMAP seed")
    p.add_argument("--thumb-size", type=int, default=64, help="hover thumbnail side in pixels (0 = none)")
    p.add_argument("--out", required=True, help="HTML file to write (map.html); the layout JSON goes next to it")
    _export_args(p)
    p.set_defaults(func=cmd_map)
