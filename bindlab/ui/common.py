"""Shared UI helpers: turning backend errors into readable messages; the upload size limit."""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path
from typing import Any, Callable

import gradio as gr

log = logging.getLogger(__name__)

# Errors whose message is written for a user: shown as they are.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, FileNotFoundError, OSError)


def friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a callback so a user error becomes a ``gr.Error`` toast with its message and the app keeps running.

    Unexpected exceptions are logged with their traceback and shown as one line naming the exception type.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except USER_ERRORS as e:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            raise gr.Error(str(msg), duration=None) from None
        except Exception as e:  # noqa: BLE001 - the app must survive any callback failure
            log.exception("callback %s failed", fn.__name__)
            raise gr.Error(f"{type(e).__name__}: {e} (see the server log for details)", duration=None) from None

    return wrapper


def max_upload_mb() -> float:
    """``$BINDLAB_MAX_UPLOAD_MB`` (default 50): the largest file a visitor may upload, in MiB.

    Raises:
        ValueError: the variable is not a positive number.
    """
    raw = os.environ.get("BINDLAB_MAX_UPLOAD_MB", "50").strip() or "50"
    try:
        mb = float(raw)
    except ValueError:
        mb = 0.0
    if not mb > 0:
        raise ValueError(f"BINDLAB_MAX_UPLOAD_MB must be a positive number of MiB, got {raw!r}")
    return mb


def max_upload_bytes() -> int:
    """:func:`max_upload_mb` in bytes; ``launch()`` passes it to Gradio, whose upload route refuses larger files."""
    return int(max_upload_mb() * 1024 * 1024)


def check_upload(path: str | Path | None) -> Path:
    """The path of an uploaded file, checked again in the callback (Gradio's limit guards its upload route; this
    guards files reaching a callback some other way).

    Raises:
        ValueError: no file, a missing file, or one over the limit (the message gives both sizes).
    """
    if not path:
        raise ValueError("no file uploaded; choose a file first")
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"uploaded file {p.name} is missing on the server; upload it again")
    size, limit = p.stat().st_size, max_upload_bytes()
    if size > limit:
        raise ValueError(f"{p.name} is {size / 2**20:.1f} MiB; uploads are limited to {limit / 2**20:g} MiB "
                         "(BINDLAB_MAX_UPLOAD_MB)")
    return p
