"""The Gradio app: one module per tab under ``bindlab.ui``, listed in :data:`TABS`; ``build_app()`` is the factory."""

from __future__ import annotations

import os
from typing import Any, Callable

import gradio as gr

from bindlab.ui import attention as attention_tab
from bindlab.ui import browse
from bindlab.ui import embedding_map as map_tab
from bindlab.ui import finetune as finetune_tab
from bindlab.ui import grounding as grounding_tab
from bindlab.ui import pairs as pairs_tab
from bindlab.ui import walkthrough as walkthrough_tab
from bindlab.ui.common import max_upload_bytes
from bindlab.ui.gpu import GPU_QUEUE

INTRO = """# bindlab — attribute–object binding lab
Does an embedding keep *a red cube and a blue sphere* apart from *a blue cube and a red sphere*?
Everything here runs offline on the embedded default (generated benchmarks, the bundled MiniLM text encoder, a
bag-of-words baseline and bindlab's toy vision–language models); point it at your own files and encoders when you
have them. Tabs: **Browse** SABER-style MCQs · **Pairs** single-edit 2x2 pairs · **Grounding** the α slider ·
**Attention** binding margins per layer · **Finetune** text-only LoRA jobs · **Map** UMAP/PCA of the embeddings ·
**Walkthrough** a seven-step tour for teaching."""

# (tab label, tab id, builder). A builder lays out its tab inside the current Blocks and may return a dict
# {"event_fn", "inputs", "outputs"} to run when the page loads ("gpu": True puts it in the GPU queue, see
# bindlab.ui.gpu), and/or {"wire": fn(tabs, hooks)} to wire events across tabs once all are built (hooks: tab
# id -> that tab's dict).
TABS: list[tuple[str, str, Callable[[], Any]]] = [
    ("Browse", "browse", browse.build_tab),
    ("Pairs", "pairs", pairs_tab.build_tab),
    ("Grounding", "grounding", grounding_tab.build_tab),
    ("Attention", "attention", attention_tab.build_tab),
    ("Finetune", "finetune", finetune_tab.build_tab),
    ("Map", "map", map_tab.build_tab),
    ("Walkthrough", "walkthrough", walkthrough_tab.build_tab),  # last: researchers land on Browse
]

# Extra CSS of each tab module, joined into the page's stylesheet.
CSS = "\n".join([browse.CSS, grounding_tab.CSS, finetune_tab.CSS, pairs_tab.CSS, attention_tab.CSS, map_tab.CSS,
                 walkthrough_tab.CSS])


def build_app() -> gr.Blocks:
    """Build the Blocks app (nothing heavy happens here; models load on first use)."""
    with gr.Blocks(title="bindlab") as demo:
        gr.Markdown(INTRO)
        hooks: dict[str, dict[str, Any]] = {}
        with gr.Tabs(elem_id="bl-tabs") as tabs:
            for label, tab_id, build in TABS:
                with gr.Tab(label, id=tab_id):
                    hook = build()
                    if hook:
                        hooks[tab_id] = hook
        for hook in hooks.values():
            if "wire" in hook:
                hook["wire"](tabs, hooks)
            if "event_fn" in hook:
                demo.load(hook["event_fn"], hook["inputs"], hook["outputs"], api_name=False,
                          **(GPU_QUEUE if hook.get("gpu") else {}))
    return demo


def launch(demo: gr.Blocks | None = None, host: str | None = None, port: int | None = None, **kwargs: Any) -> gr.Blocks:
    """Queue and launch the app. Host/port default to the environment (a Space sets them), else 127.0.0.1:7860.

    GPU-bound events share one queue (:mod:`bindlab.ui.gpu`); other events run at most 2 at a time each. Uploads
    larger than ``$BINDLAB_MAX_UPLOAD_MB`` (default 50) are refused by Gradio's upload route.
    """
    demo = demo or build_app()
    demo.queue(default_concurrency_limit=2)
    host = host or os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1")
    port = port or int(os.environ.get("GRADIO_SERVER_PORT", os.environ.get("PORT", "7860")))
    kwargs.setdefault("max_file_size", max_upload_bytes())
    demo.launch(server_name=host, server_port=port, css=CSS, show_error=True, **kwargs)
    return demo
