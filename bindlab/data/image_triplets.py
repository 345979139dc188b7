"""Image triplets from the renderer: the image analogue of a text triplet (SABER appendix E, image supervision).

A text triplet row (query, positive, hard negative, ``bindings`` of the query) becomes three rendered scenes:

- **anchor**: the query's bindings drawn by :func:`bindlab.data.render.render_scene` with the row's seed;
- **positive**: the same bindings (the same scene) *re-rendered*: objects in another order, with another seed, so
  layout, pose, texture details and the flip all change — the image counterpart of the text positive, which says
  the same bindings in other words;
- **negative**: the anchor with one binding swapped and nothing else: the same seed, so the same layout, flip and
  geometry; two objects exchange their attributes (``negative_kind`` attribute: each object keeps its place and
  silhouette) or their shapes (``object``: each attribute keeps its place). The renderer keeps every object inside
  its own disc, so every other object's pixels are identical to the anchor's.

All three are images, so the triplet loss compares image with image, as the text loss compares text with text; the
paper's appendix E body is not in the version of the paper we read, so this all-image choice is bindlab's
(docs/reproductions.md says so).
Attributes are drawn in their default look (no instantiated form), the same in all three images.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bindlab.data.render import RENDER_ATTRIBUTES, RENDER_SHAPES, ObjectSpec, render_scene

_ATTRS = {a.name for a in RENDER_ATTRIBUTES}


@dataclass(frozen=True)
class ImageTriplet:
    """Three rendered scenes of one row, with what the negative changed.

    Attributes:
        anchor, positive, negative: PIL RGB images (size x size).
        specs: the anchor's objects in slot order; ``negative_specs`` the negative's.
        swapped: the two slots whose binding was swapped.
        seed: the anchor's (and negative's) render seed; ``positive_seed`` the positive's.
    """

    anchor: Any
    positive: Any
    negative: Any
    specs: tuple[ObjectSpec, ...]
    negative_specs: tuple[ObjectSpec, ...]
    swapped: tuple[int, int]
    seed: int
    positive_seed: int


def scene_specs(bindings: Sequence[Sequence[str]]) -> list[ObjectSpec]:
    """``[(attribute, object), …]`` as renderable objects.

    Raises:
        ValueError: a binding the renderer cannot draw (naming it and what to use instead).
    """
    specs = []
    for b in bindings:
        attr, obj = (str(b[0]), str(b[1])) if len(b) == 2 else ("", "")
        if obj not in RENDER_SHAPES or attr not in _ATTRS:
            raise ValueError(
                f"binding {list(b)!r} cannot be rendered: image supervision needs triplets over the "
                "renderable vocabulary (the walkthrough's toy-world triplets, which the Finetune tab "
                "uses for toy:* models when no folder is given)"
            )
        specs.append(ObjectSpec(obj, attr))
    return specs


def swap_binding(
    specs: Sequence[ObjectSpec], kind: str, rng: random.Random
) -> tuple[list[ObjectSpec], tuple[int, int]]:
    """Swap one binding: two slots exchange attributes (``kind`` attribute) or shapes (``object``).

    Only pairs whose attributes *and* shapes differ are eligible, so the binding set really changes.

    Raises:
        ValueError: fewer than two objects, or no eligible pair.
    """
    pairs = [
        (i, j)
        for i in range(len(specs))
        for j in range(i + 1, len(specs))
        if specs[i].attribute != specs[j].attribute and specs[i].shape != specs[j].shape
    ]
    if not pairs:
        raise ValueError(
            f"no binding to swap in a scene of {len(specs)} object(s): need two objects with different "
            "shapes and attributes"
        )
    i, j = rng.choice(pairs)
    out = list(specs)
    if kind == "object":
        out[i], out[j] = ObjectSpec(specs[j].shape, specs[i].attribute), ObjectSpec(specs[i].shape, specs[j].attribute)
    else:
        out[i], out[j] = ObjectSpec(specs[i].shape, specs[j].attribute), ObjectSpec(specs[j].shape, specs[i].attribute)
    return out, (i, j)


def row_seed(row_id: str, seed: int = 0) -> int:
    """A render seed fixed by the row id and the run seed."""
    return zlib.crc32(f"{seed}|{row_id}".encode()) & 0x7FFFFFFF


def image_triplet(
    row: dict[str, Any],
    size: int = 64,
    seed: int = 0,
    render: Callable[[list[ObjectSpec], int, int], Any] | None = None,
) -> ImageTriplet:
    """Render one triplet row (needs ``id``, ``query``, ``bindings`` and ``negative_kind``) as anchor, positive and
    negative.

    Anchor and positive depend only on the query (its text and bindings) and ``seed``, so the rows of one question
    (an attribute-swap and an object-swap row) share them; the swap is drawn per row.

    Args:
        render: ``(objects, size, seed) -> image``; default :func:`~bindlab.data.render.render_scene` (pass a
            memoised one to render a shared anchor once).

    Raises:
        ValueError: bindings the renderer cannot draw, or no binding to swap.
    """
    draw = render or (lambda objects, side, s: render_scene(objects, size=side, seed=s))
    specs = scene_specs(row.get("bindings") or [])
    key = f"{row.get('query', '')}|{row.get('bindings')}"
    s, ps = row_seed(key, seed), row_seed(f"{key}|positive", seed)
    negative, swapped = swap_binding(
        specs, str(row.get("negative_kind", "attribute")), random.Random(row_seed(str(row["id"]), seed))
    )
    reordered = list(specs)
    random.Random(ps).shuffle(reordered)
    return ImageTriplet(
        draw(specs, size, s),
        draw(reordered, size, ps),
        draw(negative, size, s),
        tuple(specs),
        tuple(negative),
        swapped,
        s,
        ps,
    )


def check_renderable(rows: Iterable[dict[str, Any]]) -> int:
    """Check that every row can become an image triplet (renderable bindings, a binding to swap); return the count.

    Raises:
        ValueError: naming the first row that cannot.
    """
    n = 0
    for row in rows:
        try:
            specs = scene_specs(row.get("bindings") or [])
            swap_binding(specs, "attribute", random.Random(0))
        except ValueError as e:
            raise ValueError(f"triplet row {row.get('id')!r}: {e}") from None
        n += 1
    return n
