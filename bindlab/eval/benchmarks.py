"""Native metrics of the published pairwise benchmarks, plus the bag-of-words validity check.

- 2x2 benchmarks (Winoground, ColorSwap): text / image / group score via :mod:`bindlab.eval.pairs`.
- choice benchmarks: an item passes when every positive beats the negative (strict: a tie is not a pass).
  SugarCrepe: accuracy per split; SugarCrepe++: ITT and TOT per split; ARO VG-Attribution: macro accuracy over
  attribute pairs with >= 25 items.
- validity check: items whose positive and negative captions have the same bag of words are flagged; the
  model's score is split by that flag, and a *text-only bag-of-words score* is reported beside it: the native
  metric computed by the ``bow`` encoder with each image replaced by its own (first) positive caption — a reader
  that sees the image content perfectly but reads captions as bags of words. Same-bag items tie and fail, so it is
  the best any order-blind model could do.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.data.adapters import Benchmark
from bindlab.data.adapters.base import ChoiceItem, same_bag
from bindlab.encoders.base import Encoder, EncoderError
from bindlab.encoders.service import embed_image_files, embed_texts
from bindlab.eval.metrics import bootstrap_ci, choice_chance, task_chance
from bindlab.eval.pairs import METRICS, pass_table, score_block


# ---------------------------------------------------------------------------------------------- pure metrics
def choice_pass(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """Every positive strictly beats the negative: ``pos (n, k)``, ``neg (n,)`` -> ``(n,)`` bool (NaN fails)."""
    pos = np.atleast_2d(np.asarray(pos, dtype=np.float64))
    neg = np.asarray(neg, dtype=np.float64).reshape(-1, 1)
    return (pos > neg).all(axis=1)


def tot_pass(p1p2: np.ndarray, p1n: np.ndarray, p2n: np.ndarray) -> np.ndarray:
    """SugarCrepe++ text-only task: cos(P1,P2) > cos(P1,N) and cos(P1,P2) > cos(P2,N). ``(n,)`` each -> ``(n,)``."""
    p1p2, p1n, p2n = (np.asarray(x, dtype=np.float64) for x in (p1p2, p1n, p2n))
    return (p1p2 > p1n) & (p1p2 > p2n)


def group_accuracy(passes: np.ndarray, groups: Sequence[str], min_count: int = 0) -> dict[str, Any]:
    """Accuracy per group and their macro mean over groups with at least ``min_count`` items.

    Returns:
        ``{"by_group": {g: {"accuracy", "n"}}, "macro": float, "groups_used": int, "micro": float}``.
    """
    passes = np.asarray(passes, dtype=np.float64)
    by: dict[str, list[float]] = defaultdict(list)
    for p, g in zip(passes, groups, strict=False):
        by[str(g)].append(float(p))
    table = {g: {"accuracy": float(np.mean(v)), "n": len(v)} for g, v in sorted(by.items())}
    used = [r["accuracy"] for r in table.values() if r["n"] >= min_count]
    return {
        "by_group": table,
        "macro": float(np.mean(used)) if used else float("nan"),
        "groups_used": len(used),
        "min_count": min_count,
        "micro": float(passes.mean()) if passes.size else float("nan"),
    }


def split_rows(passes: np.ndarray, groups: Sequence[str], chance: float, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Each split's accuracy with its n, bootstrap 95 % interval, chance level and where it stands against chance
    ("above chance" / "at chance" / "below chance"), splits in name order."""
    from bindlab.eval.metrics import chance_label

    passes, labels = np.asarray(passes, dtype=np.float64), np.asarray([str(g) for g in groups])
    out = {}
    for g in sorted(set(labels.tolist())):
        sel = passes[labels == g]
        lo, hi = bootstrap_ci(sel, seed=seed)
        out[g] = {
            "accuracy": float(sel.mean()),
            "n": int(sel.size),
            "ci95": [lo, hi],
            "chance": chance,
            "vs_chance": chance_label(lo, hi, chance),
        }
    return out


def macro_ci(passes: np.ndarray, groups: Sequence[str], n_boot: int = 1000, seed: int = 0) -> list[float]:
    """Percentile bootstrap 95 % interval of the macro mean over splits: each split resampled within itself (its size
    kept), the splits' means averaged, 1,000 times."""
    passes, labels = np.asarray(passes, dtype=np.float64), np.asarray([str(g) for g in groups])
    rng = np.random.default_rng(seed)
    means = []
    for g in sorted(set(labels.tolist())):
        v = passes[labels == g]
        means.append(v[rng.integers(0, v.size, (n_boot, v.size))].mean(axis=1))
    macro = np.mean(means, axis=0)
    return [float(np.percentile(macro, 2.5)), float(np.percentile(macro, 97.5))]


# ---------------------------------------------------------------------------------------------- embedding
def _crop_paths(items: Sequence[ChoiceItem]) -> list[Path]:
    """Image paths, cropping boxed items into cached PNGs under ``$BINDLAB_HOME/crops`` (keyed by path + box)."""
    import hashlib

    from bindlab.config import home
    from bindlab.data.files import open_image

    out = []
    for it in items:
        if it.image is None:
            raise EncoderError(
                f"item {it.id} has no image (image folder not found); give --images DIR or use the text-only task"
            )
        p = Path(it.image)
        if not p.is_file():
            raise FileNotFoundError(
                f"image {p} of item {it.id} not found; check --images / the manifest's image folder"
            )
        if it.box is None:
            out.append(p)
            continue
        key = hashlib.sha256(f"{p.resolve()}|{p.stat().st_mtime}|{it.box}".encode()).hexdigest()[:20]
        c = home() / "crops" / f"{key}.png"
        if not c.exists():
            c.parent.mkdir(parents=True, exist_ok=True)
            with open_image(p) as im:  # the one capped loader: a regular file, within the pixel cap
                im.convert("RGB").crop(it.box).save(c)
        out.append(c)
    return out


def _need_images(encoder: Encoder, name: str) -> None:
    if "image" not in encoder.modalities:
        raise EncoderError(
            f"{encoder.id} has no image tower; {name} needs an image+text encoder "
            "(or, for sugarcrepe_pp, the text-only task: --task tot)"
        )


def choice_scores(items: Sequence[ChoiceItem], encoder: Encoder, task: str = "itt") -> np.ndarray:
    """Per-item pass/fail of choice items with ``encoder``. ``task``: ``itt`` (image vs captions) or ``tot``."""
    k = len(items[0].positives)
    texts = [t for it in items for t in (*it.positives, it.negative)]
    t = embed_texts(encoder, texts).reshape(len(items), k + 1, -1)  # (n, k+1, d)
    if task == "tot":
        if k != 2:
            raise ValueError("the text-only task needs two positive captions per item (SugarCrepe++)")
        p1, p2, n = t[:, 0], t[:, 1], t[:, 2]
        return tot_pass((p1 * p2).sum(1), (p1 * n).sum(1), (p2 * n).sum(1))
    img = embed_image_files(encoder, _crop_paths(items))  # (n, d)
    s = np.einsum("nd,nkd->nk", img, t)
    return choice_pass(s[:, :k], s[:, k])


def bow_choice_scores(items: Sequence[ChoiceItem], task: str = "itt") -> np.ndarray:
    """The text-only bag-of-words score: ``bow`` with each image replaced by its first positive caption."""
    from bindlab.encoders.base import load_encoder

    bow = load_encoder("bow")
    k = len(items[0].positives)
    t = embed_texts(bow, [x for it in items for x in (*it.positives, it.negative)]).reshape(len(items), k + 1, -1)
    if task == "tot":
        p1, p2, n = t[:, 0], t[:, 1], t[:, 2]
        return tot_pass((p1 * p2).sum(1), (p1 * n).sum(1), (p2 * n).sum(1))
    s = np.einsum("nd,nkd->nk", t[:, 0], t)
    return choice_pass(s[:, :k], s[:, k])


# ---------------------------------------------------------------------------------------------- evaluation
def _validity(model: np.ndarray, bow: np.ndarray, flags: np.ndarray) -> dict[str, Any]:
    def rate(x: np.ndarray) -> float | None:
        return float(x.mean()) if x.size else None

    return {
        "same_bag_items": int(flags.sum()),
        "same_bag_share": float(flags.mean()),
        "model_on_same_bag": rate(model[flags]),
        "model_on_different_bag": rate(model[~flags]),
        "bow_text_only_score": float(bow.mean()),
    }


def evaluate_benchmark(
    bench: Benchmark, encoder: Encoder, task: str | None = None, seed: int = 0
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score a loaded benchmark with its native metric and the bag-of-words validity check.

    Returns:
        ``(summary, per-item rows)``.
    """
    if bench.kind == "pairs":
        return _evaluate_2x2(bench, encoder, seed)
    task = (task or "itt").lower()
    if task not in ("itt", "tot"):
        raise ValueError(f"unknown task {task!r}; choose itt (image-to-text) or tot (text-only, SugarCrepe++)")
    if task == "tot" and bench.adapter != "sugarcrepe_pp":
        raise ValueError(f"the text-only task (tot) exists for sugarcrepe_pp only, not {bench.name}")
    if task == "itt":
        _need_images(encoder, bench.name)
    items: list[ChoiceItem] = bench.items
    model = choice_scores(items, encoder, task)
    bow = bow_choice_scores(items, task)
    flags = np.array([any(same_bag(p, it.negative) for p in it.positives) for it in items])
    groups = [it.group for it in items]
    min_count = 25 if bench.adapter == "aro_vg_attribution" else 0
    acc = group_accuracy(model, groups, min_count)
    bow_acc = group_accuracy(bow, groups, min_count)
    lo, hi = bootstrap_ci(model.astype(np.float64), seed=seed)
    # tot: the paraphrase pair's similarity must be the highest of the three pairwise ones (1/3); itt: every positive
    # caption above the negative (1/(k+1): SugarCrepe++'s two paraphrases 1/3, one caption 1/2)
    chance = task_chance("sugarcrepe_pp_tot") if task == "tot" else choice_chance(len(items[0].positives))
    splits = len(acc["by_group"]) > 1 and bench.adapter != "aro_vg_attribution"
    if bench.adapter == "aro_vg_attribution":
        native = {"name": "macro accuracy over attribute pairs (>= 25 items)", "value": acc["macro"]}
    else:  # per split first: each split with its n, CI and chance; the headline their macro mean; pooled labelled
        what = f"{task.upper()} accuracy" if bench.adapter == "sugarcrepe_pp" else "accuracy"
        native = {
            "name": f"{what}, macro over {len(acc['by_group'])} splits" if splits else what,
            "value": acc["macro"] if splits else acc["micro"],
            "by_split": split_rows(model, groups, chance, seed),
            "pooled": acc["micro"],
        }
    summary = {
        "benchmark": bench.name,
        "task": task,
        "n": len(items),
        "native_metric": native,
        "accuracy": acc,
        "accuracy_ci95": [lo, hi],
        "chance": chance,
        "headline": "macro" if splits else "all",
        "native_ci95": macro_ci(model, groups, seed=seed) if splits else [lo, hi],
        "bow_text_only": {
            "native_value": bow_acc["macro"] if (min_count or splits) else bow_acc["micro"],
            "by_group": {g: r["accuracy"] for g, r in bow_acc["by_group"].items()},
        },
        "validity": _validity(model, bow, flags),
    }
    rows = [
        {"id": it.id, "group": it.group, "pass": bool(m), "bow_pass": bool(b), "same_bag": bool(f)}
        for it, m, b, f in zip(items, model, bow, flags, strict=False)
    ]
    return summary, rows


def _evaluate_2x2(bench: Benchmark, encoder: Encoder, seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.pairs import per_item_rows, score_matrices

    _need_images(encoder, bench.name)
    pairs = bench.items
    m = score_matrices(pairs, "/", encoder, "short")
    passes = pass_table(m)
    bow = load_encoder("bow")
    c = embed_texts(bow, [x for p in pairs for x in (p.base.captions["short"], p.foil.captions["short"])])
    c = c.reshape(len(pairs), 2, -1)
    bow_m = np.einsum("ncd,nid->nci", c, c)  # image i replaced by caption i
    bow_passes = pass_table(bow_m)
    flags = np.array([same_bag(p.base.captions["short"], p.foil.captions["short"]) for p in pairs])
    tags = [p.edit_type for p in pairs]
    overall = score_block(passes, seed)
    by_tag = {t: score_block({k: passes[k][np.array(tags) == t] for k in METRICS}, seed) for t in dict.fromkeys(tags)}
    summary = {
        "benchmark": bench.name,
        "task": "2x2",
        "n": len(pairs),
        "native_metric": {
            "name": "text / image / group score",
            "text_score": overall["i2t"],
            "image_score": overall["t2i"],
            "group_score": overall["group"],
        },
        "overall": overall,
        "by_tag": by_tag,
        "bow_text_only": {m_: float(bow_passes[m_].mean()) for m_ in METRICS},
        "validity": {
            "same_bag_items": int(flags.sum()),
            "same_bag_share": float(flags.mean()),
            **{
                f"model_group_on_{k}": (float(passes["group"][sel].mean()) if sel.any() else None)
                for k, sel in (("same_bag", flags), ("different_bag", ~flags))
            },
            "bow_text_only_group": float(bow_passes["group"].mean()),
        },
    }
    rows = per_item_rows(pairs, {"short": m})
    for r, f in zip(rows, flags, strict=False):
        r["same_bag"] = bool(f)
    return summary, rows
