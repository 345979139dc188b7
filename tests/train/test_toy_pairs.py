"""Pair twins for toy training (bindlab.train.toy.pairs): attribute edits only, no held-out pair, captions the toy's
word table can tell apart, images that differ only where the edit is, and batches that carry them."""

from __future__ import annotations

import random
import re
from collections import Counter

import numpy as np

from bindlab.encoders.toy.tokenizer import WordTokenizer
from bindlab.train.toy import data as toy_data
from bindlab.train.toy import pairs as toy_pairs
from bindlab.train.toy.data import heldout_combinations

HELD = frozenset(heldout_combinations(0.15, seed=0))


def test_specs_are_attribute_edits_without_heldout_pairs_and_deterministic():
    specs = toy_pairs.pair_twin_specs(120, 64, seed=0, heldout=HELD)
    assert len(specs) == 120
    kinds = Counter(edit.edit_type for _, edit, _ in specs)
    assert set(kinds) <= set(toy_pairs.PAIR_EDIT_TYPES) and len(kinds) >= 6
    for scene, edit, _ in specs:
        for objects in (scene.objects, edit.foil_objects):
            assert not toy_pairs._shows_heldout(objects, HELD)
            assert not {(o.shape, o.value) for o in objects if o is not None} & HELD
    again = toy_pairs.pair_twin_specs(120, 64, seed=0, heldout=HELD)
    assert [(s.seed, e.description, c) for s, e, c in specs] == [(s.seed, e.description, c) for s, e, c in again]
    other = toy_pairs.pair_twin_specs(120, 64, seed=1, heldout=HELD)
    assert {s.seed for s, _, _ in specs}.isdisjoint({s.seed for s, _, _ in other})


def test_render_seeds_stay_clear_of_the_pairs_generator():
    # the Pairs sets render scene i of seed s with seed s * 100_003 + i; the twins start at SEED_OFFSET
    seeds = {s.seed for s, _, _ in toy_pairs.pair_twin_specs(50, 64, seed=0)}
    generator = {s * 100_003 + i for s in range(10) for i in range(5000)}
    assert seeds.isdisjoint(generator)


def test_both_captions_of_a_pair_read_differently_to_the_toy():
    tok = WordTokenizer.build()
    for _, _, (base, foil) in toy_pairs.pair_twin_specs(80, 64, seed=0, heldout=HELD):
        for level in toy_pairs.LEVELS:
            assert tok.batch([base[level]]).tolist() != tok.batch([foil[level]]).tolist(), (base[level], foil[level])
            assert re.sub(r"^\w+", "", base[level]) or base[level]  # a sentence, not empty


def test_rendered_pair_differs_only_inside_the_edit(tmp_path):
    twins = toy_pairs.load_pair_twins(12, 64, seed=0, cache_dir=tmp_path, workers=1, heldout=HELD)
    assert twins.images.shape == (12, 2, 64, 64, 3) and twins.images.dtype == np.uint8
    diff = np.abs(twins.images[:, 0].astype(int) - twins.images[:, 1].astype(int)).sum(-1) > 0
    share = diff.reshape(12, -1).mean(1)
    assert (share > 0).all() and (share < 0.2).all()  # something changed, and only a small part of the scene
    cached = toy_pairs.load_pair_twins(12, 64, seed=0, cache_dir=tmp_path, workers=1, heldout=HELD)
    np.testing.assert_array_equal(cached.images, twins.images)


def test_batch_appends_base_and_foil_with_one_shift_and_flip_per_pair(tmp_path):
    pool = toy_data.load_pool(32, 64, seed=0, cache_dir=tmp_path, workers=1, heldout=HELD)
    twins = toy_pairs.load_pair_twins(10, 64, seed=0, cache_dir=tmp_path, workers=1, heldout=HELD)
    tok = WordTokenizer.build()
    plain_px, plain_ids = toy_data.make_batch(pool, tok, step=2, batch_size=16, seed=0, hard_share=0.0)
    px, ids = toy_data.make_batch(
        pool, tok, step=2, batch_size=16, seed=0, hard_share=0.0, pairs=twins, pair_share=0.25
    )
    assert px.shape[0] == ids.shape[0] == 16 + 2 * 4
    np.testing.assert_array_equal(px[:16], plain_px)  # the scenes are unchanged by adding pairs
    w = plain_ids.shape[1]  # the batch pads to its longest caption: the pairs' are longer
    np.testing.assert_array_equal(ids[:16, :w], plain_ids)
    assert not ids[:16, w:].any()
    for k in range(4):
        base, foil = px[16 + 2 * k], px[17 + 2 * k]
        changed = np.abs(base - foil).sum(0) > 0
        assert 0 < changed.mean() < 0.2  # same shift and flip: only the edited object differs
        assert ids[16 + 2 * k].tolist() != ids[17 + 2 * k].tolist()


def test_pair_batch_walks_seeded_epochs():
    twins = toy_pairs.PairTwins(
        np.arange(5 * 2 * 2 * 2 * 3, dtype=np.uint8).reshape(5, 2, 2, 2, 3),
        [
            (
                {"short": f"b{i}", "medium": f"b{i}", "long": f"b{i}"},
                {"short": f"f{i}", "medium": f"f{i}", "long": f"f{i}"},
            )
            for i in range(5)
        ],
        ["modify_color"] * 5,
    )
    seen = []
    for step in range(5):  # 5 steps x 2 pairs = 2 epochs of 5 pairs
        imgs, caps = toy_pairs.pair_batch(twins, 2, step, seed=0, rng=random.Random(step))
        assert imgs.shape == (4, 2, 2, 3)
        assert [c[0] for c in caps] == ["b", "f", "b", "f"] and caps[0][1:] == caps[1][1:]
        seen += [int(c[1:]) for c in caps[::2]]
    assert sorted(seen[:5]) == sorted(seen[5:]) == list(range(5))
