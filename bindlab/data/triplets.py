"""Text-only finetuning triplets (SABER section 4, appendix B): seven construction types, validated.

Pipeline per example (B.1): the generator *plans* it (construction type, queried bindings, distractors, context,
register, opener, length band, binding-distance range, with running frequency caps), an :class:`Engine` *writes*
the positive caption, the generator *assembles* the query (pairs in random order) and two hard negatives (word-level
permutations of the positive: one permutes attributes, one permutes objects, articles repaired), and
:func:`validate` checks every rule of B.3/B.4. Failures are discarded, counted by reason and regenerated.

Bindings are read structurally, not parsed from free text: every attribute and object word appears exactly once,
so each binding is a pair of word *positions* in the positive. A negative that only moves attribute (or object)
words keeps every other word in place, so the same positions carry its bindings; reading the words at those
positions gives the negative's binding set, which must break every queried binding (B.4). Where the text itself
carries the binding (back-references in ``deferred_bind_anaphoric``, word order in ``deferred_bind_respective``)
the validator also checks that the text agrees with the declared bindings.

Two deliberate readings of the paper, because B.2 and B.4 pull in different directions:

- ``triple_bind_swap`` keeps exactly one queried pair bound in both negatives (B.2); the other two must break.
- ``attr_bundle`` binds two attributes to each object and its attribute negative swaps one family slot only (B.2);
  "breaks every binding" is read per object: each object's attribute set must change.

Splits (B.5): the five in-distribution types split 80/10/10 into train/val/test by example (deterministic from the
seed); every example of the two deferred_bind types is ``heldout``. Each example yields two triplet rows
(``ex000123-a`` with the attribute negative, ``ex000123-o`` with the object negative).
"""

from __future__ import annotations

import json
import os
import random
import re
import string
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from functools import lru_cache
from typing import Any, Callable, Protocol, Sequence

from bindlab.data.schema import DataError, read_jsonl, write_jsonl
from bindlab.data.triplet_templates import (
    AMBIGUOUS_PRONOUNS,
    ATTRIBUTE_FAMILIES,
    FAMILY_OF,
    AttributeFamily,
    OBJECT_POOL,
    OPENERS,
    PLACES,
    REFERENCE_PAIRS,
    REGISTERS,
    TIMES,
    WEATHERS,
    ExamplePlan,
    Pair,
    TemplateEngine,
    WrittenExample,
    object_kind,
)
from bindlab.data.vocab import article, conjoin

CONSTRUCTIONS: tuple[str, ...] = (
    "pair_swap", "triple_bind_cycle", "triple_bind_swap", "attr_bundle", "predicative",
    "deferred_bind_anaphoric", "deferred_bind_respective",
)
HELD_OUT: tuple[str, ...] = ("deferred_bind_anaphoric", "deferred_bind_respective")
IN_DISTRIBUTION: tuple[str, ...] = tuple(c for c in CONSTRUCTIONS if c not in HELD_OUT)
SPLITS: tuple[str, ...] = ("train", "val", "test", "heldout")
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
_MIN_WORDS = {"pair_swap": 10, "attr_bundle": 12, "triple_bind_cycle": 13, "triple_bind_swap": 13,
              "predicative": 10, "deferred_bind_respective": 12, "deferred_bind_anaphoric": 16}
# B.3 frequency cap: max(10, fraction x accepted examples); the fraction is 0.75 % per attribute in the example
# (1.5 %, 2.25 %, 3 % for two, three, four attributes). Applied to queried words; distractors are free.
CAP_MIN = 10
CAP_FRACTION_PER_ATTRIBUTE = 0.0075

REJECTION_REASONS: tuple[str, ...] = (
    "unknown_construction", "multi_word_attribute", "multi_word_object", "duplicate_word",
    "attribute_not_exactly_once", "object_not_exactly_once", "distractor_in_query", "query_structure",
    "article_mismatch", "length_out_of_band", "binding_distance_out_of_range", "missing_negative",
    "negative_not_permutation", "negative_moves_other_words", "negative_kind_mismatch", "negative_identical",
    "negative_keeps_binding", "negative_wrong_bindings", "bindings_differ_from_plan", "frequency_cap",
    "duplicate_word_set", "engine_output_unparsable",
    *(f"structure:{c}" for c in CONSTRUCTIONS),
)

_WORD_RE = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")
_PUNCT = string.punctuation + "\u2018\u2019\u201c\u201d\u2013\u2014\u2026"  # stripped from word edges


# ----------------------------------------------------------------------------------------------------------------
# Words and positions
# ----------------------------------------------------------------------------------------------------------------


def words_of(text: str) -> list[str]:
    """Lower-cased words of a text, punctuation stripped (hyphens and apostrophes inside words kept)."""
    return [w for t in text.lower().split() if (w := t.strip(_PUNCT))]


def _folded(words: list[str]) -> list[str]:
    """Words with ``an`` read as ``a`` (negatives are permutations up to article repair)."""
    return ["a" if w == "an" else w for w in words]


def article_errors(words: list[str]) -> list[int]:
    """Positions of ``a``/``an`` that disagree with the pronunciation of the next word."""
    return [i for i, w in enumerate(words[:-1]) if w in ("a", "an") and w != article(words[i + 1])]


def permute_words(text: str, replacements: dict[str, str]) -> str:
    """Replace whole words (each ``old -> new``, simultaneously), keep punctuation and case, repair a/an.

    Only articles directly before a replaced word are repaired ("an apple" -> "a kite"), so the result is a
    word-level permutation of the input whenever ``replacements`` permutes words of the text.
    """
    toks = text.split()
    changed: list[int] = []
    for i, tok in enumerate(toks):
        core = tok.strip(_PUNCT)
        new = replacements.get(core.lower())
        if new is None:
            continue
        start = tok.find(core)
        new = new[0].upper() + new[1:] if core[:1].isupper() else new
        toks[i] = tok[:start] + new + tok[start + len(core):]
        changed.append(i)
    for i in changed:
        j = i - 1
        if j >= 0 and toks[j].lower() in ("a", "an"):  # a bare article right before a replaced word
            right = article(toks[i].strip(_PUNCT))
            toks[j] = right.capitalize() if toks[j][0].isupper() else right
    return " ".join(toks)


# ----------------------------------------------------------------------------------------------------------------
# Examples
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Example:
    """One validated (or to-be-validated) example: a query, a positive and two hard negatives.

    Attributes:
        id: example id, e.g. ``"ex000123"``; its rows get ``-a`` / ``-o``.
        construction: one of :data:`CONSTRUCTIONS`.
        query: the queried pairs in random order, e.g. ``"a red kite and a wooden bench"``.
        positive: the caption expressing the bindings.
        negatives: ``{"attribute": text, "object": text}``.
        bindings: queried (attribute, object) pairs in query order.
        negative_bindings: the bindings each negative is meant to express (same keys as ``negatives``).
        distractors: unqueried (attribute, object) pairs in the positive.
        length_band: target length of the positive in words.
        distance_range: target binding distance.
        engine: name of the engine that wrote the positive.
    """

    id: str
    construction: str
    query: str
    positive: str
    negatives: dict[str, str]
    bindings: list[Pair]
    negative_bindings: dict[str, list[Pair]]
    distractors: list[Pair] = field(default_factory=list)
    length_band: tuple[int, int] = (10, 42)
    distance_range: tuple[int, int] = (0, 26)
    engine: str = "template"

    def rows(self, split: str) -> list[dict[str, Any]]:
        """The two triplet rows (DESIGN.md "Triplets"): attribute negative first, then object negative."""
        return [
            {"id": f"{self.id}-{kind[0]}", "construction": self.construction, "query": self.query,
             "positive": self.positive, "negative": self.negatives[kind], "negative_kind": kind,
             "bindings": [list(b) for b in self.bindings], "split": split}
            for kind in NEGATIVE_KINDS
        ]


def _group_by_object(pairs: list[Pair] | tuple[Pair, ...]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for a, o in pairs:
        out.setdefault(o, []).append(a)
    return out


def negative_maps(plan: ExamplePlan, rng: random.Random) -> dict[str, dict[str, str]]:
    """Word permutations for the two negatives of a plan (B.2): ``{"attribute": {old: new}, "object": {...}}``.

    pair-like types swap the two attributes / objects; ``triple_bind_cycle`` rotates all three;
    ``triple_bind_swap`` transposes two and keeps the same third pair in both; ``attr_bundle`` swaps the
    attributes of one family slot between the two objects and swaps the nouns.
    """
    groups = _group_by_object(plan.pairs)
    objects = list(groups)
    if plan.construction == "attr_bundle":
        slot = rng.randrange(2)
        a1, a2 = groups[objects[0]][slot], groups[objects[1]][slot]
        return {"attribute": {a1: a2, a2: a1}, "object": {objects[0]: objects[1], objects[1]: objects[0]}}
    attrs = [groups[o][0] for o in objects]
    n = len(objects)
    if plan.construction == "triple_bind_cycle":
        step = rng.choice((1, -1))
        order = [(i + step) % n for i in range(n)]
    elif plan.construction == "triple_bind_swap":
        keep = rng.randrange(n)
        i, j = [k for k in range(n) if k != keep]
        order = list(range(n))
        order[i], order[j] = j, i
    else:
        order = [1, 0]
    return {"attribute": {attrs[i]: attrs[order[i]] for i in range(n)},
            "object": {objects[i]: objects[order[i]] for i in range(n)}}


def query_text(pairs: list[Pair]) -> str:
    """``"a red kite and a wooden bench"``; bundles keep their attributes together (``"a red wooden kite"``)."""
    groups = _group_by_object(pairs)
    phrases = [" ".join([article(attrs[0]), *attrs, o]) for o, attrs in groups.items()]
    return conjoin(phrases)


def assemble(example_id: str, plan: ExamplePlan, written: WrittenExample, rng: random.Random) -> Example:
    """Build the query (pairs in random order) and both negatives from an engine's output."""
    groups = list(_group_by_object(plan.pairs).items())
    rng.shuffle(groups)
    query_pairs = [(a, o) for o, attrs in groups for a in attrs]
    maps = negative_maps(plan, rng)
    negatives = {kind: permute_words(written.positive, maps[kind]) for kind in NEGATIVE_KINDS}
    intended = {
        "attribute": [(maps["attribute"].get(a, a), o) for a, o in plan.pairs],
        "object": [(a, maps["object"].get(o, o)) for a, o in plan.pairs],
    }
    return Example(example_id, plan.construction, query_text(query_pairs), written.positive, negatives,
                   query_pairs, intended, list(written.distractors), plan.length_band, plan.distance_range,
                   written.engine)


# ----------------------------------------------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------------------------------------------


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
        return min(nxt[0] - prev[1] - 1 for prev, nxt in zip(phrases, phrases[1:]))
    if construction == "predicative":
        return min(abs(o - a) - 1 for a, o in slots)
    return min(a for a, _ in slots) - max(o for _, o in slots) - 1


def _structure_ok(c: str, bindings: list[Pair], words: list[str], slots: dict[Pair, tuple[int, int]]) -> bool:
    """The per-type structural rules of B.4 on the positive (``bindings`` lower-cased, ``slots`` their positions)."""
    groups = _group_by_object(bindings)
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
        return (len(resp) == 1 and resp[0] > max(attr_pos)
                and [a for a, _ in by_obj] == sorted(a for a, _ in by_obj))
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
    if any(not _WORD_RE.fullmatch(a) for a in attrs + d_attrs):
        add("multi_word_attribute")
    if any(not _WORD_RE.fullmatch(o) for o in objs + d_objs):
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

    # the query lists each object right after its attributes
    qpos = {w: i for i, w in enumerate(words["query"])}
    for o, group in _group_by_object(bindings).items():
        if sorted(qpos[a] for a in group) != list(range(qpos[o] - len(group), qpos[o])):
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


def _negative_reasons(ex: Example, bindings: list[Pair], pos_words: list[str], words: dict[str, list[str]],
                      slots: dict[Pair, tuple[int, int]]) -> list[str]:
    """Negative rules: word-level permutation, only binding words moved, every targeted binding broken."""
    out: list[str] = []
    attr_slots = {a for a, _ in slots.values()}
    obj_slots = {o for _, o in slots.values()}
    pos_set = set(bindings)
    pos_folded = _folded(pos_words)
    pos_counts = Counter(pos_folded)
    actual: dict[str, set[Pair]] = {}
    for kind in NEGATIVE_KINDS:
        neg = words[kind]
        neg_folded = _folded(neg)
        if len(neg) != len(pos_words) or Counter(neg_folded) != pos_counts:
            out.append("negative_not_permutation")
            continue
        moved = {i for i, (p, n) in enumerate(zip(pos_folded, neg_folded)) if p != n}
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
            before, after = _group_by_object(bindings), _group_by_object(sorted(actual[kind]))
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


# ----------------------------------------------------------------------------------------------------------------
# Engines
# ----------------------------------------------------------------------------------------------------------------


class Engine(Protocol):
    """Writes the positive caption for a plan. ``name`` is recorded as provenance."""

    name: str

    def write(self, plan: ExamplePlan, rng: random.Random) -> WrittenExample:
        """Return the caption for ``plan``; raise :class:`EngineOutputError` for an unusable output."""
        ...


class EngineOutputError(ValueError):
    """An engine produced something that is not a caption (counted as a rejection, then regenerated)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


_TYPE_INSTRUCTIONS = {
    "pair_swap": "Each queried attribute directly precedes its object (\"a red kite\").",
    "triple_bind_cycle": "Each queried attribute directly precedes its object (\"a red kite\").",
    "triple_bind_swap": "Each queried attribute directly precedes its object (\"a red kite\").",
    "attr_bundle": "Each object is directly preceded by both of its attributes (\"a red wooden kite\").",
    "predicative": ("Detach every queried attribute from its object with a copula, change-of-state verb or "
                    "relative clause (\"the kite was red\"); never write the attribute right before any object."),
    "deferred_bind_respective": ("Mention both objects first, then assign the attributes together in the same "
                                 "order followed by the word 'respectively' (\"the kite and the bench were red "
                                 "and wooden, respectively\")."),
    "deferred_bind_anaphoric": ("Mention both objects first, then assign each attribute by back-reference with "
                                "'the {r1}' (first-mentioned object) and 'the {r2}' (second-mentioned object); "
                                "never use it, its, they, them or their."),
}


def parse_engine_json(text: str) -> str:
    """The caption from a language model's JSON answer ``{"positive": "..."}`` (first JSON object in the text).

    Raises:
        EngineOutputError: ``engine_output_unparsable`` when no such object is found.
    """
    start = text.find("{")
    while start != -1:
        end = text.find("}", start)
        while end != -1:
            try:
                obj = json.loads(text[start:end + 1])
            except json.JSONDecodeError:
                end = text.find("}", end + 1)
                continue
            caption = obj.get("positive") if isinstance(obj, dict) else None
            if isinstance(caption, str) and caption.strip():
                return " ".join(caption.split())
            break
        start = text.find("{", start + 1)
    raise EngineOutputError("engine_output_unparsable", text[:80])


class HFEngine:
    """A transformers causal LM writes the captions (chat template, JSON answer); loads lazily, safetensors only.

    Its outputs go through the same :func:`validate` as the template engine's; anything unusable is counted as a
    rejection and regenerated.

    Args:
        model_id: hub id ``ORG/NAME`` or a local folder.
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``.
        max_new_tokens: generation budget per caption.
        temperature: sampling temperature; 0 means greedy decoding.
        revision: optional hub revision.
    """

    def __init__(self, model_id: str, device: str = "auto", max_new_tokens: int = 160, temperature: float = 0.8,
                 revision: str | None = None) -> None:
        if not model_id:
            raise ValueError("HFEngine needs a model id, e.g. hf:google/gemma-3-1b-it")
        self.model_id = model_id
        self.name = f"hf:{model_id}"
        self.device = device
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.revision = revision
        self._model: Any = None
        self._tokenizer: Any = None

    def load(self) -> None:
        """Load tokenizer and model once. Raises ValueError with one clear sentence when that is impossible."""
        if self._model is not None:
            return
        from bindlab.config import hub_offline, resolve_device

        local = Path(self.model_id).expanduser().exists()
        if not local and hub_offline():
            raise ValueError(
                f"engine {self.name}: the Hugging Face hub is unreachable (offline), so {self.model_id!r} could not "
                "be downloaded; download it while online, pass a local folder (hf:/path/to/model) or use "
                "--engine template")
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.model_id, revision=self.revision)
            model = AutoModelForCausalLM.from_pretrained(self.model_id, revision=self.revision,
                                                         use_safetensors=True, dtype="auto")
        except (OSError, ValueError, ImportError) as e:
            raise ValueError(f"engine {self.name}: could not load {self.model_id!r} ({type(e).__name__}: {e}); "
                             "check the id, that it has safetensors weights, or use --engine template") from None
        if getattr(self._tokenizer, "chat_template", None) is None:
            raise ValueError(f"engine {self.name}: {self.model_id!r} has no chat template; use an instruction-tuned "
                             "model")
        self._model = model.to(resolve_device(self.device)).eval()

    def prompt(self, plan: ExamplePlan) -> str:
        """The user message for ``plan``: bindings, structure, context, register, opener, length and distance."""
        r1, r2 = plan.references
        lines = [
            "Write one caption sentence for a text-retrieval dataset.",
            f"Construction: {plan.construction}. " + _TYPE_INSTRUCTIONS[plan.construction].format(r1=r1, r2=r2),
            "Attribute-object bindings to express (objects in this order of first mention): "
            + "; ".join(f"{a} -> {o}" for a, o in plan.pairs) + ".",
        ]
        if plan.construction == "deferred_bind_anaphoric" and plan.reverse_reference:
            lines.append(f"Assign the second-mentioned object's attribute first (start with 'the {r2}').")
        if plan.distractors:
            lines.append("Also weave in these extra pairs, each attribute right before its object: "
                         + ", ".join(f"{a} {o}" for a, o in plan.distractors) + ".")
        lines += [
            f"Setting: {plan.context}. Register: {plan.register}. Opener style: {plan.opener.replace('_', ' ')}.",
            f"Length: {plan.length_band[0]}-{plan.length_band[1]} words. Binding distance: "
            f"{plan.distance_range[0]}-{plan.distance_range[1]} words.",
            "Use every attribute and object word exactly once and no other attribute or object words.",
            'Answer with JSON only: {"positive": "<the caption>"}',
        ]
        return "\n".join(lines)

    def write(self, plan: ExamplePlan, rng: random.Random) -> WrittenExample:
        """Generate, parse and return the caption for ``plan``."""
        import torch

        self.load()
        messages = [{"role": "user", "content": self.prompt(plan)}]
        prompt = self._tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        inputs = self._tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(self._model.device)
        torch.manual_seed(rng.getrandbits(63))
        sample = self.temperature > 0
        with torch.no_grad():
            out = self._model.generate(
                **inputs, max_new_tokens=self.max_new_tokens, do_sample=sample,
                temperature=self.temperature if sample else None, top_p=0.95 if sample else None,
                pad_token_id=self._tokenizer.pad_token_id or self._tokenizer.eos_token_id)
        text = self._tokenizer.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
        return WrittenExample(parse_engine_json(text), plan.pairs, plan.distractors, self.name)


def make_engine(spec: str) -> Engine:
    """``"template"`` -> :class:`TemplateEngine`; ``"hf:ORG/NAME"`` -> :class:`HFEngine` (loaded on first use)."""
    spec = (spec or "").strip()
    if spec == "template":
        return TemplateEngine()
    if spec.startswith("hf:") and len(spec) > 3:
        return HFEngine(spec[3:])
    raise ValueError(f"unknown engine {spec!r}; choose 'template' or 'hf:ORG/NAME' (a causal LM with a chat "
                     "template)")


# ----------------------------------------------------------------------------------------------------------------
# Planning with diversity controls and frequency caps
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class UsageTracker:
    """Running word counts over accepted examples: frequency caps and duplicate word sets (B.3)."""

    counts: Counter = field(default_factory=Counter)
    n_accepted: int = 0
    seen_sets: set = field(default_factory=set)

    def cap(self, n_attributes: int) -> float:
        """Most uses a queried word may have so far, for an example with ``n_attributes`` queried attributes."""
        return max(CAP_MIN, CAP_FRACTION_PER_ATTRIBUTE * n_attributes * self.n_accepted)

    def check(self, ex: Example) -> list[str]:
        """``frequency_cap`` / ``duplicate_word_set`` reasons for accepting ``ex`` now."""
        reasons = []
        words = {w for b in ex.bindings for w in b}
        cap = self.cap(len(ex.bindings))
        if any(self.counts[w] >= cap for w in words):
            reasons.append("frequency_cap")
        if (ex.construction, frozenset(words)) in self.seen_sets:
            reasons.append("duplicate_word_set")
        return reasons

    def accept(self, ex: Example) -> None:
        words = {w for b in ex.bindings for w in b}
        self.counts.update(words)
        self.seen_sets.add((ex.construction, frozenset(words)))
        self.n_accepted += 1


def _sample(pool: Sequence[str], k: int, rng: random.Random, usage: UsageTracker, cap: float,
            exclude: set[str]) -> list[str]:
    """``k`` distinct words of ``pool`` under the cap (falls back to capped words, which then get rejected)."""
    chosen: list[str] = []
    for _ in range(20 * k):  # rejection sampling: caps rarely bind, so this almost always succeeds
        w = pool[rng.randrange(len(pool))]
        if w not in exclude and w not in chosen and usage.counts[w] < cap:
            chosen.append(w)
            if len(chosen) == k:
                return chosen
    fresh = [w for w in pool if usage.counts[w] < cap and w not in exclude]
    if len(fresh) < k:
        fresh = [w for w in pool if w not in exclude]
    return rng.sample(fresh, k)


@lru_cache(maxsize=None)
def _families_for(kinds: frozenset[str]) -> tuple[AttributeFamily, ...]:
    """Attribute families plausible for every object kind in ``kinds``."""
    return tuple(f for f in ATTRIBUTE_FAMILIES if kinds <= f.kinds)


@lru_cache(maxsize=None)
def _attribute_pool(families: tuple[AttributeFamily, ...]) -> tuple[str, ...]:
    return tuple(w for f in families for w in f.words)


def plan_example(construction: str, rng: random.Random, usage: UsageTracker | None = None) -> ExamplePlan:
    """Sample every diversity control of B.3 for one example of ``construction``."""
    if construction not in CONSTRUCTIONS:
        raise ValueError(f"unknown construction {construction!r}; choose from {CONSTRUCTIONS}")
    usage = usage if usage is not None else UsageTracker()
    n_obj, per = N_OBJECTS[construction], ATTRS_PER_OBJECT[construction]
    cap = usage.cap(n_obj * per)
    objects = _sample(OBJECT_POOL, n_obj, rng, usage, cap, set())
    families = _families_for(frozenset(object_kind(o) for o in objects))
    if per == 2:
        f1, f2 = sorted(rng.sample(families, 2), key=lambda f: f.rank)
        col1 = _sample(f1.words, n_obj, rng, usage, cap, set())
        col2 = _sample(f2.words, n_obj, rng, usage, cap, set(col1))
        pairs = tuple(p for o, a1, a2 in zip(objects, col1, col2) for p in ((a1, o), (a2, o)))
    else:
        attrs = _sample(_attribute_pool(families), n_obj, rng, usage, cap, set())
        pairs = tuple(zip(attrs, objects))
    distractors: list[Pair] = []
    if construction in DISTRACTOR_TYPES:
        used = {w for p in pairs for w in p}
        for _ in range(rng.randint(0, MAX_DISTRACTORS)):
            o = _sample(OBJECT_POOL, 1, rng, usage, float("inf"), used)[0]
            family = rng.choice(_families_for(frozenset({object_kind(o)})))
            a = _sample(family.words, 1, rng, usage, float("inf"), used)[0]
            used |= {a, o}
            distractors.append((a, o))
    distance = rng.choice(DISTANCE_RANGES[construction])
    return ExamplePlan(
        construction=construction, pairs=pairs, distractors=tuple(distractors), place=rng.choice(PLACES),
        time=rng.choice(TIMES) if rng.random() < 0.5 else "",
        weather=rng.choice(WEATHERS) if rng.random() < 0.4 else "",
        register=rng.choice(REGISTERS)[0], opener=rng.choice(OPENERS)[0],
        length_band=_pick_band(construction, distance, len(distractors), rng), distance_range=distance,
        reverse_reference=rng.random() < 0.5, references=rng.choice(REFERENCE_PAIRS),
    )


def _pick_band(construction: str, distance: tuple[int, int], n_distractors: int, rng: random.Random) -> tuple[int, int]:
    """A length band long enough for the distance range (B.3); deferred types use the three longer bands."""
    bands = LENGTH_BANDS[1:] if construction in HELD_OUT else LENGTH_BANDS
    if N_OBJECTS[construction] == 3:
        shift = rng.randint(2, 4)
        bands = tuple((lo + shift, hi + shift) for lo, hi in bands)
    n_distances = 2 if construction in ("predicative", "triple_bind_cycle", "triple_bind_swap") else 1
    need = _MIN_WORDS[construction] + n_distances * distance[0] + 4 * n_distractors
    fitting = [b for b in bands if b[1] >= need]
    return rng.choice(fitting) if fitting else bands[-1]


def _schedule(n_examples: int, rng: random.Random) -> list[str]:
    """Construction per example: exact quotas from :data:`CONSTRUCTION_SHARE` (largest remainder), shuffled."""
    raw = {c: CONSTRUCTION_SHARE[c] * n_examples for c in CONSTRUCTIONS}
    counts = {c: int(v) for c, v in raw.items()}
    for c in sorted(CONSTRUCTIONS, key=lambda c: raw[c] - counts[c], reverse=True)[: n_examples - sum(counts.values())]:
        counts[c] += 1
    order = [c for c in CONSTRUCTIONS for _ in range(counts[c])]
    rng.shuffle(order)
    return order


def assign_splits(examples: list[Example], seed: int) -> list[str]:
    """Split per example: held-out types -> ``heldout``; the rest 80/10/10 train/val/test, shuffled by seed."""
    splits = ["heldout"] * len(examples)
    idx = [i for i, ex in enumerate(examples) if ex.construction not in HELD_OUT]
    random.Random(f"bindlab-triplet-split-{seed}").shuffle(idx)
    n_train, n_val = round(0.8 * len(idx)), round(0.1 * len(idx))
    for rank, i in enumerate(idx):
        splits[i] = "train" if rank < n_train else "val" if rank < n_train + n_val else "test"
    return splits


# ----------------------------------------------------------------------------------------------------------------
# Generation and files
# ----------------------------------------------------------------------------------------------------------------


def generate_examples(n_examples: int, seed: int = 0, engine: Engine | str = "template",
                      max_attempts_factor: int = 5,
                      progress: Callable[[int, int], None] | None = None) -> tuple[list[Example], dict[str, Any]]:
    """Generate ``n_examples`` validated examples (see :func:`generate_triplets` for the row form)."""
    if n_examples < 1:
        raise ValueError(f"n_examples must be at least 1, got {n_examples}")
    if max_attempts_factor < 1:
        raise ValueError(f"max_attempts_factor must be at least 1, got {max_attempts_factor}")
    eng = make_engine(engine) if isinstance(engine, str) else engine
    rng = random.Random(seed)
    usage = UsageTracker()
    rejected: Counter = Counter()
    n_rejected = attempts = 0
    examples: list[Example] = []
    t0 = time.perf_counter()
    for i, construction in enumerate(_schedule(n_examples, rng)):
        while True:
            attempts += 1
            if attempts > max_attempts_factor * n_examples:
                top = ", ".join(f"{r} ({n})" for r, n in rejected.most_common(3))
                raise RuntimeError(f"gave up after {attempts - 1} attempts for {n_examples} examples "
                                   f"({len(examples)} accepted); most common rejections: {top}")
            plan = plan_example(construction, rng, usage)
            try:
                written = eng.write(plan, rng)
            except EngineOutputError as e:
                rejected[e.reason] += 1
                n_rejected += 1
                continue
            ex = assemble(f"ex{i:06d}", plan, written, rng)
            reasons = validate(ex) + usage.check(ex)
            if tuple(written.bindings) != tuple(plan.pairs):
                reasons.append("bindings_differ_from_plan")
            if reasons:
                rejected.update(set(reasons))
                n_rejected += 1
                continue
            usage.accept(ex)
            examples.append(ex)
            break
        if progress is not None and (i + 1) % 1000 == 0:
            progress(i + 1, n_examples)
    stats = {
        "seed": seed, "engine": getattr(eng, "name", type(eng).__name__), "n_examples": len(examples),
        "attempts": attempts, "n_rejected_examples": n_rejected,
        "rejected": dict(sorted(rejected.items(), key=lambda kv: -kv[1])),
        "constructions": dict(Counter(ex.construction for ex in examples)),
        "distinct_attributes": len({a for ex in examples for a, _ in ex.bindings}),
        "distinct_objects": len({o for ex in examples for _, o in ex.bindings}),
        "max_word_count": usage.counts.most_common(1)[0] if usage.counts else None,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return examples, stats


def generate_triplets(n: int, seed: int = 0, engine: Engine | str = "template", max_attempts_factor: int = 5,
                      progress: Callable[[int, int], None] | None = None) -> tuple[list[dict], dict[str, Any]]:
    """Generate ``n`` triplet rows (two per example: attribute negative, then object negative).

    Args:
        n: number of triplet *rows*; must be even (``n // 2`` examples).
        seed: everything (plans, text, query order, negatives, splits) is deterministic for a seed and engine.
        engine: an :class:`Engine` or a spec for :func:`make_engine` (``"template"``, ``"hf:ORG/NAME"``).
        max_attempts_factor: give up (RuntimeError) after this many attempts per requested example.
        progress: optional callback ``(examples_done, examples_total)`` every 1000 examples.

    Returns:
        ``(rows, stats)``: rows in the DESIGN.md "Triplets" format; stats with ``constructions`` (examples per
        type), ``splits`` (rows per split), ``rejected`` ({reason: count}; a rejected example counts once for each
        of its reasons), ``n_rejected_examples``, ``attempts``, ``seconds`` and provenance.
    """
    if n < 2 or n % 2:
        raise ValueError(f"n counts triplet rows (two per example) and must be an even number >= 2, got {n}")
    examples, stats = generate_examples(n // 2, seed, engine, max_attempts_factor, progress)
    rows = [row for ex, split in zip(examples, assign_splits(examples, seed)) for row in ex.rows(split)]
    stats = {"n_rows": len(rows), **stats, "splits": dict(Counter(r["split"] for r in rows))}
    return rows, stats


def write_triplets(out_dir: str | Path, rows: list[dict], stats: dict[str, Any]) -> dict[str, str]:
    """Write ``triplets.jsonl`` (all rows, each with its split) and ``stats.json``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"triplets": str(out / "triplets.jsonl"), "stats": str(out / "stats.json")}
    write_jsonl(paths["triplets"], rows)
    tmp = out / f".stats.json.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(paths["stats"])
    return paths


_ROW_FIELDS = ("id", "construction", "query", "positive", "negative", "negative_kind", "bindings", "split")


def check_row(obj: Any) -> str | None:
    """Why a parsed JSONL line is not a valid triplet row (``None`` when it is)."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    missing = [f for f in _ROW_FIELDS if f not in obj]
    if missing:
        return f"missing field(s) {missing}"
    for f in ("id", "query", "positive", "negative"):
        if not isinstance(obj[f], str) or not obj[f].strip():
            return f"{f!r} must be a non-empty string"
    if obj["construction"] not in CONSTRUCTIONS:
        return f"construction {obj['construction']!r} not in {list(CONSTRUCTIONS)}"
    if obj["negative_kind"] not in NEGATIVE_KINDS:
        return f"negative_kind {obj['negative_kind']!r} not in {list(NEGATIVE_KINDS)}"
    if obj["split"] not in SPLITS:
        return f"split {obj['split']!r} not in {list(SPLITS)}"
    b = obj["bindings"]
    if not isinstance(b, list) or not b or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(w, str) and w for w in p) for p in b
    ):
        return "bindings must be a non-empty list of [attribute, object] string pairs"
    if Counter(_folded(words_of(obj["negative"]))) != Counter(_folded(words_of(obj["positive"]))):
        return "negative is not a word-level permutation of the positive"
    if obj["negative"] == obj["positive"]:
        return "negative equals the positive"
    return None


def load_triplets(path: str | Path, split: str | None = None) -> list[dict]:
    """Read a triplets JSONL file (or the folder holding ``triplets.jsonl``), optionally one split.

    Raises:
        DataError (a ValueError): naming the file and line of the first bad row, duplicate ids, an unknown split,
            or a file without rows.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {list(SPLITS)}")
    p = Path(path)
    if p.is_dir():
        p = p / "triplets.jsonl"
    rows: list[dict] = []
    seen: set[str] = set()
    for n, obj in read_jsonl(p):
        if isinstance(obj, DataError):
            raise obj
        problem = check_row(obj)
        if problem is None and obj["id"] in seen:
            problem = f"duplicate id {obj['id']!r}"
        if problem is not None:
            raise DataError(f"{p}:{n}: {problem}")
        seen.add(obj["id"])
        if split is None or obj["split"] == split:
            rows.append(obj)
    if not seen:
        raise DataError(f"{p}: no triplet rows")
    return rows


__all__ = [
    "CONSTRUCTIONS", "Engine", "EngineOutputError", "Example", "ExamplePlan", "HELD_OUT", "HFEngine",
    "IN_DISTRIBUTION", "REJECTION_REASONS", "SPLITS", "TemplateEngine", "UsageTracker", "WrittenExample",
    "article_errors", "assemble", "assign_splits", "binding_distance", "check_row", "generate_examples",
    "generate_triplets", "load_triplets", "make_engine", "negative_maps", "parse_engine_json", "permute_words",
    "plan_example", "query_text", "validate", "words_of", "write_triplets",
]
