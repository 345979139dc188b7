"""Browse's question card says what its numbers are: tied scores (as MCQ credit ties them) share a rank, scores that
are not tied never print the same, a margin reads as far as it decides the verdict, and the accuracy-by-N rows carry
the intervals the chart draws."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bindlab.eval.metrics import TIE_TOL, bootstrap_ci, mcq_credit
from bindlab.studies import browse as study


def test_tie_ranks_follow_the_credit_s_tie_rule():
    assert study.tie_ranks([0.75, 1.0, 1.0, 1.0]) == ([4, 1, 1, 1], [False, True, True, True])
    assert study.tie_ranks([0.3, 0.5, 0.5 + TIE_TOL / 2, 0.1]) == ([3, 1, 1, 4], [False, True, True, False])
    # 6.5e-05 apart is not a tie: the credit gives the lower one nothing, and the ranks say 1 and 2
    scores = [0.870948, 0.99235, 0.992285, 0.983335]
    assert study.tie_ranks(scores) == ([4, 1, 2, 3], [False] * 4)
    assert mcq_credit(np.array([scores]), np.array([2]))[0] == 0.0
    # the credit of a tie for first is 1/t over the t tied: ranks and credit agree
    assert mcq_credit(np.array([[0.75, 1.0, 1.0, 1.0]]), np.array([2]))[0] == pytest.approx(1 / 3)


def _view(scores, answer, credit):
    cands = [
        {
            "role": r,
            "text": f"a red {o} and a blue {o}",
            "bindings": [("red", o)],
            "kept": [True],
            "score": s,
            "is_answer": k == answer,
            "image": None,
        }
        for k, (r, o, s) in enumerate(
            zip(("replace", "obj_swap", "preserve", "attr_swap"), ("cube", "ball", "cone", "ring"), scores, strict=True)
        )
    ]
    others = [s for k, s in enumerate(scores) if k != answer]
    return {
        "id": "q1",
        "n_objects": 2,
        "subset": "independent",
        "credit": credit,
        "margin": scores[answer] - max(others),
        "query": {"text": "a red cone", "bindings": [("red", "cone")], "image": None},
        "candidates": cands,
    }


def _card_scores(html: str) -> list[tuple[str, str]]:
    return re.findall(r"score (\d\.\d+) · rank (=?\d)", html)


def test_a_tie_reads_as_a_tie_with_its_credit():
    from bindlab.ui import browse as tab

    html = tab.question_html(_view([0.75, 1.0, 1.0, 1.0], answer=2, credit=1 / 3))
    assert _card_scores(html) == [("0.750", "4"), ("1.000", "=1"), ("1.000", "=1"), ("1.000", "=1")]
    assert html.count("rank =1 (tie)") == 3
    assert ">0.000 (tie)</b>" in html and "tied for first with 2 others: credit 1/3 = 0.333" in html
    assert "share rank k" in html  # the card says what "=k" means


def test_a_near_tie_is_not_called_a_tie_and_never_reads_in_e_notation():
    from bindlab.ui import browse as tab

    view = _view([0.870948, 0.99235, 0.992285, 0.983335], answer=2, credit=0.0)  # Browse's first MiniLM question
    html = tab.question_html(view)
    shown = _card_scores(html)
    assert [r for _, r in shown] == ["4", "1", "2", "3"]
    assert len({s for s, _ in shown}) == 4  # ranks 1 and 2 do not stand beside the same printed score
    text = re.sub(r"<[^>]+>", "", html)  # what the card reads (its attributes keep the full value)
    assert "e-0" not in text and "(tie)" not in text
    assert ">-&lt;0.001</b>" in html and "not a tie" in html and "→ wrong" in html
    assert float(re.search(r'data-margin="([^"]+)"', html).group(1)) == pytest.approx(-6.5e-05)
    side = tab.side_by_side_html(view, view, "a", "b")
    assert "e-0" not in re.sub(r"<[^>]+>", "", side) and "-&lt;0.001 (wrong)" in side


def test_accuracy_rows_carry_each_point_s_bootstrap_interval(small_benchmark):
    path, _ = small_benchmark
    s = study.scored_set(path, "bow", "tt")
    rows = study.accuracy_table(s)
    assert rows and all(r["ci95_low"] <= r["accuracy"] <= r["ci95_high"] for r in rows)
    for r in rows[:3] + rows[-2:]:
        credit = [
            float(c)
            for q, c in zip(s.questions, s.credit, strict=True)
            if q.n_objects == r["n_objects"] and r["subset"] in ("all", q.subset)
        ]
        assert len(credit) == r["n"]
        assert [r["ci95_low"], r["ci95_high"]] == list(bootstrap_ci(np.array(credit)))
