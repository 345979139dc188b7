"""Finetuning triplet generator: validity at scale, one failing example per validation rule, splits, files."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bindlab.data.schema import DataError
from bindlab.data.triplets import (
    CONSTRUCTIONS,
    HELD_OUT,
    REJECTION_REASONS,
    EngineOutputError,
    Example,
    ExamplePlan,
    TemplateEngine,
    UsageTracker,
    WrittenExample,
    assemble,
    binding_distance,
    generate_examples,
    generate_triplets,
    load_triplets,
    make_engine,
    parse_engine_json,
    permute_words,
    plan_example,
    validate,
    words_of,
    write_triplets,
)
from bindlab.data.triplets.template_engine import (
    AMBIGUOUS_PRONOUNS,
    ANIMALS,
    ATTRIBUTE_POOL,
    FOODS,
    OBJECT_POOL,
    OPENERS,
    PLANTS,
    REGISTERS,
    RESERVED_WORDS,
    filler_vocabulary,
)


@pytest.fixture(scope="module")
def generated():
    """3,000 examples (6,000 rows) generated once for the module."""
    examples, stats = generate_examples(3000, seed=11)
    rows, row_stats = generate_triplets(6000, seed=11)
    return examples, stats, rows, row_stats


def _folded(text: str) -> Counter:
    return Counter("a" if w == "an" else w for w in words_of(text))


# ---------------------------------------------------------------------------------------------------------------
# validity at scale
# ---------------------------------------------------------------------------------------------------------------


def test_thousands_of_generated_examples_pass_the_validator(generated):
    examples, stats, _, _ = generated
    assert len(examples) == 3000
    assert set(stats["constructions"]) == set(CONSTRUCTIONS)
    for ex in examples:
        assert validate(ex) == [], (ex.construction, ex.positive)


def test_rows_are_two_per_example_with_both_negative_kinds(generated):
    _, _, rows, stats = generated
    assert len(rows) == 6000 == stats["n_rows"]
    for a, o in zip(rows[::2], rows[1::2], strict=False):
        assert a["id"].endswith("-a") and o["id"].endswith("-o") and a["id"][:-2] == o["id"][:-2]
        assert (a["negative_kind"], o["negative_kind"]) == ("attribute", "object")
        assert a["query"] == o["query"] and a["positive"] == o["positive"] and a["split"] == o["split"]
        assert a["negative"] != o["negative"]
    assert set(rows[0]) == {"id", "construction", "query", "positive", "negative", "negative_kind", "bindings", "split"}


def test_negatives_are_word_permutations_that_change_every_binding(generated):
    _, _, rows, _ = generated
    for r in rows:
        assert _folded(r["negative"]) == _folded(r["positive"])
        assert r["negative"] != r["positive"]
        neg = words_of(r["negative"])
        # each queried attribute/object word is still there exactly once
        for a, o in r["bindings"]:
            assert neg.count(a) == 1 and neg.count(o) == 1


def test_splits_80_10_10_and_deferred_types_only_heldout(generated):
    _, _, rows, stats = generated
    per_example = {r["id"][:-2]: (r["construction"], r["split"]) for r in rows}
    for construction, split in per_example.values():
        assert (split == "heldout") == (construction in HELD_OUT)
    in_dist = Counter(s for c, s in per_example.values() if c not in HELD_OUT)
    total = sum(in_dist.values())
    assert abs(in_dist["train"] / total - 0.8) < 0.01
    assert abs(in_dist["val"] / total - 0.1) < 0.01 and abs(in_dist["test"] / total - 0.1) < 0.01
    assert stats["splits"]["heldout"] == 2 * sum(1 for c, _ in per_example.values() if c in HELD_OUT)
    # construction shares follow B.5: 16 % for each in-distribution type, 10 % for each held-out type
    shares = Counter(c for c, _ in per_example.values())
    assert shares["pair_swap"] == 480 and shares["deferred_bind_anaphoric"] == 300


def test_query_order_is_randomised(generated):
    examples, _, _, _ = generated
    same = 0
    two = [ex for ex in examples if len({o for _, o in ex.bindings}) == 2]
    for ex in two:
        words = words_of(ex.positive)
        query_objects = list(dict.fromkeys(o for _, o in ex.bindings))
        same += sorted(query_objects, key=words.index) == query_objects
    assert 0.3 < same / len(two) < 0.7


def test_all_construction_specific_shapes(generated):
    examples, _, _, _ = generated
    for ex in examples:
        words = words_of(ex.positive)
        if ex.construction == "deferred_bind_respective":
            assert "respectively" in words
        if ex.construction == "deferred_bind_anaphoric":
            assert {"former", "latter"} <= set(words) or {"first", "second"} <= set(words)
            assert not AMBIGUOUS_PRONOUNS & set(words)
        if ex.construction == "triple_bind_swap":
            kept = [b for b in ex.bindings if b in ex.negative_bindings["attribute"]]
            assert len(kept) == 1 and kept[0] in ex.negative_bindings["object"]


def test_frequency_caps_and_rejections_are_reported(generated):
    examples, stats, _, _ = generated
    counts = Counter(w for ex in examples for w in {w for b in ex.bindings for w in b})
    assert max(counts.values()) <= 0.03 * len(examples) + 1
    assert stats["attempts"] == len(examples) + stats["n_rejected_examples"]
    assert all(reason in REJECTION_REASONS for reason in stats["rejected"])
    assert stats["distinct_attributes"] > 150 and stats["distinct_objects"] > 200


def test_generation_is_deterministic_for_a_seed():
    a, _ = generate_triplets(300, seed=5)
    b, _ = generate_triplets(300, seed=5)
    c, _ = generate_triplets(300, seed=6)
    assert a == b and a != c


def test_n_counts_rows_and_must_be_even():
    rows, stats = generate_triplets(10, seed=0)
    assert len(rows) == 10 and stats["n_examples"] == 5
    with pytest.raises(ValueError, match="even"):
        generate_triplets(7)


# ---------------------------------------------------------------------------------------------------------------
# one hand-made failing example per rule
# ---------------------------------------------------------------------------------------------------------------


def _example(
    construction: str,
    positive: str,
    bindings: list[tuple[str, str]],
    *,
    query: str | None = None,
    attr_map: dict[str, str] | None = None,
    obj_map: dict[str, str] | None = None,
    band: tuple[int, int] = (10, 15),
    distance: tuple[int, int] = (0, 26),
    distractors: list[tuple[str, str]] | None = None,
) -> Example:
    """A hand-made example whose negatives are built by the same word permutation the generator uses."""
    objects = list(dict.fromkeys(o for _, o in bindings))
    attrs = [a for a, _ in bindings]
    attr_map = attr_map or {attrs[0]: attrs[1], attrs[1]: attrs[0]}
    obj_map = obj_map or {objects[0]: objects[1], objects[1]: objects[0]}
    if query is None:
        query = " and ".join(f"a {a} {o}" for a, o in bindings)
    return Example(
        id="hand",
        construction=construction,
        query=query,
        positive=positive,
        negatives={"attribute": permute_words(positive, attr_map), "object": permute_words(positive, obj_map)},
        bindings=list(bindings),
        negative_bindings={
            "attribute": [(attr_map.get(a, a), o) for a, o in bindings],
            "object": [(a, obj_map.get(o, o)) for a, o in bindings],
        },
        distractors=distractors or [],
        length_band=band,
        distance_range=distance,
    )


PAIR = _example(
    "pair_swap",
    "In the garden, a wooden bench sat next to a red kite at dusk.",
    [("red", "kite"), ("wooden", "bench")],
    distance=(3, 5),
)
TRIPLE = [("red", "kite"), ("wooden", "bench"), ("striped", "lamp")]
CYCLE = _example(
    "triple_bind_cycle",
    "In the garden, a red kite, a wooden bench and a striped lamp stood in a row.",
    TRIPLE,
    attr_map={"red": "wooden", "wooden": "striped", "striped": "red"},
    obj_map={"kite": "bench", "bench": "lamp", "lamp": "kite"},
    band=(14, 19),
    distance=(0, 2),
    query="a striped lamp, a red kite, and a wooden bench",
)


def test_hand_made_valid_examples_pass():
    assert validate(PAIR) == []
    assert validate(CYCLE) == []
    respective = _example(
        "deferred_bind_respective",
        "At noon, an apple and a kite, as usual, were red and wooden, respectively.",
        [("red", "apple"), ("wooden", "kite")],
        band=(10, 15),
        distance=(1, 4),
    )
    assert respective.negatives["object"].startswith("At noon, a kite and an apple")  # a/an repaired
    assert validate(respective) == []
    anaphoric = _example(
        "deferred_bind_anaphoric",
        "At noon, a kite lay beside a bench; the latter was wooden, while the former was red.",
        [("red", "kite"), ("wooden", "bench")],
        band=(16, 22),
        distance=(1, 4),
    )
    assert validate(anaphoric) == []


FAILING: list[tuple[str, Example]] = [
    ("unknown_construction", replace(PAIR, construction="pair_shuffle")),
    ("multi_word_attribute", replace(PAIR, bindings=[("light blue", "kite"), ("wooden", "bench")])),
    ("multi_word_object", replace(PAIR, bindings=[("red", "teddy bear"), ("wooden", "bench")])),
    ("duplicate_word", replace(PAIR, distractors=[("red", "lamp")])),
    (
        "attribute_not_exactly_once",
        _example(
            "pair_swap",
            "In the garden, a wooden bench sat next to a red kite with a red tail.",
            [("red", "kite"), ("wooden", "bench")],
        ),
    ),
    (
        "object_not_exactly_once",
        _example(
            "pair_swap",
            "In the garden, a wooden bench sat next to a red kite, a kite indeed.",
            [("red", "kite"), ("wooden", "bench")],
        ),
    ),
    (
        "distractor_in_query",
        _example(
            "pair_swap",
            "In the garden, a wooden bench sat next to a red kite and a dusty lamp.",
            [("red", "kite"), ("wooden", "bench")],
            distractors=[("dusty", "lamp")],
            query="a red kite and a wooden bench near a dusty lamp",
        ),
    ),
    ("query_structure", replace(PAIR, query="a kite red and a wooden bench")),
    (
        "article_mismatch",
        _example(
            "pair_swap",
            "In the garden, a wooden bench sat next to an red kite at dusk.",
            [("red", "kite"), ("wooden", "bench")],
            distance=(3, 5),
        ),
    ),
    (
        "agreement",
        _example(
            "predicative",
            "In the garden, the kite was polka-dot while the bench, as usual, looked wooden.",
            [("polka-dot", "kite"), ("wooden", "bench")],
            distance=(1, 2),
        ),
    ),
    ("length_out_of_band", replace(PAIR, length_band=(23, 30))),
    ("binding_distance_out_of_range", replace(PAIR, distance_range=(0, 2))),
    ("missing_negative", replace(PAIR, negatives={"attribute": PAIR.negatives["attribute"]})),
    (
        "negative_not_permutation",
        replace(
            PAIR,
            negatives={
                **PAIR.negatives,
                "attribute": "In the garden, a red bench sat right next to a wooden kite at dusk.",
            },
        ),
    ),
    (
        "negative_moves_other_words",
        replace(
            PAIR,
            negatives={**PAIR.negatives, "attribute": "In the garden, a red bench next to sat a wooden kite at dusk."},
        ),
    ),
    (
        "negative_kind_mismatch",
        replace(PAIR, negatives={"attribute": PAIR.negatives["object"], "object": PAIR.negatives["object"]}),
    ),
    ("negative_identical", replace(PAIR, negatives={**PAIR.negatives, "attribute": PAIR.positive})),
    (
        "negative_keeps_binding",
        _example(
            "triple_bind_cycle",
            CYCLE.positive,
            TRIPLE,
            attr_map={"red": "wooden", "wooden": "red"},
            obj_map={"kite": "bench", "bench": "lamp", "lamp": "kite"},
            band=(14, 19),
            distance=(0, 2),
        ),
    ),
    (
        "negative_wrong_bindings",
        replace(
            CYCLE,
            negative_bindings={
                **CYCLE.negative_bindings,
                "attribute": [("striped", "kite"), ("red", "bench"), ("wooden", "lamp")],
            },
        ),
    ),
    (
        "structure:pair_swap",
        _example(
            "pair_swap",
            "In the garden, the bench was wooden and the kite was red at dusk.",
            [("red", "kite"), ("wooden", "bench")],
        ),
    ),
    (
        "structure:triple_bind_cycle",
        replace(
            CYCLE,
            bindings=TRIPLE[:2],
            negative_bindings={
                "attribute": [("wooden", "kite"), ("striped", "bench")],
                "object": [("red", "bench"), ("wooden", "lamp")],
            },
        ),
    ),
    ("structure:triple_bind_swap", replace(CYCLE, construction="triple_bind_swap")),  # cycles: keeps no pair
    (
        "structure:attr_bundle",
        _example(
            "attr_bundle",
            "In the garden, a red blue kite sat next to a wooden woven bench at dusk.",
            [("red", "kite"), ("blue", "kite"), ("wooden", "bench"), ("woven", "bench")],
            attr_map={"red": "wooden", "wooden": "red"},
            band=(10, 15),
            query="a red blue kite and a wooden woven bench",
        ),
    ),
    ("structure:predicative", replace(PAIR, construction="predicative", distance_range=(0, 26))),
    (
        "structure:deferred_bind_respective",
        _example(
            "deferred_bind_respective",
            "At noon, an apple and a kite, as usual, were wooden and red, respectively.",
            [("red", "apple"), ("wooden", "kite")],
            band=(10, 15),
            distance=(1, 4),
        ),
    ),
    (
        "structure:deferred_bind_anaphoric",
        _example(  # a bare "it" is an ambiguous reference (B.2)
            "deferred_bind_anaphoric",
            "At noon, a kite lay beside a bench; it was red, while the latter was wooden.",
            [("red", "kite"), ("wooden", "bench")],
            band=(16, 22),
            distance=(1, 4),
        ),
    ),
    (
        "structure:deferred_bind_anaphoric",
        _example(  # "the former" points at the kite, not the bench
            "deferred_bind_anaphoric",
            "At noon, a kite lay beside a bench; the former was wooden, while the latter was red.",
            [("red", "kite"), ("wooden", "bench")],
            band=(16, 22),
            distance=(1, 4),
        ),
    ),
]


@pytest.mark.parametrize("reason,example", FAILING, ids=[f"{r}-{i}" for i, (r, _) in enumerate(FAILING)])
def test_each_rule_rejects_its_failing_example(reason, example):
    assert reason in REJECTION_REASONS
    assert reason in validate(example)


def test_every_validator_reason_has_a_failing_example():
    covered = {r for r, _ in FAILING} | {
        "frequency_cap",
        "duplicate_word_set",
        "engine_output_unparsable",
        "bindings_differ_from_plan",
    }
    assert covered == set(REJECTION_REASONS)


def test_frequency_cap_and_duplicate_word_set():
    usage = UsageTracker()
    for _ in range(10):
        usage.accept(PAIR)
    assert usage.check(PAIR) == ["frequency_cap", "duplicate_word_set"]
    fresh = _example(
        "pair_swap",
        "In the garden, a striped lamp sat next to a blue cube at dusk.",
        [("blue", "cube"), ("striped", "lamp")],
        distance=(3, 5),
    )
    assert validate(fresh) == [] and usage.check(fresh) == []
    assert usage.cap(2) == 10 and UsageTracker(n_accepted=10_000).cap(4) == pytest.approx(300)


def test_engine_rejections_are_counted_by_reason():
    class Flaky:
        """Unparsable twice, wrong bindings once, then the template engine."""

        name = "flaky"

        def __init__(self) -> None:
            self.calls = 0
            self.inner = TemplateEngine()

        def write(self, plan: ExamplePlan, rng: random.Random) -> WrittenExample:
            self.calls += 1
            if self.calls <= 2:
                raise EngineOutputError("engine_output_unparsable", "no JSON")
            written = self.inner.write(plan, rng)
            if self.calls == 3:
                return replace(written, bindings=tuple(reversed(written.bindings)))
            return written

    examples, stats = generate_examples(20, seed=2, engine=Flaky())
    assert len(examples) == 20
    assert stats["rejected"]["engine_output_unparsable"] == 2
    assert stats["rejected"]["bindings_differ_from_plan"] == 1
    assert stats["n_rejected_examples"] >= 3 and stats["engine"] == "flaky"


def test_parse_engine_json():
    assert parse_engine_json('Sure! {"positive": "A red kite  flew."} done') == "A red kite flew."
    with pytest.raises(EngineOutputError) as err:
        parse_engine_json("I cannot help with that.")
    assert err.value.reason == "engine_output_unparsable"


# ---------------------------------------------------------------------------------------------------------------
# pieces
# ---------------------------------------------------------------------------------------------------------------


def test_permute_words_repairs_articles_and_keeps_case_and_punctuation():
    text = "An apple, oddly, lay beside a kite; an orange umbrella too."
    out = permute_words(text, {"apple": "kite", "kite": "apple", "orange": "red"})
    assert out == "A kite, oddly, lay beside an apple; a red umbrella too."
    assert (
        permute_words("the hourglass and a unicorn", {"hourglass": "unicorn", "unicorn": "hourglass"})
        == "the unicorn and an hourglass"
    )


def test_binding_distance_definitions():
    # adjacent: words between consecutive core phrases (attrs + object)
    assert binding_distance("pair_swap", [(1, 2), (6, 7)]) == 3
    assert binding_distance("attr_bundle", [(1, 3), (2, 3), (5, 7), (6, 7)]) == 1
    # predicative: smallest object-attribute gap; deferred: last object to first attribute
    assert binding_distance("predicative", [(5, 2), (12, 8)]) == 2
    assert binding_distance("deferred_bind_respective", [(9, 2), (11, 5)]) == 3


def test_plans_follow_the_diversity_controls():
    rng = random.Random(0)
    for c in CONSTRUCTIONS * 30:
        plan = plan_example(c, rng)
        if c in HELD_OUT:
            assert plan.length_band[0] >= 16
        if c.startswith("triple"):
            assert len(plan.pairs) == 3 and plan.length_band[0] - 10 in (2, 3, 4, 8, 9, 10, 15, 16, 17, 23, 24, 25)
        if c not in ("pair_swap", "predicative", *HELD_OUT):
            assert plan.distractors == ()
        assert len(plan.distractors) <= 3
        words = [w for p in plan.pairs + plan.distractors for w in p]
        assert len(words) - (2 if c == "attr_bundle" else 0) == len(set(words))
    with pytest.raises(ValueError, match="pair_swap"):
        plan_example("pair_shuffle", rng)


def test_lexicon_is_clean():
    fill = filler_vocabulary()
    assert not fill & set(ATTRIBUTE_POOL) and not fill & set(OBJECT_POOL)
    assert not fill & (RESERVED_WORDS - {"respectively"}) and not fill & AMBIGUOUS_PRONOUNS
    assert len(set(ATTRIBUTE_POOL)) == len(ATTRIBUTE_POOL) > 134  # 1 / 0.75 % cap share per attribute slot
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", w) for w in ATTRIBUTE_POOL + OBJECT_POOL)
    assert (ANIMALS | FOODS | PLANTS) <= set(OBJECT_POOL)
    assert len(REGISTERS) == 32 and len(OPENERS) == 16


def test_assemble_builds_query_and_negatives_from_any_engine_output():
    plan = ExamplePlan("pair_swap", (("red", "kite"), ("wooden", "bench")), length_band=(10, 15), distance_range=(3, 5))
    written = WrittenExample("In the garden, a red kite sat next to a wooden bench at dusk.", plan.pairs)
    ex = assemble("ex1", plan, written, random.Random(0))
    assert validate(ex) == []
    assert ex.negatives == {
        "attribute": "In the garden, a wooden kite sat next to a red bench at dusk.",
        "object": "In the garden, a red bench sat next to a wooden kite at dusk.",
    }


# ---------------------------------------------------------------------------------------------------------------
# engines and files
# ---------------------------------------------------------------------------------------------------------------


def test_make_engine_specs():
    assert make_engine("template").name == "template"
    assert make_engine("hf:org/name").name == "hf:org/name"
    with pytest.raises(ValueError, match="template"):
        make_engine("gpt")


def test_hf_engine_offline_gives_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError) as err:
        generate_triplets(4, engine="hf:some-org/some-model")
    message = str(err.value)
    assert "some-org/some-model" in message and "unreachable" in message and "--engine template" in message


def test_write_and_load_round_trip(tmp_path):
    rows, stats = generate_triplets(200, seed=3)
    paths = write_triplets(tmp_path / "out", rows, stats)
    assert load_triplets(paths["triplets"]) == rows
    assert json.loads(open(paths["stats"]).read())["n_rows"] == 200
    train = load_triplets(tmp_path / "out", split="train")
    assert train and all(r["split"] == "train" for r in train)
    with pytest.raises(ValueError, match="split"):
        load_triplets(paths["triplets"], split="dev")


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda r: r.pop("negative"), "missing field"),
        (lambda r: r.update(negative_kind="both"), "negative_kind"),
        (lambda r: r.update(split="dev"), "split"),
        (lambda r: r.update(construction="novel"), "construction"),
        (lambda r: r.update(bindings=[["red"]]), "bindings"),
        (lambda r: r.update(negative=r["negative"] + " extra"), "permutation"),
    ],
)
def test_load_reports_bad_lines_with_line_numbers(tmp_path, mutate, message):
    rows, stats = generate_triplets(6, seed=4)
    mutate(rows[1])
    path = tmp_path / "triplets.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=rf"triplets.jsonl:2: .*{message}"):
        load_triplets(path)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_validator_never_crashes_on_scrambled_text(data):
    """Arbitrary edits of an engine's text (as an LLM might produce) are rejected with reasons, never an error."""
    base = data.draw(st.sampled_from([PAIR, CYCLE]))
    field_name = data.draw(st.sampled_from(["positive", "query", "attribute", "object"]))
    words = (base.negatives[field_name] if field_name in ("attribute", "object") else getattr(base, field_name)).split()
    words = data.draw(st.permutations(words))
    cut = data.draw(st.integers(0, len(words)))
    text = " ".join(
        words[:cut]
        + data.draw(st.lists(st.sampled_from(["a", "an", "red", "kite", "it", "the"]), max_size=3))
        + words[cut:]
    )
    if field_name in ("attribute", "object"):
        mutated = replace(base, negatives={**base.negatives, field_name: text})
    else:
        mutated = replace(base, **{field_name: text})
    reasons = validate(mutated)
    assert all(r in REJECTION_REASONS for r in reasons)
