"""Triplet files: write ``triplets.jsonl`` and ``stats.json``, check and load rows (docs/architecture.md, "Triplets")."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from bindlab.data.schema import DataError, read_jsonl, write_jsonl
from bindlab.data.triplets.holdout import HeldOutWords, write_holdout
from bindlab.data.triplets.spec import (
    CONSTRUCTIONS,
    NEGATIVE_KINDS,
    SPLITS,
    UNSEEN_WORDS_SPLIT,
    is_split,
    template_split,
)
from bindlab.data.triplets.words import folded, words_of


def write_triplets(
    out_dir: str | Path, rows: list[dict], stats: dict[str, Any], holdout: HeldOutWords | None = None
) -> dict[str, str]:
    """Write ``triplets.jsonl`` (all rows, each with its split) and ``stats.json`` (and, with ``holdout``, the
    held-out words as ``holdout_vocab.json``); return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"triplets": str(out / "triplets.jsonl"), "stats": str(out / "stats.json")}
    if holdout is not None:
        paths["holdout_vocab"] = str(write_holdout(out, holdout))
    write_jsonl(paths["triplets"], rows)
    tmp = out / f".stats.json.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(paths["stats"])
    return paths


_ROW_FIELDS = ("id", "construction", "query", "positive", "negative", "negative_kind", "bindings", "split")


def check_row(obj: Any) -> str | None:
    """Why a parsed JSONL line is not a valid triplet row (``None`` when it is)."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    missing = [f for f in _ROW_FIELDS if f not in obj]
    if missing:
        return f"missing field(s) {missing}"
    for f in ("id", "query", "positive", "negative"):
        if not isinstance(obj[f], str) or not obj[f].strip():
            return f"{f!r} must be a non-empty string"
    if obj["construction"] not in CONSTRUCTIONS:
        return f"construction {obj['construction']!r} not in {list(CONSTRUCTIONS)}"
    if obj["negative_kind"] not in NEGATIVE_KINDS:
        return f"negative_kind {obj['negative_kind']!r} not in {list(NEGATIVE_KINDS)}"
    if not isinstance(obj["split"], str) or not is_split(obj["split"]):
        return (
            f"split {obj['split']!r} not in {list(SPLITS)}, {UNSEEN_WORDS_SPLIT!r} or {template_split('<template>')!r}"
        )
    b = obj["bindings"]
    if (
        not isinstance(b, list)
        or not b
        or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(w, str) and w for w in p) for p in b)
    ):
        return "bindings must be a non-empty list of [attribute, object] string pairs"
    if Counter(folded(words_of(obj["negative"]))) != Counter(folded(words_of(obj["positive"]))):
        return "negative is not a word-level permutation of the positive"
    if obj["negative"] == obj["positive"]:
        return "negative equals the positive"
    return None


def load_triplets(path: str | Path, split: str | None = None) -> list[dict]:
    """Read a triplets JSONL file (or the folder holding ``triplets.jsonl``), optionally one split.

    Raises:
        DataError (a ValueError): naming the file and line of the first bad row, duplicate ids, an unknown split,
            or a file without rows.
    """
    if split is not None and not is_split(split):
        raise ValueError(
            f"unknown split {split!r}; choose from {list(SPLITS)}, {UNSEEN_WORDS_SPLIT!r} or "
            f"{template_split('<template>')!r}"
        )
    p = Path(path)
    if p.is_dir():
        p = p / "triplets.jsonl"
    rows: list[dict] = []
    seen: set[str] = set()
    for n, obj in read_jsonl(p):
        if isinstance(obj, DataError):
            raise obj
        problem = check_row(obj)
        if problem is None and obj["id"] in seen:
            problem = f"duplicate id {obj['id']!r}"
        if problem is not None:
            raise DataError(f"{p}:{n}: {problem}")
        seen.add(obj["id"])
        if split is None or obj["split"] == split:
            rows.append(obj)
    if not seen:
        raise DataError(f"{p}: no triplet rows")
    return rows
