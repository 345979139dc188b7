"""Chance is per question (issue 30): each question's chance is the expected credit of a model blind to binding, the
chance of an accuracy is the mean over its questions (``bow`` lands on it exactly: test_mcq_retrieval.py). Also the
unknown-word summary of an MCQ file against naive counts."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from bindlab.data.schema import MCQ, Item
from bindlab.data.toy_vocab import WORD_RE
from bindlab.eval.mcq import question_chance, summarize, unknown_word_summary
from bindlab.eval.metrics import chance_label, mcq_credit, tie_chance


def naive_blind_credit(labels, answer):
    """A binding-blind model that picks the query's group (the answer's) and breaks ties at random: the share of all
    orders of the candidates in which the first of that group is the answer (every tie-break, enumerated)."""
    hits = total = 0
    for order in itertools.permutations(range(len(labels))):
        first = next(k for k in order if labels[k] == labels[answer])
        hits += first == answer
        total += 1
    return hits / total


def test_tie_chance_matches_an_enumeration_of_every_tie_break():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 3, size=(300, 4))  # few labels: groups of every size 1..4
    answer = rng.integers(0, 4, size=300)
    want = [naive_blind_credit(g, a) for g, a in zip(groups, answer, strict=True)]
    np.testing.assert_allclose(tie_chance(groups, answer), want)
    # the same number, as mcq_credit gives it to a model scoring "same group as the answer" 1 and the rest 0
    same = (groups == groups[np.arange(300), answer][:, None]).astype(float)
    np.testing.assert_allclose(tie_chance(groups, answer), mcq_credit(same, answer))


def test_chance_label_reads_the_interval_against_the_level():
    assert chance_label(0.26, 0.30, 0.259) == "above chance"
    assert chance_label(0.255, 0.263, 0.259) == "at chance"
    assert chance_label(0.13, 0.22, 0.259) == "below chance"
    assert chance_label(None, 0.3, 0.25) == "" and chance_label(0.1, 0.3, None) == ""
    assert chance_label(float("nan"), 0.3, 0.25) == ""


def test_saber_chance_is_a_third_at_two_objects_and_a_quarter_above(small_benchmark):
    _, qs = small_benchmark
    chance = question_chance(qs)
    for q, c in zip(qs, chance, strict=True):
        assert c == pytest.approx(1 / 3 if q.n_objects == 2 else 1 / 4)
    # equal numbers of questions per N = 2..10: (1/3 + 8/4) / 9, not 0.25 (the embedded default is built the same way)
    assert float(np.mean(chance)) == pytest.approx((1 / 3 + 8 / 4) / 9)
    assert float(np.mean(chance)) == pytest.approx(0.259, abs=5e-4)


def _question(texts, bindings, answer=0, n=2):
    query = Item(texts[0], bindings[0])
    cands = [Item(t, b) for t, b in zip(texts[1:], bindings[1:], strict=True)]
    return MCQ(id="q", n_objects=n, subset="independent", query=query, candidates=cands, answer=answer)


def test_candidates_are_grouped_by_bindings_else_by_their_words():
    rc, bs = ("red", "cube"), ("blue", "sphere")
    swap = [("blue", "cube"), ("red", "sphere")]
    texts = [
        "a red cube and a blue sphere",
        "a blue sphere and a red cube",
        "a blue cube and a red sphere",
        "a red sphere and a blue cube",
        "a red cube and a green sphere",
    ]
    binds = [[rc, bs], [bs, rc], swap, swap[::-1], [rc, ("green", "sphere")]]
    assert question_chance([_question(texts, binds)])[0] == pytest.approx(1 / 3)
    # no bindings: the bag of content words decides, with the same result
    assert question_chance([_question(texts, [[]] * 5)])[0] == pytest.approx(1 / 3)
    # every candidate holds other words than the answer: a binding-blind model can tell them all apart
    other = ["a red cube and a blue sphere", "a red cube and a blue sphere", "a pink cone", "a tall tree", "a cat"]
    assert question_chance([_question(other, [[]] * 5)])[0] == 1.0
    # four binding variants of one set of words: one in four
    four = [[rc, bs]] * 5
    assert question_chance([_question(texts, four, answer=2)])[0] == pytest.approx(1 / 4)


def test_summarize_gives_chance_by_n_and_subset_and_refuses_mismatched_lengths(small_benchmark):
    _, qs = small_benchmark
    credit = np.full(len(qs), 0.5)
    s = summarize(credit, qs)
    assert s["vs_chance"] == "above chance" and set(s["chance_by_n"]) == set(s["by_n"])
    assert set(s["chance_by_subset"]) == {"independent", "nested"}
    with pytest.raises(ValueError, match="questions"):
        summarize(credit[:-1], qs)


def test_unknown_word_summary_matches_naive_counts():
    texts = [
        "a red cube and a zorbly sphere",
        "a zorbly sphere and a red cube",
        "the glorp",
        "a blue cone",
        "x y",
        "a quux cat",
        "a cat",
        "a cat",
        "a cat",
        "a cat",
    ]
    known = {"a", "red", "cube", "and", "sphere", "the", "blue", "cone", "x", "y", "cat"}
    unknown = [[w for w in WORD_RE.findall(t) if w not in known] for t in texts]
    got = unknown_word_summary(texts, unknown, per_question=5, top=2)
    words = [len(WORD_RE.findall(t)) for t in texts]
    n_unk = [len(u) for u in unknown]
    queries = [0, 5]
    assert got["n_words"] == sum(words) and got["n_unknown"] == sum(n_unk) == 4
    assert got["share"] == pytest.approx(sum(n_unk) / sum(words))
    assert got["query_share"] == pytest.approx(sum(n_unk[i] for i in queries) / sum(words[i] for i in queries))
    assert got["candidate_share"] == pytest.approx(
        sum(n_unk[i] for i in range(10) if i not in queries) / sum(words[i] for i in range(10) if i not in queries)
    )
    assert got["questions_with_unknown"] == 2 and got["n_questions"] == 2
    counts = Counter(w for u in unknown for w in u)
    assert got["top"] == [{"word": "zorbly", "count": counts["zorbly"]}, {"word": "glorp", "count": 1}]
    with pytest.raises(ValueError, match="texts"):
        unknown_word_summary(texts, unknown[:-1])
