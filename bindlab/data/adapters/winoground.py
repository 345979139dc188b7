"""Winoground (Thrush et al., CVPR 2022): 400 2x2 items, two images and two captions with the same words.

Published format (``facebook/winoground``, gated): ``data/examples.jsonl`` rows ``{"id", "image_0", "image_1",
"caption_0", "caption_1", "tag", "secondary_tag", "num_main_preds", "collapsed_tag"}`` and the images
``<image_N>.png`` in ``data/images.zip``. A local copy is ``examples.jsonl`` with the images unpacked into
``images/`` next to it. The hub loader reads ``examples.jsonl`` + ``images.zip`` (unpacked once), or, where the repo
only offers parquet (its ``refs/convert/parquet`` export), rows whose image columns hold the image bytes.
Native metric: text / image / group score (= I2T / T2I / Group), by ``collapsed_tag``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bindlab.data.adapters.base import read_json_or_jsonl, require
from bindlab.data.adapters.hub import extract_zip, hub_files, parquet_rows, save_image
from bindlab.data.pairs_schema import PairItem, PairSide
from bindlab.data.schema import DataError

KIND = "pairs"
SPLITS: tuple[str, ...] = ("test",)
FIELDS = ("id", "image_0", "image_1", "caption_0", "caption_1")


def _image(folder: Path, name: str) -> str:
    for cand in (folder / "images" / name, folder / "images" / f"{name}.png", folder / name, folder / f"{name}.png"):
        if cand.is_file():
            return str(cand)
    raise DataError(f"winoground: image {name!r} not found under {folder / 'images'} (expected {name}.png)")


def _default_images() -> Path:
    from bindlab.config import home

    return home() / "hub_images" / "winoground" / "images"


def from_rows(
    rows: Iterable[dict[str, Any]], folder: Path | None, where: str, images: Path | None = None
) -> list[PairItem]:
    """Convert Winoground rows to 2x2 pairs. Image fields are names under ``folder/images`` (or ``folder``),
    or, with ``folder=None``, image cells (paths, or parquet bytes written once under ``images``)."""
    out = []
    for k, row in enumerate(rows):
        require(row, FIELDS, f"{where} item {k}")
        imgs = [
            _image(folder, str(row[f"image_{j}"]))
            if folder is not None
            else save_image(row[f"image_{j}"], images or _default_images(), f"{row['id']}_{j}", f"{where} item {k}")
            for j in (0, 1)
        ]
        tag = str(row.get("collapsed_tag") or row.get("tag") or "untagged")
        out.append(
            PairItem(
                id=str(row["id"]),
                scene_id=str(row["id"]),
                edit_type=tag,
                edit_category=str(row.get("tag") or tag),
                base=PairSide(imgs[0], {"short": row["caption_0"]}),
                foil=PairSide(imgs[1], {"short": row["caption_1"]}),
                extra={"secondary_tag": row.get("secondary_tag"), "num_main_preds": row.get("num_main_preds")},
            )
        )
    return out


def load_local(path: Path, split: str | None = None, limit: int = 0, **_: Any) -> list[PairItem]:
    """Items from a local copy: the ``examples.jsonl`` file or the folder holding it (and ``images/``)."""
    file = path / "examples.jsonl" if path.is_dir() else path
    rows = read_json_or_jsonl(file, "winoground")
    return from_rows(rows[:limit] if limit else rows, file.parent, str(file))


HUB_FILES = ("data/examples.jsonl", "data/images.zip", "*.parquet")


def load_hub(hub: dict[str, Any], cache: Path, split: str | None = None, limit: int = 0, **_: Any) -> list[PairItem]:
    """Items from the hub repo: ``data/examples.jsonl`` + ``data/images.zip`` (unpacked under ``cache``), or its
    parquet files. Needs access to the gated repo (a token) unless the files are already in the hub cache."""
    root, files = hub_files(hub, HUB_FILES, "winoground", parquet_fallback=True)
    parquet = [f for f in files if f.suffix == ".parquet"]
    if not parquet:
        jsonl, archive = root / "data" / "examples.jsonl", root / "data" / "images.zip"
        if not (jsonl.is_file() and archive.is_file()):
            raise DataError(f"winoground: the hub snapshot {root} lacks data/examples.jsonl or data/images.zip")
        folder = extract_zip(archive, cache / "images-zip", "winoground")
        rows = read_json_or_jsonl(jsonl, "winoground")
        return from_rows(rows[:limit] if limit else rows, folder, str(jsonl))
    return from_rows(parquet_rows(parquet, limit, "winoground"), None, hub["dataset"], cache / "images")
