"""Backend of the Pairs tab: a scored Pairs file in memory, filters, one pair's 2x2 view, per-edit-type rows.

Scores come from the same cached pipeline as ``eval pairs``; a :class:`ScoredPairs` is memoised per (file, mtime,
encoder id, verbosity) in this process, so moving between pairs never re-embeds anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindlab.config import home
from bindlab.data.pairs_schema import PairItem, load_pairs
from bindlab.eval.pairs import evaluate_pairs, parse_verbosity

DEFAULT_SETTINGS = {"scenes": 6, "foils_per_scene": 15, "seed": 0, "size": 160}
OUTCOMES = ("all", "group pass", "group fail", "I2T fail", "T2I fail")


def default_pairs_dataset() -> Path:
    """The embedded default: a small CompoSET-style set (6 scenes x 15 foils, 160 px), generated on first use."""
    from bindlab.data.composet import generate_composet

    path = home() / "default" / "composet-mini" / "pairs.jsonl"
    if not path.exists():
        generate_composet(path.parent, workers=1, **DEFAULT_SETTINGS)
    return path


@dataclass
class ScoredPairs:
    """Pairs with their per-(pair, level) rows and the ``eval pairs`` summary."""

    path: Path
    model: str
    verbosity: str
    pairs: list[PairItem]
    rows: list[dict[str, Any]]  # per_item_rows: one per (pair, level)
    summary: dict[str, Any]

    def pair(self, pid: str) -> PairItem:
        for p in self.pairs:
            if p.id == pid:
                return p
        raise KeyError(f"pair {pid!r} is not in {self.path}")


_SCORED: dict[tuple[str, float, str, str], ScoredPairs] = {}


def scored_pairs(path: str | Path, model: str, verbosity: str = "all", progress: Any = None) -> ScoredPairs:
    """Load and score a Pairs file (memoised by file mtime, model and verbosity)."""
    from bindlab.studies.browse import get_encoder

    parse_verbosity(verbosity)
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: file not found; generate one with 'python -m bindlab generate composet --out DIR'")
    key = (str(p.resolve()), p.stat().st_mtime, model, verbosity)
    if key in _SCORED:
        return _SCORED[key]
    pairs, _ = load_pairs(p)
    encoder = get_encoder(model)
    summary, rows = evaluate_pairs(pairs, p.parent, encoder, verbosity, progress=progress)
    s = ScoredPairs(p, encoder.id, verbosity, pairs, rows, summary)
    _SCORED[key] = s
    return s


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
