"""The Pairs tab says what its numbers are: each n with what it counts (pairs × caption levels), each score beside
its 95 % interval and chance, every edit type in a table, and a sentence that reads a below-chance score by how the
failing rows fail."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from bindlab.studies import pairs as study


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory):
    """A small generated CompoSET-style file (2 scenes x 15 foils = 30 pairs, 3 caption levels)."""
    from bindlab.data.composet import generate_composet

    root = tmp_path_factory.mktemp("pairs-numbers")
    return str(generate_composet(root / "cs", scenes=2, foils_per_scene=15, seed=1, size=64, workers=1))


def _row(c0_i0, c0_i1, c1_i0, c1_i1):
    s = {"c0_i0": c0_i0, "c0_i1": c0_i1, "c1_i0": c1_i0, "c1_i1": c1_i1}
    i2t = c0_i0 > c1_i0 and c1_i1 > c0_i1
    t2i = c0_i0 > c0_i1 and c1_i1 > c1_i0
    return {"scores": s, "i2t": i2t, "t2i": t2i, "group": i2t and t2i}


def test_failures_are_told_apart_by_which_side_prefers_what():
    rows = [
        _row(0.9, 0.1, 0.1, 0.9),  # passes both
        _row(0.9, 0.8, 0.5, 0.4),  # both images prefer c0 (base caption); c0 prefers i0, c1 prefers i0
        _row(0.1, 0.9, 0.9, 0.1),  # each image prefers the other's caption; each caption the other's image
        _row(0.5, 0.1, 0.5, 0.9),
    ]  # image i0 ties: I2T fails by the tie; T2I passes
    kinds = study.failure_kinds(rows)
    assert kinds["i2t"] == {"fail": 3, "same": 1, "same_base": 1, "same_foil": 0, "swapped": 1, "tie": 1}
    assert kinds["t2i"] == {"fail": 2, "same": 1, "same_base": 1, "same_foil": 0, "swapped": 1, "tie": 0}


def _scored(rows, overall):
    return SimpleNamespace(rows=rows, summary={"overall": overall})


def test_a_score_below_chance_is_read_by_how_its_rows_fail():
    rows = [_row(0.9, 0.8, 0.5, 0.4)] * 8 + [_row(0.1, 0.9, 0.9, 0.1)] * 2
    overall = {
        "n": 10,
        "i2t": 0.0,
        "i2t_ci95": [0.0, 0.0],
        "t2i": 0.3,
        "t2i_ci95": [0.1, 0.6],
        "group": 0.0,
        "group_ci95": [0.0, 0.0],
    }
    notes = study.below_chance_notes(_scored(rows, overall))
    assert len(notes) == 2  # I2T and Group below chance; T2I's interval holds chance 0.25: nothing to explain
    i2t, group = notes
    assert i2t.startswith("I2T is below chance (0.000, 95% CI 0.000–0.000, chance 0.250)")
    assert (
        "1 time in 4" in i2t and "of its 10 failing rows, 8 have both images preferring the same caption" in i2t.lower()
    )
    assert (
        "(8 the base caption, 0 the foil caption)" in i2t and "2 have each image preferring the other's caption" in i2t
    )
    assert "barely depends on the image" in i2t  # the same caption wins more often than a swap
    assert group.startswith("Group is below chance") and "1 time in 6" in group
    # a model that mostly swaps is said to confuse the two
    swapped = study.below_chance_notes(_scored([_row(0.1, 0.9, 0.9, 0.1)] * 10, overall))
    assert "systematically confuses the two" in swapped[0]
    at_chance = {**overall, "i2t": 0.3, "i2t_ci95": [0.1, 0.5], "group": 0.2, "group_ci95": [0.05, 0.4]}
    assert study.below_chance_notes(_scored(rows, at_chance)) == []


def test_every_n_says_what_it_counts_and_every_score_has_its_interval(pairs_file):
    from bindlab.ui import pairs as tab

    s = study.scored_pairs(pairs_file, "toy:clip", "all")
    assert study.n_label(s) == "n = 90 rows = 30 pairs × 3 caption levels (short, medium, long)"
    short = study.scored_pairs(pairs_file, "toy:clip", "short")
    assert study.n_label(short) == "n = 30 rows = 30 pairs × 1 caption level (short)"

    summary = tab.summary_md(s)
    assert "n = 90 rows = 30 pairs × 3 caption levels" in summary
    o = s.summary["overall"]
    for k, name in (("i2t", "I2T"), ("t2i", "T2I"), ("group", "Group")):
        lo, hi = o[f"{k}_ci95"]
        assert f"{name} **{o[k]:.3f}** (95% CI {lo:.3f}–{hi:.3f}; chance {o['chance'][k]:.3f}" in summary
    # toy:clip at 64 px is below chance on these pairs: the summary says what that means, score by score
    below = [r["name"] for r in study.score_summary(o) if r["vs_chance"] == "below chance"]
    assert below, "toy:clip was below chance here; pick a file where it is"
    for name in below:
        assert f"- {name} is below chance" in summary
    assert re.search(r"Group \d\.\d{3} \\\(95% CI [^)]*, n \d+ rows\\\)", summary)  # the by-origin n says rows too

    # the per-edit-type table: every edit type with its pairs and rows, each score beside its interval
    frame = tab.edit_type_frame(s).data
    assert list(frame.columns) == [
        "edit type",
        "category",
        "origin",
        "pairs",
        "n (rows)",
        "I2T",
        "I2T 95% CI",
        "T2I",
        "T2I 95% CI",
        "Group",
        "Group 95% CI",
    ]
    assert frame["pairs"].sum() == 30 and frame["n (rows)"].sum() == 90
    scored = frame[frame["pairs"] > 0]
    assert (scored["n (rows)"] == 3 * scored["pairs"]).all()
    assert scored["Group 95% CI"].str.fullmatch(r"\d\.\d{3}–\d\.\d{3}").all()
    assert (frame.loc[frame["pairs"] == 0, "Group"] == "no pairs").all()


def test_the_compare_table_is_hidden_without_a_second_model_and_labels_its_n(pairs_file):
    """An empty table shows only Gradio's placeholder header "1 2 3": the tab hides it instead."""
    from bindlab.ui import pairs as tab

    out = tab.score(pairs_file, "toy:clip", "all", "none", progress=lambda *a, **k: None)
    edit_table, cmp_table = out[2], out[5]
    assert cmp_table["visible"] is False and edit_table["visible"] is True
    assert not edit_table["value"].data.empty
    c = study.compare_pairs(pairs_file, "toy:clip", "toy:negclip", "all")
    frame = tab.compare_frame(c).data
    assert list(frame.columns)[:3] == ["edit type", "pairs", "n (rows)"]
    assert frame.iloc[0][["edit type", "pairs", "n (rows)"]].tolist() == ["overall", 30, 90]
