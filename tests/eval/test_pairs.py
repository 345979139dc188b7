"""2x2 scoring definitions against hand-made matrices (ties fail), and the aggregations against naive loops."""

from __future__ import annotations

import numpy as np
import pytest

from bindlab.eval.pairs import (
    CHANCE,
    group_margin,
    group_pass,
    i2t_pass,
    matched_modify_swap,
    pass_table,
    scene_edit_split,
    t2i_pass,
)

# [caption, image]: s[c, i]; rows c0 (base caption), c1 (foil caption); columns i0 (base image), i1 (foil image)
CASES = [
    # matrix, i2t, t2i, group
    ([[0.9, 0.1], [0.2, 0.8]], True, True, True),  # perfect diagonal
    ([[0.9, 0.8], [0.2, 0.3]], False, True, False),  # c0 wins both images: image 1 prefers c0 -> I2T fails
    ([[0.9, 0.95], [0.2, 0.99]], True, False, False),  # caption 0 prefers image 1 -> T2I fails
    ([[0.5, 0.5], [0.4, 0.6]], True, False, False),  # tie s00 == s01: T2I fails (a tie is not a pass)
    ([[0.5, 0.4], [0.5, 0.6]], False, True, False),  # tie s00 == s10: I2T fails
    ([[0.3, 0.3], [0.3, 0.3]], False, False, False),  # all tied (a bag-of-words model on a swap)
    ([[0.1, 0.9], [0.9, 0.1]], False, False, False),  # anti-diagonal: systematically the wrong assignment
    ([[np.nan, 0.1], [0.2, 0.8]], False, False, False),  # a broken score never passes
]


@pytest.mark.parametrize("m,i2t,t2i,group", CASES)
def test_hand_made_matrices(m, i2t, t2i, group):
    s = np.array([m])
    assert i2t_pass(s)[0] == i2t and t2i_pass(s)[0] == t2i and group_pass(s)[0] == group


def test_naive_reference_and_margin_sign_on_random_matrices():
    rng = np.random.default_rng(0)
    s = np.round(rng.normal(size=(500, 2, 2)), 1)  # rounding makes many exact ties
    for k, m in enumerate(s):
        i2t = m[0][0] > m[1][0] and m[1][1] > m[0][1]
        t2i = m[0][0] > m[0][1] and m[1][1] > m[1][0]
        assert i2t_pass(s)[k] == i2t and t2i_pass(s)[k] == t2i and group_pass(s)[k] == (i2t and t2i)
    assert np.array_equal(group_margin(s) > 0, group_pass(s))


def test_chance_levels_from_random_scores():
    """Under random i.i.d. scores the rates approach the stated chance levels 1/4, 1/4 and 1/6."""
    s = np.random.default_rng(1).random((200_000, 2, 2))
    t = pass_table(s)
    for m in ("i2t", "t2i", "group"):
        assert t[m].mean() == pytest.approx(CHANCE[m], abs=0.005)


def test_wrong_shape_is_a_clear_error():
    with pytest.raises(ValueError, match=r"\(\.\.\., 2, 2\)"):
        i2t_pass(np.zeros((3, 2, 3)))


def test_scene_edit_split_separates_hard_scenes_from_hard_edits():
    # 8 scenes x 4 foils. Scene s0 is uniformly hard (low margins); scene s1 is fine except one very bad foil.
    margins, scenes = [], []
    for k in range(8):
        vals = [0.1, 0.12, 0.11, 0.13]
        if k == 0:
            vals = [-0.3, -0.31, -0.29, -0.3]
        if k == 1:
            vals = [0.2, 0.21, 0.19, -0.5]
        margins += vals
        scenes += [f"s{k}"] * 4
    out = scene_edit_split(np.array(margins), scenes)
    rows = {r["scene"]: r for r in out["scenes"]}
    assert rows["s0"]["scene_hard"] and not rows["s0"]["edit_hard"]
    assert rows["s1"]["edit_hard"]
    assert rows["s1"]["margin"] == pytest.approx(np.mean([0.2, 0.21, 0.19, -0.5]))
    assert sum(out["counts"][k] for k in ("scene_hard_only", "edit_hard_only", "both", "neither")) == 8
    assert out["both_expected_under_independence"] == pytest.approx(0.0625)
    # within-scene variance share against a naive computation
    m = np.array(margins)
    means = {s: m[np.array(scenes) == s].mean() for s in set(scenes)}
    within = sum((x - means[s]) ** 2 for x, s in zip(m, scenes, strict=False))
    assert out["within_scene_variance_share"] == pytest.approx(within / ((m - m.mean()) ** 2).sum())


def test_matched_modify_swap_uses_only_shared_scenes():
    et = ["modify_color", "swap_color", "modify_color", "swap_color", "modify_color"]
    sc = ["a", "a", "b", "b", "c"]  # scene c has no swap_color: left out of the matched comparison
    group = np.array([True, False, True, True, False])
    passes = {"group": group, "i2t": group, "t2i": group}
    out = matched_modify_swap(passes, et, sc, {"color": ("modify_color", "swap_color")})["color"]
    assert out["scenes"] == 2
    assert out["modify"]["group"] == 1.0 and out["modify"]["n"] == 2
    assert out["swap"]["group"] == 0.5
    assert out["group_gap"] == pytest.approx(0.5)
