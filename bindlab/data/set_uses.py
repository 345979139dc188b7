"""What each evaluation set was used for (``set_uses.json``): fresh, selection or training, and the labels rendered
from it, so that no text calls a set fresh unless the record says so (a test regenerates the labels and diffs them
against the docs and the model cards)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

USES = ("fresh", "selection", "training")
RECORD = Path(__file__).with_name("set_uses.json")  # packaged: pyproject package-data needs "data/set_uses.json"


@lru_cache(maxsize=1)
def set_uses() -> tuple[dict[str, Any], ...]:
    """The records of ``set_uses.json``, each ``{"name", "seed", "use", "chose"}``.

    Raises:
        ValueError: a record whose use is not one of :data:`USES`.
    """
    sets = tuple(json.loads(RECORD.read_text())["sets"])
    for s in sets:
        if s["use"] not in USES:
            raise ValueError(f"set_uses.json: {s['name']} has use {s['use']!r}; use one of {', '.join(USES)}")
    return sets


def seeds_with(use: str, first: int = 11, last: int = 16) -> list[int]:
    """The image-MCQ seeds between ``first`` and ``last`` whose record says ``use``."""
    return [s["seed"] for s in set_uses() if s["use"] == use and first <= s["seed"] <= last]


def _span(seeds: list[int]) -> str:
    if not seeds:
        return "none"
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds[:-1])) + (" and " if len(seeds) > 1 else "") + str(seeds[-1])


def seed_label(seed: int) -> str:
    """``"seed 16 (fresh: chosen on none)"`` / ``"seed 11 (selection set)"``, from the record."""
    rec = next((s for s in set_uses() if s["seed"] == seed), None)
    if rec is None:
        raise ValueError(f"seed {seed} is not in set_uses.json; record what it was used for first")
    return f"seed {seed} (fresh: chosen on none)" if rec["use"] == "fresh" else f"seed {seed} ({rec['use']} set)"


def sets_sentence() -> str:
    """The sentence that says which image-MCQ sets are selection sets and which are fresh."""
    sel, fresh = seeds_with("selection"), seeds_with("fresh")
    n = len(sel) + len(fresh)
    return (
        f"{n} image MCQ sets (seeds {_span(sel + fresh)}): seeds {_span(sel)} are selection sets (the shipped "
        f"image tower was chosen on them) and only seed {_span(fresh)} is fresh (chosen on none)"
    )


__all__ = ["RECORD", "USES", "seed_label", "seeds_with", "set_uses", "sets_sentence"]
