"""One example (query, positive, two hard negatives) and how it is assembled from a plan and a written positive."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from bindlab.data.templates import DEFAULT_TEMPLATE, allows, group_phrase, join_groups
from bindlab.data.triplets.spec import NEGATIVE_KINDS
from bindlab.data.triplets.template_engine import FAMILY_OF, ExamplePlan, Pair, WrittenExample
from bindlab.data.triplets.words import permute_words
from bindlab.data.vocab import conjoin, with_article


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
    template: str | None = None

    def rows(self, split: str) -> list[dict[str, Any]]:
        """The two triplet rows (docs/architecture.md, "Triplets"): attribute negative first, then object negative.

        A row carries ``template`` (the query's sentence template) only when the generator was asked for
        templates; without it the query is attributive.
        """
        out = [
            {
                "id": f"{self.id}-{kind[0]}",
                "construction": self.construction,
                "query": self.query,
                "positive": self.positive,
                "negative": self.negatives[kind],
                "negative_kind": kind,
                "bindings": [list(b) for b in self.bindings],
                "split": split,
            }
            for kind in NEGATIVE_KINDS
        ]
        if self.template is not None:
            for row in out:
                row["template"] = self.template
        return out


def group_by_object(pairs: list[Pair] | tuple[Pair, ...]) -> dict[str, list[str]]:
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
    groups = group_by_object(plan.pairs)
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
    return {
        "attribute": {attrs[i]: attrs[order[i]] for i in range(n)},
        "object": {objects[i]: objects[order[i]] for i in range(n)},
    }


def query_text(pairs: list[Pair], template: str | None = None) -> str:
    """``"a red kite and a wooden bench"``; bundles keep their attributes together (``"a red wooden kite"``).

    Other sentence templates (:mod:`bindlab.data.templates`): ``"the kite is red and the bench is wooden"``,
    ``"a kite that is red and a bench that is wooden"``, ``"a kite with a red colour and a bench with a wooden
    finish"`` (``with`` only for attributes of a family it allows; ValueError otherwise).
    """
    groups = group_by_object(pairs)
    if template in (None, DEFAULT_TEMPLATE):
        phrases = [with_article(" ".join([*attrs, o])) for o, attrs in groups.items()]
        return conjoin(phrases)
    phrases = [group_phrase(template, attrs, o, [family_name(a) for a in attrs]) for o, attrs in groups.items()]
    return join_groups(phrases, bundled=any(len(attrs) > 1 for attrs in groups.values()))


def family_name(attribute: str) -> str | None:
    """The triplet attribute family of a word (its type for the ``with`` template), or None."""
    fam = FAMILY_OF.get(attribute.lower())
    return fam.name if fam is not None else None


def template_allows(template: str | None, pairs: list[Pair] | tuple[Pair, ...]) -> bool:
    """Whether every attribute of ``pairs`` can be written in ``template``."""
    return template is None or all(allows(template, family_name(a)) for a, _ in pairs)


def assemble(
    example_id: str, plan: ExamplePlan, written: WrittenExample, rng: random.Random, template: str | None = None
) -> Example:
    """Build the query (pairs in random order, written in ``template``) and both negatives from an engine's output."""
    groups = list(group_by_object(plan.pairs).items())
    rng.shuffle(groups)
    query_pairs = [(a, o) for o, attrs in groups for a in attrs]
    maps = negative_maps(plan, rng)
    negatives = {kind: permute_words(written.positive, maps[kind]) for kind in NEGATIVE_KINDS}
    intended = {
        "attribute": [(maps["attribute"].get(a, a), o) for a, o in plan.pairs],
        "object": [(a, maps["object"].get(o, o)) for a, o in plan.pairs],
    }
    return Example(
        example_id,
        plan.construction,
        query_text(query_pairs, template),
        written.positive,
        negatives,
        query_pairs,
        intended,
        list(written.distractors),
        plan.length_band,
        plan.distance_range,
        written.engine,
        template,
    )
