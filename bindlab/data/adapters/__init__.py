"""Adapters for published pairwise binding benchmarks, keyed by the ``"adapter"`` name of a data manifest.

A manifest (``bindlab/data_manifests/<name>.json``) says where a benchmark lives — a local path in its published format
and, when there is one, its hub dataset — plus adapter, license and citation. :func:`load_benchmark` reads it
and returns the items; :mod:`bindlab.eval.benchmarks` scores them with the benchmark's native metric.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from bindlab.config import public_mode
from bindlab.data.adapters import aro, colorswap, sugarcrepe, sugarcrepe_pp, winoground
from bindlab.data.files import DataError, load_json_bounded, resolve_allowed

ADAPTERS: dict[str, ModuleType] = {
    "winoground": winoground,
    "colorswap": colorswap,
    "sugarcrepe": sugarcrepe,
    "sugarcrepe_pp": sugarcrepe_pp,
    "aro_vg_attribution": aro,
}


def manifests_dir() -> Path:
    from bindlab.config import manifests_root

    return manifests_root()


def list_manifests() -> dict[str, dict[str, Any]]:
    """All manifests in ``bindlab/data_manifests/`` by name."""
    return {p.stem: load_json_bounded(p, dict, "manifest") for p in sorted(manifests_dir().glob("*.json"))}


# A manifest's name: its file name in the manifests folder, without ".json" (no path, no "..", no suffix).
_MANIFEST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def manifest_names() -> list[str]:
    """The names of the manifests in the manifests folder (file names only; nothing is read)."""
    return sorted(p.stem for p in manifests_dir().glob("*.json") if _MANIFEST_NAME.fullmatch(p.stem))


def benchmark_refused() -> str:
    """The one message for a benchmark name that is not offered in public mode: it lists the valid names and quotes
    nothing of what was given (which may be a server path)."""
    return (
        f"not a benchmark offered here: give one of the names {', '.join(manifest_names()) or '(none)'} "
        "(a name, not a path)"
    )


def check_benchmark_name(name: str) -> str:
    """In public mode, ``name`` (stripped) when it is the name of a manifest in the manifests folder; locally
    ``name`` unchanged (a manifest may also be given by path there).

    Raises:
        DataError: in public mode, :func:`benchmark_refused` for anything else: a path, ``..``, a ``.json`` file
            name, an unknown name, whether or not such a file exists.
    """
    if not public_mode():
        return name
    text = str(name or "").strip()
    if not _MANIFEST_NAME.fullmatch(text) or text not in manifest_names():
        raise DataError(benchmark_refused())
    return text


def load_manifest(name_or_path: str) -> dict[str, Any]:
    """A manifest by name (``sugarcrepe_pp``) or, outside public mode, path; checks that its adapter exists.

    In public mode only a name of :func:`manifest_names` is taken (:func:`check_benchmark_name`)."""
    if public_mode():
        p = manifests_dir() / f"{check_benchmark_name(name_or_path)}.json"
    else:
        p = Path(name_or_path).expanduser()
        if not (p.suffix == ".json" and p.exists()):
            p = manifests_dir() / f"{name_or_path}.json"
    if not p.exists():
        raise DataError(
            f"unknown benchmark {name_or_path!r}; known: {sorted(list_manifests())} (or give a manifest .json path)"
        )
    m = load_json_bounded(p, dict, "manifest")
    if m.get("adapter") not in ADAPTERS:
        raise DataError(f"manifest {p}: adapter {m.get('adapter')!r} is not one of {sorted(ADAPTERS)}")
    m["_path"] = str(p)
    return m


def local_path(manifest: dict[str, Any], data: str | None = None) -> Path:
    """The local copy: ``data`` if given, else the manifest's ``source.local``, relative to ``$BINDLAB_HOME``
    (``benchmarks/<name>``: where a person puts the published files they downloaded)."""
    from bindlab.config import home

    raw = data or (manifest.get("source") or {}).get("local")
    if not raw:
        raise DataError(f"{manifest['name']}: no local copy configured; pass --data PATH")
    p = Path(raw).expanduser()
    return p if p.is_absolute() or data else (home() / p).resolve()


def _public_local(path: Path) -> Path | None:
    """``path``; in public mode only when it resolves inside the data roots, else None: a manifest's local copy
    outside them counts as absent, so it is never opened, never named and never tested for existence."""
    if not public_mode():
        return path
    try:
        return resolve_allowed(path)
    except DataError:
        return None


@dataclass
class Benchmark:
    """Loaded items of one benchmark and where they came from."""

    name: str
    adapter: str
    kind: str  # "pairs" | "choice"
    items: list[Any]
    source: str
    manifest: dict[str, Any]


def load_benchmark(
    name_or_path: str,
    data: str | None = None,
    split: str | None = None,
    limit: int = 0,
    images: str | None = None,
    source: str = "auto",
) -> Benchmark:
    """Load a benchmark's items.

    Args:
        name_or_path: manifest name or path.
        data: local copy overriding the manifest's path.
        split: split name(s), comma-separated, or None/"all".
        limit: at most this many items (per split for multi-split benchmarks); 0 = all.
        images: image folder override (COCO val2017 for SugarCrepe / SugarCrepe++; VG images for ARO).
        source: ``local``, ``hub`` or ``auto`` (local when it exists, else the hub). Hub files come through
            :func:`bindlab.data.adapters.hub.snapshot`: offline, only what the hub cache already holds.
    """
    if source not in ("auto", "local", "hub"):
        raise ValueError(f"unknown source {source!r}; choose auto, local or hub")
    public = public_mode()
    m = load_manifest(name_or_path)
    mod = ADAPTERS[m["adapter"]]
    hub = (m.get("source") or {}).get("hub")
    if public:  # paths given by the caller: inside the data roots (one message otherwise, naming nothing)
        for given in (data, images):
            if given:
                resolve_allowed(given)
    path = None
    try:
        path = _public_local(local_path(m, data))
    except DataError:
        if source == "local":
            raise
    if path is None and public and source == "local":
        raise DataError(f"{m['name']}: there is no local copy of this benchmark on this server")
    if source == "hub" or (source == "auto" and (path is None or not path.exists()) and not data):
        if not hub or not hasattr(mod, "load_hub"):
            where = f" (looked for {path})" if path and not public else ""
            raise DataError(
                f"{m['name']}: no local copy found{where} and no hub loader for it; download the "
                f"published files ({m.get('url', 'see the manifest')}) and pass --data PATH"
            )
        from bindlab.config import home

        items = mod.load_hub(hub, home() / "hub_images" / m["name"], split, limit, images=images)
        src = f"hub:{hub['dataset']}" + (f"@{hub['revision']}" if hub.get("revision") else "")
    else:
        if not path.exists():
            where = "" if public else f" {path}"
            raise DataError(
                f"{m['name']}: local copy{where} not found; download the published files "
                f"({m.get('url', 'see the manifest')}) there or pass --data PATH"
            )
        if images is None and (m.get("source") or {}).get("images"):
            default = _public_local(local_path({"name": m["name"], "source": {"local": m["source"]["images"]}}))
            images = str(default) if default and default.is_dir() else None  # absent images: text-only use
        items = mod.load_local(path, split=split, limit=limit, images=images)
        src = str(path)
    if not items:
        raise DataError(f"{m['name']}: no items loaded from {src}")
    return Benchmark(m["name"], m["adapter"], mod.KIND, items, src, m)
