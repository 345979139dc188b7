"""Generation: plan, write, assemble, validate and cap examples until enough are accepted; rows per example."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from bindlab.data.triplets.engines import Engine, EngineOutputError, make_engine
from bindlab.data.triplets.example import Example, assemble
from bindlab.data.triplets.plan import UsageTracker, assign_splits, construction_schedule, plan_example
from bindlab.data.triplets.validate import validate


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
    for i, construction in enumerate(construction_schedule(n_examples, rng)):
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
    rows = [row for ex, split in zip(examples, assign_splits(examples, seed), strict=False) for row in ex.rows(split)]
    stats = {"n_rows": len(rows), **stats, "splits": dict(Counter(r["split"] for r in rows))}
    return rows, stats
