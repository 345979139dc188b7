"""One number format per kind: 3 decimals for scores and accuracies, signed differences that never read +0.000 when
they decide something, tables that show 3 decimals and keep their numbers, and ranks that tied scores share."""

from __future__ import annotations

import math

import pandas as pd

from bindlab.present import numbers


def test_scores_have_three_decimals_whatever_their_value():
    assert [numbers.score(x) for x in (1, 1.0, 0.25, 0.2593, 0.99671)] == ["1.000", "1.000", "0.250", "0.259", "0.997"]
    assert numbers.score(None) == "n/a" and numbers.score(math.nan) == "n/a" and numbers.score("n/a") == "n/a"
    assert numbers.interval([0.25, 0.3]) == "0.250–0.300" and numbers.interval(None) == "n/a"


def test_a_difference_keeps_its_sign_and_one_digit_when_it_would_round_to_zero():
    assert numbers.signed(0.0108) == "+0.011" and numbers.signed(-0.0108) == "-0.011"
    assert numbers.signed(0.0) == "+0.000"
    assert numbers.signed(-0.00004) == "-4e-05"  # a wrong answer by a hair does not read "+0.000"


def test_table_shows_three_decimals_and_keeps_the_numbers():
    import gradio as gr

    frame = pd.DataFrame(
        {
            "model": ["bow", "toy:clip"],
            "score": [1.0, 0.9967],
            "n": [3, 4],
            "rank": ["=1", "2"],
            "gap": [math.nan, 0.25],
        }
    )
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


def test_a_margin_reads_as_far_as_it_decides_the_verdict():
    """Browse and Pairs margins: 3 decimals; a tie (within the tie rule the verdict uses) reads "0.000 (tie)"; a
    margin that is not a tie but rounds to zero keeps its sign, "-<0.001", never "-6e-05"."""
    assert numbers.margin(0.0123) == "+0.012" and numbers.margin(-0.0108) == "-0.011"
    assert numbers.margin(-6.502866744995117e-05) == "-<0.001"  # the default MiniLM card's first question
    assert numbers.margin(1.65e-05) == "+<0.001"
    assert numbers.margin(0.0) == "0.000 (tie)" and numbers.margin(-4e-7) == "0.000 (tie)"  # within TIE_TOL
    assert numbers.margin(-4e-7, tol=0.0) == "-<0.001"  # Pairs: only an exact 0 is a tie (strict comparisons)
    assert numbers.margin(math.nan) == "n/a"
    assert not any("e-" in numbers.margin(x) for x in (3e-5, -3e-7, 1e-12, -9.9e-4))


def test_scores_that_are_not_tied_never_print_the_same():
    # 0.992350 and 0.992285 both read 0.992 at 3 decimals but rank 1 and 2: they get the decimals that part them
    scores = [0.870948, 0.99235, 0.992285, 0.983335]
    d = numbers.tie_digits(scores)
    shown = [numbers.score(s, d) for s in scores]
    assert d > 3 and len(set(shown)) == 4 and numbers.shared_ranks(scores) == ["4", "1", "2", "3"]
    assert numbers.tie_digits([1.0, 1.0, 0.75]) == 3  # tied scores may print the same: they share a rank
    assert numbers.tie_digits([0.5, 0.5 + 1e-9]) == 3  # tied within the tolerance MCQ credit uses
    assert numbers.tie_digits([0.9, 0.8, 0.7]) == 3 and numbers.tie_digits([]) == 3


def test_attention_margins_are_shown_as_every_other_margin():
    """Issue 30, item 7: the Attention tab and the Walkthrough's step 6 show margins as ``numbers.signed`` does (3
    decimals; one significant digit when it would round to zero), not with 4 decimals of their own."""
    import re

    from bindlab.ui import attention as tab
    from bindlab.ui import walkthrough as w

    line = w.attention_md(
        {
            "model": "minilm",
            "peak": 0.01234,
            "last": 0.00004,
            "first": -0.0021,
            "n_captions": 3,
            "peak_layer": 1,
            "layers": [0, 1, 2],
        }
    )
    assert "-0.002</span> at layer 0" in line
    assert ">+0.012</span> at layer 1" in line and ">+4e-05</span> at the last layer" in line
    summary = tab._summary(
        {
            "model": "minilm",
            "sets": {
                "all": {"margin_mean": [0.00412, 0.0307, None], "n_captions": 5, "n_skipped": 0, "layers": [0, 1, 2]}
            },
            "direction": "later_to_earlier",
        }
    )
    assert "peak margin +0.031 at layer 1" in summary
    assert not re.search(r"\d\.\d{4}", line + summary)
