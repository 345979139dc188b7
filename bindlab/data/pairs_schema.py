"""The Pairs format (docs/architecture.md, "Pairs 2x2"): CompoSET / Winoground-style 2x2 items, with a validating reader.

One JSON object per line::

    {"id", "scene_id", "edit_type", "edit_category",
     "base": {"image": relpath, "captions": {"short", "medium", "long"}},
     "foil": {"image": relpath, "captions": {...}}}

A file may carry one caption level only (e.g. Winoground's single caption per image is stored as ``"short"``).
Extra keys (``pixels_changed``, ``edit``, ...) are kept in :attr:`PairItem.extra`. Like the MCQ reader, a bad line
either refuses the file (``strict``) or is skipped and reported with its line number.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindlab.data.schema import DataError, LoadReport, check_image_fields, check_text_size, load_records

VERBOSITIES: tuple[str, ...] = ("short", "medium", "long")


@dataclass
class PairSide:
    """One side of a pair: its image (path relative to the JSONL folder) and caption(s) by verbosity level."""

    image: str
    captions: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"image": self.image, "captions": dict(self.captions)}


@dataclass
class PairItem:
    """A base image-caption pair and its foil, differing by one labelled edit."""

    id: str
    scene_id: str
    edit_type: str
    edit_category: str
    base: PairSide
    foil: PairSide
    extra: dict[str, Any] = field(default_factory=dict)

    def levels(self) -> list[str]:
        """Verbosity levels present on both sides, in :data:`VERBOSITIES` order."""
        return [v for v in VERBOSITIES if v in self.base.captions and v in self.foil.captions]

    def to_json(self) -> dict[str, Any]:
        d = {
            "id": self.id,
            "scene_id": self.scene_id,
            "edit_type": self.edit_type,
            "edit_category": self.edit_category,
            "base": self.base.to_json(),
            "foil": self.foil.to_json(),
        }
        d.update(self.extra)
        return d


def _side(obj: Any, where: str) -> PairSide:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected an object with 'image' and 'captions', got {type(obj).__name__}")
    image = obj.get("image")
    if not isinstance(image, str) or not image.strip():
        raise DataError(f"{where}: 'image' must be a relative image path")
    caps = obj.get("captions")
    if not isinstance(caps, dict) or not caps:
        raise DataError(f"{where}: 'captions' must be an object with at least one of {list(VERBOSITIES)}")
    bad = [k for k in caps if k not in VERBOSITIES]
    if bad:
        raise DataError(f"{where}: unknown caption level(s) {bad}; use {list(VERBOSITIES)}")
    for k, v in caps.items():
        if not isinstance(v, str) or not v.strip():
            raise DataError(f"{where}: caption {k!r} is missing or empty")
        check_text_size(v, where, f"caption {k!r}")
    return PairSide(image=image, captions={k: caps[k] for k in VERBOSITIES if k in caps})


def pair_from_json(obj: Any, where: str = "pair") -> PairItem:
    """Build and validate one :class:`PairItem`. Raises :class:`DataError` naming the problem."""
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in ("id", "base", "foil") if k not in obj]
    if missing:
        raise DataError(f"{where}: missing field(s) {missing}")
    base, foil = _side(obj["base"], f"{where} base"), _side(obj["foil"], f"{where} foil")
    if not set(base.captions) & set(foil.captions):
        raise DataError(
            f"{where}: base and foil share no caption level (base {sorted(base.captions)}, "
            f"foil {sorted(foil.captions)})"
        )
    same = [
        k for k in base.captions if " ".join(base.captions[k].split()) == " ".join(foil.captions.get(k, "").split())
    ]
    if same:
        raise DataError(
            f"{where}: base and foil have the same {same[0]!r} caption ({base.captions[same[0]][:80]!r}); "
            "a foil must differ from its base (one labelled edit)"
        )
    if os.path.normpath(base.image.strip()) == os.path.normpath(foil.image.strip()):
        raise DataError(
            f"{where}: base and foil name the same image ({base.image[:80]!r}); a foil must differ from "
            "its base (one labelled edit)"
        )
    known = {"id", "scene_id", "edit_type", "edit_category", "base", "foil"}
    return PairItem(
        id=str(obj["id"]),
        scene_id=str(obj.get("scene_id", obj["id"])),
        edit_type=str(obj.get("edit_type") or "unlabelled"),
        edit_category=str(obj.get("edit_category") or "unlabelled"),
        base=base,
        foil=foil,
        extra={k: v for k, v in obj.items() if k not in known},
    )


def _same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` are one file (a link, a hard link) or two regular files with the same bytes."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False  # a missing image is the image loader's message, later
    if (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino):
        return True
    if not (stat.S_ISREG(sa.st_mode) and stat.S_ISREG(sb.st_mode)) or sa.st_size != sb.st_size:
        return False
    from bindlab.data.files import read_bytes_bounded

    try:
        return read_bytes_bounded(a) == read_bytes_bounded(b)
    except DataError:
        return False


def load_pairs(path: str | Path, strict: bool = True) -> tuple[list[PairItem], LoadReport]:
    """Read a Pairs JSONL file (see :func:`bindlab.data.schema.load_records` for the error rules).

    A pair whose base and foil are the same (a caption level with the same text, the same image path, or two image
    files that are one file or hold the same bytes) is a bad line: a 2x2 score of an item against itself is a tie,
    never a measurement.
    """
    folder = Path(path).parent

    def parse(obj: Any, where: str) -> PairItem:
        item = pair_from_json(obj, where)
        check_image_fields(path, where, (item.base.image, item.foil.image))  # inside the folder before any stat
        if _same_file(folder / item.base.image, folder / item.foil.image):
            raise DataError(
                f"{where}: base image {item.base.image[:80]!r} and foil image {item.foil.image[:80]!r} "
                "are the same file or hold the same bytes; a foil must differ from its base (one labelled "
                "edit)"
            )
        return item

    return load_records(path, parse, "pair", strict, images=lambda it: (it.base.image, it.foil.image))
