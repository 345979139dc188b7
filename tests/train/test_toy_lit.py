"""``--arch lit`` (toy:lit-minilm): real-English cached captions, a clean hold-out, a frozen MiniLM text tower."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from bindlab.encoders.base import load_encoder

TINY = ["--width", "16", "--layers", "1", "--heads", "2", "--image-size", "32", "--patch-size", "8"]


def _train(out, steps: int, extra: list[str] = ()) -> int:
    from bindlab.cli import main

    try:
        return (
            main(
                [
                    "train",
                    "toy",
                    "--arch",
                    "lit",
                    "--text",
                    "minilm",
                    "--out",
                    str(out),
                    "--steps",
                    str(steps),
                    "--batch-size",
                    "8",
                    "--pool-size",
                    "24",
                    "--captions-per-scene",
                    "2",
                    "--holdout-combos",
                    "0.15",
                    "--eval-sample",
                    "0",
                    "--no-progress",
                    *TINY,
                    *extra,
                ]
            )
            or 0
        )
    except SystemExit as e:
        return int(e.code or 0)


def test_lit_trains_end_to_end_and_loads_with_minilm_texts(tmp_path, monkeypatch, minilm):
    from bindlab.train.toy.audit import audit_toy

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "lit"
    assert _train(out, 3) == 0
    files = {p.name for p in out.iterdir()}
    assert {"model.safetensors", "config.json", "training.json", "captions.npz"} <= files
    assert "vocab.json" not in files  # only the image tower: texts are MiniLM's
    record = json.loads((out / "training.json").read_text())
    assert record["finished"] and record["captions"]["captions"] == 48 and record["captions"]["text_model"] == "minilm"
    with np.load(out / "captions.npz") as z:
        assert z["embeddings"].shape[1] == 384 and z["index"].shape == (24, 2)
    enc = load_encoder(f"toy:{out}")
    texts = ["A red cube and a blue sphere.", "the kite is in a blue neon glow", "a photo of an orange fish"]
    np.testing.assert_allclose(enc.embed_texts(texts), minilm.embed_texts(texts), atol=1e-6)
    rng = np.random.default_rng(0)
    img = enc.embed_images([rng.integers(0, 256, (40, 40, 3), dtype=np.uint8) for _ in range(2)])
    assert img.shape == (2, 384) and np.allclose(np.linalg.norm(img, axis=1), 1, atol=1e-5)
    audit = audit_toy(out)
    assert audit["direct"] == 0 and audit["colour_slot"]["pairs"] == 0 and audit["clean_pairs"] == audit["heldout"]
    assert audit["captions"]["foreign_words"] == 0
    card = _card(out)
    assert "locked" in card and "48 captions" in card and "tt is the frozen text tower alone" in card
    assert "--arch lit --text minilm" in card and "never shown" in card and "N = 2–5" in card
    # the caption cache is reused by a longer run of the same folder (no second embedding)
    assert _train(out, 4) == 0
    assert json.loads((out / "training.json").read_text())["resumed_from"] == 3


def test_lit_trains_towards_discriminant_targets(tmp_path, monkeypatch, minilm):
    """--lit-target discriminant: twin captions are cached for the targets even without twins in the batch, the
    loss is the cosine distance to the targets (it falls), and the record and the card's command say so."""

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "lit-d"
    assert _train(out, 40, ["--lit-target", "discriminant", "--target-twin-weight", "0.4", "--lr", "0.005"]) == 0
    record = json.loads((out / "training.json").read_text())
    assert record["captions"]["target"] == "discriminant" and record["captions"]["target_twin_weight"] == 0.4
    assert (out / "twin_captions.npz").is_file()
    command = _target_run_command(out, record, minilm, monkeypatch)
    assert "--lit-target discriminant --target-twin-weight 0.4 --target-shrink 0.03" in command


def _target_run_command(out, record, minilm, monkeypatch) -> str:
    """A lit run towards fixed targets: its 1 - cos loss fell, its texts are MiniLM's; the card's command."""
    from bindlab.studies.toy import ToyEvalRequest, _write_card

    losses = [loss for _, loss in record["losses"]]
    assert 0 <= losses[-1] < losses[0] <= 2  # 1 - cos, falling
    enc = load_encoder(f"toy:{out}")
    np.testing.assert_allclose(enc.embed_texts(["a red cube"]), minilm.embed_texts(["a red cube"]), atol=1e-6)
    monkeypatch.setattr("bindlab.train.toy.card.write_card", lambda folder, model, result, command, notes: command)
    return _write_card(out, ToyEvalRequest(model=f"toy:{out}"), {})


def test_twin_difference_loss_pairs_each_twin_row_with_its_scene():
    import torch

    from bindlab.train.toy.train import twin_difference_loss

    target = torch.nn.functional.normalize(torch.randn(5, 4, generator=torch.Generator().manual_seed(0)), dim=-1)
    scenes, twin = np.array([0, 1, 2, 0, 2]), np.array([0, 0, 0, 1, 1], bool)
    assert float(twin_difference_loss(target * 3, target, scenes, twin)) == pytest.approx(0, abs=1e-6)
    swapped = target[[0, 1, 2, 4, 3]]  # rows 3 and 4 paired with the wrong scenes' twins
    assert float(twin_difference_loss(swapped, target, scenes, twin)) > 0.05
    with pytest.raises(ValueError, match="--twin-share"):
        from bindlab.train.toy.train import TrainConfig

        TrainConfig(arch="lit", lit_target="discriminant", target_pair_weight=1.0)


def _card(out) -> str:
    from bindlab.train.toy.card import card_text

    training = json.loads((out / "training.json").read_text())
    score = {"n": 4, "t2i_top1": 0.5, "i2t_top1": 0.5, "i2t_attribute": 0.5, "i2t_shape": 0.5}
    by_n = {str(n): 0.4 for n in range(2, 11)}
    chance = {str(n): 0.25 for n in range(2, 11)}
    evaluation = {
        "single_object": {
            **score,
            "chance": {"top1": 0.25, "attribute": 0.5, "shape": 0.5},
            "i2t_attribute_by_category": {"colour": 1.0},
            "by_combination": {"seen": score, "unseen": score, "unseen_clean": score},
        },
        "mcq": {
            "per_size": 2,
            "sizes": list(range(2, 11)),
            "seed": 0,
            "render_size": 128,
            "pairings": {
                p: {"accuracy": 0.4, "by_n": by_n, "chance": 0.25, "chance_by_n": chance}
                for p in ("tt", "ti", "it", "ii")
            },
            "small_n": {p: 0.4 for p in ("tt", "ti", "it", "ii")},
            "tt_text_model": {"model": "minilm", "accuracy": 0.4, "equal": True},
        },
    }
    return card_text("toy:lit-minilm", training, evaluation, "python -m bindlab train toy --arch lit --text minilm")


def test_lit_captions_are_grammatical_and_use_all_four_templates():
    from bindlab.data.templates import grammar_problems
    from bindlab.train.toy.data import heldout_combinations, pool_scenes
    from bindlab.train.toy.lit import lit_captions

    held = frozenset(heldout_combinations(0.15, 0))
    scenes, _ = pool_scenes(400, 0, held, clean=True)
    caps = [c for cs in lit_captions(scenes, 0) for c in cs]
    assert len(caps) == 1600 and not [c for c in caps if grammar_problems(c)]
    text = " ".join(c.lower() for c in caps)
    assert " that is " in text and " is " in text and " with a " in text and " colour" in text  # all four forms
    assert "an orange" in text or "an outlined" in text or "an icy" in text  # a/an agreement is exercised
    assert lit_captions(scenes[:5], 0) == lit_captions(scenes[:5], 0)  # a pure function


def test_twin_captions_make_the_scene_captions_choices_and_twins_stay_clean():
    from bindlab.train.toy.data import exposes, heldout_combinations, pool_scenes, pool_twins
    from bindlab.train.toy.lit import lit_captions

    held = frozenset(heldout_combinations(0.15, 0))
    scenes, _ = pool_scenes(600, 0, held, clean=True)
    twins = pool_twins(scenes, 0, held, clean=True)
    assert sum(t is not None for t in twins) > 500
    assert not [o for t in twins if t for s, a, f in t for o in [(s, a)] if o in held or exposes(s, a, f, held)]
    caps, twin_caps = lit_captions(scenes, 0), lit_captions(scenes, 0, twins=twins)
    assert lit_captions(scenes, 0) == caps  # the scenes' own captions do not change when twins are asked for
    same = differ = ending = 0
    for sc, tw, cs, ts in zip(scenes, twins, caps, twin_caps, strict=True):
        if tw is None:
            assert ts == []
            continue
        assert len(ts) == len(cs)
        for c, t in zip(cs, ts, strict=True):
            assert all(s in t for s, _, _ in sc)  # the same shapes, named
            same, differ = same + (c == t), differ + (c != t)
            ending += c.endswith(".") == t.endswith(".")
    assert differ > 3 * same  # most twins' captions say the changed binding
    # the same wording choices (here: the full stop) except where the twin's attribute needs another template
    assert ending > 0.9 * (same + differ)


def test_lit_batch_brings_twins_with_their_own_cached_captions(tmp_path, monkeypatch, minilm):
    from bindlab.train.toy.data import heldout_combinations, load_pool
    from bindlab.train.toy.lit import caption_cache, lit_batch

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    held = frozenset(heldout_combinations(0.15, 0))
    pool = load_pool(16, 32, 0, workers=1, heldout=held, twins=True, clean=True)
    twins = pool.twin_scenes()
    cache = caption_cache(pool.scenes, 0, "minilm", tmp_path / "c.npz", per_scene=2)
    tcache = caption_cache(pool.scenes, 0, "minilm", tmp_path / "t.npz", per_scene=2, twins=twins)
    assert ((tcache.index >= 0) == np.asarray([[t is not None] * 2 for t in twins])).all()
    plain = lit_batch(pool, cache, 3, 8, 0, 0.5)
    pixels, emb, caps, scenes, twin = lit_batch(pool, cache, 3, 8, 0, 0.5, tcache, 0.5)
    np.testing.assert_array_equal(pixels[:8], plain.pixels)  # twins are appended; the scenes' part is unchanged
    m = len(caps) - 8
    assert 1 <= m <= 4 and pixels.shape[0] == emb.shape[0] == scenes.shape[0] == 8 + m
    np.testing.assert_array_equal(scenes[:8], plain.scenes)
    assert not twin[:8].any() and twin[8:].all() and set(scenes[8:]) <= set(scenes[:8]) <= set(range(16))
    for k in range(8):  # each row's caption is one of its scene's own cached captions
        assert caps[k] in cache.index[scenes[k]]
    for k in range(m):  # each appended caption is a twin caption, embedded by MiniLM
        text = tcache.texts[caps[8 + k]]
        np.testing.assert_allclose(emb[8 + k], minilm.embed_texts([text])[0], atol=1e-5)
    assert lit_batch(pool, cache, 3, 8, 0, 0.5, tcache, 0.5)[2] == caps  # a pure function of the step


def test_clean_pool_shows_no_heldout_pair_through_a_colour_slot():
    from bindlab.train.toy.data import exposes, heldout_combinations, pool_scenes

    held = frozenset(heldout_combinations(0.15, 0))
    plain, _ = pool_scenes(3000, 0, held)
    clean, _ = pool_scenes(3000, 0, held, clean=True)
    assert sum(exposes(s, a, f, held) for sc in plain for s, a, f in sc) > 0  # the old pool does show some
    assert sum(exposes(s, a, f, held) for sc in clean for s, a, f in sc) == 0
    assert sum((s, a) in held for sc in clean for s, a, _ in sc) == 0
    assert exposes("fish", "glowing", "orange glowing", frozenset({("fish", "orange")}))


def test_lit_config_validates():
    from bindlab.train.toy.train import TrainConfig

    assert TrainConfig(arch="lit").text == "minilm"
    assert TrainConfig(arch="lit", twin_share=0.5).twin_share == 0.5  # binding twins: cached captions too
    with pytest.raises(ValueError, match="pair"):
        TrainConfig(arch="lit", pair_share=0.5)
    with pytest.raises(ValueError, match="--text"):
        TrainConfig(arch="clip", text="minilm")
    assert TrainConfig(arch="lit", lit_target="discriminant").target_twin_weight == 0.5
    with pytest.raises(ValueError, match="lit target"):
        TrainConfig(arch="lit", lit_target="mean")
    with pytest.raises(ValueError, match="2 captions"):
        TrainConfig(arch="lit", lit_target="discriminant", captions_per_scene=1)
    with pytest.raises(ValueError, match="twin_weight"):
        TrainConfig(arch="lit", lit_target="discriminant", target_twin_weight=1.0)
    with pytest.raises(ValueError, match="--lit-target"):
        TrainConfig(arch="clip", lit_target="discriminant")
    assert TrainConfig(arch="lit", lit_target="phrases").target_bag_weight == 0.5
    assert TrainConfig(arch="lit", lit_target="phrases", twin_share=0.5, target_contrastive=1.0).twin_share == 0.5
    with pytest.raises(ValueError, match="--target-contrastive"):
        TrainConfig(arch="lit", target_contrastive=1.0)  # captions training is contrastive already
    with pytest.raises(ValueError, match="target_contrastive"):
        TrainConfig(arch="lit", lit_target="phrases", target_contrastive=-1.0)
    with pytest.raises(ValueError, match="bag_weight"):
        TrainConfig(arch="lit", lit_target="phrases", target_bag_weight=-0.1)


def _cache(emb: np.ndarray, per_scene: int):
    from bindlab.train.toy.lit import CaptionCache

    n = len(emb) // per_scene
    return CaptionCache(
        [f"t{i}" for i in range(len(emb))],
        emb.astype(np.float32),
        np.arange(n * per_scene, dtype=np.int32).reshape(n, per_scene),
        0.0,
        "synthetic",
    )


def test_discriminant_targets_are_the_whitened_scene_mean_against_the_twin():
    from bindlab.train.toy.lit import discriminant_targets, scene_means, within_scene_whitener

    rng = np.random.default_rng(0)
    n, k, d = 40, 4, 6
    emb = rng.normal(size=(n * k, d))
    twin_emb = rng.normal(size=(n * k, d))
    cache, twins = _cache(emb, k), _cache(twin_emb, k)
    twins.index[5] = -1  # scene 5 has no twin
    p = emb.reshape(n, k, d).mean(1)
    dev = (emb.reshape(n, k, d) - p[:, None]).reshape(-1, d)
    cov = dev.T @ dev / (n * (k - 1))
    w = np.linalg.inv(cov + 0.1 * np.trace(cov) / d * np.eye(d))
    np.testing.assert_allclose(within_scene_whitener(cache, 0.1), w, rtol=1e-5)
    np.testing.assert_allclose(scene_means(cache), p, rtol=1e-5)
    assert np.isnan(scene_means(twins)[5]).all()
    scene, twin = discriminant_targets(cache, twins, 0.1, 0.5)
    mu = p.mean(0)
    nm = twin_emb.reshape(n, k, d).mean(1)
    want = ((p[0] - mu) - 0.5 * (nm[0] - mu)) @ w
    np.testing.assert_allclose(scene[0], want / np.linalg.norm(want), rtol=1e-4)
    want = ((nm[0] - mu) - 0.5 * (p[0] - mu)) @ w
    np.testing.assert_allclose(twin[0], want / np.linalg.norm(want), rtol=1e-4)
    want = (p[5] - mu) @ w  # no twin: the whitened mean alone
    np.testing.assert_allclose(scene[5], want / np.linalg.norm(want), rtol=1e-4)
    assert np.isnan(twin[5]).all() and np.allclose(np.linalg.norm(scene, axis=1), 1, atol=1e-5)


def test_discriminant_targets_separate_twins_where_the_plain_mean_does_not():
    """Captions vary a lot along a wording direction and little along a binding direction that tells a scene from
    its twin: the plain caption mean scores a twin's caption almost as high as the scene's own; the discriminant
    target tells them apart."""
    from bindlab.train.toy.lit import discriminant_targets

    rng = np.random.default_rng(1)
    n, k, d = 200, 4, 8
    content = rng.normal(size=(n, d)) * np.r_[0.0, 0.0, np.ones(d - 2)]  # what the scene shows, shared with its twin
    binding = np.where(rng.random(n) < 0.5, 1.0, -1.0) * 0.05  # the twin has the opposite binding

    def captions(sign):
        e = np.repeat(content, k, 0)
        e[:, 0] = np.repeat(sign * binding, k) + rng.normal(scale=0.02, size=n * k)  # binding: small, clean
        e[:, 1] = rng.normal(scale=3.0, size=n * k)  # wording: large, scene-independent
        return e

    own, other = captions(1.0), captions(-1.0)
    scene, _ = discriminant_targets(_cache(own, k), _cache(other, k), 1e-4, 0.5)
    plain = own.reshape(n, k, d).mean(1)
    plain /= np.linalg.norm(plain, axis=1, keepdims=True)
    fresh_own, fresh_twin = captions(1.0), captions(-1.0)  # new captions (queries) of each scene and its twin

    def right(target):
        return np.mean(np.einsum("nd,nd->n", fresh_own[::k], target) > np.einsum("nd,nd->n", fresh_twin[::k], target))

    assert right(scene) > 0.95 and right(plain) < 0.75


def test_shipped_lit_minilm_loads_offline_with_minilm_texts(minilm):
    from bindlab.encoders.toy.backend import shipped_folder

    folder = shipped_folder("lit-minilm")
    if not (folder / "model.safetensors").is_file():
        pytest.skip("toy:lit-minilm is not shipped in this checkout")
    assert (folder / "model.safetensors").stat().st_size < 5 * 2**20 and not (folder / "vocab.json").exists()
    enc = load_encoder("toy:lit-minilm")
    texts = [f"a {random.Random(i).choice(['red', 'striped', 'wooden'])} cube" for i in range(3)] + ["A cat."]
    np.testing.assert_allclose(enc.embed_texts(texts), minilm.embed_texts(texts), atol=1e-6)
    assert enc.fingerprint.startswith("toy:lit-minilm|")


def test_imitation_reference_scores_tt_as_the_text_tower_and_is_deterministic(tmp_path, minilm):
    """The imitation reference's tt is the text tower's own MCQ credit; its image pairings are a pure function."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber
    from bindlab.eval.mcq import evaluate_mcq
    from bindlab.train.toy.eval import imitation_reference

    questions = generate_saber(per_size=3, sizes=(2, 3), seed=0, vocab=RENDER_VOCAB)
    credit = imitation_reference(questions, minilm, k=2)
    assert set(credit) == {"tt", "ti", "it", "ii"} and all(c.shape == (6,) for c in credit.values())
    _, rows = evaluate_mcq(questions, tmp_path, minilm, ["tt"])
    np.testing.assert_array_equal(credit["tt"], [r["credit"] for r in rows])
    again = imitation_reference(questions, minilm, k=2)
    assert all((again[p] == credit[p]).all() for p in credit)


def test_discriminant_reference_keeps_the_text_tower_and_tells_a_scene_from_its_twins(minilm):
    """The discriminant reference's tt is the text tower's; its images tell a scene from its binding twins (ii) far
    above chance, where the plain caption mean (the imitation reference) barely does; a pure function."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber
    from bindlab.train.toy.eval import discriminant_reference, imitation_reference

    questions = generate_saber(per_size=10, sizes=(2, 3), seed=3, vocab=RENDER_VOCAB)
    sweep = discriminant_reference(questions, minilm, k=4, twins=2, pool_scenes=300, twin_weights=(0.0, 0.5))
    assert set(sweep) == {0.0, 0.5}
    credit = sweep[0.5]
    plain = imitation_reference(questions, minilm, k=4)
    np.testing.assert_array_equal(credit["tt"], plain["tt"])
    assert credit["ii"].mean() >= 0.45 and credit["ii"].mean() > plain["ii"].mean() + 0.15, (credit, plain)
    again = discriminant_reference(questions, minilm, k=4, twins=2, pool_scenes=300)[0.5]  # the default lam
    assert all((again[p] == credit[p]).all() for p in credit)


def _table(pairs, emb):
    from bindlab.train.toy.lit import PhraseTable

    return PhraseTable(list(pairs), np.asarray(emb, np.float32), 0.0)


def test_phrase_targets_are_the_whitened_phrase_sum_less_the_bag():
    from bindlab.train.toy.lit import phrase_targets

    rng = np.random.default_rng(2)
    pairs = [(s, a) for s in ("cube", "ball", "kite") for a in ("red", "blue", "green")]
    held = ("kite", "red")
    table = _table([p for p in pairs if p != held], rng.normal(size=(8, 5)))
    e = {p: table.embeddings[i].astype(np.float64) for i, p in enumerate(table.pairs)}
    mu = np.mean(list(e.values()), axis=0)
    w = np.diag(rng.uniform(0.5, 2.0, 5))
    one = [("cube", "red", "red")]
    two = [("cube", "red", "red"), ("ball", "blue", "blue")]
    three = [("cube", "blue", "blue"), ("kite", "green", "green"), ("ball", "red", "red")]  # (kite, red) held out
    got = phrase_targets([one, two, three], table, w, bag_weight=0.5)

    def unit(v):
        return v / np.linalg.norm(v)

    np.testing.assert_allclose(got[0], unit((0.5 * (e[("cube", "red")] - mu)) @ w), rtol=1e-4)
    x = e[("cube", "red")] + e[("ball", "blue")] - 2 * mu
    bag = sum(e[(s, a)] - mu for s in ("cube", "ball") for a in ("red", "blue")) / 2  # the mean over both bindings
    np.testing.assert_allclose(got[1], unit((x - 0.5 * bag) @ w), rtol=1e-4)
    x = e[("cube", "blue")] + e[("kite", "green")] + e[("ball", "red")] - 3 * mu
    cross = [(s, a) for s in ("cube", "kite", "ball") for a in ("blue", "green", "red") if (s, a) != held]
    bag = 3 / len(cross) * sum(e[p] - mu for p in cross)  # the held-out pair is nowhere in the target
    np.testing.assert_allclose(got[2], unit((x - 0.5 * bag) @ w), rtol=1e-4)
    with pytest.raises(KeyError):  # a training scene never shows a held-out pair
        phrase_targets([[("kite", "red", "red")]], table, w)
    with pytest.raises(ValueError, match="bag_weight"):
        phrase_targets([one], table, w, bag_weight=1.0)


def test_phrase_targets_tell_a_scene_from_its_binding_swap():
    """Two objects with their attributes swapped have the same bag, so their targets differ only by the phrases of
    their own pairs; the swap's target is far from the scene's, and a scene's target is nearest its own phrases."""
    from bindlab.train.toy.lit import phrase_targets

    rng = np.random.default_rng(3)
    pairs = [(s, a) for s in ("cube", "ball") for a in ("red", "blue")]
    table = _table(pairs, rng.normal(size=(4, 16)))
    scene = [("cube", "red", "red"), ("ball", "blue", "blue")]
    swap = [("cube", "blue", "blue"), ("ball", "red", "red")]
    a, b = phrase_targets([scene, swap], table, np.eye(16), bag_weight=0.5)
    assert a @ b < 0  # the shared bag is taken out: what is left is the binding
    own = table.embeddings[0] + table.embeddings[3] - 2 * table.embeddings.mean(0)
    other = table.embeddings[1] + table.embeddings[2] - 2 * table.embeddings.mean(0)
    assert own @ a > other @ a and other @ b > own @ b


def test_phrase_table_embeds_every_pair_but_the_heldout_ones(minilm):
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.train.toy.lit import phrase_table

    held = frozenset({("cube", "red"), ("key", "icy")})
    table = phrase_table("minilm", held)
    assert len(table.pairs) == len(RENDER_VOCAB.objects) * len(RENDER_VOCAB.attributes) - 2
    assert not held & set(table.pairs)
    i = table.index()[("key", "pink")]
    np.testing.assert_allclose(table.embeddings[i], minilm.embed_texts(["a pink key"])[0], atol=1e-6)


def test_lit_trains_towards_phrase_targets(tmp_path, monkeypatch, minilm):
    """--lit-target phrases: captions are cached only for the metric, the loss is the cosine distance to the phrase
    targets (it falls); with twins and the contrastive and twin-difference terms, the twins bring no captions of
    their own; the record, the card and its command say so."""
    from bindlab.studies.toy import ToyEvalRequest, _write_card

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "lit-p"
    assert _train(out, 40, ["--lit-target", "phrases", "--target-bag-weight", "0.4", "--lr", "0.005"]) == 0
    record = json.loads((out / "training.json").read_text())
    c = record["captions"]
    assert c["target"] == "phrases" and c["target_bag_weight"] == 0.4 and c["whitener_scenes"] == 24
    assert c["phrases"] == 1008 - len(record["heldout_combinations"])
    assert not (out / "twin_captions.npz").exists()
    command = _target_run_command(out, record, minilm, monkeypatch)
    assert "--lit-target phrases --target-bag-weight 0.4 --target-shrink 0.03" in command
    card = _card(out)
    assert "phrase targets, no caption sampling" in card and "named in every target phrase" in card
    assert "loss 1 - cosine between each image embedding and its scene's phrase target" in card

    twins = tmp_path / "lit-pt"
    assert (
        _train(
            twins,
            6,
            [
                "--lit-target",
                "phrases",
                "--twin-share",
                "0.5",
                "--target-contrastive",
                "1",
                "--target-pair-weight",
                "1",
            ],
        )
        == 0
    )
    c = json.loads((twins / "training.json").read_text())["captions"]
    assert c["target_contrastive"] == 1.0 and c["target_pair_weight"] == 1.0
    assert not (twins / "twin_captions.npz").exists()
    command = _write_card(twins, ToyEvalRequest(model=f"toy:{twins}"), {})
    assert "--twin-share 0.5" in command and "--target-pair-weight 1.0 --target-contrastive 1.0" in command

    # a second stage from the first: its record keeps the first's settings, its card reproduces both in turn
    stage2 = tmp_path / "lit-pt2"
    assert (
        _train(
            stage2,
            4,
            ["--lit-target", "phrases", "--twin-share", "0.5", "--target-pair-weight", "2", "--init-from", str(twins)],
        )
        == 0
    )
    record = json.loads((stage2 / "training.json").read_text())
    [first] = record["earlier_stages"]
    assert (
        first["steps"] == 6
        and first["train_config"]["target_contrastive"] == 1.0
        and not first["train_config"]["init_from"]
    )
    command = _write_card(stage2, ToyEvalRequest(model=f"toy:{stage2}"), {})
    one, two = command.split(" && ")
    assert "--out DIR1 --steps 6" in one and "--init-from" not in one and "--target-contrastive 1.0" in one
    assert "--out DIR2 --steps 4" in two and two.endswith(
        "--target-pair-weight 2.0 --width 16 --layers 1 --heads 2 --image-size 32 --patch-size 8 --init-from DIR1"
    )
    card = _card(stage2)
    assert "trained from scratch in 2 stages" in card and "**trained in 2 stages**" in card
    assert "stage 1 (6 steps at lr " in card and "contrastive 1, twin-difference weight 1" in card
    assert "stage 2 (4 steps" in card and "twin-difference weight 2, 24 scenes of 1–4 objects)" in card
    assert "(the same scene pool, seed and held-out combinations;" in card and "trained in under an hour" in card


def test_blend_targets_mix_unit_caption_means_with_phrase_targets():
    """A = 0 gives the phrase targets, A = 1 the unit caption means; in between a renormalised mix; NaN rows (no
    twin) stay NaN; A outside [0, 1] is refused."""
    from bindlab.train.toy.lit import blend_targets

    rng = np.random.default_rng(0)
    phrase = rng.normal(size=(3, 5))
    phrase /= np.linalg.norm(phrase, axis=1, keepdims=True)
    means = 3 * rng.normal(size=(3, 5))
    means[2] = np.nan
    np.testing.assert_allclose(blend_targets(phrase, means, 0.0)[:2], phrase[:2], atol=1e-6)
    unit = means[:2] / np.linalg.norm(means[:2], axis=1, keepdims=True)
    np.testing.assert_allclose(blend_targets(phrase, means, 1.0)[:2], unit, atol=1e-6)
    half = blend_targets(phrase, means, 0.5)
    mid = unit + phrase[:2]
    np.testing.assert_allclose(half[:2], mid / np.linalg.norm(mid, axis=1, keepdims=True), atol=1e-6)
    assert np.isnan(half[2]).all()
    with pytest.raises(ValueError, match="caption_weight"):
        blend_targets(phrase, means, 1.5)


def test_lit_phrase_targets_with_a_share_of_caption_mean(tmp_path, monkeypatch, minilm):
    """--target-caption-weight: the whole pool's captions and its twins' are embedded (the blend needs every scene's
    caption mean), the metric still comes from the first scenes, the record and the card's command say so; the
    option is refused without phrase targets."""
    from bindlab.studies.toy import ToyEvalRequest, _write_card
    from bindlab.train.toy.train import TrainConfig

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "lit-blend"
    assert (
        _train(
            out,
            6,
            [
                "--lit-target",
                "phrases",
                "--twin-share",
                "0.5",
                "--target-pair-weight",
                "1",
                "--target-caption-weight",
                "0.5",
                "--lr",
                "0.005",
                "--head-hidden",
                "24",
            ],
        )
        == 0
    )
    record = json.loads((out / "training.json").read_text())
    c = record["captions"]
    assert c["target"] == "phrases" and c["target_caption_weight"] == 0.5 and c["captions"] == 24 * 2
    assert c["twin_captions"] > 0 and (out / "twin_captions.npz").exists()
    assert np.isfinite(record["final_loss"])
    monkeypatch.setattr("bindlab.train.toy.card.write_card", lambda folder, model, result, command, notes: command)
    command = _write_card(out, ToyEvalRequest(model=f"toy:{out}"), {})
    assert "--target-pair-weight 1.0 --target-caption-weight 0.5" in command and "--head-hidden 24" in command
    assert json.loads((out / "config.json").read_text())["head_hidden"] == 24
    assert load_encoder(f"toy:{out}").embed_images([np.zeros((32, 32, 3), np.uint8)]).shape == (1, 384)
    card = _card(out)
    assert "with a share 0.5 of the caption mean" in card and "give each scene's caption mean" in card
    assert "per-patch MLP head (width 16 -> 24" in card
    assert "serve only to estimate W" not in card
    with pytest.raises(ValueError, match="--target-caption-weight is for --lit-target phrases"):
        TrainConfig(arch="lit", target_caption_weight=0.5)
    with pytest.raises(ValueError, match="target_caption_weight must be in"):
        TrainConfig(arch="lit", lit_target="phrases", target_caption_weight=2.0)


def test_lit_phrase_targets_in_a_ranked_metric(tmp_path, monkeypatch, minilm):
    """--target-rank-steps: the pool's twins and the whole pool's captions (and the twins') are embedded even
    without twins in the batch, the metric is fitted and scored on kept-out pairs, the record, the card and its
    command say so; the option is refused without phrase targets."""
    from bindlab.studies.toy import train_command
    from bindlab.train.toy.train import TrainConfig

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "lit-ranked"
    assert (
        _train(
            out,
            20,
            [
                "--lit-target",
                "phrases",
                "--target-bag-weight",
                "0",
                "--target-rank-steps",
                "20",
                "--twin-share",
                "0.5",
                "--twin-layout",
                "shuffled",
                "--image-rank-weight",
                "1",
                "--lr",
                "0.005",
            ],
        )
        == 0
    )
    record = json.loads((out / "training.json").read_text())
    c = record["captions"]
    assert c["captions"] == 24 * 2 and c["twin_captions"] > 0 and (out / "twin_captions.npz").exists()
    assert c["image_rank_weight"] == 1.0 and c["image_rank_scale"] == 30.0
    r = c["ranked_metric"]
    assert r["steps"] == 20 and 2 <= r["pairs"] <= 24
    assert set(r["validation_before"]) == set(r["validation_after"]) == {"ti", "it"}
    assert all(0 <= v <= 1 for v in (*r["validation_before"].values(), *r["validation_after"].values()))
    command = _target_run_command(out, record, minilm, monkeypatch)
    assert "--target-bag-weight 0.0 --target-shrink 0.03 --target-rank-steps 20 --image-rank-weight 1.0" in command
    assert "--image-rank-scale" not in command  # the default scale is left out; another one is written
    from bindlab.cli import build_parser
    from bindlab.train.phrase_metric import RANK_SCALE

    parsed = build_parser().parse_args(["train", "toy", "--arch", "lit", "--out", "x"])
    assert parsed.image_rank_scale == RANK_SCALE  # the CLI's default is the metric's scale
    assert "--image-rank-weight 1.0 --image-rank-scale 300.0" in train_command(
        {**record["train_config"], "image_rank_scale": 300.0}
    )
    assert "--twin-share 0.5 --twin-layout shuffled" in command and record["train_config"]["twin_layout"] == "shuffled"
    card = _card(out)
    assert "binding twins in shuffled slots" in card and "in another random order (`--twin-layout shuffled`" in card
    assert "W learnt by ranking** (`--target-rank-steps 20`" in card and "and fit the ranked metric:" in card
    assert "serve only to estimate W" not in card
    with pytest.raises(ValueError, match="--target-rank-steps is for --lit-target phrases"):
        TrainConfig(arch="lit", target_rank_steps=10)
    with pytest.raises(ValueError, match="target_rank_steps must be at least 0"):
        TrainConfig(arch="lit", lit_target="phrases", target_rank_steps=-1)
    with pytest.raises(ValueError, match="--image-rank-weight is for --lit-target phrases with twins"):
        TrainConfig(arch="lit", lit_target="phrases", image_rank_weight=1.0)
    assert "--image-margin-weight 2.0" in train_command({**record["train_config"], "image_margin_weight": 2.0})
    assert "--image-bias-weight 4.0" in train_command({**record["train_config"], "image_bias_weight": 4.0})
    with pytest.raises(ValueError, match="--image-bias-weight is for --lit-target phrases with twins"):
        TrainConfig(arch="lit", lit_target="phrases", image_bias_weight=1.0)
    with pytest.raises(ValueError, match="--image-margin-weight is for --lit-target phrases with twins"):
        TrainConfig(arch="lit", lit_target="phrases", image_margin_weight=1.0)
    margin = tmp_path / "lit-margin"  # the margin term trains (the pool's captions and twins come with it)
    assert _train(margin, 3, ["--lit-target", "phrases", "--twin-share", "0.5", "--image-margin-weight", "1"]) == 0
    trained = json.loads((margin / "training.json").read_text())
    assert trained["captions"]["image_margin_weight"] == 1.0 and (margin / "twin_captions.npz").exists()
    assert all(np.isfinite(loss) for _, loss in trained["losses"])
    with pytest.raises(ValueError, match="image_rank_scale must be positive"):
        TrainConfig(arch="lit", lit_target="phrases", twin_share=0.5, image_rank_weight=1.0, image_rank_scale=0)
    with pytest.raises(ValueError, match="unknown twin layout 'mirrored'"):
        TrainConfig(arch="lit", twin_layout="mirrored")


def test_image_rank_loss_pairs_each_twin_with_its_scene_and_their_captions():
    """Images that are their own captions rank every decision right (low loss); the same images with scene and twin
    exchanged rank every one wrong (high loss); the loss reads caption k of the pool scene of each twin row."""
    import torch

    from bindlab.train.toy.lit import CaptionCache
    from bindlab.train.toy.train import image_rank_loss

    rng = np.random.default_rng(0)
    cap = rng.normal(size=(3, 2, 6)).astype(np.float32)
    cap /= np.linalg.norm(cap, axis=-1, keepdims=True)
    tw = cap + 0.3 * rng.normal(size=cap.shape).astype(np.float32)
    tw /= np.linalg.norm(tw, axis=-1, keepdims=True)
    index = np.arange(6, dtype=np.int32).reshape(3, 2)
    captions = CaptionCache([str(i) for i in range(6)], cap.reshape(6, 6), index, 0.0, "synthetic")
    twins = CaptionCache([str(i) for i in range(6)], tw.reshape(6, 6), index, 0.0, "synthetic")
    scenes, twin = np.array([2, 0, 2, 0]), np.array([False, False, True, True])  # rows 2, 3 twins of rows 0, 1
    step = 1  # k = (row + step) % 2: caption 1 for the first pair, caption 0 for the second
    right = torch.from_numpy(np.stack([cap[2, 1], cap[0, 0], tw[2, 1], tw[0, 0]]))
    wrong = torch.from_numpy(np.stack([tw[2, 1], tw[0, 0], cap[2, 1], cap[0, 0]]))
    low = float(image_rank_loss(right, scenes, twin, captions, twins, step))
    high = float(image_rank_loss(wrong, scenes, twin, captions, twins, step))
    assert low < 0.3 < np.log(2) < high
    sharp = [float(image_rank_loss(x, scenes, twin, captions, twins, step, scale=300.0)) for x in (right, wrong)]
    assert sharp[0] < low and sharp[1] > high  # a larger scale: right signs cost less, wrong ones more


def test_image_margin_loss_is_zero_on_the_targets_and_counts_the_common_part_of_a_twin_difference():
    """--image-margin-weight: images that are their targets cost nothing; an image pair whose difference gains a
    component along the captions' common part (a bias that flips a text->image decision) costs, in MARGIN_UNITs."""
    import torch

    from bindlab.train.toy.lit import CaptionCache
    from bindlab.train.toy.train import MARGIN_UNIT, image_margin_loss

    rng = np.random.default_rng(1)
    unit = lambda a: a / np.linalg.norm(a, axis=-1, keepdims=True)  # noqa: E731
    common = unit(rng.normal(size=6))
    cap = unit(common + 0.1 * rng.normal(size=(3, 1, 6)))  # one caption per scene, mostly the common part
    tw = unit(common + 0.1 * rng.normal(size=(3, 1, 6)))
    captions = CaptionCache(["a", "b", "c"], cap.reshape(3, 6), np.arange(3).reshape(3, 1), 0.0, "synthetic")
    twins = CaptionCache(["a", "b", "c"], tw.reshape(3, 6), np.arange(3).reshape(3, 1), 0.0, "synthetic")
    scenes, twin = np.array([0, 1, 0, 1]), np.array([False, False, True, True])
    target = torch.from_numpy(unit(np.stack([cap[0, 0], cap[1, 0], tw[0, 0], tw[1, 0]])))
    assert float(image_margin_loss(target, target, scenes, twin, captions, twins, 0)) == 0.0
    biased = target.clone()
    biased[0] = torch.from_numpy(unit(target[0].numpy() + 0.05 * common))  # scene 0's image matches its words more
    loss = float(image_margin_loss(biased, target, scenes, twin, captions, twins, 0))
    ti_shift = float(cap[0, 0] @ (biased[0] - target[0]).numpy())  # how far its text->image margin moved
    assert loss > 0.1 * (ti_shift / MARGIN_UNIT) ** 2 > 0


def test_image_bias_loss_is_blind_to_the_size_of_a_twin_difference_and_not_to_its_turn_towards_the_words():
    """--image-bias-weight: zero on the targets; a twin image difference of the targets' direction but another size
    costs nothing (a shrunk difference cannot meet it); one turned towards the pair's common words costs."""
    import torch

    from bindlab.train.toy.lit import CaptionCache
    from bindlab.train.toy.train import image_bias_loss

    rng = np.random.default_rng(2)
    unit = lambda a: a / np.linalg.norm(a, axis=-1, keepdims=True)  # noqa: E731
    common = unit(rng.normal(size=8))
    cap = unit(common + 0.1 * rng.normal(size=(2, 1, 8)))
    tw = unit(common + 0.1 * rng.normal(size=(2, 1, 8)))
    captions = CaptionCache(["a", "b"], cap.reshape(2, 8), np.arange(2).reshape(2, 1), 0.0, "synthetic")
    twins = CaptionCache(["a", "b"], tw.reshape(2, 8), np.arange(2).reshape(2, 1), 0.0, "synthetic")
    scenes, twin = np.array([0, 1, 0, 1]), np.array([False, False, True, True])
    mid = unit(rng.normal(size=(2, 8)))
    step = unit(rng.normal(size=(2, 8)))
    target = torch.from_numpy(unit(np.concatenate([mid + 0.2 * step, mid - 0.2 * step])))
    closer = torch.from_numpy(unit(np.concatenate([mid + 0.05 * step, mid - 0.05 * step])))  # the same turn, smaller
    turned = torch.from_numpy(unit(np.concatenate([mid + 0.2 * step + 0.1 * common, mid - 0.2 * step])))
    loss = lambda img: float(image_bias_loss(img, target, scenes, twin, captions, twins, 0))  # noqa: E731
    assert loss(target) < 1e-9 and loss(closer) < 0.05 * loss(turned) and loss(turned) > 1


def test_phrase_reference_keeps_the_text_tower_and_beats_the_caption_mean_image_to_text(minilm):
    """The phrase reference's tt is the text tower's; image -> text, where the candidates differ only in binding
    or one word, it is far above the plain caption mean (the imitation reference); a pure function."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber
    from bindlab.train.toy.eval import imitation_reference, phrase_reference

    questions = generate_saber(per_size=10, sizes=(2, 3), seed=3, vocab=RENDER_VOCAB)
    credit = phrase_reference(questions, minilm, whitener_scenes=200)
    plain = imitation_reference(questions, minilm, k=4)
    np.testing.assert_array_equal(credit["tt"], plain["tt"])
    assert credit["it"].mean() >= 0.5 and credit["it"].mean() > plain["it"].mean() + 0.2, (credit, plain)
    again = phrase_reference(questions, minilm, whitener_scenes=200)
    assert all((again[p] == credit[p]).all() for p in credit)
    # all caption mean: the imitation reference's points
    mean_only = phrase_reference(questions, minilm, whitener_scenes=200, caption_weight=1.0, k=4)
    assert all((mean_only[p] == plain[p]).all() for p in plain)


def test_slot_head_sums_its_slots_phrases_and_sure_slots_give_the_phrase_target():
    """The slot head's output is sum_k presence_k p_shape_k^T G p_attribute_k; with one sure slot per object of a
    scene it is the scene's phrase target (bag weight 0) before normalising — held-out phrases are in the grid."""
    import torch

    from bindlab.data.render import RENDER_VOCAB
    from bindlab.encoders.toy.models import SlotPhraseHead, ToyConfig
    from bindlab.train.toy.lit import PhraseTable, phrase_grid, phrase_targets

    n_s, n_a = len(RENDER_VOCAB.objects), len(RENDER_VOCAB.attributes)
    heldout = frozenset({("cube", "red"), ("key", "icy")})
    pairs = [(s, a.name) for a in RENDER_VOCAB.attributes for s in RENDER_VOCAB.objects]  # any order will do
    full = PhraseTable(pairs, np.random.default_rng(0).normal(size=(len(pairs), 384)).astype(np.float32), 0.0)
    kept = [i for i, p in enumerate(full.pairs) if p not in heldout]
    table = PhraseTable([full.pairs[i] for i in kept], full.embeddings[kept], 0.0)  # the training phrases
    metric = np.diag(np.linspace(0.5, 2.0, 384))
    grid = phrase_grid(full, table, metric)
    assert grid.shape == (n_s, n_a, 384) and grid.dtype == np.float32
    scene = [("sphere", "blue", ""), ("key", "striped", ""), ("mug", "golden", "")]
    [target] = phrase_targets([scene], table, metric, 0.0)
    s_idx = [RENDER_VOCAB.objects.index(s) for s, _, _ in scene]
    a_idx = [[a.name for a in RENDER_VOCAB.attributes].index(a) for _, a, _ in scene]
    summed = grid[s_idx, a_idx].sum(axis=0)
    assert np.allclose(summed / np.linalg.norm(summed), target, atol=1e-5)
    mu = table.embeddings.astype(np.float64).mean(axis=0)
    held = full.pairs.index(("cube", "red"))  # a held-out phrase has its text's place in the grid
    assert np.allclose(grid[0, 0], (full.embeddings[held] - mu) @ metric, atol=1e-5)

    cfg = ToyConfig(
        arch="lit",
        text_model="minilm",
        embed_dim=384,
        width=16,
        heads=2,
        head_slots=3,
        head_shapes=n_s,
        head_attributes=n_a,
    )
    head = SlotPhraseHead(cfg)
    head.phrases.copy_(torch.from_numpy(grid))
    states = torch.randn(2, 16, 16)
    out = head(states)
    shape, attribute, presence = head.slot_outputs(states)
    assert out.shape == (2, 384) and torch.allclose(shape.sum(-1), torch.ones(2, 3))
    assert torch.allclose(attribute.sum(-1), torch.ones(2, 3)) and ((presence > 0) & (presence < 1)).all()
    with pytest.raises(ValueError, match="needs every renderable phrase"):
        phrase_grid(table, table, metric)
    g = torch.from_numpy(grid)
    expect = sum(
        presence[:, k, None] * torch.einsum("bs,sad,ba->bd", shape[:, k], g, attribute[:, k]) for k in range(3)
    )
    assert torch.allclose(out, expect, atol=1e-4)


def test_slot_head_trains_saves_its_grid_and_is_refused_elsewhere(tmp_path, monkeypatch, minilm):
    """--head-slots: a phrases run trains with the grid set from its own table and metric, saves it with the
    weights (the loaded model embeds images from it), and its card and command say so; other heads, archs and
    targets refuse it."""
    import torch
    from safetensors.torch import load_file

    from bindlab.encoders.toy.models import ToyConfig
    from bindlab.studies.toy import ToyEvalRequest, _write_card
    from bindlab.train.toy.train import TrainConfig

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "lit-slots"
    assert (
        _train(
            out,
            6,
            [
                "--lit-target",
                "phrases",
                "--target-bag-weight",
                "0",
                "--head-slots",
                "3",
                "--twin-share",
                "0.5",
                "--target-pair-weight",
                "1",
                "--target-contrastive",
                "1",
            ],
        )
        == 0
    )
    config = json.loads((out / "config.json").read_text())
    assert config["head_slots"] == 3 and config["head_shapes"] == 28 and config["head_attributes"] == 36
    grid = load_file(str(out / "model.safetensors"))["image_head.phrases"]
    assert grid.shape == (28, 36, 384) and torch.isfinite(grid).all() and grid.abs().sum() > 0
    enc = load_encoder(f"toy:{out}", device="cpu")
    from PIL import Image

    emb = enc.embed_images([Image.new("RGB", (32, 32), (200, 30, 30))])
    assert emb.shape == (1, 384) and np.isfinite(emb).all()
    assert np.allclose(enc.embed_texts(["a red cube"]), minilm.embed_texts(["a red cube"]), atol=1e-6)
    monkeypatch.setattr("bindlab.train.toy.card.write_card", lambda folder, model, result, command, notes: command)
    command = _write_card(out, ToyEvalRequest(model=f"toy:{out}"), {})
    assert "--head-slots 3" in command
    assert "a slot head (`--head-slots 3`)" in _card(out)
    with pytest.raises(ValueError, match="--head-slots is for --lit-target phrases"):
        TrainConfig(arch="lit", model={"head_slots": 3})
    with pytest.raises(ValueError, match="--head-slots is for --arch lit --lit-target phrases"):
        TrainConfig(arch="clip", model={"head_slots": 3})
    with pytest.raises(ValueError, match="choose one image head"):
        ToyConfig(arch="lit", text_model="minilm", head_slots=3, head_hidden=64, head_shapes=2, head_attributes=2)
    with pytest.raises(ValueError, match="needs its phrase grid's size"):
        ToyConfig(arch="lit", text_model="minilm", head_slots=3)
    with pytest.raises(ValueError, match="head_slots must be 0"):
        ToyConfig(arch="lit", text_model="minilm", head_slots=-1)


def test_slot_counts_are_the_scenes_objects_and_their_loss_vanishes_only_there():
    """count_grid counts each (shape, attribute) a scene shows in the renderer's order; the slot head's counts are
    its slots' presence-weighted outer products and its embedding their sum over the phrase grid; the count loss
    is zero for exact counts and grows with a diffuse slot."""
    import torch

    from bindlab.data.render import RENDER_VOCAB
    from bindlab.encoders.toy.models import SlotPhraseHead, ToyConfig
    from bindlab.train.toy.lit import count_grid
    from bindlab.train.toy.train import slot_count_loss

    scenes = [[("sphere", "blue", ""), ("key", "striped", ""), ("sphere", "blue", "")], [("mug", "golden", "")]]
    grid = count_grid(scenes)
    names = [a.name for a in RENDER_VOCAB.attributes]
    assert grid.shape == (2, len(RENDER_VOCAB.objects), len(names)) and grid.sum() == 4
    assert grid[0, RENDER_VOCAB.objects.index("sphere"), names.index("blue")] == 2
    assert grid[1, RENDER_VOCAB.objects.index("mug"), names.index("golden")] == 1
    with pytest.raises(KeyError):
        count_grid([[("unicorn", "blue", "")]])
    exact = torch.from_numpy(grid)
    assert float(slot_count_loss(exact, scenes)) == 0
    diffuse = exact.clone()
    diffuse[1] = diffuse[1] * 0.5 + 0.5 / diffuse[1].numel()  # half the object spread over every cell
    assert float(slot_count_loss(diffuse, scenes)) > 0.1

    cfg = ToyConfig(
        arch="lit", text_model="minilm", embed_dim=8, width=16, heads=2, head_slots=3, head_shapes=4, head_attributes=5
    )
    head = SlotPhraseHead(cfg)
    head.phrases.copy_(torch.randn(4, 5, 8))
    states = torch.randn(2, 16, 16)
    shape, attribute, presence = head.slot_outputs(states)
    counts = head.counts(states)
    expect = torch.einsum("bks,bka->bsa", shape * presence[..., None], attribute)
    assert torch.allclose(counts, expect, atol=1e-6) and torch.allclose(counts.sum((1, 2)), presence.sum(-1), atol=1e-5)
    assert torch.allclose(head(states), torch.einsum("bsa,sad->bd", counts, head.phrases), atol=1e-5)


def test_slot_count_weight_trains_records_and_is_refused_without_a_slot_head(tmp_path, monkeypatch, minilm):
    """--slot-count-weight: a slot run trains with its counts supervised; one pass gives the embedding
    encode_image gives; the record, command and card say so; without a slot head (or a lit arch) it is refused."""
    import torch
    from safetensors.torch import load_file

    from bindlab.encoders.toy.models import ToyConfig, build_model
    from bindlab.studies.toy import ToyEvalRequest, _write_card, train_command
    from bindlab.train.toy.train import TrainConfig

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "lit-counted"
    assert (
        _train(
            out,
            4,
            [
                "--lit-target",
                "phrases",
                "--target-bag-weight",
                "0",
                "--head-slots",
                "3",
                "--slot-count-weight",
                "0.5",
                "--max-objects",
                "5",
                "--render-size",
                "64",
                "--render-share",
                "0.5",
            ],
        )
        == 0
    )
    record = json.loads((out / "training.json").read_text())
    assert record["train_config"]["slot_count_weight"] == 0.5 and record["captions"]["slot_count_weight"] == 0.5
    assert all(np.isfinite(v) for _, v in record["losses"])
    assert "--slot-count-weight 0.5" in train_command(record["train_config"])
    monkeypatch.setattr("bindlab.train.toy.card.write_card", lambda folder, model, result, command, notes: command)
    assert "--max-objects 5 --render-size 64 --render-share 0.5" in _write_card(
        out, ToyEvalRequest(model=f"toy:{out}"), {}
    )
    card = _card(out)
    assert "`--slot-count-weight 0.5`" in card and "1–5 objects" in card
    assert "50.0 % of them drawn at 64 px" in card and "`--render-size 64 --render-share 0.5`" in card
    model = build_model(ToyConfig(**json.loads((out / "config.json").read_text())))
    model.load_state_dict(load_file(str(out / "model.safetensors")))
    pixels = torch.rand(2, 3, model.cfg.image_size, model.cfg.image_size)
    emb, counts = model.encode_image_counts(pixels)
    assert torch.allclose(emb, model.encode_image(pixels), atol=1e-5) and emb.abs().sum() > 0
    assert counts.shape == (2, 28, 36)
    with pytest.raises(ValueError, match="give --head-slots K too"):
        TrainConfig(arch="lit", lit_target="phrases", slot_count_weight=1.0)
    with pytest.raises(ValueError, match="has no slot head"):
        TrainConfig(arch="clip", slot_count_weight=1.0)
    with pytest.raises(ValueError, match="at least 0"):
        TrainConfig(arch="lit", lit_target="phrases", model={"head_slots": 3}, slot_count_weight=-1.0)
    lit_plain = build_model(ToyConfig(arch="lit", text_model="minilm", embed_dim=384, width=16, heads=2))
    with pytest.raises(ValueError, match="needs a slot head"):
        lit_plain.encode_image_counts(pixels)


def test_rank_scenes_embeds_only_the_first_scenes_captions_and_fits_the_metric_on_them(tmp_path, monkeypatch, minilm):
    """--rank-scenes N: the ranked metric's captions (and its twins') are the pool's first N scenes' only, so the pool
    can grow without embedding every caption; the targets still cover the whole pool; the record, the command and
    the card say so; options that need every scene's captions refuse it."""
    from bindlab.studies.toy import train_command
    from bindlab.train.toy.train import TrainConfig

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "lit-rank-first"
    assert (
        _train(
            out,
            4,
            [
                "--lit-target",
                "phrases",
                "--target-bag-weight",
                "0",
                "--target-rank-steps",
                "5",
                "--rank-scenes",
                "10",
                "--twin-share",
                "0.5",
                "--target-pair-weight",
                "1",
            ],
        )
        == 0
    )
    with np.load(out / "captions.npz") as z, np.load(out / "twin_captions.npz") as zt:
        assert z["index"].shape == (10, 2) and zt["index"].shape == (10, 2)
    record = json.loads((out / "training.json").read_text())
    assert record["train_config"]["rank_scenes"] == 10 and 1 <= record["captions"]["ranked_metric"]["pairs"] <= 10
    assert "--target-rank-steps 5 --rank-scenes 10" in train_command(record["train_config"])
    assert "pairs of the pool's first 10 scenes (`--rank-scenes`)" in _card(out)
    with pytest.raises(ValueError, match="--rank-scenes is for --target-rank-steps"):
        TrainConfig(arch="lit", lit_target="phrases", rank_scenes=10)
    with pytest.raises(ValueError, match="--image-rank-weight needs every pool scene's"):
        TrainConfig(
            arch="lit", lit_target="phrases", target_rank_steps=5, rank_scenes=10, twin_share=0.5, image_rank_weight=1.0
        )
    with pytest.raises(ValueError, match="rank_scenes must be at least 0"):
        TrainConfig(arch="lit", lit_target="phrases", target_rank_steps=5, rank_scenes=-1)
