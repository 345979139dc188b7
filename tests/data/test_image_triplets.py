"""Image triplets from the renderer: the negative differs from the anchor only in the swapped binding (same layout,
pixel-identical elsewhere); the positive keeps the bindings and re-renders; unrenderable rows are named."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bindlab.data.image_triplets import check_renderable, image_triplet, scene_specs, swap_binding
from bindlab.data.render import ObjectSpec, render_scene, scene_layout

ROW = {
    "id": "q7-attr_swap",
    "negative_kind": "attribute",
    "query": "A red cube, a striped star and a blue flag.",
    "bindings": [["red", "cube"], ["striped", "star"], ["blue", "flag"]],
}


def _bindings(specs) -> set[tuple[str, str]]:
    return {(s.attribute, s.shape) for s in specs}


@pytest.mark.parametrize("kind", ["attribute", "object"])
def test_negative_swaps_one_binding_and_keeps_every_other_pixel(kind):
    t = image_triplet({**ROW, "negative_kind": kind}, size=96)
    i, j = t.swapped
    # one binding swapped: the same attributes and shapes, two pairs re-bound, the third object untouched
    assert sorted(s.attribute for s in t.negative_specs) == sorted(s.attribute for s in t.specs)
    assert sorted(s.shape for s in t.negative_specs) == sorted(s.shape for s in t.specs)
    assert len(_bindings(t.specs) - _bindings(t.negative_specs)) == 2
    keep = [k for k in range(3) if k not in (i, j)]
    assert [t.negative_specs[k] for k in keep] == [t.specs[k] for k in keep]
    if kind == "attribute":  # each object keeps its slot: the shapes stay, the attributes move
        assert [s.shape for s in t.negative_specs] == [s.shape for s in t.specs]
    else:
        assert [s.attribute for s in t.negative_specs] == [s.attribute for s in t.specs]
    # same geometry: the anchor's layout and flip; outside the two swapped objects' discs every pixel is identical
    size = 96
    flipped = np.array_equal(np.asarray(t.anchor), np.asarray(render_scene(list(t.specs), size, t.seed, flip=True)))
    yy, xx = np.mgrid[:size, :size] + 0.5
    discs = [np.hypot(xx - s.cx, yy - s.cy) <= s.radius for s in scene_layout(3, size, t.seed)]
    discs = [d[:, ::-1] if flipped else d for d in discs]
    a, n = np.asarray(t.anchor), np.asarray(t.negative)
    changed = discs[i] | discs[j]
    assert np.array_equal(a[~changed], n[~changed])
    assert np.array_equal(a[discs[keep[0]]], n[discs[keep[0]]])  # the unchanged object, pixel for pixel
    assert not np.array_equal(a[changed], n[changed])  # and the swap is visible


def test_positive_is_the_same_scene_re_rendered():
    t = image_triplet(ROW, size=96)
    assert t.positive_seed != t.seed
    assert not np.array_equal(np.asarray(t.anchor), np.asarray(t.positive))
    again = image_triplet(ROW, size=96)
    assert np.array_equal(np.asarray(again.positive), np.asarray(t.positive))  # deterministic per row
    assert np.array_equal(np.asarray(again.negative), np.asarray(t.negative))


def test_unrenderable_rows_and_scenes_without_a_swap_are_named():
    with pytest.raises(ValueError, match="cannot be rendered.*renderable vocabulary"):
        scene_specs([["sandy", "snowboard"]])
    with pytest.raises(ValueError, match="triplet row 'x'"):
        check_renderable([{"id": "x", "bindings": [["sandy", "snowboard"]]}])
    with pytest.raises(ValueError, match="no binding to swap"):
        swap_binding([ObjectSpec("cube", "red")], "attribute", random.Random(0))
    assert check_renderable([ROW, ROW]) == 2


def test_the_rows_of_one_question_share_anchor_and_positive():
    """The attribute-swap and object-swap rows of a question render the same anchor and positive (so a memoised
    renderer draws them once); only the negative is drawn per row."""
    drawn: list[tuple] = []

    def render(objects, size, seed):
        drawn.append((tuple(objects), size, seed))
        return render_scene(objects, size=size, seed=seed)

    a = image_triplet(ROW, size=64, render=render)
    b = image_triplet({**ROW, "id": "q7-obj_swap", "negative_kind": "object"}, size=64, render=render)
    assert (a.seed, a.positive_seed) == (b.seed, b.positive_seed)
    assert np.array_equal(np.asarray(a.anchor), np.asarray(b.anchor))
    assert np.array_equal(np.asarray(a.positive), np.asarray(b.positive))
    assert a.negative_specs != b.negative_specs
    assert len(set(drawn)) == 4  # anchor, positive and two negatives: a memo would render four images, not six
