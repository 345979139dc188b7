"""Paired gains between per-item result files (``eval mcq --per-item``, ``eval pairs --per-item``) over seeds.

Each ``--runs`` file is one training seed of a model, ``--base`` the model it is compared with, scored on the same
items (same order; the script checks the ids). For every run: its mean, and the paired gain per item (run − base)
with a 95 % percentile bootstrap interval over items; then the runs' mean ± sd (ddof 1), the gain of their
per-item average with its interval over items, and the **two-level interval** over seeds, then items
(:func:`bindlab.eval.metrics.hierarchical_bootstrap`) with its p and verdict (holds / mixed / n.s.). ``--key`` is
the per-item field: ``credit`` for MCQs, ``group`` / ``i2t`` / ``t2i`` for Pairs.

``--family rows.json`` reads several such comparisons (a list of ``{"row", "base", "runs", "key"}``, ``runs`` a
list of files) and prints one Markdown table: per row the base, each seed's value, the mean change ± seed sd, the
two-level interval, the raw p, the Holm-adjusted p across the rows and the verdict (a verdict "holds" needs a Holm
p <= .05 too; "n.s. (Holm)" when only the adjustment undoes it).

    python scripts/paired_items.py --base item-clip.jsonl --runs item-tw-s0.jsonl,item-tw-s1.jsonl,item-tw-s2.jsonl
    python scripts/paired_items.py --family rows.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np  # noqa: E402

from bindlab.eval.metrics import bootstrap_ci, hierarchical_bootstrap, holm, p_text  # noqa: E402


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
        seeds=hierarchical_bootstrap([r - base for r in runs], n_boot=n_boot, seed=seed),
    )
    return out


def _load_runs(base_path: str, run_paths: list[str], key: str) -> tuple[np.ndarray, list[np.ndarray]]:
    """The base's and each run's ``key`` values, after checking that every file holds the base's items in order."""
    ids, base = per_item(base_path, key)
    runs = []
    for path in run_paths:
        rid, values = per_item(path, key)
        if rid != ids:
            raise SystemExit(f"{path} holds other items (or another order) than {base_path}")
        runs.append(values)
    return base, runs


def family_table(rows: list[dict], n_boot: int = 2000, seed: int = 0, root: Path | None = None) -> str:
    """One Markdown table of several comparisons with the Holm adjustment across them (see the module docstring);
    relative file names are read from ``root`` (the rows file's folder)."""
    root = root or Path(".")
    results = []
    for r in rows:
        base, runs = _load_runs(str(root / r["base"]), [str(root / x) for x in r["runs"]], r.get("key", "credit"))
        results.append((r, len(base), paired(base, runs, n_boot, seed)))
    adjusted = holm([res["seeds"]["p"] for _, _, res in results])
    out = [
        "| row | n | base | per seed | Δ mean ± seed sd | 95 % interval (seeds, then items) | p | p (Holm) | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (r, n, res), p_adj in zip(results, adjusted, strict=True):
        h = res["seeds"]
        verdict = h["verdict"]
        if verdict == "holds" and p_adj > 0.05:
            verdict = "n.s. (Holm)"
        per_seed = ", ".join(f"{x['mean']:.3f}" for x in res["runs"])
        out.append(
            f"| {r['row']} | {n} | {res['base']:.3f} | {per_seed} | {h['mean']:+.3f} ± {h['seed_sd']:.3f} | "
            f"[{h['ci95'][0]:+.3f}, {h['ci95'][1]:+.3f}] | {p_text(h['p'])} | {p_text(p_adj)} | {verdict} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", help="per-item JSONL of the model compared with")
    p.add_argument("--runs", help="comma-separated per-item JSONL files, one per seed")
    p.add_argument("--key", default="credit", help="per-item field: credit (MCQ), group / i2t / t2i (Pairs)")
    p.add_argument("--family", help="instead: a JSON list of {row, base, runs, key}; one table, Holm across rows")
    a = p.parse_args(argv)
    if a.family:
        print(family_table(json.loads(Path(a.family).read_text()), root=Path(a.family).parent))
        return 0
    if not (a.base and a.runs):
        p.error("give --base and --runs, or --family")
    base, runs = _load_runs(a.base, list(filter(None, a.runs.split(","))), a.key)
    res = paired(base, runs)
    print(f"base {res['base']:.3f} (n = {len(base)})")
    for path, r in zip(filter(None, a.runs.split(",")), res["runs"], strict=True):
        print(f"{path}: {r['mean']:.3f}, gain {r['gain']:+.3f} [{r['gain_ci95'][0]:+.3f}, {r['gain_ci95'][1]:+.3f}]")
    print(
        f"runs {res['mean']:.3f} ± {res['sd']:.3f}; gain of their per-item mean {res['gain']:+.3f} "
        f"[{res['gain_ci95'][0]:+.3f}, {res['gain_ci95'][1]:+.3f}]"
    )
    h = res["seeds"]
    print(
        f"over seeds, then items: {h['mean']:+.3f} ± {h['seed_sd']:.3f} [{h['ci95'][0]:+.3f}, {h['ci95'][1]:+.3f}], "
        f"p {p_text(h['p'])}, {h['verdict']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
