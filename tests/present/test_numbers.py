"""One number format per kind: 3 decimals for scores and accuracies, signed differences that never read +0.000 when
they decide something, tables that show 3 decimals and keep their numbers, and ranks that tied scores share."""

from __future__ import annotations

import math

import pandas as pd

from bindlab.present import numbers


def test_scores_have_three_decimals_whatever_their_value():
    assert [numbers.score(x) for x in (1, 1.0, 0.25, 0.2593, 0.99671)] == ["1.000", "1.000", "0.250", "0.259",
                                                                          "0.997"]
    assert numbers.score(None) == "n/a" and numbers.score(math.nan) == "n/a" and numbers.score("n/a") == "n/a"
    assert numbers.interval([0.25, 0.3]) == "0.250–0.300" and numbers.interval(None) == "n/a"


def test_a_difference_keeps_its_sign_and_one_digit_when_it_would_round_to_zero():
    assert numbers.signed(0.0108) == "+0.011" and numbers.signed(-0.0108) == "-0.011"
    assert numbers.signed(0.0) == "+0.000"
    assert numbers.signed(-0.00004) == "-4e-05"  # a wrong answer by a hair does not read "+0.000"


def test_table_shows_three_decimals_and_keeps_the_numbers():
    import gradio as gr

    frame = pd.DataFrame({"model": ["bow", "toy:clip"], "score": [1.0, 0.9967], "n": [3, 4], "rank": ["=1", "2"],
                          "gap": [math.nan, 0.25]})
    out = gr.Dataframe(interactive=False).postprocess(numbers.table(frame))
    # the values underneath, unrounded (they sort as numbers)
    assert [row[:4] for row in out.data] == [["bow", 1.0, 3, "=1"], ["toy:clip", 0.9967, 4, "2"]]
    assert out.metadata["display_value"] == [["bow", "1.000", 3, "=1", "n/a"], ["toy:clip", "0.997", 4, "2", "0.250"]]
    assert numbers.table(pd.DataFrame()).empty  # an empty frame passes through


def test_tied_scores_share_a_rank():
    assert numbers.shared_ranks([1.0, 1.0, 0.75, 1.0]) == ["=1", "=1", "4", "=1"]  # bag-of-words ties
    assert numbers.shared_ranks([0.3, 0.5, 0.5, 0.1]) == ["3", "=1", "=1", "4"]
    assert numbers.shared_ranks([0.9, 0.8, 0.7]) == ["1", "2", "3"]
    assert numbers.shared_ranks([0.5, 0.5 + 1e-9]) == ["=1", "=1"]  # within the tie tolerance MCQ credit uses
    assert numbers.shared_ranks([]) == []
