"""The summary of each task's result, typed: the keys a face, a notebook or a leaderboard may read.

``Result.summary`` stays a plain dict (it is saved as JSON); these TypedDicts document its keys in code, and a test
checks that every task's result has its type's required keys.
"""

from __future__ import annotations

from typing import Any, TypedDict


class McqSummary(TypedDict):
    """``mcq``: 4-way MCQ accuracy."""

    pairings: dict[str, dict[str, Any]]  # pairing -> {accuracy, ci95, by_n, by_subset, n, chance, chance_by_n, …}
    pairing: str  # the first pairing: the headline's
    accuracy: float  # its accuracy (the main score)
    unknown_words: dict[str, Any] | None  # share of caption words the model does not know; None: it cannot say
    truncated: dict[str, Any] | None  # texts cut at the model's token limit; None: no pairing reads text


class RetrievalSummary(TypedDict):
    """``retrieval``: pooled-gallery retrieval."""

    pairings: dict[str, dict[str, Any]]  # pairing -> {map: {all, independent, nested}, map_by_n, r@1, r@5, …}
    pairing: str  # the first pairing
    map: float  # its mAP over all queries (the main score)
    truncated: dict[str, Any] | None


class PairsSummary(TypedDict):
    """``pairs``: Winoground-style I2T / T2I / Group over 2x2 pairs (:func:`bindlab.eval.pairs.evaluate_pairs`)."""

    levels: list[str]  # caption levels scored
    overall: dict[str, Any]  # {n, i2t, t2i, group, *_ci95, chance}, pooled over levels
    by_origin: dict[str, Any]  # the CompoSET paper's edit types and bindlab's own, apart
    by_verbosity: dict[str, Any]
    by_edit_type: dict[str, Any]
    by_category: dict[str, Any]
    per_scene_margin: dict[str, float]
    scene_edit_split: dict[str, Any]
    matched_modify_swap: dict[str, Any]
    controls: dict[str, Any]
    skipped_levels: list[str]
    n_pairs: int
    group: float  # the overall Group score (the main score)


class _BenchmarkRequired(TypedDict):
    benchmark: str  # the manifest's name
    task: str  # itt | tot | 2x2
    n: int  # items scored
    native_metric: dict[str, Any]  # {name, value or text/image/group_score, by_split, pooled}
    bow_text_only: dict[str, Any]  # the bag-of-words text-only baseline
    validity: dict[str, Any]  # same-bag items and the model on them
    native_value: float  # the headline (the main score)


class BenchmarkSummary(_BenchmarkRequired, total=False):
    """A published benchmark (:func:`bindlab.eval.benchmarks.evaluate_benchmark`); choice benchmarks have
    ``accuracy``, ``accuracy_ci95``, ``chance``, ``headline``, ``native_ci95``; 2x2 ones ``overall``, ``by_tag``."""

    accuracy: dict[str, Any]
    accuracy_ci95: list[float]
    chance: float
    headline: str  # macro (mean over splits) | all
    native_ci95: list[float]
    overall: dict[str, Any]
    by_tag: dict[str, Any]
