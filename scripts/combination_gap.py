"""Seen minus never-shown combinations over training seeds, from ``eval toy --per-item`` files.

Each file is one training seed of a toy model evaluated on the single-object renders; its rows say whether the
render's (shape, attribute) pair was ``seen`` in training or held out (``unseen_clean``: never shown, not even
through a colour slot; ``unseen_colour_slot``: shown that way) and whether retrieval got it (``t2i`` / ``i2t``,
0/1). Every seed holds out its own pairs, so the two sets are not paired: per seed the gap is
``mean(seen) - mean(unseen)``, and the interval is the two-level one over seeds, then each set's items
(:func:`bindlab.eval.metrics.hierarchical_bootstrap_gap`), with its p and verdict (holds / mixed / n.s.). With
several ``--key`` values (t2i,i2t) the table adds the Holm-adjusted p across them.

    python scripts/combination_gap.py --runs eval-s0.jsonl,eval-s1.jsonl,eval-s2.jsonl --key t2i,i2t
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np  # noqa: E402

from bindlab.eval.metrics import hierarchical_bootstrap_gap, holm, p_text  # noqa: E402

SEEN = "seen"


def split(path: str, key: str, unseen: str) -> tuple[np.ndarray, np.ndarray]:
    """The ``key`` hits of the seen renders and of the ``unseen`` kind's renders in one per-item file."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    kinds = {r.get("combination") for r in rows}
    if SEEN not in kinds or unseen not in kinds:
        raise SystemExit(
            f"{path} has no {SEEN!r} or no {unseen!r} rows (combinations in it: {sorted(map(str, kinds))}); "
            "it needs a model trained with --holdout-combos, evaluated by eval toy --per-item"
        )
    values = {k: np.array([float(r[key]) for r in rows if r["combination"] == k]) for k in (SEEN, unseen)}
    return values[SEEN], values[unseen]


def gap_table(paths: list[str], keys: list[str], unseen: str, n_boot: int = 2000, seed: int = 0) -> str:
    """One Markdown row per key: each seed's seen / unseen / gap, the mean gap ± seed sd, the two-level interval,
    the raw p, the Holm p across the keys and the verdict."""
    results = []
    for key in keys:
        groups = [split(p, key, unseen) for p in paths]
        results.append((key, groups, hierarchical_bootstrap_gap(groups, n_boot=n_boot, seed=seed)))
    adjusted = holm([h["p"] for _, _, h in results])
    out = [
        f"| top-1 | seeds | seen (n) | {unseen} (n) | gap per seed | gap mean ± seed sd | 95 % interval (seeds, then "
        "items) | p | p (Holm) | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (key, groups, h), p_adj in zip(results, adjusted, strict=True):
        verdict = "n.s. (Holm)" if h["verdict"] == "holds" and p_adj > 0.05 else h["verdict"]
        seen = f"{np.mean([a.mean() for a, _ in groups]):.3f} ({', '.join(str(a.size) for a, _ in groups)})"
        other = f"{np.mean([b.mean() for _, b in groups]):.3f} ({', '.join(str(b.size) for _, b in groups)})"
        out.append(
            f"| {key} | {len(groups)} | {seen} | {other} | {', '.join(f'{x:+.3f}' for x in h['per_seed'])} | "
            f"{h['mean']:+.3f} ± {h['seed_sd']:.3f} | [{h['ci95'][0]:+.3f}, {h['ci95'][1]:+.3f}] | {p_text(h['p'])} | "
            f"{p_text(p_adj)} | {verdict} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", required=True, help="comma-separated eval toy --per-item files, one per training seed")
    p.add_argument("--key", default="t2i", help="comma-separated per-item hits: t2i, i2t")
    p.add_argument(
        "--unseen",
        default="unseen_clean",
        choices=["unseen_clean", "unseen_colour_slot", "unseen"],
        help="which held-out renders the seen ones are compared with (default: never shown at all)",
    )
    a = p.parse_args(argv)
    print(gap_table(list(filter(None, a.runs.split(","))), list(filter(None, a.key.split(","))), a.unseen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
