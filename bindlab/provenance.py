"""Provenance for every result file: what produced it, from which data, with which model and settings."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from bindlab.config import __version__


def provenance(
    dataset: str | Path | None = None,
    encoder: Any = None,
    settings: dict[str, Any] | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """A provenance record: bindlab version, encoder id + fingerprint, dataset path + sha256, seed, settings.

    When ``seed`` is not given and the dataset folder has a ``meta.json`` from a bindlab generator, its seed is used.
    """
    from bindlab.data.schema import file_sha256

    rec: dict[str, Any] = {
        "bindlab_version": __version__,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    if encoder is not None:
        rec["encoder"] = {"id": encoder.id, "fingerprint": encoder.fingerprint}
        if getattr(encoder, "fingerprint_note", None):  # a model adopted in Python: what its fingerprint hashes
            rec["encoder"]["fingerprint_is"] = encoder.fingerprint_note
    if dataset is not None:
        p = Path(dataset)
        rec["dataset"] = {"path": str(p.resolve()), "sha256": file_sha256(p) if p.is_file() else None}
        meta = p.parent / "meta.json"
        if seed is None and meta.exists():
            from bindlab.data.files import DataError, load_json_bounded

            try:
                seed = load_json_bounded(meta, dict, "meta.json").get("seed")
            except DataError:
                pass  # an unreadable meta.json only loses the seed in provenance, never the result
    rec["seed"] = seed
    rec["settings"] = settings or {}
    return rec
