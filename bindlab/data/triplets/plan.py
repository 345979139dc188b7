"""Planning examples with the diversity controls and frequency caps of SABER B.3, and the B.5 splits."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache

from bindlab.data.templates import NOUN_ATTRIBUTES
from bindlab.data.triplets.example import Example
from bindlab.data.triplets.spec import (
    ADJACENT_TYPES,
    ATTRS_PER_OBJECT,
    CAP_FRACTION_PER_ATTRIBUTE,
    CAP_MIN,
    CONSTRUCTION_SHARE,
    CONSTRUCTIONS,
    DISTANCE_RANGES,
    DISTRACTOR_TYPES,
    HELD_OUT,
    LENGTH_BANDS,
    MAX_DISTRACTORS,
    MIN_WORDS,
    N_OBJECTS,
)
from bindlab.data.triplets.template_engine import (
    ATTRIBUTE_FAMILIES,
    ATTRIBUTE_POOL,
    OBJECT_POOL,
    OPENERS,
    PLACES,
    REFERENCE_PAIRS,
    REGISTERS,
    TIMES,
    WEATHERS,
    AttributeFamily,
    ExamplePlan,
    Pair,
    object_kind,
)


@dataclass
class UsageTracker:
    """Running word counts over accepted examples: frequency caps and duplicate word sets (B.3)."""

    counts: Counter = field(default_factory=Counter)
    n_accepted: int = 0
    seen_sets: set = field(default_factory=set)
    scale: float = 1.0  # > 1 when the word pools are smaller than the full lists (held-out words, 'with')

    def cap(self, n_attributes: int) -> float:
        """Most uses a queried word may have so far, for an example with ``n_attributes`` queried attributes."""
        return self.scale * max(CAP_MIN, CAP_FRACTION_PER_ATTRIBUTE * n_attributes * self.n_accepted)

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


def _sample(
    pool: Sequence[str], k: int, rng: random.Random, usage: UsageTracker, cap: float, exclude: set[str]
) -> list[str]:
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


@cache
def _families_for(kinds: frozenset[str]) -> tuple[AttributeFamily, ...]:
    """Attribute families plausible for every object kind in ``kinds``."""
    return tuple(f for f in ATTRIBUTE_FAMILIES if kinds <= f.kinds)


@cache
def _attribute_pool(families: tuple[AttributeFamily, ...]) -> tuple[str, ...]:
    return tuple(w for f in families for w in f.words)


@dataclass(frozen=True)
class WordPools:
    """Which words a plan may use (the default: every word). Used for held-out words and the ``with`` template.

    Attributes:
        objects: queried objects to draw from.
        attributes: queried attribute words allowed (None = all).
        families: attribute families allowed for queried attributes (None = all).
        distractor_objects: distractor objects to draw from.
        distractor_attributes: distractor attribute words allowed (None = all).
    """

    objects: tuple[str, ...] = OBJECT_POOL
    attributes: frozenset[str] | None = None
    families: frozenset[str] | None = None
    distractor_objects: tuple[str, ...] = OBJECT_POOL
    distractor_attributes: frozenset[str] | None = None


def restrict_families(
    families: tuple[AttributeFamily, ...], allowed: frozenset[str] | None, names: frozenset[str] | None, need: int
) -> tuple[AttributeFamily, ...]:
    """``families`` limited to the allowed names and words, keeping only those with at least ``need`` words."""
    if allowed is None and names is None:
        return families
    out = []
    for f in families:
        if names is not None and f.name not in names:
            continue
        words = f.words if allowed is None else tuple(w for w in f.words if w in allowed)
        if len(words) >= need:
            out.append(f if words == f.words else AttributeFamily(f.name, f.rank, f.kinds, words))
    return tuple(out)


def _plan_families(objects: list[str], pools: WordPools, per: int) -> tuple[AttributeFamily, ...]:
    """The attribute families a plan may draw from for ``objects``; empty when they cannot fill the plan."""
    families = restrict_families(
        _families_for(frozenset(object_kind(o) for o in objects)), pools.attributes, pools.families, len(objects)
    )
    enough = len(families) >= 2 if per == 2 else sum(len(f.words) for f in families) >= len(objects)
    return families if enough else ()


def plan_example(
    construction: str,
    rng: random.Random,
    usage: UsageTracker | None = None,
    pools: WordPools | None = None,
    forms: tuple[str, ...] = ("conjoined", "relative"),
) -> ExamplePlan:
    """Sample every diversity control of B.3 for one example of ``construction`` (words from ``pools``; ``forms``:
    the forms a ``predicative`` example may take)."""
    if construction not in CONSTRUCTIONS:
        raise ValueError(f"unknown construction {construction!r}; choose from {CONSTRUCTIONS}")
    usage = usage if usage is not None else UsageTracker()
    pools = pools if pools is not None else WordPools()
    n_obj, per = N_OBJECTS[construction], ATTRS_PER_OBJECT[construction]
    cap = usage.cap(n_obj * per)
    objects = _sample(pools.objects, n_obj, rng, usage, cap, set())
    if construction not in ADJACENT_TYPES:  # attributes after their nouns: no noun attributes ("the kite was origami")
        pools = replace(
            pools, attributes=frozenset(w for w in (pools.attributes or ATTRIBUTE_POOL) if w not in NOUN_ATTRIBUTES)
        )
    families = _plan_families(objects, pools, per)
    for _ in range(50):  # restricted pools only: other objects may leave enough attribute words
        if families:
            break
        objects = _sample(pools.objects, n_obj, rng, usage, cap, set())
        families = _plan_families(objects, pools, per)
    if not families:
        raise ValueError(
            f"too few allowed attribute words for {construction} examples; hold out a larger fraction "
            "of words (--holdout-words) or use another template"
        )
    if per == 2:
        f1, f2 = sorted(rng.sample(families, 2), key=lambda f: f.rank)
        col1 = _sample(f1.words, n_obj, rng, usage, cap, set())
        col2 = _sample(f2.words, n_obj, rng, usage, cap, set(col1))
        pairs = tuple(p for o, a1, a2 in zip(objects, col1, col2, strict=False) for p in ((a1, o), (a2, o)))
    else:
        attrs = _sample(_attribute_pool(families), n_obj, rng, usage, cap, set())
        pairs = tuple(zip(attrs, objects, strict=False))
    distractors: list[Pair] = []
    if construction in DISTRACTOR_TYPES:
        used = {w for p in pairs for w in p}
        for _ in range(rng.randint(0, MAX_DISTRACTORS)):
            o = _sample(pools.distractor_objects, 1, rng, usage, float("inf"), used)[0]
            family = rng.choice(
                restrict_families(_families_for(frozenset({object_kind(o)})), pools.distractor_attributes, None, 1)
            )
            a = _sample(family.words, 1, rng, usage, float("inf"), used)[0]
            used |= {a, o}
            distractors.append((a, o))
    distance = rng.choice(DISTANCE_RANGES[construction])
    return ExamplePlan(
        construction=construction,
        pairs=pairs,
        distractors=tuple(distractors),
        place=rng.choice(PLACES),
        time=rng.choice(TIMES) if rng.random() < 0.5 else "",
        weather=rng.choice(WEATHERS) if rng.random() < 0.4 else "",
        register=rng.choice(REGISTERS)[0],
        opener=rng.choice(OPENERS)[0],
        length_band=_pick_band(construction, distance, len(distractors), rng),
        distance_range=distance,
        reverse_reference=rng.random() < 0.5,
        references=rng.choice(REFERENCE_PAIRS),
        forms=forms,
    )


def _pick_band(construction: str, distance: tuple[int, int], n_distractors: int, rng: random.Random) -> tuple[int, int]:
    """A length band long enough for the distance range (B.3); deferred types use the three longer bands."""
    bands = LENGTH_BANDS[1:] if construction in HELD_OUT else LENGTH_BANDS
    if N_OBJECTS[construction] == 3:
        shift = rng.randint(2, 4)
        bands = tuple((lo + shift, hi + shift) for lo, hi in bands)
    n_distances = 2 if construction in ("predicative", "triple_bind_cycle", "triple_bind_swap") else 1
    need = MIN_WORDS[construction] + n_distances * distance[0] + 4 * n_distractors
    fitting = [b for b in bands if b[1] >= need]
    return rng.choice(fitting) if fitting else bands[-1]


def construction_schedule(n_examples: int, rng: random.Random, exclude: Sequence[str] = ()) -> list[str]:
    """Construction per example: exact quotas from :data:`CONSTRUCTION_SHARE` (largest remainder), shuffled;
    ``exclude``d constructions get none, their share spread over the others in proportion."""
    kept = [c for c in CONSTRUCTIONS if c not in exclude]
    total = sum(CONSTRUCTION_SHARE[c] for c in kept)
    raw = {c: CONSTRUCTION_SHARE[c] / total * n_examples for c in kept}
    counts = {c: int(v) for c, v in raw.items()}
    for c in sorted(kept, key=lambda c: raw[c] - counts[c], reverse=True)[: n_examples - sum(counts.values())]:
        counts[c] += 1
    order = [c for c in kept for _ in range(counts[c])]
    rng.shuffle(order)
    return order


def assign_splits(examples: Sequence[Example | str], seed: int) -> list[str]:
    """Split per example: held-out types -> ``heldout``; the rest 80/10/10 train/val/test, shuffled by seed.

    ``examples`` may also be the construction names alone (the split depends on nothing else), so the generator
    can know each example's split before planning it.
    """
    kinds = [ex if isinstance(ex, str) else ex.construction for ex in examples]
    splits = ["heldout"] * len(kinds)
    idx = [i for i, c in enumerate(kinds) if c not in HELD_OUT]
    random.Random(f"bindlab-triplet-split-{seed}").shuffle(idx)
    n_train, n_val = round(0.8 * len(idx)), round(0.1 * len(idx))
    for rank, i in enumerate(idx):
        splits[i] = "train" if rank < n_train else "val" if rank < n_train + n_val else "test"
    return splits
