"""Training data of the toy models: the caption recipe and a pre-rendered scene pool.

The tokenizer is :class:`bindlab.encoders.toy_tokenizer.WordTokenizer`; its vocabulary (every word this recipe
can write) is :func:`bindlab.data.toy_vocab.default_words`.

The recipe (all in code, fixed by a seed):

- **Scenes**: 1–4 objects (weights :data:`N_OBJECT_WEIGHTS`) with distinct shapes and distinct attributes from
  :data:`bindlab.data.render.RENDER_VOCAB`; each attribute instantiated once (``striped`` -> ``white and orange
  striped``) and rendered by :func:`bindlab.data.render.render_scene` at the model's resolution.
- **Captions** are drawn afresh every time a scene is used: pairs in random order, one of :data:`TEMPLATES`,
  the attribute usually by its name and sometimes by its generation form (:data:`P_FORM`). **Pattern attributes
  are named in only :data:`P_PATTERN_NAMED` of mentions**; otherwise the object is mentioned bare ("a cube") —
  the FactorAtlas situation: a distinction visible in the pixels but rarely put into words.
- **Pool**: ``pool_size`` scenes rendered once (two worker processes) into a uint8 array cached under
  ``$BINDLAB_HOME/toy-data/``; training runs several epochs over it with new captions and random flips.
  Held-out evaluation renders use a different seed (:data:`EVAL_SEED_OFFSET`).
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

from bindlab.data.render import RENDER_VOCAB, ObjectSpec, render_scene
from bindlab.data.vocab import conjoin, with_article
from bindlab.encoders.toy_tokenizer import WordTokenizer

N_OBJECT_WEIGHTS = {1: 0.35, 2: 0.25, 3: 0.2, 4: 0.2}  # share of scenes with 1..4 objects
P_PATTERN_NAMED = 0.25  # a pattern attribute is named in this share of mentions (else: "a cube")
P_FORM = 0.2  # share of named attributes written in their generation form ("white and orange striped")
EVAL_SEED_OFFSET = 1_000_003  # held-out renders use seeds far from the training pool's
HARD_SHARE = 0.5  # share of each batch made of shape-hard groups (see shape_hard_groups)
HARD_GROUP = 4  # single-object scenes per group, all with the same attribute
MAX_SHIFT = 6  # random translation of training images, in pixels (plus random horizontal flips)

TEMPLATES: tuple[str, ...] = (
    "{list}",
    "{list}",
    "a photo of {list}",
    "a picture of {list}",
    "an image of {list}",
    "there is {list}",
    "a scene with {list}",
    "{list} on a grey background",
)
PAIR_TEMPLATES: tuple[str, ...] = ("{a} next to {b}", "{a} beside {b}", "there is {a} next to {b}")
# the words these templates add are listed in bindlab.data.toy_vocab.EXTRA_WORDS (the tokenizer's vocabulary)


# ------------------------------------------------------------------------------------------------ scenes, captions
Scene = list[tuple[str, str, str]]  # (shape, attribute name, generation form) per object


def sample_scene(rng: random.Random, n: int | None = None) -> Scene:
    """A scene of 1–4 objects (or ``n``) with distinct shapes and attributes, each attribute instantiated."""
    if n is None:
        n = rng.choices(list(N_OBJECT_WEIGHTS), weights=list(N_OBJECT_WEIGHTS.values()))[0]
    shapes = rng.sample(RENDER_VOCAB.objects, n)
    attrs = rng.sample(RENDER_VOCAB.attributes, n)
    return [(s, a.name, a.instantiate(rng)) for s, a in zip(shapes, attrs, strict=True)]


def _category(attribute: str) -> str:
    return next(a.category for a in RENDER_VOCAB.attributes if a.name == attribute)


def mention(shape: str, attribute: str, form: str, rng: random.Random) -> str:
    """One object's noun phrase with its article, following the recipe's naming probabilities."""
    if _category(attribute) == "pattern" and rng.random() >= P_PATTERN_NAMED:
        return with_article(shape)
    words = form if (form and rng.random() < P_FORM) else attribute
    return with_article(f"{words} {shape}")


def make_caption(scene: Scene, rng: random.Random) -> str:
    """A caption of ``scene``: pairs in random order, a random template (see module docstring)."""
    phrases = [mention(s, a, f, rng) for s, a, f in scene]
    rng.shuffle(phrases)
    if len(phrases) == 2 and rng.random() < 0.3:
        return rng.choice(PAIR_TEMPLATES).format(a=phrases[0], b=phrases[1])
    text = rng.choice(TEMPLATES).format(list=conjoin(phrases))
    return text[0].upper() + text[1:] + "." if rng.random() < 0.5 else text


def specs(scene: Scene) -> list[ObjectSpec]:
    return [ObjectSpec(s, a, f) for s, a, f in scene]


# ------------------------------------------------------------------------------------------------ pool
def _render_one(job: tuple[Scene, int, int]) -> np.ndarray:
    scene, seed, size = job
    return np.asarray(render_scene(specs(scene), size=size, seed=seed), dtype=np.uint8)


def render_many(scenes: Sequence[Scene], seeds: Sequence[int], size: int, workers: int = 2,
                progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Render scenes into one uint8 array (n, size, size, 3), in ``workers`` processes."""
    jobs = [(sc, sd, size) for sc, sd in zip(scenes, seeds, strict=True)]
    out = np.zeros((len(jobs), size, size, 3), dtype=np.uint8)
    if workers <= 1 or len(jobs) < 64:
        for i, job in enumerate(jobs):
            out[i] = _render_one(job)
            if progress:
                progress(i + 1, len(jobs))
        return out
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        for i, img in enumerate(pool.imap(_render_one, jobs, chunksize=64)):
            out[i] = img
            if progress:
                progress(i + 1, len(jobs))
    return out


@dataclass
class ScenePool:
    """Pre-rendered training scenes: ``images`` (n, size, size, 3) uint8 and their ``scenes``."""

    images: np.ndarray
    scenes: list[Scene]


def pool_scenes(pool_size: int, seed: int) -> tuple[list[Scene], list[int]]:
    """The pool's scenes and render seeds: a pure function of (pool_size, seed)."""
    rng = random.Random(f"toy-pool:{seed}")
    scenes = [sample_scene(rng) for _ in range(pool_size)]
    return scenes, [seed * 10_000_000 + i for i in range(pool_size)]


def load_pool(pool_size: int, size: int, seed: int, cache_dir: str | Path | None = None, workers: int = 2,
              progress: Callable[[int, int], None] | None = None) -> ScenePool:
    """The training pool, rendered once and cached as ``.npy`` (atomically written; a corrupt file is re-rendered)."""
    from bindlab.config import home

    scenes, seeds = pool_scenes(pool_size, seed)
    key = hashlib.sha256(json.dumps([scenes, seeds, size]).encode()).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir else home() / "toy-data"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"pool-{pool_size}-{size}px-seed{seed}-{key}.npy"
    if path.is_file():
        try:
            images = np.load(path)
            if images.shape == (pool_size, size, size, 3):
                return ScenePool(images, scenes)
        except (OSError, ValueError):
            pass  # corrupt or partial: render again
    images = render_many(scenes, seeds, size, workers, progress)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npy")
    np.save(tmp, images)
    os.replace(tmp, path)
    return ScenePool(images, scenes)


def batch_indices(pool_size: int, batch_size: int, step: int, seed: int) -> np.ndarray:
    """Scene indices of training step ``step`` (0-based): epochs are seeded permutations, so a resumed run
    sees exactly the batches an uninterrupted one would."""
    start = step * batch_size
    out = []
    while len(out) < batch_size:
        epoch, offset = divmod(start + len(out), pool_size)
        perm = np.random.default_rng([seed, epoch]).permutation(pool_size)
        out.extend(perm[offset : offset + batch_size - len(out)].tolist())
    return np.asarray(out)


def shape_hard_groups(scenes: Sequence[Scene], n: int, step: int, seed: int, group: int = HARD_GROUP) -> list[int]:
    """``n`` pool indices in groups of ``group`` single-object scenes that share their attribute (their shapes differ).

    In a random batch two scenes rarely share an attribute, so the contrastive loss can be met by attributes alone
    and shapes are barely learned (measured: shape accuracy 0.43 on the training renders themselves after 3,200
    steps of random batches). Inside a group only the shape tells the captions apart.
    """
    by_attr: dict[str, list[int]] = {}
    for i, sc in enumerate(scenes):
        if len(sc) == 1:
            by_attr.setdefault(sc[0][1], []).append(i)
    attrs = sorted(a for a, idx in by_attr.items() if len(idx) >= group)
    if not attrs or n < group:
        return []
    rng = np.random.default_rng([seed, step, 7])
    out: list[int] = []
    for a in rng.choice(attrs, size=n // group, replace=len(attrs) < n // group):
        members = by_attr[str(a)]
        out.extend(int(members[j]) for j in rng.choice(len(members), size=group, replace=False))
    return out


def shift(images: np.ndarray, offsets: Sequence[tuple[int, int]]) -> np.ndarray:
    """Translate each image (n, s, s, 3) by its (dy, dx) pixels, filling the uncovered border by edge replication
    (scene backgrounds are smooth, so this adds no edges)."""
    m = max((max(abs(dy), abs(dx)) for dy, dx in offsets), default=0)
    if m == 0:
        return images
    s = images.shape[1]
    padded = np.pad(images, ((0, 0), (m, m), (m, m), (0, 0)), mode="edge")
    return np.stack([padded[i, m - dy : m - dy + s, m - dx : m - dx + s] for i, (dy, dx) in enumerate(offsets)])


def make_batch(pool: ScenePool, tokenizer: WordTokenizer, step: int, batch_size: int, seed: int,
               hard_share: float = HARD_SHARE) -> tuple[np.ndarray, np.ndarray]:
    """Images (b, 3, s, s) float32 in [0, 1] (random shifts and horizontal flips) and caption ids (b, len).

    ``hard_share`` of the batch is :func:`shape_hard_groups`; the rest walks seeded epochs over the pool.
    """
    hard = shape_hard_groups(pool.scenes, int(batch_size * hard_share), step, seed)
    idx = np.concatenate([batch_indices(len(pool.scenes), batch_size - len(hard), step, seed),
                          np.asarray(hard, dtype=np.int64)]).astype(np.int64)
    rng = random.Random(f"toy-batch:{seed}:{step}")
    caps = [make_caption(pool.scenes[i], rng) for i in idx]
    imgs = shift(pool.images[idx], [(rng.randint(-MAX_SHIFT, MAX_SHIFT), rng.randint(-MAX_SHIFT, MAX_SHIFT))
                                    for _ in idx])  # (b, s, s, 3)
    flips = np.array([rng.random() < 0.5 for _ in idx])
    imgs = np.where(flips[:, None, None, None], imgs[:, :, ::-1], imgs)
    pixels = imgs.transpose(0, 3, 1, 2).astype(np.float32) / 255.0  # (b, 3, s, s)
    return pixels, tokenizer.batch(caps)
