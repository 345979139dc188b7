"""ARO VG-Attribution (Yuksekgonul et al., ICLR 2023): a Visual Genome crop, its caption and the caption with
the two attributes swapped (``"the white house and the paved road"`` vs ``"the paved house and the white road"``).

Published format (``mertyg/vision-language-models-are-bows``): ``visual_genome_attribution.json``, a JSON list of
``{"image_id", "image_path", "bbox_x", "bbox_y", "bbox_w", "bbox_h", "true_caption", "false_caption",
"attributes": [a1, a2], ...}`` with images under ``images/``. Native metric: accuracy per attribute pair
``"a1_a2"`` (correct when sim(crop, true) > sim(crop, false)), macro-averaged over pairs with >= 25 items.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindlab.data.adapters.base import ChoiceItem, read_json, require
from bindlab.data.schema import DataError

KIND = "choice"
SPLITS: tuple[str, ...] = ("test",)
FIELDS = ("image_path", "bbox_x", "bbox_y", "bbox_w", "bbox_h", "true_caption", "false_caption", "attributes")
MIN_COUNT = 25  # attribute pairs with fewer items are left out of the macro average (as the ARO code does)


def load_local(path: Path, split: str | None = None, limit: int = 0, images: str | Path | None = None,
               **_: Any) -> list[ChoiceItem]:
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
        out.append(ChoiceItem(id=str(k), image=str(folder / row["image_path"]), positives=[row["true_caption"]],
                              negative=row["false_caption"], group=f"{attrs[0]}_{attrs[1]}", box=(x, y, x + w, y + h),
                              extra={"image_id": row.get("image_id")}))
    return out
