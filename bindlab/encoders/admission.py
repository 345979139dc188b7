"""A fair share of the model under load: what one app request may ask of it, counted where the model works.

A public Space serves many visitors on one CPU or GPU. Each callback of the app runs inside a :func:`request_scope`
(opened by the UI for the visitor's session and client address, in public mode). The embedding service and the
attention analysis :func:`charge` the scope for every item they send through the model and call :func:`check_time`
between model turns. So:

- **Light requests are never queued behind heavy ones.** A request stays *light* while it has sent fewer than
  ``heavy_items`` items through the model (cached items cost nothing); it shares the model batch by batch with
  everyone (:data:`bindlab.encoders.service.MODEL_TURN`), so a small request finishes after a few turns whatever
  else runs.
- **Heavy requests are bounded, and served in turn.** When a request crosses ``heavy_items`` it needs a heavy
  slot: at most one per session and one per client address, and at most ``max_heavy`` on the server. Without one it
  stops at once with :class:`Busy` (it does not hold a thread of the server while it waits) but takes a place in
  line: the message says which place and about when the turn comes (from the recent heavy requests' durations).
  Slots go to the line in order: a newcomer takes a free slot only when nobody waits for it, and a visitor whose
  turn came has ``TURN_KEPT_S`` seconds to ask again before the turn passes to the next. A visitor who comes back
  later (a wait estimate can run long) is not sent to the back: it goes next after those already called, once; a
  second missed turn gives the place up.
- **Every request has a time limit** (``max_seconds``): past it, the next model turn raises :class:`OverTime`, so
  work a visitor abandoned stops by itself.
- **Work stops when its visitor leaves.** When a browser session ends (the page is closed; the app's
  ``demo.unload`` calls :func:`visitor_left`), that session's running requests raise :class:`Left` at their next
  model turn instead of running on for nobody.

Outside a scope (the CLI, tests, jobs) nothing is counted or limited.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


class Busy(ValueError):
    """The server is running as many heavy requests as it allows (or this visitor already runs one)."""


class OverTime(ValueError):
    """A request ran past its time limit and was stopped."""


class Left(ValueError):
    """The visitor who asked closed the page; the request was stopped."""


@dataclass(eq=False)  # one request is one scope: compared (and removed from the running list) by identity
class Scope:
    """One request's account: who asked (session, client address), when it must end, what it has used."""

    keys: tuple[str, ...]  # the session and the client address, each holding at most one heavy request
    started: float
    max_seconds: float  # 0 = no limit
    heavy_items: int  # items through the model before the request counts as heavy (0 = never heavy)
    max_heavy: int  # heavy requests running on the server at once
    items: int = 0
    heavy: bool = False
    expected: int = 0  # items the request announced it will send (expect), for the wait estimates of others


@dataclass
class Ticket:
    """A visitor's place in line for a heavy slot (:func:`_take_heavy`)."""

    keys: tuple[str, ...]
    seen: float  # when the visitor last asked
    called: float | None = None  # when a slot was first free for it
    missed: bool = False  # its turn came and passed once; the next missed turn gives the place up


_SCOPE: ContextVar[Scope | None] = ContextVar("bindlab_request_scope", default=None)
_LOCK = threading.Lock()
_RUNNING: list[Scope] = []  # the heavy requests holding a slot (their keys: the sessions / addresses running one)
_RECENT_HEAVY_S: deque[float] = deque(maxlen=20)  # durations of recent heavy requests, for "try again in N s"
_LINE: list[Ticket] = []  # visitors waiting for a heavy slot, in the order they first asked
_MISSED: list[Ticket] = []  # places whose turn came and passed unused (once): next after the called when they ask
TURN_KEPT_S = 90.0  # a free slot waits this long for the visitor whose turn it is
TICKET_IDLE_S = 1800.0  # a place in line not asked about for this long is given up
MAX_LINE = 500  # places in line; past it a request is refused without one
_LEFT: dict[str, float] = {}  # "session:<hash>" of sessions that ended -> when (a session hash never comes back)
LEFT_KEEP_S = 6 * 3600.0  # how long an ended session is remembered (far beyond any request's time limit)


def visitor_left(key: str) -> None:
    """The session ``key`` (``"session:<hash>"``) ended: its running requests stop at their next model turn."""
    now = time.monotonic()
    with _LOCK:
        _LEFT[key] = now
        for k in [k for k, t in _LEFT.items() if now - t > LEFT_KEEP_S]:
            del _LEFT[k]


def heavy_running() -> int:
    """How many heavy requests hold a slot now."""
    with _LOCK:
        return len(_RUNNING)


def _typical_s() -> float | None:
    """The median duration of the recent heavy requests (None before the first has finished)."""
    return sorted(_RECENT_HEAVY_S)[len(_RECENT_HEAVY_S) // 2] if _RECENT_HEAVY_S else None


PROJECT_AFTER = 0.2  # share of its announced items a request must have sent before its pace is projected


def _left_s(scope: Scope, now: float) -> float | None:
    """How long a running heavy request still needs, from the share of its announced items done so far (None before
    it has sent ``PROJECT_AFTER`` of them: its first batches run faster than the rest, and a projection from them
    told the 6th in line "about 90 s" for a wait of 18 minutes; None when it announced nothing). Once it has sent
    all it announced it is finishing (scoring, writing its answer): 0. Counting it unknown then told the 1st in line
    "about 240 s" five seconds before its slot came free, and the slot waits only ``TURN_KEPT_S`` for it."""
    if scope.expected <= 0 or scope.items <= 0 or scope.items < PROJECT_AFTER * scope.expected:
        return None
    if scope.items >= scope.expected:
        return 0.0
    return (now - scope.started) * (scope.expected - scope.items) / scope.items


def _wait_hint(turns: int = 1) -> int:
    """Seconds until ``turns`` heavy slots have come free, rounded to 5 s: the first when the soonest running request
    is projected to end (from its progress), each further one a typical heavy request's duration (the recent
    median; before any finished, the running requests' projected total, at least 60 s)."""
    now = time.monotonic()
    projected = [(r, x) for r, x in ((r, _left_s(r, now)) for r in _RUNNING) if x is not None]
    lefts = [x for _, x in projected]
    totals = [now - r.started + x for r, x in projected]
    typical = _typical_s() or max([60.0, *totals])
    first = min(lefts) if lefts else typical
    return max(5, int(round((first + (max(1, turns) - 1) * typical) / 5.0)) * 5)


@contextmanager
def request_scope(keys: tuple[str, ...], max_seconds: float, heavy_items: int, max_heavy: int) -> Iterator[Scope]:
    """Run the body as one request, accounted as described in the module docstring.

    Args:
        keys: who asks: e.g. ``("session:abc", "addr:1.2.3.4")`` (empty strings are dropped).
        max_seconds: the request's time limit (0: none).
        heavy_items: items through the model that make the request heavy (0: never).
        max_heavy: heavy requests at once on the server.
    """
    scope = Scope(tuple(k for k in keys if k), time.monotonic(), max_seconds, heavy_items, max_heavy)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)
        if scope.heavy:
            with _LOCK:
                _RUNNING.remove(scope)
                _RECENT_HEAVY_S.append(time.monotonic() - scope.started)
                _tidy_line(time.monotonic(), scope.max_heavy)


def charge(n: int) -> None:
    """Count ``n`` more items through the model for the current request (no-op outside a scope); crossing the
    heavy threshold takes a heavy slot or raises :class:`Busy`."""
    scope = _SCOPE.get()
    if scope is None or n <= 0:
        return
    check_time()
    scope.items += n
    if scope.heavy or not scope.heavy_items or scope.items < scope.heavy_items:
        return
    _take_heavy(scope, scope.items)


def in_scope() -> bool:
    """True inside an app request that is accounted (public mode); a caller skips work done only for the account."""
    return _SCOPE.get() is not None


def expect(n: int) -> None:
    """Announce that the current request will send about ``n`` items through the model (those not cached): when
    that makes it heavy, it takes a heavy slot now or stops with :class:`Busy` *before* any model work, instead of
    after its first batches. Counts nothing (the items are charged as they pass); no-op outside a scope."""
    scope = _SCOPE.get()
    if scope is None:
        return
    scope.expected = max(scope.expected, scope.items + n)  # what the others' wait estimates read
    if scope.heavy or not scope.heavy_items or n < scope.heavy_items:
        return
    check_time()
    _take_heavy(scope, n)


def line_length() -> int:
    """How many visitors wait for a heavy slot now (not counting those whose turn passed while they were away)."""
    with _LOCK:
        return len(_LINE)


def _tidy_line(now: float, max_heavy: int) -> None:
    """Set aside the places whose turn came and passed unused (a second time: drop them), drop those of closed pages
    and those nobody asked about for long; start the turn clock of the places a free slot waits for. Call with
    ``_LOCK`` held."""
    free = max(0, max_heavy - len(_RUNNING))

    def alive(t: Ticket) -> bool:
        return now - t.seen <= TICKET_IDLE_S and not any(k in _LEFT for k in t.keys)  # asked lately, page open

    waiting = []
    for t in filter(alive, _LINE):
        if t.called is None or now - t.called <= TURN_KEPT_S:
            waiting.append(t)
        elif not t.missed:  # its turn passed unused, the first time: set aside until it asks again
            t.called, t.missed = None, True
            _MISSED.append(t)
    _LINE[:] = waiting
    _MISSED[:] = filter(alive, _MISSED)
    for t in _LINE[:free]:
        if t.called is None:
            t.called = now


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _take_heavy(scope: Scope, n: int) -> None:
    """A heavy slot for ``scope``, or :class:`Busy` with its place in line (see the module docstring)."""
    with _LOCK:
        running = len(_RUNNING)
        mine = [k for r in _RUNNING for k in r.keys if k in scope.keys]
        if mine:
            raise Busy(
                f"you already have a large request running; this one needs the model for {n:,}+ "
                f"items too: wait for the first to finish (about {_wait_hint()} s), then try again"
            )
        now = time.monotonic()
        _tidy_line(now, scope.max_heavy)
        free = max(0, scope.max_heavy - running)
        place = next((i for i, t in enumerate(_LINE) if set(t.keys) & set(scope.keys)), None)
        late = None if place is not None else next((t for t in _MISSED if set(t.keys) & set(scope.keys)), None)
        if late is not None:  # back after its turn passed: next after those already called
            _MISSED.remove(late)
            place = sum(1 for t in _LINE if t.called is not None)
            _LINE.insert(place, late)
        if place is None and free > len(_LINE):  # a slot nobody waits for
            place = -1
        elif place is None:
            if len(_LINE) >= MAX_LINE:
                raise Busy(
                    f"the server is busy with {running} large requests and {len(_LINE)} visitors wait for "
                    f"one; try again in about {_wait_hint()} s (small requests still run now)"
                )
            _LINE.append(Ticket(scope.keys, now))
            place = len(_LINE) - 1
        if place >= free:
            _LINE[place].seen = now
            turns = -(-(place + 1 - free) // max(1, scope.max_heavy))  # slots to free up before this place's
            raise Busy(
                f"the server is busy with {running} large request{'s' if running != 1 else ''}: "
                f"you are {_ordinal(place + 1)} in line for the next; try again in about {_wait_hint(turns)} s "
                f"(your place is kept: the slot waits {TURN_KEPT_S:.0f} s for you once free, and if you come later "
                "you go next after whoever took it; small requests still run now)"
            )
        if place >= 0:
            del _LINE[place]
        _RUNNING.append(scope)
        scope.heavy = True


def check_time() -> None:
    """Raise :class:`OverTime` when the current request is past its time limit, :class:`Left` when its visitor
    closed the page (no-op outside a scope)."""
    scope = _SCOPE.get()
    if scope is None:
        return
    if _LEFT and any(k in _LEFT for k in scope.keys):
        raise Left("the page that asked for this was closed, so the request was stopped")
    if scope.max_seconds and time.monotonic() - scope.started > scope.max_seconds:
        raise OverTime(
            f"the request took longer than its limit of {scope.max_seconds:.0f} s and was stopped; "
            "ask for less (fewer questions or models) or try again later"
        )
