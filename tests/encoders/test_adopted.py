"""Models held in memory as encoders (the ``py:`` backend): plain objects, sentence-transformers models, and open_clip /
transformers models wrapped with bindlab's own backends, each checked against the id-based path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import bindlab
from bindlab.encoders.adopted import PROBE_TEXTS, adopt, registered
from bindlab.encoders.base import EncoderError, load_encoder
from bindlab.encoders.service import embed_texts, get_encoder

TEXTS = ["a red cube and a blue sphere", "a blue cube and a red sphere", "a small green torus"]


class Returns:
    """A model whose encode_text returns whatever it is told to (to test the checks)."""

    def __init__(self, out, name="returns"):
        self.out, self.name = out, name

    def encode_text(self, texts):
        return self.out(texts)


def test_an_object_with_encode_text_embeds_through_the_cache_and_is_loadable_by_its_id():
    calls = []

    class Mine:
        name = "adopt-plain"

        def encode_text(self, texts):
            calls.append(len(texts))
            return np.arange(len(texts) * 4, dtype=np.float64).reshape(len(texts), 4) + 1.0

    enc = adopt(Mine())
    assert enc.id == "py:adopt-plain" and enc.modalities == {"text"} and "py:adopt-plain" in registered()
    assert enc.fingerprint.startswith("py:adopt-plain|probe:")  # no torch weights: a hash of its own vectors
    assert calls == [len(PROBE_TEXTS)] and "probe of 4 texts" in enc.fingerprint_note
    vecs = embed_texts(enc, TEXTS)
    assert vecs.dtype == np.float32 and np.allclose(np.linalg.norm(vecs, axis=1), 1)  # normalised here
    assert get_encoder("py:adopt-plain") is enc and load_encoder("py:adopt-plain") is enc
    embed_texts(enc, TEXTS)
    assert calls == [4, 3]  # the probe, then the texts once: the second call came from the embedding cache
    with pytest.raises(EncoderError, match="no encode_image"):
        enc.embed_images([np.zeros((8, 8, 3), np.uint8)])


@pytest.mark.parametrize(
    "case, out, said",
    [
        (0, lambda t: np.ones((len(t) + 1, 4)), r"shape \({m}, 4\) for {n} inputs"),
        (1, lambda t: np.ones(len(t)), r"shape \({n},\) for {n} inputs"),
        (
            2,
            lambda t: np.where(np.eye(len(t), 4) > 0, np.nan, 1.0),
            r"{n} non-finite values \(NaN or inf\) in {n} of {n} rows",
        ),
        (3, lambda t: "not numbers", "returned str, not an array of numbers"),
        (4, lambda t: np.ones((len(t), 0)), r"shape \({n}, 0\)"),
    ],
)
def test_a_wrong_output_is_a_message_naming_the_model_before_anything_is_cached(case, out, said):
    name = f"adopt-bad-{case}"
    enc = adopt(Returns(out, name=name))
    with pytest.raises(EncoderError, match=said.format(n=3, m=4)) as err:
        enc.embed_texts(TEXTS)
    assert str(err.value).startswith(f"py:{name}: encode_text returned")
    with pytest.raises(EncoderError, match=said.format(n=4, m=5)) as err:  # the fingerprint's probe checks it first
        embed_texts(enc, TEXTS)
    assert str(err.value).startswith(f"py:{name}: encode_text on bindlab's probe texts returned")
    good = adopt(Returns(lambda t: np.ones((len(t), 4)), name=name))  # same name, now a good model
    assert embed_texts(good, TEXTS).shape == (3, 4)  # nothing of the bad one was cached


def test_dimensions_must_not_change_between_calls():
    sizes = iter([4, 5])
    enc = adopt(Returns(lambda t: np.ones((len(t), next(sizes))), name="adopt-dims"))
    enc.embed_texts(TEXTS[:1])
    with pytest.raises(EncoderError, match="5-dimensional vectors after 4-dimensional ones"):
        enc.embed_texts(TEXTS[1:])


def test_names_objects_and_ids_are_checked():
    with pytest.raises(EncoderError, match="has no name: pass name="):
        adopt(Returns(lambda t: t, name=None))
    for bad in ("../etc", "/abs", "a b", "x@rev", ""):
        with pytest.raises(EncoderError, match="give a short name"):
            adopt(Returns(lambda t: t), name=bad)
    with pytest.raises(EncoderError, match="cannot use a int: give an object with encode_text"):
        adopt(3, name="three")
    with pytest.raises(EncoderError, match="use bindlab.load_encoder"):
        adopt("minilm")
    with pytest.raises(EncoderError, match="none is registered under that name"):
        load_encoder("py:never-adopted")


def test_a_second_object_under_a_name_replaces_the_first_and_keeps_its_own_vectors():
    first = adopt(Returns(lambda t: np.eye(len(t), 3) + 1.0, name="adopt-twice"))
    assert get_encoder("py:adopt-twice") is first
    before = embed_texts(first, TEXTS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning any more: the cache cannot mix them up
        second = adopt(Returns(lambda t: np.eye(len(t), 3)[::-1] + 1.0, name="adopt-twice"))
    assert get_encoder("py:adopt-twice") is second and second.fingerprint != first.fingerprint
    assert not np.allclose(embed_texts(second, TEXTS), before)
    again = adopt(Returns(lambda t: np.eye(len(t), 3) + 1.0, name="adopt-twice"))  # the first model, re-adopted
    assert again.fingerprint == first.fingerprint


def test_public_mode_never_loads_a_py_model(monkeypatch):
    from bindlab.studies.access import MODEL_REFUSED, check_model_access

    adopt(Returns(lambda t: np.ones((len(t), 3)), name="adopt-public"))
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    with pytest.raises(ValueError) as err:
        check_model_access("py:adopt-public")
    assert str(err.value) == MODEL_REFUSED


def test_a_sentence_transformer_is_recognised_and_embeds_as_the_bundled_minilm(minilm):
    st = pytest.importorskip("sentence_transformers")
    from bindlab.encoders.sentence import bundled_folder

    model = st.SentenceTransformer(str(bundled_folder("all-MiniLM-L6-v2")), device="cpu")
    enc = adopt(model, name="st-minilm")
    assert enc.source == "sentence-transformers encode"
    assert np.allclose(enc.embed_texts(TEXTS), minilm.embed_texts(TEXTS), atol=1e-5)


def test_wrap_transformers_embeds_exactly_as_the_hf_backend(tiny_id, tmp_path):
    from PIL import Image
    from transformers import AutoModel, AutoProcessor

    folder = tiny_id("hf-clip").removeprefix("hf:")
    by_id = load_encoder(f"hf:{folder}", device="cpu")
    wrapped = bindlab.wrap_transformers(
        AutoModel.from_pretrained(folder), AutoProcessor.from_pretrained(folder), name="tiny-clip-wrapped"
    )
    assert wrapped.id == "py:tiny-clip-wrapped" and wrapped.fingerprint.startswith("py:tiny-clip-wrapped|weights:")
    img = Image.fromarray(np.random.default_rng(0).integers(0, 255, (40, 30, 3), dtype=np.uint8))
    assert np.array_equal(wrapped.embed_texts(TEXTS), by_id.embed_texts(TEXTS))
    assert np.array_equal(wrapped.embed_images([img]), by_id.embed_images([img]))
    with pytest.raises(EncoderError, match="wrap_transformers takes a clip"):
        bindlab.wrap_transformers(object(), None, name="nope")


def test_wrap_open_clip_embeds_exactly_as_the_open_clip_backend(tiny_id):
    import open_clip
    import torch
    from PIL import Image

    eid = tiny_id("open-clip")
    by_id = load_encoder(eid, device="cpu")
    wrapped = bindlab.wrap_open_clip(by_id.model, by_id.preprocess, by_id.tokenizer, name="tiny-oc-wrapped")
    folder = eid.removeprefix("open_clip:local-dir:")
    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{folder}", weights_only=True)
    fresh = bindlab.wrap_open_clip(
        model, preprocess, open_clip.get_tokenizer(f"local-dir:{folder}"), name="tiny-oc-fresh"
    )
    img = Image.fromarray(np.random.default_rng(1).integers(0, 255, (33, 47, 3), dtype=np.uint8))
    for enc in (wrapped, fresh):
        assert np.allclose(enc.embed_texts(TEXTS), by_id.embed_texts(TEXTS), atol=1e-6)
        assert np.allclose(enc.embed_images([img]), by_id.embed_images([img]), atol=1e-6)
    assert fresh.fingerprint.startswith("py:tiny-oc-fresh|weights:")
    assert wrapped.fingerprint.split("|", 1)[1] == fresh.fingerprint.split("|", 1)[1]  # the same weights and settings
    before = fresh.fingerprint
    with torch.no_grad():
        model.logit_scale.add_(1.0)  # changed in place after wrapping: the held encoder's fingerprint follows
    assert fresh.fingerprint != before and "preprocess / tokenizer settings" in fresh.fingerprint_note
    with pytest.raises(EncoderError, match="wrap_open_clip takes an open_clip model"):
        bindlab.wrap_open_clip(object(), preprocess, None, name="nope")


# --- the fingerprint: what the model is, not what it is called ------------------------------------------------------
def _linear(seed: int, dtype=None):
    import torch

    torch.manual_seed(seed)
    layer = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.LayerNorm(4))
    return layer.to(dtype) if dtype is not None else layer


def test_the_weights_hash_follows_every_element_and_hashes_bf16_as_stored():
    import torch

    from bindlab.encoders.adopted import weights_hash

    a, b = _linear(0), _linear(0)
    assert weights_hash(a) == weights_hash(b)  # same weights, another object
    hex_a, tensors, size = weights_hash(a)
    assert tensors == 4 and size == (5 * 4 + 4 + 4 + 4) * 4
    with torch.no_grad():
        b[0].weight[2, 3] += 1e-6  # one element, a tiny change
    assert weights_hash(b)[0] != hex_a
    assert weights_hash(_linear(1))[0] != hex_a
    bf16 = _linear(0, torch.bfloat16)
    hex_bf16, _, size_bf16 = weights_hash(bf16)
    assert size_bf16 == size // 2 and hex_bf16 not in (hex_a, weights_hash(_linear(0, torch.float16))[0])
    assert weights_hash(_linear(0, torch.bfloat16))[0] == hex_bf16
    with torch.no_grad():
        bf16[1].bias[0] = torch.tensor(0.5, dtype=torch.bfloat16)
    assert weights_hash(bf16)[0] != hex_bf16
    renamed = torch.nn.Sequential(torch.nn.Identity(), *_linear(0))  # same tensors under other names
    assert weights_hash(renamed)[0] != hex_a
    other_eps = _linear(0)
    other_eps[1].eps = 1e-3  # the same tensors in a layer set up otherwise
    assert weights_hash(other_eps)[0] != hex_a


class Tower:
    """A plain object holding a torch module as ``.model`` (the weights bindlab hashes)."""

    def __init__(self, module, name="adopt-tower"):
        self.model, self.name, self.calls = module, name, 0

    def encode_text(self, texts):
        import torch

        self.calls += 1
        x = torch.tensor([[len(w) for w in (t.split() + [""] * 5)[:5]] for t in texts], dtype=torch.float32)
        with torch.no_grad():
            return self.model(x)


def test_a_module_found_on_the_object_keys_by_its_weights_and_an_in_place_change_is_seen():
    import torch

    enc = adopt(Tower(_linear(0)))
    fp = enc.fingerprint
    assert fp.startswith("py:adopt-tower|weights:") and enc.model.calls == 0  # hashed, never called
    assert "state_dict of torch.nn.modules.container.Sequential (its .model; 4 tensors" in enc.fingerprint_note
    assert adopt(Tower(_linear(0))).fingerprint == fp  # the same weights in a new object: the same vectors
    before = embed_texts(enc, TEXTS)
    opt = torch.optim.SGD(enc.model.model.parameters(), lr=0.5)
    enc.model.model(torch.ones(2, 5)).sum().backward()
    opt.step()  # trained in place, the encoder held: the next fingerprint is the new weights'
    assert enc.fingerprint != fp
    assert not np.allclose(embed_texts(enc, TEXTS), before)
    assert enc.fingerprint == adopt(Tower(enc.model.model)).fingerprint


def test_an_object_without_weights_is_fingerprinted_by_a_probe_of_its_vectors_with_images_when_it_has_them():
    from bindlab.encoders.adopted import probe_images

    class Seeing:
        def __init__(self, shift):
            self.name, self.shift = "adopt-seeing", shift

        def encode_text(self, texts):
            return np.array([[len(t), t.count("a"), 1.0] for t in texts])

        def encode_image(self, images):
            return np.array([np.asarray(im, dtype=np.float64).mean(axis=(0, 1)) for im in images]) + self.shift

    one, same, other = adopt(Seeing(0.0)), adopt(Seeing(0.0)), adopt(Seeing(3.0))
    assert one.fingerprint.startswith("py:adopt-seeing|probe:") and one.fingerprint == same.fingerprint
    assert other.fingerprint != one.fingerprint  # only its image side differs, and the probe sees it
    assert "probe of 4 texts and 2 generated images" in one.fingerprint_note
    assert [im.size for im in probe_images()] == [(32, 32), (32, 32)]
    jitter = adopt(Returns(lambda t: np.ones((len(t), 3)) + 1e-9, name="adopt-jitter"))
    assert jitter.fingerprint.split("|")[1] == adopt(Returns(lambda t: np.ones((len(t), 3)))).fingerprint.split("|")[1]


CHILD = r'''
import json, sys, zlib

import numpy as np
import torch

import bindlab
from bindlab.encoders.adopted import PROBE_TEXTS

seed = int(sys.argv[1])
seen = {"torch": 0, "plain": 0}  # texts the model was asked to embed, bindlab's probe texts aside


class Words(torch.nn.Module):
    """Word-and-position embeddings: the same code in every run, the weights drawn from ``seed``."""

    def __init__(self, seed):
        super().__init__()
        self.table = torch.nn.Embedding(997, 32)
        torch.nn.init.normal_(self.table.weight, generator=torch.Generator().manual_seed(seed))

    def encode_text(self, texts):
        seen["torch"] += sum(t not in PROBE_TEXTS for t in texts)
        ids = [[zlib.crc32(f"{i}:{w}".encode()) % 997 for i, w in enumerate(t.lower().split())] for t in texts]
        with torch.no_grad():
            return torch.stack([self.table(torch.tensor(r)).sum(0) for r in ids])


class Hashed:
    """No weights: words hashed into 64 slots, with their positions (seed 1) or as a bag of words (otherwise)."""

    def encode_text(self, texts):
        seen["plain"] += sum(t not in PROBE_TEXTS for t in texts)
        out = np.zeros((len(texts), 64))
        for row, text in enumerate(texts):
            for i, word in enumerate(text.lower().split()):
                out[row, (zlib.crc32(word.encode()) + (7 * i if seed == 1 else 0)) % 64] += 1
        return out


out = {}
for kind, model in (("torch", Words(seed)), ("plain", Hashed())):
    res = bindlab.evaluate_mcq(model, name=f"one-name-{kind}", limit=40)
    out[kind] = {"fingerprint": res.provenance["encoder"]["fingerprint"], "accuracy": res.primary,
                 "scores": [r["scores"] for r in res.rows], "seen": seen[kind]}
print(json.dumps(out))
'''


def test_two_models_under_one_name_in_two_processes_get_their_own_scores_and_the_same_model_hits_the_cache(tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "BINDLAB_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}

    def run(seed: int) -> dict:
        done = subprocess.run(
            [sys.executable, str(script), str(seed)],
            capture_output=True,
            text=True,
            env=env,
            cwd=Path(__file__).resolve().parents[2],
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first, second, again = run(1), run(2), run(1)
    for kind, prefix in (("torch", "py:one-name-torch|weights:"), ("plain", "py:one-name-plain|probe:")):
        assert first[kind]["fingerprint"].startswith(prefix)
        assert second[kind]["fingerprint"] != first[kind]["fingerprint"]
        assert first[kind]["seen"] > 0 and second[kind]["seen"] == first[kind]["seen"]  # embedded, not read back
        assert second[kind]["scores"] != first[kind]["scores"]  # its own vectors, not the first model's
        assert again[kind]["fingerprint"] == first[kind]["fingerprint"]
        assert again[kind]["seen"] == 0  # the same model again: every text from the cache
        assert again[kind]["scores"] == first[kind]["scores"] and again[kind]["accuracy"] == first[kind]["accuracy"]
    assert second["torch"]["accuracy"] != first["torch"]["accuracy"]
