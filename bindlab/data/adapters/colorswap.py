"""ColorSwap (Burapacheep et al., 2024): 2,000 image-caption pairs in 1,000 2x2 items whose captions swap colours.

Published format (``stanfordnlp/colorswap``, split ``test``): rows ``{"id", "image_1", "image_2", "caption_1",
"caption_2", "image_source", "caption_source"}``. A local copy is those rows as JSON or JSONL with ``image_1`` /
``image_2`` as image paths relative to the file (``datasets``' ``to_json`` after saving the images).
Native metric: text / image / group score, as in Winoground.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindlab.data.adapters.base import read_json_or_jsonl, require
from bindlab.data.pairs_schema import PairItem, PairSide
from bindlab.data.schema import DataError

KIND = "pairs"
SPLITS: tuple[str, ...] = ("test",)
FIELDS = ("id", "image_1", "image_2", "caption_1", "caption_2")


def _image(folder: Path | None, value: Any, where: str) -> str:
    if isinstance(value, dict):  # datasets' Image feature exported with its path
        value = value.get("path")
    if not isinstance(value, str) or not value:
        raise DataError(f"{where}: image must be a file path")
    p = Path(value) if folder is None else folder / value
    if not p.is_file():
        raise DataError(f"{where}: image {p} not found")
    return str(p)


def from_rows(rows: list[dict[str, Any]], folder: Path | None, where: str) -> list[PairItem]:
    out = []
    for k, row in enumerate(rows):
        w = f"{where} item {k}"
        require(row, FIELDS, w)
        src = str(row.get("image_source") or "colorswap")
        out.append(PairItem(
            id=str(row["id"]), scene_id=str(row["id"]), edit_type="swap_color", edit_category=src,
            base=PairSide(_image(folder, row["image_1"], w), {"short": row["caption_1"]}),
            foil=PairSide(_image(folder, row["image_2"], w), {"short": row["caption_2"]}),
            extra={"image_source": row.get("image_source"), "caption_source": row.get("caption_source")}))
    return out


def load_local(path: Path, split: str | None = None, limit: int = 0, **_: Any) -> list[PairItem]:
    """Items from a local JSON/JSONL export (or a folder holding ``test.json``/``test.jsonl``)."""
    file = path
    if path.is_dir():
        found = [path / n for n in ("test.jsonl", "test.json", "colorswap.jsonl", "colorswap.json") if (path / n).exists()]
        if not found:
            raise DataError(f"colorswap: no test.jsonl / test.json in {path}")
        file = found[0]
    rows = read_json_or_jsonl(file, "colorswap")
    return from_rows(rows[:limit] if limit else rows, file.parent, str(file))


def load_hub(hub: dict[str, Any], cache: Path, split: str | None = None, limit: int = 0) -> list[PairItem]:
    from bindlab.data.adapters.base import hub_rows

    rows = hub_rows(hub["dataset"], hub.get("split", "test"), cache, ("image_1", "image_2"))
    return from_rows(rows[:limit] if limit else rows, None, hub["dataset"])
