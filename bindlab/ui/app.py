"""The Gradio app: one module per tab under ``bindlab.ui``, listed in :data:`TABS`; ``build_app()`` is the factory."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

# An offline tool: no usage analytics or version check from Gradio unless the person running the app asks for it.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# Events without their own concurrency limit run at most 2 at a time each. Set here, before any Blocks exists, rather
# than by ``demo.queue(default_concurrency_limit=2)``: every Blocks already has a queue, and calling queue() again
# rebuilds the whole FastAPI app (about 0.5 s of start-up on a quiet 2-core machine, for nothing).
os.environ.setdefault("GRADIO_DEFAULT_CONCURRENCY_LIMIT", "2")

import gradio as gr  # noqa: E402

from bindlab import heavy
from bindlab.config import private_home_paths, public_mode, served_roots
from bindlab.ui import attention as attention_tab
from bindlab.ui import browse, glossary, layout, share
from bindlab.ui import compare as compare_tab
from bindlab.ui import embedding_map as map_tab
from bindlab.ui import exports as exports_ui
from bindlab.ui import finetune as finetune_tab
from bindlab.ui import grounding as grounding_tab
from bindlab.ui import pairs as pairs_tab
from bindlab.ui import walkthrough as walkthrough_tab
from bindlab.ui.common import (
    install_owner_token,
    install_session_release,
    install_uploads,
    max_upload_bytes,
    quiet_refusals,
)
from bindlab.ui.gpu import GPU_QUEUE

INTRO = """# bindlab — attribute–object binding lab
Does an embedding keep *a red cube and a blue sphere* apart from *a blue cube and a red sphere*?
Everything here runs offline on the embedded default (generated benchmarks, the bundled MiniLM text encoder, a
bag-of-words baseline and bindlab's toy vision–language models); point it at your own files and encoders when you
have them. Tabs: **Browse** SABER-style MCQs · **Pairs** single-edit 2x2 pairs · **Grounding** the α slider ·
**Attention** binding margins per layer · **Finetune** text-only LoRA jobs · **Map** UMAP/PCA of the embeddings · **Compare** several encoders on one suite ·
**Walkthrough** a seven-step tour for teaching."""

# (tab label, tab id, builder). A builder lays out its tab inside the current Blocks and may return a dict
# {"event_fn", "inputs", "outputs"} to run when the tab is first shown: at page load for the first tab, on its first
# selection for the others, so a model a later tab checks does not load while the first tab is being drawn ("gpu":
# True puts the first tab's in the GPU queue, see bindlab.ui.gpu; a later tab's always goes there), and/or {"wire": fn(tabs, hooks)} to wire events across tabs once all are built (hooks: tab
# id -> that tab's dict, {} for a tab that returned nothing; so the keys are the tabs this app has).
TABS: list[tuple[str, str, Callable[[], Any]]] = [
    ("Browse", "browse", browse.build_tab),
    ("Pairs", "pairs", pairs_tab.build_tab),
    ("Grounding", "grounding", grounding_tab.build_tab),
    ("Attention", "attention", attention_tab.build_tab),
    ("Finetune", "finetune", finetune_tab.build_tab),
    ("Map", "map", map_tab.build_tab),
    ("Compare", "compare", compare_tab.build_tab),
    ("Walkthrough", "walkthrough", walkthrough_tab.build_tab),  # last: researchers land on Browse
]

# Extra CSS of each tab module, joined into the page's stylesheet; the page-wide layout rules last.
CSS = "\n".join(
    [
        browse.CSS,
        grounding_tab.CSS,
        finetune_tab.CSS,
        pairs_tab.CSS,
        attention_tab.CSS,
        map_tab.CSS,
        walkthrough_tab.CSS,
        compare_tab.CSS,
        layout.CSS,
    ]
)


def build_app() -> gr.Blocks:
    """Build the Blocks app (nothing heavy happens here; models load on first use)."""
    # delete_cache: Gradio's copies of downloads and uploads go on the export sweeper's timer and age
    with gr.Blocks(title="bindlab", delete_cache=exports_ui.gradio_delete_cache()) as demo:
        gr.Markdown(INTRO)
        glossary.build_glossary()  # every term the page shows, in one closed accordion
        hooks: dict[str, dict[str, Any]] = {}
        shown: dict[str, gr.Tab] = {}
        with gr.Tabs(elem_id="bl-tabs") as tabs:
            for label, tab_id, build in TABS:
                with gr.Tab(label, id=tab_id) as shown[tab_id]:
                    hooks[tab_id] = build() or {}  # every tab is listed: a wire hook may ask which tabs exist
        tabs.change(None, None, None, js=layout.RESIZE_JS, api_name=False)  # plots drawn while hidden: fit them
        share.install(demo, tabs, hooks)  # a shared link (?tab=…) selects its tab and opens its view on page load
        first = TABS[0][1]
        for tab_id, hook in hooks.items():
            if "wire" in hook:
                hook["wire"](tabs, hooks)
            if "event_fn" not in hook:
                continue
            if tab_id == first:
                demo.load(
                    hook["event_fn"],
                    hook["inputs"],
                    hook["outputs"],
                    api_name=False,
                    **(GPU_QUEUE if hook.get("gpu") else {}),
                )
            else:  # in the GPU queue: it finishes before the tab's own action, which would otherwise be overwritten
                done = gr.State(False)
                shown[tab_id].select(
                    _first_time(hook["event_fn"], len(hook["outputs"])),
                    [done, *hook["inputs"]],
                    [done, *hook["outputs"]],
                    api_name=False,
                    **GPU_QUEUE,
                )
        exports_ui.install(demo)  # a session's downloads are deleted when it ends, old ones on a timer
        install_uploads(demo)  # and its uploads (public mode's upload widgets)
        install_owner_token(demo)  # a visitor's jobs belong to the browser: a reload keeps them
        quiet_refusals(demo)  # public mode: an input Gradio refuses logs one line, not a traceback
        install_session_release(demo)  # last of the unloads: Gradio's copy of an ended session goes at once
    calm_queue(demo)
    return demo


# Gradio's queue looks for new work every 1 ms while it has none, and for progress updates every 10 ms: an app with
# no visitor used 0.87 s of CPU per 10 s in its event-loop thread (/proc thread times over 10 s, no page open, quiet
# 2-core machine, 2026-12-02) — on a Space or a classroom server, CPU spent on nothing. Polling every 20 ms / 50 ms:
# 0.24 s per 10 s (every 10 ms: 0.39; every 50 ms: 0.12). A click's event starts at most 20 ms later (about a frame);
# Gradio itself polls every 50 ms on Windows.
QUEUE_IDLE_POLL_S = 0.02
PROGRESS_IDLE_POLL_S = 0.05


def calm_queue(demo: gr.Blocks) -> None:
    """Make ``demo``'s queue poll for work every :data:`QUEUE_IDLE_POLL_S` (and for progress every
    :data:`PROGRESS_IDLE_POLL_S`) while idle, instead of Gradio's 1 ms / 10 ms. Does nothing to a queue without
    those settings (another Gradio version)."""
    queue = getattr(demo, "_queue", None)
    if queue is None:
        return
    if hasattr(queue, "sleep_when_free"):
        queue.sleep_when_free = max(queue.sleep_when_free, QUEUE_IDLE_POLL_S)
    if hasattr(queue, "progress_update_sleep_when_free"):
        queue.progress_update_sleep_when_free = max(queue.progress_update_sleep_when_free, PROGRESS_IDLE_POLL_S)


def _first_time(fn: Callable[..., Any], n_outputs: int) -> Callable[..., tuple[Any, ...]]:
    """``fn`` run on a tab's first selection in a page only: later selections leave its outputs as they are (a tab
    selected again must not lose what the visitor did there). The flag stays False when ``fn`` fails, so the next
    selection tries again.

    Args:
        fn: the tab's ``event_fn``.
        n_outputs: how many outputs it sets.

    Returns:
        A callback taking the page's flag and ``fn``'s inputs, returning the flag and ``fn``'s outputs.
    """

    def run(done: bool, *args: Any) -> tuple[Any, ...]:
        if done:
            return (True, *([gr.update()] * n_outputs))
        out = fn(*args)
        return (True, *(out if n_outputs > 1 else (out,)))

    return run


SELF_CHECK_S = float(os.environ.get("BINDLAB_SELF_CHECK_S", "60"))


def patient_url_ok(url: str, within_s: float | None = None) -> bool:
    """Gradio's start-up self-check, with patience: True once ``url`` answers a HEAD request, trying for up to
    ``within_s`` seconds (default ``$BINDLAB_SELF_CHECK_S``, 60).

    Gradio's own check gives the page 3 s per try and then stops the app with "localhost is not accessible"; on a
    busy 2-core machine building the first page can take longer than that, so :func:`launch` swaps this one in.
    """
    import time

    import httpx

    deadline = time.monotonic() + (SELF_CHECK_S if within_s is None else within_s)
    while True:
        left = deadline - time.monotonic()
        try:
            r = httpx.head(url, timeout=max(1.0, left), verify=False)
            if r.status_code in (200, 301, 302, 303, 307, 308, 401):
                return True
        except httpx.HTTPError:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)


def launch(demo: gr.Blocks | None = None, host: str | None = None, port: int | None = None, **kwargs: Any) -> gr.Blocks:
    """Queue and launch the app. Host/port default to the environment (a Space sets them), else 127.0.0.1:7860.

    GPU-bound events share one queue (:mod:`bindlab.ui.gpu`); other events run at most 2 at a time each. Uploads
    larger than ``$BINDLAB_MAX_UPLOAD_MB`` (default 50) are refused by Gradio's upload route.
    """
    demo = demo or build_app()  # its queue is Gradio's default one, limited by GRADIO_DEFAULT_CONCURRENCY_LIMIT above
    # torch and the libraries every tab's first action reaches, imported here, before any request can: two requests
    # importing torch at once on two threads used to abort the server (bindlab/heavy.py)
    heavy.preload()
    host = host or os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1")
    port = port or int(os.environ.get("GRADIO_SERVER_PORT", os.environ.get("PORT", "7860")))
    kwargs.setdefault("max_file_size", max_upload_bytes())
    # Gradio's raw upload route stores files before any callback runs: a per-address quota and a cap on the upload
    # folder, checked before a byte is read (both off locally, on in public mode; bindlab.ui.upload_quota)
    from starlette.middleware import Middleware

    from bindlab.ui import headless_sessions
    from bindlab.ui.upload_quota import UploadQuota

    app_kwargs = dict(kwargs.pop("app_kwargs", None) or {})
    # sessions that never open a page (no heartbeat) are capped, so a flood of fresh session hashes costs little
    headless_sessions.install()
    app_kwargs["middleware"] = [
        *app_kwargs.get("middleware", []),
        Middleware(UploadQuota),
        Middleware(headless_sessions.HeartbeatSeen),
    ]
    kwargs["app_kwargs"] = app_kwargs
    # Gradio sends a file only from its own cache, the temp folder, the working folder or allowed_paths: every folder
    # bindlab writes images and downloads to ($BINDLAB_HOME, wherever it is), less the private parts of the home.
    kwargs["allowed_paths"] = [*kwargs.get("allowed_paths", []), *map(str, served_roots())]
    kwargs["blocked_paths"] = [*kwargs.get("blocked_paths", []), *map(str, private_home_paths())]
    from gradio import networking

    networking.url_ok = patient_url_ok  # Blocks.launch calls networking.url_ok(local_url) once the server is up
    # Messages of gr.Error (every user error, via ui.common.friendly) always show; with show_error off, any other
    # exception's text stays in the server log. Public mode keeps it off; locally raw errors show too.
    kwargs.setdefault("show_error", not public_mode())
    demo.launch(server_name=host, server_port=port, css=CSS, **kwargs)
    return demo
