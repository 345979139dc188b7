"""Shared UI helpers: turning backend errors into readable messages; the upload size limit; the data input of a tab
(a path box locally, offered sets and uploads in public mode)."""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from bindlab.config import limits, public_mode
from bindlab.present.safe_text import message_text
from bindlab.studies import access, datasets
from bindlab.ui import headless_sessions
from bindlab.ui.client_address import client_address

log = logging.getLogger(__name__)

MAX_MESSAGE = 600  # characters of an error message shown on the page

# Errors whose message is written for a user: shown as they are (up to MAX_MESSAGE characters).
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, FileNotFoundError, OSError)


def friendly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a callback so a user error becomes a ``gr.Error`` toast with its message and the app keeps running.

    A user error logs one line on the server; an unexpected exception logs its traceback and shows one line naming
    the exception type (in public mode without its message, which may quote a file or a server path). In public mode
    every message shown first passes through :func:`bindlab.studies.access.redact` (no server folder, session id or
    upload token reaches the page). The callback runs as its page's visitor (:func:`bindlab.studies.access.visitor`),
    so the studies know whose jobs' ``lora:`` models it may load. A data dropdown's choice value
    (:class:`DataChoice`) among the arguments reaches ``fn`` as the server path it stands for, resolved for this
    session (:func:`bindlab.studies.datasets.resolve_choice`).
    """

    texts = _text_params(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        session = None
        try:
            session = _session_hash()
            _check_texts(fn, texts, args, kwargs)
            args, kwargs = _resolve_choices(args, kwargs, session)
            address = _client_address()
            with access.visitor(session, address), access.request_scope(session, address):
                return fn(*args, **kwargs)
        except gr.Error as e:
            e.message = access.redact(e.message, session)  # public mode: no server path, session id or upload token
            raise
        except USER_ERRORS as e:
            msg = str(e.args[0] if isinstance(e, KeyError) and e.args else e)
            msg = access.redact(msg, session)  # public mode: no server path, session id or upload token
            if len(msg) > MAX_MESSAGE:  # a message quoting a huge input: the page gets its start
                msg = msg[:MAX_MESSAGE] + " …"
            log.info("callback %s refused: %s", fn.__name__, msg.splitlines()[0] if msg else type(e).__name__)
            # the message may quote what the visitor typed; Gradio shows it as HTML: it goes as text
            raise gr.Error(message_text(msg), duration=None, print_exception=False) from None
        except Exception as e:  # noqa: BLE001 - the app must survive any callback failure
            log.exception("callback %s failed", fn.__name__)
            detail = "" if public_mode() else f": {e}"
            raise gr.Error(
                message_text(f"{type(e).__name__}{detail} (see the server log for details)"),
                duration=None,
                print_exception=False,
            ) from None

    return wrapper


TEXT_ANNOTATIONS = {"str", "str | None"}


def _text_params(fn: Callable[..., Any]) -> dict[str, int]:
    """The parameters of ``fn`` annotated as text (``str`` or ``str | None``), with their positions."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return {}
    return {p.name: i for i, p in enumerate(params) if str(p.annotation) in TEXT_ANNOTATIONS}


def _check_texts(fn: Callable[..., Any], texts: dict[str, int], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A value that is not text where ``fn`` takes text (a script posting ``123`` as a model id to the app's API) is
    refused in one sentence instead of failing deep inside as an AttributeError."""
    for name, i in texts.items():
        value = args[i] if i < len(args) else kwargs.get(name)
        if value is not None and not isinstance(value, str):
            raise ValueError(
                f"{name.replace('_', ' ')}: expected text, got {type(value).__name__} "
                f"{str(value)[:40]!r}; send it as a string"
            )


def _resolve_choices(
    args: tuple[Any, ...], kwargs: dict[str, Any], session: str | None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args`` and ``kwargs`` with each :class:`DataChoice` replaced by the path it stands for for ``session``."""

    def one(a: Any) -> Any:
        return datasets.resolve_choice(str(a), session, a.kind) if isinstance(a, DataChoice) else a

    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


def quiet_refusals(demo: gr.Blocks) -> None:
    """In public mode, an input Gradio itself refuses before any callback runs (a value that is not one of a radio's
    or dropdown's choices, a number that is not one) logs one line on the server instead of a full traceback per
    request; the visitor still gets the message (Gradio's own for its refusals, a generic one for anything else)."""
    if not public_mode():
        return
    preprocess = demo.preprocess_data

    async def quiet(block_fn: Any, *args: Any, **kwargs: Any) -> Any:
        name = getattr(block_fn, "name", "?")
        try:
            return await preprocess(block_fn, *args, **kwargs)
        except gr.Error as e:
            if e.print_exception:  # Gradio's own refusal, which quotes the value sent: shown as text
                first = str(e.message).splitlines()[0] if str(e.message) else type(e).__name__
                log.info("input of %s refused: %s", name, first[:200])
                e.print_exception = False
                e.message = message_text(e.message)
            raise
        except Exception as e:  # noqa: BLE001 - a component could not read a value a client sent
            cause = e.__cause__ or e  # Gradio wraps a component's own error in ComponentProcessingError
            log.info(
                "input of %s unreadable: %s: %s",
                name,
                type(cause).__name__,
                str(cause).splitlines()[0][:200] if str(cause) else "",
            )
            raise gr.Error(
                "one of the inputs could not be read; check the values and try again",
                duration=None,
                print_exception=False,
            ) from None

    demo.preprocess_data = quiet  # type: ignore[method-assign]


def _client_address() -> str | None:
    """The client address of the Gradio event this thread serves (None outside one): the ``X-Forwarded-For`` entry
    of the outermost trusted proxy (:mod:`bindlab.ui.client_address`), else the connection's."""
    from gradio.context import LocalContext

    request = LocalContext.request.get(None)
    if request is None:
        return None
    headers = getattr(request, "headers", None) or {}
    return client_address(
        str(headers.get("x-forwarded-for", "") or ""), getattr(getattr(request, "client", None), "host", None)
    )


def _session_hash() -> str | None:
    """The browser session id of the Gradio event this thread serves (None outside one)."""
    from gradio.context import LocalContext

    request = LocalContext.request.get(None)
    return getattr(request, "session_hash", None) if request is not None else None


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


def max_upload_mb() -> int:
    """``limits().max_upload_mb`` (``$BINDLAB_MAX_UPLOAD_MB``; 50 locally, 20 in public mode): the largest file a
    visitor may upload, in MiB.

    Raises:
        ValueError: the variable is not a positive whole number.
    """
    try:
        mb = limits().max_upload_mb
    except ValueError as e:
        raise ValueError(f"BINDLAB_MAX_UPLOAD_MB must be a positive whole number of MiB ({e})") from None
    if mb <= 0:
        raise ValueError(f"BINDLAB_MAX_UPLOAD_MB must be a positive whole number of MiB, got {mb}")
    return mb


def max_upload_bytes() -> int:
    """:func:`max_upload_mb` in bytes; ``launch()`` passes it to Gradio, whose upload route refuses larger files."""
    return max_upload_mb() * 1024 * 1024


def check_upload(path: str | Path | None) -> Path:
    """The path of an uploaded file, checked again in the callback (Gradio's limit guards its upload route; this
    guards files reaching a callback some other way) against ``limits().max_upload_mb``.

    Raises:
        ValueError: no file, a missing file, or one over the limit (the message gives both sizes).
    """
    return datasets.check_upload_size(path or "")


shown_image = datasets.shown_image  # what an image component gets for an image file bindlab read


def held_state(value: Any = None) -> gr.State:
    """A ``gr.State`` for a session's large results (a map's vectors, a comparison, a margin set): Gradio frees it
    when the tab closes, and in public mode also after ``session_state_seconds`` (30 min) without an update, so a
    client that leaves without closing (a script) does not hold it forever."""
    ttl = limits().session_state_seconds
    return gr.State(value, time_to_live=ttl or None)


# --- choosing data: the embedded and offered sets, uploads; a free path only outside public mode ----------------
NOT_OFFERED = datasets.NOT_OFFERED


class DataChoice(str):
    """A data dropdown's value as its callback receives it: the opaque choice value (``""``, ``"set:<label>"``,
    ``"upload:<token>"``) marked with the dropdown's data kind, so :func:`friendly` resolves it to a server path for
    the calling session (the dropdown's ``preprocess`` runs without the request, so cannot)."""

    kind: str

    def __new__(cls, value: str, kind: str) -> DataChoice:
        """The value, marked with ``kind`` (a key of ``datasets.KINDS``)."""
        obj = super().__new__(cls, value)
        obj.kind = kind
        return obj


class DataDropdown(gr.Dropdown):
    """The public-mode data dropdown of one data kind (``kind``, a constructor argument).

    Its choices carry opaque values, never a server path (:func:`bindlab.studies.datasets.offered_choices`). It takes
    a value that is one of its session's choices or, as Gradio's dropdown does not, one of the sets offered now
    (:func:`bindlab.studies.datasets.is_offered`: a set written under ``$BINDLAB_HOME`` after the page was built), and
    hands it on as a :class:`DataChoice` that :func:`friendly` resolves to the path. Gradio's own refusal of any other
    value quotes every choice and the value sent; this one says only :data:`NOT_OFFERED`.
    """

    is_template = True  # drawn by the frontend as the plain Dropdown it is

    def __init__(self, choices: Any = None, *, kind: str = "mcq", **kwargs: Any) -> None:
        """``gr.Dropdown``'s arguments, and the data kind it offers (a key of ``datasets.KINDS``); ``kind`` is a
        constructor argument so Gradio's per-session copy made by an update keeps it."""
        self.kind = kind
        super().__init__(choices=choices, **kwargs)

    def get_config(self, cls: Any = None) -> dict[str, Any]:
        """The page config of a ``gr.Dropdown`` (label, value, elem_id, ...): Gradio collects the props named in the
        signature of ``cls.__init__``, and this class's takes them as ``**kwargs``."""
        return super().get_config(gr.Dropdown if cls is None else cls)

    def preprocess(self, payload: Any) -> Any:
        """Gradio's check and conversion; a value offered now passes (as a :class:`DataChoice`), any other gets
        :data:`NOT_OFFERED`."""
        try:
            value = super().preprocess(payload)
        except gr.Error:
            if not (isinstance(payload, str) and datasets.is_offered(self.kind, payload)):
                log.info("data dropdown %s refused a value that is not one of its choices", self.elem_id)
                raise gr.Error(NOT_OFFERED, duration=None, print_exception=False) from None
            value = payload
        return DataChoice(value, self.kind) if isinstance(value, str) else value


def data_choices(kind: str, session: str | None) -> list[tuple[str, str]]:
    """What a data dropdown offers one session now, as ``(label, opaque value)`` choices: the sets of ``kind``
    (listed afresh, so sets written under ``$BINDLAB_HOME`` after the app started appear) and the files this session
    uploaded for it (:func:`bindlab.studies.datasets.offered_choices`)."""
    return datasets.offered_choices(kind, session)


def offer_data(kind: str, value: str, request: gr.Request | None = None) -> Any:
    """What a callback returns to set another tab's data input to the data path ``value`` it used (the Map's and
    Compare's "Open in Browse"): locally the path itself (a textbox); in public mode a dropdown update whose choices
    are the ones offered to this session now (:func:`data_choices`) and whose value is the opaque choice that stands
    for ``value``, so an embedded set rendered after the page loaded or a file this session uploaded in the other
    tab shows and is accepted there.

    Raises:
        ValueError: in public mode, ``value`` is no set offered to this session (:data:`NOT_OFFERED`).
    """
    if not public_mode():
        return value
    session = getattr(request, "session_hash", None)
    choice = datasets.choice_value(kind, value, session)
    if choice is None:
        raise ValueError(NOT_OFFERED)
    return gr.update(choices=data_choices(kind, session), value=choice)


def data_picker(kind: str, label: str, elem_id: str, scale: int = 3) -> gr.Textbox | gr.Dropdown:
    """The data input of a tab; its value reaches a :func:`friendly` callback as a path (or "" for the embedded
    default), as before.

    Locally: the plain path textbox. In public mode: a dropdown of the sets a visitor may choose and an upload widget
    beside it; an uploaded file is stored in the session's upload folder (deleted when the session ends) and becomes
    the dropdown's chosen value. The choices carry opaque values (``set:<label>``, ``upload:<token>``), never a server
    path; the callback's wrapper resolves the chosen one for its session. The dropdown takes no typed values; it
    lists the sets afresh each time it is opened, and refuses a value that is neither one of its choices nor a set
    offered now with one message that names no path (:class:`DataDropdown`).

    Args:
        kind: a key of :data:`bindlab.studies.datasets.KINDS` (mcq, pairs, captions, grid, triplets).
        label: the label of the input (locally it says what an empty box means).
        elem_id: element id of the textbox / dropdown (the upload widget gets ``<elem_id>-upload``).
        scale: width share in the surrounding row.
    """
    if not public_mode():
        return gr.Textbox(label=label, value="", scale=scale, elem_id=elem_id)
    folder = datasets.is_folder_kind(kind)
    with gr.Column(scale=scale, min_width=240):
        choice = DataDropdown(
            datasets.set_choices(kind),
            value="",
            label=label.split(" (")[0],
            elem_id=elem_id,
            allow_custom_value=False,
            filterable=False,
            kind=kind,
        )
        upload = gr.File(
            label=f"…or upload ({'several files' if folder else 'one file'}, or a .zip with its "
            f"images; at most {max_upload_mb()} MiB each)",
            file_count="multiple" if folder else "single",
            file_types=datasets.UPLOAD_TYPES[kind],
            height=90,
            elem_id=f"{elem_id}-upload",
        )

    def take(files: Any, request: gr.Request) -> tuple[Any, Any]:
        session = getattr(request, "session_hash", None)
        stored = datasets.store_upload(files, kind, session)
        return gr.update(choices=data_choices(kind, session), value=datasets.choice_value(kind, stored, session)), None

    def refresh(request: gr.Request) -> Any:
        return gr.update(choices=data_choices(kind, getattr(request, "session_hash", None)))

    upload.upload(friendly(take), [upload], [choice, upload], api_name=f"{elem_id.replace('-', '_')}_upload")
    # opening the list lists the sets afresh: one written under $BINDLAB_HOME since the page loaded is offered
    choice.focus(friendly(refresh), None, [choice], api_name=False, queue=False, show_progress="hidden")
    return choice


def install_owner_token(demo: gr.Blocks) -> None:
    """Keep a random owner token in the browser (``localStorage``) and claim it for each new page session
    (:func:`bindlab.studies.access.claim_owner`): a visitor's background jobs belong to the browser, not to one page
    load, so a reload still sees, follows and cancels them (and in public mode may still load its ``lora:`` models)."""
    token = gr.BrowserState("", storage_key="bindlab-owner-token")

    def claim(kept: str, request: gr.Request) -> str:
        return access.claim_owner(getattr(request, "session_hash", None), kept, _client_address())

    demo.load(claim, [token], [token], api_name=False, queue=False, show_progress="hidden")


_UPLOAD_SWEEPER: threading.Thread | None = None


def install_session_release(demo: gr.Blocks) -> None:
    """When a session ends (``demo.unload``), free what Gradio keeps of it at once: its ``gr.State`` values (a Map's
    vectors: 10,000 points x 4,096 float32 with ``bow``, ~160 MB) and its copy of the page (every output's last value,
    e.g. the Map's plot; ~0.7 MB even for a session that did nothing). Gradio itself keeps a closed session's state
    for an hour whatever a State's ``time_to_live`` says (``SessionState.STATE_TTL_WHEN_CLOSED``, so that a page
    that reconnects finds it) and its page copy until 10,000 sessions have come after it; here the session's
    uploads are deleted and its requests stopped when it ends anyway (:func:`install_uploads`), so nothing it held
    would still work. Install it after every other ``demo.unload``: Gradio runs them in order, and each one asks
    for the session's state again (an unload after this one would make a fresh, if small, copy that stays).
    """

    def release(request: gr.Request) -> None:
        holder = getattr(demo, "state_holder", None)
        session = getattr(request, "session_hash", None)
        if session:
            headless_sessions.forget(session)
        if holder is None or not session or session not in holder:
            return
        try:  # Gradio's StateHolder internals (gradio 6): if they change, the hour-long default applies again
            holder.delete_state(session)  # each State's delete_callback, then its value
            with holder.lock:
                holder.session_data.pop(session, None)
                holder.time_last_used.pop(session, None)
        except (AttributeError, KeyError, TypeError) as e:
            log.warning("could not release the ended session's state at once (%s); Gradio frees it later", e)
        trim_heap()

    demo.unload(release)


def trim_heap() -> None:
    """Give freed heap memory back to the system (glibc's ``malloc_trim``; nothing elsewhere). Python frees a
    session's objects into malloc's heaps, one per thread that allocated them (Gradio runs callbacks in a thread
    pool), and glibc returns such memory only from the top of a heap: without this, what a session held mostly stays
    resident after it is freed, as fragments in the middle of the heaps."""
    import ctypes
    import ctypes.util

    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        pass


def install_uploads(demo: gr.Blocks, every_s: float = 600.0, older_than_s: float = 3600.0) -> None:
    """When a session ends (``demo.unload``): stop its running requests at their next model turn and delete its
    uploads; old uploads go every ``every_s`` seconds, and at start-up those of a server that stopped (its sessions
    ended with it)."""
    global _UPLOAD_SWEEPER

    def end(request: gr.Request) -> None:
        from bindlab.studies import browse, pairs

        session = getattr(request, "session_hash", None)
        access.visitor_left(session)
        if (
            session
        ):  # the scored sets of its uploads (Browse's keep their vectors: a bow set of 2,000 questions ~160 MB)
            folder = datasets.session_uploads(session)
            browse.forget_sets_under(folder)
            pairs.forget_pairs_under(folder)
        datasets.delete_uploads(session)

    demo.unload(end)
    if _UPLOAD_SWEEPER is None or not _UPLOAD_SWEEPER.is_alive():
        gone = datasets.sweep_orphan_uploads()  # once at start-up: the uploads of a server that stopped
        if gone:
            log.info("deleted the uploads of %d sessions of a server that stopped", gone)

        def loop() -> None:
            while True:
                try:
                    datasets.sweep_uploads(older_than_s)
                except Exception:  # noqa: BLE001 - a failed sweep must not end the thread; the next one retries
                    log.exception("sweeping old uploads failed")
                time.sleep(every_s)

        _UPLOAD_SWEEPER = threading.Thread(target=loop, name="bindlab-upload-sweeper", daemon=True)
        _UPLOAD_SWEEPER.start()
