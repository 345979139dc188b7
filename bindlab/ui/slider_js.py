"""The α slider's browser side: ``grounding_slider.js`` wrapped as a Gradio ``js=`` event handler.

When the payload the server sent on *Load* (:func:`bindlab.studies.grounding.slider_payload`) reaches the page
(:func:`payload_js`), the script decodes it and listens to the slider's own DOM ``input`` events (one listener on
the document, so a slider Gradio draws afresh is covered too); every move then recomputes the α-dependent numbers
and redraws the summary and the figures in place, with no server call and no Gradio event. The script defines
``window.bindlabSlider`` on first use.
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
def payload_js(view: str) -> str:
    """``(payload) => …`` for the payload component's ``change`` event: hand the page the new payload (decoded at
    once) and listen to the slider's own input events from then on."""
    return f"(payload) => {{ const slider = {_module()}\n; slider.setPayload({_check(view)}, payload); return []; }}"
