"""A script that posts a number where a tab takes text (a model id, a file, a caption) gets one sentence back, not an
AttributeError from deep inside (issue 56, item 7)."""

from __future__ import annotations

import gradio as gr
import pytest

from bindlab.ui import attention, browse, pairs
from bindlab.ui.common import _text_params, friendly


def test_text_parameters_are_found_from_the_annotations():
    def cb(data: str, model: str | None, k: int, pairing: str = "tt") -> None: ...

    assert _text_params(cb) == {"data": 0, "model": 1, "pairing": 3}


@pytest.mark.parametrize(
    ("callback", "args"),
    [
        (browse.score, ("", 123, "tt", "all", "all", "all", 5)),
        (pairs.score, ("", 7.5, "all")),
        (attention.analyse_text, ("minilm", "later_to_earlier", ["a", "list"], "red:cube", 0)),
    ],
)
def test_a_number_where_text_belongs_is_refused_in_one_sentence(callback, args):
    with pytest.raises(gr.Error) as e:
        callback(*args)
    msg = str(e.value.message)
    assert "expected text, got" in msg and "AttributeError" not in msg and "\n" not in msg


def test_text_still_passes():
    @friendly
    def echo(model: str, n: int = 0) -> str:
        return model.strip()

    assert echo(" minilm ") == "minilm"
    with pytest.raises(gr.Error, match="model: expected text, got int"):
        echo(5)
