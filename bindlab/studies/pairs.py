"""Pairs: the 2x2 pairs study (``eval pairs``) and the Pairs tab's session.

:func:`run_pairs` is the one pipeline both faces call: load a Pairs file, score every pair Winoground-style
(``bindlab.eval.pairs``) and return a :class:`~bindlab.result.Result` with provenance. The Pairs tab's
:class:`ScoredPairs` is built from that result and memoised per (file, mtime, encoder id, verbosity) in this
process, so moving between pairs never re-embeds anything and the tab shows the numbers ``eval pairs`` prints.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindlab.config import home
from bindlab.data.pairs_schema import PairItem
from bindlab.eval.pairs import parse_verbosity
from bindlab.result import Result
from bindlab.studies.access import check_model_access
from bindlab.studies.common import get_encoder
from bindlab.studies.memo import forget_under, remember
from bindlab.studies.progress import Progress
from bindlab.studies.validate import check_run_options, data_input, run_option

DEFAULT_SETTINGS = {"scenes": 6, "foils_per_scene": 15, "seed": 0, "size": 160}
OUTCOMES = ("all", "group pass", "group fail", "I2T fail", "T2I fail")


def default_pairs_dataset() -> Path:
    """The embedded default: a small CompoSET-style set (6 scenes x 15 foils, 160 px), generated on first use."""
    from bindlab.data.composet import generate_composet
    from bindlab.data.files import build_once

    path = home() / "default" / "composet-mini" / "pairs.jsonl"
    return build_once(path, lambda: generate_composet(path.parent, workers=1, **DEFAULT_SETTINGS))


# --- the request and the study ----------------------------------------------------------------------------------
@dataclass
class PairsRequest:
    """What ``eval pairs`` and the Pairs tab ask for; validated on construction.

    Raises:
        ValueError: an empty data path or model id, an unknown verbosity, ``limit`` < 0, ``batch_size`` < 1, a
            non-integer seed or an empty device, each named with the value given.
    """

    data: str | Path  # Pairs JSONL file; image paths are relative to its folder
    model: str = run_option(
        "model", required=True, empty="model: give an image+text encoder id, e.g. toy:clip or hf:/path/to/clip"
    )
    verbosity: str = "all"  # caption level scored: short | medium | long | all
    limit: int = run_option("limit")  # score only the first N pairs; 0 = all
    batch_size: int | None = run_option("batch_size")  # None = the backend's default
    device: str = run_option("device")
    seed: int = run_option("seed")  # bootstrap seed of the 95 % intervals
    skip_bad: bool = run_option("skip_bad")  # malformed lines are reported in the notes
    dtype: str = run_option("dtype")  # the precision a hub model runs in

    def __post_init__(self) -> None:
        if not str(self.data or "").strip():
            raise ValueError(
                "data: give a Pairs JSONL file, e.g. DIR/pairs.jsonl "
                "(make one with 'python -m bindlab generate composet --out DIR')"
            )
        self.data = data_input(self.data, "data", "pairs")  # inside the allowed data roots; a datasets folder read
        check_run_options(self)  # model, limit, batch size, device, seed (RunOptions)
        parse_verbosity(self.verbosity)


def run_pairs(request: PairsRequest, progress: Progress | None = None) -> Result:
    """Winoground-style I2T / T2I / Group scores of a Pairs file: what ``eval pairs`` and the Pairs tab report.

    Returns:
        ``Result("pairs")``: summary = :func:`bindlab.eval.pairs.evaluate_pairs`'s summary (overall, by verbosity,
        edit type and category, scene/edit split, controls) plus ``"n_pairs"`` and ``"group"`` (the overall Group
        score, the primary metric); rows = one per (pair, level) with its 2x2 scores and verdicts;
        ``tables["by_edit_type"]`` = ``{edit_type, category, origin, n, i2t, t2i, group}`` in edit-type order;
        ``summary["by_origin"]`` scores the CompoSET paper's edit types and bindlab's own apart.
    """
    return _run(request, progress)[0]


def _run(request: PairsRequest, progress: Progress | None) -> tuple[Result, list[PairItem]]:
    """Encoder first (an unknown id fails before the file is read), then the pairs, then the task's scoring
    (:mod:`bindlab.tasks.composet`, the one Compare runs too)."""
    from bindlab.tasks import TaskOptions, get_task
    from bindlab.tasks.composet import load

    encoder = get_encoder(request.model, request.device, request.batch_size, request.dtype)
    options = TaskOptions(
        verbosity=request.verbosity,
        limit=request.limit,
        seed=request.seed,
        batch_size=request.batch_size,
        skip_bad=request.skip_bad,
    )
    pairs, report = load(request.data, options)
    return get_task("pairs").score(encoder, pairs, report, request.data, options, progress), pairs


# --- the Pairs tab's session: one scored file in memory -----------------------------------------------------------
@dataclass
class ScoredPairs:
    """Pairs with their per-(pair, level) rows and the ``eval pairs`` summary, from :func:`run_pairs`."""

    path: Path
    model: str  # the encoder's id
    verbosity: str
    pairs: list[PairItem]
    rows: list[dict[str, Any]]  # per_item_rows: one per (pair, level)
    summary: dict[str, Any]
    result: Result = field(repr=False)  # run_pairs' whole result (tables, provenance)

    def pair(self, pid: str) -> PairItem:
        for p in self.pairs:
            if p.id == pid:
                return p
        raise KeyError(f"pair {pid!r} is not in {self.path}")


_SCORED: dict[tuple[str, float, str, str], ScoredPairs] = {}  # least recently used first
MAX_SCORED_PAIRS = 8  # scored Pairs files kept for the tab's views; the least recently used goes first


def forget_pairs_under(folder: str | Path) -> int:
    """Drop the scored Pairs files inside ``folder`` (a session's uploads, when it ends); how many went."""
    return len(forget_under(_SCORED, folder))


def scored_pairs(path: str | Path, model: str, verbosity: str = "all", progress: Any = None) -> ScoredPairs:
    """Score a Pairs file through :func:`run_pairs` (memoised by file mtime, model and verbosity)."""
    request = PairsRequest(data=path, model=model, verbosity=verbosity)
    p = Path(request.data)
    if not p.exists():
        raise FileNotFoundError(
            f"{p}: file not found; generate one with 'python -m bindlab generate composet --out DIR'"
        )
    key = (str(p.resolve()), p.stat().st_mtime, request.model, verbosity)
    check_model_access(request.model)  # before the memo: another visitor's scoring of their lora: model stays theirs
    s = _SCORED.pop(key, None)
    if s is None:
        result, pairs = _run(request, progress)
        s = ScoredPairs(p, result.provenance["encoder"]["id"], verbosity, pairs, result.rows, result.summary, result)
    remember(_SCORED, key, s, MAX_SCORED_PAIRS)  # now the most recently used
    return s


def edit_type_table(s: ScoredPairs) -> list[dict[str, Any]]:
    """Rows ``{edit_type, category, origin, n, pairs, i2t, t2i, group, i2t_ci95, t2i_ci95, group_ci95}`` for the
    per-edit-type chart and table: ``n`` counts scored (pair, caption level) rows, as every score's n does, and
    ``pairs`` the pairs behind them; each ``*_ci95`` is the score's bootstrap 95 % interval.

    For a CompoSET-style set (every edit type in the taxonomy) each of the taxonomy's edit types has a row, in
    its order; a type the set lacks has ``n = 0``, ``pairs = 0`` and ``None`` scores (missing, not zero). Other
    sets: their own edit types only.
    """
    from bindlab.data.composet import EDIT_ORIGIN, EDIT_TYPES

    by = s.summary.get("by_edit_type", {})
    pairs = Counter(p.edit_type for p in s.pairs)
    rows = [
        {
            **r,
            "pairs": pairs[r["edit_type"]],
            **{f"{k}_ci95": by.get(r["edit_type"], {}).get(f"{k}_ci95") for k in SCORE_KEYS},
        }
        for r in s.result.tables["by_edit_type"]
    ]
    have = {r["edit_type"]: r for r in rows}
    if not have or not set(have) <= set(EDIT_TYPES):
        return rows
    missing = {"n": 0, "pairs": 0, **{k: None for k in SCORE_KEYS}, **{f"{k}_ci95": None for k in SCORE_KEYS}}
    return [
        have.get(t) or {"edit_type": t, "category": c, "origin": EDIT_ORIGIN[t], **missing}
        for t, c in EDIT_TYPES.items()
    ]


# --- what the numbers count and what below chance means -----------------------------------------------------------
SCORE_NAMES = {"i2t": "I2T", "t2i": "T2I", "group": "Group"}


def n_label(s: ScoredPairs) -> str:
    """What the scores' n counts: "90 rows = 30 pairs × 3 caption levels (short, medium, long)" — each pair is
    scored once per caption level, and every score (overall, per edit type) is a share of those rows."""
    levels = list(s.summary["levels"])
    n, k = len(s.rows), len(levels)
    noun = "caption level" if k == 1 else "caption levels"
    if n == len(s.pairs) * k:
        return f"n = {n} rows = {len(s.pairs)} pairs × {k} {noun} ({', '.join(levels)})"
    return f"n = {n} rows: {len(s.pairs)} pairs at up to {k} {noun} ({', '.join(levels)})"


def score_summary(block: dict[str, Any]) -> list[dict[str, Any]]:
    """I2T / T2I / Group of one score block (``summary["overall"]``, one edit type's): per score its name, value,
    bootstrap 95 % interval, chance level and where the interval lies against it
    (:func:`bindlab.eval.metrics.chance_label`: above / at / below chance)."""
    from bindlab.eval.metrics import chance_label
    from bindlab.eval.pairs import CHANCE

    out = []
    for k in SCORE_KEYS:
        lo, hi = block.get(f"{k}_ci95") or (None, None)
        out.append(
            {
                "key": k,
                "name": SCORE_NAMES[k],
                "value": block.get(k),
                "ci95": [lo, hi],
                "n": block.get("n"),
                "chance": CHANCE[k],
                "vs_chance": chance_label(lo, hi, CHANCE[k]),
            }
        )
    return out


def failure_kinds(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """How the rows that fail I2T and T2I fail: per score, ``{"fail", "same", "same_base", "same_foil", "swapped",
    "tie"}`` counts.

    I2T asks each image to prefer its own caption: a failing row has both images preferring the same caption
    (``same``: the base's, ``same_base``, or the foil's, ``same_foil``), each image preferring the other's caption
    (``swapped``), or a tie at one image (``tie``; a tie fails). T2I is the same with each caption choosing an image.
    """
    out: dict[str, dict[str, int]] = {}
    for key, (first, second) in (
        ("i2t", (("c0_i0", "c1_i0"), ("c1_i1", "c0_i1"))),
        ("t2i", (("c0_i0", "c0_i1"), ("c1_i1", "c1_i0"))),
    ):
        kinds = Counter()
        for r in rows:
            if r[key]:
                continue
            sc = r["scores"]
            a, b = sc[first[0]] - sc[first[1]], sc[second[0]] - sc[second[1]]  # > 0: that side picks its own
            kinds["fail"] += 1
            if a == 0 or b == 0 or a != a or b != b:
                kinds["tie"] += 1
            elif a < 0 and b < 0:
                kinds["swapped"] += 1
            else:
                kinds["same"] += 1
                kinds["same_base" if a > 0 else "same_foil"] += 1
        out[key] = {k: int(kinds[k]) for k in ("fail", "same", "same_base", "same_foil", "swapped", "tie")}
    return out


def below_chance_notes(s: ScoredPairs) -> list[str]:
    """One sentence per overall score whose 95 % interval lies wholly below chance: what the score asks, why a coin
    would pass it that often, and how this model's failing rows fail (:func:`failure_kinds`). [] when none is."""
    block = s.summary["overall"]
    below = {r["key"]: r for r in score_summary(block) if r["vs_chance"] == "below chance"}
    kinds = failure_kinds(s.rows) if below else {}
    what = {
        "i2t": ("each image to prefer its own caption", "images", "caption", "base caption", "foil caption"),
        "t2i": ("each caption to prefer its own image", "captions", "image", "base image", "foil image"),
    }
    notes = []
    for k in ("i2t", "t2i"):
        if k not in below:
            continue
        asks, who, pick, base, foil = what[k]
        one = who[:-1]
        f = kinds[k]
        if f["same"] >= f["swapped"]:
            reading = (
                f"mostly both {who} prefer the same {pick}: the model's choice of {pick} barely depends on the {one}"
            )
        else:
            reading = f"mostly each {one} prefers the other's {pick}: the model systematically confuses the two"
        notes.append(
            f"{SCORE_NAMES[k]} is below chance ({numbers_text(below[k])}): it asks {asks}, so the two {who} must "
            f"choose differently, which a coin per {one} does 1 time in 4; below that, the model fails more often "
            f"than a coin would. Of its {f['fail']} failing rows, {f['same']} have both {who} preferring the same "
            f"{pick} ({f['same_base']} the {base}, {f['same_foil']} the {foil}) and {f['swapped']} have each {one} "
            f"preferring the other's {pick}"
            + (f" ({f['tie']} more are exact ties, which fail)" if f["tie"] else "")
            + f": {reading}."
        )
    if "group" in below:
        notes.append(
            f"Group is below chance ({numbers_text(below['group'])}): it needs I2T and T2I both, all four "
            "comparisons of the 2x2 right, which random scores do 1 time in 6; the model passes fewer, so its "
            "scores are not random but wrong in a consistent way."
        )
    return notes


def numbers_text(r: dict[str, Any]) -> str:
    """``0.022, 95% CI 0.000–0.056, chance 0.250`` for one :func:`score_summary` entry (in a note, so written here:
    studies/ does not import present/)."""
    lo, hi = r["ci95"]
    return f"{r['value']:.3f}, 95% CI {lo:.3f}–{hi:.3f}, chance {r['chance']:.3f}"


# what is known about an edit type's origin (the paper's text names six edit types, in four categories of 16 types):
# named in the paper; in a category the paper names, under bindlab's name; or neither (e.g. Winoground tags)
ORIGIN_LABELS: dict[str, str] = {
    "composet": "edit types named in the CompoSET paper",
    "bindlab": "edit types in a category the paper names, under bindlab's name",
    "other": "edit types outside the paper's categories",
}


def origin_line(summary: dict[str, Any]) -> str:
    """The headline by origin (:data:`ORIGIN_LABELS`): Group of the edit types named in the CompoSET paper and of
    those in a category the paper names under bindlab's name, each with its 95 % CI (chance 0.167) and its n scored
    (pair, caption level) rows; "" when the set has neither (e.g. Winoground tags)."""
    names = {k: ORIGIN_LABELS[k] for k in ("composet", "bindlab")}
    by = summary.get("by_origin") or {}
    parts = [
        f"{names[o]}: Group {by[o]['group']:.3f} (95% CI {by[o]['group_ci95'][0]:.3f}–{by[o]['group_ci95'][1]:.3f},"
        f" n {by[o]['n']} rows)"
        for o in names
        if o in by
    ]
    return " · ".join(parts)


# --- two models side by side: a failure and its fix ----------------------------------------------------------------
# a model -> the model it is compared with by default: the same model before / after binding hard negatives
COMPARE_DEFAULTS = {"toy:clip": "toy:negclip", "toy:negclip": "toy:clip"}
SCORE_KEYS = ("i2t", "t2i", "group")


def compare_default(model: str) -> str | None:
    """The model ``model`` is compared with by default (``toy:clip`` <-> ``toy:negclip``); None when it has none."""
    return COMPARE_DEFAULTS.get((model or "").strip())


@dataclass
class PairsComparison:
    """Two models scored on the same Pairs file at the same caption levels (each by :func:`scored_pairs`)."""

    first: ScoredPairs
    second: ScoredPairs
    rows: list[dict[str, Any]]  # {edit_type, category, n, model, i2t, t2i, group}, per (edit type, model)
    table: list[dict[str, Any]]  # wide: {edit_type, pairs, n, i2t <model>, ..., group <model>}; "overall" first

    @property
    def models(self) -> tuple[str, str]:
        return self.first.model, self.second.model


def compare_pairs(
    path: str | Path, model: str, other: str, verbosity: str = "all", progress: Progress | None = None
) -> PairsComparison:
    """Score a Pairs file with two models and set their I2T / T2I / Group side by side, overall and per edit type.

    Each model goes through :func:`scored_pairs` (so through :func:`run_pairs`, memoised): the numbers are the ones
    ``eval pairs`` prints for each model alone.

    Raises:
        ValueError: ``other`` is empty or the same id as ``model``.
    """
    other = (other or "").strip()
    if not other:
        raise ValueError("compare with: give a second image+text encoder id, e.g. toy:negclip")
    if other == (model or "").strip():
        raise ValueError(
            f"compare with: {other!r} is the model already scored; pick another, e.g. "
            f"{compare_default(other) or 'toy:negclip'}"
        )

    def part(lo: float, name: str) -> Progress | None:
        return (lambda f, m: progress(lo + 0.5 * f, f"{name}: {m}")) if progress else None

    first = scored_pairs(path, model, verbosity, progress=part(0.0, model))
    second = scored_pairs(path, other, verbosity, progress=part(0.5, other))
    rows = [{**r, "model": s.model} for both in zip_edit_types(first, second) for s, r in both]
    return PairsComparison(first, second, rows, _wide(first, second))


def zip_edit_types(first: ScoredPairs, second: ScoredPairs) -> list[tuple[tuple[ScoredPairs, dict[str, Any]], ...]]:
    """Per edit type (in :func:`edit_type_table` order): ``((first, its row), (second, its row))``."""
    b = {r["edit_type"]: r for r in edit_type_table(second)}
    empty = {**{k: None for k in SCORE_KEYS}, **{f"{k}_ci95": None for k in SCORE_KEYS}, "n": 0, "pairs": 0}
    return [((first, r), (second, b.get(r["edit_type"]) or {**r, **empty})) for r in edit_type_table(first)]


def _wide(first: ScoredPairs, second: ScoredPairs) -> list[dict[str, Any]]:
    """The two-model table: one row per edit type (``overall`` first), a column per (score, model)."""

    def row(name: str, pairs: int, n: int, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"edit_type": name, "pairs": pairs, "n": n}
        for k in SCORE_KEYS:
            out[f"{k} {first.model}"] = a.get(k)
            out[f"{k} {second.model}"] = b.get(k)
        return out

    # n counts scored (pair, caption level) rows, as the per-edit-type rows do; pairs the pairs behind them
    table = [row("overall", len(first.pairs), len(first.rows), first.summary["overall"], second.summary["overall"])]
    return table + [row(a["edit_type"], a["pairs"], a["n"], a, b) for (_, a), (_, b) in zip_edit_types(first, second)]


def check_model(model: str) -> None:
    """Load ``model`` (once per process) so a face can say early whether it is available here.

    Raises:
        ValueError: the id is unknown or the model cannot load (the message says why).
    """
    get_encoder(model)


def filter_options(s: ScoredPairs) -> dict[str, list[str]]:
    """Choices for the filters: edit types, categories, scenes, verbosity levels (each with 'all' first)."""

    def uniq(xs: list[str]) -> list[str]:
        return ["all", *dict.fromkeys(xs)]

    return {
        "edit_type": uniq([p.edit_type for p in s.pairs]),
        "category": uniq([p.edit_category for p in s.pairs]),
        "scene": uniq([p.scene_id for p in s.pairs]),
        "verbosity": list(s.summary["levels"]),
    }


def _keep(value: str | None) -> bool:
    return value in (None, "", "all")


def filter_pairs(
    s: ScoredPairs,
    edit_type: str = "all",
    category: str = "all",
    scene: str = "all",
    verbosity: str | None = None,
    outcome: str = "all",
) -> list[str]:
    """Pair ids passing the filters; ``outcome`` (one of :data:`OUTCOMES`) is judged at ``verbosity``."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}; choose from {list(OUTCOMES)}")
    level = verbosity or s.summary["levels"][0]
    if level not in s.summary["levels"]:
        raise ValueError(f"verbosity {level!r} was not scored; scored levels: {s.summary['levels']}")
    rows = {r["id"]: r for r in s.rows if r["verbosity"] == level}
    test = {
        "all": lambda r: True,
        "group pass": lambda r: r["group"],
        "group fail": lambda r: not r["group"],
        "I2T fail": lambda r: not r["i2t"],
        "T2I fail": lambda r: not r["t2i"],
    }[outcome]
    return [
        p.id
        for p in s.pairs
        if (_keep(edit_type) or p.edit_type == edit_type)
        and (_keep(category) or p.edit_category == category)
        and (_keep(scene) or p.scene_id == scene)
        and test(rows[p.id])
    ]


def pair_view(s: ScoredPairs, pid: str, verbosity: str | None = None) -> dict[str, Any]:
    """Everything the Pairs tab shows for one pair at one caption level.

    Returns:
        ``{"id", "scene_id", "edit_type", "edit_category", "edit_origin", "edit", "verbosity", "base": {image (absolute path),
        caption}, "foil": {...}, "scores": {"c0_i0", "c0_i1", "c1_i0", "c1_i1"}, "i2t", "t2i", "group", "margin",
        "pixels_changed", "image_cosine"}``.
    """
    p = s.pair(pid)
    level = verbosity or s.summary["levels"][0]
    row = next((r for r in s.rows if r["id"] == pid and r["verbosity"] == level), None)
    if row is None:
        raise ValueError(f"pair {pid!r} has no scores at verbosity {level!r}; scored levels: {s.summary['levels']}")
    root = s.path.parent
    return {
        "id": p.id,
        "scene_id": p.scene_id,
        "edit_type": p.edit_type,
        "edit_category": p.edit_category,
        "edit_origin": p.extra.get("edit_origin", ""),
        "edit": p.extra.get("edit", ""),
        "verbosity": level,
        "base": {"image": str(root / p.base.image), "caption": p.base.captions[level]},
        "foil": {"image": str(root / p.foil.image), "caption": p.foil.captions[level]},
        "scores": row["scores"],
        "i2t": row["i2t"],
        "t2i": row["t2i"],
        "group": row["group"],
        "margin": row["margin"],
        "pixels_changed": p.extra.get("pixels_changed"),
        "image_cosine": row.get("image_cosine"),
    }
