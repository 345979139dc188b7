"""Shareable links: the view on screen carried in the page's address, nothing stored on the server.

A *Share this view* button in Browse and in Grounding writes a link such as
``http://host:7860/?tab=browse&model=minilm&pairing=tt&q=n02-ind-003`` or
``http://host:7860/?tab=grounding&model=toy:clip&factor=pattern&value=striped&alpha=1.25``; opening it reopens that
view: the tab selected, the inputs filled, the scoring run, the same question (Browse) or value and α (Grounding).
The link is the whole state: the page's load events read it from the address (every queued Gradio request carries
the page's query string, ``gr.Request.query_params``) and nothing is kept per session to remember it.

A link is untrusted input — anyone can craft one — so every parameter is checked as the tabs check what a visitor
types, and more strictly: a model must be one a visitor may load (:func:`bindlab.studies.access.check_model_access`)
*and* a listed one or ``lora:<job_id>``, never a path; data only the embedded default (no ``data``) or a set offered
to everyone (``set:<label>``), never a path or an upload; α a finite number on the slider's range; every value short
and printable. A link that fails a check opens the default view with one sentence saying which parameter was
refused and why (never an error toast); a question or value that the scored set does not hold is said the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import gradio as gr

from bindlab.present.safe_text import md_text
from bindlab.studies import access, datasets
from bindlab.studies.browse import PAIRINGS
from bindlab.studies.grounding import FACTORS

TABS = ("browse", "grounding")
KINDS = {"browse": "mcq", "grounding": "grid"}  # the data kind of each tab's data input
ALPHA_RANGE = (0.0, 8.0)  # the Grounding slider's range and step
ALPHA_STEP = 0.05
MAX_VALUE = 200  # characters of one parameter
MAX_QUERY = 2000  # characters of the whole query string
MAX_BASE = 500  # characters of the page address a link starts with
KEYS = {
    "browse": ("tab", "model", "data", "pairing", "q"),
    "grounding": ("tab", "model", "data", "factor", "value", "alpha"),
}
OURS = frozenset(k for keys in KEYS.values() for k in keys)
_LORA = re.compile(r"lora:[\w-][\w.-]{0,79}(?:/(?:lines|unscaled))?")
_BASE = re.compile(r"[A-Za-z0-9._~:/?#@!$&'()*+,;=%\[\]-]+")  # an address's characters: no quote, space or angle


@dataclass(frozen=True)
class Link:
    """One shared view. ``data`` is ``""`` (the embedded default) or ``"set:<label>"``; ``pairing`` and ``question``
    belong to Browse, ``factor``, ``value`` and ``alpha`` to Grounding (``None``: the slider's default)."""

    tab: str
    model: str
    data: str = ""
    pairing: str = "tt"
    question: str = ""
    factor: str = "pattern"
    value: str = ""
    alpha: float | None = None


# --- checks: each raises ValueError naming the parameter and what it may be -----------------------------------------
def _text(name: str, raw: Any, required: bool = False) -> str:
    """A parameter as text: at most :data:`MAX_VALUE` printable characters (stripped)."""
    if not isinstance(raw, str):
        raise ValueError(f"{name}: not text")
    text = raw.strip()
    if len(text) > MAX_VALUE:
        raise ValueError(f"{name}: longer than {MAX_VALUE} characters")
    if not text.isprintable():
        raise ValueError(f"{name}: holds control characters")
    if required and not text:
        raise ValueError(f"{name}: missing")
    return text


def check_model(model: Any) -> str:
    """A model id a link may name: one a visitor may load here (the tabs' access check, which in public mode also
    refuses another visitor's ``lora:`` job) and a listed id or ``lora:<job_id>`` — never a path, in any mode."""
    text = _text("model", model, required=True)
    try:
        access.check_model_access(text)
    except ValueError as e:
        raise ValueError(f"model: {e}") from None
    if not (access.offered_model(text) or _LORA.fullmatch(text)):
        raise ValueError(
            "model: a link may name only a listed model (minilm, bow, toy:clip, …, a listed hub id) or "
            "lora:<job_id>, never a file or folder"
        )
    return text


def check_data(data: Any, tab: str) -> str:
    """``""`` (the embedded default) or the choice value of a set offered to everyone now (``set:<label>``)."""
    text = _text("data", data)
    if text and not (text.startswith(datasets.SET_PREFIX) and datasets.is_offered(KINDS[tab], text)):
        raise ValueError(
            "data: not a set offered here (a link carries the embedded default or a listed set, never a "
            "path or an upload)"
        )
    return text


def check_alpha(alpha: Any) -> float:
    """α as a finite number on the slider's range, snapped to its step."""
    try:
        value = float(alpha)
    except (TypeError, ValueError):
        raise ValueError("alpha: not a number") from None
    lo, hi = ALPHA_RANGE
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"alpha: must be a finite number from {lo:g} to {hi:g}")
    return round(round(value / ALPHA_STEP) * ALPHA_STEP, 2)


def check_link(link: Link) -> Link:
    """``link`` with every field checked (and α snapped to the slider's step); raises ValueError on the first bad
    field."""
    if link.tab not in TABS:
        raise ValueError(f"tab: must be one of {', '.join(TABS)}")
    model = check_model(link.model)
    data = check_data(link.data, link.tab)
    if link.tab == "browse":
        pairing = _text("pairing", link.pairing).lower() or "tt"
        if pairing not in PAIRINGS:
            raise ValueError(f"pairing: must be one of {', '.join(PAIRINGS)}")
        return Link("browse", model, data, pairing=pairing, question=_text("q", link.question))
    factor = _text("factor", link.factor) or "pattern"
    if factor not in FACTORS:
        raise ValueError(f"factor: must be one of {', '.join(FACTORS)}")
    alpha = None if link.alpha is None else check_alpha(link.alpha)
    return Link("grounding", model, data, factor=factor, value=_text("value", link.value), alpha=alpha)


# --- the address: build and read ------------------------------------------------------------------------------------
def build_query(link: Link) -> str:
    """The query string of ``link`` (checked first), ``?tab=…&…``; empty fields are left out."""
    link = check_link(link)
    if link.tab == "browse":
        pairs = [
            ("tab", "browse"),
            ("model", link.model),
            ("data", link.data),
            ("pairing", link.pairing),
            ("q", link.question),
        ]
    else:
        alpha = "" if link.alpha is None else f"{link.alpha:g}"
        pairs = [
            ("tab", "grounding"),
            ("model", link.model),
            ("data", link.data),
            ("factor", link.factor),
            ("value", link.value),
            ("alpha", alpha),
        ]
    return "?" + urlencode([(k, v) for k, v in pairs if v], safe=":")


def build_url(base: str | None, link: Link) -> str:
    """``base`` (the page's address, ``scheme://host/path``) followed by :func:`build_query`; an address that is not
    a plain http(s) one gives the query alone (a link relative to the page)."""
    query = build_query(link)
    base = str(base or "").strip()
    parts = urlsplit(base) if len(base) <= MAX_BASE and _BASE.fullmatch(base or "-") else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        return query
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", "", "")) + query


def parse_query(params: str | Mapping[str, str] | Iterable[tuple[str, str]]) -> Link | None:
    """The link a page address carries, checked; None when it carries none (no ``tab``; Gradio's own parameters and
    any other unknown one are ignored).

    Args:
        params: a query string (with or without its "?"), a mapping, or (key, value) pairs (``query_params``'s
            ``multi_items()``: a key given twice is refused).

    Raises:
        ValueError: a parameter that fails its check (the message names it), a key of ours given twice, or a query
            string longer than :data:`MAX_QUERY` characters.
    """
    if isinstance(params, str):
        if len(params) > MAX_QUERY:
            raise ValueError(f"the link is longer than {MAX_QUERY} characters")
        items = parse_qsl(params.lstrip("?"), keep_blank_values=True)
    elif isinstance(params, Mapping):
        items = list(params.items())
    else:
        items = list(params)
    if sum(len(str(k)) + len(str(v)) + 2 for k, v in items) > MAX_QUERY:
        raise ValueError(f"the link is longer than {MAX_QUERY} characters")
    found: dict[str, str] = {}
    for key, value in items:
        if key not in OURS:
            continue
        if key in found:
            raise ValueError(f"{key}: given twice")
        found[key] = value
    if not found:
        return None
    tab = _text("tab", found.get("tab", ""), required=True).lower()
    if tab not in TABS:
        raise ValueError(f"tab: must be one of {', '.join(TABS)}")
    extra = sorted(set(found) - set(KEYS[tab]))
    if extra:
        raise ValueError(f"{extra[0]}: not a parameter of the {tab} tab")
    if tab == "browse":
        link = Link(
            "browse",
            found.get("model", ""),
            found.get("data", ""),
            pairing=found.get("pairing", "tt"),
            question=found.get("q", ""),
        )
    else:
        alpha = found.get("alpha")
        link = Link(
            "grounding",
            found.get("model", ""),
            found.get("data", ""),
            factor=found.get("factor", "pattern"),
            value=found.get("value", ""),
            alpha=None if alpha is None or not alpha.strip() else alpha,
        )  # type: ignore[arg-type]
    return check_link(link)


# --- in the app -------------------------------------------------------------------------------------------------------
def refused(reason: Any) -> str:
    """The page's one sentence on a link it could not open (Markdown, the reason escaped)."""
    return (
        f"**This link could not be opened** ({md_text(access.redact(str(reason)))}); showing the default view instead."
    )


def page_link(request: Any) -> tuple[Link | None, str]:
    """The link in the address of the page that sent ``request`` (a ``gr.Request``): ``(link, "")``, ``(None, "")``
    when it carries none, ``(None, message)`` when it carries one that fails a check."""
    params = getattr(request, "query_params", None)
    if params is None:
        return None, ""
    items = params.multi_items() if hasattr(params, "multi_items") else list(dict(params).items())
    try:
        return parse_query(items), ""
    except ValueError as e:
        return None, refused(e)


def data_path(link: Link) -> str:
    """The server path of the link's data for the page asking (``""``: the tab's embedded default)."""
    return datasets.resolve_choice(link.data, access.current_visitor(), KINDS[link.tab]) if link.data else ""


def data_input(link: Link, public: bool, session: str | None) -> Any:
    """What the tab's data input gets for the link's data: in public mode the dropdown's choice value (with this
    session's choices), locally the path the textbox holds."""
    if not public:
        return data_path(link)
    return {"__type__": "update", "value": link.data, "choices": datasets.offered_choices(KINDS[link.tab], session)}


def link_data(tab: str, path: str | None) -> str:
    """The ``data`` a link carries for the data the tab used (a server path; ``""``: the embedded default).

    Raises:
        ValueError: an upload (deleted with its session) or a path that is no set offered to everyone.
    """
    path = str(path or "").strip()
    if not path:
        return ""
    if len(path) > 4096 or "\x00" in path:
        raise ValueError("a link carries only the embedded default or a listed set")
    choice = datasets.choice_value(KINDS[tab], path, access.current_visitor())
    if choice is None or not choice.startswith(datasets.SET_PREFIX):
        raise ValueError(
            "a link carries only the embedded default or a listed set: an uploaded file or a typed path "
            "cannot travel in it"
        )
    return choice


def share_note(url: str) -> str:
    """The line under a fresh link."""
    return (
        "Anyone who opens this link on this server sees this view: the link carries the settings, nothing is stored."
        if url
        else ""
    )


BASE_JS = "(...args) => [...args.slice(0, -1), window.location.origin + window.location.pathname]"
"""The share buttons' ``js``: the last input (a hidden box) becomes the page's address, so the link names the
address the visitor sees (a proxy's or a Space's), not the one the server listens on."""


def install(demo: Any, tabs: Any, hooks: Mapping[str, Mapping[str, Any]]) -> None:
    """On page load, select the tab a shared link names, then run each tab's ``"link"`` hook (``{"fn", "inputs",
    "outputs"}`` and optionally ``"progress_on"``, the components that show its progress; in the GPU queue: it may
    load a model), which opens the link's view when the link is its tab's and changes nothing otherwise. Browse, the first tab, opens its links in its own page-load event."""
    from bindlab.ui.common import friendly
    from bindlab.ui.gpu import GPU_QUEUE

    def select(request: gr.Request) -> Any:
        link, _ = page_link(request)
        return gr.update(selected=link.tab) if link is not None else gr.update()

    read = demo.load(friendly(select), None, [tabs], api_name=False, show_progress="hidden")
    for hook in hooks.values():
        if "link" in hook:
            h = hook["link"]
            # its progress only where the hook says (a page without a link runs it too, as a no-op)
            read.then(
                h["fn"], h["inputs"], h["outputs"], api_name=False, show_progress_on=h.get("progress_on"), **GPU_QUEUE
            )
