"""Which data a visitor may choose, and the files they upload.

In public mode (:func:`bindlab.config.public_mode`) a tab never takes a free server path: it offers the embedded
sets, the sets found under ``$BINDLAB_HOME`` and the allowed data roots (:func:`list_data_sets`), and files the
visitor uploads. An upload is copied into ``$BINDLAB_HOME/uploads/<session>/<fresh folder>/`` (:func:`store_upload`),
which lies inside the allowed roots, so the studies read it through the same checks as any other path; image fields
inside an uploaded file resolve relative to its own folder, so they can only name files uploaded with it. A session's
uploads are deleted when it ends (:func:`delete_uploads`) and old ones are swept by age (:func:`sweep_uploads`).

The page never sees a server path: a data dropdown's choices carry opaque values (``""``, ``"set:<label>"``,
``"upload:<token>"``, :func:`offered_choices`), and :func:`resolve_choice` turns one back into a path on the server,
inside the callback, for the session that sent it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindlab.config import data_roots, home, limits, private_home_paths, public_mode, served_roots
from bindlab.config import uploads_root as config_uploads_root
from bindlab.data.files import open_image, resolve_allowed

# kind -> (what it is, file names that make a set of that kind; "/" marks a folder holding that file)
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "mcq": ("MCQ JSONL file", ("mcq.jsonl",)),
    "pairs": ("pairs JSONL file", ("pairs.jsonl",)),
    "captions": ("MCQ, triplets or captions JSONL file", ("mcq.jsonl", "triplets.jsonl", "captions.jsonl")),
    "grid": ("factor grid folder (index.csv and its images)", ("/index.csv",)),
    "triplets": ("triplets folder (triplets.jsonl)", ("/triplets.jsonl",)),
}
# Upload file types per kind (what the upload widget accepts).
UPLOAD_TYPES: dict[str, list[str]] = {
    "mcq": [".jsonl", ".json", ".zip"],
    "pairs": [".jsonl", ".json", ".zip"],
    "captions": [".jsonl", ".json", ".zip"],
    "grid": [".csv", ".png", ".jpg", ".jpeg", ".zip"],
    "triplets": [".jsonl", ".json", ".zip"],
}
# A .zip upload carries a data file with its images (an image MCQ set, a Pairs set, a grid). It may unpack to at
# most ZIP_EXPANSION x max_upload_mb and hold at most ZIP_MAX_MEMBERS entries; both are checked before anything is
# written, and again while writing (the sizes in a zip's directory are the sender's word).
ZIP_EXPANSION = 4
ZIP_MAX_MEMBERS = 20_000
_ZIP_JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db")  # what archivers add; skipped, not refused
_DATA_MARK = ".bindlab-data"  # in a zip upload's folder: the name of its data file
# Folders under $BINDLAB_HOME that hold no data sets a visitor should see.
_SKIP = {"jobs", "exports", "uploads", "cache", "compare", "maps", ".git", "__pycache__", "node_modules"}
MAX_DEPTH = 4  # how deep under a root the listing looks
MAX_SETS = 50  # at most this many sets are offered per kind
NO_SESSION = "no-session"


def _check_kind(kind: str) -> tuple[str, tuple[str, ...]]:
    if kind not in KINDS:
        raise ValueError(f"unknown data kind {kind!r}; choose one of {', '.join(KINDS)}")
    return KINDS[kind]


def is_folder_kind(kind: str) -> bool:
    """True when a set of this kind is a folder (a factor grid, a triplets folder), not one file."""
    return _check_kind(kind)[1][0].startswith("/")


def _walk(root: Path, names: tuple[str, ...], out: list[Path]) -> None:
    """Depth-limited search of ``root`` for files named in ``names`` (no symlinked folders, skipped names)."""
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack and len(out) < MAX_SETS:
        folder, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False) and depth < MAX_DEPTH and e.name not in _SKIP:
                stack.append((Path(e.path), depth + 1))
            elif e.is_file(follow_symlinks=False) and e.name in names:
                out.append(Path(e.path))


# kind of picker -> kinds of datasets folder (bindlab/export.json) it offers
DATASET_KINDS: dict[str, tuple[str, ...]] = {
    "mcq": ("mcq",),
    "pairs": ("pairs",),
    "captions": ("mcq", "triplets"),
    "grid": ("grid",),
    "triplets": ("triplets",),
}


def _dataset_kind(export_json: Path) -> str | None:
    """The kind a datasets folder's ``bindlab/export.json`` names (None when unreadable)."""
    from bindlab.data.files import DataError, load_json_bounded

    try:
        return str(load_json_bounded(export_json, dict, "export.json").get("kind"))
    except DataError:
        return None


def list_data_sets(kind: str) -> list[tuple[str, str]]:
    """The sets of ``kind`` a visitor may choose: ``(label, path)`` pairs, the embedded default first as
    ``("embedded default", "")``. Sets are looked for under every allowed data root except the current folder in
    local mode (a checkout can be large); labels are paths relative to their root."""
    _, names = _check_kind(kind)
    folder = names[0].startswith("/")
    wanted = (*(n.lstrip("/") for n in names), "export.json")  # export.json: a datasets folder (below)
    found: list[Path] = []
    cwd = Path(os.path.realpath(Path.cwd()))
    for root in data_roots():
        if root == cwd and not public_mode():
            continue
        if root.is_dir():
            _walk(root, wanted, found)
    sets: list[tuple[str, str]] = [("embedded default", "")]
    seen: set[str] = set()
    labels: set[str] = set()
    materialised = home() / "datasets"  # copies of datasets folders, read through the folders themselves
    for f in found:
        if f.name == "export.json":
            if f.parent.name != "bindlab" or _dataset_kind(f) not in DATASET_KINDS[kind]:
                continue
            target = f.parent.parent  # a Hugging Face datasets folder written by bindlab export-dataset
        else:
            target = f.parent if folder else f
        if materialised in target.parents or str(target) in seen:
            continue
        seen.add(str(target))
        root = next((r for r in data_roots() if r == target or r in target.parents), target.parent)
        label = base = f"{root.name}/{target.relative_to(root)}" if target != root else root.name
        n = 1
        while label in labels:  # two roots of one name: the label stays unique, as it names the set's choice value
            n += 1
            label = f"{base} ({n})"
        labels.add(label)
        sets.append((label, str(target)))
    return sets


# --- what the page sees: opaque choice values, never a server path ------------------------------------------------
# In public mode a data dropdown's choices carry "" (the embedded default), "set:<label>" (a set of list_data_sets,
# by its label) and "upload:<token>" (one of the session's uploads, by the name of its upload folder). Only
# resolve_choice, on the server, turns such a value back into a path; the page config never holds one.
SET_PREFIX = "set:"
UPLOAD_PREFIX = "upload:"
NOT_OFFERED = "that data set is not one offered here: choose one from the list, or upload a file"


def set_choices(kind: str) -> list[tuple[str, str]]:
    """The sets of ``kind`` offered to everyone as ``(label, value)`` choices: ``("embedded default", "")`` first,
    then ``(label, "set:<label>")`` per set of :func:`list_data_sets`."""
    return [(label, f"{SET_PREFIX}{label}" if path else "") for label, path in list_data_sets(kind)]


def offered_choices(kind: str, session: str | None) -> list[tuple[str, str]]:
    """What a data dropdown offers one session now: :func:`set_choices` (listed afresh, so sets written under
    ``$BINDLAB_HOME`` after the app started appear) and ``(label, "upload:<token>")`` per set of ``kind`` this
    session uploaded and still has."""
    return [*set_choices(kind), *((label, f"{UPLOAD_PREFIX}{token}") for label, token, _ in _uploads(kind, session))]


def is_offered(kind: str, value: str) -> bool:
    """True when ``value`` is the choice value of one of the sets offered to everyone now (:func:`set_choices`; the
    listing is made afresh, so a set written under ``$BINDLAB_HOME`` after the app started counts). A session's
    uploads are not: only that session's own choices hold them."""
    return any(v == value for _, v in set_choices(kind))


def _inside_roots(path: str) -> str:
    try:
        return str(resolve_allowed(path))
    except ValueError:
        raise ValueError(NOT_OFFERED) from None


def resolve_choice(value: str, session: str | None, kind: str | None = None) -> str:
    """The server path a data choice value stands for; only ever called on the server, inside a callback.

    Args:
        value: ``""`` (the embedded default), ``"set:<label>"`` or ``"upload:<token>"`` (see :func:`offered_choices`).
            Outside public mode any other value is a path the user typed and comes back unchanged (the studies
            check it against the allowed roots as before).
        session: the browser session hash; an ``upload:`` value resolves only among this session's uploads.
        kind: the data kind of the input (a key of :data:`KINDS`); ``None`` looks through every kind.

    Returns:
        ``""`` for the embedded default, else the realpath of the set, inside the allowed data roots.

    Raises:
        ValueError: :data:`NOT_OFFERED`, the same words for every value that is not offered to this session now
            (unknown, gone, another session's upload, a path in public mode); it quotes neither value nor path.
    """
    if not isinstance(value, str):
        raise ValueError(NOT_OFFERED)
    if value == "":
        return ""
    kinds = [kind] if kind is not None else list(KINDS)
    for k in kinds:
        if value.startswith(SET_PREFIX):
            path = next((p for label, p in list_data_sets(k) if p and f"{SET_PREFIX}{label}" == value), None)
        elif value.startswith(UPLOAD_PREFIX):
            path = next((str(t) for _, token, t in _uploads(k, session) if f"{UPLOAD_PREFIX}{token}" == value), None)
        else:
            path = None if public_mode() else value
        if path:
            return _inside_roots(path) if public_mode() else path
    raise ValueError(NOT_OFFERED)


def choice_value(kind: str, path: str | os.PathLike, session: str | None) -> str | None:
    """The choice value (:func:`offered_choices`) that stands for the server path ``path`` for this session:
    ``""`` for an empty path, ``"set:<label>"``, ``"upload:<token>"``, or ``None`` when no offered set is that
    path. The inverse of :func:`resolve_choice`, for a callback that hands a path it used to another tab."""
    raw = os.fspath(path)
    if not raw:
        return ""
    real = os.path.realpath(raw)
    for label, p in list_data_sets(kind):
        if p and os.path.realpath(p) == real:
            return f"{SET_PREFIX}{label}"
    for _, token, t in _uploads(kind, session):
        if os.path.realpath(t) == real:
            return f"{UPLOAD_PREFIX}{token}"
    return None


# --- images on the page ---------------------------------------------------------------------------------------------
def _served(real: Path) -> bool:
    inside = any(real == r or r in real.parents for r in served_roots())
    return inside and not any(real == b or b in real.parents for b in private_home_paths())


def shown_image(path: str | os.PathLike | None) -> str | None:
    """What an image component should get for an image file bindlab read: the path itself when the web server may
    send it (:func:`bindlab.config.served_roots`, which the app hands Gradio as ``allowed_paths``), else a decoded
    copy (:func:`shown_copy`: a person's own data folder, locally; a set under a public data root). ``None`` or
    ``""`` gives ``None``."""
    if not path:
        return None
    real = Path(os.path.realpath(path))
    return str(path) if _served(real) else shown_copy(real)


SHOWN_MAX_AGE_S = 3600.0  # a decoded copy older than this is swept (Gradio copied it into its cache long before)
_shown: dict[str, Any] = {"dir": None, "swept": 0.0}


def _shown_dir() -> Path:
    """This process's folder of decoded copies, under the system temp folder (which Gradio may copy from), removed
    when the process ends."""
    if _shown["dir"] is None or not _shown["dir"].is_dir():
        import atexit

        d = Path(tempfile.mkdtemp(prefix="bindlab-shown-"))
        atexit.register(shutil.rmtree, d, True)
        _shown["dir"] = d
    return _shown["dir"]


def shown_copy(path: str | os.PathLike) -> str:
    """A PNG copy of an image file that the web server may not send itself, decoded through the one capped loader
    (a FIFO never blocks, a bomb is never decoded) and written once, atomically, under this process's temp folder;
    the copy's path.

    Why not hand the decoded image to Gradio: Gradio writes a returned image to a content-named file in place, so the
    same picture returned again (a slider redraw, a question shown twice) truncated the file while the browser was
    still being sent the first copy ("Too little data for declared Content-Length"). A copy here is named by the
    source's path, size and modification time, written under a temporary name and renamed into place, and never
    rewritten: Gradio's own copy of a path is atomic too.

    Raises:
        DataError: naming the file and what is wrong.
    """
    import hashlib

    real = Path(os.path.realpath(path))
    try:
        st = real.stat()
        key = f"{real}\0{st.st_size}\0{st.st_mtime_ns}"
    except OSError:
        key = str(real)  # open_image below says what is wrong
    folder = _shown_dir()
    out = folder / (hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:40] + ".png")
    if out.is_file():
        try:
            os.utime(out)  # handed out again: the sweep ages copies from their last use
        except OSError:
            pass
        return str(out)
    with open_image(real) as im:
        shown = im if im.mode in ("1", "L", "LA", "I", "P", "RGB", "RGBA") else im.convert("RGB")
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".part-", suffix=".png")
        try:
            with os.fdopen(fd, "wb") as f:
                shown.save(f, format="PNG")
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    _sweep_shown(folder)
    return str(out)


def _sweep_shown(folder: Path, now: float | None = None) -> None:
    now = time.time() if now is None else now
    if now - _shown["swept"] < 60:
        return
    _shown["swept"] = now
    for f in folder.iterdir():
        try:
            if now - f.stat().st_mtime > SHOWN_MAX_AGE_S:
                f.unlink()
        except OSError:
            pass


# --- uploads -------------------------------------------------------------------------------------------------------
def uploads_root() -> Path:
    """``$BINDLAB_HOME/uploads``: one folder per browser session (:func:`bindlab.config.uploads_root`)."""
    return config_uploads_root()


def session_uploads(session: str | None) -> Path:
    """The upload folder of one browser session (its hash, made safe as a folder name)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(session or ""))[:64] or NO_SESSION
    return uploads_root() / name


# A session's upload folder names the server process that made it, so a server starting up can delete what a server
# that is gone left (its sessions ended with it) without touching the folders of another server sharing the home.
SERVER_MARK = ".server"


def _start_ticks(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, /proc/<pid>/stat field 22); "" where unreadable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[-1].split()[19]  # after "pid (comm)": state is field 3, starttime field 22


def this_server() -> str:
    """This process as a server mark: ``"<pid> <start ticks>"`` (a reused pid has other start ticks)."""
    return f"{os.getpid()} {_start_ticks(os.getpid())}"


def server_alive(mark: str) -> bool:
    """True while the process a :func:`this_server` mark names still runs (a mark that cannot be read: False)."""
    pid_text, _, ticks = mark.strip().partition(" ")
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # another user's process: it runs
        pass
    return not ticks or _start_ticks(pid) in ("", ticks)


def session_upload_folder(session: str | None) -> Path:
    """:func:`session_uploads`, made, and marked with this server (:data:`SERVER_MARK`) on first use."""
    parent = session_uploads(session)
    parent.mkdir(parents=True, exist_ok=True)
    mark = parent / SERVER_MARK
    if not mark.is_file():
        mark.write_text(this_server())
    return parent


def sweep_orphan_uploads() -> int:
    """Delete the upload folders whose server is gone (run at start-up): a session ends with its server, so what it
    uploaded has no owner. Folders of a live server (another app on the same home) and unmarked ones (the age sweep
    takes those) stay. Returns how many went."""
    root = uploads_root()
    if not root.is_dir():
        return 0
    removed = 0
    for folder in root.iterdir():
        mark = folder / SERVER_MARK
        if folder.is_symlink() or not folder.is_dir() or not mark.is_file():
            continue
        try:
            alive = server_alive(mark.read_text()[:64])
        except OSError:
            continue
        if not alive:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def _safe_name(name: str) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]", "_", Path(name).name).lstrip(".")[:100]
    return base or "upload"


def check_upload_size(path: str | os.PathLike) -> Path:
    """An uploaded file, present, regular and within ``limits().max_upload_mb``.

    Raises:
        ValueError: no file, a missing or non-regular file, or one over the limit (the message gives both sizes).
    """
    if not path:
        raise ValueError("no file uploaded; choose a file first")
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"uploaded file {p.name} is missing on the server; upload it again")
    mb = limits().max_upload_mb
    size = p.stat().st_size
    if size > mb * 1024 * 1024:
        raise ValueError(f"{p.name} is {size / 2**20:.1f} MiB; uploads are limited to {mb} MiB (BINDLAB_MAX_UPLOAD_MB)")
    return p


def store_upload(files: str | os.PathLike | Sequence[str | os.PathLike], kind: str, session: str | None) -> Path:
    """Copy uploaded files into a fresh folder of the session's upload folder.

    Args:
        files: one file (a file kind) or several (a folder kind: e.g. ``index.csv`` and its images).
        kind: a key of :data:`KINDS`.
        session: the browser session hash (its folder is deleted when the session ends).

    Returns:
        The stored file (a file kind) or the folder holding the files (a folder kind).

    Raises:
        ValueError: no file, a file over the size limit, several files for a file kind, or a folder kind without
            the file that makes the set (``index.csv``, ``triplets.jsonl``).
    """
    what, names = _check_kind(kind)
    paths = [files] if isinstance(files, (str, os.PathLike)) else list(files or [])
    paths = [check_upload_size(p) for p in paths if p]
    if not paths:
        raise ValueError(f"no file uploaded; choose a {what}")
    folder_kind = names[0].startswith("/")
    if any(p.suffix.lower() == ".zip" for p in paths):
        if len(paths) > 1:
            raise ValueError(f"upload one .zip on its own (it holds the {what} and its images), got {len(paths)} files")
        return _store_zip(paths[0], kind, session)
    if not folder_kind and len(paths) > 1:
        raise ValueError(f"upload one {what}, got {len(paths)} files")
    if folder_kind and names[0][1:] not in {_safe_name(p.name) for p in paths}:
        raise ValueError(f"a {what} needs a file named {names[0][1:]} among the uploaded files")
    parent = session_upload_folder(session)
    dest = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=parent))  # the kind in the name: list_uploads filters by it
    for p in paths:
        shutil.copyfile(p, dest / _safe_name(p.name))
    return dest if folder_kind else dest / _safe_name(paths[0].name)


def _store_zip(archive: Path, kind: str, session: str | None) -> Path:
    """Unpack an uploaded zip into a fresh folder of the session's uploads; return its data file (a file kind) or
    the folder (a folder kind). Nothing is kept when the zip is refused."""
    what, names = _check_kind(kind)
    parent = session_upload_folder(session)
    dest = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=parent))
    try:
        unzip_bounded(archive, dest)
        top = sorted(f.name for f in dest.iterdir() if f.is_file() and not f.name.startswith("."))
        if names[0].startswith("/"):
            if names[0][1:] not in top:
                raise ValueError(
                    f"{archive.name}: a {what} needs {names[0][1:]} at the top of the zip (or of its one "
                    f"folder); it has {', '.join(top[:5]) or 'no files there'}"
                )
            return dest
        wanted = [n for n in names if n in top] or [n for n in top if n.endswith(".jsonl")]
        if len(wanted) != 1:
            raise ValueError(
                f"{archive.name}: put one {what} ({' or '.join(names)}) at the top of the zip, with its "
                f"images beside it; found {len(wanted)} JSONL files there"
            )
        name = _safe_name(wanted[0])  # named as a single-file upload is: it shows in the page's list
        if name != wanted[0]:
            (dest / wanted[0]).rename(dest / name)
        (dest / _DATA_MARK).write_text(name)
        return dest / name
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def _member_parts(name: str, archive: str) -> list[str] | None:
    """The path of one zip entry as safe parts, None for archiver junk; a path that climbs out, is absolute or
    names a hidden file is refused."""
    if any(name.startswith(j) or name.endswith("/" + j) or name == j for j in _ZIP_JUNK):
        return None
    if "\\" in name or "\x00" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ValueError(f"{archive}: entry {name[:80]!r} has an absolute or Windows path; zip paths must be relative")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise ValueError(f"{archive}: entry {name[:80]!r} climbs out of the zip's folder ('..'); refused")
    if any(p.startswith(".") or len(p.encode()) > 255 or any(ord(c) < 32 for c in p) for p in parts):
        raise ValueError(f"{archive}: entry {name[:80]!r} is hidden or has an unusable name; refused")
    return parts


def unzip_bounded(archive: str | os.PathLike, dest: str | os.PathLike) -> int:
    """Unpack ``archive`` into the empty folder ``dest``, refusing what an upload must not carry: symlinks, paths
    that climb out or are absolute, more than :data:`ZIP_MAX_MEMBERS` entries, more than :data:`ZIP_EXPANSION` x
    ``max_upload_mb`` unpacked (checked from the directory first, then byte by byte while writing), a corrupt entry.
    A zip whose every entry sits in one folder is unpacked from inside that folder. Returns the files written.

    Raises:
        ValueError: naming the archive, the entry and what is wrong.
    """
    import stat
    import zipfile

    src, dest = Path(archive), Path(dest)
    cap = ZIP_EXPANSION * limits().max_upload_mb * (1 << 20)
    try:
        zf = zipfile.ZipFile(src)
    except (zipfile.BadZipFile, OSError):
        raise ValueError(f"{src.name} is not a readable zip file; make one with 'zip -r set.zip DIR'") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > ZIP_MAX_MEMBERS:
            raise ValueError(f"{src.name} holds {len(infos)} entries; an upload takes at most {ZIP_MAX_MEMBERS}")
        members = []
        for info in infos:
            if stat.S_ISLNK(info.external_attr >> 16):
                raise ValueError(f"{src.name}: entry {info.filename[:80]!r} is a symbolic link; refused")
            parts = _member_parts(info.filename, src.name)
            if parts and not info.is_dir():
                members.append((info, parts))
        if not members:
            raise ValueError(f"{src.name} holds no files")
        declared = sum(i.file_size for i, _ in members)
        if declared > cap:
            raise ValueError(
                f"{src.name} unpacks to {declared / 2**20:.0f} MiB; an upload may unpack to at most "
                f"{cap >> 20} MiB ({ZIP_EXPANSION} x BINDLAB_MAX_UPLOAD_MB)"
            )
        tops = {parts[0] for _, parts in members}
        strip = 1 if len(tops) == 1 and all(len(parts) > 1 for _, parts in members) else 0
        written = 0
        for info, parts in members:
            target = dest.joinpath(*parts[strip:])
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(info) as fin, open(target, "xb") as fout:
                    while chunk := fin.read(1 << 20):
                        written += len(chunk)
                        if written > cap:
                            raise ValueError(
                                f"{src.name} unpacks to more than {cap >> 20} MiB (its directory said less); refused"
                            )
                        fout.write(chunk)
            except FileExistsError:
                raise ValueError(f"{src.name}: entry {info.filename[:80]!r} appears twice") from None
            except (zipfile.BadZipFile, EOFError, OSError, RuntimeError, NotImplementedError) as e:
                raise ValueError(
                    f"{src.name}: entry {info.filename[:80]!r} cannot be unpacked "
                    f"({type(e).__name__}); make the zip again"
                ) from None
    return len(members)


def upload_label(stored: Path) -> str:
    """How an uploaded set reads in the data dropdown: its file name (a folder kind: the names of its files; a zip
    upload: the data file and how many images came with it)."""
    folder = stored if stored.is_dir() else stored.parent
    if (folder / _DATA_MARK).is_file() or any(p.is_dir() for p in folder.iterdir()):
        images = sum(1 for p in folder.rglob("*") if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
        return f"uploaded: {stored.name}" + (f" + {images} images" if images else "")
    names = sorted(p.name for p in stored.iterdir()) if stored.is_dir() else [stored.name]
    return f"uploaded: {', '.join(names)[:80]}"


def _uploads(kind: str, session: str | None) -> list[tuple[str, str, Path]]:
    """``(label, token, stored set)`` per set of ``kind`` this session uploaded and still has, oldest first; the
    token is the name of the set's upload folder (``<kind>-<random>``, made by :func:`store_upload`)."""
    _, names = _check_kind(kind)
    folder = session_uploads(session)
    if not folder.is_dir() or folder.is_symlink():
        return []
    wanted = {n.lstrip("/") for n in names}
    out: list[tuple[float, str, str, Path]] = []
    for entry in folder.iterdir():  # one fresh folder per upload (store_upload)
        if not entry.is_dir() or entry.is_symlink() or not entry.name.startswith(f"{kind}-"):
            continue
        files = [f for f in entry.iterdir() if f.is_file() and not f.is_symlink() and f.name != _DATA_MARK]
        mark = entry / _DATA_MARK
        if names[0].startswith("/"):
            targets = [entry] if any(f.name in wanted for f in files) else []
        elif mark.is_file() and not mark.is_symlink():  # a zip upload: its data file, named when it was stored
            chosen = mark.read_text()[:255]
            targets = [f for f in files if f.name == chosen]
        else:
            targets = files[:1] if len(files) == 1 else []
        out += [(entry.stat().st_mtime, upload_label(t), entry.name, t) for t in targets]
    return [(label, token, t) for _, label, token, t in sorted(out)]


def list_uploads(kind: str, session: str | None) -> list[tuple[str, str]]:
    """The sets of ``kind`` this session uploaded and still has: ``(label, path)`` pairs, oldest first."""
    return [(label, str(t)) for label, _, t in _uploads(kind, session)]


def is_upload(path: str | os.PathLike) -> bool:
    """True when ``path`` lies in some session's upload folder."""
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(uploads_root()))
    return root in real.parents


def delete_uploads(session: str | None) -> bool:
    """Delete one session's uploads; True when there were some."""
    folder = session_uploads(session)
    if not folder.is_dir():
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def sweep_uploads(older_than_s: float, now: float | None = None) -> int:
    """Delete upload folders last changed more than ``older_than_s`` ago; returns how many went."""
    root = uploads_root()
    if not root.is_dir():
        return 0
    cutoff = (time.time() if now is None else now) - older_than_s
    removed = 0
    for session in root.iterdir():
        if not session.is_dir() or session.is_symlink():
            continue
        for entry in session.iterdir():
            try:
                if entry.lstat().st_mtime < cutoff:
                    shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
                    removed += 1
            except OSError:
                continue
        try:
            if not any(session.iterdir()):
                session.rmdir()
        except OSError:
            pass
    return removed


__all__ = [
    "KINDS",
    "NOT_OFFERED",
    "SET_PREFIX",
    "UPLOAD_PREFIX",
    "UPLOAD_TYPES",
    "check_upload_size",
    "choice_value",
    "delete_uploads",
    "is_folder_kind",
    "is_offered",
    "is_upload",
    "list_data_sets",
    "list_uploads",
    "offered_choices",
    "resolve_choice",
    "session_upload_folder",
    "session_uploads",
    "sweep_orphan_uploads",
    "set_choices",
    "shown_copy",
    "shown_image",
    "store_upload",
    "sweep_uploads",
    "upload_label",
    "uploads_root",
]
