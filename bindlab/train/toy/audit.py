"""Audit a toy model's held-out combinations against what its training showed (``audit-splits --toy``).

A toy model trained with ``--holdout-combos`` never sees a held-out (shape, attribute) pair as an object's
attribute. Its training streams are pure functions of the recorded training config (``training.json``): the pool of
scenes (:func:`bindlab.train.toy.data.pool_scenes`), their binding twins, and the CompoSET-style pair twins. This
module regenerates them (no rendering) and scans every object:

- **direct**: an object whose shape and attribute are a held-out pair (the generator redraws these: expect 0);
- **through a colour slot**: an object whose attribute is *another* one, instantiated with a colour that is itself a
  held-out attribute of that shape ("orange glowing fish" while (fish, orange) is held out). The pixels then show
  that shape in that colour, and a caption that names the form says so; the pair is not unseen for the eye.

The held-out pairs shown through a colour slot are reported apart; the toy evaluation splits its unseen figures the
same way (``unseen_clean``: pairs never shown, not even through a colour slot).

``--arch lit`` runs (``toy:lit-minilm``) draw a *clean* pool (:func:`bindlab.train.toy.data.sample_scene` with
``clean``): no held-out pair through a colour slot either, so the audit reports 0 of both kinds. Their captions
(:mod:`bindlab.train.toy.lit`) mention only the scene's objects with their own attribute or its form, so the pool
scan covers them; the audit checks that too (``captions``: every caption's attribute words against the scene).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

Combo = tuple[str, str]


def _objects_of_pool(cfg: dict[str, Any], heldout: frozenset[Combo]) -> list[tuple[str, str, str, str]]:
    """``(stream, shape, attribute, form)`` for every object of the pool and (when trained with them) its twins."""
    from bindlab.train.toy.data import pool_scenes, pool_twins

    clean = {"clean": True} if cfg.get("arch") == "lit" else {}  # lit runs draw a clean pool
    scenes, _ = pool_scenes(
        int(cfg["pool_size"]), int(cfg["seed"]), heldout, **clean, max_objects=int(cfg.get("max_objects") or 4)
    )
    out = [("pool", s, a, f) for sc in scenes for s, a, f in sc]
    if float(cfg.get("twin_share") or 0) > 0:
        out += [
            ("twins", s, a, f) for tw in pool_twins(scenes, int(cfg["seed"]), heldout, **clean) if tw for s, a, f in tw
        ]
    return out


def _pair_twin_objects(cfg: dict[str, Any], heldout: frozenset[Combo]) -> list[tuple[str, str]]:
    """``(shape, value)`` of every object of the pair twins' base and foil scenes (empty without pair twins)."""
    if not float(cfg.get("pair_share") or 0) > 0:
        return []
    from bindlab.train.toy.pairs import pair_twin_specs

    side = int((cfg.get("model") or {}).get("image_size") or 64)
    out = []
    for scene, edit, _ in pair_twin_specs(int(cfg.get("pair_scenes") or 0), side, int(cfg["seed"]), heldout):
        for o in (*scene.objects, *edit.foil_objects):
            if o is not None:
                out.append((o.shape, o.value))
                if o.glowing:
                    out.append((o.shape, "glowing"))
    return out


def audit_streams(cfg: dict[str, Any], pair_twins: bool = True) -> dict[str, Any]:
    """Scan the training streams of a toy training config (see the module docstring); ``pair_twins=False`` skips
    the pair twins (slow to regenerate; they hold no colour slots, so the exposure does not depend on them).

    Returns:
        ``{"heldout": n, "objects": n scanned, "direct": n, "pair_twins_direct": n, "colour_slot": {"pairs": n,
        "objects": n, "examples": [...]}, "clean_pairs": n, "exposed_pairs": [[shape, attribute], ...],
        "clean": bool}``; ``clean`` = no direct occurrence (colour-slot exposure is reported, not a failure).
    """
    from bindlab.train.toy.data import heldout_combinations

    fraction = float(cfg.get("holdout_fraction") or 0)
    heldout = frozenset(heldout_combinations(fraction, int(cfg["seed"]))) if fraction else frozenset()
    objects = _objects_of_pool(cfg, heldout)
    direct = sum((s, a) in heldout for _, s, a, _ in objects)
    pair_objects = _pair_twin_objects(cfg, heldout) if pair_twins else []
    pair_direct = sum(p in heldout for p in pair_objects)
    exposed: Counter = Counter()
    examples: list[str] = []
    for _, s, a, form in objects:
        for w in set(form.replace("-", " ").split()) - {a}:
            if (s, w) in heldout:
                exposed[(s, w)] += 1
                if len(examples) < 5 and f"{form} {s}" not in examples:
                    examples.append(f"{form} {s}")
    captions = _caption_check(cfg, heldout) if cfg.get("arch") == "lit" else None
    return {
        "heldout": len(heldout),
        "objects": len(objects),
        "pair_twin_objects": len(pair_objects),
        **({"captions": captions} if captions is not None else {}),
        "direct": direct,
        "pair_twins_direct": pair_direct,
        "colour_slot": {"pairs": len(exposed), "objects": int(sum(exposed.values())), "examples": examples},
        "clean_pairs": len(heldout) - len(exposed),
        "exposed_pairs": sorted([list(p) for p in exposed]),
        "clean": direct == 0 and pair_direct == 0,
    }


def _caption_check(cfg: dict[str, Any], heldout: frozenset[Combo]) -> dict[str, Any]:
    """A lit run's cached captions, regenerated (no embedding): ``captions`` scanned and ``foreign_words``, the
    captions naming an attribute (or a word of a form) that is not on one of their scene's objects (expect 0: then
    every attribute word of a caption belongs to the scene, whose objects the pool scan checked)."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.train.toy.data import pool_scenes
    from bindlab.train.toy.lit import lit_captions

    scenes, _ = pool_scenes(
        int(cfg["pool_size"]), int(cfg["seed"]), heldout, clean=True, max_objects=int(cfg.get("max_objects") or 4)
    )
    caps = lit_captions(scenes, int(cfg["seed"]), int(cfg.get("captions_per_scene") or 4))
    attr_words = {w for a in RENDER_VOCAB.attributes for w in a.name.replace("-", " ").split()}
    foreign = 0
    for scene, texts in zip(scenes, caps, strict=True):
        own = {w for _, a, f in scene for w in f"{a} {f}".replace("-", " ").split()}
        for t in texts:
            words = set(t.lower().replace("-", " ").replace(",", " ").replace(".", " ").split())
            foreign += bool((words & attr_words) - own)
    return {"captions": sum(map(len, caps)), "foreign_words": foreign}


def exposed_pairs(cfg: dict[str, Any]) -> frozenset[Combo]:
    """The held-out pairs a training config shows through another attribute's colour slot."""
    return frozenset(tuple(p) for p in audit_streams(cfg, pair_twins=False)["exposed_pairs"])  # type: ignore[misc]


def audit_toy(model: str | Path) -> dict[str, Any]:
    """:func:`audit_streams` for a toy model folder or bundled id (``toy:shared``), from its ``training.json``."""
    from bindlab.data.schema import DataError
    from bindlab.encoders.toy.backend import SHIPPED, shipped_folder

    name = str(model).removeprefix("toy:")
    folder = shipped_folder(name) if name in SHIPPED else Path(name).expanduser()
    if not (folder / "training.json").is_file():
        raise DataError(
            f"{model}: no training.json in {folder.name or folder}; give a shipped toy model "
            f"({', '.join('toy:' + k for k in SHIPPED)}) or a folder 'train toy' wrote"
        )
    training = json.loads((folder / "training.json").read_text())
    return {"model": str(model), **audit_streams(training["train_config"])}


def format_toy_audit(r: dict[str, Any]) -> str:
    c = r["colour_slot"]
    lines = [
        f"{r['model']}: {r['heldout']} held-out shape x attribute pairs; {r['objects']:,} training objects "
        f"scanned (pool and twins) + {r['pair_twin_objects']:,} pair-twin objects",
        f"  direct (a held-out pair as an object's attribute): {r['direct']} in the pool and twins, "
        f"{r['pair_twins_direct']} in the pair twins",
        f"  through another attribute's colour slot: {c['pairs']} of the {r['heldout']} pairs, on "
        f"{c['objects']:,} objects (e.g. {', '.join(repr(e) for e in c['examples'][:3]) or 'none'})",
        f"  never shown at all: {r['clean_pairs']} pairs — the toy evaluation's 'unseen_clean' rows rest on these",
    ]
    if "captions" in r:
        lines.append(
            f"  captions (lit): {r['captions']['captions']:,} regenerated; {r['captions']['foreign_words']} "
            "name an attribute their scene lacks"
        )
    lines.append(
        "clean: no held-out pair occurs as an object's attribute"
        if r["clean"]
        else "NOT CLEAN: held-out pairs occur directly in training (see above)"
    )
    return "\n".join(lines)


__all__ = ["audit_streams", "audit_toy", "exposed_pairs", "format_toy_audit"]
