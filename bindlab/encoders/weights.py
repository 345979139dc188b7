"""Weight files: fingerprints that change when weights change, and clear messages when loading fails."""

from __future__ import annotations

import json
import os
from pathlib import Path

from bindlab.config import home, hub_offline
from bindlab.encoders.base import EncoderError, hash_files

WEIGHT_SUFFIXES = (".safetensors",)


def fingerprint_for_folder(folder: str | Path) -> str:
    """Short hash of a folder's safetensors weights and configs, memoised by (path, size, mtime) on disk."""
    folder = Path(folder)
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and (p.suffix in WEIGHT_SUFFIXES or p.name == "config.json")
    )
    if not files:
        raise EncoderError(f"{folder}: no .safetensors weights found (bindlab loads safetensors only)")
    stamp = "|".join(f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)
    memo_path = home() / "fingerprints.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, json.JSONDecodeError):
        memo = {}
    if stamp in memo:
        return memo[stamp]
    digest = hash_files([str(p) for p in files])
    memo[stamp] = digest
    tmp = memo_path.with_name(f"fingerprints.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(memo))
        tmp.replace(memo_path)
    except OSError:
        pass  # the memo is only a speed-up
    return digest


def hub_commit(repo: str, revision: str | None, filename: str = "config.json") -> str | None:
    """The commit of ``repo`` at ``revision`` that the local hub cache resolved ``filename`` to, or None.

    ``snapshots/<commit>/<filename>``: the cache's own record of which commit a load used, so a fingerprint
    changes when the weights behind ``main`` change.
    """
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    hit = try_to_load_from_cache(repo, filename, revision=revision)
    if not isinstance(hit, str):
        return None
    snap = Path(hit).parent
    while snap.parent.name != "snapshots" and snap != snap.parent:  # files in sub-folders of the snapshot
        snap = snap.parent
    return snap.name if snap.parent.name == "snapshots" else None


def hub_load_error(encoder_id: str, source: str, exc: Exception) -> EncoderError:
    """One clear sentence for a failed load: which id, what was tried, what to do."""
    if Path(source).exists():
        return EncoderError(f"{encoder_id}: could not load the local folder {source} ({type(exc).__name__}: {exc})")
    if hub_offline():
        return EncoderError(
            f"{encoder_id}: the Hugging Face hub is unreachable (offline), so {source!r} could not be downloaded; "
            "use a local folder (e.g. hf:/path/to/model), a bundled model (minilm, bow, toy:clip) or connect to the hub"
        )
    return EncoderError(
        f"{encoder_id}: could not load {source!r} from the hub ({type(exc).__name__}: {exc}); check the id and revision"
    )
