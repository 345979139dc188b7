"""Progress bars of the CLI and the Python API: a tqdm bar once the work runs for a while, none when turned off."""

from __future__ import annotations

import io

import pytest

import bindlab
from bindlab.studies import progress as prog
from tests.cli_run import run as run_cli


def test_bar_draws_fractions_and_starts_a_new_phase_when_they_go_back():
    out = io.StringIO()
    bar = prog.Bar("eval mcq", delay=0, file=out)
    bar(0.5, "rendering 5/10")
    bar(1.0, "rendering 10/10")
    bar(0.1, "embedding texts")  # a second phase: the bar starts again, with its own rate
    assert bar.bar.n == 100
    bar(1.0, "done")
    bar.close()
    text = out.getvalue()
    assert "eval mcq" in text and "100%" in text and "<00:00, done]" in text


def test_progress_for_accepts_true_false_and_callables():
    with prog.progress_for(False, "x") as p:
        assert p is None
    with prog.progress_for(None, "x") as p:
        assert p is None
    seen = []
    with prog.progress_for(lambda f, m: seen.append(f), "x") as p:
        p(0.5, "half")
    assert seen == [0.5]
    with pytest.raises(TypeError, match="True, False or a callable"):
        with prog.progress_for("yes", "x"):
            pass


def test_the_api_shows_a_bar_on_a_long_run_and_none_with_progress_false(monkeypatch, capsys):
    monkeypatch.setattr(prog, "DELAY_S", 0.0)  # every run counts as long here
    res = bindlab.evaluate_mcq("minilm", limit=40)
    err = capsys.readouterr().err
    assert "evaluate_mcq" in err and "100%" in err, err
    quiet = bindlab.evaluate_mcq("minilm", limit=40, progress=False)
    assert "evaluate_mcq" not in capsys.readouterr().err
    assert quiet.primary == res.primary
    fractions = []
    bindlab.evaluate_mcq("minilm", limit=40, progress=lambda f, m: fractions.append(f))
    assert fractions and fractions[-1] == 1.0


def test_the_cli_bar_goes_to_stderr_and_no_progress_turns_it_off(monkeypatch):
    monkeypatch.setattr(prog, "DELAY_S", 0.0)
    shown = run_cli("eval", "mcq", "--model", "bow", "--limit", "20")
    assert "eval mcq" in shown.stderr and "100%" in shown.stderr, shown.stderr
    quiet = run_cli("eval", "mcq", "--model", "bow", "--limit", "20", "--no-progress")
    assert "100%" not in quiet.stderr and quiet.stdout == shown.stdout
