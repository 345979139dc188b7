"""Metrics against naive references and sklearn."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from bindlab.eval.metrics import average_precision, bootstrap_ci, mcq_credit, recall_at_k


def naive_credit(row, answer, tol=1e-6):
    top = max(row)
    tied = [k for k, s in enumerate(row) if s >= top - tol]
    return 1 / len(tied) if answer in tied else 0.0


def test_mcq_credit_matches_naive_loop():
    rng = np.random.default_rng(0)
    scores = np.round(rng.random((500, 4)), 1)  # coarse values: many ties
    answer = rng.integers(0, 4, 500)
    got = mcq_credit(scores, answer)
    want = [naive_credit(r, a) for r, a in zip(scores, answer, strict=False)]
    np.testing.assert_allclose(got, want)


def test_mcq_credit_tie_cases():
    assert mcq_credit(np.array([[0.5, 0.5, 0.5, 0.5]]), np.array([2]))[0] == pytest.approx(0.25)
    assert mcq_credit(np.array([[0.9, 0.9, 0.9, 0.1]]), np.array([0]))[0] == pytest.approx(1 / 3)
    assert mcq_credit(np.array([[0.9, 0.9 - 5e-7, 0.1, 0.1]]), np.array([1]))[0] == pytest.approx(0.5)  # within 1e-6
    assert mcq_credit(np.array([[0.9, 0.8, 0.1, 0.1]]), np.array([1]))[0] == 0
    assert mcq_credit(np.array([[np.nan, 0.8, 0.1, 0.1]]), np.array([1]))[0] == 0  # NaN never counts as correct


@pytest.mark.parametrize("ties", [False, True])
def test_average_precision_equals_sklearn(ties):
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(2, 60))
        s = rng.integers(0, 4, size=(5, n)).astype(float) if ties else rng.normal(size=(5, n))
        p = rng.random((5, n)) < 0.25
        p[:, int(rng.integers(0, n))] = True
        got = average_precision(s, p)
        want = [average_precision_score(p[i], s[i]) for i in range(5)]
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_average_precision_without_positives_is_nan():
    assert np.isnan(average_precision(np.array([[0.1, 0.2]]), np.array([[False, False]]))[0])


def naive_expected_recall(scores, positives, k):
    """Average over all orderings consistent with the scores (ties broken every possible way)."""
    n = len(scores)
    hits, total = 0, 0
    for perm in itertools.permutations(range(n)):
        ordered = sorted(range(n), key=lambda i: (-scores[i], perm.index(i)))
        hits += any(positives[i] for i in ordered[:k])
        total += 1
    return hits / total


def test_recall_at_k_matches_all_tie_breaks():
    rng = np.random.default_rng(2)
    for _ in range(30):
        s = rng.integers(0, 3, size=6).astype(float)
        p = rng.random(6) < 0.3
        for k in (1, 2, 5):
            got = recall_at_k(s[None], p[None], k)[0]
            assert got == pytest.approx(naive_expected_recall(s, p, k))


def test_bootstrap_ci_brackets_the_mean():
    v = np.random.default_rng(0).random(200)
    lo, hi = bootstrap_ci(v)
    assert lo < v.mean() < hi
    glo, ghi = bootstrap_ci(v, groups=np.arange(200) // 10)
    assert glo < v.mean() < ghi
    assert all(math.isnan(x) for x in bootstrap_ci(np.array([np.nan])))
