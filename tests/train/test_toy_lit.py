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
        return main(["train", "toy", "--arch", "lit", "--text", "minilm", "--out", str(out), "--steps", str(steps),
                     "--batch-size", "8", "--pool-size", "24", "--captions-per-scene", "2", "--holdout-combos",
                     "0.15", "--eval-sample", "0", "--no-progress", *TINY, *extra]) or 0
    except SystemExit as e:
        return int(e.code or 0)


def test_lit_trains_end_to_end_and_loads_with_minilm_texts(tmp_path, monkeypatch, minilm):
    from bindlab.train.toy_audit import audit_toy

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


def _card(out) -> str:
    from bindlab.train.toy_card import card_text

    training = json.loads((out / "training.json").read_text())
    score = {"n": 4, "t2i_top1": 0.5, "i2t_top1": 0.5, "i2t_attribute": 0.5, "i2t_shape": 0.5}
    by_n = {str(n): 0.4 for n in range(2, 11)}
    chance = {str(n): 0.25 for n in range(2, 11)}
    evaluation = {
        "single_object": {**score, "chance": {"top1": 0.25, "attribute": 0.5, "shape": 0.5},
                          "i2t_attribute_by_category": {"colour": 1.0},
                          "by_combination": {"seen": score, "unseen": score, "unseen_clean": score}},
        "mcq": {"per_size": 2, "sizes": list(range(2, 11)), "seed": 0, "render_size": 128,
                "pairings": {p: {"accuracy": 0.4, "by_n": by_n, "chance": 0.25, "chance_by_n": chance}
                             for p in ("tt", "ti", "it", "ii")},
                "small_n": {p: 0.4 for p in ("tt", "ti", "it", "ii")},
                "tt_text_model": {"model": "minilm", "accuracy": 0.4, "equal": True}},
    }
    return card_text("toy:lit-minilm", training, evaluation, "python -m bindlab train toy --arch lit --text minilm")


def test_lit_captions_are_grammatical_and_use_all_four_templates():
    from bindlab.data.templates import grammar_problems
    from bindlab.train.toy_data import heldout_combinations, pool_scenes
    from bindlab.train.toy_lit import lit_captions

    held = frozenset(heldout_combinations(0.15, 0))
    scenes, _ = pool_scenes(400, 0, held, clean=True)
    caps = [c for cs in lit_captions(scenes, 0) for c in cs]
    assert len(caps) == 1600 and not [c for c in caps if grammar_problems(c)]
    text = " ".join(c.lower() for c in caps)
    assert " that is " in text and " is " in text and " with a " in text and " colour" in text  # all four forms
    assert "an orange" in text or "an outlined" in text or "an icy" in text  # a/an agreement is exercised
    assert lit_captions(scenes[:5], 0) == lit_captions(scenes[:5], 0)  # a pure function


def test_twin_captions_make_the_scene_captions_choices_and_twins_stay_clean():
    from bindlab.train.toy_data import exposes, heldout_combinations, pool_scenes, pool_twins
    from bindlab.train.toy_lit import lit_captions

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
    from bindlab.train.toy_data import heldout_combinations, load_pool
    from bindlab.train.toy_lit import caption_cache, lit_batch

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    held = frozenset(heldout_combinations(0.15, 0))
    pool = load_pool(16, 32, 0, workers=1, heldout=held, twins=True, clean=True)
    twins = [pool.twins[i][0] if i in pool.twins else None for i in range(16)]
    cache = caption_cache(pool.scenes, 0, "minilm", tmp_path / "c.npz", per_scene=2)
    tcache = caption_cache(pool.scenes, 0, "minilm", tmp_path / "t.npz", per_scene=2, twins=twins)
    assert ((tcache.index >= 0) == np.asarray([[t is not None] * 2 for t in twins])).all()
    plain = lit_batch(pool, cache, 3, 8, 0, 0.5)
    pixels, emb, caps = lit_batch(pool, cache, 3, 8, 0, 0.5, tcache, 0.5)
    np.testing.assert_array_equal(pixels[:8], plain[0])  # twins are appended; the scenes' part is unchanged
    m = len(caps) - 8
    assert 1 <= m <= 4 and pixels.shape[0] == emb.shape[0] == 8 + m
    for k in range(m):  # each appended caption is a twin caption, embedded by MiniLM
        text = tcache.texts[caps[8 + k]]
        np.testing.assert_allclose(emb[8 + k], minilm.embed_texts([text])[0], atol=1e-5)
    assert lit_batch(pool, cache, 3, 8, 0, 0.5, tcache, 0.5)[2] == caps  # a pure function of the step


def test_clean_pool_shows_no_heldout_pair_through_a_colour_slot():
    from bindlab.train.toy_data import exposes, heldout_combinations, pool_scenes

    held = frozenset(heldout_combinations(0.15, 0))
    plain, _ = pool_scenes(3000, 0, held)
    clean, _ = pool_scenes(3000, 0, held, clean=True)
    assert sum(exposes(s, a, f, held) for sc in plain for s, a, f in sc) > 0  # the old pool does show some
    assert sum(exposes(s, a, f, held) for sc in clean for s, a, f in sc) == 0
    assert sum((s, a) in held for sc in clean for s, a, _ in sc) == 0
    assert exposes("fish", "glowing", "orange glowing", frozenset({("fish", "orange")}))


def test_lit_config_validates():
    from bindlab.train.toy_train import TrainConfig

    assert TrainConfig(arch="lit").text == "minilm"
    assert TrainConfig(arch="lit", twin_share=0.5).twin_share == 0.5  # binding twins: cached captions too
    with pytest.raises(ValueError, match="pair"):
        TrainConfig(arch="lit", pair_share=0.5)
    with pytest.raises(ValueError, match="--text"):
        TrainConfig(arch="clip", text="minilm")


def test_shipped_lit_minilm_loads_offline_with_minilm_texts(minilm):
    from bindlab.encoders.toy import shipped_folder

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
    from bindlab.train.toy_eval import imitation_reference

    questions = generate_saber(per_size=3, sizes=(2, 3), seed=0, vocab=RENDER_VOCAB)
    credit = imitation_reference(questions, minilm, k=2)
    assert set(credit) == {"tt", "ti", "it", "ii"} and all(c.shape == (6,) for c in credit.values())
    _, rows = evaluate_mcq(questions, tmp_path, minilm, ["tt"])
    np.testing.assert_array_equal(credit["tt"], [r["credit"] for r in rows])
    again = imitation_reference(questions, minilm, k=2)
    assert all((again[p] == credit[p]).all() for p in credit)
