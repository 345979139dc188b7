"""The α slider's browser side: ``grounding_slider.js`` wrapped as a Gradio ``js=`` event handler.

When the payload the server sent on *Load* (:func:`bindlab.studies.grounding.slider_payload`) reaches the page
(:func:`payload_js`), the script decodes it and listens to the slider's own DOM ``input`` events; every move then
recomputes the α-dependent numbers and redraws the summary and the figures in place, with no server call. Gradio's
``input`` event of the slider (:func:`slider_js`, ``fn=None``: no server call either) covers a slider drawn afresh.
The script defines ``window.bindlabSlider`` on first use.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

SCRIPT = Path(__file__).with_name("grounding_slider.js")
VIEWS = ("grounding", "walkthrough")  # the page views the script knows how to update


def _module() -> str:
    return SCRIPT.read_text(encoding="utf-8").strip().rstrip(";")


def _check(view: str) -> str:
    if view not in VIEWS:
        raise ValueError(f"unknown slider view {view!r}; one of {', '.join(VIEWS)}")
    return json.dumps(view)


@cache
def slider_js(view: str) -> str:
    """``(alpha, value, payload) => …`` for the slider's Gradio ``input`` event: recompute and redraw ``view`` (one of
    :data:`VIEWS`) in the browser, unless the page's own listener on the slider has already drawn that state."""
    return (f"(alpha, value, payload) => {{ const slider = {_module()}\n;"
            f" slider.input({_check(view)}, alpha, value, payload); return []; }}")


@cache
def payload_js(view: str) -> str:
    """``(payload) => …`` for the payload component's ``change`` event: hand the page the new payload (decoded at
    once) and listen to the slider's own input events from then on."""
    return f"(payload) => {{ const slider = {_module()}\n; slider.setPayload({_check(view)}, payload); return []; }}"
