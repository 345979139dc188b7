"""ColorSwap (Burapacheep et al., 2024): 2,000 image-caption pairs in 1,000 2x2 items whose captions swap colours.

Published format (``stanfordnlp/colorswap``, gated, split ``test``): parquet rows ``{"id", "image_1", "image_2",
"caption_1", "caption_2", "image_source", "caption_source"}`` whose image columns hold ``{"bytes", "path"}``
(how ``datasets`` stores images). A local copy is either those parquet files (a file, or a folder holding
``*.parquet``, e.g. a ``hf download`` of the repo) or the rows as JSON / JSONL with ``image_1`` / ``image_2`` as
image paths relative to the file (``datasets``' ``to_json`` after saving the images).
Native metric: text / image / group score, as in Winoground.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bindlab.data.adapters.base import read_json_or_jsonl, require
from bindlab.data.adapters.hub import cache_folder, hub_files, matching, parquet_rows, save_image
from bindlab.data.pairs_schema import PairItem, PairSide
from bindlab.data.schema import DataError

KIND = "pairs"
SPLITS: tuple[str, ...] = ("test",)
FIELDS = ("id", "image_1", "image_2", "caption_1", "caption_2")
PARQUET = ("*.parquet",)


def _image(folder: Path | None, value: Any, where: str, images: Path | None = None, stem: str = "") -> str:
    if isinstance(value, dict) and value.get("bytes") and images is not None:  # parquet: bytes stored inline
        return save_image(value, images, stem, where)
    if isinstance(value, dict):  # datasets' Image feature exported with its path
        value = value.get("path")
    if not isinstance(value, str) or not value:
        raise DataError(f"{where}: image must be a file path or image bytes")
    p = Path(value) if folder is None or Path(value).is_absolute() else folder / value
    if not p.is_file():
        raise DataError(f"{where}: image {p} not found")
    return str(p)


def from_rows(
    rows: Iterable[dict[str, Any]], folder: Path | None, where: str, images: Path | None = None
) -> list[PairItem]:
    """2x2 items from ColorSwap rows; image cells are paths (relative to ``folder``) or, from parquet, bytes
    that are written once under ``images``."""
    out = []
    for k, row in enumerate(rows):
        w = f"{where} item {k}"
        require(row, FIELDS, w)
        src = str(row.get("image_source") or "colorswap")
        out.append(
            PairItem(
                id=str(row["id"]),
                scene_id=str(row["id"]),
                edit_type="swap_color",
                edit_category=src,
                base=PairSide(_image(folder, row["image_1"], w, images, f"{row['id']}_1"), {"short": row["caption_1"]}),
                foil=PairSide(_image(folder, row["image_2"], w, images, f"{row['id']}_2"), {"short": row["caption_2"]}),
                extra={"image_source": row.get("image_source"), "caption_source": row.get("caption_source")},
            )
        )
    return out


def load_local(path: Path, split: str | None = None, limit: int = 0, **_: Any) -> list[PairItem]:
    """Items from a local copy: parquet file(s) as on the hub (a ``.parquet`` file, or a folder holding some),
    or a JSON/JSONL export (or a folder holding ``test.json``/``test.jsonl``)."""
    if path.suffix == ".parquet" or (path.is_dir() and matching(path, PARQUET)):
        return _from_parquet(path if path.is_file() else None, path, split, limit)
    file = path
    if path.is_dir():
        found = [
            path / n for n in ("test.jsonl", "test.json", "colorswap.jsonl", "colorswap.json") if (path / n).exists()
        ]
        if not found:
            raise DataError(f"colorswap: no *.parquet, test.jsonl or test.json in {path}")
        file = found[0]
    rows = read_json_or_jsonl(file, "colorswap")
    return from_rows(rows[:limit] if limit else rows, file.parent, str(file))


def _from_parquet(
    file: Path | None, root: Path, split: str | None, limit: int, images: Path | None = None
) -> list[PairItem]:
    files = [file] if file else split_files(matching(root, PARQUET), split or "test")
    if not files[0].exists():
        raise DataError(f"colorswap: {files[0]} not found")
    images = images or cache_folder("colorswap", files[0])
    return from_rows(parquet_rows(files, limit, "colorswap"), None, str(files[0]), images)


def split_files(files: list[Path], split: str) -> list[Path]:
    """The parquet files of one split (``test-00000-of-00001.parquet``, ``test/0000.parquet``); all files when
    none is named after a split."""
    named = [f for f in files if f.name.startswith(f"{split}-") or f.parent.name == split]
    return named or files


def load_hub(hub: dict[str, Any], cache: Path, split: str | None = None, limit: int = 0, **_: Any) -> list[PairItem]:
    """Items from the hub repo's parquet files (``data/test-*.parquet``); images are written under ``cache``."""
    root, _files = hub_files(hub, PARQUET, "colorswap", parquet_fallback=True)
    return _from_parquet(None, root, split or hub.get("split", "test"), limit, cache / (split or "test"))
