"""Shared pieces of the benchmark adapters: item types, the bag-of-words validity check, file readers.

Adapters turn a published benchmark file into one of two item kinds:

- :class:`~bindlab.data.pairs_schema.PairItem` for 2x2 benchmarks (Winoground, ColorSwap), scored by
  :mod:`bindlab.eval.pairs`;
- :class:`ChoiceItem` for "one image (or text), positive caption(s) vs a negative caption" benchmarks
  (SugarCrepe, SugarCrepe++, ARO), scored by :mod:`bindlab.eval.benchmarks`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindlab.data.files import DataError, load_json_bounded
from bindlab.data.vocab import tokens


@dataclass
class ChoiceItem:
    """One test case: an image (path, optional crop box), positive caption(s) and one negative caption.

    Attributes:
        id: item id (unique within the benchmark).
        image: absolute image path, or None for text-only use.
        positives: the true caption(s); SugarCrepe++ has two paraphrases.
        negative: the hard negative caption.
        group: the split or attribute pair the native metric groups by.
        box: (left, top, right, bottom) crop in pixels (ARO VG-Attribution), or None.
    """

    id: str
    image: str | None
    positives: list[str]
    negative: str
    group: str
    box: tuple[int, int, int, int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def bag(text: str) -> Counter:
    """The bag of content words of ``text`` (the same tokens the ``bow`` encoder counts)."""
    return Counter(tokens(text))


def same_bag(a: str, b: str) -> bool:
    """True when two captions have the same bag of words (only their order differs)."""
    return bag(a) == bag(b)


def read_json(path: Path, what: str) -> Any:
    """Parse a JSON file, naming the benchmark and the file in any error."""
    if not path.exists():
        raise DataError(f"{what}: {path} not found; download the published files there or pass --data PATH")
    return load_json_bounded(path, None, what)


def read_json_or_jsonl(path: Path, what: str) -> list[dict[str, Any]]:
    """Rows of a JSON list or a JSONL file."""
    if path.suffix == ".jsonl":
        from bindlab.data.schema import read_jsonl

        rows = []
        for _, obj in read_jsonl(path):
            if isinstance(obj, DataError):
                raise obj
            rows.append(obj)
        return rows
    data = read_json(path, what)
    if isinstance(data, dict):
        data = list(data.values())
    if not isinstance(data, list):
        raise DataError(f"{what}: {path} must hold a JSON list of items, got {type(data).__name__}")
    return data


def require(row: Any, keys: tuple[str, ...], where: str) -> dict[str, Any]:
    """Check that a row is an object with ``keys``; raise :class:`DataError` naming the missing ones."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected an object, got {type(row).__name__}")
    missing = [k for k in keys if k not in row]
    if missing:
        raise DataError(f"{where}: missing field(s) {missing} (has {sorted(row)})")
    for k in keys:
        if isinstance(row[k], str) and not row[k].strip() and "caption" in k:
            raise DataError(f"{where}: field {k!r} is empty")
    return row
