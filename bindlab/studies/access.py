"""Who may load a finetuned model: ``lora:<job_id>`` belongs to the owner of its job.

Outside public mode every model loads as before (the local user owns everything on the machine). In public mode
(:func:`bindlab.config.public_mode`) a page visitor may load ``lora:<job_id>`` (and ``lora:<job_id>/unscaled``)
only for jobs their own session started; any other job, a job that does not exist and a job *folder* path all get
the same one-line refusal, which names no owner and no path. A command line run in public mode is the local owner
and loads the local owner's jobs only.

:func:`check_model_access` is the one check; every study that loads an encoder for a page calls it
(:func:`bindlab.studies.common.get_encoder`, which the Browse, Pairs, Attention, Map, Compare and Walkthrough
studies share; the Grounding session; the finetune config's base model). The Finetune tab's compare and the Walkthrough reach a job
only through the visitor's job manager (:func:`bindlab.studies.finetune.page_manager`), which refuses another
owner's job the same way. The visitor comes from the page event:
the UI's callback wrapper runs each event inside :func:`visitor` with the browser session's id, so a study needs
no session argument to know whose page asked.

In public mode a visitor also names no server path through a model id: :func:`check_model_access` takes only the
ids of :data:`bindlab.encoders.presets.PRESETS` (the bundled models and the listed hub checkpoints), ``bow`` and
the visitor's own ``lora:<job_id>``; every other id — a folder or file path (``st:/…``, ``hf:~/…``,
``open_clip:local-dir:/…``), an unlisted hub id, an unknown backend — gets :data:`MODEL_REFUSED`, before anything
touches the filesystem, in the same words whether the path exists or not. And every message a page shows passes
through :func:`redact`, which replaces the server's folders, the session id and upload tokens with neutral words.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

from bindlab.config import limits, public_mode

_VISITOR: ContextVar[str | None] = ContextVar("bindlab_visitor", default=None)
_ADDRESS: ContextVar[str | None] = ContextVar("bindlab_address", default=None)
# Owner tokens: a page keeps a random token in the browser (localStorage) and claims it for each new session, so a
# reload (a new session id) is the same job owner. Only a hash of the token is ever stored.
_OWNER_TOKEN = re.compile(r"[0-9a-f]{32}")
_CLAIMS: OrderedDict[str, str] = OrderedDict()  # session id -> owner name, least recently claimed or used first
_CLAIM_ADDRESS: dict[str, str] = {}  # session id -> (a hash of) the address that claimed it
_CLAIMS_LOCK = threading.Lock()
MAX_CLAIMS = 10_000
# Claims one client address may hold: past it that address's own oldest claim goes, so a flood of page loads from
# one address cannot push another visitor's claim (and with it their jobs and lora: models) out of the table.
MAX_CLAIMS_PER_ADDRESS = 64
# lora:<job id>[/variant]: the job id grammar of bindlab.jobs.manager, and the variants of bindlab.encoders.lora
_LORA_NAME = re.compile(r"([\w-][\w.-]{0,79})(?:/(?:lines|unscaled))?/?")
# A hub revision (branch, tag or commit) pinned on a listed id: a plain name, never a path.
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# The one refusal of a model id in public mode: it quotes nothing of the id and says nothing about any path.
MODEL_REFUSED = (
    "that model is not offered on this server: choose a listed model (bow, minilm, toy:clip, toy:shared, "
    "toy:negclip, or a CLIP / SigLIP / Qwen3-VL hub id from the model list in docs/models.md) or "
    "lora:<job_id> for a model you finetuned in this browser; folders and files on the server "
    "cannot be named as models"
)


@contextlib.contextmanager
def visitor(session: str | None, address: str | None = None) -> Iterator[None]:
    """Run the body as the page visitor with browser session id ``session`` (None: no page, e.g. the CLI), asking
    from client ``address`` (None: unknown)."""
    token = _VISITOR.set(str(session).strip() if session and str(session).strip() else None)
    where = _ADDRESS.set(str(address).strip() if address and str(address).strip() else None)
    try:
        yield
    finally:
        _ADDRESS.reset(where)
        _VISITOR.reset(token)


def current_visitor() -> str | None:
    """The browser session id of the page event being served, or None outside one."""
    return _VISITOR.get()


def current_address() -> str | None:
    """The client address of the page event being served (a hash of it: addresses are not stored), or None."""
    address = _ADDRESS.get()
    return "addr:" + hashlib.sha256(address.encode()).hexdigest()[:16] if address else None


def claim_owner(session: str | None, token: str | None, address: str | None = None) -> str:
    """Make ``session``'s jobs those of the browser's owner token, and return the token the browser should keep.

    A page keeps a random token in the browser and claims it whenever it opens (a new session id): a reload then
    sees, follows and cancels the jobs it started before. A missing or malformed token gets a new one (32 hex
    digits). Only a hash of the token names the owner; the token itself is never stored on the server.

    Raises:
        ValueError: no session id.
    """
    if not str(session or "").strip():
        raise ValueError("this page has no session id; reload the page")
    token = str(token or "").strip().lower()
    if not _OWNER_TOKEN.fullmatch(token):
        token = secrets.token_hex(16)
    owner = "owner:" + hashlib.sha256(token.encode()).hexdigest()[:32]
    session = str(session).strip()
    where = "addr:" + hashlib.sha256(address.encode()).hexdigest()[:16] if address else ""
    with _CLAIMS_LOCK:
        _CLAIMS[session] = owner
        _CLAIMS.move_to_end(session)
        if where:
            _CLAIM_ADDRESS[session] = where
            mine = [s for s in _CLAIMS if _CLAIM_ADDRESS.get(s) == where]
            for old in mine[: max(0, len(mine) - MAX_CLAIMS_PER_ADDRESS)]:
                _CLAIMS.pop(old, None)
                _CLAIM_ADDRESS.pop(old, None)
        while len(_CLAIMS) > MAX_CLAIMS:
            gone, _ = _CLAIMS.popitem(last=False)
            _CLAIM_ADDRESS.pop(gone, None)
    return token


def job_owner(session: str | None) -> str | None:
    """The job owner of a page session: its claimed owner token's (:func:`claim_owner`), else ``session:<id>``;
    None without a session (the local owner)."""
    session = str(session or "").strip()
    if not session:
        return None
    with _CLAIMS_LOCK:
        owner = _CLAIMS.get(session)
        if owner is None:
            return f"session:{session}"
        _CLAIMS.move_to_end(session)  # in use: the last to go when the table is full
        return owner


def check_model_access(model: str, session: str | None = None) -> str:
    """In public mode, refuse a model id a visitor may not load; return ``model`` unchanged (locally: always).

    Public mode takes three kinds of id, and nothing else: a listed id (:func:`offered_model`: the presets of
    :mod:`bindlab.encoders.presets`, ``bow`` among them, optionally pinned to a hub revision), and ``lora:<job_id>``
    (or ``/unscaled``, ``/lines``) for a job of the asking visitor's own. The check parses the id only: a refused id
    never reaches the filesystem, so the answer is the same whether a path it names exists or not.

    Args:
        model: an encoder id as typed (any backend).
        session: the visitor's browser session id; default: :func:`current_visitor` (None = the local owner).

    Raises:
        ValueError: in public mode, :data:`MODEL_REFUSED` for an id that is not listed (a server path, ``..``,
            ``local-dir:``, an unlisted hub id, an unknown backend); for a ``lora:`` id that is not one of the
            visitor's jobs, one message whether the job belongs to someone else, does not exist, or is written as
            a folder path. An empty id gets the parser's own message.
    """
    from bindlab.encoders.base import EncoderError, parse_encoder_id

    if not public_mode():
        return model
    text = str(model or "").strip()
    if not text:
        parse_encoder_id(text)  # the parser's message: give an id
    try:
        eid = parse_encoder_id(text)
    except EncoderError:
        raise ValueError(MODEL_REFUSED) from None
    if eid.backend != "lora":
        if not offered_model(text):
            raise ValueError(MODEL_REFUSED)
        check_public_revision(eid)
        check_model_fits(eid)
        return model
    session = session or current_visitor()
    match = _LORA_NAME.fullmatch(eid.name)
    if match is None or not _owns(session, match.group(1)):
        raise ValueError(
            f"lora:{eid.name[:80]}: not one of your finetuned models; on this server you can load "
            "lora:<job_id> only for jobs you started in this browser (see the Finetune tab's job "
            "list)"
        )
    return model


def _names_a_path(name: str) -> bool:
    """True when an id's name part reads as a filesystem path (absolute, home, relative, climbing, open_clip's
    ``local-dir:``)."""
    return (
        name.startswith(("/", "~", ".", "\\")) or ".." in name or "local-dir:" in name or "\x00" in name or "\\" in name
    )


@lru_cache(maxsize=1)
def _preset_ids() -> frozenset[str]:
    from bindlab.encoders.base import parse_encoder_id
    from bindlab.encoders.presets import PRESETS

    return frozenset(str(parse_encoder_id(p.id)) for p in PRESETS)


def offered_model(model: str) -> bool:
    """True when a visitor may name ``model`` in public mode without owning anything: a preset id
    (:data:`bindlab.encoders.presets.PRESETS`: ``minilm``, ``bow``, the toy models, the listed hub checkpoints;
    an alias and its expansion alike), optionally ``@revision`` with a plain revision name. Never a path.
    ``lora:`` ids are not listed here (see :func:`check_model_access`)."""
    from bindlab.encoders.base import EncoderError, EncoderId, parse_encoder_id

    try:
        eid = parse_encoder_id(str(model or "").strip())
    except EncoderError:
        return False
    if _names_a_path(eid.name):
        return False
    if eid.revision is not None and (not _REVISION.fullmatch(eid.revision) or ".." in eid.revision):
        return False
    return str(EncoderId(eid.backend, eid.name)) in _preset_ids()


PUBLIC_REVISIONS_ENV = "BINDLAB_PUBLIC_REVISIONS"  # comma list of id@revision a public server also offers
SERVER_MEMORY_ENV = "BINDLAB_SERVER_MEMORY_GB"  # memory the server declares for models (default: the machine's)
BYTES_PER_PARAM = 4  # float32 weights, as models load on CPU
HEADROOM = 1.5  # weights x 1.5 must fit: room for activations, the app and other visitors' work


def check_public_revision(eid: Any) -> None:
    """Public mode: a hub id pinned to a revision only when the server lists that pin (``$BINDLAB_PUBLIC_REVISIONS``,
    e.g. ``hf:openai/clip-vit-base-patch32@main``); any other revision of a listed model is refused — each one is
    a separate download and a separate copy in memory.

    Raises:
        ValueError: naming the id without its revision and the setting.
    """
    if eid.revision is None:
        return
    listed = {x.strip() for x in os.environ.get(PUBLIC_REVISIONS_ENV, "").split(",") if x.strip()}
    if str(eid) not in listed:
        raise ValueError(
            f"{eid.backend}:{eid.name} is offered here at its default revision only: drop the "
            f"'@{eid.revision[:40]}' (the server lists pinned revisions in {PUBLIC_REVISIONS_ENV})"
        )


def server_memory_gb() -> float:
    """Memory the server declares for models: ``$BINDLAB_SERVER_MEMORY_GB``, else the machine's physical memory."""
    raw = os.environ.get(SERVER_MEMORY_ENV, "").strip()
    if raw:
        try:
            value = float(raw)
        except ValueError:
            value = float("nan")
        if not value > 0 or value == float("inf"):
            raise ValueError(f"{SERVER_MEMORY_ENV}={raw!r} must be a positive number of GB")
        return value
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9


def check_model_fits(eid: Any) -> None:
    """Public mode: a listed model only when its float32 weights, times :data:`HEADROOM`, fit the memory the server
    declares (:func:`server_memory_gb`), so a visitor cannot make a 16 GB CPU Space load an 8B model (35 GB of
    weights); a 2B one (8.5 GB) fits there.

    Raises:
        ValueError: naming the model's size, the server's memory and what to pick instead.
    """
    from bindlab.encoders.base import EncoderId, parse_encoder_id
    from bindlab.encoders.presets import PRESETS

    key = str(EncoderId(eid.backend, eid.name))
    sizes = {str(parse_encoder_id(p.id)): p.params_m for p in PRESETS}
    params_m = sizes.get(key, 0.0)
    need_gb = params_m * 1e6 * BYTES_PER_PARAM * HEADROOM / 1e9
    have_gb = server_memory_gb()
    if need_gb > have_gb:
        raise ValueError(
            f"{key} is too large for this server: about {params_m / 1000:.1f} B parameters need "
            f"{need_gb:.0f} GB here (float32 weights with room to run), and the server declares "
            f"{have_gb:.0f} GB ({SERVER_MEMORY_ENV}); pick a smaller model, e.g. a CLIP or SigLIP id"
        )


def _owns(session: str | None, job_id: str) -> bool:
    """True when the job exists and belongs to ``session``'s visitor (the local owner when ``session`` is None)."""
    from bindlab.jobs.manager import JobManager

    manager = JobManager(owner=job_owner(session), admin=False, show_logs=False)
    try:
        manager.job_dir(job_id)
    except KeyError:
        return False
    return True


# --- what a page may show: no server path, session id or upload token ----------------------------------------------
_SEGMENT = r"[^/\s'\"()<>\[\]{},;:`]+"  # one path segment as it appears in a message (":" ends it: file.jsonl:3)
_BEFORE = r"(?<![\w.~-])"  # a path starts here, not inside a longer name (/var/tmp is not /tmp)
_AFTER = r"(?![\w.~-])"  # and the root ends here (/tmp/home2 is not /tmp/home)


def _spellings(path: str | os.PathLike) -> set[str]:
    """A folder as given and as its realpath, without a trailing slash; the filesystem root is left out."""
    out = set()
    for p in (os.fspath(path), os.path.realpath(path)):
        p = p.rstrip("/")
        if len(p) > 1:
            out.add(p)
    return out


def redact(message: str, session: str | None = None) -> str:
    """In public mode, ``message`` with every server folder, the session id and the session's upload tokens
    replaced by neutral words; locally ``message`` unchanged. A backstop under messages written to name no path.

    - the upload folder (``$BINDLAB_HOME/uploads/<session>/<token>``) -> ``[your upload]`` (``[an upload]`` for
      another session's), so ``…/mcq.jsonl:3`` reads ``[your upload]/mcq.jsonl:3``;
    - a data root (``$BINDLAB_HOME`` and the allowed data roots) -> its folder name, as the data picker labels it;
    - the app's folder (the checkout or site-packages) and the current folder -> ``[app]``;
    - the temp folder and anything under it -> the file name alone; the user's home folder -> ``~``;
    - the session id -> ``[session]``; this session's upload tokens -> ``[upload]``.

    Args:
        message: the text a page is about to show.
        session: the visitor's browser session id; default: :func:`current_visitor`.
    """
    if not message or not public_mode():
        return message
    import tempfile

    from bindlab.config import data_roots, home, repo_root
    from bindlab.studies.datasets import session_uploads, uploads_root

    session = session or current_visitor()
    own = session_uploads(session)
    text = str(message)
    # longest first: $BINDLAB_HOME/uploads before $BINDLAB_HOME before the temp folder holding it
    rules: list[tuple[str, str]] = []
    rules += [(s, "upload") for s in _spellings(uploads_root())]
    for root in {*data_roots(), home()}:
        rules += [(s, f"name:{Path(s).name}") for s in _spellings(root)]
    rules += [(s, "name:[app]") for s in _spellings(repo_root()) | _spellings(Path.cwd())]
    rules += [(s, "temp") for s in _spellings(tempfile.gettempdir())]
    rules += [(s, "name:~") for s in _spellings(Path.home())]
    for spelling, kind in sorted(set(rules), key=lambda r: -len(r[0])):
        if kind == "upload":
            pattern = re.compile(_BEFORE + re.escape(spelling) + rf"(?:/({_SEGMENT}))?(?:/{_SEGMENT})?" + _AFTER)
            text = pattern.sub(lambda m: "[your upload]" if m.group(1) in (None, own.name) else "[an upload]", text)
        elif kind == "temp":
            pattern = re.compile(_BEFORE + re.escape(spelling) + rf"((?:/{_SEGMENT})*)" + _AFTER)
            text = pattern.sub(lambda m: m.group(1).rsplit("/", 1)[-1] or "[temp]", text)
        else:
            label = kind.removeprefix("name:")
            text = re.sub(_BEFORE + re.escape(spelling) + _AFTER, lambda m, label=label: label, text)
    tokens = {own.name} | ({str(session)} if session else set())
    try:
        tokens |= {e.name for e in own.iterdir()} if own.is_dir() else set()
    except OSError:
        pass
    for token in sorted((t for t in tokens if len(t) >= 6), key=len, reverse=True):
        text = text.replace(token, "[session]" if token in (own.name, str(session)) else "[upload]")
    return text


__all__ = [
    "MODEL_REFUSED",
    "check_model_access",
    "claim_owner",
    "current_address",
    "current_visitor",
    "job_owner",
    "offered_model",
    "redact",
    "visitor",
    "visitor_left",
]


def visitor_left(session: str | None) -> None:
    """A browser session ended (``demo.unload``): its requests still running stop at their next model turn
    (:func:`bindlab.encoders.admission.visitor_left`)."""
    from bindlab.encoders import admission

    if session:
        admission.visitor_left(f"session:{session}")


@contextlib.contextmanager
def request_scope(session: str | None, address: str | None) -> Iterator[None]:
    """Run an app request under the public-mode share of the model (:mod:`bindlab.encoders.admission`): a time
    limit, and a heavy slot (one per session and per client address, ``max_heavy_requests`` in all) once it sends
    more than ``heavy_request_items`` items through the model. Locally (or with those limits at 0) nothing is
    limited."""
    from bindlab.encoders import admission

    lims = limits()
    if not public_mode() or not (lims.max_request_seconds or lims.heavy_request_items):
        yield
        return
    keys = (f"session:{session}" if session else "", f"addr:{address}" if address else "")
    with admission.request_scope(keys, lims.max_request_seconds, lims.heavy_request_items, lims.max_heavy_requests):
        yield
