"""CompoSET-style pair twins for toy training: a base scene and the same scene with one attribute edit.

The Pairs tab's scenes (:mod:`bindlab.data.composet`) are unlike the toy pool's: 4–10 small objects, twelve
backgrounds/lights/poses (:func:`bindlab.data.render.context_from_index`), captions that name one object first
("A red cube, beside two green hourglasses and ..."). A toy trained on the pool alone sees each Pairs base and foil
as nearly the same image (within-pair image cosine 0.999) and scores at the floor. With ``--pair-twins SHARE``
each batch also holds that share of base/foil pairs drawn by the same generator, each pair's two items being each
other's hardest negatives.

- **Which edits**: only :data:`PAIR_EDIT_TYPES`, the attribute edits whose two captions the toy's word table can tell
  apart. Count, size, spatial and presence edits turn on words it does not have ("two", "no", "small", "left",
  "above"), so for a toy their two captions read the same.
- **Seeds**: the scenes come from their own random stream (``toy-pairs:<seed>``) and render seeds far from the
  generator's (``composet|<seed>``) — the same generator as the Pairs sets, not the same scenes. Results on those
  sets are in-distribution for these edit types, and a card says so.
- **Held-out combinations**: a scene or foil that shows a held-out (shape, attribute) pair is not used.
- **Rendering**: at twice the model's side, then shrunk with a box filter as the toy encoder shrinks a Pairs image.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bindlab.data.composet import Edit, Obj, Scene, _render, candidate_edits, captions, context_phrases, make_scene

PAIR_EDIT_TYPES: tuple[str, ...] = (
    "modify_color",
    "swap_color",
    "modify_material",
    "swap_material",
    "modify_pattern",
    "swap_pattern",
    "modify_transparency",
    "modify_state",
)
LEVELS: tuple[str, ...] = ("short", "medium", "long")
SEED_OFFSET = 7_000_001  # render seeds of the pair twins, far from the Pairs generator's (seed * 100_003 + index)
N_RANGE = (4, 10)  # objects per scene, as in the Pairs sets


@dataclass
class PairTwins:
    """Rendered pair twins: ``images`` (n, 2, s, s, 3) uint8 (base, foil) and each side's captions by level."""

    images: np.ndarray
    captions: list[tuple[dict[str, str], dict[str, str]]]
    edit_types: list[str]


def _shows_heldout(objects: Sequence[Obj | None], heldout: frozenset[tuple[str, str]]) -> bool:
    for o in objects:
        if o is not None and ((o.shape, o.value) in heldout or (o.glowing and (o.shape, "glowing") in heldout)):
            return True
    return False


def pair_twin_specs(
    n: int, side: int, seed: int, heldout: frozenset[tuple[str, str]] = frozenset()
) -> list[tuple[Scene, Edit, tuple[dict[str, str], dict[str, str]]]]:
    """``n`` (scene laid out for rendering at ``2 * side`` px, one attribute edit, (base captions, foil captions)):
    a pure function of its arguments.

    Each scene gets one edit, its type drawn uniformly among the :data:`PAIR_EDIT_TYPES` it allows; scenes or edits
    showing a ``heldout`` pair are redrawn.
    """
    out = []
    index = 0
    while len(out) < n:
        rng = random.Random(f"toy-pairs:{seed}:{index}")
        scene = make_scene(index, rng, 2 * side, SEED_OFFSET + seed, N_RANGE)
        index += 1
        if _shows_heldout(scene.objects, heldout):
            continue
        allowed = {
            t: [e for e in es if not _shows_heldout(e.foil_objects, heldout)]
            for t, es in candidate_edits(scene).items()
            if t in PAIR_EDIT_TYPES
        }
        allowed = {t: es for t, es in allowed.items() if es}
        if not allowed:
            continue
        edit = rng.choice(allowed[rng.choice(sorted(allowed))])
        skip = edit.touched + edit.described
        key = scene.seed * 1000
        caps = (
            captions(edit.base_phrase, context_phrases(scene.objects, skip), key),
            captions(edit.foil_phrase, context_phrases(edit.foil_objects, skip), key),
        )
        out.append((scene, edit, caps))
    return out


def _render_pair(job: tuple[Scene, Edit, int]) -> np.ndarray:
    from PIL import Image

    scene, edit, side = job
    pair = []
    for objects in (scene.objects, edit.foil_objects):
        img = Image.fromarray(_render(objects, scene, 2 * side)).resize((side, side), Image.Resampling.BOX)
        pair.append(np.asarray(img, dtype=np.uint8))
    return np.stack(pair)


def load_pair_twins(
    n: int,
    side: int,
    seed: int,
    cache_dir: str | Path | None = None,
    workers: int = 2,
    heldout: frozenset[tuple[str, str]] = frozenset(),
    progress: Callable[[int, int], None] | None = None,
) -> PairTwins:
    """:func:`pair_twin_specs` rendered at ``side`` px, cached as ``.npy`` under ``$BINDLAB_HOME/toy-data``."""
    from bindlab.config import home

    specs = pair_twin_specs(n, side, seed, heldout)
    key = hashlib.sha256(json.dumps([n, side, seed, sorted(heldout), PAIR_EDIT_TYPES]).encode()).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir else home() / "toy-data"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"pair-twins-{n}-{side}px-seed{seed}-{key}.npy"
    images = None
    if path.is_file():
        try:
            images = np.load(path)
            if images.shape != (n, 2, side, side, 3):
                images = None
        except (OSError, ValueError):
            images = None  # corrupt or partial: render again
    if images is None:
        jobs = [(scene, edit, side) for scene, edit, _ in specs]
        images = np.zeros((n, 2, side, side, 3), dtype=np.uint8)
        if workers <= 1:
            for i, job in enumerate(jobs):
                images[i] = _render_pair(job)
                if progress:
                    progress(i + 1, n)
        else:
            with multiprocessing.get_context("spawn").Pool(workers) as pool:
                for i, img in enumerate(pool.imap(_render_pair, jobs, chunksize=16)):
                    images[i] = img
                    if progress:
                        progress(i + 1, n)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npy")
        np.save(tmp, images)
        os.replace(tmp, path)
    return PairTwins(images, [caps for _, _, caps in specs], [edit.edit_type for _, edit, _ in specs])


def pair_batch(pairs: PairTwins, m: int, step: int, seed: int, rng: random.Random) -> tuple[np.ndarray, list[str]]:
    """``m`` pairs of training step ``step`` (seeded epochs over the pairs): images (2m, s, s, 3) as base, foil,
    base, foil …, and their captions at one level per pair drawn from ``rng``."""
    n = len(pairs.captions)
    start, idx = step * m, []
    while len(idx) < m:
        epoch, offset = divmod(start + len(idx), n)
        perm = np.random.default_rng([seed, epoch, 11]).permutation(n)
        idx.extend(perm[offset : offset + m - len(idx)].tolist())
    caps = []
    for i in idx:
        level = rng.choice(LEVELS)
        caps += [pairs.captions[i][0][level], pairs.captions[i][1][level]]
    return pairs.images[idx].reshape(-1, *pairs.images.shape[2:]), caps
