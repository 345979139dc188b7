"""The Walkthrough: seven short steps that show binding failures live, for teaching (issue 10).

Each ``step_*`` function computes what its step shows from the existing backend, on the embedded default (the mini
SABER benchmark, the bundled MiniLM, the bag-of-words baseline, the toy vision–language models, the default factor
grid), and returns plain data: numbers, rows, paths. Nothing is typed in; the tab (``bindlab/ui/walkthrough.py``)
only formats what these return. Everything runs offline on a 2-core CPU; the costly parts (embeddings, rendered
defaults) are cached by the backend, so a second visit to a step is fast.

Steps:

1. :func:`step_bag_of_words` — a pure bag of words scores every swap exactly like the right answer.
2. :func:`step_text_encoder` — a real text encoder (MiniLM) nearly ties.
3. :func:`step_images` — the toy image+text models, all four pairings; a failure and its fix: ``toy:clip`` next to
   ``toy:negclip`` (the same model finetuned with NegCLIP-style binding hard negatives) where images are involved.
4. :func:`step_objects` — accuracy against the number of objects N.
5. :func:`step_grounding` — the distinction is in the image embeddings; the words cannot reach it (the α slider).
6. :func:`step_attention` — the attention binding margin per layer.
7. :func:`start_finetune` / :func:`finetune_status` / :func:`step_finetune` — a few minutes of text-only LoRA on
   ``toy:shared`` as a background job, then base vs finetuned in all four pairings (images included: the model's
   blocks are shared by both modalities).
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

Progress = Callable[[float, str], None]

SWAP_ROLES = ("attr_swap", "obj_swap", "joint_swap")  # candidates with the query's bag of words, other bindings
IMAGE_MODELS = ("toy:clip", "toy:negclip", "toy:shared")
FIX_PAIR = ("toy:clip", "toy:negclip")  # a failure and its fix: one model before / after binding hard negatives
FIX_PAIRINGS = ("ii", "it", "ti")  # the pairings with images, where the twins' negative images and captions act
GROUNDING_MODEL = "toy:clip"
GROUNDING_FACTOR = "pattern"  # patterns are named in only a quarter of the toy models' captions (FactorAtlas)
# Step 4 opens on toy:clip image → image: measured on the embedded default (180 image questions, 20 per N), N = 3–5
# scored 0.717 (95 % CI 0.600–0.817) and N = 8–10 0.433 (0.300–0.567), a change of −0.283 whose bootstrap interval
# excludes 0. MiniLM text → text read 0.317 vs 0.317 (+0.000) and the bag of words 0.250 vs 0.250 by construction:
# nothing for a first look to see.
OBJECTS_MODEL, OBJECTS_PAIRING = "toy:clip", "ii"
# Step 5 opens on "striped" at α = 1: measured on the default grid with toy:clip (1056 test images), test AP
# 0.078 → 0.121 (+0.043, paired bootstrap 95 % CI over the test images +0.028 to +0.068); α = 0 is the text query
# itself (a gain of exactly 0), and α = 2 or 4 add little more for striped (+0.048, +0.057) with wider intervals.
GROUNDING_VALUE, GROUNDING_ALPHA = "striped", 1.0
ATTENTION_MODEL = "minilm"
FINETUNE_MODEL = "toy:shared"


@dataclass(frozen=True)
class Step:
    """One step of the tour: its number, title and the id of the full tab that goes deeper."""

    number: int
    key: str
    title: str
    tab: str


STEPS: tuple[Step, ...] = (
    Step(1, "bow", "A pure bag of words cannot tell swaps apart", "browse"),
    Step(2, "text", "A real text encoder nearly ties", "browse"),
    Step(3, "images", "Images too: a failure and its fix", "browse"),
    Step(4, "objects", "More objects", "browse"),
    Step(5, "grounding", "The distinction is in the image embeddings, but the words cannot reach it", "grounding"),
    Step(6, "attention", "Attention and bindings, layer by layer", "attention"),
    Step(7, "finetune", "A few minutes of text-only finetuning", "finetune"),
)


# ---------------------------------------------------------------------------------------------- shared helpers
def _dataset(data: str | Path | None, images: bool = False, progress: Progress | None = None) -> Path:
    """The given MCQ file, or the embedded default (with images when ``images``)."""
    from bindlab.studies.common import default_dataset

    if data:
        p = Path(data)
        if not p.is_file():
            raise FileNotFoundError(f"{p}: MCQ file not found; leave it empty for the embedded default")
        return p
    report = (lambda f, msg: progress(f, msg)) if progress else None
    return default_dataset(images=images, progress=report)


def _scaled(progress: Progress | None, lo: float, hi: float) -> Progress | None:
    """``progress`` for a part of the work: its fractions 0–1 land between ``lo`` and ``hi``, its messages as given
    (a "done" at the part's end is left out: the step goes on)."""
    if progress is None:
        return None

    def report(f: float, msg: str) -> None:
        if msg != "done":
            progress(lo + (hi - lo) * min(max(float(f), 0.0), 1.0), msg)

    return report


def _role_scores(q: Any, scores: np.ndarray) -> dict[str, float]:
    return {c.role: float(s) for c, s in zip(q.candidates, scores, strict=True)}


def _example(s: Any, n_objects: int) -> dict[str, Any]:
    """The first question with ``n_objects`` objects (else the first question), as :func:`question_view` shows it."""
    from bindlab.studies.browse import question_view

    q = next((q for q in s.questions if q.n_objects == n_objects), s.questions[0])
    return question_view(s, q.id)


def _swap_gaps(s: Any) -> np.ndarray:
    """Per question: preserve score minus the best swap score (swaps = candidates with the same bag of words)."""
    gaps = []
    for q, sc in zip(s.questions, s.scores, strict=True):
        roles = _role_scores(q, sc)
        swaps = [roles[r] for r in SWAP_ROLES if r in roles]
        gaps.append(roles["preserve"] - max(swaps))
    return np.asarray(gaps)


def _summary_numbers(s: Any) -> dict[str, Any]:
    return {
        "model": s.model,
        "pairing": s.pairing,
        "n_questions": len(s.questions),
        "accuracy": s.summary["accuracy"],
        "ci95": s.summary["ci95"],
        "by_n": s.summary["by_n"],
        "chance": s.summary["chance"],
    }


# ---------------------------------------------------------------------------------------------- step 1
def step_bag_of_words(data: str | Path | None = None, example_n: int = 3) -> dict[str, Any]:
    """Step 1: the ``bow`` baseline on the embedded benchmark, text query vs text candidates.

    Returns:
        ``{"model", "pairing", "n_questions", "accuracy", "ci95", "by_n", "chance", "tie_share", "n_swaps",
        "example"}``: ``tie_share`` = share of (question, swap candidate) pairs whose score equals the preserve
        candidate's exactly; ``example`` = one question's view (roles, texts, scores, ranks).
    """
    from bindlab.studies.browse import scored_set

    s = scored_set(_dataset(data), "bow", "tt")
    ties = [
        sc[k] == sc[q.answer]
        for q, sc in zip(s.questions, s.scores, strict=True)
        for k, c in enumerate(q.candidates)
        if c.role in SWAP_ROLES
    ]
    return {
        **_summary_numbers(s),
        "tie_share": float(np.mean(ties)),
        "n_swaps": len(ties),
        "example": _example(s, example_n),
    }


# ---------------------------------------------------------------------------------------------- step 2
def step_text_encoder(
    data: str | Path | None = None, model: str = "minilm", example_n: int = 3, progress: Progress | None = None
) -> dict[str, Any]:
    """Step 2: a real text encoder (default MiniLM) on the same questions.

    Returns:
        step 1's keys (no ties) plus ``median_abs_gap`` (median over questions of |preserve − best swap|),
        ``share_correct`` (questions answered right with full credit), and the scale to compare it with:
        ``median_preserve`` (median cosine of a query with its right answer) and ``median_other`` (median cosine
        of a query with the right answer of another question: same kind of sentence, other words).
    """
    from bindlab.studies.browse import scored_set

    path = _dataset(data)
    if progress:
        progress(0.05, f"embedding the questions with {model} (cached after the first time)")
    s = scored_set(path, model, "tt", progress=_scaled(progress, 0.05, 1.0))
    gaps = _swap_gaps(s)
    answers = np.array([q.answer for q in s.questions])
    preserve_idx = np.arange(len(s.questions)) * 4 + answers  # rows of the gallery holding each right answer
    other = np.roll(preserve_idx, 1)  # the previous question's right answer
    other_scores = np.einsum("qd,qd->q", s.queries, s.gallery[other])
    return {
        **_summary_numbers(s),
        "median_abs_gap": float(np.median(np.abs(gaps))),
        "share_correct": float(np.mean(s.credit >= 1.0)),
        "median_preserve": float(np.median(s.scores[np.arange(len(answers)), answers])),
        "median_other": float(np.median(other_scores)),
        "example": _example(s, example_n),
    }


# ---------------------------------------------------------------------------------------------- step 3
def step_images(
    data: str | Path | None = None,
    models: tuple[str, ...] = IMAGE_MODELS,
    example_n: int = 2,
    progress: Progress | None = None,
    fix: tuple[str, str] = FIX_PAIR,
) -> dict[str, Any]:
    """Step 3: the image version of the benchmark (rendered once), each toy model in all four pairings, and the
    failure-and-fix pair side by side.

    Args:
        models: the models scored (all four pairings each); both of ``fix`` are added when missing.
        fix: ``(before, after)``: a model and the same model trained with binding hard negatives.

    Returns:
        ``{"rows": [{"model", "pairing", "query", "candidates", "accuracy", "ci95"}], "chance" (the mean of the
        questions' own chance, :func:`bindlab.eval.mcq.question_chance`), "n_questions",
        "example", "example_model", "example_pairing", "fix"}``; ``example`` is one question's view (image paths
        included) scored by ``fix[0]`` text→image; ``fix`` is :func:`fix_rows`' comparison of the pair over
        :data:`FIX_PAIRINGS`.
    """
    from bindlab.data.schema import load_mcqs
    from bindlab.eval.mcq import PAIRINGS, evaluate_mcq, question_chance
    from bindlab.studies.browse import scored_set
    from bindlab.studies.common import get_encoder

    models = tuple(dict.fromkeys((*fix, *models)))
    if progress:
        progress(0.02, "the image benchmark (rendered on first use, a few minutes)")
    path = _dataset(data, images=True, progress=progress)
    questions, _ = load_mcqs(path)
    rows, credits = [], {}
    for i, m in enumerate(models):
        if progress:
            progress(0.5 + 0.5 * i / len(models), f"embedding texts and images with {m}")
        lo = 0.5 + 0.5 * i / len(models)
        res, items = evaluate_mcq(
            questions,
            path.parent,
            get_encoder(m),
            list(PAIRINGS),
            progress=_scaled(progress, lo, lo + 0.5 / len(models)),
        )
        for p, summ in res.items():
            rows.append(
                {
                    "model": m,
                    "pairing": p,
                    "query": PAIRINGS[p][0],
                    "candidates": PAIRINGS[p][1],
                    "accuracy": summ["accuracy"],
                    "ci95": summ["ci95"],
                }
            )
            credits[m, p] = np.array([r["credit"] for r in items if r["pairing"] == p], dtype=np.float64)
    example = _example(scored_set(path, fix[0], "ti"), example_n)
    return {
        "rows": rows,
        "chance": float(np.mean(question_chance(questions))),
        "n_questions": len(questions),
        "example": example,
        "example_model": fix[0],
        "example_pairing": "ti",
        "fix": fix_rows(credits, fix),
    }


def fix_rows(
    credits: dict[tuple[str, str], np.ndarray],
    fix: tuple[str, str] = FIX_PAIR,
    pairings: tuple[str, ...] = FIX_PAIRINGS,
) -> dict[str, Any]:
    """The failure and its fix, pairing by pairing: both models' accuracy and the paired change.

    Args:
        credits: ``{(model, pairing): (n_questions,) per-question credit}``, the same questions in the same order
            for every key.
        fix: ``(before, after)`` model ids.

    Returns:
        ``{"before", "after", "rows": [{"pairing", "before", "after", "before_ci95", "after_ci95", "change",
        "change_ci95", "clear"}]}``; ``change`` = after − before, its 95 % interval a paired bootstrap over
        questions; ``clear`` = "better" / "worse" when that interval excludes 0, else "unclear".
    """
    from bindlab.eval.metrics import bootstrap_ci

    before, after = fix
    rows = []
    for p in pairings:
        a, b = credits[before, p], credits[after, p]
        diff = b - a
        lo, hi = bootstrap_ci(diff)
        rows.append(
            {
                "pairing": p,
                "before": float(a.mean()),
                "after": float(b.mean()),
                "before_ci95": list(bootstrap_ci(a)),
                "after_ci95": list(bootstrap_ci(b)),
                "change": float(diff.mean()),
                "change_ci95": [lo, hi],
                "clear": "better" if lo > 0 else "worse" if hi < 0 else "unclear",
            }
        )
    return {"before": before, "after": after, "rows": rows}


# ---------------------------------------------------------------------------------------------- step 4
def difference_ci(
    a: np.ndarray, b: np.ndarray, n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(b) − mean(a)`` for two independent samples (each resampled on its
    own: different questions, nothing paired).

    Raises:
        ValueError: either sample is empty.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not a.size or not b.size:
        raise ValueError(f"a difference needs two non-empty samples, got {a.size} and {b.size} values")
    rng = np.random.default_rng(seed)
    diffs = b[rng.integers(0, b.size, (n_boot, b.size))].mean(axis=1) - a[
        rng.integers(0, a.size, (n_boot, a.size))
    ].mean(axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(diffs, tail)), float(np.quantile(diffs, 1 - tail))


def _verdict(lo: float, hi: float) -> str:
    return "up" if lo > 0 else "down" if hi < 0 else "unclear"


def step_objects(
    data: str | Path | None = None,
    model: str = OBJECTS_MODEL,
    pairing: str = OBJECTS_PAIRING,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Step 4: accuracy by number of objects N for one model and pairing (default: :data:`OBJECTS_MODEL`
    :data:`OBJECTS_PAIRING`, where the fall is measured clearly).

    N = 2 is left out of the small/large comparison: its fourth candidate replaces a word, which even a bag of
    words can see, so its chance level is 1/3, not 1/4 (``chance`` is the mean over all questions, the chart's rows
    carry it per N).

    Returns:
        ``{"model", "pairing", "rows" (accuracy_table rows for the chart, each with its 95 % percentile bootstrap
        interval ``ci95`` over its questions), "small": {"sizes", "accuracy", "ci95", "n"}, "large": {…},
        "change": {"value" (large − small), "ci95" (:func:`difference_ci`), "verdict" ("up", "down" when the
        interval excludes 0, else "unclear")}, "chance", "per_size"}``; small = the three smallest N ≥ 3, large = the
        three largest.
    """
    from bindlab.eval.metrics import bootstrap_ci
    from bindlab.studies.browse import accuracy_table, scored_set
    from bindlab.studies.common import needs_images

    if progress:
        progress(0.05, f"scoring with {model} ({pairing})")
    path = _dataset(data, images=needs_images(pairing), progress=progress)
    s = scored_set(path, model, pairing, progress=_scaled(progress, 0.05, 1.0))
    sizes = sorted({q.n_objects for q in s.questions if q.n_objects >= 3})
    if len(sizes) < 2:
        raise ValueError("step 4 needs questions with at least two sizes N >= 3")
    k = min(3, len(sizes) // 2)

    def credit_of(ns: list[int]) -> np.ndarray:
        return np.array([cr for q, cr in zip(s.questions, s.credit, strict=True) if q.n_objects in ns])

    def group(ns: list[int]) -> dict[str, Any]:
        c = credit_of(ns)
        lo, hi = bootstrap_ci(c)
        return {"sizes": ns, "accuracy": float(c.mean()), "ci95": [lo, hi], "n": int(len(c))}

    per_size = {int(n): sum(q.n_objects == int(n) for q in s.questions) for n in s.summary["by_n"]}
    credit: dict[tuple[int, str], list[float]] = {}
    for q, cr in zip(s.questions, s.credit, strict=True):
        for subset in ("all", q.subset):
            credit.setdefault((int(q.n_objects), subset), []).append(float(cr))
    rows = [
        {**r, "ci95": list(bootstrap_ci(np.array(credit.get((int(r["n_objects"]), r["subset"]), []))))}
        for r in accuracy_table(s)
    ]
    small, large = credit_of(sizes[:k]), credit_of(sizes[-k:])
    lo, hi = difference_ci(small, large)
    change = {"value": float(large.mean() - small.mean()), "ci95": [lo, hi], "verdict": _verdict(lo, hi)}
    return {
        "model": s.model,
        "pairing": pairing,
        "rows": rows,
        "small": group(sizes[:k]),
        "large": group(sizes[-k:]),
        "change": change,
        "chance": s.summary["chance"],
        "per_size": per_size,
        "accuracy": s.summary["accuracy"],
    }


# ---------------------------------------------------------------------------------------------- step 5
def grounding_session(
    grid: str | Path | None = None, model: str = GROUNDING_MODEL, progress: Progress | None = None
) -> Any:
    """The Grounding tab's session on the default factor grid (rendered and embedded once, then cached)."""
    from bindlab.data.factors import default_grid
    from bindlab.studies.grounding import open_session

    if grid:
        folder = Path(grid)
    else:
        report = (
            (lambda d, t: progress(0.9 * d / max(t, 1), f"rendering the default grid {d}/{t}")) if progress else None
        )
        folder = default_grid(report)
    return open_session(folder, model, progress=progress)


def ap_gain_ci(
    state: Any, value_index: int, alpha: float, n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Paired percentile bootstrap interval of one value's test AP gain (grounded at ``alpha`` − the text query).

    The test images are resampled one by one and both queries are scored on the same resample. (The default grid's
    test split is one context-replica group, so a cluster bootstrap over groups would have nothing to resample.)
    """
    from bindlab.analysis.grounding import pencil_scores
    from bindlab.analysis.grounding_controls import group_bootstrap_ap, group_bootstrap_counts

    test = state.test
    n = len(test.value_idx)
    items, counts = np.arange(n), group_bootstrap_counts(n, n_boot, seed)
    pos = test.value_idx == value_index
    native = group_bootstrap_ap(pencil_scores(test, 1.0, 0.0)[:, value_index], pos, items, counts)
    grounded = group_bootstrap_ap(pencil_scores(test, 1.0, float(alpha))[:, value_index], pos, items, counts)
    diff = grounded - native
    tail = (1 - level) / 2
    return float(np.nanquantile(diff, tail)), float(np.nanquantile(diff, 1 - tail))


def step_grounding(
    alpha: float = GROUNDING_ALPHA,
    value: str | None = None,
    factor: str = GROUNDING_FACTOR,
    grid: str | Path | None = None,
    model: str = GROUNDING_MODEL,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Step 5: matched visual grounding of one factor value at one α (vector maths once the session is open).

    Returns:
        the :func:`~bindlab.analysis.grounding_session.slider_view` numbers for ``value`` (default:
        :data:`GROUNDING_VALUE` when the grid has it, else the factor's first value other than ``plain``) —
        ``ap_native``/``ap_grounded``, ``gain`` (their difference) and ``gain_ci95`` (:func:`ap_gain_ci`), ``margin_native``/``margin_grounded``, ``c`` (= q . d),
        ``alpha_star`` (the zero crossing -c, ``None`` unless -1 < c < 0),
        ``map_native``/``map_grounded``, the margin ``curve`` — plus ``map_prototype`` (test macro-mAP when the
        image prototype itself is the query: what the image embeddings hold), ``alpha_validation`` (the protocol's
        α, chosen on validation) and ``values``.

    Raises:
        ValueError: ``value`` is given but is not one of the factor's values (the message lists them).
    """
    from bindlab.studies.grounding import slider_view

    session = grounding_session(grid, model, progress)
    state = session.state(factor)
    values = state.values.tolist()
    if value is not None and value not in values:
        raise ValueError(f"{factor} {str(value)[:60]!r} is not in the grid; choose one of {', '.join(values)}")
    if value is None:  # plain: no pattern to ground
        value = GROUNDING_VALUE if GROUNDING_VALUE in values else next((v for v in values if v != "plain"), values[0])
    view = slider_view(session, factor, value, float(alpha))
    v = view["value_index"]
    sel = state.select_alpha()
    return {
        "model": session.encoder.id if session.encoder else model,
        "factor": factor,
        "value": value,
        "values": values,
        "alpha": view["alpha"],
        "ap_native": view["ap_native"][v],
        "ap_grounded": view["ap_grounded"][v],
        "gain": view["ap_grounded"][v] - view["ap_native"][v],
        "gain_ci95": list(ap_gain_ci(state, v, alpha)),
        "ap_native_all": view["ap_native"],
        "ap_grounded_all": view["ap_grounded"],
        "margin_native": view["margin_native"][v],
        "margin_grounded": view["margin_grounded"][v],
        "c": view["c"][v],
        "alpha_star": view["alpha_star"][v],
        "map_native": view["map_native"],
        "map_grounded": view["map_grounded"],
        "top1_native": view["top1_native"],
        "top1_grounded": view["top1_grounded"],
        "map_prototype": state.prototype_test.macro_map,
        "ap_prototype": float(state.prototype_test.ap[v]),
        "alpha_validation": sel.value,
        "curve": view["curve"],
        "top_precision": view["top_precision"],
        "n_images": session.split_sizes(),
    }


def grounding_payload(
    factor: str = GROUNDING_FACTOR, grid: str | Path | None = None, model: str = GROUNDING_MODEL
) -> dict[str, Any]:
    """Step 5's slider payload (:func:`bindlab.studies.grounding.slider_payload`): the page moves α with it."""
    from bindlab.studies.grounding import slider_payload

    return slider_payload(grounding_session(grid, model), factor)


# ---------------------------------------------------------------------------------------------- step 6
def step_attention(
    data: str | Path | None = None, model: str = ATTENTION_MODEL, limit: int = 40, progress: Progress | None = None
) -> dict[str, Any]:
    """Step 6: the attention binding margin per layer on the benchmark's queries.

    Toy models only know the renderable vocabulary, so for ``toy:*`` the default is the image benchmark's queries.

    Returns:
        the :func:`~bindlab.analysis.attention.results_json` document plus ``peak_layer``, ``peak``, ``last``
        (margin of the last layer) and ``first``.
    """
    from bindlab.analysis import attention as att
    from bindlab.encoders.base import parse_encoder_id
    from bindlab.studies.access import check_model_access
    from bindlab.studies.common import get_encoder

    if limit < 1:
        raise ValueError(f"limit must be a positive number of captions, got {limit}")
    check_model_access(model)  # public mode: a listed id or the visitor's own job, before any data is made
    path = _dataset(data, images=parse_encoder_id(model).backend == "toy" and not data, progress=progress)
    sets = att.load_caption_sets(path, limit=limit)
    if progress:
        progress(0.1, f"loading {model}")
    enc = get_encoder(model)
    runs = att.run_attention(enc, sets, progress=progress)
    res = att.results_json(enc, runs, "later_to_earlier")
    mm = [m for m in res["margin_mean"] if m is not None]
    if not mm:
        raise ValueError(f"no caption of {path} could be analysed with {model}")
    peak = int(np.argmax(mm))
    return {**res, "peak_layer": peak, "peak": mm[peak], "first": mm[0], "last": mm[-1], "data": str(path)}


# ---------------------------------------------------------------------------------------------- step 7
# Sized for a few minutes on 2 busy CPU cores with one torch thread (measured in the README's walkthrough timings).
FINETUNE_SETTINGS: dict[str, Any] = {
    "lr": 2e-3,  # 40x the paper's 5e-5: a few hundred steps on a 0.37 M-parameter toy must move it visibly
    "max_steps": 300,
    "epochs": 3,
    "batch_size": 16,
    "eval_rows": 200,
    "lines_a": 0.1,  # Wang et al.'s single-task setting (bindlab.train.lines); "auto" could pick 1 = no LiNeS at all
    "threads": 1,  # torch threads; one is far faster than two on a busy 2-core machine
    "heavy": False,  # a CPU toy job: it does not wait for the one-heavy-job slot of a GPU finetune
}
TRIPLET_SIZES = (2, 3)  # like the paper's triplets: bindings permuted among two or three pairs only
TRIPLET_SEED = 1001  # far from the default benchmark's seed 0, so training and test questions differ


TOY_HOLDOUT_FRACTION = 0.2  # of the renderable objects and of each attribute category, never in a training text
TOY_HOLDOUT_TEMPLATES = ("predicative", "relative", "with")  # the training queries are all attributive


def toy_holdout(fraction: float = TOY_HOLDOUT_FRACTION, seed: int = TRIPLET_SEED) -> Any:
    """A seeded ``fraction`` of the renderable vocabulary held out of the toy triplets' training text.

    Stratified like :func:`bindlab.data.triplets.holdout.select_holdout`: ``fraction`` of the objects and of each attribute
    category (colour, material, pattern, ...), rounded, so every category loses about the same share. The words
    stay renderable (the toy models saw them in their own image-caption training); only the finetune never does.

    Returns:
        A :class:`bindlab.data.triplets.holdout.HeldOutWords` (objects and attribute names, sorted).
    """
    import random

    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.triplets.holdout import HeldOutWords, check_fraction

    f = check_fraction(fraction)
    rng = random.Random(f"bindlab-toy-holdout:{seed}:{f!r}")
    objects = rng.sample(sorted(RENDER_VOCAB.objects), round(f * len(RENDER_VOCAB.objects)))
    attributes: list[str] = []
    for category in sorted({a.category for a in RENDER_VOCAB.attributes}):
        names = sorted(a.name for a in RENDER_VOCAB.attributes if a.category == category)
        attributes += rng.sample(names, round(f * len(names)))
    return HeldOutWords(tuple(sorted(objects)), tuple(sorted(attributes)), f, seed)


def _without(vocab: Any, held: Any) -> Any:
    """``vocab`` less the held-out words (``held`` None: unchanged)."""
    from bindlab.data.saber import Vocabulary

    if held is None:
        return vocab
    return Vocabulary(
        tuple(o for o in vocab.objects if o not in held.words),
        tuple(a for a in vocab.attributes if a.name not in held.words),
    )


def _only(vocab: Any, held: Any) -> Any:
    """The held-out part of ``vocab``."""
    from bindlab.data.saber import Vocabulary

    return Vocabulary(
        tuple(o for o in vocab.objects if o in held.words), tuple(a for a in vocab.attributes if a.name in held.words)
    )


def _question_rows(q: Any, split: str, template: str, tag: str = "") -> list[dict[str, Any]]:
    """The two triplet rows of a SABER question: query, preserve candidate as positive, attribute / object swap as
    negative (same words, other bindings); ids ``<question>[-<tag>]-<role>``."""
    from bindlab.data.triplets import check_row

    positive = q.candidates[q.answer]
    rows = []
    for c in q.candidates:
        if c.role not in ("attr_swap", "obj_swap"):
            continue
        row = {
            "id": f"{q.id}{'-' + tag if tag else ''}-{c.role}",
            "construction": "pair_swap" if q.n_objects == 2 else "triple_bind_swap",
            "query": q.query.text,
            "positive": positive.text,
            "negative": c.text,
            "negative_kind": "attribute" if c.role == "attr_swap" else "object",
            "bindings": [list(b) for b in q.query.bindings],
            "split": split,
            "template": template,
        }
        problem = check_row(row)
        if problem:  # the generator guarantees permutations; a failure here is a bug, said loudly
            raise ValueError(f"toy triplet {row['id']}: {problem}")
        rows.append(row)
    return rows


def _split_of(i: int) -> str:
    return "train" if i % 10 < 8 else "val" if i % 10 == 8 else "test"


def toy_triplets(
    per_size: int = 1000,
    seed: int = TRIPLET_SEED,
    holdout_fraction: float = TOY_HOLDOUT_FRACTION,
    holdout_templates: tuple[str, ...] = TOY_HOLDOUT_TEMPLATES,
) -> Path:
    """Triplets in the toy models' own world (made once under ``$BINDLAB_HOME/data``; a few seconds).

    The general triplet generator writes words the toy models have never seen (they know about a hundred words),
    so these come from SABER-style questions over the renderable vocabulary with N = 2 and 3: query = the
    question's query, positive = its preserve candidate (same bindings, other order), negative = its attribute
    swap (``negative_kind`` attribute) and its object swap (object) — same words, other bindings. Splits by
    question: 80 % train, 10 % val, 10 % test, all in the attributive template.

    Two held-out splits make the finetune report's general rows (like ``generate triplets --holdout-templates
    --holdout-words``):

    - ``holdout_fraction`` of the renderable words (:func:`toy_holdout`) occur in no train/val/test text; as many
      questions as ``test`` has, built from them alone, are ``test_unseen_words``, and the words are written to
      ``holdout_vocab.json`` (so ``jobs compare`` adds unseen-word MCQs in the toy vocabulary). 0 = none.
    - each of ``holdout_templates`` gets the ``test`` questions re-written in it (same seed and vocabulary, so the
      same bindings; ``with`` draws only the attributes it can express) as ``test_template_<name>``. The
      ``relative`` and ``with`` forms add a function word the toy models do not know ("that"; "colour",
      "pattern", ...), which their tokenizer reads as ``[UNK]``; every object and attribute stays renderable.
    """
    from bindlab.config import home
    from bindlab.data.files import build_once
    from bindlab.data.templates import DEFAULT_TEMPLATE, check_template

    for t in holdout_templates:
        check_template(t)
        if t == DEFAULT_TEMPLATE:
            raise ValueError(f"holdout template {t!r} is the training template; hold out others, e.g. predicative")
    held = toy_holdout(holdout_fraction, seed) if holdout_fraction else None
    tag = (f"-hw{round(100 * holdout_fraction)}" if held else "") + (
        f"-ht{''.join(t[0] for t in holdout_templates)}" if holdout_templates else ""
    )
    out = home() / "data" / f"toy-triplets-{per_size}-s{seed}{tag}"
    # made by one process at a time (two visitors' first jobs, a CLI beside the app); stats.json is written last
    build_once(out / "stats.json", lambda: _write_toy_triplets(out, per_size, seed, held, holdout_templates))
    return out


def _write_toy_triplets(out: Path, per_size: int, seed: int, held: Any, holdout_templates: tuple[str, ...]) -> None:
    """:func:`toy_triplets`' folder ``out``, written."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber
    from bindlab.data.templates import DEFAULT_TEMPLATE
    from bindlab.data.triplets import UNSEEN_WORDS_SPLIT, template_split, write_triplets

    vocab = _without(RENDER_VOCAB, held)
    questions = generate_saber(per_size=per_size, sizes=TRIPLET_SIZES, seed=seed, vocab=vocab)
    rows = [r for i, q in enumerate(questions) for r in _question_rows(q, _split_of(i), DEFAULT_TEMPLATE)]
    n_test = sum(_split_of(i) == "test" for i in range(len(questions)))
    for t in holdout_templates:
        qs = generate_saber(per_size=per_size, sizes=TRIPLET_SIZES, seed=seed, vocab=vocab, template=t)
        rows += [
            r for i, q in enumerate(qs) if _split_of(i) == "test" for r in _question_rows(q, template_split(t), t, t)
        ]
    if held is not None:
        per = max(1, math.ceil(n_test / len(TRIPLET_SIZES)))
        qs = generate_saber(per_size=per, sizes=TRIPLET_SIZES, seed=seed, vocab=_only(RENDER_VOCAB, held))
        rows += [r for q in qs for r in _question_rows(q, UNSEEN_WORDS_SPLIT, DEFAULT_TEMPLATE, "unseen")]
    splits = dict(sorted(Counter(r["split"] for r in rows).items()))
    write_triplets(
        out,
        rows,
        {
            "n_rows": len(rows),
            "source": "saber-render-vocab",
            "sizes": list(TRIPLET_SIZES),
            "seed": seed,
            "per_size": per_size,
            "splits": splits,
            "templates": [DEFAULT_TEMPLATE],
            "holdout_templates": list(holdout_templates),
            "holdout_words": held.to_json() if held else None,
        },
        holdout=held,
    )


def finetune_config(**overrides: Any) -> dict[str, Any]:
    """The walkthrough's job config: ``toy:shared``, toy-world triplets, :data:`FINETUNE_SETTINGS`, overrides."""
    cfg = {"model": FINETUNE_MODEL, **FINETUNE_SETTINGS, **overrides}
    if "data" not in cfg:
        cfg["data"] = str(toy_triplets())
    return cfg


def start_finetune(manager: Any = None, **overrides: Any) -> str:
    """Submit the walkthrough's finetune as a background job (returns at once with the job id)."""
    from bindlab.studies.finetune import submit_finetune

    return submit_finetune(finetune_config(**overrides), manager)


def finetune_status(job_id: str, manager: Any = None) -> dict[str, Any]:
    """``{"id", "state", "message", "step", "total_steps", "fraction", "phase", "loss", "eta_s", "elapsed_s",
    "config", "done"}`` of a job, read from disk (cheap: for a timer)."""
    from bindlab.studies.finetune import job_info

    info = job_info(job_id, log_lines=10, manager=manager)
    st, pr = info["status"], info["progress"]
    return {
        "id": st["id"],
        "state": st["state"],
        "message": st.get("message", ""),
        "done": st["state"] == "done",
        "error": st.get("error"),
        "step": pr.get("step", 0),
        "total_steps": pr.get("total_steps"),
        "phase": pr.get("phase"),
        "fraction": 1.0 if st["state"] == "done" else float(pr.get("fraction") or 0.0),
        "loss": pr.get("loss"),
        "eta_s": pr.get("eta_s"),
        "elapsed_s": pr.get("elapsed_s"),
        "config": info["config"],
        "log_tail": st.get("log_tail") or info["log_tail"],
        "metrics": info["metrics"],
    }


def latest_finished(manager: Any = None, **overrides: Any) -> str | None:
    """The newest ``done`` job whose config is the walkthrough's (so a prepared run can be shown again), or None."""
    from bindlab.studies.finetune import job_info, list_jobs
    from bindlab.train.finetune import FinetuneConfig

    want = FinetuneConfig.from_dict(finetune_config(**overrides)).to_dict()
    for st in reversed(list_jobs(manager)):
        if st["state"] == "done" and (job_info(st["id"], log_lines=0, manager=manager)["config"] or {}) == want:
            return st["id"]
    return None


def image_drift(job_id: str, data: str | Path | None = None, limit: int = 60, manager: Any = None) -> dict[str, float]:
    """How far the finetune moved *image* embeddings: mean 1 − cos(base, LiNeS) over the benchmark's query images.

    For ``toy:shared`` a text-only LoRA changes images too (the blocks are shared); for a dual encoder it is 0.
    ``manager``: the job manager the job belongs to (default: the local one).
    """
    from bindlab.data.schema import load_mcqs
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.service import embed_image_files
    from bindlab.studies.finetune import job_info

    base = job_info(job_id, log_lines=0, manager=manager)["status"]["base_model"]
    path = _dataset(data, images=True)
    questions, _ = load_mcqs(path)
    files = [path.parent / q.query.image for q in questions[:limit]]
    # both loaded now, like compare_job's models: the same base weights on both sides even if they changed on disk
    a = embed_image_files(load_encoder(base), files)
    b = embed_image_files(load_encoder(f"lora:{job_id}"), files)
    cos = np.einsum("nd,nd->n", a, b)
    return {
        "mean_1_minus_cos": float(np.mean(1.0 - cos)),
        "max_1_minus_cos": float(np.max(1.0 - cos)),
        "n_images": len(files),
    }


def finetune_names(lines_a: float | None) -> dict[str, str]:
    """How step 7 names the job's models: ``base``, ``finetuned (unscaled)`` and ``finetuned + LiNeS (a=…)``; with
    a = 1 nothing is scaled, so ``lora:<job>`` is the unscaled model and is named so too (never LiNeS)."""
    from bindlab.train.compare import display_labels

    labels = display_labels(lines_a)
    lines = labels["lines"]
    return {
        "base": "base",
        "unscaled": "finetuned (unscaled)",
        "lines": "finetuned (unscaled)" if lines == "unscaled" else f"finetuned + {lines}",
    }


def finetune_shown(lines_a: float | None) -> list[str]:
    """The model keys step 7 shows: base, unscaled and, only when it scales something, the LiNeS model."""
    from bindlab.train.compare import report_models

    return report_models(lines_a)


def step_finetune(
    job_id: str,
    data: str | Path | None = None,
    attention_limit: int | None = 40,
    progress: Progress | None = None,
    manager: Any = None,
    report: bool = True,
) -> dict[str, Any]:
    """Step 7, once the job is done: base vs finetuned (unscaled) vs LiNeS on the image benchmark, all four
    pairings, plus the job's triplet accuracy, the attention margins, the image-embedding drift and the Finetune
    tab's separated report. ``manager``: the job manager the job belongs to (a page visitor's; default: the local
    one).

    The benchmark's questions are in the attributive template, the template of every training query: a gain on them
    shows the training format was learnt. The separated report
    (:func:`bindlab.studies.finetune_report.separated_report`, text → text) says which rows are in-format and adds the
    general tests: the same questions in held-out templates, questions of held-out words only, the held-out triplet
    splits, and the forgetting controls, each with n and its 95 % interval.

    Returns:
        ``{"job", "models", "rows": [{"pairing", "base", "unscaled", "lines"}] (N = all), "by_n" (all rows of
        :func:`~bindlab.train.compare.mcq_table`), "triplets", "lines_a", "names" (:func:`finetune_names`),
        "shown" (:func:`finetune_shown`), "attention", "image_drift", "steps", "train_seconds", "lr", "chance",
        "chance_by_n", "template" (the questions'), "report" (entries), "report_rows"
        (:func:`~bindlab.train.compare.report_rows`), "report_moves" (:func:`~bindlab.train.compare.report_moves`)}``
        (chance: the mean of the questions' own chance, overall and per N; the report keys are empty lists when
        ``report`` is False).
    """
    from bindlab.data.schema import load_mcqs
    from bindlab.studies.finetune import compare_job, job_info, mcq_table
    from bindlab.studies.finetune_report import question_template
    from bindlab.train.compare import report_moves, report_rows

    info = job_info(job_id, log_lines=0, manager=manager)
    if info["status"]["state"] != "done":
        raise ValueError(f"job {job_id} is {info['status']['state']}; the before/after needs it done")
    path = _dataset(data, images=True, progress=progress)
    res = compare_job(
        job_id,
        path,
        pairings="tt,ti,it,ii",
        progress=progress,
        manager=manager,
        attention_limit=attention_limit,
        report=report,
    )
    table = mcq_table(res)
    result = info["result"] or {}
    a = (res.get("lines") or {}).get("a")
    entries = res.get("report") or []
    return {
        "job": res["job"],
        "models": res["models"],
        "rows": [r for r in table if r["N"] == "all"],
        "by_n": table,
        "triplets": res["triplets"],
        "lines_a": a,
        "names": finetune_names(a),
        "shown": finetune_shown(a),
        "template": question_template(load_mcqs(path)[0]),
        "report": entries,
        "report_rows": report_rows(entries, a),
        "report_moves": report_moves(entries, a),
        "attention": res.get("attention"),
        "image_drift": image_drift(job_id, data, manager=manager),
        "steps": result.get("steps"),
        "train_seconds": result.get("train_seconds"),
        "lr": info["config"].get("lr"),
        "n_questions": res["mcq"]["base"]["tt"]["n"],
        "chance": res["mcq"]["base"]["tt"].get("chance", 0.25),
        "chance_by_n": res["mcq"]["base"]["tt"].get("chance_by_n", {}),
    }


# ---------------------------------------------------------------------------------------------- page memory
# What a step needs to be run again, as the page remembers it per browser (a reload keeps it): the step's key and
# these settings. Everything else of a step is fixed (the embedded default data and models).
STEP_SETTINGS: dict[str, dict[str, type]] = {
    "bow": {},
    "text": {},
    "images": {},
    "objects": {"model": str, "pairing": str},
    "grounding": {"alpha": float, "value": str},
    "attention": {"model": str},
    "finetune": {"job": str},
}
MEMO_SIZE = 32  # step results kept in this process (a few hundred kB each; step 7's the largest)
_MEMO: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_MEMO_LOCK = threading.Lock()


def step_settings(key: str, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The settings of step ``key`` that :func:`run_step` uses, typed; other keys are dropped (a browser's store
    may hold anything), a missing one takes the step's default.

    Raises:
        ValueError: ``key`` is not a step, or a setting has the wrong type.
    """
    if key not in STEP_SETTINGS:
        raise ValueError(f"{str(key)[:40]!r} is not a walkthrough step; the steps are {', '.join(STEP_SETTINGS)}")
    out = {}
    for name, kind in STEP_SETTINGS[key].items():
        raw = (settings or {}).get(name)
        if raw is None:
            continue
        try:
            out[name] = kind(raw) if kind is float else str(raw)[:200]
        except (TypeError, ValueError):
            raise ValueError(f"step {key}: {name} {str(raw)[:40]!r} is not a {kind.__name__}") from None
    return out


def run_step(
    key: str, settings: dict[str, Any] | None = None, progress: Progress | None = None, manager: Any = None
) -> dict[str, Any]:
    """Step ``key`` with ``settings`` (:func:`step_settings`), remembered in this process: a second call with the
    same settings — the same step pressed again, or a download rebuilt after the page was reloaded — returns the
    first call's result without computing anything (the embeddings behind it are cached on disk as well).

    Step 7 (``finetune``, settings ``{"job"}``) checks first that ``manager`` (the visitor's) may see the job.
    """
    settings = step_settings(key, settings)
    if key == "finetune":
        if "job" not in settings:
            raise ValueError("step finetune needs its job id; start the finetune first")
        finetune_status(settings["job"], manager)  # the visitor's own job (or, outside public mode, a local one)
    memo_key = (key, *sorted(settings.items()))
    with _MEMO_LOCK:
        if memo_key in _MEMO:
            _MEMO.move_to_end(memo_key)
            return _MEMO[memo_key]
    if key == "bow":
        r = step_bag_of_words()
    elif key == "finetune":
        r = step_finetune(settings["job"], progress=progress, manager=manager)
    else:
        fn = {
            "text": step_text_encoder,
            "images": step_images,
            "objects": step_objects,
            "grounding": step_grounding,
            "attention": step_attention,
        }[key]
        r = fn(progress=progress, **settings)
    with _MEMO_LOCK:
        _MEMO[memo_key] = r
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
    return r


def rebuild_results(
    done: dict[str, Any] | None, have: dict[str, Any] | None = None, manager: Any = None
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The results of the steps a browser remembers as run (``done``: ``{step key: settings}``), for its download
    after a reload: ``have`` (this page's results) first, the others from :func:`run_step` (remembered or cached).

    Returns:
        ``(results, skipped)``: ``skipped`` names each remembered step that could not be rebuilt and why (a job
        deleted, a setting no longer valid); the others are in ``results``.
    """
    results, skipped = dict(have or {}), []
    for key, settings in (done or {}).items():
        if key in results or key not in STEP_SETTINGS:
            continue
        try:
            results[key] = run_step(key, settings if isinstance(settings, dict) else {}, manager=manager)
        except (ValueError, KeyError, FileNotFoundError) as e:
            skipped.append(f"step {key}: {e.args[0] if isinstance(e, KeyError) and e.args else e}")
    return results, skipped


def walkthrough_provenance(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The provenance of a Walkthrough download: which steps were run and with which models."""
    from bindlab.provenance import provenance

    settings = {
        "kind": "walkthrough",
        "steps": [s.key for s in STEPS if s.key in results],
        "models": sorted({r["model"] for r in results.values() if isinstance(r.get("model"), str)}),
    }
    return provenance(settings=settings)
