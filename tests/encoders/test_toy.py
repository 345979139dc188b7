"""The toy vision–language models: shipped assets load offline and follow the protocol; training runs and resumes."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from bindlab.encoders.base import EncoderError, load_encoder

SHIPPED = ["toy:clip", "toy:shared", "toy:negclip"]


@pytest.fixture(scope="module")
def toy():
    loaded: dict[str, object] = {}

    def get(eid: str):
        if eid not in loaded:
            loaded[eid] = load_encoder(eid)
        return loaded[eid]

    return get


@pytest.mark.parametrize("eid", SHIPPED)
def test_shipped_model_is_small_and_loads_offline(toy, eid):
    from bindlab.encoders.toy.backend import SHIPPED as FOLDERS
    from bindlab.encoders.toy.backend import shipped_folder

    folder = shipped_folder(eid.split(":")[1])
    assert eid.split(":")[1] in FOLDERS
    assert (folder / "model.safetensors").stat().st_size < 20 * 2**20
    assert (folder / "README.md").is_file()
    enc = toy(eid)
    assert enc.modalities == frozenset({"text", "image"})
    assert enc.fingerprint.startswith(eid + "|")


@pytest.mark.parametrize("eid", SHIPPED)
def test_texts_shape_norm_batch_invariance(toy, eid):
    enc = toy(eid)
    texts = ["A red cube and a blue sphere.", "a striped cone", "zebra quantum", "there is a key next to a mug"]
    all_ = enc.embed_texts(texts)
    assert all_.dtype == np.float32 and all_.shape[0] == 4
    np.testing.assert_allclose(np.linalg.norm(all_, axis=1), 1.0, atol=1e-5)
    for i, t in enumerate(texts):
        np.testing.assert_allclose(enc.embed_texts([t])[0], all_[i], atol=1e-5)
    with pytest.raises(EncoderError, match="empty"):
        enc.embed_texts(["a cube", "  "])


@pytest.mark.parametrize("eid", SHIPPED)
def test_images_from_pil_paths_and_arrays(toy, eid, tmp_path):
    from bindlab.data.render import ObjectSpec, render_scene

    enc = toy(eid)
    imgs = [render_scene([ObjectSpec("cube", "red")], size=96, seed=i) for i in range(3)]
    imgs.append(
        render_scene([ObjectSpec("star", "blue"), ObjectSpec("key", "golden")], size=50, seed=1).crop((0, 0, 50, 40))
    )
    paths = []
    for i, im in enumerate(imgs):
        paths.append(tmp_path / f"{i}.png")
        im.save(paths[-1])
    a = enc.embed_images(imgs)
    assert a.shape == (4, enc.model.cfg.embed_dim)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(enc.embed_images([str(p) for p in paths]), a, atol=1e-5)
    np.testing.assert_allclose(enc.embed_images(imgs[1:2])[0], a[1], atol=1e-5)
    np.testing.assert_allclose(enc.embed_images([np.asarray(imgs[0])])[0], a[0], atol=1e-5)
    with pytest.raises(EncoderError, match="not found"):
        enc.embed_images([tmp_path / "missing.png"])


@pytest.mark.parametrize("eid", SHIPPED)
def test_attention_access_is_causal_with_one_token_per_word(toy, eid):
    enc = toy(eid)
    acc = enc.attention_access()
    text = "A red cube and a polka-dot sphere."
    words = acc.word_alignment(text)
    assert [w.word for w in words] == ["A", "red", "cube", "and", "a", "polka-dot", "sphere"]
    assert [w.token_indices for w in words] == [(i,) for i in range(1, 8)]
    maps = [a for _, _, a in acc.attentions([text])]
    assert len(maps) == acc.num_layers and acc.causal
    for a in maps:
        assert a.shape == (acc.num_heads, 9, 9)
        np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-5)
        assert np.allclose(np.triu(a, 1), 0)  # nothing attends forward


def test_shared_model_text_attention_is_the_image_path(toy):
    """A change to the text attention's q_proj moves toy:shared's image embeddings, but not toy:clip's."""
    import torch

    from bindlab.data.render import ObjectSpec, render_scene

    img = render_scene([ObjectSpec("cube", "red"), ObjectSpec("star", "striped")], size=64, seed=3)
    moved = {}
    for eid in SHIPPED:
        model = toy(eid).model
        x = torch.from_numpy(toy(eid).pixels([img]))
        with torch.no_grad():
            before = model.encode_image(x, normalize=True)
            q = model.text_stack.blocks[0].attn.q_proj.weight
            saved = q.clone()
            q.add_(0.5 * torch.randn_like(q))
            after = model.encode_image(x, normalize=True)
            q.copy_(saved)
        moved[eid] = float((before - after).abs().max())
    assert moved["toy:shared"] > 1e-3
    assert moved["toy:clip"] == 0.0


@pytest.mark.parametrize("eid", SHIPPED)
def test_single_object_text_to_image_top1(toy, eid):
    """Every one of the 1,008 shape x attribute combinations rendered once with held-out seeds (chance 0.001): the
    shipped models have learned the world (issue 5 asks for top-1 >= 0.8; the model cards give the figures)."""
    from bindlab.train.toy.eval import evaluate_single_objects

    res = evaluate_single_objects(toy(eid), sample=0, seed=0, workers=2)
    assert res["n"] == 1008
    # toy:negclip trades a little single-object retrieval for binding (0.782 measured, toy:clip's 0.817; its card)
    assert res["t2i_top1"] >= (0.75 if eid == "toy:negclip" else 0.8), res
    assert res["i2t_shape"] >= 0.95 and res["i2t_attribute"] >= 0.8, res


def test_negclip_is_toy_clip_finetuned_with_binding_twins(toy):
    """toy:negclip: toy:clip's architecture and size, finetuned in two stages from its weights — binding twins (the
    NegCLIP-style hard negatives), then binding and pair twins — and its weights moved."""
    from bindlab.encoders.toy.backend import shipped_folder

    clip, neg = shipped_folder("clip"), shipped_folder("negclip")
    assert json.loads((neg / "config.json").read_text()) == json.loads((clip / "config.json").read_text())
    train = json.loads((neg / "training.json").read_text())["train_config"]
    assert train["twin_share"] > 0 and train["pair_share"] > 0 and train["init_from"].rstrip("/").endswith("negclip-v1")
    card = (neg / "README.md").read_text()
    assert "--twin-share 0.5 --init-from bindlab/assets/toy-clip" in card  # stage 1, from toy:clip, is in the card
    a = toy("toy:clip").embed_texts(["A red cube and a blue sphere."])
    b = toy("toy:negclip").embed_texts(["A red cube and a blue sphere."])
    assert float(a[0] @ b[0]) < 1 - 1e-4  # the finetune changed the model
    assert toy("toy:negclip").fingerprint != toy("toy:clip").fingerprint


def test_models_listing_has_negclip_and_says_when_a_shipped_folder_is_missing(monkeypatch):
    import bindlab.encoders.toy.backend as toy_module
    from bindlab.encoders.presets import PRESETS, availability

    preset = next(p for p in PRESETS if p.id == "toy:negclip")
    assert "NegCLIP" in preset.description and preset.source == "bundled"
    assert availability(preset, offline=True) == (True, "bundled, no download needed")
    monkeypatch.setitem(toy_module.SHIPPED, "negclip", "no-such-folder")
    ok, why = availability(preset, offline=True)
    assert not ok and "no-such-folder is missing" in why


def test_unknown_toy_name_is_a_clear_error(tmp_path):
    with pytest.raises(EncoderError, match="toy:clip, toy:shared, toy:negclip"):
        load_encoder("toy:nonexistent")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EncoderError, match="model.safetensors"):
        load_encoder(f"toy:{tmp_path}")


def test_tokenizer_covers_benchmark_captions():
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber
    from bindlab.encoders.toy.tokenizer import UNK, WordTokenizer

    tok = WordTokenizer.build()
    qs = generate_saber(per_size=4, sizes=[2, 5], seed=1, vocab=RENDER_VOCAB)
    for q in qs:
        for it in (q.query, *q.candidates):
            assert UNK not in tok.encode(it.text)[0], it.text
            assert UNK not in tok.encode(it.gen_text)[0], it.gen_text
    ids, spans, truncated = tok.encode("A glorp cube!")
    assert ids[2] == UNK and spans[1] == (0, 1) and not truncated


def test_caption_recipe_names_patterns_rarely():
    from bindlab.train.toy.data import P_PATTERN_NAMED, _category, make_caption, sample_scene

    rng = random.Random(0)
    named = total = 0
    for _ in range(3000):
        scene = sample_scene(rng)
        cap = make_caption(scene, rng).lower()
        for _shape, attr, _ in scene:
            if _category(attr) == "pattern":
                total += 1
                named += attr in cap.split() or attr in cap
    assert total > 300
    assert abs(named / total - P_PATTERN_NAMED) < 0.06


def test_shape_hard_groups_share_an_attribute_and_differ_in_shape():
    from bindlab.train.toy.data import HARD_GROUP, pool_scenes, shape_hard_groups

    scenes, _ = pool_scenes(2000, seed=0)
    idx = shape_hard_groups(scenes, 32, step=5, seed=0)
    assert len(idx) == 32
    for g in range(0, 32, HARD_GROUP):
        group = [scenes[i] for i in idx[g : g + HARD_GROUP]]
        assert all(len(sc) == 1 for sc in group)
        assert len({sc[0][1] for sc in group}) == 1  # one attribute ...
        assert len({sc[0][0] for sc in group}) > 1  # ... on different shapes
    assert idx == shape_hard_groups(scenes, 32, step=5, seed=0)  # a pure function of (pool, step, seed)
    assert idx != shape_hard_groups(scenes, 32, step=6, seed=0)
    assert shape_hard_groups(scenes[:3], 32, step=0, seed=0) == []  # too few single objects: no groups


def _train(out, steps, extra=()):
    from bindlab.cli import main

    return main(
        [
            "train",
            "toy",
            "--arch",
            "shared",
            "--out",
            str(out),
            "--steps",
            str(steps),
            "--pool-size",
            "24",
            "--batch-size",
            "8",
            "--width",
            "16",
            "--layers",
            "1",
            "--heads",
            "2",
            "--image-size",
            "64",
            "--checkpoint-every",
            "2",
            "--eval-sample",
            "0",
            "--no-progress",
            *extra,
        ]
    )


def test_training_cli_checkpoints_and_resumes_exactly(tmp_path, monkeypatch, capsys):
    from safetensors.numpy import load_file

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    (stopped / "STOP").touch()  # cancel after the first step
    assert _train(stopped, 4) == 0
    assert "stopped at step 1/4" in capsys.readouterr().out
    state = json.loads((stopped / "checkpoint" / "state.json").read_text())
    assert state["step"] == 1 and not (stopped / "model.safetensors").exists()
    (stopped / "STOP").unlink()
    assert _train(stopped, 4) == 0
    record = json.loads((stopped / "training.json").read_text())
    assert record["resumed_from"] == 1 and record["steps"] == 4 and record["finished"]

    straight = tmp_path / "straight"
    assert _train(straight, 4) == 0
    a, b = load_file(str(stopped / "model.safetensors")), load_file(str(straight / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], atol=1e-5, err_msg=k)
    enc = load_encoder(f"toy:{straight}")
    assert enc.embed_texts(["a red cube"]).shape == (1, 16)

    # a longer run continues the finished one, stretching the schedule from where it stopped
    assert _train(straight, 6) == 0
    record = json.loads((straight / "training.json").read_text())
    assert record["resumed_from"] == 4 and record["steps"] == 6 and record["schedule"] == [[0, 4], [4, 6]]

    # a different run in the same folder is refused, not silently mixed
    assert _train(straight, 4, ["--seed", "3"]) == 2
    assert "different run" in capsys.readouterr().err


def test_train_config_validates():
    from bindlab.train.toy.train import TrainConfig

    with pytest.raises(ValueError, match="arch"):
        TrainConfig(arch="big")
    with pytest.raises(ValueError, match="batch_size"):
        TrainConfig(batch_size=1)


def test_single_object_scores_against_loops():
    from bindlab.train.toy.eval import single_object_scores

    rng = np.random.default_rng(0)
    items = [("cube", "red", ""), ("cube", "blue", ""), ("star", "red", ""), ("star", "striped", "")]
    img = rng.normal(size=(4, 8)).astype(np.float32)
    txt = rng.normal(size=(4, 8)).astype(np.float32)
    res = single_object_scores(img, txt, items)
    sim = [[float(img[i] @ txt[j]) for j in range(4)] for i in range(4)]
    t2i = [max(range(4), key=lambda i: sim[i][j]) for j in range(4)]
    i2t = [max(range(4), key=lambda j: sim[i][j]) for i in range(4)]
    assert res["t2i_top1"] == np.mean([t2i[j] == j for j in range(4)])
    assert res["i2t_top1"] == np.mean([i2t[i] == i for i in range(4)])
    assert res["i2t_shape"] == np.mean([items[i2t[i]][0] == items[i][0] for i in range(4)])
    assert res["chance"]["top1"] == 0.25


def test_image_head_mlp_spans_more_than_the_width():
    """The linear head keeps every image embedding in a width-dimensional subspace of the joint space; the per-patch
    MLP head (--head-hidden) does not — what a frozen text tower's wider space needs (toy_models.ImageHead)."""
    import torch

    from bindlab.encoders.toy.models import ToyConfig, build_model

    ranks = {}
    for hidden in (0, 32):
        torch.manual_seed(0)
        cfg = ToyConfig(
            arch="lit",
            width=8,
            heads=2,
            layers=1,
            image_size=32,
            patch_size=8,
            embed_dim=48,
            vocab_size=0,
            max_text_len=0,
            text_model="minilm",
            head_hidden=hidden,
        )
        model = build_model(cfg).eval()
        with torch.no_grad():
            emb = model.encode_image(torch.rand(96, 3, 32, 32)).numpy()
        s = np.linalg.svd(emb - emb.mean(0), compute_uv=False)
        ranks[hidden] = int((s > 1e-4 * s[0]).sum())
        assert ("image_head.mlp.0.weight" in model.state_dict()) == bool(hidden)
        assert ("image_proj.weight" in model.state_dict()) == (not hidden)  # the shipped weights' name
    assert ranks[0] <= 8 < ranks[32]
    with pytest.raises(ValueError, match="head_hidden must be 0"):
        ToyConfig(arch="lit", text_model="minilm", head_hidden=-1)


def test_a_long_text_is_truncated_and_counted_where_the_number_is(toy):
    """toy:shared keeps 48 tokens ([BOS], 46 words, [EOS]): a longer text is cut, and the encoder says how many texts
    it cut (per call, and for any texts without running the model), in a sentence a result can show."""
    from bindlab.encoders.truncation import truncation, truncation_text

    enc = toy("toy:shared")
    words = ("a red cube and a blue sphere and a green cone and a yellow cylinder " * 6).split()
    assert len(words) > 46
    long, kept, short = " ".join(words), " ".join(words[:46]), "a red cube"
    assert enc.token_limit == 48 and enc.tokenizer.max_words == 46
    assert enc.truncated([long, kept, short]) == [True, False, False]
    vecs = enc.embed_texts([long, kept, short])
    np.testing.assert_allclose(vecs[0], vecs[1], atol=1e-6)  # the words past the limit are not read
    assert enc.last_truncated == 1
    assert enc.last_text_notes == ["toy:shared truncated 1 of 3 texts to 48 tokens (words after word 46 are not read)."]
    enc.embed_texts([short])
    assert (enc.last_truncated, enc.last_text_notes) == (0, [])  # counted per call
    report = truncation(enc, [long, long, short])  # duplicates counted once
    assert report == {"model": "toy:shared", "n_truncated": 1, "n_texts": 2, "max_tokens": 48, "max_words": 46}
    assert (
        truncation_text(report) == "toy:shared truncated 1 of 2 texts to 48 tokens (words after word 46 are not read)."
    )
    assert truncation_text(truncation(enc, [short])) == ""  # nothing cut: nothing said
    assert truncation(load_encoder("bow"), [long]) is None  # an encoder that cannot say: nothing claimed
