"""Global alignment maps: identity start reproduces native numbers exactly, training lowers the calibration loss,
validation picks the checkpoint, bad scopes are named."""

from __future__ import annotations

import numpy as np
import pytest

from bindlab.analysis import alignment as AL
from bindlab.analysis.grounding import GroundingState

SIZES = (3, 4, 3)  # shape, hue, pattern
D = 16


def _world(seed: int = 0, n_per_cell: int = 2):
    """Captions are random unit vectors; an image is a fixed rotation of its caption plus noise (so A can learn)."""
    rng = np.random.default_rng(seed)
    captions = rng.standard_normal((2, *SIZES, D)).astype(np.float32)
    captions /= np.linalg.norm(captions, axis=-1, keepdims=True)
    rot, _ = np.linalg.qr(rng.standard_normal((D, D)))
    cells = np.array(
        [
            (s, h, p)
            for s in range(SIZES[0])
            for h in range(SIZES[1])
            for p in range(SIZES[2])
            for _ in range(n_per_cell)
        ]
    )

    def images(noise_seed: int) -> np.ndarray:
        r = np.random.default_rng(noise_seed)
        x = captions[0][tuple(cells.T)] @ rot.T + 0.3 * r.standard_normal((len(cells), D))
        return x.astype(np.float32)

    queries = {
        f: captions[0].mean(axis=tuple(j for j in range(3) if j != i)).reshape(SIZES[i], D)
        for i, f in enumerate(AL.FACTOR_ORDER)
    }
    return captions, cells, images(1), images(2), images(3), queries


def test_training_lowers_the_calibration_loss_and_validation_picks_a_map():
    captions, cells, cal, val, _, queries = _world()
    fit = AL.fit_global_map(
        cal, cells, val, cells, captions, queries, "shared", epochs=8, batch_size=32, lrs=(3e-3, 1e-2)
    )
    assert set(fit.loss) == {"0.003", "0.01"}
    for curve in fit.loss.values():
        assert len(curve) == 9 and curve[-1] < curve[0] - 0.1  # the loss falls from the identity's
    assert len(fit.candidates) == 1 + 2 * 8 and fit.candidates[0]["lr"] is None
    best = max(c["macro_map"] for c in fit.candidates)
    assert fit.validation["macro_map"] == best >= fit.identity_validation["macro_map"]
    assert fit.validation["macro_map"] > fit.identity_validation["macro_map"]  # a rotation is learnable
    assert fit.epoch > 0 and not np.allclose(fit.matrix, np.eye(D))
    assert fit.factors == AL.FACTOR_ORDER and fit.to_dict()["distance_from_identity"] > 0


def test_factor_map_uses_only_its_factor():
    captions, cells, cal, val, _, queries = _world()
    fit = AL.fit_global_map(cal, cells, val, cells, captions, queries, "factor", "hue", epochs=2, lrs=(1e-3,))
    assert fit.factors == ("hue",)
    assert fit.identity_validation == AL.validation_score(val, cells, queries, ("hue",))
    neg = AL._negatives(cells[:1], SIZES, [1])
    assert neg.shape == (1, SIZES[1] - 1, 3) and (neg[0, :, [0, 2]] == cells[0, [0, 2]][:, None]).all()
    assert sorted(neg[0, :, 1].tolist()) == sorted(set(range(SIZES[1])) - {cells[0, 1]})


def test_identity_map_reproduces_the_native_numbers_exactly():
    captions, cells, cal, val, test, queries = _world()
    fit = AL.fit_global_map(cal, cells, val, cells, captions, queries, "shared", epochs=0)
    assert fit.lr is None and fit.epoch == 0 and (fit.matrix == np.eye(D)).all()
    emb = np.concatenate([cal, val, test])
    split = np.repeat([0, 1, 2], len(cells))
    for i, f in enumerate(AL.FACTOR_ORDER):
        labels = np.tile(cells[:, i], 3)
        args = (labels,)
        masks = (split == 0, split == 1, split == 2)
        native = GroundingState(emb, *args, queries[f], *masks, values=np.arange(SIZES[i]))
        aligned = GroundingState(emb, *args, fit.apply(queries[f]), *masks, values=np.arange(SIZES[i]))
        assert native.select_alpha().value == aligned.select_alpha().value
        for alpha in (0.0, 0.7, 3.0):
            assert native.at_alpha(alpha) == aligned.at_alpha(alpha)


def test_bad_scope_and_factor_are_named():
    captions, cells, cal, val, _, queries = _world()
    with pytest.raises(ValueError, match="scope"):
        AL.fit_global_map(cal, cells, val, cells, captions, queries, "global")
    with pytest.raises(ValueError, match="factor map"):
        AL.fit_global_map(cal, cells, val, cells, captions, queries, "factor", "texture")


def test_caption_texts_match_the_table_layout():
    vocab = {"shape": ["cube", "star"], "hue": ["red", "teal"], "pattern": ["plain", "striped"]}
    texts = AL.caption_texts(vocab)
    emb = np.arange(len(texts), dtype=np.float32)[:, None] * np.ones((1, 3), np.float32)
    table = AL.caption_table(emb, vocab)
    assert table.shape == (2, 2, 2, 2, 3)
    assert texts[int(table[1, 1, 0, 1, 0])] == "a red star with a striped surface"
    assert texts[int(table[0, 0, 1, 0, 0])] == "a plain teal cube object"
