"""The public-mode data dropdown (bindlab.ui.common.data_picker), called in-process: its choices carry opaque values
(never a server path) that only the server resolves, for the session that sent them; its refusal names no server path;
a set written under $BINDLAB_HOME after the page was built becomes choosable without a restart (the dropdown lists
afresh when opened, and takes a set offered now); and "Open in Browse" from Compare / Map hands Browse a value its
dropdown accepts (the embedded default rendered later, or a file this session uploaded in the other tab).
"""

from __future__ import annotations

import json
import os
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


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _as_callback_sees(value: Any, session: str) -> Any:
    """What a friendly-wrapped callback of ``session`` receives for a dropdown value (its wrapper resolves it)."""
    from gradio.context import LocalContext

    from bindlab.ui.common import friendly

    token = LocalContext.request.set(FakeRequest(session))
    try:
        return friendly(lambda data: data)(value)
    finally:
        LocalContext.request.reset(token)


def test_the_choices_carry_opaque_values_and_the_callback_gets_the_path(home):
    from bindlab.ui.common import DataChoice

    demo, choice = _picker()
    offered = home / "sets" / "first" / "mcq.jsonl"
    values = _values(choice.choices)
    assert values[0] == "" and all(v.startswith("set:") for v in values[1:]) and len(values) >= 2
    assert not any(str(home) in v or v.startswith("/") for v in values)
    value = next(v for v in values if v.endswith("sets/first/mcq.jsonl"))
    passed = choice.preprocess(value)
    assert isinstance(passed, DataChoice) and passed == value and passed.kind == "mcq"
    assert _as_callback_sees(passed, "s1") == _real(offered)
    assert _as_callback_sees(choice.preprocess(""), "s1") == ""  # the embedded default stays ""
    # the page config: the dropdown's label and element id, and no server path anywhere
    config = demo.get_config_file()
    props = next(c["props"] for c in config["components"] if c.get("props", {}).get("elem_id") == "t-data")
    assert props["label"] == "MCQ file" and props["value"] == "" and props["choices"][1][1].startswith("set:")
    text = json.dumps(config, default=str)
    assert str(home) not in text and _real(home) not in text


def test_a_refused_value_gets_one_message_that_names_no_server_path(home):
    from bindlab.ui.common import NOT_OFFERED

    _, choice = _picker()
    offered = str(home / "sets" / "first" / "mcq.jsonl")
    jobs = home / "jobs" / "x"
    jobs.mkdir(parents=True)
    (jobs / "mcq.jsonl").write_text("{}\n")
    for value in [
        offered,
        "/etc/passwd",
        str(jobs / "mcq.jsonl"),
        str(home / "sets"),
        "../../.git/config",
        "set:../../etc/passwd",
        "set:" + offered,
        "upload:mcq-x",
        "upload:../../etc",
        "x" * 5000,
    ]:
        msg = _refusal(choice, value)  # a set's own path is no value either: only its opaque one is
        assert msg == NOT_OFFERED, msg
        assert str(home) not in msg and "/etc" not in msg and "choices" not in msg


def test_a_set_written_after_the_page_was_built_is_offered_without_a_restart(home):
    from bindlab.ui.common import NOT_OFFERED

    demo, choice = _picker()
    late = _mcq(home / "sets" / "later")
    value = f"set:{home.name}/sets/later/mcq.jsonl"
    assert value not in _values(choice.choices)
    assert choice.preprocess(value) == value  # a value sent before the list was reopened: taken
    assert _as_callback_sees(choice.preprocess(value), "s1") == _real(late)
    # opening the list (focus) lists the sets afresh
    focus = [f for f in demo.fns.values() if any(t[0] == choice._id and t[1] == "focus" for t in f.targets)]
    assert len(focus) == 1
    update = focus[0].fn(request=FakeRequest("s1"))
    assert value in _values(update["choices"])
    late.unlink()  # gone again: no longer offered, refused by the same message
    assert _refusal(choice, value) == NOT_OFFERED


def test_a_sessions_uploads_are_listed_for_that_session_and_kind_only(home, tmp_path):
    from bindlab.studies import datasets
    from bindlab.ui.common import NOT_OFFERED, DataChoice, data_choices

    stored = datasets.store_upload(str(_mcq(tmp_path / "src")), "mcq", "s1")
    value = f"upload:{stored.parent.name}"
    listed = _values(data_choices("mcq", "s1"))
    assert value in listed and listed[0] == "" and not any(str(home) in v for v in listed)
    assert value not in _values(data_choices("mcq", "s2"))  # another session's upload
    assert value not in _values(data_choices("pairs", "s1"))  # an upload made for another kind of input
    _, choice = _picker()
    assert _refusal(choice, value) == NOT_OFFERED  # not a set offered to everyone
    assert _as_callback_sees(DataChoice(value, "mcq"), "s1") == _real(stored)
    with pytest.raises(gr.Error) as e:  # even past the dropdown, another session's token resolves to nothing
        _as_callback_sees(DataChoice(value, "mcq"), "s2")
    assert e.value.message == NOT_OFFERED


def test_the_upload_widget_chooses_the_stored_file_by_its_opaque_value(home, tmp_path):
    from bindlab.ui.common import DataDropdown

    demo, choice = _picker()
    take = [f for f in demo.fns.values() if any(t[1] == "upload" for t in f.targets)]
    assert len(take) == 1
    update, cleared = take[0].fn(str(_mcq(tmp_path / "src")), request=FakeRequest("s1"))
    assert cleared is None and update["value"].startswith("upload:mcq-") and str(home) not in json.dumps(update)
    session_copy = DataDropdown(**{**choice.constructor_args, "choices": update["choices"], "render": False})
    stored = _as_callback_sees(session_copy.preprocess(update["value"]), "s1")
    assert stored.startswith(_real(home / "uploads")) and Path(stored).read_text().startswith("{")


def test_resolve_choice_returns_paths_inside_the_roots_only(home, monkeypatch):
    from bindlab.studies import datasets

    value = f"set:{home.name}/sets/first/mcq.jsonl"
    assert datasets.resolve_choice(value, "s1", "mcq") == _real(home / "sets/first/mcq.jsonl")
    assert datasets.resolve_choice(value, "s1") == _real(home / "sets/first/mcq.jsonl")  # any kind
    for bad in ["/etc/passwd", "set:nope", "upload:mcq-nope", None, 3]:
        with pytest.raises(ValueError) as e:
            datasets.resolve_choice(bad, "s1", "mcq")
        assert str(e.value) == datasets.NOT_OFFERED
    # a listing that named a file outside the roots (it cannot today) would still not be handed out
    monkeypatch.setattr(datasets, "list_data_sets", lambda kind: [("embedded default", ""), ("x", "/etc/passwd")])
    with pytest.raises(ValueError, match="not one offered here"):
        datasets.resolve_choice("set:x", "s1", "mcq")
    assert datasets.choice_value("mcq", "/etc/passwd", "s1") == "set:x" and datasets.choice_value("mcq", "", "s") == ""


def test_locally_a_typed_path_passes_through_resolve_choice(monkeypatch, tmp_path):
    from bindlab.studies import datasets

    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert datasets.resolve_choice(str(tmp_path / "mcq.jsonl"), None) == str(tmp_path / "mcq.jsonl")


def test_open_in_browse_from_compare_hands_browse_a_value_its_dropdown_accepts(home, tmp_path):
    """The embedded default rendered after the Browse tab was built, and a file uploaded in Compare by this
    session, both open in Browse: the update carries this session's choices and the opaque value of the file, the
    dropdown takes the value, and Browse's callbacks get the file's path."""
    from bindlab.studies import datasets
    from bindlab.ui import compare
    from bindlab.ui.common import NOT_OFFERED, DataDropdown

    _, browse_data = _picker()
    rendered = _mcq(home / "default" / "saber-mini")  # what Browse renders on first use, after the page loaded
    uploaded = datasets.store_upload(str(_mcq(tmp_path / "src")), "mcq", "s1")
    for path, value in (
        (rendered, f"set:{home.name}/default/saber-mini/mcq.jsonl"),
        (uploaded, f"upload:{uploaded.parent.name}"),
    ):
        result = SimpleNamespace(summary={"data": str(path), "pairings": ["tt"]})
        out = compare.open_target(result, "n02-ind-000 (tt)", "bow", "minilm", request=FakeRequest("s1"))
        update = out[2]
        assert update["value"] == value and value in _values(update["choices"])
        assert str(home) not in json.dumps(update)
        # Gradio applies the update to this session's copy of the dropdown: a new one from its arguments
        session_copy = DataDropdown(**{**browse_data.constructor_args, "choices": update["choices"], "render": False})
        assert session_copy.kind == "mcq" and session_copy.preprocess(value) == value
        assert _as_callback_sees(session_copy.preprocess(value), "s1") == _real(path)
    # another session opening that upload: not offered to it, refused with the one message
    msg = _refusal_of(
        lambda: compare.open_target(
            SimpleNamespace(summary={"data": str(uploaded), "pairings": ["tt"]}),
            "q (tt)",
            "bow",
            "minilm",
            request=FakeRequest("s2"),
        )
    )
    assert msg == NOT_OFFERED


def test_open_in_browse_from_the_map_hands_browse_an_opaque_value(home):
    from bindlab.ui import embedding_map

    path = home / "sets" / "first" / "mcq.jsonl"
    point = {"id": "q1/text/query", "question": "q1", "modality": "text"}
    state = {"map": SimpleNamespace(path=path, model="bow", points=[point])}
    out = embedding_map.open_target(state, "q1/text/query", request=FakeRequest("s1"))
    assert out[2]["value"] == f"set:{home.name}/sets/first/mcq.jsonl" and str(home) not in json.dumps(out[2])


def _refusal_of(call: Any) -> str:
    with pytest.raises(gr.Error) as e:
        call()
    return str(e.value.message)


def test_locally_open_in_browse_hands_over_the_path_itself(monkeypatch, tmp_path):
    from bindlab.ui.common import offer_data

    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert offer_data("mcq", str(tmp_path / "mcq.jsonl")) == str(tmp_path / "mcq.jsonl")
