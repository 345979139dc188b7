"""The *Download* panel every results tab shares: choose formats, press *Prepare files*, click a file to download it.

Files are written by :mod:`bindlab.present.exports` (the same files as the CLI's ``--export DIR``) into a fresh folder per
request, so two browser tabs exporting at once never overwrite each other's files. The folders live under
``$BINDLAB_HOME/exports/<session>/``: the session's folder is deleted when its browser session ends
(:func:`install` hooks ``demo.unload``), and a sweeper thread deletes export folders older than
``$BINDLAB_EXPORT_MAX_AGE_S`` (default 3600 s) every ``$BINDLAB_EXPORT_SWEEP_S`` (default 600 s), so a session that
never said goodbye leaves nothing behind either.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from bindlab.config import home
from bindlab.present import exports
from bindlab.present.safe_text import md_text
from bindlab.ui.gpu import GPU_QUEUE

log = logging.getLogger(__name__)

FORMAT_CHOICES = list(exports.FORMATS)
MAIN = "main"  # not a format: ticked, a download holds only the main files (exports.main_view); unticked, everything
MAIN_LABEL = "main files only (untick for everything)"
DEFAULT_CHOICES = [*FORMAT_CHOICES, MAIN]  # the panel's default: the main files, each in one format
HELP = (
    "By default a download holds the **main files** — the summary table, the per-item table, the chart — each "
    "once (a table as CSV, a chart as interactive HTML), and a `README.txt` saying what each file is. Untick "
    "*main files only* for **everything**: every table and chart in every ticked format: tables as **CSV** (opens "
    "in pandas / a spreadsheet) and **JSON** (with provenance), per-item results as **JSONL**, figures as "
    "**PNG**, **SVG** and standalone interactive **HTML** (PNG/SVG need Chromium on the server). Every download "
    "also holds `provenance.json`, and `…_all.zip` holds every file of the download in one."
)


@dataclass
class ExportPanel:
    """The components of one Download panel."""

    formats: gr.CheckboxGroup
    button: gr.Button
    files: gr.File
    note: gr.Markdown


def export_panel(prefix: str, what: str = "results") -> ExportPanel:
    """Lay out a collapsed *Download* accordion in the current Blocks; element ids start with ``prefix``."""
    with gr.Accordion(f"Download {what}", open=False, elem_id=f"{prefix}-export"):
        gr.Markdown(HELP)
        with gr.Row():
            formats = gr.CheckboxGroup(
                [*FORMAT_CHOICES, (MAIN_LABEL, MAIN)],
                value=DEFAULT_CHOICES,
                label="Formats, and which files",
                scale=3,
                elem_id=f"{prefix}-export-formats",
            )
            button = gr.Button("Prepare files", scale=1, elem_id=f"{prefix}-export-btn")
        files = gr.File(
            label="Files (click a name to download)",
            file_count="multiple",
            interactive=False,
            elem_id=f"{prefix}-export-files",
        )
        note = gr.Markdown(elem_id=f"{prefix}-export-note")
    return ExportPanel(formats, button, files, note)


def wire(panel: ExportPanel, fn: Callable[..., Any], inputs: Sequence[Any], api_name: str) -> None:
    """``panel.button`` runs ``fn(*inputs, formats)``, which returns ``(file paths, note)``. A download may score
    (a set not yet scored, another model's view) and draws figures, so it joins the model's concurrency group like
    every other scoring path."""
    panel.button.click(fn, [*inputs, panel.formats], [panel.files, panel.note], api_name=api_name, **GPU_QUEUE)


def deliver(
    view: exports.ResultView, provenance: dict[str, Any], formats: Sequence[str] | None
) -> tuple[list[str], str]:
    """Write ``view`` into a fresh folder; return the file paths for a ``gr.File`` (every single file, a
    ``README.txt`` saying what each is, then ``<view>_all.zip`` holding them all) and a one-line note.

    ``formats`` holding :data:`MAIN` (the panel's default) writes only the main files (:func:`exports.main_view`,
    one format per kind); without it, everything in every format given.
    """
    main = MAIN in (formats or [])
    formats = [f for f in formats or [] if f != MAIN]
    if not formats:
        raise ValueError(f"tick at least one format ({', '.join(FORMAT_CHOICES)})")
    written = exports.write_view(view, new_export_dir(), provenance, formats, bundle=True, main=main)
    what = "the main files" if main else "every file"
    note = (
        f"{len(written.paths) - 1} files ready ({what}; README.txt says what each is), and all of them in one "
        f"zip ({written.paths[-1].name})."
    )
    if written.notes:
        note += " " + " ".join(f"**Note:** {md_text(n)}." for n in written.notes)
    return [str(p) for p in written.paths], note


# --- where downloads live, and their cleanup ---------------------------------------------------------------------
NO_SESSION = "no-session"  # exports made outside a browser request (tests, scripts)
_SWEEPER: threading.Thread | None = None
_SWEEPER_LOCK = threading.Lock()


def _env_seconds(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name}={raw!r} must be a number of seconds (default {default:g})") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r} must be > 0 seconds (default {default:g})")
    return value


def max_age_s() -> float:
    """Export folders older than this are swept (``$BINDLAB_EXPORT_MAX_AGE_S``, default 3600)."""
    return _env_seconds("BINDLAB_EXPORT_MAX_AGE_S", 3600.0)


def sweep_every_s() -> float:
    """How often the sweeper runs (``$BINDLAB_EXPORT_SWEEP_S``, default 600)."""
    return _env_seconds("BINDLAB_EXPORT_SWEEP_S", 600.0)


def exports_root() -> Path:
    """``$BINDLAB_HOME/exports``: one folder per browser session, one fresh folder per download inside it."""
    return home() / "exports"


def session_dir(session: str | None) -> Path:
    """The export folder of one browser session (its hash, made safe as a folder name)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(session or ""))[:64] or NO_SESSION
    return exports_root() / name


def _current_session() -> str | None:
    """The session hash of the request this thread is serving, or None outside a Gradio request."""
    from gradio.context import LocalContext

    request = LocalContext.request.get(None)
    return getattr(request, "session_hash", None) if request is not None else None


def new_export_dir(session: str | None = None) -> Path:
    """A fresh folder for one export request under the session's folder (the current request's by default)."""
    folder = session_dir(session or _current_session())
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return Path(tempfile.mkdtemp(prefix="export-", dir=folder))
    except FileNotFoundError:  # the sweeper removed the empty session folder in between: make it again
        folder.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="export-", dir=folder))


def delete_session(session: str | None) -> bool:
    """Delete one session's export folder; True when there was one."""
    folder = session_dir(session)
    if not folder.is_dir():
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def end_session(request: gr.Request) -> None:
    """``demo.unload`` hook: the browser session ended, so its downloads go."""
    delete_session(getattr(request, "session_hash", None))


def sweep(root: str | Path | None = None, older_than_s: float | None = None, now: float | None = None) -> int:
    """Delete export folders (and then empty session folders) last changed more than ``older_than_s`` ago.

    Args:
        root: the exports root (default :func:`exports_root`).
        older_than_s: age in seconds (default :func:`max_age_s`).
        now: the current time (seconds since the epoch; for tests).

    Returns:
        How many export folders were deleted.
    """
    root = Path(root) if root is not None else exports_root()
    cutoff = (time.time() if now is None else now) - (max_age_s() if older_than_s is None else older_than_s)
    removed = 0
    if not root.is_dir():
        return 0
    for session in root.iterdir():
        if not session.is_dir() or session.is_symlink():
            continue
        session_old = session.stat().st_mtime < cutoff  # before its children go (that changes its mtime)
        for entry in session.iterdir():
            try:
                old = entry.lstat().st_mtime < cutoff
            except OSError:
                continue
            if old:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
                removed += 1
        try:
            if session_old and not any(session.iterdir()):
                session.rmdir()
        except OSError:
            pass
    return removed


def start_sweeper(every_s: float | None = None) -> threading.Thread:
    """Start the process's one sweeper thread (a daemon; later calls return the running one)."""
    global _SWEEPER
    with _SWEEPER_LOCK:
        if _SWEEPER is not None and _SWEEPER.is_alive():
            return _SWEEPER
        interval = sweep_every_s() if every_s is None else every_s

        def loop() -> None:
            while True:
                try:
                    sweep()
                except Exception:  # noqa: BLE001 - a failed sweep must not end the thread; the next one retries
                    log.exception("sweeping old export folders failed")
                time.sleep(interval)

        _SWEEPER = threading.Thread(target=loop, name="bindlab-export-sweeper", daemon=True)
        _SWEEPER.start()
        return _SWEEPER


def install(demo: gr.Blocks) -> None:
    """Hook the cleanup into an app: delete a session's downloads when it ends; sweep old ones on a timer."""
    demo.unload(end_session)
    start_sweeper()


def gradio_delete_cache() -> tuple[int, int]:
    """``(frequency, age)`` for ``gr.Blocks(delete_cache=...)``: Gradio's own copies of downloads and uploads are
    deleted on the same timer and age as the export folders."""
    return int(sweep_every_s()), int(max_age_s())
