"""Known-answer checks of the statistics over training seeds: the two-level bootstrap, Holm, the drift null."""

from __future__ import annotations

import numpy as np
import pytest

from bindlab.eval.metrics import (
    drift_permutation_test,
    hierarchical_bootstrap,
    hierarchical_bootstrap_gap,
    holm,
    seed_verdict,
)


def test_holm_known_answer():
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = .02, .03, .06, .04 -> monotone .02, .03, .06, .06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    out = holm([0.02, float("nan"), 0.01])  # NaN stays NaN and does not count in m
    assert np.isnan(out[1]) and out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.02)


def test_holm_never_below_raw():
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 0.2, 30)
    assert (np.array(holm(p)) >= p - 1e-15).all()


def test_constant_deltas_give_a_point_interval():
    res = hierarchical_bootstrap([np.full(50, 0.2)] * 5, n_boot=500)
    assert res["mean"] == pytest.approx(0.2) and res["ci95"] == pytest.approx([0.2, 0.2])
    assert res["seed_sd"] == pytest.approx(0.0) and res["verdict"] == "holds"
    assert res["p"] == pytest.approx(2 / 501)


def test_seed_variance_widens_the_interval():
    """Items agree within each seed, seeds disagree: an item-only bootstrap of the seed-averaged change would be
    narrow; the two-level one must cover the seeds' spread and so include 0."""
    seeds = [
        np.full(400, v) + np.random.default_rng(i).normal(0, 0.01, 400)
        for i, v in enumerate([0.3, -0.2, 0.25, -0.25, 0.1])
    ]
    res = hierarchical_bootstrap(seeds, n_boot=2000)
    assert res["ci95"][0] < 0 < res["ci95"][1]
    assert res["verdict"] == "n.s." and res["p"] > 0.05
    assert res["per_seed"] == pytest.approx([s.mean() for s in seeds])
    assert res["seed_sd"] == pytest.approx(np.std([s.mean() for s in seeds], ddof=1))


def test_interval_matches_the_two_level_variance():
    """With many seeds the interval's width follows Var(mean) = (sd_seed^2 + sd_item^2 / n) / S."""
    rng = np.random.default_rng(3)
    s, n, sd_seed, sd_item = 20, 50, 0.1, 0.5
    seeds = [rng.normal(rng.normal(0, sd_seed), sd_item, n) for _ in range(s)]
    res = hierarchical_bootstrap(seeds, n_boot=3000, seed=1)
    emp_sd = np.sqrt((np.var([x.mean() for x in seeds], ddof=1)) / s)  # seed means already carry the item noise
    width = res["ci95"][1] - res["ci95"][0]
    assert width == pytest.approx(2 * 1.96 * emp_sd, rel=0.15)


def test_verdicts():
    assert seed_verdict(0.1, 0.3, [0.2, 0.1, 0.3]) == "holds"
    assert seed_verdict(0.01, 0.3, [0.2, -0.01, 0.3]) == "mixed"  # interval excludes 0, a seed disagrees
    assert seed_verdict(-0.3, -0.1, [-0.2, -0.1]) == "holds"
    assert seed_verdict(-0.1, 0.3, [0.2, 0.1]) == "n.s."
    assert seed_verdict(0.1, 0.3, [0.2]) == "one seed"
    assert hierarchical_bootstrap([np.ones(10)])["verdict"] == "one seed"


def test_bad_input():
    with pytest.raises(ValueError, match="at least one seed"):
        hierarchical_bootstrap([])
    with pytest.raises(ValueError, match="at least one item"):
        hierarchical_bootstrap([np.ones(3), np.array([np.nan])])


def test_gap_between_two_unpaired_sets_per_seed():
    """Seen minus never-shown hits within each seed (each seed its own held-out items, of another size): 0/1 hits
    with a real gap hold; the same rate in both sets is n.s.; seed variance in the gap widens the interval."""
    rng = np.random.default_rng(5)
    real = [((rng.random(850) < 0.8).astype(float), (rng.random(110) < 0.6).astype(float)) for _ in range(5)]
    res = hierarchical_bootstrap_gap(real, n_boot=2000)
    assert res["per_seed"] == pytest.approx([a.mean() - b.mean() for a, b in real])
    assert res["verdict"] == "holds" and 0 < res["ci95"][0] < res["mean"] < res["ci95"][1]
    none = [((rng.random(850) < 0.7).astype(float), (rng.random(110) < 0.7).astype(float)) for _ in range(5)]
    assert hierarchical_bootstrap_gap(none, n_boot=2000)["ci95"][0] < 0
    # a gap whose sign flips between seeds: every set's items agree, the seeds do not
    flips = [(np.full(300, 0.5 + g), np.full(40, 0.5)) for g in (0.2, -0.15, 0.2, -0.2, 0.1)]
    flipped = hierarchical_bootstrap_gap(flips, n_boot=2000)
    assert flipped["verdict"] == "n.s." and flipped["ci95"][0] < 0 < flipped["ci95"][1]
    with pytest.raises(ValueError, match="at least one item"):
        hierarchical_bootstrap_gap([(np.ones(3), np.array([]))])


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_drift_far_from_every_seed_is_the_most_extreme_label():
    rng = np.random.default_rng(0)
    centre = _unit(rng.normal(size=(30, 16)))
    tuned = [_unit(centre + 0.05 * rng.normal(size=centre.shape)) for _ in range(5)]
    base = _unit(centre + 1.0 * rng.normal(size=centre.shape))
    res = drift_permutation_test([base, *tuned])
    assert res["p"] == pytest.approx(1 / 2001) and res["n_labels"] == 6  # no relabelling reaches the base's
    assert res["drift"] > res["seed_drift"] > 0


def test_drift_no_larger_than_reseeding_is_not_significant():
    """The base is just one more draw around the same centre: a positive drift, yet no evidence against the null
    (a one-sided test against 0 would call it moved)."""
    rng = np.random.default_rng(0)
    centre = _unit(rng.normal(size=(30, 16)))
    draws = [_unit(centre + 0.05 * rng.normal(size=centre.shape)) for _ in range(6)]
    res = drift_permutation_test(draws, base=0)
    assert res["drift"] > 0
    assert res["p"] > 0.05


def test_drift_p_is_one_when_all_models_agree():
    x = _unit(np.random.default_rng(2).normal(size=(10, 8)))
    assert drift_permutation_test([x, x, x])["p"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="two tuned seeds"):
        drift_permutation_test([x, x])


def test_drift_null_is_uniform_under_exchangeability():
    """Every model a draw around the same centre: over many such worlds, p <= .05 about 5 % of the time."""
    hits = 0
    for w in range(100):
        rng = np.random.default_rng(w)
        centre = _unit(rng.normal(size=(15, 8)))
        draws = [_unit(centre + 0.1 * rng.normal(size=centre.shape)) for _ in range(4)]
        hits += drift_permutation_test(draws, n_perm=200, seed=w)["p"] <= 0.05
    assert hits <= 12
