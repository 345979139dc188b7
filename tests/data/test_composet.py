"""CompoSET-style generator: single controlled edits, the taxonomy, caption levels, and generate + eval end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from bindlab.data.composet import EDIT_TYPES, candidate_edits, generate_composet, make_scene
from bindlab.data.pairs_schema import VERBOSITIES, load_pairs
from bindlab.data.schema import DataError
from bindlab.data.vocab import with_article
from tests.cli_run import run


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("composet")
    path = generate_composet(out, scenes=3, foils_per_scene=15, seed=5, size=96, workers=1)
    return path, load_pairs(path)[0]


def test_each_scene_has_many_foils_with_one_labelled_edit(small_set):
    path, pairs = small_set
    meta = json.loads((path.parent / "meta.json").read_text())
    by_scene: dict[str, int] = {}
    for p in pairs:
        by_scene[p.scene_id] = by_scene.get(p.scene_id, 0) + 1
        assert EDIT_TYPES[p.edit_type] == p.edit_category
        assert 4 <= p.extra["n_objects"] <= 10
    assert len(by_scene) == 3 and all(n >= 15 for n in by_scene.values()) and meta["discarded_foils"] == 0
    assert len({p.edit_type for p in pairs}) >= 10  # round robin spreads foils over the taxonomy
    assert {p.edit_category for p in pairs} == {"attribute", "count", "spatial", "state_presence"}


def test_edit_phrase_is_identical_at_every_verbosity_and_context_is_shared(small_set):
    _, pairs = small_set
    for p in pairs:
        assert p.levels() == list(VERBOSITIES)
        ph = p.extra["edit_phrase"]
        for lv in VERBOSITIES:
            b, f = p.base.captions[lv], p.foil.captions[lv]
            assert b.lower().startswith(ph["base"].lower()) and f.lower().startswith(ph["foil"].lower())
            assert b[len(ph["base"]) :] == f[len(ph["foil"]) :]  # the rest of the caption is the same on both sides
        assert len(p.base.captions["short"]) < len(p.base.captions["long"]) or p.extra["n_objects"] <= 2


def test_foil_differs_from_base_only_inside_the_edit_and_pixel_share_is_recorded(small_set):
    path, pairs = small_set
    for p in pairs[:20]:
        a = np.asarray(Image.open(path.parent / p.base.image))
        b = np.asarray(Image.open(path.parent / p.foil.image))
        changed = (a != b).any(axis=2)
        assert changed.mean() == pytest.approx(p.extra["pixels_changed"], abs=1e-6)
        assert 0 < changed.mean() < 0.25  # a controlled edit, not a new scene


def test_generation_is_deterministic_for_a_seed(tmp_path):
    a = generate_composet(tmp_path / "a", scenes=1, foils_per_scene=15, seed=2, size=64, workers=1)
    b = generate_composet(tmp_path / "b", scenes=1, foils_per_scene=15, seed=2, size=64, workers=1)
    assert a.read_text() == b.read_text()
    assert (a.parent / "images/s000/f03.png").read_bytes() == (b.parent / "images/s000/f03.png").read_bytes()


def test_every_scene_allows_more_than_enough_edits():
    import random

    for k in range(20):
        scene = make_scene(k, random.Random(k), 256, 0)
        n = sum(len(v) for v in candidate_edits(scene).values())
        assert n >= 22, (k, n)


def test_bad_arguments_and_bad_lines_are_clear(tmp_path):
    with pytest.raises(ValueError, match="at least 15"):
        generate_composet(tmp_path, scenes=1, foils_per_scene=5)
    bad = tmp_path / "pairs.jsonl"
    bad.write_text(
        '{"id": "a", "base": {"image": "x.png", "captions": {"short": "a cube"}}, '
        '"foil": {"image": "y.png", "captions": {"short": "a cone"}}}\n{"id": "b", "base": 3}\n'
    )
    with pytest.raises(DataError, match=r"pairs.jsonl:2: missing field\(s\) \['foil'\]"):
        load_pairs(bad)
    pairs, report = load_pairs(bad, strict=False)
    assert len(pairs) == 1 and report.skipped[0][0] == 2


def test_generate_and_eval_pairs_end_to_end_with_a_tiny_clip(tmp_path):
    from bindlab.encoders.tiny import build_tiny

    model = build_tiny("hf-clip", tmp_path / "tiny-clip")
    r = run(
        "generate",
        "composet",
        "--out",
        str(tmp_path / "cs"),
        "--scenes",
        "2",
        "--foils-per-scene",
        "15",
        "--size",
        "64",
        "--workers",
        "1",
    )
    assert r.returncode == 0, r.stderr
    assert "pixels changed per pair" in r.stdout
    data = tmp_path / "cs" / "pairs.jsonl"
    r = run(
        "eval",
        "pairs",
        "--data",
        str(data),
        "--model",
        model,
        "--verbosity",
        "all",
        "--out",
        str(tmp_path / "res.json"),
        "--per-item",
        str(tmp_path / "items.jsonl"),
    )
    assert r.returncode == 0, r.stderr
    assert "edit type" in r.stdout and "scene-hard / edit-hard split" in r.stdout
    res = json.loads((tmp_path / "res.json").read_text())
    assert res["levels"] == ["short", "medium", "long"] and res["overall"]["n"] == 90
    assert set(res["by_category"]) == {"attribute", "count", "spatial", "state_presence"}
    assert res["overall"]["chance"]["group"] == pytest.approx(1 / 6)
    assert res["provenance"]["encoder"]["id"] == model and res["provenance"]["dataset"]["sha256"]
    assert 0.9 < res["controls"]["within_pair_image_cosine"]["mean"] <= 1.0 + 1e-6
    rows = [json.loads(x) for x in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert len(rows) == 90
    for row in rows:  # the per-item verdicts follow from the per-item scores
        s = row["scores"]
        i2t = s["c0_i0"] > s["c1_i0"] and s["c1_i1"] > s["c0_i1"]
        t2i = s["c0_i0"] > s["c0_i1"] and s["c1_i1"] > s["c1_i0"]
        assert (row["i2t"], row["t2i"], row["group"]) == (i2t, t2i, i2t and t2i)
    by_type = res["by_edit_type"]
    assert sum(v["n"] for v in by_type.values()) == 90
    assert res["by_verbosity"]["short"]["group"] == pytest.approx(
        np.mean([r["group"] for r in rows if r["verbosity"] == "short"])
    )
    # a text-only model is refused with one clear line
    r = run("eval", "pairs", "--data", str(data), "--model", "bow", check=False)
    assert r.returncode == 2 and "image+text encoder" in r.stderr


def test_the_taxonomy_has_compo_sets_16_edit_types_in_4_categories():
    assert len(EDIT_TYPES) == 16
    assert {"modify_size", "move_vertical"} <= set(EDIT_TYPES)
    assert EDIT_TYPES["modify_size"] == "attribute" and EDIT_TYPES["move_vertical"] == "spatial"
    counts = {c: sum(v == c for v in EDIT_TYPES.values()) for c in set(EDIT_TYPES.values())}
    assert counts == {"attribute": 8, "count": 2, "spatial": 3, "state_presence": 3}


def _render_pair(scene, edit, size):
    from bindlab.data.composet import _disc_mask, _render

    base, foil = _render(scene.objects, scene, size), _render(edit.foil_objects, scene, size)
    changed = (base != foil).any(axis=2)
    return changed, _disc_mask(scene.slots, edit.touched, size)


def test_modify_size_shrinks_one_object_inside_its_disc_and_says_large_and_small():
    import random

    scene = make_scene(3, random.Random(3), 128, 0)
    edit = candidate_edits(scene)["modify_size"][0]
    (i,) = edit.touched
    old, new = scene.objects[i], edit.foil_objects[i]
    assert new.small and not old.small and (new.shape, new.value) == (old.shape, old.value)
    assert edit.base_phrase == with_article(f"large {old.words()}")
    assert edit.foil_phrase == f"a small {old.words()}"
    changed, inside = _render_pair(scene, edit, 128)
    assert changed.any() and not (changed & ~inside).any()
    # the small object covers fewer pixels than the original inside the same disc
    from bindlab.data.composet import _render

    bg = _render([o if k != i else None for k, o in enumerate(scene.objects)], scene, 128)
    full, small = _render(scene.objects, scene, 128), _render(edit.foil_objects, scene, 128)
    assert (small != bg).any(axis=2)[inside].sum() < (full != bg).any(axis=2)[inside].sum()


def test_move_vertical_flips_above_and_below_with_the_image():
    import random

    from bindlab.data.composet import _level_of

    found = 0
    for k in range(10):
        scene = make_scene(k, random.Random(k), 128, 0)
        for edit in candidate_edits(scene)["move_vertical"][:3]:
            moved = [x for x in edit.described if scene.objects[x] is not None and edit.foil_objects[x] is None]
            target = [x for x in edit.described if scene.objects[x] is None and edit.foil_objects[x] is not None]
            anchor = [x for x in edit.described if x not in moved + target]
            assert len(moved) == len(target) == len(anchor) == 1, edit.described
            before = _level_of(scene.slots[moved[0]], scene.slots[anchor[0]])
            after = _level_of(scene.slots[target[0]], scene.slots[anchor[0]])
            assert {before, after} == {"above", "below"}
            a, b = scene.objects[moved[0]], scene.objects[anchor[0]]
            assert edit.base_phrase == f"{a.phrase()} {before} {b.phrase()}"
            assert edit.foil_phrase == f"{a.phrase()} {after} {b.phrase()}"
            changed, inside = _render_pair(scene, edit, 128)
            assert changed.any() and not (changed & ~inside).any()
            found += 1
    assert found >= 5


def test_generated_set_uses_the_new_edit_types_with_captions_like_the_others(tmp_path):
    path = generate_composet(tmp_path, scenes=4, foils_per_scene=16, seed=3, size=96, workers=1)
    pairs = load_pairs(path)[0]
    meta = json.loads((path.parent / "meta.json").read_text())
    assert meta["discarded_foils"] == 0 and len(meta["per_edit_type"]) == 16
    for kind, words in (("modify_size", ("large", "small")), ("move_vertical", ("above", "below"))):
        mine = [p for p in pairs if p.edit_type == kind]
        assert mine, kind
        for p in mine:
            ph = p.extra["edit_phrase"]
            assert {w for w in words if w in ph["base"].split()} ^ {w for w in words if w in ph["foil"].split()}
            for lv in VERBOSITIES:
                assert p.base.captions[lv].lower().startswith(ph["base"].lower())
                assert p.foil.captions[lv].lower().startswith(ph["foil"].lower())
