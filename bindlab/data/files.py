"""Bounded, allow-listed file access: the one way bindlab opens a user-given file.

- :func:`resolve_allowed`: in public mode (or with ``$BINDLAB_DATA_ROOTS`` set) a user-given path must resolve
  (symlinks followed) inside an allowed data root (:func:`bindlab.config.data_roots`); anything else gets one message
  that says nothing about the path, whether or not it exists. Locally any path is the person's own to read.
- :func:`open_regular` / :func:`check_regular`: only regular files are opened; a FIFO, device, socket or folder is
  refused with a message (a FIFO is opened non-blocking, so it never hangs).
- :func:`read_text_bounded`, :func:`iter_jsonl_bounded`, :func:`load_json_bounded`: a size cap is checked before
  reading, a line cap while reading; NaN/Infinity, undecodable bytes and deeply nested JSON are messages naming the
  file and line, never a ``RecursionError`` or ``UnicodeDecodeError``.
- :func:`open_image`: the one image loader: regular file, pixel cap checked from the header before decoding,
  decompression bombs and truncated files turned into a message naming the file.
- :func:`resolve_image_field`: an image path inside a data file is relative to the data file's folder and must not
  escape it.

Every error is a :class:`DataError` (a ``ValueError``), which the CLI prints as one ``error:`` line.
"""

from __future__ import annotations

import gc
import json
import os
import stat
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from bindlab import config


class DataError(ValueError):
    """A problem with an input file; the message names the file, the line and what is wrong."""


# The same words for a path outside the roots whether it exists or not, and nothing about the path itself.
REFUSED = "that path is outside the allowed data folders"


def _refused_message() -> str:
    if config.public_mode():
        return f"{REFUSED}; choose one of the offered data sets or upload a file"
    roots = ", ".join(str(r) for r in config.data_roots())
    return f"{REFUSED} ({roots}); move the file there or add its folder to BINDLAB_DATA_ROOTS"


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def resolve_allowed(path: str | os.PathLike, roots: tuple[Path, ...] | list[Path] | None = None) -> Path:
    """The realpath of ``path`` when it lies inside one of ``roots`` (default: :func:`bindlab.config.data_roots`,
    checked only where :func:`bindlab.config.roots_enforced`: in public mode or with ``$BINDLAB_DATA_ROOTS`` set).

    The file need not exist; existence is checked later, by the reader, only for allowed paths.

    Raises:
        DataError: the same message for every refused path (existing or not, symlink or not).
    """
    raw = os.fspath(path)
    if not raw or "\x00" in raw:
        raise DataError(_refused_message())
    real = Path(os.path.realpath(os.path.expanduser(raw)))
    if roots is None and not config.roots_enforced():
        return real  # local use: the person's own files, wherever they are
    allowed = [Path(os.path.realpath(r)) for r in (config.data_roots() if roots is None else roots)]
    if not any(_inside(real, r) for r in allowed):
        raise DataError(_refused_message())
    return real


_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def _kind_problem(path: Path, mode: int) -> str | None:
    for test, what in _KINDS:
        if test(mode):
            hint = "; give a file inside it" if what == "a folder" else ""
            return f"{path} is {what}, not a regular file{hint}"
    return None if stat.S_ISREG(mode) else f"{path} is not a regular file"


def check_regular(path: str | os.PathLike) -> Path:
    """``path`` as a :class:`Path` when it is an existing regular file (symlinks followed).

    Raises:
        DataError: a missing path, a folder, a FIFO, a device or a socket.
    """
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        raise DataError(f"{p}: file not found") from None
    except OSError as e:
        raise DataError(f"{p}: cannot read ({e.strerror or e})") from None
    problem = _kind_problem(p, mode)
    if problem:
        raise DataError(problem)
    return p


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """Open a regular file for binary reading, refusing anything else without blocking on it.

    The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a FIFO (which would
    block a plain ``open``) and a file swapped after a check are both refused.
    """
    p = check_regular(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise DataError(f"{p}: cannot open ({e.strerror or e})") from None
    try:
        problem = _kind_problem(p, os.fstat(fd).st_mode)
        if problem:
            raise DataError(problem)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _size_cap(max_bytes: int | None) -> int:
    return config.limits().max_file_bytes if max_bytes is None else max_bytes


def _too_big(p: Path, size: int, cap: int) -> DataError:
    return DataError(
        f"{p} is larger than the {_mib(cap)} cap ({_mib(size)}); use a smaller file or raise "
        f"{config.LIMIT_ENV['max_file_bytes']}"
    )


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


def read_bytes_bounded(path: str | os.PathLike, max_bytes: int | None = None) -> bytes:
    """All bytes of a regular file, refusing it before reading when it is larger than ``max_bytes``."""
    cap = _size_cap(max_bytes)
    with open_regular(path) as f:
        p = Path(path)
        size = os.fstat(f.fileno()).st_size
        if size > cap:
            raise _too_big(p, size, cap)
        data = f.read(cap + 1)  # a file that grows (or lies about its size, as /proc files do) stops at the cap
    if len(data) > cap:
        raise _too_big(p, len(data), cap)
    return data


def _decode(data: bytes, p: Path, line: int | None = None) -> str:
    try:
        return data.decode("utf-8-sig" if line in (None, 1) else "utf-8")
    except UnicodeDecodeError as e:
        where = f"{p}:{line}" if line is not None else str(p)
        raise DataError(
            f"{where}: not UTF-8 text (undecodable byte at offset {e.start}); save the file as UTF-8"
        ) from None


def read_text_bounded(path: str | os.PathLike, max_bytes: int | None = None) -> str:
    """A UTF-8 text file, size-capped (see :func:`read_bytes_bounded`); undecodable bytes -> :class:`DataError`."""
    return _decode(read_bytes_bounded(path, max_bytes), Path(path))


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not allowed (numbers must be finite)")


def _depth(obj: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, dict):
            o = list(o.values())
        if isinstance(o, list):
            deepest = max(deepest, d)
            stack.extend((v, d + 1) for v in o if isinstance(v, (dict, list)))
    return deepest


# bytes.translate: '{' and '}' become '[' and ']', and everything but brackets and quotes is deleted
_STRUCTURE = bytes.maketrans(b"{}", b"[]")
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')


def _text_depth(raw: bytes, cap: int) -> int | None:
    """Nesting depth of the JSON text ``raw`` (already parsed, so valid), read from its brackets alone; at most
    ``cap + 1`` (deeper is only "too deep"). None when a string holds a bracket or an escape (a backslash), which the
    bracket count cannot tell from structure: the caller walks the parsed value then (:func:`_depth`).

    Each round deletes every innermost ``[]`` pair, so the rounds until nothing is left are the depth: a few
    C-speed passes over a line instead of a Python walk over its ~100 containers.
    """
    if b"\\" in raw:
        return None
    marks = raw.translate(_STRUCTURE, _NOT_STRUCTURE).replace(b'""', b"")  # bracket-free strings vanish
    if b'"' in marks:
        return None
    depth = 0
    while marks:
        if depth > cap:
            return depth
        shorter = marks.replace(b"[]", b"")
        if len(shorter) == len(marks):
            return None  # not balanced: never for parsed JSON, but never loop
        marks, depth = shorter, depth + 1
    return depth


def _check_depth(obj: Any, raw: bytes, where: str, cap: int) -> None:
    depth = _text_depth(raw, cap)
    if (depth if depth is not None else _depth(obj)) > cap:
        raise DataError(f"{where}: JSON nested too deeply (more than {cap} levels)")


def parse_json(text: str, where: str, max_depth: int | None = None, raw: bytes | None = None) -> Any:
    """``json.loads`` that refuses NaN/Infinity and values nested deeper than ``max_depth`` with a message
    (``raw``: the UTF-8 bytes of ``text`` when the caller has them, for the depth check)."""
    cap = config.limits().max_json_depth if max_depth is None else max_depth
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise DataError(f"{where}: JSON nested too deeply (more than {cap} levels)") from None
    except ValueError as e:  # NaN / Infinity
        raise DataError(f"{where}: {e}") from None
    _check_depth(obj, text.encode("utf-8", "surrogatepass") if raw is None else raw, where, cap)
    return obj


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a block that builds many small acyclic objects (a parsed
    JSONL file, one dict per row): the collector would otherwise walk every object built so far again and again,
    which made reading a 13,500-question file ten times slower. Reference counting still frees memory."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def load_json_bounded(
    path: str | os.PathLike, expect: type | None = dict, what: str = "", max_bytes: int | None = None
) -> Any:
    """Parse a JSON file (size-capped, depth-capped); with ``expect=dict`` the top level must be an object.

    Args:
        path: the file.
        expect: the required top-level type (``dict`` or ``list``), or ``None`` for any.
        what: what the file is, for messages ("manifest", "meta.json").
        max_bytes: size cap (default: the ``max_file_bytes`` limit).
    """
    p = Path(path)
    label = f"{what} {p}" if what else str(p)
    obj = parse_json(read_text_bounded(p, max_bytes), label)
    if expect is not None and not isinstance(obj, expect):
        want = "an object ({...})" if expect is dict else f"a {expect.__name__}"
        raise DataError(f"{label}: the top level must be {want}, got a JSON {_json_type(obj)}")
    return obj


def _json_type(obj: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(obj), "number")


def iter_jsonl_bounded(
    path: str | os.PathLike, max_bytes: int | None = None, max_lines: int | None = None
) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed JSON or DataError)`` for each non-blank line of a regular, size-capped JSONL file.

    A malformed line yields a :class:`DataError` naming the file and line (the caller decides whether to skip it);
    more than ``max_lines`` non-blank lines, an oversized file or a non-regular file raise at once. The caps are read
    once per file; the line count is checked before any line is parsed.
    """
    p = Path(path)
    lims = config.limits()
    cap = lims.max_jsonl_lines if max_lines is None else max_lines
    depth_cap = lims.max_json_depth
    data = read_bytes_bounded(p, max_bytes)
    lines = [(n, raw) for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()]
    del data
    if len(lines) > cap:
        raise DataError(f"{p} has more than {cap} lines; split the file or raise {config.LIMIT_ENV['max_jsonl_lines']}")
    for n, raw in lines:
        try:
            yield n, _parse_line(raw, p, n, depth_cap)
        except DataError as e:
            yield n, e


def _parse_line(raw: bytes, p: Path, n: int, cap: int) -> Any:
    """One JSONL line through :func:`parse_json`, its depth read from the bytes already in hand."""
    return parse_json(_decode(raw, p, n), f"{p}:{n}", cap, raw)


def resolve_image_field(data_dir: str | os.PathLike, rel: str, where: str) -> Path:
    """The path of an image named inside a data file: relative to the data file's folder, and inside it.

    Raises:
        DataError: an absolute path, a path that climbs out (``..``) or a symlink that leads out of the folder.
    """
    base = Path(os.path.realpath(data_dir))
    if not isinstance(rel, str) or not rel.strip() or "\x00" in rel:
        raise DataError(f"{where}: image path must be a non-empty relative path")
    target = Path(os.path.realpath(base / rel))
    if os.path.isabs(rel) or not _inside(target, base) or target == base:
        raise DataError(
            f"{where}: image {rel!r} is outside the data file's folder; image paths must be relative "
            "paths inside the folder holding the data file"
        )
    return target


def open_image(path: str | os.PathLike, max_pixels: int | None = None) -> Any:
    """Open and fully decode one image file (the one image loader).

    Checks, in order: a regular file (never blocks on a FIFO); an image header PIL can identify; width x height
    at most ``max_pixels`` (default: the ``max_image_pixels`` limit) *before* decoding; then decodes, so a truncated
    or corrupt file fails here.

    Returns:
        A loaded ``PIL.Image.Image`` (not converted; see :func:`bindlab.encoders.images.to_rgb`).

    Raises:
        DataError: naming the file and what is wrong.
    """
    from PIL import Image, UnidentifiedImageError

    p = Path(path)
    cap = config.limits().max_image_pixels if max_pixels is None else max_pixels
    with open_regular(p) as f:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own cap comes next
                img = Image.open(f)
                w, h = img.size
                if w * h > cap:
                    raise DataError(
                        f"{p}: image is {w}x{h} ({w * h:,} pixels), above the cap of {cap:,} pixels; "
                        f"use a smaller image or raise {config.LIMIT_ENV['max_image_pixels']}"
                    )
                img.load()  # decode now, so a truncated file fails here and not inside a processor
        except Image.DecompressionBombError:
            raise DataError(
                f"{p}: image is too large to decode safely (above the cap of {cap:,} pixels, or a "
                "decompression bomb); use a smaller image"
            ) from None
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError, MemoryError) as e:
            if isinstance(e, DataError):
                raise
            raise DataError(
                f"{p}: cannot read as an image (corrupt, truncated or not an image file: {type(e).__name__})"
            ) from None
    return img


__all__ = [
    "DataError",
    "REFUSED",
    "check_regular",
    "gc_paused",
    "iter_jsonl_bounded",
    "load_json_bounded",
    "open_image",
    "open_regular",
    "parse_json",
    "read_bytes_bounded",
    "read_text_bounded",
    "resolve_allowed",
    "resolve_image_field",
]


def build_once(target: str | os.PathLike, build: Any, current: Any = None) -> Path:
    """``target`` (a file), built by ``build()`` unless it exists, by one process and thread at a time.

    Other threads *and processes* sharing ``$BINDLAB_HOME`` (two app workers, a CLI next to the app, the test
    workers) wait on a lock file beside the target's folder and then find it built, instead of building it again
    into the same folder at the same time. With ``current`` (``folder -> bool``), a folder an older bindlab built
    (``current`` false) is removed and built again.
    """
    import shutil

    from filelock import FileLock

    path = Path(target)

    def ready() -> bool:
        return path.exists() and (current is None or bool(current(path.parent)))

    if ready():
        return path
    path.parent.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path.parent) + ".lock"):
        if not ready():
            if path.parent.exists():
                shutil.rmtree(path.parent)
            build()
    return path
