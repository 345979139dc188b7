"""scripts/lit_reference.py: the references' subspace confinement (--span-dims, --span-of)."""

from __future__ import annotations

import numpy as np

from tests.script_module import load_script


def _script():
    return load_script("lit_reference")


def test_confined_points_keep_their_top_directions_and_lose_the_rest():
    """Points that vary strongly along e0, e1 and weakly along e2: confined to their top 2 principal directions they
    lose exactly the e2 part (about their mean), and come back unit-norm; a full basis changes nothing."""
    mod = _script()
    rng = np.random.default_rng(0)
    pts = np.zeros((50, 4, 5))
    pts[..., 0] = 3 * rng.normal(size=(50, 4))
    pts[..., 1] = 2 * rng.normal(size=(50, 4))
    pts[..., 2] = 0.1 * rng.normal(size=(50, 4))
    pts[..., 3] = 1.0  # a common offset, kept by the centre
    basis = mod.principal_basis(pts, 2)
    assert basis.shape == (5, 2)
    np.testing.assert_allclose(np.abs(basis[2:, :]).max(), 0, atol=1e-2)  # e2 (weak), e3 (constant), e4 (none) out
    center = pts.reshape(-1, 5).mean(0)
    out = mod.confined(pts, basis, center)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1, atol=1e-12)
    raw = center + (pts - center) @ basis @ basis.T
    np.testing.assert_allclose(out, raw / np.linalg.norm(raw, axis=-1, keepdims=True))
    assert np.abs(raw[..., 2] - center[2]).max() < 0.05 and np.allclose(raw[..., 3], 1.0)
    unit = pts / np.linalg.norm(pts, axis=-1, keepdims=True)
    np.testing.assert_allclose(mod.confined(pts, np.eye(5)), unit, atol=1e-12)
