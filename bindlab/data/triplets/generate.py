"""Generation: plan, write, assemble, validate and cap examples until enough are accepted; rows per example."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from bindlab.data.templates import DEFAULT_TEMPLATE, WITH_NOUNS, check_template
from bindlab.data.triplets.engines import Engine, EngineOutputError, make_engine
from bindlab.data.triplets.example import Example, assemble, query_text, template_allows
from bindlab.data.triplets.holdout import HeldOutWords
from bindlab.data.triplets.plan import UsageTracker, WordPools, assign_splits, construction_schedule, plan_example
from bindlab.data.triplets.spec import UNSEEN_WORDS_SPLIT, template_split
from bindlab.data.triplets.template_engine import ATTRIBUTE_POOL, FAMILY_OF, OBJECT_POOL
from bindlab.data.triplets.validate import validate


@dataclass(frozen=True)
class Variants:
    """The non-default generation axes: sentence templates of the query and held-out words.

    Attributes:
        templates: training templates; each example's query is written in one (seeded per example); None = the
            plain attributive query, rows without a ``template`` field.
        holdout_templates: templates whose rows go only to ``test_template_<name>``: every ``test`` example
            re-written in each (where the ``with`` form can express its attributes).
        holdout: held-out words: no train/val/test/heldout text contains one; half of the ``test`` examples are
            planned from held-out words alone (split ``test_unseen_words``).
    """

    templates: tuple[str, ...] | None = None
    holdout_templates: tuple[str, ...] = ()
    holdout: HeldOutWords | None = None

    def __post_init__(self) -> None:
        for t in (*(self.templates or ()), *self.holdout_templates):
            check_template(t)
        if self.templates is not None and not self.templates:
            raise ValueError("--templates needs at least one template")
        clash = set(self.templates or (DEFAULT_TEMPLATE,)) & set(self.holdout_templates)
        if clash:
            raise ValueError(
                f"template(s) {', '.join(sorted(clash))} cannot be both trained on and held out; "
                "drop them from --templates or --holdout-templates"
            )

    @property
    def active(self) -> bool:
        return self.templates is not None or bool(self.holdout_templates) or self.holdout is not None

    def template_for(self, seed: int, i: int) -> str | None:
        """The query template of example ``i`` (None for a default run)."""
        if self.templates is None:
            return DEFAULT_TEMPLATE if self.holdout_templates else None
        if len(self.templates) == 1:
            return self.templates[0]
        return random.Random(f"bindlab-triplet-template:{seed}:{i}").choice(self.templates)

    def predicative_forms(self) -> tuple[str, ...]:
        """The ``predicative`` construction's forms whose sentence template is not held out (all without variants):
        a held-out template occurs in no text outside its own test split."""
        from bindlab.data.triplets.template_engine import PREDICATIVE_FORMS

        return tuple(f for f, t in PREDICATIVE_FORMS.items() if t not in self.holdout_templates)

    def excluded_constructions(self) -> tuple[str, ...]:
        """Constructions no example may take: ``predicative`` when both templates it writes are held out."""
        return () if self.predicative_forms() else ("predicative",)

    def cap_scale(self) -> float:
        """How much smaller the largest restricted word pool is than the full lists (frequency caps grow by it)."""
        if not self.active:
            return 1.0
        ratios = [1.0]
        for t in self.templates or (None,):
            pools = self.pools(t, unseen=False)
            if pools is not None:
                attrs = [
                    w
                    for w in ATTRIBUTE_POOL
                    if (pools.attributes is None or w in pools.attributes)
                    and (pools.families is None or FAMILY_OF[w].name in pools.families)
                ]
                ratios += [len(OBJECT_POOL) / len(pools.objects), len(ATTRIBUTE_POOL) / max(1, len(attrs))]
        return max(ratios)

    def pools(self, template: str | None, unseen: bool) -> WordPools | None:
        """Word pools of one example: held-out words excluded (or, for ``unseen``, the only queried words)."""
        families = frozenset(WITH_NOUNS) if template == "with" else None
        if self.holdout is None:
            return WordPools(families=families) if families else None
        held = self.holdout.words
        seen_objects = tuple(o for o in OBJECT_POOL if o not in held)
        seen_attrs = frozenset(a for a in ATTRIBUTE_POOL if a not in held)
        queried_objects = self.holdout.objects if unseen else seen_objects
        queried_attrs = frozenset(self.holdout.attributes) if unseen else seen_attrs
        return WordPools(queried_objects, queried_attrs, families, seen_objects, seen_attrs)


def _planned_splits(schedule: list[str], seed: int, variants: Variants) -> list[str] | None:
    """Split per scheduled example, with every other ``test`` example turned into ``test_unseen_words``."""
    if variants.holdout is None:
        return None
    splits = assign_splits(schedule, seed)
    tests = [i for i, s in enumerate(splits) if s == "test"]
    for i in tests[::2]:
        splits[i] = UNSEEN_WORDS_SPLIT
    return splits


def generate_examples(
    n_examples: int,
    seed: int = 0,
    engine: Engine | str = "template",
    max_attempts_factor: int = 5,
    progress: Callable[[int, int], None] | None = None,
    variants: Variants | None = None,
) -> tuple[list[Example], dict[str, Any]]:
    """Generate ``n_examples`` validated examples (see :func:`generate_triplets` for the row form)."""
    variants = variants or Variants()
    if n_examples < 1:
        raise ValueError(f"n_examples must be at least 1, got {n_examples}")
    if max_attempts_factor < 1:
        raise ValueError(f"max_attempts_factor must be at least 1, got {max_attempts_factor}")
    eng = make_engine(engine) if isinstance(engine, str) else engine
    rng = random.Random(seed)
    usage = UsageTracker(scale=variants.cap_scale())
    rejected: Counter = Counter()
    n_rejected = attempts = 0
    examples: list[Example] = []
    t0 = time.perf_counter()
    schedule = construction_schedule(n_examples, rng, exclude=variants.excluded_constructions())
    forms = variants.predicative_forms()
    planned = _planned_splits(schedule, seed, variants)
    for i, construction in enumerate(schedule):
        template = variants.template_for(seed, i)
        pools = variants.pools(template, planned is not None and planned[i] == UNSEEN_WORDS_SPLIT)
        while True:
            attempts += 1
            if attempts > max_attempts_factor * n_examples:
                top = ", ".join(f"{r} ({n})" for r, n in rejected.most_common(3))
                raise RuntimeError(
                    f"gave up after {attempts - 1} attempts for {n_examples} examples "
                    f"({len(examples)} accepted); most common rejections: {top}"
                )
            plan = plan_example(construction, rng, usage, pools, forms)
            try:
                written = eng.write(plan, rng)
            except EngineOutputError as e:
                rejected[e.reason] += 1
                n_rejected += 1
                continue
            ex = assemble(f"ex{i:06d}", plan, written, rng, template)
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
        "seed": seed,
        "engine": getattr(eng, "name", type(eng).__name__),
        "n_examples": len(examples),
        "attempts": attempts,
        "n_rejected_examples": n_rejected,
        "rejected": dict(sorted(rejected.items(), key=lambda kv: -kv[1])),
        "constructions": dict(Counter(ex.construction for ex in examples)),
        "distinct_attributes": len({a for ex in examples for a, _ in ex.bindings}),
        "distinct_objects": len({o for ex in examples for _, o in ex.bindings}),
        "max_word_count": usage.counts.most_common(1)[0] if usage.counts else None,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    if planned is not None:
        stats["planned_splits"] = planned
    return examples, stats


def generate_triplets(
    n: int,
    seed: int = 0,
    engine: Engine | str = "template",
    max_attempts_factor: int = 5,
    progress: Callable[[int, int], None] | None = None,
    variants: Variants | None = None,
) -> tuple[list[dict], dict[str, Any]]:
    """Generate ``n`` triplet rows (two per example: attribute negative, then object negative).

    Args:
        n: number of triplet *rows*; must be even (``n // 2`` examples).
        seed: everything (plans, text, query order, negatives, splits) is deterministic for a seed and engine.
        engine: an :class:`Engine` or a spec for :func:`make_engine` (``"template"``, ``"hf:ORG/NAME"``).
        max_attempts_factor: give up (RuntimeError) after this many attempts per requested example.
        progress: optional callback ``(examples_done, examples_total)`` every 1000 examples.
        variants: sentence templates and held-out words (:class:`Variants`); the default changes nothing.

    Returns:
        ``(rows, stats)``: rows in the docs/architecture.md "Triplets" format; stats with ``constructions`` (examples per
        type), ``splits`` (rows per split), ``rejected`` ({reason: count}; a rejected example counts once for each
        of its reasons), ``n_rejected_examples``, ``attempts``, ``seconds`` and provenance. With ``variants``
        also ``templates`` (rows per query template), ``holdout_templates`` (with rows and skipped examples per
        template) and ``holdout_words`` (how many objects and attributes were held out, fraction and seed).
    """
    if n < 2 or n % 2:
        raise ValueError(f"n counts triplet rows (two per example) and must be an even number >= 2, got {n}")
    variants = variants or Variants()
    examples, stats = generate_examples(n // 2, seed, engine, max_attempts_factor, progress, variants)
    splits = stats.pop("planned_splits", None) or assign_splits(examples, seed)
    rows = [row for ex, split in zip(examples, splits, strict=False) for row in ex.rows(split)]
    extra: dict[str, Any] = {}
    if variants.holdout_templates:
        copies, extra["holdout_templates"] = _template_copies(examples, splits, variants.holdout_templates)
        rows += copies
    stats = {"n_rows": len(rows), **stats, "splits": dict(Counter(r["split"] for r in rows))}
    if variants.active:
        stats["templates"] = dict(Counter(r.get("template", DEFAULT_TEMPLATE) for r in rows))
    if variants.holdout is not None:
        h = variants.holdout
        extra["holdout_words"] = {
            "fraction": h.fraction,
            "seed": h.seed,
            "n_objects": len(h.objects),
            "n_attributes": len(h.attributes),
        }
    return rows, {**stats, **extra}


def _template_copies(
    examples: list[Example], splits: list[str], templates: tuple[str, ...]
) -> tuple[list[dict], dict[str, dict[str, int]]]:
    """Each ``test`` example with its query re-written in each held-out template -> ``test_template_<name>``."""
    rows: list[dict] = []
    report: dict[str, dict[str, int]] = {}
    for t in templates:
        made = skipped = 0
        for ex, split in zip(examples, splits, strict=False):
            if split != "test":
                continue
            if not template_allows(t, ex.bindings):
                skipped += 1
                continue
            copy = replace(ex, id=f"{ex.id}-{t}", query=query_text(list(ex.bindings), t), template=t)
            problems = validate(copy)
            if problems:  # pragma: no cover - a re-written query of a valid example is valid
                raise RuntimeError(f"{copy.id}: the {t} query {copy.query!r} fails validation: {problems}")
            rows += copy.rows(template_split(t))
            made += 1
        report[t] = {"examples": made, "rows": 2 * made, "skipped_examples": skipped}
    return rows, report
