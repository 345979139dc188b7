"""The ranked phrase metric (bindlab.train.phrase_metric): its decision counts and that it learns what it claims."""

from __future__ import annotations

import numpy as np
import pytest


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_twin_ranking_counts_each_decision_both_ways_round():
    """One pair, one caption each: ti asks caption -> its own point vs the other's, it asks point -> its own caption
    vs the other's; both ways round, so four decisions split two per direction."""
    from bindlab.train.phrase_metric import twin_ranking

    p, q = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
    cap_p = _unit(np.array([[[0.9, 0.1]]]))  # close to p: every decision right
    cap_q = _unit(np.array([[[0.2, 0.8]]]))
    assert twin_ranking(p, q, cap_p, cap_q) == {"ti": 1.0, "it": 1.0}
    # the twin's caption points at the scene, even more than the scene's own: ti is right for the scene's caption
    # only; it is wrong both ways (p scores the twin's caption higher than its own, q the scene's)
    cap_q2 = _unit(np.array([[[0.95, 0.05]]]))
    assert twin_ranking(p, q, cap_p, cap_q2) == {"ti": 0.5, "it": 0.0}


def test_twin_terms_rebuild_the_four_margins_as_binding_plus_or_minus_a_bias():
    """ti margins = binding +- image bias, it margins = binding +- text bias, for any unit rows (torch and numpy
    agree); a pair whose image difference only adds the common words is decided by its bias alone."""
    import torch

    from bindlab.train.phrase_metric import twin_margins, twin_terms

    rng = np.random.default_rng(3)
    ys, yt, ts, tt = (_unit(rng.normal(size=(5, 7))) for _ in range(4))
    m = twin_margins(*(torch.from_numpy(a) for a in (ys, yt, ts, tt))).numpy()
    t = twin_terms(ys, yt, ts, tt)
    np.testing.assert_allclose(m[0], t["binding"] + t["image_bias"])
    np.testing.assert_allclose(m[1], t["binding"] - t["image_bias"])
    np.testing.assert_allclose(m[2], t["binding"] + t["text_bias"])
    np.testing.assert_allclose(m[3], t["binding"] - t["text_bias"])
    words = _unit(ts + tt)
    biased = twin_terms(_unit(yt + 0.3 * words), yt, ts, tt)
    assert np.all(biased["image_bias"] > 0) and np.all(np.abs(biased["binding"]) < biased["image_bias"])


def test_ranked_metric_learns_a_hidden_map_and_reports_the_kept_out_pairs():
    """Captions made by a hidden linear map of the phrase vectors: the identity metric ranks the kept-out pairs
    poorly, the learnt one well; seeded, so two runs agree; NaN rows (no twin) are skipped."""
    from bindlab.train.phrase_metric import ranked_metric

    rng = np.random.default_rng(0)
    n, d = 400, 6
    hidden = rng.normal(size=(d, d))
    x = rng.normal(size=(n, d))
    xt = x + 0.6 * rng.normal(size=(n, d))  # twins: near their scene, as binding swaps are
    xt[:10] = np.nan
    cap = _unit(np.stack([x @ hidden + 0.05 * rng.normal(size=(n, d)) for _ in range(2)], axis=1))
    cap_t = _unit(np.stack([np.nan_to_num(xt) @ hidden + 0.05 * rng.normal(size=(n, d)) for _ in range(2)], axis=1))
    out = ranked_metric(x, xt, cap, cap_t, np.eye(d), steps=300, seed=1, lr=0.03)
    assert out.pairs == n - 10 and out.metric.shape == (d, d) and out.steps == 300
    assert out.after["ti"] > out.before["ti"] + 0.1 and out.after["ti"] > 0.9
    assert out.after["it"] > 0.9
    again = ranked_metric(x, xt, cap, cap_t, np.eye(d), steps=300, seed=1, lr=0.03)
    np.testing.assert_allclose(again.metric, out.metric)
    assert set(out.record()) == {"steps", "seconds", "pairs", "validation_before", "validation_after"}


def test_ranked_metric_refuses_what_it_cannot_fit():
    from bindlab.train.phrase_metric import ranked_metric

    x = np.ones((3, 2))
    cap = np.ones((3, 1, 2)) / np.sqrt(2)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        ranked_metric(x, x, cap, cap, np.eye(2), steps=0)
    with pytest.raises(ValueError, match="at least 2 scenes with a binding twin"):
        ranked_metric(x, np.full((3, 2), np.nan), cap, cap, np.eye(2), steps=5)
