"""Who may load a finetuned model: ``lora:<job_id>`` belongs to the owner of its job.

Outside public mode every model loads as before (the local user owns everything on the machine). In public mode
(:func:`bindlab.config.public_mode`) a page visitor may load ``lora:<job_id>`` (and ``lora:<job_id>/unscaled``)
only for jobs their own session started; any other job, a job that does not exist and a job *folder* path all get
the same one-line refusal, which names no owner and no path. A command line run in public mode is the local owner
and loads the local owner's jobs only.

:func:`check_model_access` is the one check; every study that loads an encoder for a page calls it
(:func:`bindlab.studies.browse.get_encoder`, which the Browse, Pairs, Attention, Map, Compare and Walkthrough
studies share; the Grounding session; the finetune config's base model). The Finetune tab's compare and the Walkthrough reach a job
only through the visitor's job manager (:func:`bindlab.studies.finetune.page_manager`), which refuses another
owner's job the same way. The visitor comes from the page event:
the UI's callback wrapper runs each event inside :func:`visitor` with the browser session's id, so a study needs
no session argument to know whose page asked.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar

from bindlab.config import public_mode

_VISITOR: ContextVar[str | None] = ContextVar("bindlab_visitor", default=None)
# lora:<job id>[/variant]: the job id grammar of bindlab.jobs.manager, and the variants of bindlab.encoders.lora
_LORA_NAME = re.compile(r"([\w-][\w.-]{0,79})(?:/(?:lines|unscaled))?/?")


@contextlib.contextmanager
def visitor(session: str | None) -> Iterator[None]:
    """Run the body as the page visitor with browser session id ``session`` (None: no page, e.g. the CLI)."""
    token = _VISITOR.set(str(session).strip() if session and str(session).strip() else None)
    try:
        yield
    finally:
        _VISITOR.reset(token)


def current_visitor() -> str | None:
    """The browser session id of the page event being served, or None outside one."""
    return _VISITOR.get()


def check_model_access(model: str, session: str | None = None) -> str:
    """Refuse a ``lora:`` model the asking visitor does not own (public mode only); return ``model`` unchanged.

    Args:
        model: an encoder id as typed (any backend; only ``lora:`` ids are checked).
        session: the visitor's browser session id; default: :func:`current_visitor` (None = the local owner).

    Raises:
        ValueError: in public mode, for a ``lora:`` id that is not one of the visitor's jobs — the same message
            whether the job belongs to someone else, does not exist, or is written as a folder path.
    """
    from bindlab.encoders.base import parse_encoder_id

    if not public_mode():
        return model
    eid = parse_encoder_id(str(model or "").strip())
    if eid.backend != "lora":
        return model
    session = session or current_visitor()
    match = _LORA_NAME.fullmatch(eid.name)
    if match is None or not _owns(session, match.group(1)):
        raise ValueError(f"lora:{eid.name[:80]}: not one of your finetuned models; on this server you can load "
                         "lora:<job_id> only for jobs you started in this browser session (see the Finetune tab's "
                         "job list)")
    return model


def _owns(session: str | None, job_id: str) -> bool:
    """True when the job exists and belongs to ``session``'s visitor (the local owner when ``session`` is None)."""
    from bindlab.jobs.manager import JobManager

    manager = JobManager(owner=f"session:{session}" if session else None, admin=False, show_logs=False)
    try:
        manager.job_dir(job_id)
    except KeyError:
        return False
    return True


__all__ = ["check_model_access", "current_visitor", "visitor"]
