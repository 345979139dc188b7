"""The construction types, splits and generation limits of the finetuning triplets (SABER appendix B)."""

from __future__ import annotations

CONSTRUCTIONS: tuple[str, ...] = (
    "pair_swap",
    "triple_bind_cycle",
    "triple_bind_swap",
    "attr_bundle",
    "predicative",
    "deferred_bind_anaphoric",
    "deferred_bind_respective",
)
HELD_OUT: tuple[str, ...] = ("deferred_bind_anaphoric", "deferred_bind_respective")
IN_DISTRIBUTION: tuple[str, ...] = tuple(c for c in CONSTRUCTIONS if c not in HELD_OUT)
SPLITS: tuple[str, ...] = ("train", "val", "test", "heldout")
# Extra test splits, present only when asked for: rows whose query words were held out of training
# (``--holdout-words``), and test rows re-written in a held-out sentence template (``--holdout-templates``).
UNSEEN_WORDS_SPLIT = "test_unseen_words"
TEMPLATE_SPLIT_PREFIX = "test_template_"


def template_split(template: str) -> str:
    """The test split of a held-out sentence template, e.g. ``test_template_predicative``."""
    return TEMPLATE_SPLIT_PREFIX + template


def is_split(name: str) -> bool:
    """Whether ``name`` is a split a triplets file may hold (the four of :data:`SPLITS` or an extra test split)."""
    from bindlab.data.templates import TEMPLATES

    return name in SPLITS or name == UNSEEN_WORDS_SPLIT or name in {template_split(t) for t in TEMPLATES}


NEGATIVE_KINDS: tuple[str, ...] = ("attribute", "object")

# B.5: 80,000 in-distribution examples over five types, 20,000 held out over two.
CONSTRUCTION_SHARE: dict[str, float] = {c: (0.10 if c in HELD_OUT else 0.16) for c in CONSTRUCTIONS}
N_OBJECTS: dict[str, int] = {c: 3 if c.startswith("triple") else 2 for c in CONSTRUCTIONS}
ATTRS_PER_OBJECT: dict[str, int] = {c: 2 if c == "attr_bundle" else 1 for c in CONSTRUCTIONS}
ADJACENT_TYPES = ("pair_swap", "triple_bind_cycle", "triple_bind_swap", "attr_bundle")
DISTRACTOR_TYPES = ("pair_swap", "predicative", "deferred_bind_anaphoric", "deferred_bind_respective")
MAX_DISTRACTORS = 3

# B.3 length bands (words); three-object types shift up by 2-4 words; deferred types use the three longer bands.
LENGTH_BANDS: tuple[tuple[int, int], ...] = ((10, 15), (16, 22), (23, 30), (31, 42))
LENGTH_TOLERANCE = (1, 4)  # one word below, four above the band
# B.3 binding-distance windows (inclusive word counts), see binding_distance().
DISTANCE_RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    "pair_swap": ((0, 2), (3, 5), (6, 9), (10, 13), (14, 26)),
    "attr_bundle": ((0, 2), (3, 5), (6, 9), (10, 13), (14, 26)),
    "triple_bind_cycle": ((0, 2), (3, 4), (5, 6), (7, 13)),
    "triple_bind_swap": ((0, 2), (3, 4), (5, 6), (7, 13)),
    "predicative": ((1, 2), (3, 5), (6, 9), (10, 14)),
    "deferred_bind_anaphoric": ((1, 4), (5, 9), (10, 16)),
    "deferred_bind_respective": ((1, 4), (5, 9), (10, 16)),
}
# Shortest caption (context included) each type needs at distance 0, to pick a band that fits the distance.
MIN_WORDS = {
    "pair_swap": 10,
    "attr_bundle": 12,
    "triple_bind_cycle": 13,
    "triple_bind_swap": 13,
    "predicative": 10,
    "deferred_bind_respective": 12,
    "deferred_bind_anaphoric": 16,
}
# B.3 frequency cap: max(10, fraction x accepted examples); the fraction is 0.75 % per attribute in the example
# (1.5 %, 2.25 %, 3 % for two, three, four attributes). Applied to queried words; distractors are free.
CAP_MIN = 10
CAP_FRACTION_PER_ATTRIBUTE = 0.0075

REJECTION_REASONS: tuple[str, ...] = (
    "unknown_construction",
    "multi_word_attribute",
    "multi_word_object",
    "duplicate_word",
    "attribute_not_exactly_once",
    "object_not_exactly_once",
    "distractor_in_query",
    "query_structure",
    "article_mismatch",
    "agreement",
    "length_out_of_band",
    "binding_distance_out_of_range",
    "missing_negative",
    "negative_not_permutation",
    "negative_moves_other_words",
    "negative_kind_mismatch",
    "negative_identical",
    "negative_keeps_binding",
    "negative_wrong_bindings",
    "bindings_differ_from_plan",
    "frequency_cap",
    "duplicate_word_set",
    "engine_output_unparsable",
    *(f"structure:{c}" for c in CONSTRUCTIONS),
)
