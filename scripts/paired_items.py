"""Paired gains between per-item result files (``eval mcq --per-item``, ``eval pairs --per-item``) over seeds.

Each ``--runs`` file is one training seed of a model, ``--base`` the model it is compared with, scored on the same
items (same order; the script checks the ids). For every run: its mean, and the paired gain per item (run − base)
with a 95 % percentile bootstrap interval over items; then the runs' mean ± sd (ddof 1) and the gain of their
per-item average, with its interval. ``--key`` is the per-item field: ``credit`` for MCQs, ``group`` / ``i2t`` /
``t2i`` for Pairs.

    python scripts/paired_items.py --base item-clip.jsonl --runs item-tw-s0.jsonl,item-tw-s1.jsonl,item-tw-s2.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np  # noqa: E402

from bindlab.eval.metrics import bootstrap_ci  # noqa: E402


def per_item(path: str, key: str) -> tuple[list[str], np.ndarray]:
    """The items' ids and ``key`` values of one per-item JSONL file."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    ids = [str(r.get("id", i)) for i, r in enumerate(rows)]
    return ids, np.array([float(r[key]) for r in rows])


def paired(base: np.ndarray, runs: list[np.ndarray], n_boot: int = 2000, seed: int = 0) -> dict:
    """Base mean, each run's mean and paired gain [CI], the runs' mean ± sd and the averaged paired gain [CI]."""
    out = {"base": float(base.mean()), "runs": []}
    for r in runs:
        lo, hi = bootstrap_ci(r - base, n_boot=n_boot, seed=seed)
        out["runs"].append({"mean": float(r.mean()), "gain": float((r - base).mean()), "gain_ci95": [lo, hi]})
    means = [r.mean() for r in runs]
    diff = np.mean(np.stack(runs), axis=0) - base
    lo, hi = bootstrap_ci(diff, n_boot=n_boot, seed=seed)
    out.update(
        mean=float(np.mean(means)),
        sd=float(np.std(means, ddof=1)) if len(runs) > 1 else 0.0,
        gain=float(diff.mean()),
        gain_ci95=[lo, hi],
    )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="per-item JSONL of the model compared with")
    p.add_argument("--runs", required=True, help="comma-separated per-item JSONL files, one per seed")
    p.add_argument("--key", default="credit", help="per-item field: credit (MCQ), group / i2t / t2i (Pairs)")
    a = p.parse_args(argv)
    ids, base = per_item(a.base, a.key)
    runs = []
    for path in filter(None, a.runs.split(",")):
        rid, values = per_item(path, a.key)
        if rid != ids:
            raise SystemExit(f"{path} holds other items (or another order) than {a.base}")
        runs.append(values)
    res = paired(base, runs)
    print(f"base {res['base']:.3f} (n = {len(base)})")
    for path, r in zip(filter(None, a.runs.split(",")), res["runs"], strict=True):
        print(f"{path}: {r['mean']:.3f}, gain {r['gain']:+.3f} [{r['gain_ci95'][0]:+.3f}, {r['gain_ci95'][1]:+.3f}]")
    print(
        f"runs {res['mean']:.3f} ± {res['sd']:.3f}; gain of their per-item mean {res['gain']:+.3f} "
        f"[{res['gain_ci95'][0]:+.3f}, {res['gain_ci95'][1]:+.3f}]"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
