"""SABER generator invariants over many seeds, and the a/an rule."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bindlab.data.saber import SABER_VOCAB, generate_saber, make_candidates, parse_sizes
from bindlab.data.schema import mcq_from_json
from bindlab.data.vocab import ATTRIBUTES, OBJECTS, PALETTE, article, caption


def check_question(q) -> None:
    """Every invariant of the SABER MCQ definition (docs/architecture.md, "SABER MCQ") for one question."""
    n = q.n_objects
    query = q.query.binding_set()
    assert len(q.query.bindings) == n == len(query)
    attrs = {a for a, _ in query}
    objs = {o for _, o in query}
    assert len(attrs) == n and len(objs) == n  # distinct attributes and objects
    roles = [c.role for c in q.candidates]
    assert q.candidates[q.answer].role == "preserve"
    assert q.candidates[q.answer].binding_set() == query
    pres = q.candidates[q.answer]
    assert pres.bindings != q.query.bindings  # preserve reorders the pairs
    if n == 2:
        assert sorted(roles) == ["attr_swap", "obj_swap", "preserve", "replace"]
        rep = q.candidates[roles.index("replace")].binding_set()
        assert len(rep & query) == 1  # keeps exactly one query binding
        ((new_a, new_o),) = rep - query
        assert (new_a in attrs) != (new_o in objs)  # exactly one of attribute/object is new
    else:
        assert sorted(roles) == ["attr_swap", "joint_swap", "obj_swap", "preserve"]
        sets = [c.binding_set() for c in q.candidates]
        assert len(set(sets)) == 4  # pairwise-distinct assignments
        for c in q.candidates:  # same attributes and objects everywhere
            assert {a for a, _ in c.bindings} == attrs and {o for _, o in c.bindings} == objs
        a_swap = q.candidates[roles.index("attr_swap")]
        o_swap = q.candidates[roles.index("obj_swap")]
        assert [o for _, o in a_swap.bindings] == [o for _, o in pres.bindings]
        assert [a for a, _ in o_swap.bindings] == [a for a, _ in pres.bindings]
    for c in q.candidates:
        if c.role != "preserve":
            assert c.binding_set() != query
    # generation form: one realisation per attribute, reused in every item that mentions it
    real = q.extra["realisations"]
    for item in (q.query, *q.candidates):
        for a, o in item.bindings:
            assert f"{real[a]} {o}" in item.gen_text
            assert f"{a} {o}" in item.text


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_invariants_hold_for_any_seed(seed):
    qs = generate_saber(per_size=4, sizes=range(2, 11), seed=seed)
    assert len(qs) == 36
    for q in qs:
        check_question(q)
        assert mcq_from_json(q.to_json()).to_json() == q.to_json()  # round trip through the JSON format


def test_sizes_subsets_and_chains():
    qs = generate_saber(per_size=10, sizes=range(2, 11), seed=0)
    counts = Counter((q.n_objects, q.subset) for q in qs)
    assert all(counts[(n, s)] == 5 for n in range(2, 11) for s in ("independent", "nested"))
    chains: dict[str, list] = {}
    for q in qs:
        if q.subset == "nested":
            chains.setdefault(q.chain_id, []).append(q)
    assert len(chains) == 5
    for chain in chains.values():
        chain.sort(key=lambda q: q.chain_pos)
        assert [q.n_objects for q in chain] == list(range(2, 11))
        for prev, nxt in zip(chain, chain[1:], strict=False):
            assert prev.query.binding_set() < nxt.query.binding_set()  # keeps earlier bindings, adds one
            assert len(nxt.query.binding_set() - prev.query.binding_set()) == 1
            for a, _ in prev.query.bindings:  # an attribute keeps its realisation along the chain
                assert prev.extra["realisations"][a] == nxt.extra["realisations"][a]


def test_deterministic_and_seed_sensitive():
    a = [q.to_json() for q in generate_saber(per_size=6, seed=1)]
    b = [q.to_json() for q in generate_saber(per_size=6, seed=1)]
    c = [q.to_json() for q in generate_saber(per_size=6, seed=2)]
    assert a == b
    assert a != c


def test_candidate_order_is_shuffled():
    qs = generate_saber(per_size=40, sizes=[4], seed=0)
    assert len({q.answer for q in qs}) == 4  # the answer is not always in one slot


def test_make_candidates_refuses_repeated_elements():
    import random

    with pytest.raises(ValueError, match="distinct"):
        make_candidates([("red", "cube"), ("red", "ball"), ("blue", "kite")], SABER_VOCAB, random.Random(0))


def test_vocabulary_matches_appendix_a1():
    assert 225 <= len(OBJECTS) <= 240 and len(set(OBJECTS)) == len(OBJECTS)
    assert len(ATTRIBUTES) == 50
    assert len({a.category for a in ATTRIBUTES}) == 6
    assert Counter(a.realisation for a in ATTRIBUTES) == {
        "standalone": 27,
        "single_color": 4,
        "two_color": 6,
        "fixed_variant": 13,
    }
    assert len(PALETTE) == 9
    import random

    rng = random.Random(0)
    for a in ATTRIBUTES:
        if a.realisation == "two_color":
            for _ in range(20):
                c1, c2 = a.instantiate(rng).split(" and ")[0], a.instantiate(rng).split(" and ")[1].split()[0]
                assert c1 in PALETTE and c2 in PALETTE
    striped = next(a for a in ATTRIBUTES if a.name == "striped")
    forms = {striped.instantiate(rng) for _ in range(200)}
    assert all(f.split()[0] != f.split()[2] for f in forms)  # two distinct colours


@pytest.mark.parametrize(
    "word,expected",
    [
        ("umbrella", "an"),
        ("unicorn", "a"),
        ("hourglass", "an"),
        ("orange", "an"),
        ("ukulele", "a"),
        ("igloo", "an"),
        ("owl", "an"),
        ("urn", "an"),
        ("unicycle", "a"),
        ("one-eyed", "a"),
        ("honest", "an"),
        ("hat", "a"),
        ("european", "a"),
        ("egg", "an"),
        ("yo-yo", "a"),
        ("x-ray", "an"),
        ("xylophone", "a"),
    ],
)
def test_article_by_pronunciation(word, expected):
    assert article(word) == expected


def test_caption_format():
    assert caption([("sandy", "snowboard"), ("pink", "cherry")]) == "A sandy snowboard and a pink cherry."
    assert (
        caption([("orange", "umbrella"), ("red", "cube"), ("icy", "owl")])
        == "An orange umbrella, a red cube, and an icy owl."
    )


@pytest.mark.parametrize("spec,expected", [("2-4", [2, 3, 4]), ("2,5", [2, 5]), ("3", [3])])
def test_parse_sizes(spec, expected):
    assert parse_sizes(spec) == expected


@pytest.mark.parametrize("spec", ["1-3", "x", "", "2-30"])
def test_parse_sizes_rejects(spec):
    with pytest.raises(ValueError):
        parse_sizes(spec)
