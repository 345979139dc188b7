"""Shared UI helpers: turning backend errors into readable messages."""

from __future__ import annotations

import functools
import logging
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
