"""The public-mode data dropdown (bindlab.ui.common.data_picker), called in-process: its refusal names no server
path, a set written under $BINDLAB_HOME after the page was built becomes choosable without a restart (the dropdown
lists afresh when opened, and takes a set offered now), and "Open in Browse" from Compare / Map hands Browse a value
its dropdown accepts (the embedded default rendered later, or a file this session uploaded in the other tab).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gradio as gr
import pytest

from bindlab.data.saber import generate_saber, write_benchmark


class FakeRequest:
    """What a callback reads from ``gr.Request``: the session hash."""

    def __init__(self, session_hash: str) -> None:
        self.session_hash = session_hash


@pytest.fixture
def home(monkeypatch, tmp_path) -> Path:
    """Public mode, the default public roots, a fresh $BINDLAB_HOME holding one MCQ set."""
    home = tmp_path / "home"
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    monkeypatch.setenv("BINDLAB_HOME", str(home))
    monkeypatch.delenv("BINDLAB_DATA_ROOTS", raising=False)
    _mcq(home / "sets" / "first")
    return home


def _mcq(folder: Path) -> Path:
    return write_benchmark(folder, generate_saber(per_size=1, sizes=[2], seed=0), {"seed": 0})


def _picker(kind: str = "mcq") -> tuple[gr.Blocks, Any]:
    from bindlab.ui.common import data_picker

    with gr.Blocks() as demo:
        choice = data_picker(kind, "MCQ file", "t-data")
    return demo, choice


def _refusal(choice: Any, value: Any) -> str:
    with pytest.raises(gr.Error) as e:
        choice.preprocess(value)
    return str(e.value.message)


def _values(choices: list[Any]) -> list[str]:
    return [c[1] if isinstance(c, (tuple, list)) else c for c in choices]


def test_a_refused_value_gets_one_message_that_names_no_server_path(home):
    from bindlab.ui.common import NOT_OFFERED

    _, choice = _picker()
    offered = str(home / "sets" / "first" / "mcq.jsonl")
    assert offered in _values(choice.choices)  # Gradio's own refusal would quote this path
    assert choice.preprocess(offered) == offered and choice.preprocess("") == ""
    jobs = home / "jobs" / "x"
    jobs.mkdir(parents=True)
    (jobs / "mcq.jsonl").write_text("{}\n")
    for value in ["/etc/passwd", str(jobs / "mcq.jsonl"), str(home / "sets"), "../../.git/config", "x" * 5000]:
        msg = _refusal(choice, value)
        assert msg == NOT_OFFERED, msg
        assert str(home) not in msg and "/etc" not in msg and "choices" not in msg


def test_a_set_written_after_the_page_was_built_is_offered_without_a_restart(home):
    from bindlab.ui.common import NOT_OFFERED

    demo, choice = _picker()
    late = _mcq(home / "sets" / "later")
    assert str(late) not in _values(choice.choices)
    assert choice.preprocess(str(late)) == str(late)  # a value sent before the list was reopened: taken
    # opening the list (focus) lists the sets afresh
    focus = [f for f in demo.fns.values() if any(t[0] == choice._id and t[1] == "focus" for t in f.targets)]
    assert len(focus) == 1
    update = focus[0].fn(request=FakeRequest("s1"))
    assert str(late) in _values(update["choices"])
    late.unlink()  # gone again: no longer offered, refused by the same message
    assert _refusal(choice, str(late)) == NOT_OFFERED


def test_a_sessions_uploads_are_listed_for_that_session_and_kind_only(home, tmp_path):
    from bindlab.studies import datasets
    from bindlab.ui.common import NOT_OFFERED, data_choices

    stored = datasets.store_upload(str(_mcq(tmp_path / "src")), "mcq", "s1")
    listed = _values(data_choices("mcq", "s1"))
    assert str(stored) in listed and listed[0] == ""  # the embedded default stays first
    assert str(stored) not in _values(data_choices("mcq", "s2"))  # another session's upload
    assert str(stored) not in _values(data_choices("pairs", "s1"))  # an upload made for another kind of input
    _, choice = _picker()
    assert _refusal(choice, str(stored)) == NOT_OFFERED  # not a set offered to everyone


def test_open_in_browse_from_compare_hands_browse_a_value_its_dropdown_accepts(home, tmp_path):
    """The embedded default rendered after the Browse tab was built, and a file uploaded in Compare by this
    session, both open in Browse: the update carries this session's choices, and the dropdown takes the value."""
    from bindlab.studies import datasets
    from bindlab.ui import compare
    from bindlab.ui.common import NOT_OFFERED, DataDropdown

    _, browse_data = _picker()
    rendered = _mcq(home / "default" / "saber-mini")  # what Browse renders on first use, after the page loaded
    uploaded = datasets.store_upload(str(_mcq(tmp_path / "src")), "mcq", "s1")
    for path in (rendered, uploaded):
        result = SimpleNamespace(summary={"data": str(path), "pairings": ["tt"]})
        out = compare.open_target(result, "n02-ind-000 (tt)", "bow", "minilm", request=FakeRequest("s1"))
        update = out[2]
        assert update["value"] == str(path) and str(path) in _values(update["choices"])
        # Gradio applies the update to this session's copy of the dropdown: a new one from its arguments
        session_copy = DataDropdown(**{**browse_data.constructor_args, "choices": update["choices"], "render": False})
        assert session_copy.kind == "mcq" and session_copy.preprocess(str(path)) == str(path)
    # another session opening that upload: not among its choices, refused
    out = compare.open_target(SimpleNamespace(summary={"data": str(uploaded), "pairings": ["tt"]}), "q (tt)", "bow",
                              "minilm", request=FakeRequest("s2"))
    other = DataDropdown(**{**browse_data.constructor_args, "choices": out[2]["choices"], "render": False})
    assert _refusal(other, str(uploaded)) == NOT_OFFERED


def test_locally_open_in_browse_hands_over_the_path_itself(monkeypatch, tmp_path):
    from bindlab.ui.common import offer_data

    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert offer_data("mcq", str(tmp_path / "mcq.jsonl")) == str(tmp_path / "mcq.jsonl")
