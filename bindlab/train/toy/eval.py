"""Evaluation of an image+text encoder on the renderer's world (the toy models' model-card figures).

- **Single-object retrieval** on held-out renders (seeds the training pool never uses): every shape x attribute
  combination (or a random sample of them), one image each, caption ``"a <attribute> <shape>"``. Text->image
  top-1 over the gallery of those images (chance 1/M), image->text top-1, and whether the top text gets the
  *attribute* and the *shape* right (does the model know attributes and objects? chance about 1/36 and 1/28),
  attribute accuracy per attribute category (patterns are the rarely-named ones in training).
- **SABER MCQs with images**: ``generate_saber(vocab=RENDER_VOCAB)`` for N = 2..10, images rendered with
  :func:`bindlab.data.saber_images.render_mcq_images`, scored by :func:`bindlab.eval.mcq.evaluate_mcq` in all
  four pairings (chance per question: 1/3 at N = 2, 1/4 above; :func:`bindlab.eval.mcq.question_chance`).
- **Seen vs unseen combinations**: for a model trained with held-out shape x attribute pairs (its
  ``training.json`` lists them), both evaluations are also reported on the items that contain a held-out pair
  ("unseen": composition) and on the rest ("seen": recognition of pairs the model was shown). Some held-out pairs
  are shown anyway through another attribute's colour slot ("orange glowing fish" while (fish, orange) is held out;
  :mod:`bindlab.train.toy.audit`): with those ``exposed`` pairs given, "unseen" is split further into
  ``unseen_clean`` (never shown at all: the composition test proper) and ``unseen_colour_slot``.
- **The imitation reference** (lit models, :func:`imitation_reference`): how much cross-modal binding a frozen text
  tower can carry. Each image of the MCQs is replaced by the normalised mean text-tower embedding of ``k`` captions
  of its own scene, written as the lit training captions are: where an image tower that imitated the frozen text
  tower perfectly would put each image (a reference, not a bound). The *discriminant reference*
  (:func:`discriminant_reference`) puts each image at its scene's whitened caption mean against its binding twins'
  instead: what a tower that learnt ``--lit-target discriminant``'s targets exactly would score.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.data.render import RENDER_VOCAB
from bindlab.data.vocab import with_article
from bindlab.encoders.base import Encoder, EncoderError
from bindlab.train.toy.data import EVAL_SEED_OFFSET, render_many

MCQ_SIZES = tuple(range(2, 11))
EVAL_RENDER_SIZE = 64  # side of the single-object renders (the toy models' input side)
MCQ_RENDER_SIZE = 128  # side of the MCQ images (encoders resize to their own input side)


def single_object_set(sample: int = 0, seed: int = 0) -> tuple[list[tuple[str, str, str]], list[str]]:
    """Held-out single objects: ``(shape, attribute, form)`` per item and its caption ``"a <attr> <shape>"``.

    Args:
        sample: number of distinct shape x attribute combinations (0 = all of them).
        seed: picks the sample and each attribute's instantiation.
    """
    rng = random.Random(f"toy-eval-single:{seed}")
    combos = [(s, a) for s in RENDER_VOCAB.objects for a in RENDER_VOCAB.attributes]
    if sample:
        if not 2 <= sample <= len(combos):
            raise ValueError(f"sample must be between 2 and {len(combos)} (0 = all), got {sample}")
        combos = rng.sample(combos, sample)
    items = [(s, a.name, a.instantiate(rng)) for s, a in combos]
    return items, [with_article(f"{a} {s}") for s, a, _ in items]


def single_object_scores(
    img: np.ndarray,
    txt: np.ndarray,
    items: list[tuple[str, str, str]],
    heldout: frozenset[tuple[str, str]] = frozenset(),
    exposed: frozenset[tuple[str, str]] = frozenset(),
) -> dict[str, Any]:
    """Retrieval figures from unit embeddings ``img`` (M, d) and ``txt`` (M, d) where row i of each match.

    Returns:
        t2i/i2t top-1, attribute/shape accuracy of the top text, attribute accuracy by category, chance levels;
        with ``heldout`` (shape, attribute) pairs, also ``by_combination`` (:func:`by_combination`).
    """
    sim = img @ txt.T  # (M images, M texts)
    m = len(items)
    i2t = sim.argmax(1)  # best text per image
    cats = {a.name: a.category for a in RENDER_VOCAB.attributes}
    by_cat: dict[str, list[bool]] = defaultdict(list)
    for i, j in enumerate(i2t):
        by_cat[cats[items[i][1]]].append(items[j][1] == items[i][1])
    n_attr = len({a for _, a, _ in items})
    n_shape = len({s for s, _, _ in items})
    out = {
        **_subset_scores(sim, items, np.ones(m, dtype=bool)),
        "i2t_attribute_by_category": {k: float(np.mean(v)) for k, v in sorted(by_cat.items())},
        "chance": {"top1": 1 / m, "attribute": 1 / n_attr, "shape": 1 / n_shape},
    }
    if heldout:
        out["by_combination"] = by_combination(sim, items, heldout, exposed)
    return out


Combo = tuple[str, str]  # (shape, attribute name)


def _subset_scores(sim: np.ndarray, items: list[tuple[str, str, str]], keep: np.ndarray) -> dict[str, Any]:
    """Top-1 figures of the items where ``keep`` is True, each still ranked against the whole gallery."""
    idx = np.flatnonzero(keep)
    if not len(idx):
        return {"n": 0}
    t2i = sim[:, idx].argmax(0)
    i2t = sim[idx].argmax(1)
    return {
        "n": int(len(idx)),
        "t2i_top1": float((t2i == idx).mean()),
        "i2t_top1": float((i2t == idx).mean()),
        "i2t_attribute": float(np.mean([items[j][1] == items[i][1] for i, j in zip(idx, i2t, strict=True)])),
        "i2t_shape": float(np.mean([items[j][0] == items[i][0] for i, j in zip(idx, i2t, strict=True)])),
    }


def by_combination(
    sim: np.ndarray,
    items: list[tuple[str, str, str]],
    heldout: frozenset[Combo],
    exposed: frozenset[Combo] = frozenset(),
) -> dict[str, Any]:
    """:func:`_subset_scores` for the seen and the unseen (held-out) shape x attribute combinations; with
    ``exposed`` (held-out pairs shown through a colour slot) also ``unseen_clean`` and ``unseen_colour_slot``."""
    unseen = np.array([(s, a) in heldout for s, a, _ in items])
    out = {"seen": _subset_scores(sim, items, ~unseen), "unseen": _subset_scores(sim, items, unseen)}
    if exposed:
        shown = np.array([(s, a) in exposed for s, a, _ in items])
        out["unseen_clean"] = _subset_scores(sim, items, unseen & ~shown)
        out["unseen_colour_slot"] = _subset_scores(sim, items, unseen & shown)
    return out


def mcq_by_combination(
    questions: list[Any], rows: list[dict[str, Any]], heldout: frozenset[Combo], exposed: frozenset[Combo] = frozenset()
) -> dict[str, dict[str, Any]]:
    """Per pairing, accuracy on questions whose query holds a held-out (shape, attribute) pair vs the others; with
    ``exposed``, the unseen questions whose held-out pairs are all never shown are ``unseen_clean``, the others
    ``unseen_colour_slot``.

    Unseen questions are larger on average (more objects, more chances to hold a held-out pair): ``mean_n`` says it.
    """

    def kind(q: Any) -> str:
        held = [(obj, attr) for attr, obj in q.query.bindings if (obj, attr) in heldout]
        if not held:
            return "seen"
        if not exposed:
            return "unseen"
        return "unseen_colour_slot" if any(p in exposed for p in held) else "unseen_clean"

    unseen = {q.id: kind(q) for q in questions}
    n_of = {q.id: q.n_objects for q in questions}
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        splits = out.setdefault(r["pairing"], {})
        for k in {unseen[r["id"]], "unseen" if unseen[r["id"]] != "seen" else "seen"}:
            split = splits.setdefault(k, {"credit": [], "sizes": []})
            split["credit"].append(r["credit"])
            split["sizes"].append(n_of[r["id"]])
    return {
        p: {
            k: {"accuracy": float(np.mean(v["credit"])), "n": len(v["credit"]), "mean_n": float(np.mean(v["sizes"]))}
            for k, v in sorted(splits.items())
        }
        for p, splits in out.items()
    }


def render_single_objects(
    sample: int = 0, seed: int = 0, size: int = EVAL_RENDER_SIZE, workers: int = 2
) -> tuple[list[tuple[str, str, str]], list[str], np.ndarray]:
    """:func:`single_object_set` rendered on held-out seeds: ``(items, captions, pixels (M, size, size, 3))``.

    The one way bindlab draws held-out single objects: the model cards and the finetune forgetting control use it.
    """
    items, captions = single_object_set(sample, seed)
    seeds = [EVAL_SEED_OFFSET + seed * 10_000 + i for i in range(len(items))]
    return items, captions, render_many([[it] for it in items], seeds, size, workers)


def evaluate_single_objects(
    encoder: Encoder,
    sample: int = 0,
    seed: int = 0,
    size: int = EVAL_RENDER_SIZE,
    workers: int = 2,
    heldout: frozenset[Combo] = frozenset(),
    exposed: frozenset[Combo] = frozenset(),
) -> dict[str, Any]:
    """Render held-out single objects, embed them and their captions, score retrieval (see module docstring)."""
    if not {"text", "image"} <= set(encoder.modalities):
        raise EncoderError(f"{encoder.id} needs both text and images for this evaluation")
    items, captions, pixels = render_single_objects(sample, seed, size, workers)
    img = encoder.embed_images(list(pixels))
    txt = encoder.embed_texts(captions)
    return {
        **single_object_scores(img, txt, items, heldout, exposed),
        "render_size": size,
        "items": single_object_rows(img, txt, items, captions, heldout, exposed),
    }


def single_object_rows(
    img: np.ndarray,
    txt: np.ndarray,
    items: list[tuple[str, str, str]],
    captions: list[str],
    heldout: frozenset[Combo] = frozenset(),
    exposed: frozenset[Combo] = frozenset(),
) -> list[dict[str, Any]]:
    """One row per render: its pair, caption, ``combination`` (seen / unseen_clean / unseen_colour_slot; unseen
    without ``exposed``; None for a model trained without held-out pairs) and whether its caption ranks it first
    among all renders (``t2i``) and it ranks its caption first (``i2t``), as 0/1 — the hits behind the top-1 figures
    of :func:`single_object_scores`, so figures over seeds can be resampled by item."""
    sim = img @ txt.T
    t2i = sim.argmax(0) == np.arange(len(items))
    i2t = sim.argmax(1) == np.arange(len(items))

    def combination(pair: Combo) -> str | None:
        if not heldout:
            return None
        if pair not in heldout:
            return "seen"
        if not exposed:
            return "unseen"
        return "unseen_colour_slot" if pair in exposed else "unseen_clean"

    return [
        {
            "item": i,
            "shape": s,
            "attribute": a,
            "form": form,
            "caption": captions[i],
            "combination": combination((s, a)),
            "t2i": int(t2i[i]),
            "i2t": int(i2t[i]),
        }
        for i, (s, a, form) in enumerate(items)
    ]


def evaluate_image_mcq(
    encoder: Encoder,
    per_size: int = 40,
    seed: int = 0,
    folder: str | Path | None = None,
    size: int = MCQ_RENDER_SIZE,
    workers: int = 2,
    heldout: frozenset[Combo] = frozenset(),
    exposed: frozenset[Combo] = frozenset(),
    text_reference: Encoder | None = None,
) -> dict[str, Any]:
    """SABER MCQs on the renderable vocabulary, N = 2..10, in all four pairings.

    With ``text_reference`` (a lit model's frozen text tower), tt is also scored by that encoder alone on the same
    questions (``tt_text_model``: its accuracy and whether it equals the model's tt), and ``small_n`` gives each
    pairing's accuracy over N = 2..5.

    Args:
        folder: where the benchmark and its images go (reused when already rendered); default
            ``$BINDLAB_HOME/toy-eval/saber-render-<per_size>-seed<seed>-<size>px``.
    """
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.data.saber_images import render_mcq_images
    from bindlab.eval.mcq import evaluate_mcq

    questions = generate_saber(per_size=per_size, sizes=MCQ_SIZES, seed=seed, vocab=RENDER_VOCAB)

    def run(root: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        render_mcq_images(questions, root, size=size, workers=workers, seed=seed)
        write_benchmark(
            root,
            questions,
            {"seed": seed, "per_size": per_size, "sizes": list(MCQ_SIZES), "vocab": "render", "images": size},
        )
        res, rows = evaluate_mcq(questions, root, encoder, ["tt", "ti", "it", "ii"])
        if text_reference is not None:
            ref, _ = evaluate_mcq(questions, root, text_reference, ["tt"])
            res = {**res, "_ref": ref["tt"]}
        return res, rows

    if folder is None:  # cached: every model evaluated with these settings reuses the rendered images
        from bindlab.config import home

        folder = home() / "toy-eval" / f"saber-render-{per_size}-seed{seed}-{size}px"
    res, rows = run(Path(folder))
    ref = res.pop("_ref", None)
    out = {"per_size": per_size, "sizes": list(MCQ_SIZES), "seed": seed, "render_size": size, "pairings": res}
    small = {q.id for q in questions if 2 <= q.n_objects <= 5}
    out["small_n"] = {
        p: float(np.mean([r["credit"] for r in rows if r["pairing"] == p and r["id"] in small]))
        for p in res
        if any(r["pairing"] == p and r["id"] in small for r in rows)
    }
    if ref is not None:
        out["tt_text_model"] = {
            "model": text_reference.id,
            "accuracy": ref["accuracy"],  # type: ignore[union-attr]
            "equal": abs(ref["accuracy"] - res["tt"]["accuracy"]) < 1e-9,
        }
        credit = imitation_reference(questions, text_reference)  # type: ignore[arg-type]
        keep = np.array([2 <= q.n_objects <= 5 for q in questions])
        out["imitation_reference"] = {
            "captions_per_item": IMITATION_CAPTIONS,
            "pairings": {p: float(c.mean()) for p, c in credit.items()},
            "small_n": {p: float(c[keep].mean()) for p, c in credit.items()},
        }
    if heldout:
        out["by_combination"] = mcq_by_combination(questions, rows, heldout, exposed)
    return out


IMITATION_CAPTIONS = 8  # captions averaged per item by the imitation reference


def _item_scenes(q: Any) -> list[list[tuple[str, str, str]]]:
    """The query's and the candidates' scenes of an MCQ, as (shape, attribute, written form) objects."""
    forms = q.extra.get("realisations", {})
    return [[(obj, attr, forms.get(attr, attr)) for attr, obj in item.bindings] for item in [q.query, *q.candidates]]


def _pairing_credits(questions: list[Any], txt: np.ndarray, ref: np.ndarray) -> dict[str, np.ndarray]:
    """Per-question credit (argmax == answer) in each pairing, with ``txt`` (q, 5, d) the questions' text
    embeddings and ``ref`` (q, 5, d) unit vectors standing in for their images (query first)."""
    answer = np.array([q.answer for q in questions])
    return {
        p: (pairing_scores(txt, ref, p).argmax(axis=1) == answer).astype(np.float64) for p in ("tt", "ti", "it", "ii")
    }


def pairing_scores(txt: np.ndarray, ref: np.ndarray, pairing: str) -> np.ndarray:
    """(q, 4) scores of each question's candidates in ``pairing`` ("ti": text query, image candidates, ...), with
    ``txt`` (q, 5, d) the questions' text embeddings and ``ref`` (q, 5, d) their images or stand-ins (query first)."""
    query = (txt if pairing[0] == "t" else ref)[:, 0]
    cands = (txt if pairing[1] == "t" else ref)[:, 1:]
    return np.einsum("qd,qcd->qc", query, cands)


def _question_texts(questions: list[Any], text_encoder: Encoder) -> np.ndarray:
    texts = [t for q in questions for t in [q.query.text, *(c.text for c in q.candidates)]]
    return text_encoder.embed_texts(texts).reshape(len(questions), 5, -1)


def imitation_reference(
    questions: list[Any], text_encoder: Encoder, k: int = IMITATION_CAPTIONS, seed: int = 0
) -> dict[str, np.ndarray]:
    """Per-question credit (argmax == answer) in each pairing when every image is replaced by the normalised mean
    ``text_encoder`` embedding of ``k`` captions of its own scene.

    The captions are written as ``--arch lit`` training captions are (:func:`bindlab.train.toy.lit.lit_caption`: the
    four templates in turn, objects in random order, openers, attributes by name or generation form), seeded per
    question and item, so the reference knows each image's exact bindings and makes no image error: it is where an
    image tower that imitates the frozen text tower perfectly would put the image. tt is the text tower's own.
    """
    ref = _caption_means(questions, text_encoder, k, seed)
    ref = ref / np.linalg.norm(ref, axis=-1, keepdims=True)
    return _pairing_credits(questions, _question_texts(questions, text_encoder), ref)


def _caption_means(questions: list[Any], text_encoder: Encoder, k: int, seed: int) -> np.ndarray:
    """(n_questions, 5, d) mean ``text_encoder`` embedding of ``k`` training-like captions of each item's scene
    (seeded per question and item; the imitation reference's)."""
    from bindlab.data.templates import TEMPLATES
    from bindlab.train.toy.lit import lit_caption

    texts: list[str] = []
    for qi, q in enumerate(questions):
        for j, scene in enumerate(_item_scenes(q)):
            rng = random.Random(f"imitation-reference:{seed}:{qi}:{j}")
            texts += [lit_caption(scene, rng, TEMPLATES[t % len(TEMPLATES)]) for t in range(k)]
    return text_encoder.embed_texts(texts).reshape(len(questions), 5, k, -1).mean(axis=2)


def discriminant_reference(
    questions: list[Any],
    text_encoder: Encoder,
    k: int = 12,
    twins: int = 6,
    pool_scenes: int = 3000,
    shrink: float | None = None,
    twin_weights: Sequence[float] | None = None,
    seed: int = 0,
) -> dict[float, dict[str, np.ndarray]]:
    """Like :func:`imitation_reference`, with every image replaced by its scene's *discriminant* point instead of
    its caption mean: ``W [(P - mu) - lam (N - mu)]`` (:func:`bindlab.train.toy.lit.discriminant_targets`'s form),
    P the mean embedding of ``k`` captions of the scene, N that of 2 captions each of ``twins`` binding twins (the
    scene with its attributes permuted among its objects), and W, mu from ``pool_scenes`` training-like scenes
    (``toy_data.sample_scene``, 4 captions each; never the questions' own scenes). One result per lam of
    ``twin_weights`` (default: ``toy_lit.TARGET_TWIN_WEIGHT`` alone), from the same embeddings.

    Where an image tower that had learnt the lit discriminant targets perfectly would put each image: what a linear
    read-out of a scene's captions against its twins' gets from the frozen text tower.
    """
    from bindlab.data.templates import TEMPLATES
    from bindlab.train.toy.lit import (
        TARGET_SHRINK,
        TARGET_TWIN_WEIGHT,
        lit_caption,
        scene_means,
        within_scene_whitener,
    )

    cache = _training_like_captions(text_encoder, pool_scenes, f"discriminant-reference-pool:{seed}", seed)
    w = within_scene_whitener(cache, TARGET_SHRINK if shrink is None else shrink)
    mu = scene_means(cache).mean(axis=0)  # as discriminant_targets has it
    own: list[str] = []
    other: list[str] = []
    for qi, q in enumerate(questions):
        for j, scene in enumerate(_item_scenes(q)):
            rng = random.Random(f"discriminant-reference:{seed}:{qi}:{j}")
            own += [lit_caption(scene, rng, TEMPLATES[t % len(TEMPLATES)]) for t in range(k)]
            for m in range(twins):
                perm = list(range(len(scene)))
                while len(scene) > 1 and perm == list(range(len(scene))):
                    perm = rng.sample(range(len(scene)), len(scene))
                twin = [(scene[i][0], scene[perm[i]][1], scene[perm[i]][2]) for i in range(len(scene))]
                other += [lit_caption(twin, rng, TEMPLATES[(2 * m + t) % len(TEMPLATES)]) for t in range(2)]
    p = text_encoder.embed_texts(own).reshape(len(questions), 5, k, -1).mean(axis=2)
    n = text_encoder.embed_texts(other).reshape(len(questions), 5, 2 * twins, -1).mean(axis=2)
    txt = _question_texts(questions, text_encoder)
    out = {}
    for lam in (TARGET_TWIN_WEIGHT,) if twin_weights is None else twin_weights:
        ref = ((p - mu) - lam * (n - mu)) @ w
        out[float(lam)] = _pairing_credits(questions, txt, ref / np.linalg.norm(ref, axis=-1, keepdims=True))
    return out


def _training_like_captions(text_encoder: Encoder, n: int, rng_key: str, seed: int) -> Any:
    """4 captions each of ``n`` training-like scenes (``toy_data.sample_scene`` drawn from ``rng_key``), embedded by
    ``text_encoder``: a :class:`bindlab.train.toy.lit.CaptionCache` for the references' metric."""
    from bindlab.train.toy.data import sample_scene
    from bindlab.train.toy.lit import CaptionCache, lit_captions

    rng = random.Random(rng_key)
    pool = [sample_scene(rng) for _ in range(n)]
    emb = text_encoder.embed_texts([c for caps in lit_captions(pool, seed + 1, 4) for c in caps])
    return CaptionCache([], emb, np.arange(len(emb), dtype=np.int32).reshape(n, 4), 0.0, text_encoder.id)


def phrase_reference(
    questions: list[Any],
    text_encoder: Encoder,
    bag_weight: float | None = None,
    shrink: float | None = None,
    whitener_scenes: int | None = None,
    seed: int = 0,
    caption_weight: float = 0.0,
    k: int = IMITATION_CAPTIONS,
) -> dict[str, np.ndarray]:
    """Like :func:`imitation_reference`, with every image replaced by its scene's *phrase target* (the points of
    :func:`phrase_points`, same arguments)."""
    points = phrase_points(questions, text_encoder, bag_weight, shrink, whitener_scenes, seed, caption_weight, k)
    return _pairing_credits(questions, _question_texts(questions, text_encoder), points)


def phrase_points(
    questions: list[Any],
    text_encoder: Encoder,
    bag_weight: float | None = None,
    shrink: float | None = None,
    whitener_scenes: int | None = None,
    seed: int = 0,
    caption_weight: float = 0.0,
    k: int = IMITATION_CAPTIONS,
) -> np.ndarray:
    """(n_questions, 5, d) unit points standing in for the questions' images: each scene's *phrase target*
    (:func:`bindlab.train.toy.lit.phrase_targets`, the targets of ``train toy --arch lit --lit-target phrases``):
    its objects' phrase embeddings ("a red cube") summed, less ``bag_weight`` of its bag of pairings, in the metric
    of the captions' within-scene covariance, estimated on ``whitener_scenes`` training-like scenes
    (``toy_data.sample_scene``, 4 captions each; never the questions' own). Defaults: toy_lit's.

    Where an image tower that had learnt its phrase targets exactly would put each image. The table holds every
    renderable pair (a training run's leaves its held-out pairs out). With ``caption_weight`` A > 0, the targets of
    ``--target-caption-weight A`` instead: A times the unit mean of ``k`` captions of the scene (the imitation
    reference's) plus 1 - A times the phrase target, renormalised (:func:`bindlab.train.toy.lit.blend_targets`).
    """
    from bindlab.train.toy.lit import (
        PHRASE_BAG_WEIGHT,
        TARGET_SHRINK,
        WHITENER_SCENES,
        blend_targets,
        phrase_table,
        phrase_targets,
        within_scene_whitener,
    )

    n = WHITENER_SCENES if whitener_scenes is None else whitener_scenes
    cache = _training_like_captions(text_encoder, n, f"phrase-reference-pool:{seed}", seed)
    w = within_scene_whitener(cache, TARGET_SHRINK if shrink is None else shrink)
    table = phrase_table(text_encoder.id, frozenset())
    scenes = [scene for q in questions for scene in _item_scenes(q)]
    ref = phrase_targets(scenes, table, w, PHRASE_BAG_WEIGHT if bag_weight is None else bag_weight)
    if caption_weight:
        means = _caption_means(questions, text_encoder, k, seed)
        ref = blend_targets(ref, means.reshape(len(ref), -1), caption_weight)
    return ref.reshape(len(questions), 5, -1)


def evaluate_toy(
    encoder: Encoder,
    sample: int = 0,
    per_size: int = 40,
    seed: int = 0,
    mcq_folder: str | Path | None = None,
    heldout: frozenset[Combo] = frozenset(),
    exposed: frozenset[Combo] = frozenset(),
    text_reference: Encoder | None = None,
) -> dict[str, Any]:
    """Both evaluations; ``per_size=0`` skips the MCQs. With ``heldout`` pairs, each is also split seen/unseen (and,
    with ``exposed`` ones, unseen into never shown / shown through a colour slot)."""
    out: dict[str, Any] = {
        "single_object": evaluate_single_objects(encoder, sample, seed, heldout=heldout, exposed=exposed)
    }
    if per_size:
        out["mcq"] = evaluate_image_mcq(
            encoder, per_size, seed, mcq_folder, heldout=heldout, exposed=exposed, text_reference=text_reference
        )
    if heldout:
        out["heldout_combinations"] = len(heldout)
    if exposed:
        out["heldout_shown_through_colour_slot"] = len(exposed & heldout)
    return out


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Human summary of :func:`evaluate_toy` output."""
    s = result["single_object"]
    lines = [
        f"single object (M={s['n']}): text->image top-1 {s['t2i_top1']:.3f} (chance {s['chance']['top1']:.3f}), "
        f"image->text top-1 {s['i2t_top1']:.3f}; top text has the right attribute {s['i2t_attribute']:.3f} "
        f"(chance {s['chance']['attribute']:.3f}), shape {s['i2t_shape']:.3f} (chance {s['chance']['shape']:.3f})"
    ]
    combo = s.get("by_combination")
    if combo:
        lines.append(
            "  "
            + "; ".join(
                f"{k} combinations (n={v['n']}): text->image top-1 {v.get('t2i_top1', 0):.3f}, "
                f"image->text {v.get('i2t_top1', 0):.3f}"
                for k, v in combo.items()
            )
        )
    mcq_combo = result.get("mcq", {}).get("by_combination", {})
    for p, r in result.get("mcq", {}).get("pairings", {}).items():
        by_n = " ".join(f"{n}:{v:.2f}" for n, v in r["by_n"].items())
        lines.append(f"MCQ {p}: {r['accuracy']:.3f} (n={r['n']}, chance {r.get('chance', 0.25):.3f}) | by N {by_n}")
        if p in mcq_combo:
            lines.append(
                "  "
                + "; ".join(
                    f"{k} (n={v['n']}, mean N {v['mean_n']:.1f}): {v['accuracy']:.3f}" for k, v in mcq_combo[p].items()
                )
            )
    small = result.get("mcq", {}).get("small_n")
    if small:
        lines.append("MCQ N = 2..5: " + ", ".join(f"{p} {v:.3f}" for p, v in small.items()))
    imitation = result.get("mcq", {}).get("imitation_reference")
    if imitation:
        lines.append(
            "imitation reference (each image = the mean text-tower embedding of its scene's captions), N = "
            "2..5: " + ", ".join(f"{p} {v:.3f}" for p, v in imitation["small_n"].items())
        )
    ref = result.get("mcq", {}).get("tt_text_model")
    if ref:
        lines.append(
            f"tt of the frozen text tower {ref['model']} alone: {ref['accuracy']:.3f} "
            f"({'equal to' if ref['equal'] else 'DIFFERENT from'} the model's tt)"
        )
    return lines
