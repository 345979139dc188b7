"""Winoground (Thrush et al., CVPR 2022): 400 2x2 items, two images and two captions with the same words.

Published format (``facebook/winoground``): ``data/examples.jsonl`` rows ``{"id", "image_0", "image_1",
"caption_0", "caption_1", "tag", "secondary_tag", "num_main_preds", "collapsed_tag"}`` and ``data/images/<image_N>.png``.
Native metric: text / image / group score (= I2T / T2I / Group), by ``collapsed_tag``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindlab.data.adapters.base import read_json_or_jsonl, require
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


def from_rows(rows: list[dict[str, Any]], folder: Path | None, where: str) -> list[PairItem]:
    """Convert Winoground rows (image fields: names under ``folder/images`` or file paths) to 2x2 pairs."""
    out = []
    for k, row in enumerate(rows):
        require(row, FIELDS, f"{where} item {k}")
        imgs = [row[f"image_{j}"] if folder is None else _image(folder, str(row[f"image_{j}"])) for j in (0, 1)]
        tag = str(row.get("collapsed_tag") or row.get("tag") or "untagged")
        out.append(PairItem(
            id=str(row["id"]), scene_id=str(row["id"]), edit_type=tag, edit_category=str(row.get("tag") or tag),
            base=PairSide(imgs[0], {"short": row["caption_0"]}), foil=PairSide(imgs[1], {"short": row["caption_1"]}),
            extra={"secondary_tag": row.get("secondary_tag"), "num_main_preds": row.get("num_main_preds")}))
    return out


def load_local(path: Path, split: str | None = None, limit: int = 0, **_: Any) -> list[PairItem]:
    """Items from a local copy: the ``examples.jsonl`` file or the folder holding it (and ``images/``)."""
    file = path / "examples.jsonl" if path.is_dir() else path
    rows = read_json_or_jsonl(file, "winoground")
    return from_rows(rows[:limit] if limit else rows, file.parent, str(file))


def load_hub(hub: dict[str, Any], cache: Path, split: str | None = None, limit: int = 0) -> list[PairItem]:
    from bindlab.data.adapters.base import hub_rows

    rows = hub_rows(hub["dataset"], hub.get("split", "test"), cache, ("image_0", "image_1"))
    return from_rows(rows[:limit] if limit else rows, None, hub["dataset"])
