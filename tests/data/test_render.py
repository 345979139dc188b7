"""Tests of the procedural scene renderer: vocabulary, determinism, masks, locality, layout, flip, batch, errors."""

from __future__ import annotations

import random

import numpy as np
import pytest
from PIL import Image

from bindlab.data.render import (
    RENDER_ATTRIBUTES,
    RENDER_SHAPES,
    RENDER_VOCAB,
    ObjectSpec,
    SceneContext,
    context_from_index,
    render_batch,
    render_scene,
    render_single,
    scene_layout,
)
from bindlab.data.saber import generate_saber
from bindlab.data.textures import COLOURS
from bindlab.data.vocab import ATTRIBUTE_BY_NAME, OBJECTS


def _px(img: Image.Image) -> np.ndarray:
    return np.asarray(img, dtype=np.int16)


def _near(pixels: np.ndarray, colour: tuple[float, float, float], dist: float = 60.0) -> np.ndarray:
    """Which pixels (k, 3) lie within ``dist`` (RGB Euclidean) of ``colour``."""
    return np.linalg.norm(pixels - np.asarray(colour), axis=-1) < dist


# ---------------------------------------------------------------------------------------------- vocabulary
def test_vocabulary_sizes_and_reuse():
    assert len(RENDER_SHAPES) >= 16 and set(RENDER_SHAPES) <= set(OBJECTS)
    assert len(RENDER_ATTRIBUTES) >= 30
    for attr in RENDER_ATTRIBUTES:
        assert attr is ATTRIBUTE_BY_NAME[attr.name]  # the very same Attribute objects as the SABER vocabulary
    assert {a.category for a in RENDER_ATTRIBUTES} >= {"colour", "material", "pattern", "texture", "effect", "style"}
    assert {a.realisation for a in RENDER_ATTRIBUTES} >= {"standalone", "single_color", "two_color", "fixed_variant"}
    assert RENDER_VOCAB.objects == RENDER_SHAPES and RENDER_VOCAB.attributes == RENDER_ATTRIBUTES


def test_saber_questions_over_render_vocab_render():
    q = generate_saber(per_size=1, sizes=[4], seed=3, vocab=RENDER_VOCAB)[0]
    forms = q.extra["realisations"]
    objects = [ObjectSpec(o, a, forms[a]) for a, o in q.query.bindings]
    img, masks = render_scene(objects, size=128, seed=1, return_masks=True)
    assert img.size == (128, 128) and len(masks) == 4 and all(m.any() for m in masks)


# ---------------------------------------------------------------------------------------------- rendering
def test_deterministic_for_a_seed():
    objs = [
        ObjectSpec("cube", "striped", "white and orange striped"),
        ObjectSpec("sphere", "glittery", "blue glittery"),
        ObjectSpec("star", "marble", "green marble"),
    ]
    ctx = context_from_index(5)
    a = render_scene(objs, size=128, seed=7, context=ctx)
    b = render_scene(objs, size=128, seed=7, context=ctx)
    c = render_scene(objs, size=128, seed=8, context=ctx)
    assert a.mode == "RGB" and a.tobytes() == b.tobytes()
    assert a.tobytes() != c.tobytes()
    single = [render_single(objs[1], size=64, seed=s).tobytes() for s in (0, 0, 1)]
    assert single[0] == single[1] != single[2]


@pytest.mark.parametrize("size", [64, 256])
def test_every_shape_renders(size):
    background = _px(render_scene([ObjectSpec("cube", "red")], size=size, seed=0))[0, 0]
    for shape in RENDER_SHAPES:
        img, masks = render_scene([ObjectSpec(shape, "red")], size=size, seed=0, return_masks=True)
        px = _px(img)
        assert masks[0].sum() > 0.02 * size * size, shape
        assert _near(px[masks[0]], COLOURS["red"], 120).mean() > 0.8, shape  # the object is drawn in its colour
        assert (px[0, 0] == background).all()


@pytest.mark.parametrize("size", [64, 256])
def test_every_attribute_renders_default_and_instantiated(size):
    rng = random.Random(0)
    plain = np.asarray(SceneContext().background)  # the bare background
    for attr in RENDER_ATTRIBUTES:
        for form in ("", attr.instantiate(rng))[size > 64 :]:  # default looks at 64 px, instantiated at both
            img = render_single(ObjectSpec("sphere", attr.name, form), size=size, seed=1)
            assert img.size == (size, size) and img.mode == "RGB"
            assert np.abs(_px(img) - plain).mean() > 10.0, (attr.name, form)  # an object is drawn


def test_attribute_looks_are_distinct():
    """No two attributes render (nearly) the same image of one object."""
    rng = random.Random(1)
    imgs = {
        a.name: _px(render_single(ObjectSpec("cube", a.name, a.instantiate(rng)), size=64, seed=2)).astype(float)
        for a in RENDER_ATTRIBUTES
    }
    names = list(imgs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert np.abs(imgs[a] - imgs[b]).mean() > 4.0, (a, b)


def test_form_colours_are_used():
    objs = lambda form: [ObjectSpec("sphere", "striped", form)]  # noqa: E731
    img, masks = render_scene(objs("white and orange striped"), size=128, seed=0, return_masks=True)
    inside = _px(img)[masks[0]]
    assert _near(inside, COLOURS["orange"]).mean() > 0.15 and _near(inside, COLOURS["white"]).mean() > 0.15
    assert _near(inside, COLOURS["blue"]).mean() == 0
    red = _px(render_single(ObjectSpec("cube", "glowing", "red glowing"), size=64))
    blue = _px(render_single(ObjectSpec("cube", "glowing", "blue glowing"), size=64))
    assert np.abs(red - blue).mean() > 10


# ---------------------------------------------------------------------------------------------- masks, locality, layout
def test_masks_disjoint_and_nonempty():
    rng = random.Random(0)
    for n in (1, 2, 5, 10):
        objs = [
            ObjectSpec(s, a.name, a.instantiate(rng))
            for s, a in zip(rng.sample(RENDER_SHAPES, n), rng.sample(RENDER_ATTRIBUTES, n), strict=False)
        ]
        _, masks = render_scene(objs, size=256, seed=n, return_masks=True)
        assert len(masks) == n
        assert all(m.dtype == bool and m.shape == (256, 256) and m.sum() > 30 for m in masks)
        assert (np.sum(masks, axis=0) <= 1).all()


@pytest.mark.parametrize(
    "a, b",
    [
        (("cube", "red", ""), ("sphere", "blue", "")),
        (("hexagon", "green", ""), ("torus", "purple", "")),
        (("star", "yellow", ""), ("heart", "glowing", "blue glowing")),
        (("cylinder", "blue", ""), ("mug", "neon", "orange neon")),
        (("sphere", "purple", ""), ("cube", "striped", "yellow and orange striped")),
        (("pyramid", "orange", ""), ("kite", "outlined", "blue outlined")),
    ],
)
def test_no_attribute_colour_bleeds_into_another_object(a, b):
    """Pixels inside one object's mask never carry the other object's distinctive colour."""
    oa, ob = ObjectSpec(*a), ObjectSpec(*b)
    col_a = COLOURS[a[1]]
    col_b = COLOURS[ob.look().colours[0] if ob.look().colours else b[1]]
    for seed in range(4):
        img, (ma, mb) = render_scene([oa, ob], size=160, seed=seed, return_masks=True)
        px = _px(img)
        assert not _near(px[ma], col_b).any(), (a, b, seed)
        assert not _near(px[mb], col_a).any(), (a, b, seed)
        assert _near(px[ma], col_a, 110).mean() > 0.7  # and the object does carry its own colour


def test_changing_one_object_leaves_other_discs_untouched():
    """Structural locality: every pixel of an object's disc is independent of what its neighbours look like."""
    fixed = [
        ObjectSpec("cube", "checkered", "black and white checkered"),
        ObjectSpec("fish", "wooden", "dark-brown wooden"),
    ]
    size, seed = 192, 11
    slots = scene_layout(3, size, seed)
    yy, xx = np.mgrid[:size, :size] + 0.5
    discs = [np.hypot(xx - s.cx, yy - s.cy) <= s.radius for s in slots]
    ref = None
    for attr, form in [
        ("red", ""),
        ("glowing", "green glowing"),
        ("neon", "pink neon"),
        ("spiky", ""),
        ("transparent", ""),
        ("glittery", "yellow glittery"),
        ("rainbow", ""),
    ]:
        px = _px(render_scene(fixed + [ObjectSpec("star", attr, form)], size=size, seed=seed, flip=False))
        if ref is None:
            ref = px
        for disc in discs[:2]:
            assert (px[disc] == ref[disc]).all(), attr
        outside = ~np.any(discs, axis=0)
        assert (px[outside] == ref[outside]).all(), attr  # nothing leaks beyond the discs either


def test_objects_are_scattered_not_in_a_row():
    for n in range(3, 11):
        for seed in range(3):
            slots = scene_layout(n, 256, seed)
            pts = np.array([(s.cx, s.cy) for s in slots])
            sv = np.linalg.svd(pts - pts.mean(0), compute_uv=False)
            assert sv[1] > 0.2 * sv[0], (n, seed)
            gaps = [
                np.hypot(*(p - q)) - si.radius - sj.radius
                for i, (p, si) in enumerate(zip(pts, slots, strict=False))
                for q, sj in zip(pts[i + 1 :], slots[i + 1 :], strict=False)
            ]
            assert min(gaps) > 0  # discs (and so objects, halos and shadows) never touch
            assert slots[0].radius > 0.08 * 256  # ten objects still get a usable size


def test_layout_shared_across_bindings():
    """Two images of one question (same objects, swapped attributes) share the layout for one seed."""
    _, m1 = render_scene([ObjectSpec("cube", "red"), ObjectSpec("sphere", "blue")], size=128, seed=5, return_masks=True)
    _, m2 = render_scene([ObjectSpec("cube", "blue"), ObjectSpec("sphere", "red")], size=128, seed=5, return_masks=True)
    assert all((a == b).all() for a, b in zip(m1, m2, strict=False))


def test_flip():
    objs = [ObjectSpec("key", "golden", "polished golden"), ObjectSpec("house", "plaid", "red and white plaid")]
    plain, m0 = render_scene(objs, size=128, seed=3, flip=False, return_masks=True)
    flipped, m1 = render_scene(objs, size=128, seed=3, flip=True, return_masks=True)
    assert (_px(flipped) == _px(plain)[:, ::-1]).all()
    assert all((a[:, ::-1] == b).all() for a, b in zip(m0, m1, strict=False))
    outcomes = {
        render_scene(objs, size=64, seed=s).tobytes() == render_scene(objs, size=64, seed=s, flip=True).tobytes()
        for s in range(12)
    }
    assert outcomes == {True, False}  # flip=None flips some seeds and not others


# ---------------------------------------------------------------------------------------------- contexts
def test_contexts_distinct_and_deterministic():
    ctxs = [context_from_index(i) for i in range(12)]
    assert ctxs[0] == SceneContext() and len(set(ctxs)) == 12
    assert ctxs == [context_from_index(i) for i in range(12)]
    spec = ObjectSpec("cube", "polka-dot", "white and red polka-dot")
    imgs = {render_single(spec, size=48, context=c).tobytes() for c in ctxs}
    assert len(imgs) == 12
    with pytest.raises(ValueError, match="0..11"):
        context_from_index(12)
    with pytest.raises(ValueError, match="scale"):
        SceneContext(scale=3.0)


# ---------------------------------------------------------------------------------------------- batch
def test_render_batch_is_resumable(tmp_path):
    tasks = [
        (f"img/{i}.png", [ObjectSpec("cube", "red"), ObjectSpec("star", "zigzag", "blue and white zigzag")], i)
        for i in range(3)
    ]
    seen = []
    assert render_batch(tasks, tmp_path, size=64, workers=2, progress=lambda d, t: seen.append((d, t))) == 3
    assert seen[-1] == (3, 3)
    first = (tmp_path / "img/0.png").read_bytes()
    assert first == _png_bytes(render_scene(tasks[0][1], size=64, seed=0))
    assert render_batch(tasks, tmp_path, size=64, workers=2) == 0
    (tmp_path / "img/1.png").unlink()
    assert render_batch(tasks, tmp_path, size=64, workers=1) == 1
    (tmp_path / "img/2.png").write_bytes((tmp_path / "img/2.png").read_bytes()[:200])  # a half-written file
    assert render_batch(tasks, tmp_path, size=64, workers=1) == 1
    assert render_batch(tasks, tmp_path, size=64, workers=1) == 0
    assert sorted(p.name for p in (tmp_path / "img").iterdir()) == ["0.png", "1.png", "2.png"]  # no temp files


def _png_bytes(img: Image.Image) -> bytes:
    import io

    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------- errors
def test_bad_names_raise_with_choices():
    with pytest.raises(ValueError, match=r"dodecahedron.*cube.*sphere"):
        ObjectSpec("dodecahedron", "red")
    with pytest.raises(ValueError, match=r"sparkling.*red.*striped"):
        ObjectSpec("cube", "sparkling")
    with pytest.raises(ValueError, match="2 distinct colour"):
        ObjectSpec("cube", "striped", "purple striped")
    with pytest.raises(ValueError, match="light-brown"):
        ObjectSpec("cube", "wooden", "mahogany wooden")
    with pytest.raises(ValueError, match="1..16"):
        render_scene([], size=64)


@pytest.mark.parametrize("look", ["crystal", "cracked"])
def test_cell_textures_paint_objects_of_a_few_pixels(look):
    """A Voronoi texture on an object only a few pixels wide (cells wider than the object: `generate composet
    --size 64` once stopped with "kth(=1) out of bounds") paints finite colours."""
    from bindlab.data.textures import Field, Look, painter

    h = w = 6
    v, u = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    field = Field(
        u.astype(np.float32), v.astype(np.float32), np.ones((h, w), np.float32), 2.0, np.random.default_rng(0)
    )  # 2 pixels per unit: a cell spacing of 5 units, wider than the grid
    paint = painter(look)(Look(look), field)
    assert paint.rgb.shape[:2] == (h, w) and np.isfinite(paint.rgb).all()
