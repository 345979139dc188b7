"""Models held in memory as encoders (the ``py:`` backend): plain objects, sentence-transformers models, and open_clip /
transformers models wrapped with bindlab's own backends, each checked against the id-based path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import bindlab
from bindlab.encoders.adopted import adopt, registered
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
    assert enc.fingerprint == "py:adopt-plain|user-named"
    vecs = embed_texts(enc, TEXTS)
    assert vecs.dtype == np.float32 and np.allclose(np.linalg.norm(vecs, axis=1), 1)  # normalised here
    assert get_encoder("py:adopt-plain") is enc and load_encoder("py:adopt-plain") is enc
    embed_texts(enc, TEXTS)
    assert calls == [3]  # the second call came from the embedding cache, keyed by the name
    with pytest.raises(EncoderError, match="no encode_image"):
        enc.embed_images([np.zeros((8, 8, 3), np.uint8)])


@pytest.mark.parametrize("case, out, said", [
    (0, lambda t: np.ones((len(t) + 1, 4)), r"shape \(4, 4\) for 3 inputs"),
    (1, lambda t: np.ones(len(t)), r"shape \(3,\) for 3 inputs"),
    (2, lambda t: np.where(np.eye(len(t), 4) > 0, np.nan, 1.0), r"3 non-finite values \(NaN or inf\) in 3 of 3 rows"),
    (3, lambda t: "not numbers", "returned str, not an array of numbers"),
    (4, lambda t: np.ones((len(t), 0)), r"shape \(3, 0\)"),
])
def test_a_wrong_output_is_a_message_naming_the_model_before_anything_is_cached(case, out, said):
    name = f"adopt-bad-{case}"
    enc = adopt(Returns(out, name=name))
    with pytest.raises(EncoderError, match=said) as err:
        embed_texts(enc, TEXTS)
    assert str(err.value).startswith(f"py:{name}: encode_text returned")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "now names another model object": that is the point here
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


def test_a_second_object_under_a_name_replaces_the_first_with_a_warning():
    first = adopt(Returns(lambda t: np.ones((len(t), 3)), name="adopt-twice"))
    assert get_encoder("py:adopt-twice") is first
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second = adopt(Returns(lambda t: np.ones((len(t), 3)), name="adopt-twice"))
    assert get_encoder("py:adopt-twice") is second
    assert any("embeddings cached under this name are reused" in str(w.message) for w in caught)


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
    wrapped = bindlab.wrap_transformers(AutoModel.from_pretrained(folder), AutoProcessor.from_pretrained(folder),
                                        name="tiny-clip-wrapped")
    assert wrapped.id == "py:tiny-clip-wrapped" and "user-named" in wrapped.fingerprint
    img = Image.fromarray(np.random.default_rng(0).integers(0, 255, (40, 30, 3), dtype=np.uint8))
    assert np.array_equal(wrapped.embed_texts(TEXTS), by_id.embed_texts(TEXTS))
    assert np.array_equal(wrapped.embed_images([img]), by_id.embed_images([img]))
    with pytest.raises(EncoderError, match="wrap_transformers takes a clip"):
        bindlab.wrap_transformers(object(), None, name="nope")


def test_wrap_open_clip_embeds_exactly_as_the_open_clip_backend(tiny_id):
    import open_clip
    from PIL import Image

    eid = tiny_id("open-clip")
    by_id = load_encoder(eid, device="cpu")
    wrapped = bindlab.wrap_open_clip(by_id.model, by_id.preprocess, by_id.tokenizer, name="tiny-oc-wrapped")
    folder = eid.removeprefix("open_clip:local-dir:")
    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{folder}", weights_only=True)
    fresh = bindlab.wrap_open_clip(model, preprocess, open_clip.get_tokenizer(f"local-dir:{folder}"),
                                   name="tiny-oc-fresh")
    img = Image.fromarray(np.random.default_rng(1).integers(0, 255, (33, 47, 3), dtype=np.uint8))
    for enc in (wrapped, fresh):
        assert np.allclose(enc.embed_texts(TEXTS), by_id.embed_texts(TEXTS), atol=1e-6)
        assert np.allclose(enc.embed_images([img]), by_id.embed_images([img]), atol=1e-6)
    with pytest.raises(EncoderError, match="wrap_open_clip takes an open_clip model"):
        bindlab.wrap_open_clip(object(), preprocess, None, name="nope")
