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


# --- results after an error: one rule for every tab ---------------------------------------------------------------
# When an action fails, every result it would have drawn no longer matches the inputs on the page, so the tab clears
# it: after wiring an action, ``clear_on_error(event, results)`` blanks each of the action's result components (text,
# tables, figures, galleries, pickers of its items, the state it would have set) when the action raises, while the
# error itself shows as a message. Inputs are never touched. The Grounding, Pairs and Browse tabs follow the rule;
# another tab adopts it by listing, per action, the components that action produces.
def cleared(results: list[Any] | tuple[Any, ...], hide: list[Any] | tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """Blank values for result components, in order: what each shows before its action has run.

    Args:
        results: Gradio components (a ``gr.State`` included).
        hide: those among ``results`` to hide as well (e.g. a table shown only once its action ran).

    Returns:
        One value or update per component: ``None`` for state, ``""`` for text, an empty table, an empty gallery,
        a dropdown with no choices, no figure or image.
    """
    import pandas as pd

    hidden = {id(c) for c in hide}
    out: list[Any] = []
    for c in results:
        if isinstance(c, gr.State):
            out.append(None)
            continue
        if isinstance(c, gr.Dropdown):
            value: dict[str, Any] = gr.update(choices=[], value=None)
        elif isinstance(c, gr.Dataframe):
            value = gr.update(value=pd.DataFrame())
        elif isinstance(c, gr.Gallery):
            value = gr.update(value=[])
        elif isinstance(c, (gr.HTML, gr.Markdown, gr.Textbox)):
            value = gr.update(value="")
        else:  # gr.Plot, gr.Image, ...
            value = gr.update(value=None)
        out.append({**value, "visible": False} if id(c) in hidden else value)
    return tuple(out)


def clear_on_error(event: Any, results: list[Any] | tuple[Any, ...], hide: list[Any] | tuple[Any, ...] = ()) -> Any:
    """Apply the rule for results after an error (above) to one wired action.

    Args:
        event: what ``btn.click(...)`` / ``.change(...)`` / ``.then(...)`` returned for the action.
        results: the components that action produces, which would be stale after it fails.
        hide: those to hide as well (see :func:`cleared`).

    Returns:
        The failure listener (chain more on it if needed).
    """
    results = list(results)

    def clear() -> Any:
        values = cleared(results, hide)
        return values[0] if len(values) == 1 else values

    return event.failure(clear, None, results, api_name=False, show_progress="hidden", queue=False)


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
