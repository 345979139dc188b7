"""CompoSET count edits: a count of one takes the singular noun ("One metallic kite."), two or more the plural."""

from __future__ import annotations

import random

import pytest

from bindlab.data.composet import Obj, candidate_edits, captions, make_scene


@pytest.mark.parametrize(
    ("obj", "one", "two"),
    [
        (Obj("kite", "material", "metallic"), "one metallic kite", "two metallic kites"),
        (Obj("hourglass", "color", "red"), "one red hourglass", "two red hourglasses"),
        (Obj("cube", "color", "blue", small=True), "one small blue cube", "two small blue cubes"),
    ],
)
def test_a_count_of_one_uses_the_singular_noun(obj, one, two):
    assert obj.phrase(1, numeral=True) == one
    assert obj.phrase(2) == two
    assert obj.phrase(1) == ("an " if obj.words()[0] in "aeiou" else "a ") + obj.words()


def test_count_edit_captions_never_pair_one_with_a_plural():
    seen = 0
    for index in range(12):
        scene = make_scene(index, random.Random(index), size=64, seed=index)
        edits = candidate_edits(scene)
        for edit in edits["add_instance"] + edits["remove_instance"]:
            words = edit.description.split(":")[0]  # "metallic kite": the object, its noun singular
            single = next(p for p in (edit.base_phrase, edit.foil_phrase) if p.startswith("one "))
            assert single == f"one {words}", (single, words)
            assert captions(single, [], 0)["short"].startswith(f"One {words}"), edit
            seen += 1
    assert seen > 0
