"""Training data of ``--arch lit`` (``toy:lit-minilm``): real-English captions and their frozen-text-model cache.

LiT (Zhai et al., "LiT: Zero-Shot Transfer with Locked-image text Tuning", CVPR 2022) trains one tower into the
space of a frozen one; here the *text* tower is frozen (the bundled MiniLM), so a caption's embedding never
changes during training. Computing it at every step would cost a MiniLM forward pass per caption (about 7 ms on one
CPU thread); instead:

- **Captions** (:func:`lit_captions`): every pool scene gets :data:`CAPTIONS_PER_SCENE` captions, a pure function
  of (scene, index, seed), written with the four sentence templates of :mod:`bindlab.data.templates`
  (attributive, predicative, relative, with; the scene's captions walk a shuffled order of them), a/an and is/are
  agreement (``templates.group_phrase``), the renderable vocabulary, and the toys' naming recipe (pattern
  attributes named in only :data:`bindlab.train.toy.data.P_PATTERN_NAMED` of mentions, generation forms in
  :data:`bindlab.train.toy.data.P_FORM`). The ``with`` form cannot say effect and style attributes; a caption that
  names one uses another template.
- **Cache** (:func:`caption_cache`): the distinct caption texts embedded once, up front, in batches, by the frozen
  text model, stored with the run as ``OUT/captions.npz`` (texts, embeddings, per-scene indices, seconds) and
  reused when the pool, seed and text model match. A training step then only looks embeddings up, so it costs
  what a toy:clip step costs minus its text tower.
- **Batches** (:func:`lit_batch`): the same scenes, shifts and flips as :func:`bindlab.train.toy.data.make_batch`
  (shape-hard groups + seeded epochs), and for each scene one of its cached captions, drawn by a seeded rng.
- **Discriminant targets** (:func:`discriminant_targets`, ``--lit-target discriminant``): instead of matching one
  caption embedding at a time, the image is pulled towards a fixed point of the frozen space computed from its
  scene's cached captions: ``W [(P - mu) - lam (N - mu)]``, where P is the mean embedding of the scene's captions,
  N that of its binding twin's, mu the mean over scenes and W the inverse of the within-scene covariance of the
  captions (shrunk towards a multiple of the identity). A query then scores an image by ``q . W (P - mu) - ...``:
  a linear discriminant in the frozen space, which weighs the directions where captions of one scene vary least
  (word order, which attribute sits with which object) more than the plain caption mean does.
- **Phrase targets** (:func:`phrase_targets`, ``--lit-target phrases``): the point is built from the frozen
  embeddings of the scene's object phrases ("a red cube", :func:`phrase_table`) instead of whole captions, so it
  carries no caption-sampling noise: ``W [sum_j (e(a_j, o_j) - mu) - lam/n sum_{a, o} (e(a, o) - mu)]``, the phrases
  of the scene's own pairs less ``lam`` of its *bag* (every attribute of the scene with every object of it: the mean
  over all ways of binding them), in the discriminant metric ``W`` of the captions (:func:`within_scene_whitener`,
  from :data:`WHITENER_SCENES` scenes' cached captions). Held-out pairs are left out of the phrase table, of ``mu``
  and of the bag, so no held-out pair's text reaches the image tower.
- **Phrase targets with a share of caption mean** (:func:`blend_targets`, ``--lit-target phrases
  --target-caption-weight A``): ``A`` times the scene's unit caption mean (:func:`scene_means` of the whole pool's
  cached captions; a twin's from its own captions) plus ``1 - A`` times its phrase target, renormalised. The phrase
  target alone says which attribute sits on which object but lands away from where real captions put the scene;
  the caption mean alone lands there but keeps few bindings. Mixing them (the phrase reference with a share of
  imitation, ``scripts/lit_reference.py --caption-weight``) keeps more of both cross-modal directions than either.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from bindlab.data.templates import TEMPLATES, WITH_NOUNS, group_phrase
from bindlab.data.vocab import conjoin, copula, with_article
from bindlab.train.toy.data import (
    MAX_SHIFT,
    P_FORM,
    P_PATTERN_NAMED,
    PAIR_TEMPLATES,
    Scene,
    ScenePool,
    _category,
    batch_indices,
    shape_hard_groups,
    shift,
)

CAPTIONS_PER_SCENE = 4  # cached captions per pool scene (one per template, in a shuffled order)
TARGET_SHRINK = 0.03  # discriminant targets: covariance shrinkage, as a share of its mean eigenvalue
TARGET_TWIN_WEIGHT = 0.5  # discriminant targets: weight of the binding twin's caption mean (lam)
# openers of the noun-phrase templates (attributive, relative, with); the predicative one is a clause of its own
PHRASE_BAG_WEIGHT = 0.5  # phrase targets: weight of the scene's bag of pairings (lam)
WHITENER_SCENES = 2000  # phrase targets: pool scenes whose cached captions estimate the discriminant metric
OPENERS: tuple[str, ...] = ("", "", "a photo of ", "a picture of ", "an image of ", "there is ")


def lit_caption(scene: Scene, rng: random.Random, template: str) -> str:
    """One real-English caption of ``scene`` in ``template`` (one of :data:`bindlab.data.templates.TEMPLATES`).

    Objects in random order; a pattern attribute is named in :data:`P_PATTERN_NAMED` of mentions (otherwise the
    object is bare: "a cube", or in the predicative form "there is a cube"); a named attribute is written in its
    generation form in :data:`P_FORM` of mentions ("white and orange striped"), a colour always by its name in the
    ``with`` form ("a cube with a red colour"). ``with`` falls back to another template when the scene names an
    effect or style attribute (it has no noun for them).
    """
    mentions: list[tuple[str, str, str | None]] = []  # (shape, attribute, words or None = bare)
    for s, a, f in scene:
        if _category(a) == "pattern" and rng.random() >= P_PATTERN_NAMED:
            mentions.append((s, a, None))
        else:
            mentions.append((s, a, f if (f and rng.random() < P_FORM) else a))
    rng.shuffle(mentions)
    if template == "with" and any(w is not None and _category(a) not in WITH_NOUNS for _, a, w in mentions):
        template = rng.choice(("attributive", "predicative", "relative"))
    phrases = []
    for s, a, w in mentions:
        cat = _category(a)
        if w is None:
            phrases.append(f"there {copula(s)} {with_article(s)}" if template == "predicative" else with_article(s))
        else:
            phrases.append(group_phrase(template, [a if (template == "with" and cat == "colour") else w], s, [cat]))
    if template == "attributive" and len(phrases) == 2 and rng.random() < 0.3:
        text = rng.choice(PAIR_TEMPLATES).format(a=phrases[0], b=phrases[1])
    elif template == "predicative":
        text = conjoin(phrases)
    else:
        text = rng.choice(OPENERS) + conjoin(phrases)
    return text[0].upper() + text[1:] + "." if rng.random() < 0.5 else text


def lit_captions(
    scenes: Sequence[Scene], seed: int, per_scene: int = CAPTIONS_PER_SCENE, twins: Sequence[Scene | None] | None = None
) -> list[list[str]]:
    """``per_scene`` captions of every scene (a pure function of the scenes, the seed and ``per_scene``): scene i's
    captions walk the four templates in a shuffled order (so with 4 per scene, each template once).

    With ``twins`` (one binding twin per scene, None where it has none; :func:`bindlab.train.toy.data.pool_twins`),
    the twins' captions instead: twin i's k-th caption is written from the random state scene i's k-th caption
    started from, so it makes the same choices (template, opener, which mentions are named) and differs where the
    bindings do; a scene without a twin gets ``[]``.
    """
    out = []
    for i, scene in enumerate(scenes):
        twin = twins[i] if twins is not None else None
        rng = random.Random(f"toy-lit-captions:{seed}:{i}")
        order = list(TEMPLATES)
        rng.shuffle(order)
        caps = []
        for k in range(per_scene):
            state = rng.getstate()
            caption = lit_caption(scene, rng, order[k % len(order)])
            if twins is None:
                caps.append(caption)
            elif twin is not None:
                after = rng.getstate()
                rng.setstate(state)
                caps.append(lit_caption(twin, rng, order[k % len(order)]))
                rng.setstate(after)  # the scene's walk goes on as without twins
        out.append(caps)
    return out


@dataclass
class CaptionCache:
    """Distinct caption ``texts`` (U,), their frozen ``embeddings`` (U, d) float32 (unit norm) and ``index``
    (n_scenes, per_scene): scene i's k-th caption is ``texts[index[i, k]]`` (-1 for a scene without a twin, in a
    cache of twin captions)."""

    texts: list[str]
    embeddings: np.ndarray
    index: np.ndarray
    seconds: float  # time the embedding took (0 when loaded)
    text_model: str

    @property
    def n_captions(self) -> int:
        return int(self.index.size)


def caption_cache(
    scenes: Sequence[Scene],
    seed: int,
    text_model: str,
    path: str | Path,
    per_scene: int = CAPTIONS_PER_SCENE,
    batch_size: int = 128,
    progress: Callable[[int, int], None] | None = None,
    twins: Sequence[Scene | None] | None = None,
) -> CaptionCache:
    """The pool's captions (with ``twins``: its binding twins' captions, see :func:`lit_captions`) embedded once
    by ``text_model`` (batched), stored at ``path`` (``.npz``, atomically written) and loaded from there when the
    captions and the text model are the same."""
    captions = lit_captions(scenes, seed, per_scene, twins)
    texts = sorted({t for caps in captions for t in caps})
    pos = {t: i for i, t in enumerate(texts)}
    index = np.asarray(
        [[pos[t] for t in caps] if caps else [-1] * per_scene for caps in captions], dtype=np.int32
    ).reshape(len(captions), per_scene)
    key = hashlib.sha256(json.dumps([texts, text_model]).encode()).hexdigest()[:16]
    path = Path(path)
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["key"]) == key:
                    return CaptionCache(texts, z["embeddings"], index, 0.0, text_model)
        except (OSError, ValueError, KeyError):
            pass  # corrupt or another run's: embed again
    from bindlab.encoders.base import load_encoder

    encoder = load_encoder(text_model, device="cpu", batch_size=batch_size)
    t0 = time.perf_counter()
    chunks = []
    step = 20 * batch_size
    for s in range(0, len(texts), step):
        chunks.append(encoder.embed_texts(texts[s : s + step]))
        if progress:
            progress(min(s + step, len(texts)), len(texts))
    emb = np.concatenate(chunks).astype(np.float32) if chunks else np.zeros((0, 1), np.float32)
    seconds = time.perf_counter() - t0
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
    np.savez(
        tmp,
        key=np.asarray(key),
        embeddings=emb,
        index=index,
        texts=np.asarray(texts),
        seconds=np.asarray(seconds),
        text_model=np.asarray(text_model),
    )
    os.replace(tmp, path)
    return CaptionCache(texts, emb, index, seconds, text_model)


class LitBatch(NamedTuple):
    """One step's data: ``pixels`` (b, 3, s, s) float32 in [0, 1], the captions' cached ``embeddings`` (b, d),
    ``captions`` (indices into ``cache.texts``; a twin's into ``twin_cache.texts``), ``scenes`` (b,) pool indices
    and ``twin`` (b,) bool: the row is that scene's binding twin."""

    pixels: np.ndarray
    embeddings: np.ndarray
    captions: list[int]
    scenes: np.ndarray
    twin: np.ndarray


def lit_batch(
    pool: ScenePool,
    cache: CaptionCache | None,
    step: int,
    batch_size: int,
    seed: int,
    hard_share: float = 0.5,
    twin_cache: CaptionCache | None = None,
    twin_share: float = 0.0,
) -> LitBatch:
    """Images (random shifts and horizontal flips), their captions' cached embeddings and where they come from
    (:class:`LitBatch`) — a pure function of the step.

    With ``twin_cache`` and ``twin_share`` > 0, that share of the walked scenes that have a twin (``pool.twins``)
    brings it along, as in :func:`bindlab.train.toy.data.make_batch`: the twin's image with its scene's shift and
    flip, and its caption with the same index k as the scene's (the same wording choices), appended, so scene and
    twin are each other's hardest negatives — the only way a frozen text tower's small binding differences can
    pull the image tower's bindings apart.

    Without ``cache`` (phrase targets: the targets come from the scenes, not from cached captions), ``embeddings``
    has no columns and ``captions`` is empty; with ``twin_share`` > 0 the twins come along without captions.
    """
    hard = shape_hard_groups(pool.scenes, int(batch_size * hard_share), step, seed)
    walked = batch_indices(len(pool.scenes), batch_size - len(hard), step, seed)
    idx = np.concatenate([walked, np.asarray(hard, dtype=np.int64)]).astype(np.int64)
    rng = random.Random(f"toy-lit-batch:{seed}:{step}")
    per = cache.index.shape[1] if cache is not None else 1
    ks = [rng.randrange(per) for _ in idx]
    caps = [int(cache.index[i, k]) for i, k in zip(idx, ks, strict=True)] if cache is not None else []
    offsets = [(rng.randint(-MAX_SHIFT, MAX_SHIFT), rng.randint(-MAX_SHIFT, MAX_SHIFT)) for _ in idx]
    flips = np.array([rng.random() < 0.5 for _ in idx])
    images = pool.images[idx]
    emb = cache.embeddings[caps] if cache is not None else np.zeros((len(idx), 0), np.float32)
    with_twin: list[int] = []
    if twin_share > 0 and (twin_cache is not None or cache is None):
        with_twin = [
            k
            for k, i in enumerate(walked)
            if int(i) in pool.twins and (twin_cache is None or twin_cache.index[i, ks[k]] >= 0)
        ][: int(round(batch_size * twin_share))]
    if with_twin:
        images = np.concatenate([images, np.stack([pool.twins[int(idx[k])][1] for k in with_twin])])
        offsets = offsets + [offsets[k] for k in with_twin]
        flips = np.concatenate([flips, flips[with_twin]])
        if twin_cache is not None:
            twin_caps = [int(twin_cache.index[idx[k], ks[k]]) for k in with_twin]
            emb = np.concatenate([emb, twin_cache.embeddings[twin_caps]])
            caps = caps + twin_caps
        else:
            emb = np.zeros((len(idx) + len(with_twin), 0), np.float32)
    imgs = shift(images, offsets)
    imgs = np.where(flips[:, None, None, None], imgs[:, :, ::-1], imgs)
    pixels = imgs.transpose(0, 3, 1, 2).astype(np.float32) / 255.0
    scenes = np.concatenate([idx, idx[with_twin]]).astype(np.int64)
    twin = np.arange(len(scenes)) >= len(idx)
    return LitBatch(pixels, emb, caps, scenes, twin)


def scene_means(cache: CaptionCache) -> np.ndarray:
    """(n_scenes, d) mean embedding of each scene's cached captions; NaN rows for a scene without captions (a
    twin cache's scene without a twin)."""
    emb = cache.embeddings[np.maximum(cache.index, 0)].astype(np.float64)
    means = emb.mean(axis=1)
    means[(cache.index < 0).any(axis=1)] = np.nan
    return means


def within_scene_whitener(cache: CaptionCache, shrink: float = TARGET_SHRINK) -> np.ndarray:
    """(d, d) inverse of the captions' within-scene covariance (deviations from their scene's mean, unbiased),
    shrunk towards ``shrink`` times its mean eigenvalue: the metric of a linear discriminant in the frozen space."""
    k = cache.index.shape[1]
    if k < 2:
        raise ValueError("discriminant targets need at least 2 cached captions per scene (--captions-per-scene)")
    emb = cache.embeddings[cache.index].astype(np.float64)  # (n, k, d)
    dev = (emb - emb.mean(axis=1, keepdims=True)).reshape(-1, emb.shape[-1])
    cov = dev.T @ dev / (len(cache.index) * (k - 1))
    d = len(cov)
    return np.linalg.inv(cov + shrink * np.trace(cov) / d * np.eye(d))


def discriminant_targets(
    cache: CaptionCache,
    twin_cache: CaptionCache,
    shrink: float = TARGET_SHRINK,
    twin_weight: float = TARGET_TWIN_WEIGHT,
) -> tuple[np.ndarray, np.ndarray]:
    """Unit-norm training targets of every pool scene and of its binding twin, (n, d) float32 each.

    Scene i: ``W [(P_i - mu) - lam (N_i - mu)]``; its twin: ``W [(N_i - mu) - lam (P_i - mu)]``, with P and N the
    scene's and the twin's caption means (:func:`scene_means`), mu the mean of P over scenes, W
    :func:`within_scene_whitener` and lam ``twin_weight``. A scene without a twin gets ``W (P_i - mu)`` and a NaN
    twin row.
    """
    if not 0 <= twin_weight < 1:
        raise ValueError(f"twin_weight must be in [0, 1), got {twin_weight}")
    w = within_scene_whitener(cache, shrink)
    p = scene_means(cache)
    n = scene_means(twin_cache)
    mu = p.mean(axis=0)
    has_twin = ~np.isnan(n).any(axis=1)
    scene = p - mu
    scene[has_twin] -= twin_weight * (n[has_twin] - mu)
    twin = n - mu - twin_weight * (p - mu)
    out = []
    for t in (scene @ w, twin @ w):
        out.append((t / np.linalg.norm(t, axis=1, keepdims=True)).astype(np.float32))
    return out[0], out[1]


@dataclass
class PhraseTable:
    """Frozen embeddings of object phrases: ``pairs`` (shape, attribute) and ``embeddings`` (len(pairs), d) float32,
    row i the text model's embedding of "a/an <attribute> <shape>"."""

    pairs: list[tuple[str, str]]
    embeddings: np.ndarray
    seconds: float

    def index(self) -> dict[tuple[str, str], int]:
        return {p: i for i, p in enumerate(self.pairs)}


def phrase_table(text_model: str, heldout: frozenset[tuple[str, str]] = frozenset()) -> PhraseTable:
    """Every renderable (shape, attribute) pair but the ``heldout`` ones, as a phrase ("an icy key") embedded by
    ``text_model`` — the captions of the single-object evaluation (``toy_eval.single_object_set``) are these
    phrases too."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.vocab import with_article
    from bindlab.encoders.base import load_encoder

    pairs = [(s, a.name) for s in RENDER_VOCAB.objects for a in RENDER_VOCAB.attributes if (s, a.name) not in heldout]
    t0 = time.perf_counter()
    emb = load_encoder(text_model, device="cpu").embed_texts([with_article(f"{a} {s}") for s, a in pairs])
    return PhraseTable(pairs, np.asarray(emb, dtype=np.float32), time.perf_counter() - t0)


def phrase_grid(full: PhraseTable, table: PhraseTable, metric: np.ndarray) -> np.ndarray:
    """(shapes, attributes, d) float32, rows and columns in the renderer's order (``RENDER_VOCAB``): every
    renderable phrase of ``full`` (:func:`phrase_table` with no hold-out: held-out pairs too, their text needs no
    image) as the phrase targets place one object, ``(e - mu) W`` with ``mu`` the mean of ``table`` (the training
    phrases, as :func:`phrase_vectors`) and ``W`` = ``metric``. The fixed grid of the slot head
    (``bindlab.encoders.toy.models.SlotPhraseHead``); with presence 1 and sure slots its output is the phrase
    target (bag weight 0) before normalising.

    Raises:
        ValueError: ``full`` lacks a renderable phrase.
    """
    from bindlab.data.render import RENDER_VOCAB

    pos = full.index()
    cells = [(s, a.name) for s in RENDER_VOCAB.objects for a in RENDER_VOCAB.attributes]
    missing = [f"{a} {s}" for s, a in cells if (s, a) not in pos]
    if missing:
        raise ValueError(
            f"the phrase grid needs every renderable phrase; the table lacks {len(missing)} "
            f"(e.g. {missing[0]!r}): build it with phrase_table(text_model) and no hold-out"
        )
    mu = table.embeddings.astype(np.float64).mean(axis=0)
    grid = (full.embeddings[[pos[c] for c in cells]].astype(np.float64) - mu) @ metric
    return grid.reshape(len(RENDER_VOCAB.objects), len(RENDER_VOCAB.attributes), -1).astype(np.float32)


def phrase_vectors(
    scenes: Sequence[Scene | None], table: PhraseTable, bag_weight: float = PHRASE_BAG_WEIGHT
) -> np.ndarray:
    """(n, d) float64 phrase points of ``scenes`` before any metric: ``x - lam * bag`` with ``x`` the sum of the
    scene's phrase embeddings less the table's mean ``mu``, ``bag`` (n_objects / m) times the sum over the m table
    pairs among (every object of the scene) x (every attribute of it) (= the mean over all bindings of the scene's
    attributes to its objects when no pair is held out), lam = ``bag_weight``. A ``None`` scene gets a NaN row.

    Raises:
        KeyError: a scene shows a pair the table lacks (a held-out pair in a training scene).
    """
    if not 0 <= bag_weight < 1:
        raise ValueError(f"bag_weight must be in [0, 1), got {bag_weight}")
    pos = table.index()
    emb = table.embeddings.astype(np.float64)
    mu = emb.mean(axis=0)
    out = np.empty((len(scenes), emb.shape[1]))
    for i, scene in enumerate(scenes):
        if scene is None:
            out[i] = np.nan
            continue
        own = emb[[pos[(s, a)] for s, a, _ in scene]] - mu
        cross = [pos[(s, a)] for s, _, _ in scene for _, a, _ in scene if (s, a) in pos]
        out[i] = own.sum(axis=0) - bag_weight * len(scene) / len(cross) * (emb[cross] - mu).sum(axis=0)
    return out


def phrase_targets(
    scenes: Sequence[Scene | None], table: PhraseTable, whitener: np.ndarray, bag_weight: float = PHRASE_BAG_WEIGHT
) -> np.ndarray:
    """Unit-norm training targets (n, d) float32 of ``scenes``: ``W [x - lam * bag]``, the
    :func:`phrase_vectors` in the metric ``W`` = ``whitener`` (:func:`within_scene_whitener`, or the ranked metric of
    :func:`bindlab.train.phrase_metric.ranked_metric`). A ``None`` scene gets a NaN row.

    Raises:
        KeyError: a scene shows a pair the table lacks (a held-out pair in a training scene).
    """
    out = phrase_vectors(scenes, table, bag_weight) @ whitener
    with np.errstate(invalid="ignore"):
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def count_grid(scenes: Sequence[Scene]) -> np.ndarray:
    """(n, shapes, attributes) float32: how many objects of each (shape, attribute) every scene shows, rows and
    columns in the renderer's order (``RENDER_VOCAB``, as :func:`phrase_grid`): what a slot head's counts
    (``bindlab.encoders.toy.models.SlotPhraseHead.counts``) are trained towards by ``--slot-count-weight``.

    Raises:
        KeyError: a scene names a shape or attribute the renderer does not draw.
    """
    from bindlab.data.render import RENDER_VOCAB

    shapes = {s: i for i, s in enumerate(RENDER_VOCAB.objects)}
    attributes = {a.name: i for i, a in enumerate(RENDER_VOCAB.attributes)}
    out = np.zeros((len(scenes), len(shapes), len(attributes)), dtype=np.float32)
    for i, scene in enumerate(scenes):
        for s, a, _ in scene:
            out[i, shapes[s], attributes[a]] += 1
    return out


def blend_targets(phrase: np.ndarray, caption_means: np.ndarray, caption_weight: float) -> np.ndarray:
    """Unit-norm rows ``a * m / |m| + (1 - a) * p``, renormalised: each scene's caption mean ``m`` (n, d) and its
    phrase target ``p`` (n, d, unit norm; :func:`phrase_targets`) mixed with ``a`` = ``caption_weight`` in [0, 1].
    NaN rows (scenes without a twin) stay NaN."""
    if not 0 <= caption_weight <= 1:
        raise ValueError(f"caption_weight must be in [0, 1], got {caption_weight}")
    m = np.asarray(caption_means, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = caption_weight * m / np.linalg.norm(m, axis=1, keepdims=True) + (1 - caption_weight) * phrase
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


__all__ = [
    "CAPTIONS_PER_SCENE",
    "blend_targets",
    "count_grid",
    "phrase_grid",
    "PHRASE_BAG_WEIGHT",
    "WHITENER_SCENES",
    "PhraseTable",
    "phrase_table",
    "phrase_targets",
    "phrase_vectors",
    "TARGET_SHRINK",
    "TARGET_TWIN_WEIGHT",
    "CaptionCache",
    "LitBatch",
    "caption_cache",
    "discriminant_targets",
    "lit_batch",
    "lit_caption",
    "lit_captions",
    "scene_means",
    "within_scene_whitener",
]
