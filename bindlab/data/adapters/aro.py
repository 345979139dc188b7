"""ARO VG-Attribution (Yuksekgonul et al., ICLR 2023): a Visual Genome crop, its caption and the caption with
the two attributes swapped (``"the white house and the paved road"`` vs ``"the paved house and the white road"``).

Published format (``mertyg/vision-language-models-are-bows``): ``visual_genome_attribution.json``, a JSON list of
``{"image_id", "image_path", "bbox_x", "bbox_y", "bbox_w", "bbox_h", "true_caption", "false_caption",
"attributes": [a1, a2], ...}`` with images under ``images/``. Native metric: accuracy per attribute pair
``"a1_a2"`` (correct when sim(crop, true) > sim(crop, false)), macro-averaged over pairs with >= 25 items.

Hub copy (``gowitheflow/ARO-Visual-Attribution``, the one MTEB pins; ``data/test-*-of-00008.parquet``): rows with
``image`` (bytes), ``true_caption``, ``false_caption`` and, when present, ``attributes`` and ``bbox``
(``{x, y, w, h}``). The box is applied only when the stored image is larger than it (an image already cut to the
box is used whole); without ``attributes`` the pair is read off the captions (the two words that swap, in the
true caption's order).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindlab.data.adapters.base import ChoiceItem, read_json, require
from bindlab.data.adapters.hub import hub_files, parquet_rows, save_image
from bindlab.data.schema import DataError

KIND = "choice"
SPLITS: tuple[str, ...] = ("test",)
FIELDS = ("image_path", "bbox_x", "bbox_y", "bbox_w", "bbox_h", "true_caption", "false_caption", "attributes")
MIN_COUNT = 25  # attribute pairs with fewer items are left out of the macro average (as the ARO code does)


def load_local(
    path: Path, split: str | None = None, limit: int = 0, images: str | Path | None = None, **_: Any
) -> list[ChoiceItem]:
    """Items from the folder holding ``visual_genome_attribution.json`` (and ``images/``), or the file itself."""
    file = path / "visual_genome_attribution.json" if path.is_dir() else path
    rows = read_json(file, "aro_vg_attribution")
    if not isinstance(rows, list):
        raise DataError(f"aro_vg_attribution: {file} must be a JSON list of items")
    folder = Path(images) if images else file.parent / "images"
    out = []
    for k, row in enumerate(rows[:limit] if limit else rows):
        require(row, FIELDS, f"{file} item {k}")
        attrs = row["attributes"]
        if not isinstance(attrs, list) or len(attrs) != 2:
            raise DataError(f"{file} item {k}: 'attributes' must be a list of two attribute words")
        x, y, w, h = (int(round(float(row[f"bbox_{c}"]))) for c in "xywh")
        out.append(
            ChoiceItem(
                id=str(k),
                image=str(folder / row["image_path"]),
                positives=[row["true_caption"]],
                negative=row["false_caption"],
                group=f"{attrs[0]}_{attrs[1]}",
                box=(x, y, x + w, y + h),
                extra={"image_id": row.get("image_id")},
            )
        )
    return out


HUB_FIELDS = ("image", "true_caption", "false_caption")


def load_hub(hub: dict[str, Any], cache: Path, split: str | None = None, limit: int = 0, **_: Any) -> list[ChoiceItem]:
    """Items from the hub repo's parquet files; images are written under ``cache/test``."""
    _, files = hub_files(hub, ("data/test-*.parquet",), "aro_vg_attribution")
    out = []
    for k, row in enumerate(parquet_rows(files, limit, hub["dataset"])):
        where = f"{hub['dataset']} row {k}"
        require(row, HUB_FIELDS, where)
        image = save_image(row["image"], cache / "test", f"{k:05d}", where)
        attrs = row.get("attributes")
        if not (isinstance(attrs, list) and len(attrs) == 2):
            attrs = swapped_words(row["true_caption"], row["false_caption"], where)
        out.append(
            ChoiceItem(
                id=str(k),
                image=image,
                positives=[row["true_caption"]],
                negative=row["false_caption"],
                group=f"{attrs[0]}_{attrs[1]}",
                box=_box(row.get("bbox"), image, where),
                extra={"image_id": row.get("image_id")},
            )
        )
    return out


def swapped_words(true: str, false: str, where: str) -> tuple[str, str]:
    """The two words that trade places between the captions, in the true caption's order."""
    t, f = true.split(), false.split()
    diff = [i for i, (a, b) in enumerate(zip(t, f, strict=True)) if a != b] if len(t) == len(f) else []
    if len(diff) != 2 or t[diff[0]] != f[diff[1]] or t[diff[1]] != f[diff[0]]:
        raise DataError(
            f"{where}: no 'attributes' and the captions do not differ by one swapped pair of words "
            f"({true!r} vs {false!r})"
        )
    return t[diff[0]], t[diff[1]]


def _box(bbox: Any, image: str, where: str) -> tuple[int, int, int, int] | None:
    """The crop box of a hub row, or None when there is none or the stored image is already the crop."""
    if not isinstance(bbox, dict):
        return None
    try:
        x, y, w, h = (int(round(float(bbox[c]))) for c in ("x", "y", "w", "h"))
    except (KeyError, TypeError, ValueError):
        raise DataError(f"{where}: 'bbox' must have numeric x, y, w, h, got {bbox!r}") from None
    from bindlab.data.files import open_image

    with open_image(image) as im:  # the one capped loader: a regular file, within the pixel cap
        width, height = im.size
    if abs(width - w) <= 2 and abs(height - h) <= 2:
        return None  # stored already cut to the box
    return (x, y, x + w, y + h)
