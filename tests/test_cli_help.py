"""Help a user can trust: every command and sub-command, found by walking the parser (not a typed list), prints
its own help, names its defaults, hides the internal job runner and keeps the shared options in one order."""

from __future__ import annotations

import argparse
import itertools
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bindlab.cli import EPILOG, build_parser
from bindlab.cli.common import DEVICE_HELP, Commands

PARSER = build_parser()


def _walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser a user can reach, top level first, by the words that reach it (hidden commands left out)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, Commands):
            for name in action.visible():
                yield from _walk(action.choices[name], (*path, name))


def _hidden(parser: argparse.ArgumentParser) -> set[str]:
    """Names of the hidden commands anywhere under ``parser`` (e.g. ``_run``)."""
    names: set[str] = set()
    for _, p in _walk(parser):
        for action in p._actions:
            if isinstance(action, Commands):
                names |= action.hidden
    return names


COMMANDS = dict(_walk(PARSER))
HIDDEN = _hidden(PARSER)


def _help(path: tuple[str, ...], capsys) -> str:
    with pytest.raises(SystemExit) as e:
        PARSER.parse_args([*path, "--help"])
    out, err = capsys.readouterr()
    assert e.value.code == 0, err
    assert out.startswith("usage: python -m bindlab"), out[:200]
    return " ".join(out.split())  # wrapping never splits a phrase the checks look for


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """The long option strings of a parser, in help order (without --help)."""
    return [
        a.option_strings[-1] for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]


def test_the_walk_finds_every_level():
    assert {("jobs", v) for v in ("list", "show", "cancel", "resume", "compare", "export-script")} <= set(COMMANDS)
    assert {("eval", "mcq"), ("generate", "saber"), ("train", "toy"), ("bench",)} <= set(COMMANDS)
    assert "_run" in HIDDEN and not any("_run" in path for path in COMMANDS)


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(p) or "top")
def test_help_exits_zero_and_is_clean(path, capsys):
    text = _help(path, capsys)
    for name in HIDDEN | {"_run"}:
        assert name not in text, f"{' '.join(path)} --help names the internal command {name}"
    for noise in ("default: None", "default: False", "default: []", "==SUPPRESS=="):
        assert noise not in text, f"{' '.join(path)} --help prints {noise!r}"


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda p: " ".join(p) or "top")
def test_every_argument_and_command_has_help(path):
    for action in COMMANDS[path]._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, Commands):
            helped = {a.dest: a.help for a in action._choices_actions}
            assert set(helped) == set(action.visible()), f"{path}: commands without a help line"
            assert all(h and h.strip() for h in helped.values()), f"{path}: an empty command help"
            continue
        name = action.option_strings[-1] if action.option_strings else action.dest
        assert action.help and action.help.strip() and action.help != argparse.SUPPRESS, f"{path} {name}: no help"


def test_defaults_are_shown_where_they_inform(capsys):
    assert "--per-size PER_SIZE questions per scene size (half independent, half nested) [default: 200]" in _help(
        ("generate", "saber"), capsys
    )
    text = _help(("eval", "mcq"), capsys)
    assert "[default: 64]" in text and "[default: tt]" in text
    assert (
        "--skip-bad skip malformed lines (reported) instead of refusing the file --no-progress" in text
    )  # a flag: no default


def test_jobs_actions_have_their_own_help(capsys):
    compare, listing = _help(("jobs", "compare"), capsys), _help(("jobs", "list"), capsys)
    assert "--attention-limit" in compare and "--attention-limit" not in listing
    assert "[--data DATA]" in compare  # --data is optional: it has a default set


def test_the_hidden_job_runner_still_parses_and_stays_out_of_errors(capsys):
    from bindlab.cli.finetune import cmd_jobs_run
    from bindlab.jobs.manager import launch_command

    cmd = launch_command(Path("/tmp/some-job"))
    assert cmd[1:3] == ["-m", "bindlab"]
    a = PARSER.parse_args(cmd[3:])
    assert (a.command, a.action, a.job, a.func) == ("jobs", "_run", "/tmp/some-job", cmd_jobs_run)
    with pytest.raises(SystemExit) as e:
        PARSER.parse_args(["jobs", "nope"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "invalid choice" in err and "_run" not in err


def test_every_device_option_reads_the_same():
    helps = {path: a.help for path, p in COMMANDS.items() for a in p._actions if "--device" in a.option_strings}
    assert len(helps) >= 8 and set(helps.values()) == {DEVICE_HELP}, helps


def test_commands_that_run_a_model_share_their_options_in_one_order():
    """eval's commands, and every command with --device: options two of them share come in the same order."""
    scoring = {
        path: _options(p)
        for path, p in COMMANDS.items()
        if path[:1] == ("eval",) and len(path) == 2 or "--device" in _options(p)
    }
    assert {("eval", k) for k in ("mcq", "retrieval", "pairs", "benchmark")} <= set(scoring)
    for (pa, a), (pb, b) in itertools.combinations(scoring.items(), 2):
        shared = set(a) & set(b)
        assert [o for o in a if o in shared] == [o for o in b if o in shared], f"{pa} vs {pb}"
    mcq = scoring[("eval", "mcq")]
    assert mcq[:2] == ["--data", "--model"]
    assert mcq.index("--device") < mcq.index("--batch-size") < mcq.index("--out") < mcq.index("--export")


def test_bench_only_lists_every_section(capsys):
    from bindlab.speed.bench import SECTIONS

    text = _help(("bench",), capsys)
    assert all(name in text for name, _ in SECTIONS)


def _example_lines() -> list[list[str]]:
    return [shlex.split(line.strip())[3:] for line in EPILOG.splitlines() if line.strip().startswith("python -m")]


@pytest.mark.parametrize("words", _example_lines(), ids=lambda w: " ".join(w[:2]))
def test_top_level_examples_are_true(words):
    """Each example parses, with and without its [optional] parts; a flag in brackets is optional, and a flag that
    has a default (argparse's, or one its help names) is in brackets."""
    parser, i = PARSER, 0
    while i < len(words):  # down to the command the example runs
        sub = next((a for a in parser._actions if isinstance(a, Commands)), None)
        if sub is None or words[i] not in sub.choices:
            break
        parser, i = sub.choices[words[i]], i + 1
    depth = 0
    for w in words[i:]:
        depth += w.count("[")
        flag = w.strip("[]")
        if flag.startswith("--"):
            action = parser._option_string_actions[flag]
            if depth:
                assert not action.required, f"{flag} is required but shown in brackets"
            else:
                has_default = action.default is not None or "default" in (action.help or "").lower()
                assert action.required or not has_default, f"{flag} has a default but is shown without brackets"
        depth -= w.count("]")
    full = [w.strip("[]") for w in words]
    bare, depth = [], 0
    for w in words:
        depth += w.count("[")
        if depth == 0:
            bare.append(w)
        depth -= w.count("]")
    for argv in (full, bare):
        PARSER.parse_args(argv)


def test_top_level_help_in_a_real_process():
    p = subprocess.run(
        [sys.executable, "-m", "bindlab", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: python -m bindlab") and "examples" in p.stdout
    assert all(name in p.stdout for name in ("generate", "eval", "jobs", "compare"))
    assert "_run" not in p.stdout


def test_the_console_script_calls_itself_bindlab():
    """Installed, `bindlab --help` shows `bindlab …` in its usage and examples; `python -m bindlab` keeps its own name."""
    script = Path(sys.executable).with_name("bindlab")
    if not script.is_file():
        pytest.skip("the bindlab console script is not installed in this environment (pip install -e .)")
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120).stdout
    assert out.startswith("usage: bindlab ") and "  bindlab eval mcq" in out and "python -m bindlab" not in out
    out = subprocess.run(
        [sys.executable, "-m", "bindlab", "--help"], capture_output=True, text=True, timeout=120
    ).stdout
    assert out.startswith("usage: python -m bindlab ")
