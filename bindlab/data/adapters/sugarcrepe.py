"""SugarCrepe (Hsieh et al., NeurIPS 2023): COCO val2017 images, a positive and a hard negative caption.

Published format (``RAIVNLab/sugar-crepe``, ``data/``): seven files ``<split>.json``, each a JSON object
``{"0": {"filename", "caption", "negative_caption"}, ...}``; ``filename`` names a COCO val2017 image (not
included; point ``images`` at a val2017 folder). Native metric: accuracy per split — an item is correct when
sim(image, caption) > sim(image, negative_caption).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindlab.data.adapters.base import ChoiceItem, read_json, require
from bindlab.data.schema import DataError

KIND = "choice"
SPLITS: tuple[str, ...] = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
FIELDS = ("filename", "caption", "negative_caption")


def image_folder(path: Path, images: str | Path | None) -> Path | None:
    """The COCO image folder: ``images`` if given (relative to the data folder), else ``images/`` or
    ``val2017/`` next to the files, else None (text-only use)."""
    if images:
        p = Path(images).expanduser()
        p = p if p.is_absolute() else path / p
        if not p.is_dir():
            raise DataError(f"image folder {p} not found; give the COCO val2017 folder with --images")
        return p
    for name in ("images", "val2017"):
        if (path / name).is_dir():
            return path / name
    return None


def pick_splits(split: str | None, splits: tuple[str, ...], what: str) -> list[str]:
    if not split or split == "all":
        return list(splits)
    wanted = [s.strip() for s in split.split(",") if s.strip()]
    bad = [s for s in wanted if s not in splits]
    if bad:
        raise ValueError(f"{what}: unknown split(s) {bad}; choose from {list(splits)} or 'all'")
    return wanted


def load_local(path: Path, split: str | None = None, limit: int = 0, images: str | Path | None = None,
               **_: Any) -> list[ChoiceItem]:
    """Items of the chosen split(s) (``limit`` per split)."""
    if not path.is_dir():
        raise DataError(f"sugarcrepe: {path} must be the folder holding the <split>.json files")
    folder = image_folder(path, images)
    out: list[ChoiceItem] = []
    for s in pick_splits(split, SPLITS, "sugarcrepe"):
        file = path / f"{s}.json"
        data = read_json(file, "sugarcrepe")
        rows = list(data.items()) if isinstance(data, dict) else list(enumerate(data))
        for key, row in rows[:limit] if limit else rows:
            require(row, FIELDS, f"{file} item {key}")
            out.append(ChoiceItem(id=f"{s}/{key}", image=str(folder / row["filename"]) if folder else None,
                                  positives=[row["caption"]], negative=row["negative_caption"], group=s,
                                  extra={"filename": row["filename"]}))
    return out
