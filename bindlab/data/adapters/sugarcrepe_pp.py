"""SugarCrepe++ (Dumpala et al., NeurIPS 2024 D&B): two paraphrased positives and one negative per image.

Published format (``Sri-Harsha/scpp``, ``data/``): five files ``<split>.json``, each a JSON list of
``{"id", "filename", "caption", "caption2", "negative_caption"}``; ``filename`` names a COCO val2017 image.
Native metrics, per split:

- ITT (image-to-text): correct when sim(I, P1) > sim(I, N) and sim(I, P2) > sim(I, N);
- TOT (text-only): correct when cos(P1, P2) > cos(P1, N) and cos(P1, P2) > cos(P2, N).

Hub copy (``Aman-J/SugarCrepe_pp``, the authors' upload): the same five files under ``data/``; COCO images are
not on the hub, so hub items are text-only unless ``images`` points at a val2017 folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindlab.data.adapters.base import ChoiceItem, read_json, require
from bindlab.data.adapters.sugarcrepe import image_folder, pick_splits
from bindlab.data.schema import DataError

KIND = "choice"
SPLITS: tuple[str, ...] = ("replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
TASKS: tuple[str, ...] = ("itt", "tot")
FIELDS = ("filename", "caption", "caption2", "negative_caption")


def load_local(
    path: Path, split: str | None = None, limit: int = 0, images: str | Path | None = None, **_: Any
) -> list[ChoiceItem]:
    """Items of the chosen split(s) (``limit`` per split); images only when a COCO folder is found/given."""
    if not path.is_dir():
        raise DataError(f"sugarcrepe_pp: {path} must be the folder holding the <split>.json files")
    folder = image_folder(path, images)
    out: list[ChoiceItem] = []
    for s in pick_splits(split, SPLITS, "sugarcrepe_pp"):
        file = path / f"{s}.json"
        rows = read_json(file, "sugarcrepe_pp")
        if not isinstance(rows, list):
            raise DataError(f"sugarcrepe_pp: {file} must be a JSON list of items")
        for k, row in enumerate(rows[:limit] if limit else rows):
            require(row, FIELDS, f"{file} item {k}")
            out.append(
                ChoiceItem(
                    id=f"{s}/{row.get('id', k)}",
                    image=str(folder / row["filename"]) if folder else None,
                    positives=[row["caption"], row["caption2"]],
                    negative=row["negative_caption"],
                    group=s,
                    extra={"filename": row["filename"]},
                )
            )
    return out


def load_hub(
    hub: dict[str, Any],
    cache: Path,
    split: str | None = None,
    limit: int = 0,
    images: str | Path | None = None,
    **_: Any,
) -> list[ChoiceItem]:
    """Items from the hub repo's ``data/<split>.json`` files (text-only unless ``images`` is a COCO folder)."""
    from bindlab.data.adapters.hub import hub_files

    root, _files = hub_files(hub, tuple(f"data/{s}.json" for s in SPLITS), "sugarcrepe_pp")
    if images:
        images = Path(images).expanduser().resolve()
    return load_local(root / "data", split=split, limit=limit, images=images)
