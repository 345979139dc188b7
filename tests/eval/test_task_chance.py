"""Chance from each benchmark kind's shape (metrics.task_chance) against a brute-force count over every order of the
item's scores, and every module that states a chance level reading it from there."""

from __future__ import annotations

from fractions import Fraction
from itertools import permutations

import pytest

from bindlab.eval.metrics import TASK_SHAPES, choice_chance, task_chance


def _share(n_scores: int, passes) -> Fraction:
    """The share of the ``n_scores``! equally likely orders of distinct random scores for which ``passes`` holds."""
    orders = list(permutations(range(n_scores)))
    return Fraction(sum(bool(passes(o)) for o in orders), len(orders))


# each kind's pass rule, written from the benchmark's definition (not from its shape)
RULES = {
    "triplet": (2, lambda s: s[0] > s[1]),  # s(q, positive) > s(q, negative)
    "choice": (2, lambda s: s[0] > s[1]),  # caption above its negative
    "sugarcrepe_pp_itt": (3, lambda s: s[0] > s[2] and s[1] > s[2]),  # both paraphrases above the negative
    "sugarcrepe_pp_tot": (3, lambda s: s[0] > s[1] and s[0] > s[2]),  # sim(p1, p2) above sim(p1, n), sim(p2, n)
    # 2x2 item, s = (c0i0, c0i1, c1i0, c1i1): the score of caption c with image i
    "pairs_i2t": (4, lambda s: s[0] > s[2] and s[3] > s[1]),  # each image prefers its own caption
    "pairs_t2i": (4, lambda s: s[0] > s[1] and s[3] > s[2]),  # each caption prefers its own image
    "pairs_group": (4, lambda s: s[0] > s[2] and s[3] > s[1] and s[0] > s[1] and s[3] > s[2]),
}


@pytest.mark.parametrize("kind", sorted(TASK_SHAPES))
def test_every_kind_matches_the_brute_force_count(kind):
    n, rule = RULES[kind]
    assert Fraction(task_chance(kind)).limit_denominator(1000) == _share(n, rule)


@pytest.mark.parametrize("k", [2, 3, 4, 5, 40])
def test_one_of_k(k):
    assert task_chance("one_of", k) == pytest.approx(1 / k)
    if k <= 5:
        assert Fraction(task_chance("one_of", k)).limit_denominator(1000) == _share(k, lambda s: s[0] == max(s))


def test_named_levels():
    assert task_chance("sugarcrepe_pp_itt") == pytest.approx(1 / 3) == choice_chance(2, 1)
    assert task_chance("pairs_group") == pytest.approx(1 / 6)
    assert task_chance("pairs_i2t") == task_chance("pairs_t2i") == pytest.approx(1 / 4)
    assert task_chance("triplet") == pytest.approx(1 / 2)


def test_bad_kinds():
    with pytest.raises(ValueError, match="unknown task kind"):
        task_chance("nope")
    with pytest.raises(ValueError, match="two candidates"):
        task_chance("one_of", 1)


def test_the_modules_read_it():
    from bindlab.eval.pairs import CHANCE
    from bindlab.present.compare_figures import PAIRS_CHANCE_GROUP
    from bindlab.tasks import get_task
    from bindlab.tasks.composet import metric_chance

    want = {k: task_chance(f"pairs_{k}") for k in ("i2t", "t2i", "group")}
    assert CHANCE == {k: metric_chance(k) for k in want} == want and PAIRS_CHANCE_GROUP == want["group"]
    assert get_task("pairs").metadata.chance == pytest.approx(want["group"])
