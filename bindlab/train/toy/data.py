"""Training data of the toy models: the caption recipe and a pre-rendered scene pool.

The tokenizer is :class:`bindlab.encoders.toy.tokenizer.WordTokenizer`; its vocabulary (every word this recipe
can write) is :func:`bindlab.data.toy_vocab.default_words`.

The recipe (all in code, fixed by a seed):

- **Scenes**: 1–4 objects (weights :data:`N_OBJECT_WEIGHTS`; up to 5 with :data:`OBJECT_WEIGHTS`) with distinct
  shapes and distinct attributes from :data:`bindlab.data.render.RENDER_VOCAB`; each attribute instantiated once
  (``striped`` -> ``white and orange striped``) and rendered by :func:`bindlab.data.render.render_scene` at the
  model's resolution (or larger and shrunk, as an image file is when a toy model reads it).
- **Captions** are drawn afresh every time a scene is used: pairs in random order, one of :data:`TEMPLATES`,
  the attribute usually by its name and sometimes by its generation form (:data:`P_FORM`). **Pattern attributes
  are named in only :data:`P_PATTERN_NAMED` of mentions**; otherwise the object is mentioned bare ("a cube") —
  the FactorAtlas situation: a distinction visible in the pixels but rarely put into words.
- **Pool**: ``pool_size`` scenes rendered once (two worker processes) into a uint8 array cached under
  ``$BINDLAB_HOME/toy-data/``; training runs several epochs over it with new captions and random flips.
  Held-out evaluation renders use a different seed (:data:`EVAL_SEED_OFFSET`).
- **Held-out combinations** (:func:`heldout_combinations`): a fixed, listed share of shape x attribute pairs that no
  training scene contains (single or multi-object), so evaluation can tell composition from recognition. Every
  shape and every attribute still occurs in training, with other partners.
- **Binding twins** (:func:`twin_scene`, for ``toy:negclip``): a scene with two objects' attributes swapped (or one
  attribute replaced), rendered with the same seed, so layout and geometry are identical and only the bindings
  differ; in a batch, scene and twin are each other's hardest negatives (NegCLIP's hard negatives, with images).
  With ``twin_layout="shuffled"`` the twin's objects fill the same slots in another order (:func:`shuffled_slots`).
- **Pair twins** (:mod:`bindlab.train.toy.pairs`): CompoSET-style base/foil pairs with one attribute edit, in the
  Pairs sets' scenes and contexts, appended to a batch the same way.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from bindlab.data.render import RENDER_VOCAB, ObjectSpec, render_scene
from bindlab.data.vocab import conjoin, with_article
from bindlab.encoders.toy.tokenizer import WordTokenizer
from bindlab.train.toy.pairs import PairTwins, pair_batch

N_OBJECT_WEIGHTS = {1: 0.35, 2: 0.25, 3: 0.2, 4: 0.2}  # share of scenes with 1..4 objects (the default)
# shares with up to 5 objects (``train toy --max-objects 5``): a SABER-style MCQ asks about 2-5
OBJECT_WEIGHTS = {4: N_OBJECT_WEIGHTS, 5: {1: 0.3, 2: 0.2, 3: 0.175, 4: 0.175, 5: 0.15}}
P_PATTERN_NAMED = 0.25  # a pattern attribute is named in this share of mentions (else: "a cube")
P_FORM = 0.2  # share of named attributes written in their generation form ("white and orange striped")
EVAL_SEED_OFFSET = 1_000_003  # held-out renders use seeds far from the training pool's
HARD_SHARE = 0.5  # share of each batch made of shape-hard groups (see shape_hard_groups)
HARD_GROUP = 4  # single-object scenes per group, all with the same attribute
TWIN_LAYOUTS = ("same", "shuffled")  # where a binding twin's objects sit: its scene's slots, or the slots shuffled
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


Combo = tuple[str, str]  # (shape, attribute name)


def heldout_combinations(fraction: float, seed: int = 0) -> list[Combo]:
    """A fixed share of the shape x attribute pairs, held out of every training scene (a pure function).

    Balanced: each shape loses ``round(fraction * 1008) / 28`` attributes (5 or 6 at 0.15), taken as consecutive
    windows of a seeded attribute order, so each attribute loses 4 or 5 shapes and keeps the rest.

    Args:
        fraction: share of the 28 x 36 pairs to hold out, 0 (none) to 0.5.
        seed: fixes the attribute order.

    Returns:
        The held-out ``(shape, attribute)`` pairs, sorted.
    """
    if not 0 <= fraction <= 0.5:
        raise ValueError(f"the held-out share of combinations must be between 0 and 0.5, got {fraction}")
    shapes = list(RENDER_VOCAB.objects)
    attrs = [a.name for a in RENDER_VOCAB.attributes]
    random.Random(f"toy-holdout:{seed}").shuffle(attrs)
    total = round(fraction * len(shapes) * len(attrs))
    out: list[Combo] = []
    pos = 0
    for i, shape in enumerate(shapes):
        k = total * (i + 1) // len(shapes) - total * i // len(shapes)
        out += [(shape, attrs[(pos + j) % len(attrs)]) for j in range(k)]
        pos += k
    return sorted(out)


def exposes(shape: str, attribute: str, form: str, heldout: frozenset[Combo]) -> bool:
    """Whether an object shows a held-out pair through another attribute's colour slot: a word of its form other
    than its attribute is a held-out attribute of its shape ("orange glowing fish" while (fish, orange) is held
    out). The same test as the split audit (:mod:`bindlab.train.toy.audit`)."""
    return any((shape, w) in heldout for w in set(form.replace("-", " ").split()) - {attribute})


def sample_scene(
    rng: random.Random,
    n: int | None = None,
    heldout: frozenset[Combo] = frozenset(),
    clean: bool = False,
    max_objects: int = 4,
) -> Scene:
    """A scene of 1–``max_objects`` objects (shares :data:`OBJECT_WEIGHTS`; or exactly ``n``) with distinct shapes
    and attributes, each attribute instantiated.

    No object is a ``heldout`` (shape, attribute) pair: the attributes are drawn again until none is. With
    ``clean``, no object shows one through a colour slot either (:func:`exposes`): its form is drawn again (up to
    20 times), then the attributes.
    """
    if n is None:
        weights = OBJECT_WEIGHTS[max_objects]
        n = rng.choices(list(weights), weights=list(weights.values()))[0]
    shapes = rng.sample(RENDER_VOCAB.objects, n)
    while True:
        attrs = rng.sample(RENDER_VOCAB.attributes, n)
        while heldout and any((s, a.name) in heldout for s, a in zip(shapes, attrs, strict=True)):
            attrs = rng.sample(RENDER_VOCAB.attributes, n)
        scene = [(s, a.name, a.instantiate(rng)) for s, a in zip(shapes, attrs, strict=True)]
        if not (clean and heldout):
            return scene
        for k, (s, a, f) in enumerate(scene):
            tries = 0
            while exposes(s, a, f, heldout) and tries < 20:
                f, tries = attrs[k].instantiate(rng), tries + 1
            scene[k] = (s, a, f)
        if not any(exposes(s, a, f, heldout) for s, a, f in scene):
            return scene


def twin_scene(
    scene: Scene, rng: random.Random, heldout: frozenset[Combo] = frozenset(), clean: bool = False
) -> Scene | None:
    """The scene with its bindings changed and nothing else: two objects swap attributes (scenes of 2+ objects),
    or else one object's attribute is replaced by one the scene lacks.

    Only non-pattern attributes change (patterns are usually left unnamed in captions, so a changed pattern would
    often leave the caption the same); no new pair is a ``heldout`` one, and with ``clean`` no moved or new
    attribute shows one through a colour slot either (:func:`exposes`). None when no twin exists.
    """
    named = [i for i, (_, a, _) in enumerate(scene) if _category(a) != "pattern"]

    def fits(shape: str, attribute: str, form: str) -> bool:
        return (shape, attribute) not in heldout and not (clean and exposes(shape, attribute, form, heldout))

    pairs = [
        (i, j)
        for i in named
        for j in named
        if i < j and fits(scene[i][0], scene[j][1], scene[j][2]) and fits(scene[j][0], scene[i][1], scene[i][2])
    ]
    if pairs:
        i, j = rng.choice(pairs)
        twin = list(scene)
        twin[i] = (scene[i][0], scene[j][1], scene[j][2])
        twin[j] = (scene[j][0], scene[i][1], scene[i][2])
        return twin
    used = {a for _, a, _ in scene}
    options = [
        (i, a)
        for i in named
        for a in RENDER_VOCAB.attributes
        if a.category != "pattern" and a.name not in used and (scene[i][0], a.name) not in heldout
    ]
    if not options:
        return None
    i, attr = rng.choice(options)
    form = attr.instantiate(rng)
    if clean and exposes(scene[i][0], attr.name, form, heldout):
        return None  # rare (a composite colour slot); the scene trains without a twin
    twin = list(scene)
    twin[i] = (scene[i][0], attr.name, form)
    return twin


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
def _render_one(job: tuple[Scene, int, int, int]) -> np.ndarray:
    scene, seed, size, render_size = job
    image = render_scene(specs(scene), size=render_size or size, seed=seed)
    if image.size[0] != size:  # drawn larger, then shrunk with the box filter ToyEncoder.pixels shrinks files with
        image = image.resize((size, size), Image.Resampling.BOX)
    return np.asarray(image, dtype=np.uint8)


def render_many(
    scenes: Sequence[Scene],
    seeds: Sequence[int],
    size: int,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
    render_sizes: Sequence[int] | None = None,
) -> np.ndarray:
    """Render scenes into one uint8 array (n, size, size, 3), in ``workers`` processes; a scene whose entry of
    ``render_sizes`` is larger than ``size`` is drawn at that side and shrunk, as an image file of that size is when
    a toy model reads it (a SABER-style MCQ set's images are 128 px); 0 draws it at ``size``."""
    sizes = list(render_sizes) if render_sizes is not None else [0] * len(scenes)
    jobs = [(sc, sd, size, r) for sc, sd, r in zip(scenes, seeds, sizes, strict=True)]
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
    twins: dict[int, tuple[Scene, np.ndarray]] = field(default_factory=dict)  # pool index -> (twin, its image)

    def twin_scenes(self) -> list[Scene | None]:
        """Each pool scene's binding twin, index-aligned with ``scenes`` (None where it has none)."""
        return [self.twins[i][0] if i in self.twins else None for i in range(len(self.scenes))]


def pool_scenes(
    pool_size: int, seed: int, heldout: frozenset[Combo] = frozenset(), clean: bool = False, max_objects: int = 4
) -> tuple[list[Scene], list[int]]:
    """The pool's scenes and render seeds: a pure function of (pool_size, seed, heldout, clean, max_objects);
    ``clean``: no held-out pair through a colour slot either (:func:`sample_scene`)."""
    if max_objects not in OBJECT_WEIGHTS:
        raise ValueError(f"a pool's scenes have at most 4 or 5 objects (max_objects), got {max_objects}")
    rng = random.Random(f"toy-pool:{seed}")
    scenes = [sample_scene(rng, heldout=heldout, clean=clean, max_objects=max_objects) for _ in range(pool_size)]
    return scenes, [seed * 10_000_000 + i for i in range(pool_size)]


def pool_twins(
    scenes: Sequence[Scene], seed: int, heldout: frozenset[Combo] = frozenset(), clean: bool = False
) -> list[Scene | None]:
    """One binding twin per pool scene (:func:`twin_scene`; None where there is none): a pure function."""
    rng = random.Random(f"toy-twins:{seed}")
    return [twin_scene(sc, rng, heldout, clean) for sc in scenes]


def shuffled_slots(scenes: Sequence[Scene | None], seed: int) -> list[Scene | None]:
    """Each scene's objects in a random other order (a pure function of the scenes and the seed; scenes of one
    object, and None, unchanged). Rendered with the scene's seed, the objects then sit in other slots of the same
    layout: an image MCQ's candidates fill the slots in caption order, so its right image and a swap distractor
    differ in where the objects sit as well as in the bindings."""
    rng = random.Random(f"toy-twin-slots:{seed}")
    out: list[Scene | None] = []
    for sc in scenes:
        if sc is None or len(sc) < 2:
            out.append(sc)
            continue
        order = list(range(len(sc)))
        while order == sorted(order):
            rng.shuffle(order)
        out.append([sc[k] for k in order])
    return out


def pool_render_sizes(pool_size: int, seed: int, render_size: int = 0, share: float = 1.0) -> list[int]:
    """The side each pool scene is drawn at (0: the model's): ``render_size`` for a seeded ``share`` of the scenes,
    the model's side for the rest (a pure function). A mixed pool keeps both looks: an MCQ set's 128 px files
    shrunk, and the model-side renders single objects are scored on."""
    if not 0 <= share <= 1:
        raise ValueError(f"the share of scenes drawn at --render-size must be between 0 and 1, got {share}")
    if not render_size:
        return [0] * pool_size
    rng = random.Random(f"toy-render:{seed}")
    return [render_size if rng.random() < share else 0 for _ in range(pool_size)]


def _cached_render(
    scenes: Sequence[Scene],
    seeds: Sequence[int],
    size: int,
    name: str,
    cache_dir: str | Path | None,
    workers: int,
    progress: Callable[[int, int], None] | None,
    render_sizes: Sequence[int] | None = None,
) -> np.ndarray:
    """Render ``scenes`` once and cache them as ``.npy`` (atomically written; a corrupt file is re-rendered)."""
    from bindlab.config import home

    extra = [list(render_sizes)] if render_sizes and any(render_sizes) else []  # none drawn larger: earlier keys
    key = hashlib.sha256(json.dumps([list(scenes), list(seeds), size, *extra]).encode()).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir else home() / "toy-data"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{key}.npy"
    if path.is_file():
        try:
            images = np.load(path)
            if images.shape == (len(scenes), size, size, 3):
                return images
        except (OSError, ValueError):
            pass  # corrupt or partial: render again
    images = render_many(scenes, seeds, size, workers, progress, render_sizes)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npy")
    np.save(tmp, images)
    os.replace(tmp, path)
    return images


def load_pool(
    pool_size: int,
    size: int,
    seed: int,
    cache_dir: str | Path | None = None,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
    heldout: frozenset[Combo] = frozenset(),
    twins: bool = False,
    clean: bool = False,
    twin_layout: str = "same",
    max_objects: int = 4,
    render_size: int = 0,
    render_share: float = 1.0,
) -> ScenePool:
    """The training pool (and, with ``twins``, each scene's binding twin rendered with the same seed), cached;
    ``clean``, ``max_objects``: see :func:`pool_scenes`; ``render_size``, ``render_share``: see
    :func:`pool_render_sizes` (a twin is drawn as its scene is). ``twin_layout``: "same" renders a twin's objects
    in its scene's slots; "shuffled" in a random other order of the same slots (:func:`shuffled_slots`). Either way
    the pool keeps the twin scene itself, index-aligned with its scene (captions and targets do not depend on the
    slots)."""
    if twin_layout not in TWIN_LAYOUTS:
        raise ValueError(f"unknown twin layout {twin_layout!r}; choose one of {TWIN_LAYOUTS}")
    if render_size and render_size < size:
        raise ValueError(f"render_size {render_size} px is below the model's {size} px: render at least that large")
    scenes, seeds = pool_scenes(pool_size, seed, heldout, clean, max_objects)
    sizes = pool_render_sizes(pool_size, seed, render_size if render_size != size else 0, render_share)
    px = f"{size}px" + (f"-from{render_size}" if any(sizes) else "")
    px += f"x{render_share}" if any(sizes) and render_share < 1 else ""
    images = _cached_render(
        scenes, seeds, size, f"pool-{pool_size}-{px}-seed{seed}", cache_dir, workers, progress, sizes
    )
    if not twins:
        return ScenePool(images, scenes)
    twin_list = pool_twins(scenes, seed, heldout, clean)
    have = [i for i, t in enumerate(twin_list) if t is not None]
    drawn = [twin_list[i] for i in have]
    if twin_layout == "shuffled":
        drawn = shuffled_slots(drawn, seed)
    twin_images = _cached_render(
        drawn,
        [seeds[i] for i in have],
        size,
        f"twins-{pool_size}-{px}-seed{seed}",
        cache_dir,
        workers,
        progress,
        [sizes[i] for i in have],
    )
    return ScenePool(images, scenes, {i: (twin_list[i], twin_images[k]) for k, i in enumerate(have)})


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


def make_batch(
    pool: ScenePool,
    tokenizer: WordTokenizer,
    step: int,
    batch_size: int,
    seed: int,
    hard_share: float = HARD_SHARE,
    twin_share: float = 0.0,
    pairs: PairTwins | None = None,
    pair_share: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Images (b, 3, s, s) float32 in [0, 1] (random shifts and horizontal flips) and caption ids (b, len).

    ``hard_share`` of the batch is :func:`shape_hard_groups`; the rest walks seeded epochs over the pool. With
    ``twin_share`` > 0, that share of the walked scenes that have a twin (``pool.twins``) brings it along: the twin
    image gets its scene's shift and flip, its caption the scene's caption choices (the same random state), and
    the pair is appended, so the batch grows to ``b + m`` matched pairs in which scene and twin are each other's
    hard negatives. With ``pairs`` and ``pair_share`` > 0, ``round(batch_size * pair_share)`` CompoSET-style pair
    twins (:func:`bindlab.train.toy.pairs.pair_batch`: base and foil, one shift and flip per pair) are appended too.
    """
    hard = shape_hard_groups(pool.scenes, int(batch_size * hard_share), step, seed)
    walked = batch_indices(len(pool.scenes), batch_size - len(hard), step, seed)
    idx = np.concatenate([walked, np.asarray(hard, dtype=np.int64)]).astype(np.int64)
    rng = random.Random(f"toy-batch:{seed}:{step}")
    with_twin = [int(i) for i in walked if int(i) in pool.twins][: int(round(batch_size * twin_share))]
    caps, twin_caps = [], []
    for i in idx:
        state = rng.getstate()
        caps.append(make_caption(pool.scenes[i], rng))
        if int(i) in with_twin and len(twin_caps) < len(with_twin):
            after = rng.getstate()
            rng.setstate(state)
            twin_caps.append(make_caption(pool.twins[int(i)][0], rng))
            rng.setstate(after)
    offsets = [(rng.randint(-MAX_SHIFT, MAX_SHIFT), rng.randint(-MAX_SHIFT, MAX_SHIFT)) for _ in idx]
    flips = np.array([rng.random() < 0.5 for _ in idx])
    images = pool.images[idx]
    if with_twin:
        pos = {int(i): k for k, i in enumerate(idx)}  # first position of each index (the walked part)
        images = np.concatenate([images, np.stack([pool.twins[i][1] for i in with_twin])])
        offsets = offsets + [offsets[pos[i]] for i in with_twin]
        flips = np.concatenate([flips, flips[[pos[i] for i in with_twin]]])
        caps = caps + twin_caps
    m = int(round(batch_size * pair_share)) if pairs is not None else 0
    if m:
        pair_images, pair_caps = pair_batch(pairs, m, step, seed, rng)
        moves = [(rng.randint(-MAX_SHIFT, MAX_SHIFT), rng.randint(-MAX_SHIFT, MAX_SHIFT)) for _ in range(m)]
        turns = [rng.random() < 0.5 for _ in range(m)]
        images = np.concatenate([images, pair_images])
        offsets = offsets + [o for o in moves for _ in range(2)]
        flips = np.concatenate([flips, np.repeat(np.array(turns, dtype=bool), 2)])
        caps = caps + pair_caps
    imgs = shift(images, offsets)  # (b [+ m], s, s, 3)
    imgs = np.where(flips[:, None, None, None], imgs[:, :, ::-1], imgs)
    pixels = imgs.transpose(0, 3, 1, 2).astype(np.float32) / 255.0  # (b [+ m], 3, s, s)
    return pixels, tokenizer.batch(caps)
