"""The Gradio app: one tab module per tab, wired here. ``build_app()`` is the factory app.py launches."""

from __future__ import annotations

import gradio as gr

from bindlab.ui import browse

INTRO = """# bindlab — attribute–object binding lab
Does an embedding keep *a red cube and a blue sphere* apart from *a blue cube and a red sphere*?
Everything here runs offline on the embedded default (a generated mini benchmark, the bundled MiniLM text encoder
and a bag-of-words baseline); point it at your own files and encoders when you have them."""


def build_app() -> gr.Blocks:
    """Build the Blocks app (nothing heavy happens here; models load on first use)."""
    with gr.Blocks(title="bindlab") as demo:
        gr.Markdown(INTRO)
        with gr.Tabs():
            with gr.Tab("Browse", id="browse"):
                on_load = browse.build_tab()
        demo.load(on_load["event_fn"], on_load["inputs"], on_load["outputs"], api_name=False)
    return demo


def launch(demo: gr.Blocks | None = None, host: str | None = None, port: int | None = None, **kwargs) -> gr.Blocks:
    """Queue and launch the app. Host/port default to the environment (a Space sets them), else 127.0.0.1:7860."""
    import os

    demo = demo or build_app()
    demo.queue(default_concurrency_limit=2)
    host = host or os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1")
    port = port or int(os.environ.get("GRADIO_SERVER_PORT", os.environ.get("PORT", "7860")))
    demo.launch(server_name=host, server_port=port, css=browse.CSS, show_error=True, **kwargs)
    return demo
