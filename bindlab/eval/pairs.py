"""Winoground-style 2x2 scoring of Pairs (CompoSET, Winoground, ColorSwap) and its aggregations.

A pair's score matrix ``s`` is ``(2, 2)`` with ``s[c, i]`` = similarity of caption ``c`` with image ``i``
(0 = base, 1 = foil). docs/architecture.md, "Group":

- I2T (text score):  s[0,0] > s[1,0] and s[1,1] > s[0,1]  (each image prefers its own caption)
- T2I (image score): s[0,0] > s[0,1] and s[1,1] > s[1,0]  (each caption prefers its own image)
- Group: both. Chance 25 / 25 / 16.67 %. Comparisons are strict: a tie is not a pass; NaN never passes.

The group *margin* is the smallest of the four differences above: positive exactly when Group passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.data.pairs_schema import VERBOSITIES, PairItem
from bindlab.encoders.base import Encoder, EncoderError
from bindlab.encoders.service import embed_image_files, embed_texts
from bindlab.eval.metrics import bootstrap_ci, task_chance

CHANCE: dict[str, float] = {k: task_chance(f"pairs_{k}") for k in ("i2t", "t2i", "group")}
METRICS: tuple[str, ...] = ("i2t", "t2i", "group")
Progress = Callable[[float, str], None]


# ---------------------------------------------------------------------------------------------- pure scoring
def _as_matrices(s: np.ndarray) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    if s.shape[-2:] != (2, 2):
        raise ValueError(f"score matrices must be (..., 2, 2) [caption, image], got {s.shape}")
    return s.reshape(-1, 2, 2)


def i2t_pass(s: np.ndarray) -> np.ndarray:
    """Text score per pair: ``(n, 2, 2)`` -> ``(n,)`` bool. Ties and NaNs fail."""
    s = _as_matrices(s)
    return (s[:, 0, 0] > s[:, 1, 0]) & (s[:, 1, 1] > s[:, 0, 1])


def t2i_pass(s: np.ndarray) -> np.ndarray:
    """Image score per pair: ``(n, 2, 2)`` -> ``(n,)`` bool. Ties and NaNs fail."""
    s = _as_matrices(s)
    return (s[:, 0, 0] > s[:, 0, 1]) & (s[:, 1, 1] > s[:, 1, 0])


def group_pass(s: np.ndarray) -> np.ndarray:
    """Group score per pair (I2T and T2I both pass): ``(n, 2, 2)`` -> ``(n,)`` bool."""
    return i2t_pass(s) & t2i_pass(s)


def group_margin(s: np.ndarray) -> np.ndarray:
    """Smallest of the four winning differences, ``(n, 2, 2)`` -> ``(n,)``; > 0 exactly when Group passes."""
    s = _as_matrices(s)
    d = np.stack([s[:, 0, 0] - s[:, 1, 0], s[:, 1, 1] - s[:, 0, 1], s[:, 0, 0] - s[:, 0, 1], s[:, 1, 1] - s[:, 1, 0]])
    return d.min(axis=0)


def pass_table(s: np.ndarray) -> dict[str, np.ndarray]:
    """``{"i2t", "t2i", "group"}`` -> ``(n,)`` bool arrays, plus ``"margin"`` ``(n,)``."""
    return {"i2t": i2t_pass(s), "t2i": t2i_pass(s), "group": group_pass(s), "margin": group_margin(s)}


def score_block(passes: dict[str, np.ndarray], seed: int = 0) -> dict[str, Any]:
    """I2T / T2I / Group rates with bootstrap 95 % intervals and chance levels for one set of pairs."""
    out: dict[str, Any] = {"n": int(len(passes["group"]))}
    for m in METRICS:
        v = passes[m].astype(np.float64)
        lo, hi = bootstrap_ci(v, seed=seed) if v.size else (float("nan"), float("nan"))
        out[m] = float(v.mean()) if v.size else float("nan")
        out[f"{m}_ci95"] = [lo, hi]
    out["chance"] = dict(CHANCE)
    return out


def grouped_scores(passes: dict[str, np.ndarray], labels: Sequence[str], seed: int = 0) -> dict[str, Any]:
    """:func:`score_block` for each distinct label (edit type, category, verbosity...)."""
    labels = np.asarray(labels)
    return {
        str(k): score_block({m: passes[m][labels == k] for m in METRICS}, seed) for k in dict.fromkeys(labels.tolist())
    }


def scene_edit_split(margins: np.ndarray, scenes: Sequence[str], quantile: float = 0.25) -> dict[str, Any]:
    """Separate scene-hard from edit-hard failures (CompoSET's diagnostic; needs many foils per scene).

    - scene margin = mean group margin of the scene's foils; a scene is *scene-hard* when its margin is in the
      bottom ``quantile`` of scenes.
    - a foil's residual = its margin minus its scene's margin; a scene is *edit-hard* when its worst residual
      (one edit failing in an otherwise tractable scene) is in the bottom ``quantile`` of scenes.

    Under independence, ``quantile**2`` of scenes are both. Also reports the share of foil-margin variance that
    lies within scenes.

    Args:
        margins: ``(n,)`` group margins.
        scenes: ``(n,)`` scene id per pair.

    Returns:
        ``{"scenes": [{scene, margin, worst_residual, n, scene_hard, edit_hard}], "counts": {...},
        "both_expected_under_independence", "within_scene_variance_share"}``.
    """
    margins = np.asarray(margins, dtype=np.float64)
    scenes = np.asarray(scenes)
    ids = list(dict.fromkeys(scenes.tolist()))
    mean = np.array([margins[scenes == s].mean() for s in ids])
    resid = np.empty_like(margins)
    for s, m in zip(ids, mean, strict=False):
        resid[scenes == s] = margins[scenes == s] - m
    worst = np.array([resid[scenes == s].min() for s in ids])
    scene_cut, edit_cut = np.quantile(mean, quantile), np.quantile(worst, quantile)
    scene_hard, edit_hard = mean <= scene_cut, worst <= edit_cut
    total = float(((margins - margins.mean()) ** 2).sum())
    within = float((resid**2).sum())
    rows = [
        {
            "scene": s,
            "margin": float(m),
            "worst_residual": float(w),
            "n": int((scenes == s).sum()),
            "scene_hard": bool(a),
            "edit_hard": bool(b),
        }
        for s, m, w, a, b in zip(ids, mean, worst, scene_hard, edit_hard, strict=False)
    ]
    n = len(ids)
    return {
        "scenes": rows,
        "counts": {
            "scene_hard_only": int((scene_hard & ~edit_hard).sum()),
            "edit_hard_only": int((edit_hard & ~scene_hard).sum()),
            "both": int((scene_hard & edit_hard).sum()),
            "neither": int((~scene_hard & ~edit_hard).sum()),
            "scenes": n,
        },
        "both_share": float((scene_hard & edit_hard).mean()) if n else float("nan"),
        "both_expected_under_independence": float(quantile**2),
        "within_scene_variance_share": within / total if total > 0 else float("nan"),
        "quantile": quantile,
    }


def matched_modify_swap(
    passes: dict[str, np.ndarray],
    edit_types: Sequence[str],
    scenes: Sequence[str],
    pairs: dict[str, tuple[str, str]],
    seed: int = 0,
) -> dict[str, Any]:
    """Modify versus swap on the same attribute, restricted to scenes that have both edit types.

    For each attribute family: the Group / I2T / T2I rates of its modify and swap foils over the shared scenes,
    and the modify − swap Group gap with a scene-level (cluster) bootstrap 95 % interval.
    """
    et, sc = np.asarray(edit_types), np.asarray(scenes)
    out: dict[str, Any] = {}
    for fam, (mod, swp) in pairs.items():
        shared = sorted(set(sc[et == mod].tolist()) & set(sc[et == swp].tolist()))
        if not shared:
            out[fam] = {"scenes": 0}
            continue
        in_shared = np.isin(sc, shared)
        rec: dict[str, Any] = {"scenes": len(shared)}
        for kind, t in (("modify", mod), ("swap", swp)):
            sel = in_shared & (et == t)
            rec[kind] = {"edit_type": t, "n": int(sel.sum()), **{m: float(passes[m][sel].mean()) for m in METRICS}}
        # per-scene gap, then a bootstrap over scenes
        gaps = np.array(
            [
                passes["group"][(sc == s) & (et == mod)].mean() - passes["group"][(sc == s) & (et == swp)].mean()
                for s in shared
            ]
        )
        rec["group_gap"] = rec["modify"]["group"] - rec["swap"]["group"]
        rec["group_gap_per_scene_mean"] = float(gaps.mean())
        rec["group_gap_ci95"] = list(bootstrap_ci(gaps, seed=seed))
        out[fam] = rec
    return out


# ---------------------------------------------------------------------------------------------- models
def parse_verbosity(spec: str) -> list[str]:
    """``short|medium|long|all`` -> the levels to score."""
    spec = (spec or "all").strip().lower()
    if spec == "all":
        return list(VERBOSITIES)
    if spec not in VERBOSITIES:
        raise ValueError(f"unknown verbosity {spec!r}; choose from {[*VERBOSITIES, 'all']}")
    return [spec]


def score_matrices(pairs: Sequence[PairItem], root: str | Path, encoder: Encoder, level: str) -> np.ndarray:
    """``(n, 2, 2)`` cosine matrices ``[caption, image]`` for one caption level (cached embeddings)."""
    caps = embed_texts(encoder, [c for p in pairs for c in (p.base.captions[level], p.foil.captions[level])])
    imgs = image_embeddings(pairs, root, encoder)
    caps = caps.reshape(len(pairs), 2, -1)
    return np.einsum("ncd,nid->nci", caps, imgs)


def image_embeddings(pairs: Sequence[PairItem], root: str | Path, encoder: Encoder) -> np.ndarray:
    """``(n, 2, d)`` image embeddings (base, foil) of each pair."""
    paths = [Path(root) / im for p in pairs for im in (p.base.image, p.foil.image)]
    missing = [str(x) for x in paths if not x.exists()]
    if missing:
        raise FileNotFoundError(
            f"{len(missing)} image(s) of the pairs file are missing (first: {missing[0]}); "
            "regenerate the benchmark or fix the image paths (relative to the JSONL folder)"
        )
    return embed_image_files(encoder, paths).reshape(len(pairs), 2, -1)


def image_controls(pairs: Sequence[PairItem], img: np.ndarray) -> dict[str, Any]:
    """The benchmark's controlled-edit checks: within-pair image cosine vs cosine between different scenes' bases.

    Args:
        img: ``(n, 2, d)`` unit image embeddings (base, foil).
    """
    within = np.einsum("nd,nd->n", img[:, 0], img[:, 1])
    scene_first: dict[str, int] = {}
    for k, p in enumerate(pairs):
        scene_first.setdefault(p.scene_id, k)
    bases = img[list(scene_first.values()), 0]
    across = float("nan")
    if len(bases) > 1:
        g = bases @ bases.T
        across = float(g[np.triu_indices(len(bases), 1)].mean())
    px = [p.extra.get("pixels_changed") for p in pairs]
    px = np.array([x for x in px if isinstance(x, (int, float))], dtype=np.float64)
    q1, q3 = np.quantile(within, [0.25, 0.75])
    return {
        "within_pair_image_cosine": {
            "mean": float(within.mean()),
            "median": float(np.median(within)),
            "iqr": [float(q1), float(q3)],
        },
        "across_scene_image_cosine": across,
        "within_minus_across": float(within.mean() - across) if np.isfinite(across) else float("nan"),
        "pixels_changed": (
            {"mean": float(px.mean()), "median": float(np.median(px)), "n": int(px.size)} if px.size else None
        ),
        "_within": within,
    }


def summarize_pairs(pairs: Sequence[PairItem], matrices: dict[str, np.ndarray], seed: int = 0) -> dict[str, Any]:
    """Everything ``eval pairs`` reports, from per-level score matrices.

    Args:
        pairs: the scored pairs.
        matrices: ``{level: (n, 2, 2)}``.

    Returns:
        ``{"overall", "by_verbosity", "by_edit_type", "by_category", "scene_edit_split", "matched_modify_swap",
        "per_scene_margin"}``; with several levels, "overall" and the breakdowns pool the (pair, level) items and
        the split uses each pair's mean margin over levels.
    """
    from bindlab.data.composet import MATCHED, edit_origin

    levels = list(matrices)
    tables = {lv: pass_table(matrices[lv]) for lv in levels}
    pooled = {k: np.concatenate([tables[lv][k] for lv in levels]) for k in (*METRICS, "margin")}
    edit = [p.edit_type for p in pairs] * len(levels)
    cat = [p.edit_category for p in pairs] * len(levels)
    origins = {p.edit_type: edit_origin(p.edit_type, p.extra.get("edit_origin")) for p in pairs}
    origin = [origins[p.edit_type] for p in pairs] * len(levels)
    scene = [p.scene_id for p in pairs] * len(levels)
    mean_margin = np.mean([tables[lv]["margin"] for lv in levels], axis=0)
    split = scene_edit_split(mean_margin, [p.scene_id for p in pairs])
    return {
        "levels": levels,
        "edit_categories": {p.edit_type: p.edit_category for p in pairs},
        "edit_origins": origins,
        "overall": score_block(pooled, seed),
        "by_origin": grouped_scores(pooled, origin, seed),
        "by_verbosity": {lv: score_block(tables[lv], seed) for lv in levels},
        "by_edit_type": grouped_scores(pooled, edit, seed),
        "by_category": grouped_scores(pooled, cat, seed),
        "by_edit_type_and_verbosity": {
            lv: grouped_scores(tables[lv], [p.edit_type for p in pairs], seed) for lv in levels
        },
        "per_scene_margin": {r["scene"]: r["margin"] for r in split["scenes"]},
        "scene_edit_split": split,
        "matched_modify_swap": matched_modify_swap(pooled, edit, scene, MATCHED, seed),
    }


def per_item_rows(pairs: Sequence[PairItem], matrices: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """One row per (pair, level): ``{"id", "scene_id", "edit_type", "edit_category", "verbosity", "scores":
    {"c0_i0", "c0_i1", "c1_i0", "c1_i1"}, "i2t", "t2i", "group", "margin"}``."""
    rows = []
    for lv, m in matrices.items():
        t = pass_table(m)
        for k, p in enumerate(pairs):
            s = m[k]
            rows.append(
                {
                    "id": p.id,
                    "scene_id": p.scene_id,
                    "edit_type": p.edit_type,
                    "edit_category": p.edit_category,
                    "verbosity": lv,
                    "scores": {
                        "c0_i0": float(s[0, 0]),
                        "c0_i1": float(s[0, 1]),
                        "c1_i0": float(s[1, 0]),
                        "c1_i1": float(s[1, 1]),
                    },
                    "i2t": bool(t["i2t"][k]),
                    "t2i": bool(t["t2i"][k]),
                    "group": bool(t["group"][k]),
                    "margin": float(t["margin"][k]),
                }
            )
    return rows


def evaluate_pairs(
    pairs: Sequence[PairItem],
    root: str | Path,
    encoder: Encoder,
    verbosity: str = "all",
    progress: Progress | None = None,
    seed: int = 0,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score pairs with an image+text encoder.

    Args:
        pairs: validated pairs.
        root: folder that image paths are relative to.
        encoder: an encoder with text and image towers.
        verbosity: ``short|medium|long|all``; pairs lacking a level are left out of that level.
        progress: optional ``(fraction, message)`` callback.

    Returns:
        ``(summary, per-item rows)``; the summary is :func:`summarize_pairs` plus ``"controls"``.
    """
    lacking = {"text", "image"} - set(encoder.modalities)
    if lacking:
        raise EncoderError(
            f"{encoder.id} cannot embed {sorted(lacking)}; pair scoring needs an image+text encoder "
            "(e.g. toy:clip or hf:/path/to/clip)"
        )
    levels = parse_verbosity(verbosity)
    have = [lv for lv in levels if all(lv in p.levels() for p in pairs)]
    if not have:
        found = sorted({lv for p in pairs for lv in p.levels()})
        raise ValueError(f"no pair has captions at level(s) {levels}; this file has {found}")
    if progress:
        progress(0.05, f"embedding {2 * len(pairs)} images with {encoder.id}")
    img = image_embeddings(pairs, root, encoder)
    matrices = {}
    for k, lv in enumerate(have):
        if progress:
            progress(0.3 + 0.6 * k / len(have), f"scoring {lv} captions")
        matrices[lv] = score_matrices(pairs, root, encoder, lv)
    summary = summarize_pairs(pairs, matrices, seed)
    controls = image_controls(pairs, img)
    within = controls.pop("_within")
    summary["controls"] = controls
    summary["skipped_levels"] = [lv for lv in levels if lv not in have]
    rows = per_item_rows(pairs, matrices)
    cos = {p.id: float(c) for p, c in zip(pairs, within, strict=False)}
    for r in rows:
        r["image_cosine"] = cos[r["id"]]
    if progress:
        progress(1.0, "done")
    return summary, rows


def by_edit_type_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Flat rows ``{edit_type, category, origin, n, i2t, t2i, group}`` for tables and the bar chart (edit-type order);
    ``origin`` is "composet" for edit types named in the paper, "bindlab" for those in a category the paper names under
    bindlab's name, else the file's or "other"."""
    from bindlab.data.composet import EDIT_TYPES, edit_origin

    by = summary["by_edit_type"]
    order = [t for t in EDIT_TYPES if t in by] + sorted(t for t in by if t not in EDIT_TYPES)
    cats, origins = summary.get("edit_categories", {}), summary.get("edit_origins", {})
    return [
        {
            "edit_type": t,
            "category": cats.get(t, EDIT_TYPES.get(t, "")),
            "origin": origins.get(t) or edit_origin(t),
            "n": by[t]["n"],
            **{m: by[t][m] for m in METRICS},
        }
        for t in order
    ]
