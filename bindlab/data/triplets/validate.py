"""Validation of an example against every rule of SABER B.3/B.4; failures are reasons, counted and regenerated.

Bindings are read structurally: every attribute and object word appears exactly once, so a binding is a pair of
word positions in the positive, and a negative that only moves attribute (or object) words keeps the rest in
place. See the package docstring of :mod:`bindlab.data.triplets`.
"""

from __future__ import annotations

import re
from collections import Counter

from bindlab.data.templates import DEFAULT_TEMPLATE, TEMPLATES, grammar_problems
from bindlab.data.triplets.example import Example, group_by_object, query_text
from bindlab.data.triplets.spec import (
    ADJACENT_TYPES,
    ATTRS_PER_OBJECT,
    CONSTRUCTIONS,
    LENGTH_TOLERANCE,
    N_OBJECTS,
    NEGATIVE_KINDS,
)
from bindlab.data.triplets.template_engine import AMBIGUOUS_PRONOUNS, FAMILY_OF, REFERENCE_PAIRS, Pair
from bindlab.data.triplets.words import article_errors, folded, words_of

WORD_RE = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")


def binding_distance(construction: str, slots: list[tuple[int, int]]) -> int:
    """Binding distance in words (B.3) from (attribute position, object position) slots in the positive.

    - attribute-before-object types: the fewest words between consecutive core phrases (``attrs obj``);
    - ``predicative``: the fewest words between an object and its attribute;
    - ``deferred_bind_*``: the words between the last object mention and the first attribute.
    """
    if construction in ADJACENT_TYPES:
        spans: dict[int, int] = {}
        for a, o in slots:
            spans[o] = min(spans.get(o, a), a)
        phrases = sorted((start, o) for o, start in spans.items())
        return min(nxt[0] - prev[1] - 1 for prev, nxt in zip(phrases, phrases[1:], strict=False))
    if construction == "predicative":
        return min(abs(o - a) - 1 for a, o in slots)
    return min(a for a, _ in slots) - max(o for _, o in slots) - 1


def _structure_ok(c: str, bindings: list[Pair], words: list[str], slots: dict[Pair, tuple[int, int]]) -> bool:
    """The per-type structural rules of B.4 on the positive (``bindings`` lower-cased, ``slots`` their positions)."""
    groups = group_by_object(bindings)
    if len(groups) != N_OBJECTS[c] or any(len(v) != ATTRS_PER_OBJECT[c] for v in groups.values()):
        return False
    attr_pos = [slots[b][0] for b in bindings]
    obj_pos = sorted({slots[b][1] for b in bindings})
    if c in ADJACENT_TYPES:
        for o, attrs in groups.items():
            o_pos = slots[(attrs[0], o)][1]
            if sorted(slots[(a, o)][0] for a in attrs) != list(range(o_pos - len(attrs), o_pos)):
                return False
            fams = [FAMILY_OF.get(a) for a in attrs]
            if len(attrs) == 2 and None not in fams and fams[0] == fams[1]:
                return False
        return True
    # detached types: no queried attribute right before any queried object, none next to its own object
    if any(p + 1 in obj_pos for p in attr_pos) or any(abs(a - o) <= 1 for a, o in slots.values()):
        return False
    if c == "predicative":
        return all(a > o for a, o in slots.values())
    if min(attr_pos) <= max(obj_pos):  # deferred: both nouns before any attribute
        return False
    by_obj = sorted(slots.values(), key=lambda s: s[1])
    if c == "deferred_bind_respective":
        resp = [i for i, w in enumerate(words) if w == "respectively"]
        return len(resp) == 1 and resp[0] > max(attr_pos) and [a for a, _ in by_obj] == sorted(a for a, _ in by_obj)
    # anaphoric: no bare pronouns; each attribute resolved by the nearest back-reference word before it
    if AMBIGUOUS_PRONOUNS.intersection(words):
        return False
    ref_words = {w for pair in REFERENCE_PAIRS for w in pair}
    first_obj, second_obj = by_obj[0][1], by_obj[1][1]
    used: list[str] = []
    for a, o in slots.values():
        refs = [i for i in range(max(obj_pos) + 1, a) if words[i] in ref_words]
        if not refs:
            return False
        ref = words[refs[-1]]
        used.append(ref)
        pair = next(p for p in REFERENCE_PAIRS if ref in p)
        if (first_obj if ref == pair[0] else second_obj) != o:
            return False
    return sorted(used) in (sorted(p) for p in REFERENCE_PAIRS)


def _template_query_ok(ex: Example) -> bool:
    """A non-attributive query is exactly its template's form of the bindings (in query order)."""
    if ex.template not in TEMPLATES:
        return False
    try:
        expected = query_text(list(ex.bindings), ex.template)
    except ValueError:  # e.g. 'with' and an attribute family it refuses
        return False
    return words_of(ex.query) == words_of(expected)


def _exactly_once(words: list[str], targets: list[str]) -> bool:
    counts = Counter(words)
    return all(counts[t] == 1 for t in targets)


def validate(ex: Example) -> list[str]:
    """All rules of SABER B.3/B.4 that one example can break; ``[]`` means valid.

    Returns:
        Rejection reasons from :data:`REJECTION_REASONS`, each at most once, in the order checked. Checks that
        need word positions stop early when the words cannot be located unambiguously.
    """
    reasons: list[str] = []

    def add(reason: str) -> None:
        if reason not in reasons:
            reasons.append(reason)

    c = ex.construction
    if c not in CONSTRUCTIONS:
        return ["unknown_construction"]
    attrs = list(dict.fromkeys(a for a, _ in ex.bindings))
    objs = list(dict.fromkeys(o for _, o in ex.bindings))
    d_attrs = [a for a, _ in ex.distractors]
    d_objs = [o for _, o in ex.distractors]
    if any(not WORD_RE.fullmatch(a) for a in attrs + d_attrs):
        add("multi_word_attribute")
    if any(not WORD_RE.fullmatch(o) for o in objs + d_objs):
        add("multi_word_object")
    everything = [w.lower() for w in attrs + objs + d_attrs + d_objs]
    if len(set(everything)) != len(everything) or len(attrs) != len(ex.bindings):
        add("duplicate_word")
    if reasons:
        return reasons
    attrs, objs, d_attrs, d_objs = ([w.lower() for w in ws] for ws in (attrs, objs, d_attrs, d_objs))
    bindings = [(a.lower(), o.lower()) for a, o in ex.bindings]

    # every word exactly once in the query, the positive and both negatives
    if set(ex.negatives) != set(NEGATIVE_KINDS) or set(ex.negative_bindings) != set(NEGATIVE_KINDS):
        return ["missing_negative"]
    texts = {"query": ex.query, "positive": ex.positive, **ex.negatives}
    words = {k: words_of(t) for k, t in texts.items()}
    for name, ws in words.items():
        a_targets, o_targets = (attrs, objs) if name == "query" else (attrs + d_attrs, objs + d_objs)
        if not _exactly_once(ws, a_targets):
            add("attribute_not_exactly_once")
        if not _exactly_once(ws, o_targets):
            add("object_not_exactly_once")
    if set(words["query"]) & set(d_attrs + d_objs):
        add("distractor_in_query")
    if reasons:
        return reasons
    for ws in words.values():
        if article_errors(ws):
            add("article_mismatch")
    if any(grammar_problems(t) for t in texts.values()):  # is/are, "a pair of", noun attributes after "was"
        add("agreement")

    # the query lists each object right after its attributes (or is exactly its sentence template's form)
    if ex.template in (None, DEFAULT_TEMPLATE):
        qpos = {w: i for i, w in enumerate(words["query"])}
        for o, group in group_by_object(bindings).items():
            if sorted(qpos[a] for a in group) != list(range(qpos[o] - len(group), qpos[o])):
                add("query_structure")
    elif not _template_query_ok(ex):
        add("query_structure")

    pos_words = words["positive"]
    where = {w: i for i, w in enumerate(pos_words)}
    slots = {(a, o): (where[a], where[o]) for a, o in bindings}
    if not _structure_ok(c, bindings, pos_words, slots):
        add(f"structure:{c}")
    lo, hi = ex.length_band
    if not lo - LENGTH_TOLERANCE[0] <= len(pos_words) <= hi + LENGTH_TOLERANCE[1]:
        add("length_out_of_band")
    if N_OBJECTS[c] == len(objs) and not (
        ex.distance_range[0] <= binding_distance(c, list(slots.values())) <= ex.distance_range[1]
    ):
        add("binding_distance_out_of_range")

    for r in _negative_reasons(ex, bindings, pos_words, words, slots):
        add(r)
    return reasons


def _negative_reasons(
    ex: Example,
    bindings: list[Pair],
    pos_words: list[str],
    words: dict[str, list[str]],
    slots: dict[Pair, tuple[int, int]],
) -> list[str]:
    """Negative rules: word-level permutation, only binding words moved, every targeted binding broken."""
    out: list[str] = []
    attr_slots = {a for a, _ in slots.values()}
    obj_slots = {o for _, o in slots.values()}
    pos_set = set(bindings)
    pos_folded = folded(pos_words)
    pos_counts = Counter(pos_folded)
    actual: dict[str, set[Pair]] = {}
    for kind in NEGATIVE_KINDS:
        neg = words[kind]
        neg_folded = folded(neg)
        if len(neg) != len(pos_words) or Counter(neg_folded) != pos_counts:
            out.append("negative_not_permutation")
            continue
        moved = {i for i, (p, n) in enumerate(zip(pos_folded, neg_folded, strict=False)) if p != n}
        if not moved:
            out.append("negative_identical")
            continue
        if not moved <= attr_slots | obj_slots:
            out.append("negative_moves_other_words")
            continue
        if not moved <= (attr_slots if kind == "attribute" else obj_slots):
            out.append("negative_kind_mismatch")
        actual[kind] = {(neg[a], neg[o]) for a, o in slots.values()}
        intended = {(a.lower(), o.lower()) for a, o in ex.negative_bindings[kind]}
        if actual[kind] != intended:
            out.append("negative_wrong_bindings")
        kept = actual[kind] & pos_set
        if ex.construction == "attr_bundle":
            before, after = group_by_object(bindings), group_by_object(sorted(actual[kind]))
            if any(set(before[o]) == set(after.get(o, [])) for o in before):
                out.append("negative_keeps_binding")
            if kind == "attribute" and len(moved) != len(before):  # one word per object (B.2)
                out.append("structure:attr_bundle")
        elif ex.construction == "triple_bind_swap":
            if len(kept) > 1:
                out.append("negative_keeps_binding")
            elif not kept:
                out.append("structure:triple_bind_swap")
        elif kept:
            out.append("negative_keeps_binding")
    if len(actual) == 2:
        if [w for w in words["attribute"]] == [w for w in words["object"]]:
            out.append("negative_identical")
        if ex.construction == "triple_bind_swap" and (actual["attribute"] & pos_set) != (actual["object"] & pos_set):
            out.append("structure:triple_bind_swap")
    return out
