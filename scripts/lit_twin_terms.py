"""Where does a lit tower lose the text->image decision between a scene and its binding swap? Its twin margins, taken apart.

For (scene, swap twin) pairs of a ``train toy --arch lit --lit-target phrases`` run's own pool (true swaps only: two
objects trade attributes; replacements are left out), each with its cached captions (the same wording for scene and
twin), the four twin decisions are split (:func:`bindlab.train.phrase_metric.twin_terms`) into

- the *binding* part ``I = (t_s - t_t) . (x_s - x_t) / 2``, shared by all four decisions;
- the *image bias* ``B = (t_s + t_t) / 2 . (x_s - x_t)``: how much better one image matches the pair's common words,
  whatever the binding (text->image margins are ``I + B`` and ``I - B``);
- the *text bias* ``T = (x_s + x_t) / 2 . (t_s - t_t)`` (image->text margins ``I + T`` and ``I - T``).

A decision is right both ways round only when its bias is smaller than ``I``. Rows: the run's targets (the points
its image tower was trained towards, rebuilt as in training: :func:`bindlab.train.toy.train.lit_phrase_targets`) and
each model given (its images of the same pairs), with the cosine between each pair's image difference and its
targets' difference. Medians over pairs x captions; ``|x_s - x_t|`` a mean.

    python scripts/lit_twin_terms.py --run runs/lit-a [--models toy:runs/lit-a,toy:runs/lit-b] [--pairs 1000]
        [--fresh-seed 7 --fresh-size 2000]

The run folder gives the pool, the hold-out, the target settings and the caption caches (``captions.npz``,
``twin_captions.npz``; embedded again when missing, minutes). ``--fresh-seed S`` takes the pairs from a pool the run
never saw instead (``--fresh-size`` scenes drawn with seed S, the run's hold-out kept out of them; its captions are
cached in the run folder as ``fresh-S-N-captions.npz`` and ``fresh-S-N-twin_captions.npz``), with the run's targets
rebuilt for those scenes in the run's phrase table and metric: how much of a tower's binding is memorised.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def _row(name: str, terms: dict[str, np.ndarray], diff: np.ndarray, cos: str) -> str:
    i, b, t = terms["binding"], terms["image_bias"], terms["text_bias"]
    ti = ((i + b > 0).mean() + (i - b > 0).mean()) / 2
    it = ((i + t > 0).mean() + (i - t > 0).mean()) / 2
    return (
        f"| {name} | {np.median(i):+.4f} | {np.median(np.abs(b)):.4f} | {np.median(np.abs(t)):.4f} | "
        f"{np.linalg.norm(diff, axis=-1).mean():.3f} | {cos} | {ti:.3f} | {it:.3f} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="a 'train toy --arch lit --lit-target phrases' output folder")
    ap.add_argument("--models", default="", help="comma-separated toy encoder ids (default: toy:RUN)")
    ap.add_argument("--pairs", type=int, default=1000, help="swap pairs of the pool to use (the first ones)")
    ap.add_argument(
        "--fresh-seed",
        type=int,
        default=None,
        help="take the pairs from a fresh pool drawn with this seed (not the run's), the run's hold-out kept out",
    )
    ap.add_argument("--fresh-size", type=int, default=0, help="scenes in the fresh pool (default: the run's pool size)")
    a = ap.parse_args(argv)
    from PIL import Image

    from bindlab.encoders.base import load_encoder
    from bindlab.train.phrase_metric import twin_terms
    from bindlab.train.toy import data as toy_data
    from bindlab.train.toy.lit import blend_targets, caption_cache, phrase_targets, scene_means
    from bindlab.train.toy.train import TrainConfig, lit_phrase_targets

    run = Path(a.run)
    saved = json.loads((run / "training.json").read_text())["train_config"]
    cfg = TrainConfig(**{k: v for k, v in saved.items() if k in TrainConfig.__dataclass_fields__})
    if cfg.arch != "lit" or cfg.lit_target != "phrases":
        raise SystemExit(f"{run} is not a --arch lit --lit-target phrases run")
    size = int((json.loads((run / "config.json").read_text())).get("image_size", 64))
    pool = toy_data.load_pool(
        cfg.pool_size,
        size,
        cfg.seed,
        heldout=cfg.heldout(),
        twins=True,
        clean=cfg.clean_holdout,
        twin_layout=cfg.twin_layout,
    )
    twins = pool.twin_scenes()
    first = cfg.rank_scenes or None  # the scenes whose captions the run embedded (its ranked metric's)
    captions = caption_cache(pool.scenes[:first], cfg.seed, cfg.text, run / "captions.npz", cfg.captions_per_scene)
    twin_captions = caption_cache(
        pool.scenes[:first], cfg.seed, cfg.text, run / "twin_captions.npz", cfg.captions_per_scene, twins=twins[:first]
    )
    (targets, twin_targets), table, _, metric = lit_phrase_targets(cfg, pool, captions, twin_captions)
    where = f"{run}'s pool"
    if a.fresh_seed is not None:
        if a.fresh_seed == cfg.seed:
            raise SystemExit(f"--fresh-seed {a.fresh_seed} is the run's own seed; give another one")
        n = a.fresh_size or cfg.pool_size
        pool = toy_data.load_pool(
            n,
            size,
            a.fresh_seed,
            heldout=cfg.heldout(),
            twins=True,
            clean=cfg.clean_holdout,
            twin_layout=cfg.twin_layout,
        )
        twins = pool.twin_scenes()
        stem = run / f"fresh-{a.fresh_seed}-{n}-"
        captions = caption_cache(pool.scenes, a.fresh_seed, cfg.text, f"{stem}captions.npz", cfg.captions_per_scene)
        twin_captions = caption_cache(
            pool.scenes, a.fresh_seed, cfg.text, f"{stem}twin_captions.npz", cfg.captions_per_scene, twins=twins
        )
        targets, twin_targets = (phrase_targets(s, table, metric, cfg.target_bag_weight) for s in (pool.scenes, twins))
        if cfg.target_caption_weight:
            targets, twin_targets = (
                blend_targets(t, scene_means(c), cfg.target_caption_weight)
                for t, c in ((targets, captions), (twin_targets, twin_captions))
            )
        where = f"a fresh pool ({n} scenes, seed {a.fresh_seed}, {run}'s hold-out)"
    swaps = [
        i
        for i, sc in enumerate(pool.scenes[: len(captions.index)])
        if twins[i] is not None and len(sc) >= 2 and sorted(x[1] for x in sc) == sorted(x[1] for x in twins[i])
    ][: a.pairs]
    unit = lambda v: v / np.linalg.norm(v, axis=-1, keepdims=True)  # noqa: E731
    ys, yt = unit(targets[swaps]), unit(twin_targets[swaps])
    ts = captions.embeddings[captions.index[swaps]]
    tt = twin_captions.embeddings[twin_captions.index[swaps]]
    print(f"{len(swaps)} swap pairs of {where} x {ts.shape[1]} captions; medians (|x_s - x_t|: mean)")
    print(
        "| points | binding I | image bias abs(B) | text bias abs(T) | abs(x_s - x_t) | cos with the targets' "
        "difference | ti right | it right |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(_row("targets", twin_terms(ys[:, None], yt[:, None], ts, tt), ys - yt, "1"))
    for name in filter(None, (a.models or f"toy:{run}").split(",")):
        enc = load_encoder(name, device="cpu")
        xs = enc.embed_images([Image.fromarray(pool.images[i]) for i in swaps])
        xt = enc.embed_images([Image.fromarray(pool.twins[i][1]) for i in swaps])
        d, dy = xs - xt, ys - yt
        cos = (d * dy).sum(-1) / np.linalg.norm(d, axis=-1) / np.linalg.norm(dy, axis=-1)
        print(_row(name, twin_terms(xs[:, None], xt[:, None], ts, tt), d, f"{cos.mean():.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
