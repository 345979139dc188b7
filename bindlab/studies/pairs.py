"""Pairs: the 2x2 pairs study (``eval pairs``) and the Pairs tab's session.

:func:`run_pairs` is the one pipeline both faces call: load a Pairs file, score every pair Winoground-style
(``bindlab.eval.pairs``) and return a :class:`~bindlab.studies.result.Result` with provenance. The Pairs tab's
:class:`ScoredPairs` is built from that result and memoised per (file, mtime, encoder id, verbosity) in this
process, so moving between pairs never re-embeds anything and the tab shows the numbers ``eval pairs`` prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindlab.config import home
from bindlab.data.pairs_schema import PairItem, load_pairs
from bindlab.eval.pairs import by_edit_type_rows, evaluate_pairs, parse_verbosity
from bindlab.provenance import provenance
from bindlab.studies.access import check_model_access
from bindlab.studies.browse import get_encoder
from bindlab.studies.memo import forget_under, remember
from bindlab.studies.result import Result
from bindlab.studies.validate import data_input, nonneg_int, positive_int

DEFAULT_SETTINGS = {"scenes": 6, "foils_per_scene": 15, "seed": 0, "size": 160}
OUTCOMES = ("all", "group pass", "group fail", "I2T fail", "T2I fail")
Progress = Callable[[float, str], None]


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
    model: str  # image+text encoder id, e.g. "toy:clip"
    verbosity: str = "all"  # caption level scored: short | medium | long | all
    limit: int = 0  # score only the first N pairs; 0 = all
    batch_size: int | None = None  # encoder batch size; None = the backend's default
    device: str = "auto"  # auto | cpu | cuda | cuda:N | mps
    seed: int = 0  # bootstrap seed of the 95 % intervals
    skip_bad: bool = False  # skip malformed lines (reported in the notes) instead of refusing the file

    def __post_init__(self) -> None:
        if not str(self.data or "").strip():
            raise ValueError("data: give a Pairs JSONL file, e.g. DIR/pairs.jsonl "
                             "(make one with 'python -m bindlab generate composet --out DIR')")
        self.data = data_input(self.data, "data", "pairs")  # inside the allowed data roots; a datasets folder read
        self.model = (self.model or "").strip()
        if not self.model:
            raise ValueError("model: give an image+text encoder id, e.g. toy:clip or hf:/path/to/clip")
        parse_verbosity(self.verbosity)
        self.limit = nonneg_int(self.limit, "limit")
        if self.batch_size is not None:
            self.batch_size = positive_int(self.batch_size, "batch_size")
        self.seed = nonneg_int(self.seed, "seed")
        if not isinstance(self.device, str) or not self.device.strip():
            raise ValueError(f"device must be auto, cpu, cuda, cuda:N or mps, got {self.device!r}")


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
    encoder = get_encoder(request.model, request.device, request.batch_size)  # an unknown id fails before the file
    path = Path(request.data)
    if not path.exists():
        raise FileNotFoundError(f"{path}: file not found; generate one with "
                                "'python -m bindlab generate composet --out DIR'")
    pairs, report = load_pairs(path, strict=not request.skip_bad)
    pairs = pairs[: request.limit] if request.limit else pairs
    t = time.perf_counter()
    summary, rows = evaluate_pairs(pairs, path.parent, encoder, request.verbosity, progress=progress,
                                   seed=request.seed)
    settings = {"kind": "pairs", "verbosity": request.verbosity, "limit": request.limit,
                "batch_size": request.batch_size, "skipped_lines": len(report.skipped),
                "seconds": round(time.perf_counter() - t, 3)}
    summary = {**summary, "n_pairs": len(pairs), "group": summary["overall"]["group"]}
    result = Result("pairs", summary, rows, provenance=provenance(path, encoder, settings, request.seed),
                    primary_metric="group", tables={"by_edit_type": by_edit_type_rows(summary)},
                    notes=[report.summary()] if report.skipped else [])
    return result, pairs


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
        raise FileNotFoundError(f"{p}: file not found; generate one with 'python -m bindlab generate composet --out DIR'")
    key = (str(p.resolve()), p.stat().st_mtime, request.model, verbosity)
    check_model_access(request.model)  # before the memo: another visitor's scoring of their lora: model stays theirs
    s = _SCORED.pop(key, None)
    if s is None:
        result, pairs = _run(request, progress)
        s = ScoredPairs(p, result.provenance["encoder"]["id"], verbosity, pairs, result.rows, result.summary, result)
    remember(_SCORED, key, s, MAX_SCORED_PAIRS)  # now the most recently used
    return s


def edit_type_table(s: ScoredPairs) -> list[dict[str, Any]]:
    """Rows ``{edit_type, category, origin, n, i2t, t2i, group}`` for the per-edit-type chart and table.

    For a CompoSET-style set (every edit type in the taxonomy) each of the taxonomy's edit types has a row, in
    its order; a type the set lacks has ``n = 0`` and ``None`` scores (missing, not zero). Other sets: their own
    edit types only.
    """
    from bindlab.data.composet import EDIT_ORIGIN, EDIT_TYPES

    rows = s.result.tables["by_edit_type"]
    have = {r["edit_type"]: r for r in rows}
    if not have or not set(have) <= set(EDIT_TYPES):
        return rows
    return [have.get(t) or {"edit_type": t, "category": c, "origin": EDIT_ORIGIN[t], "n": 0, "i2t": None, "t2i": None,
                            "group": None} for t, c in EDIT_TYPES.items()]


def origin_line(summary: dict[str, Any]) -> str:
    """The headline by origin: Group of the CompoSET paper's edit types and of bindlab's own, each with its n and 95 %
    CI (chance 0.167), e.g. "the paper's edit types: Group 0.043 (95% CI …, n 120) · bindlab's own: …"; "" when the
    set has neither (e.g. Winoground tags)."""
    names = {"composet": "the CompoSET paper's edit types", "bindlab": "bindlab's own edit types"}
    by = summary.get("by_origin") or {}
    parts = [f"{names[o]}: Group {by[o]['group']:.3f} (95% CI {by[o]['group_ci95'][0]:.3f}–{by[o]['group_ci95'][1]:.3f},"
             f" n {by[o]['n']})" for o in names if o in by]
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
    table: list[dict[str, Any]]  # wide: {edit_type, n, i2t <model>, ..., group <model>}; "overall" first

    @property
    def models(self) -> tuple[str, str]:
        return self.first.model, self.second.model


def compare_pairs(path: str | Path, model: str, other: str, verbosity: str = "all",
                  progress: Progress | None = None) -> PairsComparison:
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
        raise ValueError(f"compare with: {other!r} is the model already scored; pick another, e.g. "
                         f"{compare_default(other) or 'toy:negclip'}")

    def part(lo: float, name: str) -> Progress | None:
        return (lambda f, m: progress(lo + 0.5 * f, f"{name}: {m}")) if progress else None

    first = scored_pairs(path, model, verbosity, progress=part(0.0, model))
    second = scored_pairs(path, other, verbosity, progress=part(0.5, other))
    rows = [{**r, "model": s.model} for both in zip_edit_types(first, second) for s, r in both]
    return PairsComparison(first, second, rows, _wide(first, second))


def zip_edit_types(first: ScoredPairs, second: ScoredPairs) -> list[tuple[tuple[ScoredPairs, dict[str, Any]], ...]]:
    """Per edit type (in :func:`edit_type_table` order): ``((first, its row), (second, its row))``."""
    b = {r["edit_type"]: r for r in edit_type_table(second)}
    empty = {k: None for k in SCORE_KEYS}
    return [((first, r), (second, b.get(r["edit_type"]) or {**r, **empty, "n": 0})) for r in edit_type_table(first)]


def _wide(first: ScoredPairs, second: ScoredPairs) -> list[dict[str, Any]]:
    """The two-model table: one row per edit type (``overall`` first), a column per (score, model)."""
    def row(name: str, n: int, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"edit_type": name, "n": n}
        for k in SCORE_KEYS:
            out[f"{k} {first.model}"] = a.get(k)
            out[f"{k} {second.model}"] = b.get(k)
        return out

    # n counts scored (pair, caption level) rows, as the per-edit-type rows do
    table = [row("overall", len(first.rows), first.summary["overall"], second.summary["overall"])]
    return table + [row(a["edit_type"], a["n"], a, b) for (_, a), (_, b) in zip_edit_types(first, second)]


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

    return {"edit_type": uniq([p.edit_type for p in s.pairs]), "category": uniq([p.edit_category for p in s.pairs]),
            "scene": uniq([p.scene_id for p in s.pairs]), "verbosity": list(s.summary["levels"])}


def _keep(value: str | None) -> bool:
    return value in (None, "", "all")


def filter_pairs(s: ScoredPairs, edit_type: str = "all", category: str = "all", scene: str = "all",
                 verbosity: str | None = None, outcome: str = "all") -> list[str]:
    """Pair ids passing the filters; ``outcome`` (one of :data:`OUTCOMES`) is judged at ``verbosity``."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}; choose from {list(OUTCOMES)}")
    level = verbosity or s.summary["levels"][0]
    if level not in s.summary["levels"]:
        raise ValueError(f"verbosity {level!r} was not scored; scored levels: {s.summary['levels']}")
    rows = {r["id"]: r for r in s.rows if r["verbosity"] == level}
    test = {"all": lambda r: True, "group pass": lambda r: r["group"], "group fail": lambda r: not r["group"],
            "I2T fail": lambda r: not r["i2t"], "T2I fail": lambda r: not r["t2i"]}[outcome]
    return [p.id for p in s.pairs
            if (_keep(edit_type) or p.edit_type == edit_type) and (_keep(category) or p.edit_category == category)
            and (_keep(scene) or p.scene_id == scene) and test(rows[p.id])]


def pair_view(s: ScoredPairs, pid: str, verbosity: str | None = None) -> dict[str, Any]:
    """Everything the Pairs tab shows for one pair at one caption level.

    Returns:
        ``{"id", "scene_id", "edit_type", "edit_category", "edit", "verbosity", "base": {image (absolute path),
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
        "id": p.id, "scene_id": p.scene_id, "edit_type": p.edit_type, "edit_category": p.edit_category,
        "edit": p.extra.get("edit", ""), "verbosity": level,
        "base": {"image": str(root / p.base.image), "caption": p.base.captions[level]},
        "foil": {"image": str(root / p.foil.image), "caption": p.foil.captions[level]},
        "scores": row["scores"], "i2t": row["i2t"], "t2i": row["t2i"], "group": row["group"],
        "margin": row["margin"], "pixels_changed": p.extra.get("pixels_changed"), "image_cosine": row.get("image_cosine"),
    }
