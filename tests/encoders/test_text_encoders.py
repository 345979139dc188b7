"""The two bundled text encoders: bag-of-words ties exactly; MiniLM equals sentence-transformers."""

from __future__ import annotations

import numpy as np
import pytest

from bindlab.encoders.base import EncoderError, load_encoder, parse_encoder_id


def test_bow_is_order_invariant_and_normalised():
    enc = load_encoder("bow")
    e = enc.embed_texts(["A red cube and a blue sphere.", "A blue cube and a red sphere.", "An orange kite."])
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1, atol=1e-6)
    assert e[0] @ e[1] == pytest.approx(1.0, abs=1e-7)  # swap ties exactly
    assert e[0] @ e[2] < 0.5


def test_minilm_equals_sentence_transformers(minilm):
    from sentence_transformers import SentenceTransformer

    from bindlab.encoders.sentence import bundled_folder

    texts = ["A red cube and a blue sphere.", "A blue cube and a red sphere.", "hello", "word " * 400]
    ours = minilm.embed_texts(texts)
    st = SentenceTransformer(str(bundled_folder("all-MiniLM-L6-v2")), device="cpu").encode(texts)
    np.testing.assert_allclose(ours, st, atol=1e-5)
    assert minilm.last_truncated == 1  # the 400-word text hit the 256-token limit, and that is reported


def test_minilm_batching_invariance(minilm):
    texts = ["a striped cube", "a glowing umbrella and a wooden kite in the park", "x"]
    together = minilm.embed_texts(texts)
    alone = np.stack([minilm.embed_texts([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


@pytest.mark.parametrize(
    "bad,match",
    [
        ("", "empty encoder id"),
        ("nonsense", "has no backend"),
        ("zzz:thing", "unknown encoder backend"),
        ("bow:other", "only one is 'bow:words'"),
        ("st:/no/such/folder", "folder not found"),
    ],
)
def test_bad_ids_give_clear_errors(bad, match):
    with pytest.raises(EncoderError, match=match):
        load_encoder(bad)


def test_offline_hub_id_says_so():
    enc = load_encoder("st:someone/some-model")
    with pytest.raises(EncoderError, match="unreachable"):
        enc.embed_texts(["a red cube"])


def test_empty_text_and_images_on_text_encoders(minilm):
    with pytest.raises(EncoderError, match="empty"):
        minilm.embed_texts(["fine", "  "])
    with pytest.raises(EncoderError, match="text-only"):
        minilm.embed_images([])
    with pytest.raises(EncoderError, match="no content words"):
        load_encoder("bow").embed_texts(["a the an"])


def test_parse_encoder_id():
    assert str(parse_encoder_id("minilm")) == "st:all-MiniLM-L6-v2"
    e = parse_encoder_id("hf:openai/clip-vit-base-patch32@v2")
    assert (e.backend, e.name, e.revision) == ("hf", "openai/clip-vit-base-patch32", "v2")
    assert parse_encoder_id("hf:/data/my@models/clip").revision is None  # '@' inside a path is not a revision
