"""CompoSET-style single-edit pairs (the CompoSET paper; see the README's References), drawn procedurally.

Each base scene holds 4–10 objects from the renderer (one shape appears twice, so a count can go down), laid out
by one :func:`~bindlab.data.render.scene_layout` with two spare slots (so a count can go up, an object can
appear or move). Every foil is the base scene with exactly **one** edit from :data:`EDIT_TYPES`:

- attribute: modify / swap colour, modify / swap material, modify / swap pattern, modify transparency, modify
  size (one object drawn at about half its size: "a large red cube" -> "a small red cube");
- count: add one instance, remove one instance;
- spatial: swap the positions of two objects, move one object to the other side of another (left/right), move
  one object from above another to below it or back (above/below);
- state/presence: switch an object's glow on (state), add a new object, remove an object (presence).

Sixteen edit types in CompoSET's four categories. Seven of them are **the paper's six** (modify/swap colour,
modify/swap material, modify transparency, and its modify presence drawn as two, ``add_object`` / ``remove_object``:
:data:`PAPER_NAMES`); the other nine are in a category the paper names, under bindlab's name (the paper has 16 edit
types in these four categories, but the text bindlab follows names only six, so whether these nine match the
paper's other types is not known): edits this renderer can draw inside the edited objects' discs. Every generated item carries its ``edit_origin`` ("composet" or "bindlab"), and the evaluation reports the
paper's types and bindlab's apart (``by_origin``) beside every edit type's row. ``modify_size`` departs from the
paper, which excludes absolute size: here it is one object's size relative to the rest of the scene, but its captions
say "large" / "small".

Base and foil are drawn into the same slots with the same seed and context, so only the discs of the edited
objects change; :func:`generate_composet` checks that (pixels changed outside the edited discs must be zero) and
records the share of pixels changed per pair. Captions come at three verbosity levels built around one *edit
phrase* that is word-for-word the same at every level: short = the edit phrase; medium = it plus two untouched
objects; long = it plus every untouched object.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.data.pairs_schema import PairItem, PairSide
from bindlab.data.render import ObjectSpec, Slot, context_from_index, render_slots, scene_layout
from bindlab.data.schema import write_jsonl
from bindlab.data.vocab import PALETTE, conjoin, with_article

# edit type -> category (the taxonomy; order is the order of reports)
EDIT_TYPES: dict[str, str] = {
    "modify_color": "attribute",
    "swap_color": "attribute",
    "modify_material": "attribute",
    "swap_material": "attribute",
    "modify_pattern": "attribute",
    "swap_pattern": "attribute",
    "modify_transparency": "attribute",
    "modify_size": "attribute",
    "add_instance": "count",
    "remove_instance": "count",
    "swap_position": "spatial",
    "move_object": "spatial",
    "move_vertical": "spatial",
    "modify_state": "state_presence",
    "add_object": "state_presence",
    "remove_object": "state_presence",
}
CATEGORIES: tuple[str, ...] = ("attribute", "count", "spatial", "state_presence")
# The CompoSET paper's own edit types among these, with the paper's name: its modify_presence is drawn here as two
# edit types (an object added, an object removed). Every other edit type is in a category the paper names, under
# bindlab's name (origin "bindlab"; the paper's other ten types are not named in the text bindlab follows).
PAPER_NAMES: dict[str, str] = {
    "modify_color": "modify_color",
    "swap_color": "swap_color",
    "modify_material": "modify_material",
    "swap_material": "swap_material",
    "modify_transparency": "modify_transparency",
    "add_object": "modify_presence",
    "remove_object": "modify_presence",
}
EDIT_ORIGIN: dict[str, str] = {t: "composet" if t in PAPER_NAMES else "bindlab" for t in EDIT_TYPES}
ORIGINS: tuple[str, ...] = ("composet", "bindlab")


def edit_origin(edit_type: str, given: Any = None) -> str:
    """Where an edit type comes from: ``given`` (a file's own ``edit_origin``) when it names one, else "composet"
    for the paper's types (:data:`PAPER_NAMES`), "bindlab" for the rest of :data:`EDIT_TYPES`, "other" otherwise
    (e.g. Winoground tags)."""
    if isinstance(given, str) and given.strip():
        return given.strip()[:40]
    return EDIT_ORIGIN.get(edit_type, "other")


# (modify, swap) edit types on the same attribute family, for the matched comparison
MATCHED: dict[str, tuple[str, str]] = {
    "color": ("modify_color", "swap_color"),
    "material": ("modify_material", "swap_material"),
    "pattern": ("modify_pattern", "swap_pattern"),
}

SHAPES: tuple[str, ...] = (
    "cube",
    "sphere",
    "cylinder",
    "cone",
    "pyramid",
    "torus",
    "star",
    "heart",
    "hexagon",
    "triangle",
    "umbrella",
    "mug",
    "key",
    "house",
    "tree",
    "fish",
    "kite",
    "bell",
    "crown",
    "apple",
    "mushroom",
    "cloud",
    "shield",
    "bottle",
    "hourglass",
    "sailboat",
    "rocket",
    "flag",
)
MATERIALS: tuple[str, ...] = ("wooden", "marble", "metallic", "ceramic", "stone", "crystal", "copper", "woven")
PATTERNS: tuple[str, ...] = (
    "striped",
    "polka-dot",
    "checkered",
    "zigzag",
    "plaid",
    "swirled",
    "camouflage",
    "leopard-print",
)
FAMILY_VALUES: dict[str, tuple[str, ...]] = {"color": PALETTE, "material": MATERIALS, "pattern": PATTERNS}
# families of the single (non-duplicated) objects, taken in this order for scenes of growing size
_FAMILY_ORDER = ("color", "color", "material", "material", "pattern", "pattern", "color", "material", "pattern")
_PLURAL = {"fish": "fish", "torus": "tori"}
_NUMBER = {0: "no", 1: "one", 2: "two", 3: "three"}
SPARE_SLOTS = 2
SMALL_SCALE = 0.5  # a "small" object (modify_size) is drawn at this share of its slot's size


@dataclass(frozen=True)
class Obj:
    """A scene object as the captions see it: shape, look family, value, whether it glows, whether it is small."""

    shape: str
    family: str  # color | material | pattern | transparent
    value: str  # a palette colour, material or pattern name ("transparent" for the transparent look)
    glowing: bool = False
    small: bool = False  # drawn at SMALL_SCALE of its slot (modify_size foils only)

    def spec(self) -> ObjectSpec:
        if self.glowing:
            return ObjectSpec(self.shape, "glowing", f"{self.value} glowing")
        return ObjectSpec(self.shape, self.value)

    def words(self) -> str:
        """``"red cube"``, ``"glowing red cube"``, ``"small red cube"``, ``"striped cube"`` (no article)."""
        return f"{'small ' if self.small else ''}{'glowing ' if self.glowing else ''}{self.value} {self.shape}"

    def phrase(self, count: int = 1, numeral: bool = False) -> str:
        """``"a red cube"``, ``"two red cubes"``; ``numeral`` says ``"one red cube"`` (count edits)."""
        if count == 1:
            return f"{_NUMBER[1]} {self.words()}" if numeral else with_article(self.words())
        return f"{_NUMBER.get(count, str(count))} {self.words()[: -len(self.shape)]}{plural(self.shape)}"


def plural(noun: str) -> str:
    """English plural of a renderer shape name (``cube`` -> ``cubes``, ``hourglass`` -> ``hourglasses``)."""
    if noun in _PLURAL:
        return _PLURAL[noun]
    return noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")


@dataclass
class Scene:
    """A base scene: its slots (``n`` objects + spare), the objects in them (None = empty) and a render seed."""

    scene_id: str
    seed: int
    context_index: int
    slots: list[Slot]
    objects: list[Obj | None]

    @property
    def n_objects(self) -> int:
        return sum(o is not None for o in self.objects)


@dataclass
class Edit:
    """One single edit: the foil's objects, the edit phrase on each side, the slots it touches, what it did."""

    edit_type: str
    foil_objects: list[Obj | None]
    base_phrase: str
    foil_phrase: str
    touched: tuple[int, ...]  # slot indices whose content changes
    described: tuple[int, ...]  # slot indices the edit phrase mentions (left out of the context)
    description: str

    @property
    def category(self) -> str:
        return EDIT_TYPES[self.edit_type]


# ---------------------------------------------------------------------------------------------- scenes
def make_scene(
    index: int, rng: random.Random, size: int = 256, seed: int = 0, n_range: tuple[int, int] = (4, 10)
) -> Scene:
    """Draw base scene ``index``: n objects (one shape twice, the rest distinct), n + 2 slots."""
    n = rng.randint(*n_range)
    shapes = rng.sample(SHAPES, n - 1)  # n - 1 distinct shapes; the first appears twice
    families = list(_FAMILY_ORDER[: n - 2]) if n - 2 <= len(_FAMILY_ORDER) else list(_FAMILY_ORDER)
    rng.shuffle(families)
    pools = {f: rng.sample(v, len(v)) for f, v in FAMILY_VALUES.items()}  # distinct values per family
    pair_colour = pools["color"].pop()
    objs: list[Obj] = [Obj(shapes[0], "color", pair_colour)] * 2
    objs += [Obj(s, f, pools[f].pop()) for s, f in zip(shapes[1:], families, strict=False)]
    rng.shuffle(objs)
    render_seed = seed * 100_003 + index
    slots = scene_layout(n + SPARE_SLOTS, size, render_seed)
    # the spare slots are the last ones of the layout (placed last, random positions)
    return Scene(f"s{index:03d}", render_seed, index % 12, slots, [*objs, *([None] * SPARE_SLOTS)])


def _counts(objects: list[Obj | None]) -> dict[Obj, int]:
    out: dict[Obj, int] = {}
    for o in objects:
        if o is not None:
            out[o] = out.get(o, 0) + 1
    return out


def context_phrases(objects: list[Obj | None], skip: tuple[int, ...]) -> list[str]:
    """Noun phrases of the untouched objects (duplicates as ``two red cubes``), in slot order."""
    rest = [o for i, o in enumerate(objects) if o is not None and i not in skip]
    counts, seen, out = _counts(rest), set(), []
    for o in rest:
        if o not in seen:
            seen.add(o)
            out.append(o.phrase(counts[o]))
    return out


def captions(edit_phrase: str, context: list[str], rng_key: int) -> dict[str, str]:
    """Short / medium / long captions around one edit phrase (identical at every level).

    ``context`` must be the same list on both sides of a pair; ``rng_key`` picks the medium level's two
    context objects (the same two for base and foil).
    """
    cap = edit_phrase[0].upper() + edit_phrase[1:]
    out = {"short": cap + "."}
    if context:
        pick = sorted(random.Random(rng_key).sample(range(len(context)), min(2, len(context))))
        out["medium"] = f"{cap}, beside {conjoin([context[i] for i in pick])}."
        out["long"] = f"{cap}, beside {conjoin(context)}, all on a plain background."
    else:
        out["medium"] = out["long"] = out["short"]
    return out


# ---------------------------------------------------------------------------------------------- edits
def _singles(scene: Scene, family: str | None = None) -> list[int]:
    counts = _counts(scene.objects)
    return [
        i
        for i, o in enumerate(scene.objects)
        if o is not None and counts[o] == 1 and (family is None or o.family == family)
    ]


def _replace(objects: list[Obj | None], changes: dict[int, Obj | None]) -> list[Obj | None]:
    out = list(objects)
    for i, o in changes.items():
        out[i] = o
    return out


def _side_of(a: Slot, b: Slot) -> str | None:
    """``left``/``right`` when ``a`` is clearly (by at least one disc radius) left/right of ``b``, else None."""
    dx = a.cx - b.cx
    if abs(dx) < max(a.radius, b.radius):
        return None
    return "left" if dx < 0 else "right"


def _level_of(a: Slot, b: Slot) -> str | None:
    """``above``/``below`` when ``a`` is clearly (by at least one disc radius) above/below ``b``, else None."""
    dy = a.cy - b.cy  # image rows grow downwards
    if abs(dy) < max(a.radius, b.radius):
        return None
    return "above" if dy < 0 else "below"


_OPPOSITE = {"left": "right", "right": "left", "above": "below", "below": "above"}


def candidate_edits(scene: Scene) -> dict[str, list[Edit]]:
    """Every single edit this scene allows, by edit type."""
    objs, slots = scene.objects, scene.slots
    present = {o.shape for o in objs if o is not None}
    spare = [i for i, o in enumerate(objs) if o is None]
    counts = _counts(objs)
    out: dict[str, list[Edit]] = {t: [] for t in EDIT_TYPES}

    def add(kind: str, changes: dict[int, Obj | None], bp: str, fp: str, described: tuple[int, ...], what: str) -> None:
        out[kind].append(Edit(kind, _replace(objs, changes), bp, fp, tuple(sorted(changes)), described, what))

    for fam in ("color", "material", "pattern"):
        single = _singles(scene, fam)
        for i in single:
            o = objs[i]
            for v in FAMILY_VALUES[fam]:
                if v != o.value:
                    new = Obj(o.shape, fam, v)
                    add(f"modify_{fam}", {i: new}, o.phrase(), new.phrase(), (i,), f"{o.shape}: {o.value} -> {v}")
        for x in range(len(single)):
            for y in range(x + 1, len(single)):
                i, j = single[x], single[y]
                a, b = objs[i], objs[j]
                a2, b2 = Obj(a.shape, fam, b.value), Obj(b.shape, fam, a.value)
                add(
                    f"swap_{fam}",
                    {i: a2, j: b2},
                    conjoin([a.phrase(), b.phrase()]),
                    conjoin([a2.phrase(), b2.phrase()]),
                    (i, j),
                    f"{a.value} {a.shape} <-> {b.value} {b.shape}",
                )
    for i in _singles(scene, "color"):
        o = objs[i]
        add(
            "modify_transparency",
            {i: Obj(o.shape, "transparent", "transparent")},
            o.phrase(),
            with_article(f"transparent {o.shape}"),
            (i,),
            f"{o.words()} -> transparent",
        )
        if o.value != "black":  # a black glow is a dark aura, not a visible state change
            lit = Obj(o.shape, "color", o.value, glowing=True)
            add("modify_state", {i: lit}, f"an unlit {o.words()}", lit.phrase(), (i,), f"{o.words()}: unlit -> glowing")
    for i in _singles(scene):
        o = objs[i]
        small = Obj(o.shape, o.family, o.value, small=True)
        add(
            "modify_size",
            {i: small},
            with_article(f"large {o.words()}"),
            small.phrase(),
            (i,),
            f"{o.words()}: large -> small",
        )
        for s in spare:
            add("add_instance", {s: o}, o.phrase(1, numeral=True), o.phrase(2), (i, s), f"{o.words()}: 1 -> 2")
        add(
            "remove_object",
            {i: None},
            f"there is {o.phrase()}",
            f"there is no {o.words()}",
            (i,),
            f"{o.words()}: present -> absent",
        )
    for o, c in counts.items():
        if c == 2:
            for i in [k for k, p in enumerate(objs) if p == o]:
                add(
                    "remove_instance",
                    {i: None},
                    o.phrase(2),
                    o.phrase(1, numeral=True),
                    tuple(k for k, p in enumerate(objs) if p == o),
                    f"{o.words()}: 2 -> 1",
                )
    singles = _singles(scene)
    for i in singles:
        for j in singles:
            if i == j:
                continue
            a, b = objs[i], objs[j]
            side = _side_of(slots[i], slots[j])
            if side == "left" and i < j:  # each unordered pair once, phrased left-to-right
                add(
                    "swap_position",
                    {i: b, j: a},
                    f"{a.phrase()} to the left of {b.phrase()}",
                    f"{b.phrase()} to the left of {a.phrase()}",
                    (i, j),
                    f"{a.words()} <-> {b.words()} (positions)",
                )
            for kind, relation, words, of in (
                ("move_object", _side_of, "to the {} of", " of"),
                ("move_vertical", _level_of, "{}", ""),
            ):
                where = relation(slots[i], slots[j])
                if where is None:
                    continue
                other = _OPPOSITE[where]
                for s in spare:  # move a into a spare slot on the other side of b
                    if relation(slots[s], slots[j]) == other:
                        add(
                            kind,
                            {i: None, s: a},
                            f"{a.phrase()} {words.format(where)} {b.phrase()}",
                            f"{a.phrase()} {words.format(other)} {b.phrase()}",
                            (i, j, s),
                            f"{a.words()}: {where} -> {other}{of} the {b.words()}",
                        )
    palette = [(s, v) for s in SHAPES if s not in present for v in PALETTE]
    for s in spare:
        shape, value = random.Random(scene.seed * 31 + s).choice(palette)
        new = Obj(shape, "color", value)
        add(
            "add_object",
            {s: new},
            f"there is no {new.words()}",
            f"there is {new.phrase()}",
            (s,),
            f"{new.words()}: absent -> present",
        )
    return out


def pick_edits(scene: Scene, k: int, rng: random.Random) -> list[Edit]:
    """Up to ``k`` distinct edits, balanced over edit types (round robin over the types the scene allows)."""
    pools = {t: rng.sample(v, len(v)) for t, v in candidate_edits(scene).items() if v}
    order = list(pools)
    rng.shuffle(order)
    chosen: list[Edit] = []
    while len(chosen) < k and any(pools.values()):
        for t in order:
            if pools[t] and len(chosen) < k:
                chosen.append(pools[t].pop())
    return chosen


# ---------------------------------------------------------------------------------------------- rendering
def _disc_mask(slots: list[Slot], idx: tuple[int, ...], size: int) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    m = np.zeros((size, size), dtype=bool)
    for i in idx:
        s = slots[i]
        m |= (xx - s.cx) ** 2 + (yy - s.cy) ** 2 <= (s.radius + 1.0) ** 2
    return m


def _render(objects: list[Obj | None], scene: Scene, size: int) -> np.ndarray:
    # a small object keeps its slot (centre, pose) and shrinks inside its disc
    slots = [
        replace(sl, scale=sl.scale * SMALL_SCALE) if o is not None and o.small else sl
        for o, sl in zip(objects, scene.slots, strict=True)
    ]
    img, _ = render_slots(
        [o.spec() if o else None for o in objects], slots, size, scene.seed, context_from_index(scene.context_index, 12)
    )
    return np.asarray(img)


def _render_scene_task(job: tuple[Scene, list[Edit], str, int]) -> list[tuple[float, float]]:
    """Render a base scene and its foils to ``out/images/<scene>/``; per foil (pixels changed, outside edit)."""
    scene, edits, out, size = job
    from PIL import Image

    folder = Path(out) / "images" / scene.scene_id
    folder.mkdir(parents=True, exist_ok=True)
    base = _render(scene.objects, scene, size)
    _save(Image.fromarray(base), folder / "base.png")
    stats = []
    for k, e in enumerate(edits):
        foil = _render(e.foil_objects, scene, size)
        changed = (base != foil).any(axis=2)  # (size, size)
        outside = changed & ~_disc_mask(scene.slots, e.touched, size)
        stats.append((float(changed.mean()), float(outside.mean())))
        _save(Image.fromarray(foil), folder / f"f{k:02d}.png")
    return stats


def _save(img: Any, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    img.save(tmp, format="PNG")
    os.replace(tmp, path)


def pair_item(scene: Scene, edit: Edit, k: int, pixels_changed: float) -> PairItem:
    """The Pairs record of foil ``k`` of ``scene``."""
    ctx_base = context_phrases(scene.objects, edit.touched + edit.described)
    ctx_foil = context_phrases(edit.foil_objects, edit.touched + edit.described)
    if ctx_base != ctx_foil:  # pragma: no cover - guarded by construction
        raise RuntimeError(f"{scene.scene_id} foil {k}: the untouched objects differ between base and foil")
    key = scene.seed * 1000 + k
    return PairItem(
        id=f"{scene.scene_id}-f{k:02d}",
        scene_id=scene.scene_id,
        edit_type=edit.edit_type,
        edit_category=edit.category,
        base=PairSide(f"images/{scene.scene_id}/base.png", captions(edit.base_phrase, ctx_base, key)),
        foil=PairSide(f"images/{scene.scene_id}/f{k:02d}.png", captions(edit.foil_phrase, ctx_foil, key)),
        extra={
            "edit_origin": EDIT_ORIGIN[edit.edit_type],
            "n_objects": scene.n_objects,
            "edit": edit.description,
            "edit_phrase": {"base": edit.base_phrase, "foil": edit.foil_phrase},
            "pixels_changed": round(pixels_changed, 6),
        },
    )


def generate_composet(
    out: str | Path,
    scenes: int = 80,
    foils_per_scene: int = 22,
    seed: int = 0,
    size: int = 256,
    workers: int = 2,
    n_range: tuple[int, int] = (4, 10),
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Generate a CompoSET-style benchmark: ``out/pairs.jsonl``, ``out/images/<scene>/{base,fNN}.png``, ``meta.json``.

    Args:
        out: output folder.
        scenes: number of base scenes.
        foils_per_scene: foils per scene (at least 15, as in CompoSET).
        seed: fixes scenes, edits and rendering.
        size: image side in pixels.
        workers: rendering processes (one scene per task).
        n_range: objects per base scene (inclusive), within 4..10.
        progress: ``progress(done_scenes, total_scenes)``.

    Returns:
        The path of ``pairs.jsonl``. Foils whose pixels do not change, or change outside the edited objects'
        discs, are discarded and counted in ``meta.json``.
    """
    from bindlab.config import LIMIT_ENV, limits

    lim = limits()
    if scenes < 1:
        raise ValueError(f"--scenes must be at least 1, got {scenes}")
    if scenes > lim.max_scenes:
        raise ValueError(f"--scenes {scenes} is above the cap of {lim.max_scenes} ({LIMIT_ENV['max_scenes']})")
    if foils_per_scene > lim.max_foils_per_scene:
        raise ValueError(
            f"--foils-per-scene {foils_per_scene} is above the cap of {lim.max_foils_per_scene} "
            f"({LIMIT_ENV['max_foils_per_scene']})"
        )
    if size > lim.max_render_size:
        raise ValueError(f"--size {size} is above the cap of {lim.max_render_size} px ({LIMIT_ENV['max_render_size']})")
    if foils_per_scene < 15:
        raise ValueError(f"--foils-per-scene must be at least 15 (CompoSET's minimum per scene), got {foils_per_scene}")
    if not 4 <= n_range[0] <= n_range[1] <= 10:
        raise ValueError(f"objects per scene {n_range} must lie within 4..10")
    if size < 64:
        raise ValueError(f"--size must be at least 64 px, got {size}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for s in range(scenes):
        rng = random.Random(f"composet|{seed}|{s}")
        scene = make_scene(s, rng, size, seed, n_range)
        edits = pick_edits(scene, foils_per_scene, rng)
        if len(edits) < 15:  # pragma: no cover - every scene allows far more than 15 edits
            raise RuntimeError(f"scene {scene.scene_id} allows only {len(edits)} edits")
        jobs.append((scene, edits, str(out), size))
    results: list[list[tuple[float, float]]] = [[] for _ in jobs]
    if workers <= 1:
        for i, job in enumerate(jobs):
            results[i] = _render_scene_task(job)
            if progress:
                progress(i + 1, len(jobs))
    else:
        with multiprocessing.get_context().Pool(min(workers, len(jobs))) as pool:
            for done, (i, r) in enumerate(pool.imap_unordered(_indexed_task, list(enumerate(jobs))), 1):
                results[i] = r
                if progress:
                    progress(done, len(jobs))
    items, discarded = [], 0
    for (scene, edits, _, _), stats in zip(jobs, results, strict=False):
        for k, (e, (changed, outside)) in enumerate(zip(edits, stats, strict=False)):
            if changed <= 0 or outside > 0:
                discarded += 1
                (out / "images" / scene.scene_id / f"f{k:02d}.png").unlink(missing_ok=True)
                continue
            items.append(pair_item(scene, e, k, changed))
    if not items:  # pragma: no cover - every scene keeps most of its foils at any allowed size
        raise ValueError(
            f"all {discarded} foils were discarded (no pixel changed, or pixels changed outside the edited "
            "objects); try a larger --size"
        )
    path = out / "pairs.jsonl"
    write_jsonl(path, [p.to_json() for p in items])
    px = np.array([p.extra["pixels_changed"] for p in items])
    meta = {
        "generator": "composet",
        "seed": seed,
        "scenes": scenes,
        "foils_per_scene": foils_per_scene,
        "size": size,
        "objects_per_scene": list(n_range),
        "pairs": len(items),
        "discarded_foils": discarded,
        "edit_types": EDIT_TYPES,
        "pixels_changed": {
            "mean": float(px.mean()),
            "median": float(np.median(px)),
            "min": float(px.min()),
            "max": float(px.max()),
        },
        "per_edit_type": {t: sum(p.edit_type == t for p in items) for t in EDIT_TYPES},
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    return path


def _indexed_task(arg: tuple[int, tuple[Scene, list[Edit], str, int]]) -> tuple[int, list[tuple[float, float]]]:
    i, job = arg
    return i, _render_scene_task(job)
