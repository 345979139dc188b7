"""Held-out shape x attribute combinations and binding twins of the toy models' training data (issue 16)."""

from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest

from bindlab.data.render import RENDER_VOCAB, render_scene
from bindlab.train.toy import data as toy_data
from bindlab.train.toy.data import heldout_combinations, pool_scenes, specs, twin_scene

HELD = frozenset(heldout_combinations(0.15, seed=0))


def test_heldout_combinations_are_fixed_balanced_and_leave_every_word_in_training():
    assert heldout_combinations(0.15, seed=0) == sorted(HELD)  # a pure function
    assert len(HELD) == round(0.15 * 28 * 36) == 151
    per_shape = Counter(s for s, _ in HELD)
    per_attr = Counter(a for _, a in HELD)
    assert set(per_shape.values()) <= {5, 6} and len(per_shape) == 28
    assert set(per_attr.values()) <= {4, 5} and len(per_attr) == 36
    assert heldout_combinations(0.0) == []
    assert heldout_combinations(0.15, seed=1) != sorted(HELD)
    with pytest.raises(ValueError, match="between 0 and 0.5"):
        heldout_combinations(0.9)


def test_no_training_scene_holds_a_heldout_pair_and_no_holdout_keeps_the_old_pool():
    scenes, _ = pool_scenes(3000, seed=0, heldout=HELD)
    pairs = {(s, a) for sc in scenes for s, a, _ in sc}
    assert not pairs & HELD
    assert len(pairs) > 0.8 * (1008 - len(HELD))  # the rest is covered
    legacy = [toy_data.sample_scene(random.Random("toy-pool:0")) for _ in range(1)]
    assert pool_scenes(1, seed=0)[0] == legacy  # heldout=() draws exactly as before


def test_twin_changes_only_bindings_and_never_makes_a_heldout_pair():
    rng = random.Random(0)
    scenes, _ = pool_scenes(400, seed=0, heldout=HELD)
    kinds = Counter()
    for sc in scenes:
        twin = twin_scene(sc, rng, HELD)
        if twin is None:
            continue
        assert [s for s, _, _ in twin] == [s for s, _, _ in sc]  # same shapes, same order (same layout slots)
        changed = [i for i, (a, b) in enumerate(zip(sc, twin, strict=True)) if a[1] != b[1]]
        assert 1 <= len(changed) <= 2
        kinds["swap" if len(changed) == 2 else "replace"] += 1
        if len(changed) == 2:
            i, j = changed
            assert (twin[i][1], twin[j][1]) == (sc[j][1], sc[i][1])
        assert not {(s, a) for s, a, _ in twin} & HELD
        assert all(toy_data._category(sc[i][1]) != "pattern" for i in changed)
    assert kinds["swap"] > 100 and kinds["replace"] > 50


def test_twin_renders_with_identical_layout_outside_the_changed_objects():
    scene = [("cube", "red", "red"), ("star", "blue", "blue"), ("cone", "wooden", "light-brown wooden")]
    twin = [("cube", "blue", "blue"), ("star", "red", "red"), ("cone", "wooden", "light-brown wooden")]
    a, masks = render_scene(specs(scene), size=64, seed=11, return_masks=True)
    b, masks_b = render_scene(specs(twin), size=64, seed=11, return_masks=True)
    for m, mb in zip(masks, masks_b, strict=True):
        np.testing.assert_array_equal(m, mb)  # geometry identical
    a, b = np.asarray(a, dtype=int), np.asarray(b, dtype=int)
    changed = masks[0] | masks[1]
    assert np.abs(a - b)[changed].mean() > 20  # the swapped colours show
    np.testing.assert_array_equal(a[masks[2]], b[masks[2]])  # the untouched object is pixel-identical


def test_shuffled_twin_layout_moves_the_objects_to_other_slots_and_keeps_the_twin_scene(tmp_path):
    scenes, _ = pool_scenes(200, seed=0, heldout=HELD)
    moved = toy_data.shuffled_slots(scenes, seed=0)
    assert moved == toy_data.shuffled_slots(scenes, seed=0)  # a pure function
    for sc, m in zip(scenes, moved, strict=True):
        assert sorted(m) == sorted(sc)  # the same objects, bindings intact
        assert (m != sc) == (len(sc) > 1)  # every scene of 2+ objects in another order; one object stays
    same = toy_data.load_pool(48, 64, seed=0, cache_dir=tmp_path, workers=1, heldout=HELD, twins=True)
    shuffled = toy_data.load_pool(
        48, 64, seed=0, cache_dir=tmp_path, workers=1, heldout=HELD, twins=True, twin_layout="shuffled"
    )
    assert {i: t for i, (t, _) in shuffled.twins.items()} == {i: t for i, (t, _) in same.twins.items()}
    for i, (twin, img) in same.twins.items():
        moved_img = shuffled.twins[i][1]
        if len(twin) == 1:
            np.testing.assert_array_equal(img, moved_img)
        else:
            assert (np.abs(img.astype(int) - moved_img.astype(int)).sum(-1) > 0).mean() > 0.01  # objects moved
    with pytest.raises(ValueError, match="unknown twin layout"):
        toy_data.load_pool(48, 64, seed=0, cache_dir=tmp_path, workers=1, twins=True, twin_layout="mirrored")


def test_batch_with_twins_appends_each_twin_with_its_scenes_shift_flip_and_wording(tmp_path):
    from bindlab.encoders.toy.tokenizer import WordTokenizer

    pool = toy_data.load_pool(64, 64, seed=0, cache_dir=tmp_path, workers=1, heldout=HELD, twins=True)
    assert pool.twins and all(i in range(64) for i in pool.twins)
    tok = WordTokenizer.build()
    plain_px, plain_ids = toy_data.make_batch(pool, tok, step=3, batch_size=16, seed=0, hard_share=0.0)
    px, ids = toy_data.make_batch(pool, tok, step=3, batch_size=16, seed=0, hard_share=0.0, twin_share=0.5)
    assert px.shape[0] == ids.shape[0] == 16 + 8
    np.testing.assert_array_equal(px[:16], plain_px)  # the scenes themselves are unchanged by adding twins
    np.testing.assert_array_equal(ids[:16], plain_ids)
    walked = toy_data.batch_indices(64, 16, 3, 0)
    with_twin = [int(i) for i in walked if int(i) in pool.twins][:8]
    for k, i in enumerate(with_twin):
        pos = int(np.flatnonzero(walked == i)[0])
        scene_words, twin_words = set(ids[pos].tolist()), set(ids[16 + k].tolist())
        assert ids[pos].tolist() != ids[16 + k].tolist() or pool.scenes[i] == pool.twins[i][0]
        assert len(scene_words ^ twin_words) <= 4  # same template and order; only attribute words move
        diff = np.abs(px[pos] - px[16 + k]).sum(0) > 0
        assert 0 < diff.mean() < 0.5  # the same layout: only the changed objects' pixels differ


def test_training_records_the_heldout_list_and_eval_splits_seen_unseen(tmp_path, monkeypatch):
    from bindlab.studies.toy import ToyEvalRequest, ToyTrainRequest, run_toy_eval, run_toy_train

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    tiny = {"width": 16, "layers": 1, "text_layers": 1, "heads": 2, "image_size": 64, "embed_dim": 16}
    out = tmp_path / "m"
    run_toy_train(
        ToyTrainRequest(
            arch="clip",
            out=str(out),
            steps=2,
            batch_size=8,
            pool_size=32,
            model=tiny,
            holdout_fraction=0.15,
            progress=False,
        )
    )
    record = json.loads((out / "training.json").read_text())
    assert {tuple(c) for c in record["heldout_combinations"]} == HELD
    twin = tmp_path / "t"
    run_toy_train(
        ToyTrainRequest(
            arch="clip",
            out=str(twin),
            steps=2,
            batch_size=8,
            pool_size=32,
            model=tiny,
            holdout_fraction=0.15,
            twin_share=0.5,
            init_from=str(out),
            progress=False,
        )
    )
    res = run_toy_eval(ToyEvalRequest(model=f"toy:{twin}", sample=200, per_size=0, card=True))
    split = res.summary["single_object"]["by_combination"]
    assert split["seen"]["n"] + split["unseen"]["n"] == 200 and split["unseen"]["n"] > 10
    # the per-item rows (eval toy --per-item) are the hits behind every split's top-1, item for item
    assert len(res.rows) == 200 and "items" not in res.summary["single_object"]
    for kind, fig in split.items():
        mine = [r for r in res.rows if r["combination"] == kind or (kind == "unseen" and r["combination"] != "seen")]
        assert len(mine) == fig["n"], kind
        for key in ("t2i", "i2t"):
            assert np.mean([r[key] for r in mine]) == pytest.approx(fig[f"{key}_top1"]), (kind, key)
    card = (twin / "README.md").read_text()
    assert "Seen vs unseen combinations" in card and "151 of the 1,008" in card
    assert "binding hard negatives" in card and "Finetuned from" in card and "--twin-share 0.5" in card


def test_train_request_refuses_a_bad_init_folder_or_share(tmp_path):
    from bindlab.train.toy.train import TrainConfig

    with pytest.raises(ValueError, match="not a toy model folder"):
        TrainConfig(init_from=str(tmp_path))
    with pytest.raises(ValueError, match="twin_share"):
        TrainConfig(twin_share=2)
    with pytest.raises(ValueError, match="between 0 and 0.5"):
        TrainConfig(holdout_fraction=-0.1)


def test_heldout_pairs_are_renderable_words():
    shapes, attrs = set(RENDER_VOCAB.objects), {a.name for a in RENDER_VOCAB.attributes}
    assert all(s in shapes and a in attrs for s, a in HELD)


def test_scenes_of_up_to_five_objects_keep_the_default_pool_and_are_audited():
    """``--max-objects 5``: a SABER-style MCQ asks about 2-5 objects; the default pool (1-4) is unchanged."""
    from bindlab.train.toy.audit import _objects_of_pool

    four, _ = pool_scenes(2000, seed=0, heldout=HELD, clean=True)
    assert pool_scenes(2000, seed=0, heldout=HELD, clean=True, max_objects=4)[0] == four
    five, _ = pool_scenes(2000, seed=0, heldout=HELD, clean=True, max_objects=5)
    sizes = Counter(len(sc) for sc in five)
    assert max(len(sc) for sc in four) == 4 and set(sizes) == {1, 2, 3, 4, 5}
    for n, share in toy_data.OBJECT_WEIGHTS[5].items():
        assert abs(sizes[n] / 2000 - share) < 0.04
    assert not {(s, a) for sc in five for s, a, _ in sc} & HELD
    assert all(len({s for s, _, _ in sc}) == len(sc) == len({a for _, a, _ in sc}) for sc in five)
    audited = _objects_of_pool({"arch": "lit", "pool_size": 2000, "seed": 0, "max_objects": 5}, HELD)
    assert len(audited) == sum(len(sc) for sc in five)  # the audit scans the run's own pool
    with pytest.raises(ValueError, match="at most"):
        pool_scenes(10, seed=0, max_objects=6)


def test_a_pool_drawn_at_128_px_is_what_the_encoder_reads_from_a_128_px_file(tmp_path):
    """``--render-size 128``: the pool is drawn as an MCQ set's images are and shrunk as ToyEncoder.pixels shrinks
    them, so a training image equals the file's pixels the model is later scored on (to one grey level)."""
    from PIL import Image

    from bindlab.encoders.toy.backend import _square

    pool = toy_data.load_pool(
        12, 64, seed=0, cache_dir=tmp_path, workers=1, heldout=HELD, twins=True, max_objects=5, render_size=128
    )
    native = toy_data.load_pool(12, 64, seed=0, cache_dir=tmp_path, workers=1, heldout=HELD, max_objects=5)
    seeds = pool_scenes(12, seed=0, heldout=HELD, max_objects=5)[1]
    for i in range(12):
        path = tmp_path / f"{i}.png"
        render_scene(specs(pool.scenes[i]), size=128, seed=seeds[i]).save(path)
        read = _square(Image.open(path).convert("RGB"), 64).transpose(1, 2, 0)
        assert np.abs(pool.images[i] / 255.0 - read).max() <= 1 / 255 + 1e-6
    assert not np.array_equal(pool.images, native.images)  # drawn small, the scenes differ in their pixels
    names = sorted(p.name for p in tmp_path.glob("*.npy"))
    assert any("64px-from128" in n for n in names) and any(n.startswith("pool-12-64px-seed0") for n in names)
    assert all(img.shape == (64, 64, 3) for _, img in pool.twins.values())
    with pytest.raises(ValueError, match="below the model's"):
        toy_data.load_pool(12, 64, seed=0, cache_dir=tmp_path, workers=1, render_size=48)

    # --render-share: a seeded share drawn large, the rest at the model's side; a twin is drawn as its scene is
    sizes = toy_data.pool_render_sizes(12, 0, 128, 0.5)
    assert sizes == toy_data.pool_render_sizes(12, 0, 128, 0.5) and set(sizes) == {0, 128}
    assert abs(toy_data.pool_render_sizes(4000, 0, 128, 0.5).count(128) / 4000 - 0.5) < 0.03
    native_twins = toy_data.load_pool(
        12, 64, seed=0, cache_dir=tmp_path, workers=1, heldout=HELD, twins=True, max_objects=5
    )
    mixed = toy_data.load_pool(
        12,
        64,
        seed=0,
        cache_dir=tmp_path,
        workers=1,
        heldout=HELD,
        twins=True,
        max_objects=5,
        render_size=128,
        render_share=0.5,
    )
    for i, r in enumerate(sizes):
        np.testing.assert_array_equal(mixed.images[i], (pool if r else native).images[i])
        if i in mixed.twins:
            np.testing.assert_array_equal(mixed.twins[i][1], (pool if r else native_twins).twins[i][1])
    with pytest.raises(ValueError, match="between 0 and 1"):
        toy_data.pool_render_sizes(12, 0, 128, 1.5)


def test_train_config_records_and_refuses_the_pool_options():
    from bindlab.studies.toy import train_command
    from bindlab.train.toy.train import TrainConfig

    cfg = TrainConfig(arch="lit", max_objects=5, render_size=128)
    t = {
        "arch": "lit",
        "steps": 10,
        "seed": 0,
        "batch_size": 8,
        "lr": 0.001,
        "pool_size": 64,
        "max_objects": cfg.max_objects,
        "render_size": cfg.render_size,
    }
    assert "--max-objects 5 --render-size 128" in train_command(t)
    assert "--max-objects" not in train_command({**t, "max_objects": 4, "render_size": 0})
    assert "--render-size 128 --render-share 0.5" in train_command({**t, "render_share": 0.5})
    with pytest.raises(ValueError, match="give --render-size too"):
        TrainConfig(arch="clip", render_share=0.5)
    with pytest.raises(ValueError, match="max_objects must be one of"):
        TrainConfig(arch="clip", max_objects=6)
    with pytest.raises(ValueError, match="render_size must be"):
        TrainConfig(arch="clip", render_size=4000)
