"""Out-of-vocabulary words (issue 30): an encoder whose tokenizer has an unknown token says which words it maps to
it (``unknown_words``, a method of the backend); the toy models know ~100 words, so a third of the embedded text
benchmark's words are unknown to them and none of the renderable benchmark's; MiniLM and ``bow`` know them all."""

from __future__ import annotations

import pytest

from bindlab.data.render import RENDER_VOCAB
from bindlab.data.saber import generate_saber
from bindlab.encoders.base import load_encoder, unknown_words
from bindlab.encoders.toy.tokenizer import UNK
from bindlab.eval.mcq import unknown_word_summary

TEXTS = ["a red cube and a blue sphere", "A zebra-striped Glass teapot, next to a red cube!", "mossy mossy cone"]


def _texts(questions):
    return [it.text for q in questions for it in (q.query, *q.candidates)]


@pytest.fixture(scope="module")
def toy():
    return load_encoder("toy:clip")


def test_toy_unknown_words_are_the_words_it_reads_as_unk(toy):
    got = unknown_words(toy, TEXTS)
    assert got == [[], ["zebra-striped", "Glass", "teapot"], ["mossy", "mossy"]]
    for text, words in zip(TEXTS, got, strict=True):  # naive: the words at the [UNK] positions of the encoding
        ids, spans, _ = toy.tokenizer.encode(text)
        assert [text[a:b] for i, sp in zip(ids, spans, strict=True) if sp and i == UNK for a, b in [sp]] == words


def test_a_third_of_the_default_text_benchmark_is_unknown_to_the_toys_and_none_of_the_renderable(toy):
    text = generate_saber(per_size=20, sizes=range(2, 11), seed=0)  # the embedded default's settings
    rep = unknown_word_summary(_texts(text), unknown_words(toy, _texts(text)))
    assert rep["questions_with_unknown"] == rep["n_questions"] == 180  # every question has a word it cannot read
    assert rep["query_share"] == pytest.approx(0.365, abs=0.005) and rep["top"][0]["word"] == "mossy"
    render = generate_saber(per_size=20, sizes=range(2, 11), seed=0, vocab=RENDER_VOCAB)
    assert unknown_word_summary(_texts(render), unknown_words(toy, _texts(render)))["n_unknown"] == 0


def test_minilm_and_bow_know_the_benchmark_words(minilm):
    texts = _texts(generate_saber(per_size=2, sizes=range(2, 11), seed=0))
    assert not any(unknown_words(minilm, texts))
    assert unknown_words(minilm, ["a 🦄 cube"]) == [["🦄"]]  # WordPiece's [UNK]: a character outside its vocabulary
    assert unknown_words(load_encoder("bow"), texts) == [[] for _ in texts]  # every word is hashed, none unknown


def test_an_encoder_without_the_method_cannot_say():
    class Plain:
        id = "test:plain"

    assert unknown_words(Plain(), TEXTS) is None
