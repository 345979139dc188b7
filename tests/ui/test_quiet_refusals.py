"""Public mode: an input Gradio refuses before any callback runs (a value outside a radio's choices, a value a
component cannot read) logs one line on the server, not a traceback per request (bindlab.ui.common.quiet_refusals);
locally Gradio's handling is left as it is."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging

import gradio as gr
import pytest
from gradio.state_holder import SessionState


def _demo() -> tuple[gr.Blocks, gr.Radio]:
    with gr.Blocks() as demo:
        radio = gr.Radio(["tt", "ti"], value="tt")
        out = gr.Textbox()
        radio.change(lambda a: a, [radio], [out], api_name="pick")
    return demo, radio


def _preprocess(demo: gr.Blocks, value: object) -> object:
    fn = next(iter(demo.fns.values()))
    # a fresh thread has no event loop: asyncio.run works there even when an earlier test (Playwright's sync API)
    # left one running in this thread
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, demo.preprocess_data(fn, [value], SessionState(demo))).result()


def test_a_refused_input_logs_one_line_and_prints_no_traceback_in_public_mode(monkeypatch, caplog):
    from bindlab.ui.common import quiet_refusals

    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    demo, radio = _demo()
    quiet_refusals(demo)
    assert _preprocess(demo, "ti") == ["ti"]
    caplog.set_level(logging.INFO, logger="bindlab.ui.common")
    with pytest.raises(gr.Error) as e:
        _preprocess(demo, "zz")
    assert e.value.print_exception is False  # Gradio's queue prints a traceback only when this is True
    lines = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0].getMessage() and not lines[0].exc_info
    # a value a component cannot read at all: one line too, and a message that quotes nothing
    caplog.clear()

    def unreadable(payload: object) -> object:
        raise TypeError(f"cannot read {payload!r}")

    monkeypatch.setattr(radio, "preprocess", unreadable)
    with pytest.raises(gr.Error) as e:
        _preprocess(demo, "tt")
    assert e.value.print_exception is False and "could not be read" in str(e.value.message)
    assert "TypeError" in caplog.text and not any(r.exc_info for r in caplog.records)


def test_locally_gradio_handles_refusals_as_it_does(monkeypatch):
    from bindlab.ui.common import quiet_refusals

    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    demo, _ = _demo()
    before = demo.preprocess_data
    quiet_refusals(demo)
    assert demo.preprocess_data == before
    with pytest.raises(gr.Error) as e:
        _preprocess(demo, "zz")
    assert e.value.print_exception is True
