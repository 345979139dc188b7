"""Hub copies of the published benchmarks: one function fetches a dataset repo's files, small readers parse them.

Every hub loader goes through :func:`snapshot`, which calls ``huggingface_hub.snapshot_download`` (files land in
the standard hub cache, ``$HF_HUB_CACHE`` or ``~/.cache/huggingface/hub``). Offline (``HF_HUB_OFFLINE=1`` or no
route to the hub) it only looks in that cache, so a dataset downloaded once keeps working without a network;
anything else is a :class:`~bindlab.data.schema.DataError` that says the hub is unreachable and how to use a
local copy instead. Readers turn the repo's files (parquet with image-bytes columns, JSON, JSONL, zip) into rows.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import json
import os
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bindlab.data.schema import DataError

PARQUET_BRANCH = "refs/convert/parquet"  # the hub's automatic parquet export of every public dataset viewer


def _local_hint(name: str) -> str:
    return (
        f"use a local copy instead: download the published files (see bindlab/data_manifests/{name}.json) and pass "
        "--data PATH, or run once where the hub is reachable so the hub cache holds them"
    )


def snapshot(
    hub: dict[str, Any],
    patterns: Sequence[str],
    name: str,
    repo: str | None = None,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
) -> Path:
    """The local folder of a hub dataset repo's files matching ``patterns`` (downloaded on first use).

    Args:
        hub: the manifest's ``source.hub`` (``dataset``, optional ``revision``).
        patterns: glob patterns of the repo files to fetch (``*`` also matches ``/``).
        name: benchmark name, for messages.
        repo: repo id overriding ``hub["dataset"]`` (SugarCrepe has one repo per split).
        revision: overriding ``hub.get("revision")``.
        cache_dir: hub cache folder; default ``$HF_HUB_CACHE`` (read now, not at import) or the library default.

    Raises:
        DataError: hub unreachable and nothing cached, gated/missing repo, unknown revision.
    """
    from huggingface_hub import errors, snapshot_download

    from bindlab.config import hub_offline

    repo = repo or hub["dataset"]
    revision = revision or hub.get("revision") or None
    cache_dir = cache_dir or os.environ.get("HF_HUB_CACHE") or None
    offline = hub_offline()
    at = f"{repo}" + (f" (revision {revision})" if revision else "")
    try:
        path = snapshot_download(
            repo,
            repo_type="dataset",
            revision=revision,
            allow_patterns=list(patterns),
            cache_dir=cache_dir,
            local_files_only=offline,
        )
    except errors.GatedRepoError:
        raise DataError(
            f"{name}: the hub dataset {repo} is gated; accept its conditions at "
            f"https://huggingface.co/datasets/{repo} and log in (hf auth login, or set HF_TOKEN); "
            f"or {_local_hint(name)}"
        ) from None
    except errors.RepositoryNotFoundError:
        raise DataError(
            f"{name}: hub dataset {repo} not found (or private without a token); {_local_hint(name)}"
        ) from None
    except errors.RevisionNotFoundError:
        raise DataError(
            f"{name}: revision {revision!r} of hub dataset {repo} does not exist; fix "
            f"source.hub.revision in bindlab/data_manifests/{name}.json"
        ) from None
    except (errors.LocalEntryNotFoundError, errors.IncompleteSnapshotError):
        why = (
            "the Hugging Face hub is unreachable (or HF_HUB_OFFLINE is set)"
            if offline
            else "the Hugging Face hub could not be reached"
        )
        raise DataError(f"{name}: {why} and {at} is not in the local hub cache; {_local_hint(name)}") from None
    except (OSError, errors.HfHubHTTPError) as e:
        raise DataError(
            f"{name}: could not download {at} from the hub ({type(e).__name__}: {e}); {_local_hint(name)}"
        ) from None
    return Path(path)


def matching(root: Path, patterns: Sequence[str]) -> list[Path]:
    """Files under ``root`` whose repo-relative path matches one of ``patterns``, sorted."""
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not rel.startswith(".") and any(fnmatch.fnmatch(rel, pat) for pat in patterns):
            out.append(p)
    return out


def hub_files(
    hub: dict[str, Any],
    patterns: Sequence[str],
    name: str,
    repo: str | None = None,
    cache_dir: str | Path | None = None,
    parquet_fallback: bool = False,
) -> tuple[Path, list[Path]]:
    """(snapshot folder, files matching ``patterns``). With ``parquet_fallback``, when the repo's main branch
    has none of them and no revision is pinned, the hub's automatic parquet export (``refs/convert/parquet``,
    ``<config>/<split>/0000.parquet``) is tried instead."""
    root = snapshot(hub, patterns, name, repo=repo, cache_dir=cache_dir)
    files = matching(root, patterns)
    if not files and parquet_fallback and not hub.get("revision"):
        root = snapshot(hub, ["*.parquet"], name, repo=repo, revision=PARQUET_BRANCH, cache_dir=cache_dir)
        files = matching(root, ["*.parquet"])
    if not files:
        raise DataError(
            f"{name}: hub dataset {repo or hub['dataset']} has no files matching {list(patterns)}; "
            f"check source.hub in bindlab/data_manifests/{name}.json"
        )
    return root, files


# ------------------------------------------------------------------------------------------------- readers
def parquet_rows(files: Sequence[Path], limit: int = 0, where: str = "") -> Iterator[dict[str, Any]]:
    """Rows of parquet files as dicts, in file order, reading batch by batch (stops after ``limit`` rows).

    Image columns written by ``datasets`` come back as ``{"bytes": ..., "path": ...}`` dicts.
    """
    import pyarrow.parquet as pq

    n = 0
    for f in files:
        try:
            pf = pq.ParquetFile(f)
        except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
            raise DataError(f"{where or f}: {f} is not a readable parquet file ({type(e).__name__}: {e})") from None
        for batch in pf.iter_batches(batch_size=256):
            for row in batch.to_pylist():
                yield row
                n += 1
                if limit and n >= limit:
                    return


def hf_features(file: Path) -> dict[str, Any]:
    """The ``datasets`` feature spec stored in a parquet file's schema metadata ({} when absent)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(file).metadata or {}
    raw = meta.get(b"huggingface")
    if not raw:
        return {}
    try:
        return json.loads(raw).get("info", {}).get("features", {}) or {}
    except (json.JSONDecodeError, AttributeError):
        return {}


def save_image(value: Any, folder: Path, stem: str, where: str) -> str:
    """An image cell as a file path. A ``{"bytes", "path"}`` dict (how ``datasets`` stores images in parquet) is
    written once under ``folder`` as ``<stem>-<content hash><ext>``, so a re-run reuses it and a changed dataset
    never reads a stale file; a dict without bytes, or a plain string, is returned as its path.

    Raises:
        DataError: the cell is neither a path nor image bytes.
    """
    if isinstance(value, str) and value:
        return value
    if not isinstance(value, dict) or not (value.get("bytes") or value.get("path")):
        raise DataError(f"{where}: image cell must hold image bytes or a path, got {type(value).__name__}")
    data, stored = value.get("bytes"), value.get("path")
    if not data:
        return str(stored)
    suffix = Path(stored).suffix.lower() if stored else ""
    if suffix not in (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif"):
        suffix = _sniff_suffix(data, where)
    p = folder / f"{stem}-{hashlib.sha256(data).hexdigest()[:12]}{suffix}"
    if not p.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + f".{os.getpid()}.part")
        tmp.write_bytes(data)
        tmp.replace(p)
    return str(p)


def _sniff_suffix(data: bytes, where: str) -> str:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            fmt = (im.format or "png").lower()
    except (UnidentifiedImageError, OSError):
        raise DataError(f"{where}: image bytes are not a readable image") from None
    return {"jpeg": ".jpg"}.get(fmt, f".{fmt}")


def extract_zip(archive: Path, dest: Path, where: str) -> Path:
    """Unpack ``archive`` into ``dest`` once (a marker file records it); refuses members outside ``dest``."""
    marker = dest / f".extracted-{archive.name}-{archive.stat().st_size}"
    if marker.exists():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(archive) as z:
            root = dest.resolve()
            for member in z.namelist():
                if not (root / member).resolve().is_relative_to(root):
                    raise DataError(f"{where}: {archive} has a member outside its folder ({member!r}); not extracted")
            z.extractall(dest)
    except zipfile.BadZipFile:
        raise DataError(f"{where}: {archive} is not a valid zip archive") from None
    marker.write_text("ok")
    return dest


def cache_folder(name: str, source: Path) -> Path:
    """Where images unpacked from ``source`` (a parquet file or an archive) are kept:
    ``$BINDLAB_HOME/hub_images/<name>/<hash of the source path, size and mtime>``."""
    from bindlab.config import home

    st = source.stat()
    key = hashlib.sha256(f"{source.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return home() / "hub_images" / name / key
