"""Sessions that never opened a page cost little: a cap on Gradio sessions without a heartbeat.

Gradio keeps a copy of the whole page for every session hash it sees (``SessionState``: every component's config,
about 0.7 MB for this app) and drops one only when 10,000 newer sessions have come after it. A browser that shows
the page keeps a heartbeat connection open (``GET …/gradio_api/heartbeat/<session>``); a script that POSTs events with
fresh session hashes never does. 1,000 such POSTs grew a public server by 683 MB.

So every session that has opened a heartbeat is *live* (:class:`HeartbeatSeen`, an ASGI middleware, notes it before
Gradio answers), and :func:`install` makes the app's state holder keep at most :func:`headless_cap` sessions that
are not: past it, the oldest headless ones go first. A live session is never dropped for a headless one, so a flood
of fresh hashes cannot push a real visitor's page state out; Gradio's own capacity (10,000) still bounds the rest.
The cap is ``$BINDLAB_MAX_HEADLESS_SESSIONS`` (default 200 in public mode, about 140 MB; 0 = none, the local
default).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

from bindlab.config import public_mode

CAP_ENV = "BINDLAB_MAX_HEADLESS_SESSIONS"
PUBLIC_CAP = 200
MAX_LIVE = 10_000  # live sessions remembered (a flood of heartbeats costs its sender a connection each)
HEARTBEAT = "/gradio_api/heartbeat/"

_LIVE: OrderedDict[str, None] = OrderedDict()
_LIVE_LOCK = threading.Lock()


def headless_cap() -> int:
    """Sessions without a heartbeat kept at most (0: no cap).

    Raises:
        ValueError: the setting is not a whole number.
    """
    raw = os.environ.get(CAP_ENV, "").strip()
    if not raw:
        return PUBLIC_CAP if public_mode() else 0
    if not raw.isdigit():
        raise ValueError(f"{CAP_ENV}={raw!r} must be a whole number (0: no cap)")
    return int(raw)


def mark_live(session: str) -> None:
    """Remember that ``session`` has a page open (its heartbeat connection)."""
    with _LIVE_LOCK:
        _LIVE[session] = None
        _LIVE.move_to_end(session)
        while len(_LIVE) > MAX_LIVE:
            _LIVE.popitem(last=False)


def forget(session: str) -> None:
    """The session ended (its page closed): it is no longer live."""
    with _LIVE_LOCK:
        _LIVE.pop(session, None)


def is_live(session: str) -> bool:
    with _LIVE_LOCK:
        return session in _LIVE


def drop_headless(holder: Any, cap: int) -> list[str]:
    """Drop the oldest sessions of Gradio's state ``holder`` that have no heartbeat, keeping ``cap`` of them.

    Returns:
        The session ids dropped (oldest first).
    """
    if cap <= 0:
        return []
    with holder.lock:
        headless = [s for s in holder.session_data if not is_live(s)]
        gone = headless[: max(0, len(headless) - cap)]
        for session in gone:
            holder.session_data.pop(session, None)
            holder.time_last_used.pop(session, None)
    return gone


def install() -> None:
    """Make Gradio's ``StateHolder`` (in this process: the app's) drop headless sessions past :func:`headless_cap`
    whenever a session is used. Does nothing when the cap is 0, when already installed, or on a Gradio whose state
    holder lacks ``update`` (then Gradio's own capacity applies alone)."""
    from gradio.state_holder import StateHolder

    original = getattr(StateHolder, "update", None)
    if not headless_cap() or original is None or getattr(original, "_bindlab_headless", False):
        return

    def update(self: Any, session_id: str) -> None:
        original(self, session_id)
        cap = headless_cap()
        if cap and len(self.session_data) > cap:
            drop_headless(self, cap)

    update._bindlab_headless = True  # type: ignore[attr-defined]
    StateHolder.update = update


class HeartbeatSeen:
    """ASGI middleware: a ``GET …/gradio_api/heartbeat/<session>`` marks the session live before Gradio serves it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("method") == "GET":
            path = str(scope.get("path", ""))
            at = path.find(HEARTBEAT)
            if at >= 0:
                session = path[at + len(HEARTBEAT) :].strip("/")
                if session and len(session) <= 100:
                    mark_live(session)
        await self.app(scope, receive, send)
