"""An app with no visitor does not spin: its queue polls for work every 20 ms and for progress every 50 ms (Gradio's
1 ms / 10 ms cost 0.87 s of CPU per 10 s idle; the figures are in bindlab/ui/app.py). Browser tests throughout the
suite show that clicks still run."""

from __future__ import annotations

import gradio as gr


def test_the_built_app_polls_its_queue_calmly():
    from bindlab.ui.app import PROGRESS_IDLE_POLL_S, QUEUE_IDLE_POLL_S, build_app

    queue = build_app()._queue
    assert queue.sleep_when_free == QUEUE_IDLE_POLL_S == 0.02
    assert queue.progress_update_sleep_when_free == PROGRESS_IDLE_POLL_S == 0.05


def test_calm_queue_never_makes_polling_faster_and_skips_what_it_does_not_know():
    from bindlab.ui.app import calm_queue

    with gr.Blocks() as demo:
        gr.Markdown("x")
    demo._queue.sleep_when_free = 0.1  # slower than ours already: kept
    calm_queue(demo)
    assert demo._queue.sleep_when_free == 0.1
    calm_queue(object())  # no queue at all: nothing to do, no error
