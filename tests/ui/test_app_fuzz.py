"""Fuzz of the app's callbacks, called in-process as Gradio would call them: malformed paths, huge strings, NaN and
infinities, empty values, wrong types. Every call must end in a ``gr.Error`` with a readable one-line message written
for a user, or in a clean result; never another exception, never the "unexpected error" fallback of
:func:`bindlab.ui.common.friendly`, never a traceback on the page, never a background job started.

Runs in public mode (the tighter caps) with the test data roots (the temp folder and the repo).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

HUGE = "w " * 60_000  # 120,000 characters
# What Gradio can hand a callback: a Textbox / Dropdown gives a str (or None), a Number / Slider a float (or None),
# a multiselect a list of str. Malformed values of each type:
BAD_PATHS: list[Any] = [
    "/etc/passwd",
    "/etc",
    "../../.git/config",
    "/dev/zero",
    "/proc/self/environ",
    "a\x00b",
    "/" + "x" * 5000,
    "~root/.ssh/id_rsa",
    "file:///etc/passwd",
]  # (blank = the default set)
BAD_TEXT: list[Any] = [None, "", "   ", "\x00", HUGE, "nan", "-1", "../../x", "nope:model", "é" * 3000]
BAD_NUMBERS: list[Any] = [None, float("nan"), float("inf"), -float("inf"), -1.0, 1e15, 0.5]
BAD_LISTS: list[Any] = [None, [], [""], ["\x00"], [HUGE], ["nope:x", "nope:y"]]


class FakeRequest:
    """What a callback reads from ``gr.Request``."""

    def __init__(self, session_hash: str) -> None:
        self.session_hash = session_hash


@pytest.fixture(scope="module")
def mcq(tmp_path_factory) -> str:
    """A tiny valid SABER file (text only): what a valid base call scores with the bag-of-words model."""
    from bindlab.data.saber import generate_saber, write_benchmark

    return str(
        write_benchmark(
            tmp_path_factory.mktemp("fuzz-mcq"), generate_saber(per_size=2, sizes=[2, 3], seed=1), {"seed": 1}
        )
    )


@pytest.fixture(autouse=True)
def public(monkeypatch):
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")


@pytest.fixture(autouse=True)
def no_jobs(monkeypatch):
    """A fuzzed finetune call must never queue a job: the manager's submit fails the test if reached."""
    from bindlab.jobs import manager

    def refuse(self, *a, **k):
        raise AssertionError("a fuzzed call reached JobManager.submit")

    monkeypatch.setattr(manager.JobManager, "submit", refuse)


def _cases(mcq: str, missing: str) -> list[tuple[str, Callable[..., Any], tuple[Any, ...]]]:
    """(label, callback, args): each base call with one argument replaced by a malformed value."""
    from bindlab.ui import attention, browse, compare, embedding_map, finetune, grounding, pairs

    req = FakeRequest("fuzz")
    # (name, callback, valid or harmless base args, the kind of each argument: p path, t text, n number, l list,
    # "-" not fuzzed)
    bases: list[tuple[str, Callable[..., Any], tuple[Any, ...], str]] = [
        ("browse.score", browse.score, (mcq, "bow", "tt", "all", "all", "all", 8), "pttttt-"),
        ("browse.show_question", browse.show_question, (mcq, "bow", "tt", "n02-ind-000", 8), "---tn"),
        ("pairs.score", pairs.score, (missing, "toy:shared", "short"), "ptt"),
        ("grounding.load", grounding.load, (missing, "toy:clip", "hue", 0.0), "pttn"),
        ("grounding.move", grounding.move, (None, "red", 0.0), "-tn"),
        (
            "attention.analyse_text",
            attention.analyse_text,
            ("bow", "later_to_earlier", "a red cube", "red:cube", 0, ""),
            "-tttnt",
        ),
        ("attention.compute", attention.compute, ("minilm", "", missing, 5, "later_to_earlier"), "ttpnt"),
        ("map.make_map", embedding_map.make_map, (mcq, "bow", [], 20, 0, "role", "pca"), "p-lnntt"),
        ("map.select_point", embedding_map.select_point, (None, "q1"), "-t"),
        ("compare.run", compare.run, (["bow", "minilm"], ["mcq"], "tt", missing, "", ""), "lltppt"),
        (
            "finetune.launch",
            lambda *a: finetune.launch(*a, request=req),
            ("minilm", missing, 1, 1, 8, 5e-5, 4, "auto"),
            "tpnnnnnt",
        ),
        ("finetune.cancel", lambda *a: finetune.cancel(*a, request=req), ("job-x",), "t"),
        ("finetune.resume", lambda *a: finetune.resume(*a, request=req), ("job-x",), "t"),
    ]
    values = {"p": BAD_PATHS, "t": BAD_TEXT, "n": BAD_NUMBERS, "l": BAD_LISTS}
    out = []
    for name, fn, base, kinds in bases:
        for i, kind in enumerate(kinds):
            for v in values.get(kind, []):
                args = list(base)
                args[i] = v
                out.append((f"{name}[{i}]={_short(v)}", fn, tuple(args)))
    return out


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 24 else r[:20] + "…"


def _check(label: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        fn(*args)
    except gr.Error as e:
        msg = str(e.message)
        assert msg.strip(), f"{label}: empty message"
        assert "Traceback" not in msg and 'File "' not in msg, f"{label}: a traceback on the page: {msg[:300]}"
        assert "see the server log" not in msg, f"{label}: an unexpected exception: {msg[:300]}"
        assert len(msg) < 2_000, f"{label}: a message of {len(msg)} characters (echoes the input?)"
    # any other exception propagates and fails the test with its traceback


def test_malformed_inputs_to_the_app_callbacks_end_in_a_message_or_a_clean_result(mcq, tmp_path):
    from bindlab.encoders import service

    cases = _cases(mcq, str(tmp_path / "missing" / "data.jsonl"))
    assert len(cases) >= 100, len(cases)
    failures = []
    real = service.get_encoder

    def small_models_only(model: str, *a: Any, **k: Any) -> Any:  # keep the fuzz fast: no real model loads
        if str(model).strip() not in ("bow", "bow:words"):
            raise ValueError(f"model {model!r} is not loaded in the fuzz test")
        return real(model, *a, **k)

    service.get_encoder = small_models_only
    try:
        for label, fn, args in cases:
            try:
                _check(label, fn, args)
            except Exception as e:  # noqa: BLE001 - collect every failure, report them together
                failures.append(f"{label}: {type(e).__name__}: {str(e)[:200]}")
    finally:
        service.get_encoder = real
    assert not failures, f"{len(failures)} of {len(cases)} cases failed:\n" + "\n".join(failures[:40])


@pytest.mark.usefixtures("tmp_roots")
def test_a_missing_path_inside_the_roots_says_so_and_a_nan_number_is_named(mcq):
    """Two spot checks that the fuzz's messages are the readable ones, not just any gr.Error."""
    from bindlab.ui import browse, embedding_map

    with pytest.raises(gr.Error, match="not found"):
        browse.score(str(Path(mcq).parent / "nope.jsonl"), "bow", "tt", "all", "all", "all", 8)
    with pytest.raises(gr.Error) as e:
        embedding_map.make_map(mcq, "bow", [], math.nan, 0, "role", "pca")
    assert "limit" in str(e.value.message)


@pytest.mark.usefixtures("tmp_roots")
def test_an_empty_radio_or_slider_gets_a_message_naming_the_control_or_its_default(mcq):
    """None from a radio (an API call may send it) names the choice to make; an empty top-k slider means its
    starting value; an infinite one is refused by name."""
    from pandas.io.formats.style import Styler

    from bindlab.ui import attention, browse, grounding

    with pytest.raises(gr.Error, match="choose a pairing"):
        browse.score(mcq, "bow", None, "all", "all", "all", 8)
    shown = browse.show_question(mcq, "bow", "tt", "n02-ind-000", None)
    top_k = shown[3].data if isinstance(shown[3], Styler) else shown[3]  # the page's Styler over the numbers
    assert len(top_k) == browse.TOP_K_DEFAULT  # the top-k table at the slider's starting value
    with pytest.raises(gr.Error, match="top-k"):
        browse.show_question(mcq, "bow", "tt", "n02-ind-000", math.inf)
    with pytest.raises(gr.Error, match="choose a factor"):
        grounding.load("", "toy:clip", None, 0.0)
    with pytest.raises(gr.Error, match="no bindings given"):
        attention.analyse_text("bow", "later_to_earlier", "a red cube", None, 0, "")
