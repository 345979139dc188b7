"""SugarCrepe (Hsieh et al., NeurIPS 2023): COCO val2017 images, a positive and a hard negative caption.

Published format (``RAIVNLab/sugar-crepe``, ``data/``): seven files ``<split>.json``, each a JSON object
``{"0": {"filename", "caption", "negative_caption"}, ...}``; ``filename`` names a COCO val2017 image (not
included; point ``images`` at a val2017 folder). Native metric: accuracy per split — an item is correct when
sim(image, caption) > sim(image, negative_caption).

Hub copy (``HuggingFaceM4/SugarCrepe_<split>``, one repo per split, ``data/test-*.parquet``): rows ``{"image",
"tested_labels", "true_label"}`` with the COCO image's bytes (and file name) in ``image``, ``tested_labels`` =
``[caption, negative_caption]`` and ``true_label`` a class index whose names (all captions) are in the file's
``datasets`` metadata. The positive is the named class when the names are there, else ``tested_labels[0]`` (the
order the repo was built in); the negative is the other label.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindlab.data.adapters.base import ChoiceItem, read_json, require
from bindlab.data.adapters.hub import hf_features, hub_files, parquet_rows, save_image
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


def load_local(
    path: Path, split: str | None = None, limit: int = 0, images: str | Path | None = None, **_: Any
) -> list[ChoiceItem]:
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
            out.append(
                ChoiceItem(
                    id=f"{s}/{key}",
                    image=str(folder / row["filename"]) if folder else None,
                    positives=[row["caption"]],
                    negative=row["negative_caption"],
                    group=s,
                    extra={"filename": row["filename"]},
                )
            )
    return out


def load_hub(hub: dict[str, Any], cache: Path, split: str | None = None, limit: int = 0, **_: Any) -> list[ChoiceItem]:
    """Items of the chosen split(s) from the per-split hub repos (``hub["dataset"]`` has a ``{split}`` slot);
    images are written under ``cache/<split>``."""
    out: list[ChoiceItem] = []
    for s in pick_splits(split, SPLITS, "sugarcrepe"):
        repo = hub["dataset"].format(split=s)
        _, files = hub_files(hub, ("*.parquet",), "sugarcrepe", repo=repo)
        names = (hf_features(files[0]).get("true_label") or {}).get("names")
        for k, row in enumerate(parquet_rows(files, limit, repo)):
            where = f"{repo} row {k}"
            require(row, HUB_FIELDS, where)
            pos, neg = hub_captions(row["tested_labels"], row["true_label"], names, where)
            image = row["image"]
            filename = Path(image.get("path") or "").name if isinstance(image, dict) else ""
            out.append(
                ChoiceItem(
                    id=f"{s}/{k}",
                    image=save_image(image, cache / s, f"{k:05d}", where),
                    positives=[pos],
                    negative=neg,
                    group=s,
                    extra={"filename": filename or None},
                )
            )
    return out


HUB_FIELDS = ("image", "tested_labels", "true_label")


def hub_captions(labels: Any, true_label: Any, names: list[str] | None, where: str) -> tuple[str, str]:
    """(positive, negative) of a hub row: two tested labels, one of them the true class."""
    if not isinstance(labels, list) or len(labels) != 2 or not all(isinstance(t, str) and t.strip() for t in labels):
        raise DataError(f"{where}: 'tested_labels' must be two captions, got {labels!r}")
    pos = labels[0]
    if names and isinstance(true_label, int) and 0 <= true_label < len(names):
        pos = names[true_label]
        if pos not in labels:
            raise DataError(f"{where}: true label {pos!r} is not one of the tested labels {labels}")
    return pos, labels[1] if pos == labels[0] else labels[0]
