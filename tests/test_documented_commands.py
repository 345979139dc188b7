"""Every documented command runs as written (issue 26, item 3).

The docs (README.md, docs/*.md, the toy models' cards bindlab/assets/*/README.md) are read for

* fenced code blocks (```bash, ```sh or a plain ```) with a line that runs bindlab: ``python -m bindlab <command>``
  or ``bindlab <command>`` at the start of a line, optionally after ``nice -n N`` (layout listings such as
  ``bindlab/ui/   one module per tab`` are not commands), and
* inline code spans in prose that hold such a command (```python -m bindlab map --model toy:clip --out map.html```).

Each one is a *scenario*, classified in :data:`SCENARIOS`, keyed by (file, a short stable substring of its text):

``run``     runs in the default test run, as a bash script (``bash -euo pipefail``) exactly as written, except that
            ``/tmp/...`` paths go to a fresh temp folder, the working folder is a fresh folder outside the checkout
            (so ``data/fa-toy`` or ``runs/...`` land there), ``python`` is this interpreter, ``bindlab`` runs this
            checkout's package, ``BINDLAB_HOME`` is a fresh folder (or the test run's home, ``home: "session"``, for
            a scenario that reuses another's embedding cache) and ``HF_HUB_OFFLINE=1``. Quick: seconds to a minute.
``slow``    the same, marked ``slow`` (minutes; CI runs them with ``-m slow``).
``parse``   needs hub weights, a GPU, a multi-node launch or trains for an hour: every bindlab command line in it
            (also the ``-m bindlab ...`` part of a ``torchrun`` / ``accelerate launch`` / ``srun`` line) is split with
            shlex and parsed by ``bindlab.cli.build_parser()`` after the doc's placeholders are substituted
            (``subs``), so a documented flag that does not exist still fails.
``mention`` an inline span that names a command in prose rather than giving a whole command line (``python -m
            bindlab compare``, ``python -m bindlab eval mcq --model toy:clip ...``): its command must exist and
            every ``--option`` it names must be one of that command's options.

An entry may add ``setup`` (bash run before the scenario, e.g. copying a test fixture to where the doc says the
reader's files go), ``subs`` (literal replacements: the doc's placeholders made concrete) and ``append``
(``{"train toy": "--steps 20 ..."}``: flags added to every line running that command, the quick variant a doc
describes). A block in the docs missing from the table fails ("classify it"); an entry that matches no block, or
more than one, fails too. The comment after each entry is its measured wall time on the project's shared 2-core
CPU (load average noted), for ``parse`` / ``mention`` the time a real run would take where the doc says it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
DOC_GLOBS = ("README.md", "docs/*.md", "bindlab/assets/*/README.md")

# A line that runs bindlab: the command word after it is lowercase (``bindlab/ui/  ...`` is a path, not a command).
COMMAND_LINE = re.compile(r"^(?:nice -n \d+\s+)?(?:python -m bindlab|bindlab)\s+[a-z]")
FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
SHELL_LANGS = {"", "bash", "sh", "shell"}
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")

# ---------------------------------------------------------------------------------------------------------------
# The table: (file, a short stable substring of the block or span) -> how the test treats it.
# Comments: what one run took with this test on the shared 2-core CPU on 2026-12-01, wall time at the load average
# then (1-minute; the machine was 5-9x oversubscribed by other sessions' work) and, for "run", the CPU seconds of
# the commands, which do not depend on the load (all "run" together: 133 s CPU, about 2 min wall on an idle 2-core
# machine). "parse": the time the doc gives for a real run.
# ---------------------------------------------------------------------------------------------------------------

SABER_S = "python -m bindlab generate saber --out /tmp/s --per-size 20"  # the README's CLI example makes /tmp/s; its export example reads it
SUGARCREPE_PP_COPY = (
    'mkdir -p "$BINDLAB_HOME/benchmarks" && cp -r "{fixtures}/sugarcrepe_pp" "$BINDLAB_HOME/benchmarks/sugarcrepe_pp"'
)
FA_TOY = (
    "python -m bindlab generate factors --out data/fa-toy --shapes 4 --hues 6 --contexts 6 --replicas 1 "
    "--size 64 --signal-strengths 1,.7,.5,.35,.2,.1,0"
)  # reproductions.md's common setup block
QUICK_TOY_TRAIN = "--steps 20 --pool-size 200 --pair-scenes 40 --eval-sample 50 --eval-per-size 2"
QUICK_TOY_EVAL = "--sample 50 --per-size 2"

SCENARIOS: dict[tuple[str, str], dict] = {
    # --- README.md ---
    ("README.md", "python -m bindlab map --model toy:clip --out map.html"): {
        "cls": "slow",
        "subs": {"[--export DIR]": "--export map_files"},
    },  # UMAP's first numba compile: 66 s wall
    # at load 2-5 (115 s with four workers), 36 s CPU, every time in a fresh venv (the compiled cache lives in it)
    ("README.md", "python -m bindlab bench --only walkthrough"): {
        "cls": "parse"
    },  # drives the app in headless Chromium from an empty cache: 135 s + start-up
    ("README.md", "python -m bindlab compare"): {"cls": "mention"},  # names the command in prose
    ("README.md", "python -m bindlab bench"): {"cls": "parse"},  # 13 min, Chromium
    ("README.md", "--models bow,minilm,toy:clip,toy:shared --suite mcq,pairs --out cmp.json"): {
        "cls": "slow"
    },  # 426 s at load 11
    ("README.md", SABER_S): {"cls": "run", "home": "session"},  # 248 s wall at load 16, 53 s CPU
    ("README.md", "--model minilm --export /tmp/r"): {
        "cls": "run",
        "home": "session",
        "setup": SABER_S,
    },  # 43 s wall at load 13, 13 s CPU (MiniLM from the cache)
    ("README.md", "train toy --arch clip   --out runs/toy-clip"): {
        "cls": "slow",
        "append": {"train toy": QUICK_TOY_TRAIN, "eval toy": QUICK_TOY_EVAL},
    },  # the README's quick
    # check of its training block (the full one: 44 + 20 + 32 + 56 min): 315 s at load 10
    # --- docs/deploy.md ---
    ("docs/deploy.md", "python -m bindlab eval benchmark --source hub"): {"cls": "mention"},  # an option in prose
    ("docs/deploy.md", "bindlab export-dataset"): {"cls": "mention"},  # names the command in prose
    ("README.md", "audit-splits --toy toy:clip"): {"cls": "run"},  # 2026-12-02: regenerates 10,000 scenes, ~10 s
    ("docs/reproductions.md", "audit-splits --toy MODEL"): {"cls": "mention"},
    ("docs/reproductions.md", "eval toy --model toy:clip --seed 1 --per-size 1"): {
        "cls": "parse",
        "subs": {"$S": "0"},
    },  # three toy trainings of 8.5 min each + evaluations (2026-12-02, load 2)
    ("bindlab/assets/toy-clip/README.md", "audit-splits --toy MODEL"): {"cls": "mention"},
    ("bindlab/assets/toy-negclip/README.md", "audit-splits --toy MODEL"): {"cls": "mention"},
    ("bindlab/assets/toy-shared/README.md", "audit-splits --toy MODEL"): {"cls": "mention"},
    ("docs/deploy.md", "python -m bindlab models"): {"cls": "run"},  # 2 s wall at load 13, 1 s CPU
    # --- docs/models.md ---
    ("docs/models.md", "python -m bindlab models"): {"cls": "run"},  # 2 s wall at load 13, 1 s CPU
    ("docs/models.md", "python -m bindlab train toy"): {"cls": "mention"},  # names the command in prose
    # --- docs/scale.md ---
    ("docs/scale.md", "--model hf:google/siglip2-base-patch16-224 --pairings tt,ti,it,ii --out res.json"): {
        "cls": "parse",
        "subs": {"--model ...": "--model hf:google/siglip2-base-patch16-224"},
    },  # hub weights, GPUs
    ("docs/scale.md", "trip/ --batch-size 64 --num-processes 8"): {"cls": "parse"},  # 8 GPUs
    ("docs/scale.md", "jobs export-script"): {
        "cls": "parse",
        "subs": {
            "hf:...": "hf:google/siglip2-base-patch16-224",
            "JOB_ID": "20261201-052106-c27953",
            "[--nproc 8] [--nodes 2]": "--nproc 8 --nodes 2",
        },
    },  # a GPU job
    ("docs/scale.md", "python -m bindlab bench --only scale"): {"cls": "parse"},  # torchrun, minutes
    ("docs/scale.md", "python -m bindlab bench --only vs_library,mcq_warm,eval_mcq_pipeline"): {
        "cls": "parse"
    },  # two real architectures built on the fly and 13,500 questions: minutes
    ("docs/scale.md", "bench --only eval_mcq_pipeline --out pipe.json"): {"cls": "parse"},  # the quiet runs: 9 min
    # --- docs/finetune_results.md ---
    ("docs/finetune_results.md", "toy_compare.json"): {"cls": "slow"},  # 992 s at load 11 (doc: 2.7 + 6 min)
    ("docs/finetune_results.md", "trip-minilm"): {
        "cls": "parse"
    },  # 6 min finetune + 2 min compare (95 + 12 at load 14)
    # --- docs/reproductions.md ---
    ("docs/reproductions.md", "generate factors --out data/fa-toy"): {"cls": "slow"},  # 130 s at load 11
    ("docs/reproductions.md", "ground-sweep --data data/fa-toy --model toy:clip"): {"cls": "parse"},  # 4 + 37 min
    ("docs/reproductions.md", "ground-sweep --data data/fa-toy --model toy:lit-minilm"): {
        "cls": "slow",
        "setup": FA_TOY,
    },  # 2.4 min at load 2-5, + the grid
    ("docs/reproductions.md", "--align shared"): {"cls": "slow", "setup": FA_TOY},  # 260 s at load 11, grid included
    ("docs/reproductions.md", "--protocol combination"): {
        "cls": "slow",
        "setup": FA_TOY,
    },  # 143 s at load 7, grid incl.
    ("docs/reproductions.md", "--pairings tt,ti,it --out lit-study.json"): {"cls": "parse"},  # 3 x 3.7 + 11 + 3 min
    ("docs/reproductions.md", "python -m bindlab jobs compare JOB"): {"cls": "mention"},  # prose, a job id
    ("docs/reproductions.md", "--out runs/lit-twins"): {"cls": "parse"},  # 4 min of training + 3 min scoring
    ("docs/reproductions.md", "--out runs/lit-disc-pair"): {"cls": "parse"},  # 7 + 6 + 11 min training, 7 min reference
    ("docs/reproductions.md", "--out runs/lit-phrases --steps"): {"cls": "parse"},  # 27 min of training + 3 min scoring
    ("docs/reproductions.md", "--out runs/lit-phrases-geo2"): {"cls": "parse"},  # 14 + 12 min of training + 3 min
    ("docs/reproductions.md", "--out runs/lit-phrases-bag75"): {"cls": "parse"},  # 15 min of training + 3 x 5 min
    ("docs/reproductions.md", "--out runs/lit-blend-geo2"): {"cls": "parse"},  # 16 + 23 min of training + 3 x 4 min
    ("docs/reproductions.md", "--out runs/lit-head --steps"): {"cls": "parse"},  # 35 + 34 + 16 min of training + 3 x 5
    ("docs/reproductions.md", "--out runs/lit-rank --steps"): {"cls": "parse"},  # 14 + 10 min of training + 2 min
    ("docs/reproductions.md", "--out runs/lit-a --steps"): {"cls": "parse"},  # 47 + 15 min of training + 3 min
    ("docs/reproductions.md", "--out runs/lit-slots --steps"): {"cls": "parse"},  # 47 min of training + 1 min
    ("docs/reproductions.md", "--out runs/lit-a-p16r"): {"cls": "parse"},  # 47 + 12.5 min of training + 1 min
    ("docs/reproductions.md", "--out runs/lit-count --steps"): {
        "cls": "parse"
    },  # 14 + 16 min of training + 12 of captions
    ("docs/reproductions.md", "--out runs/lit-five --steps"): {
        "cls": "parse"
    },  # 2 x 14-17 min of training + 3 of captions
    ("docs/reproductions.md", "--out runs/tw-s0"): {"cls": "parse"},  # 4 min of training per seed
    ("docs/reproductions.md", "--out runs/negclip-v1"): {"cls": "parse"},  # 11 + 3 x 22 min of training
    ("docs/reproductions.md", "--out runs/clip-s0"): {"cls": "parse"},  # 3 + 2 + 4 min of training per seed
    ("docs/reproductions.md", "--attention-loss 0.1"): {"cls": "slow"},  # 248 s at load 4-7 (two jobs, two compares)
    ("docs/reproductions.md", "--supervision image"): {"cls": "parse"},  # 6 + 19 min finetunes, 2 x 4 min compares
    ("docs/reproductions.md", "generate composet --out data/composet40"): {
        "cls": "slow",
        "setup": SUGARCREPE_PP_COPY,
    },  # 280 s at load 8 (SugarCrepe++: the 10-item test fixture)
    # --- the toy models' cards ---
    ("bindlab/assets/toy-clip/README.md", "python -m bindlab eval mcq --model toy:clip ..."): {
        "cls": "mention"
    },  # elided
    ("bindlab/assets/toy-clip/README.md", "train toy --arch clip --out DIR"): {
        "cls": "parse",
        "subs": {"DIR": "runs/toy-clip"},
    },  # 44 min
    ("bindlab/assets/toy-clip/README.md", "eval toy --model toy:clip --out eval.json"): {
        "cls": "slow"
    },  # 181 s, load 12
    ("bindlab/assets/toy-negclip/README.md", "python -m bindlab eval mcq --model toy:negclip ..."): {
        "cls": "mention"
    },  # elided
    (
        "bindlab/assets/toy-negclip/README.md",
        "--out negclip-v1 --steps 1500 --seed 0 --batch-size 128 --lr 0.0005 --pool-size",
    ): {"cls": "parse"},  # 20 min
    (
        "bindlab/assets/toy-negclip/README.md",
        "--lr 0.0005 --pool-size 10000 --holdout-combos 0.15 --twin-share 0.5 --pair-twins",
    ): {"cls": "parse", "subs": {"DIR": "runs/toy-negclip"}},  # 32 min
    ("bindlab/assets/toy-negclip/README.md", "# stage 1 (binding twins)"): {
        "cls": "parse",
        "subs": {"DIR": "runs/toy-negclip"},
    },  # 52 min of training
    ("bindlab/assets/toy-negclip/README.md", "eval toy --model toy:negclip --out eval.json"): {
        "cls": "slow"
    },  # 429 s at load 18
    ("bindlab/assets/toy-shared/README.md", "python -m bindlab eval mcq --model toy:shared ..."): {
        "cls": "mention"
    },  # elided
    ("bindlab/assets/toy-shared/README.md", "train toy --arch shared --out DIR"): {
        "cls": "parse",
        "subs": {"DIR": "runs/toy-shared"},
    },  # 56 min
    ("bindlab/assets/toy-shared/README.md", "eval toy --model toy:shared --out eval.json"): {
        "cls": "slow"
    },  # 378 s at load 18
    ("bindlab/assets/toy-lit-minilm/README.md", "python -m bindlab eval mcq --model toy:lit-minilm ..."): {
        "cls": "mention"
    },  # elided
    ("bindlab/assets/toy-lit-minilm/README.md", "audit-splits --toy MODEL"): {"cls": "mention"},
    ("bindlab/assets/toy-lit-minilm/README.md", "ground --data data/fa-toy --model toy:lit-minilm"): {
        "cls": "mention"
    },  # 40 s at load 4, on the grid docs/reproductions.md generates
    ("bindlab/assets/toy-lit-minilm/README.md", "python -m bindlab eval pairs"): {"cls": "mention"},  # prose
    ("bindlab/assets/toy-lit-minilm/README.md", "train toy --arch lit --text minilm --out DIR"): {
        "cls": "parse",
        "subs": {"DIR": "runs/toy-lit-minilm"},
    },  # seven stages, about 2 hours (see the card)
    ("bindlab/assets/toy-lit-minilm/README.md", "generate saber --per-size 100 --sizes 2-5"): {
        "cls": "mention"
    },  # prose: the fresh MCQ sets (docs/reproductions.md gives the whole commands)
    ("bindlab/assets/toy-lit-minilm/README.md", "eval toy --model toy:lit-minilm --out eval.json"): {
        "cls": "slow"
    },  # minutes: MiniLM embeds the MCQ texts twice (the model, then minilm alone for tt)
    # --- docs/python.md: its commands are named in prose next to the Python function that runs the same study
    ("docs/python.md", "bindlab eval mcq"): {"cls": "mention"},
    ("docs/python.md", "bindlab eval pairs"): {"cls": "mention"},
    ("docs/python.md", "bindlab compare"): {"cls": "mention"},
    ("docs/python.md", "bindlab ground"): {"cls": "mention"},
    ("docs/python.md", "bindlab attention"): {"cls": "mention"},
    ("docs/python.md", "bindlab generate saber"): {"cls": "mention"},
    ("docs/python.md", "bindlab generate composet"): {"cls": "mention"},
    ("docs/python.md", "bindlab generate factors"): {"cls": "mention"},
    ("docs/python.md", "bindlab export-dataset"): {"cls": "mention"},
}

CLASSES = {"run", "slow", "parse", "mention"}
TIMEOUT_S = {"run": 1800, "slow": 3 * 3600}  # generous: the shared CPU is often 5x oversubscribed


# ---------------------------------------------------------------------------------------------------------------
# Finding the scenarios
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    file: str  # relative to the checkout
    kind: str  # "block" | "inline"
    line: int  # 1-based line where it starts
    text: str  # the block's lines (fences excluded) or the span


def _logical_lines(text: str) -> list[str]:
    """Lines with backslash continuations joined."""
    out: list[str] = []
    buf = ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append(buf + line)
        buf = ""
    if buf:
        out.append(buf)
    return out


def _is_command(line: str) -> bool:
    return bool(COMMAND_LINE.match(line.strip()))


def _is_layout(text: str) -> bool:
    """A folder-layout listing (``bindlab/ui/   one module per tab``), not commands: most lines are a path, two or
    more spaces, a description (or the indented rest of one)."""
    lines = [x for x in text.splitlines() if x.strip()]
    path_line = re.compile(r"^(?:[\w.-]+/)+[\w.-]*\s{2,}\S|^[\w-]+\.\w+\s{2,}\S|^\s{8,}\S")
    layout = [x for x in lines if path_line.match(x)]
    return bool(lines) and len(layout) >= 0.8 * len(lines)


def doc_files() -> list[Path]:
    files: list[Path] = []
    for pattern in DOC_GLOBS:
        files += sorted(ROOT.glob(pattern))
    return files


def find_scenarios(path: Path) -> list[Scenario]:
    """The fenced shell blocks that run bindlab and the inline spans that hold a bindlab command, in file order
    (an inline span repeated in one file is one scenario)."""
    rel = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Scenario] = []
    seen_inline: set[str] = set()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
                j += 1
            body = "\n".join(lines[i + 1 : j])
            if (
                m.group(2).lower() in SHELL_LANGS
                and not _is_layout(body)
                and any(_is_command(x) for x in _logical_lines(body))
            ):
                found.append(Scenario(rel, "block", i + 1, body))
            i = j + 1
            continue
        for span in INLINE.findall(lines[i]):
            if _is_command(span) and span not in seen_inline:
                seen_inline.add(span)
                found.append(Scenario(rel, "inline", i + 1, span))
        i += 1
    return found


def all_scenarios() -> list[Scenario]:
    return [s for f in doc_files() for s in find_scenarios(f)]


def matches(key: tuple[str, str], scenarios: list[Scenario]) -> list[Scenario]:
    """The scenarios of ``key``'s file whose text is the key's substring exactly, else those that contain it."""
    file, sub = key
    own = [s for s in scenarios if s.file == file]
    exact = [s for s in own if s.text == sub]
    return exact or [s for s in own if sub in s.text]


# ---------------------------------------------------------------------------------------------------------------
# Running and parsing
# ---------------------------------------------------------------------------------------------------------------


def _substitute(text: str, entry: dict) -> str:
    for old, new in (entry.get("subs") or {}).items():
        assert old in text, f"placeholder {old!r} of the table is not in the block any more: update the entry"
        text = text.replace(old, new)
    return text


def _bindlab_argv(line: str) -> list[str] | None:
    """The arguments after ``bindlab`` / ``-m bindlab`` on a shell line, up to a shell operator; None when the line
    does not run bindlab."""
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:
        return None
    for k, tok in enumerate(tokens):
        if tok == "bindlab" and (
            k == 0
            or tokens[k - 1] == "-m"
            or re.fullmatch(r"\w+=.*", tokens[k - 1])
            or tokens[:k][-3:-1] == ["nice", "-n"]
        ):
            argv = []
            for t in tokens[k + 1 :]:
                if t in {"&&", "||", "|", ";", ">", ">>", "2>", "&"}:
                    break
                argv.append(t)
            return argv
    return None


def _append(script: str, append: dict[str, str]) -> str:
    """``append``: flags added at the end of every logical line that runs the given command words."""
    out = []
    for line in _logical_lines(script):
        argv = _bindlab_argv(line) if _is_command(line) else None
        for words, flags in append.items():
            if argv and argv[: len(words.split())] == words.split():
                code, hash_, comment = line.partition("  #")
                line = f"{code.rstrip()} {flags}" + (f"   {hash_}{comment}" if hash_ else "")
        out.append(line)
    return "\n".join(out)


def _parse(argv: list[str]) -> str | None:
    """None when ``build_parser()`` accepts ``argv``, else what argparse said."""
    from bindlab.cli import build_parser

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(argv)
    except SystemExit as e:
        if e.code not in (0, None):
            return err.getvalue().strip() or f"exit {e.code}"
    return None


def _command(argv: list[str]) -> tuple[list[str], argparse.ArgumentParser]:
    """The command words at the start of ``argv`` (``eval mcq``) and the parser they reach."""
    from bindlab.cli import build_parser

    parser, words = build_parser(), []
    for tok in argv:
        action = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if action is None or tok not in action.choices:
            break
        words.append(tok)
        parser = action.choices[tok]
    return words, parser


def check_parse(sc: Scenario, entry: dict) -> None:
    text = _substitute(sc.text, entry)
    lines = [x for x in _logical_lines(text) if _is_command(x) or re.search(r"\s-m bindlab\s", x.split("#")[0])]
    assert lines, "no bindlab command line in the block"
    for line in lines:
        argv = _bindlab_argv(line)
        assert argv is not None, f"cannot split {line!r}"
        err = _parse(argv)
        assert err is None, f"{sc.file}:{sc.line}: the documented command does not parse:\n  {line.strip()}\n{err}"


def check_mention(sc: Scenario) -> None:
    argv = _bindlab_argv(sc.text.replace("...", " ").replace("…", " ")) or []
    words, parser = _command(argv)
    assert words and argv[0] == words[0], f"{sc.file}:{sc.line}: `{sc.text}` names no bindlab command"
    flags = [t.split("=")[0] for t in argv if t.startswith("--")]
    unknown = [f for f in flags if f not in parser._option_string_actions]
    assert not unknown, f"{sc.file}:{sc.line}: `{sc.text}`: {' '.join(words)} has no option {', '.join(unknown)}"


def _script(sc: Scenario, entry: dict, tmp: Path) -> str:
    text = _substitute(sc.text, entry)
    if entry.get("append"):
        text = _append(text, entry["append"])
    setup = entry.get("setup", "").replace("{fixtures}", str(FIXTURES))
    body = f"# setup from the test's table, not from the doc\n{setup}\n# the doc\n{text}\n" if setup else text + "\n"
    return re.sub(r"(?<![\w.])/tmp/", f"{tmp}/tmp/", body)


def _bin_folder(tmp: Path) -> str:
    """A folder with a ``bindlab`` command when the environment has none (the checkout is not pip-installed)."""
    if shutil.which("bindlab"):
        return ""
    b = tmp / "bin"
    b.mkdir(exist_ok=True)
    (b / "bindlab").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m bindlab "$@"\n')
    (b / "bindlab").chmod(0o755)
    return str(b)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_scenario(sc: Scenario, entry: dict, tmp: Path) -> float:
    """Runs the scenario as a bash script; returns its wall time. Fails with the script's output on an error."""
    (tmp / "tmp").mkdir(parents=True)
    cwd = tmp / "cwd"
    cwd.mkdir()
    home = os.environ["BINDLAB_HOME"] if entry.get("home") == "session" else str(tmp / "home")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"BINDLAB_DATA_ROOTS", "BINDLAB_PUBLIC", "SPACE_ID", "PYTHONPATH"}
    }
    path = [p for p in (_bin_folder(tmp), os.path.dirname(sys.executable)) if p]
    env.update(
        PATH=os.pathsep.join([*path, env.get("PATH", "")]),
        BINDLAB_HOME=home,
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    )
    script = _script(sc, entry, tmp)
    (tmp / "scenario.sh").write_text(script)
    t0, cpu0 = time.monotonic(), _children_cpu()
    # its own process group, so a timeout stops the commands too, not only bash (SIGINT first: an interrupted
    # `finetune` cancels its job, which runs in a session of its own)
    p = subprocess.Popen(
        ["bash", "-euo", "pipefail", str(tmp / "scenario.sh")],
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(timeout=TIMEOUT_S[entry["cls"]])
    except subprocess.TimeoutExpired:
        pytest.fail(f"{sc.file}:{sc.line}: timed out after {TIMEOUT_S[entry['cls']]} s\n--- script ---\n{script}")
    finally:  # timed out or interrupted: stop what the script started (SIGINT first: `finetune` then cancels its job)
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=20)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)  # whatever of its process group is left
    seconds = time.monotonic() - t0
    print(
        f"{sc.file}:{sc.line}: {seconds:.1f} s wall, {_children_cpu() - cpu0:.1f} s CPU, load {os.getloadavg()[0]:.1f}"
    )
    if p.returncode != 0:
        pytest.fail(
            f"{sc.file}:{sc.line}: exit {p.returncode} after {seconds:.0f} s\n--- script ---\n{script}"
            f"--- stderr (tail) ---\n{err[-6000:]}\n--- stdout (tail) ---\n{out[-2000:]}"
        )
    return seconds


# ---------------------------------------------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------------------------------------------


def _param(key: tuple[str, str]):
    entry = SCENARIOS[key]
    marks = [pytest.mark.slow] if entry["cls"] == "slow" else []
    name = re.sub(r"[^\w.:-]+", "_", f"{key[0]}:{key[1][:48]}").strip("_")
    return pytest.param(key, id=name, marks=marks)


def test_every_documented_command_is_classified():
    """A block or span in the docs that the table does not name fails: classify it."""
    scenarios = all_scenarios()
    assert scenarios, "no documented commands found: is the extraction broken?"
    claimed = {s for key in SCENARIOS for s in matches(key, scenarios)}
    missing = [s for s in scenarios if s not in claimed]
    assert not missing, "documented commands missing from SCENARIOS (classify them):\n" + "\n".join(
        f"  {s.file}:{s.line} ({s.kind}): {s.text.splitlines()[0][:100]!r}" for s in missing
    )


def test_table_entries_are_valid():
    """Every entry names one scenario of the docs (none stale, none ambiguous) and a known class."""
    scenarios = all_scenarios()
    problems = []
    for key, entry in SCENARIOS.items():
        if entry["cls"] not in CLASSES:
            problems.append(f"{key}: unknown class {entry['cls']!r}")
        found = matches(key, scenarios)
        if len(found) != 1:
            what = (
                "matches no documented command (stale)"
                if not found
                else f"matches {len(found)} ({', '.join(f'{s.file}:{s.line}' for s in found)}): make it longer"
            )
            problems.append(f"{key}: {what}")
        elif entry["cls"] == "mention" and found[0].kind != "inline":
            problems.append(f"{key}: only an inline span can be a mention")
    assert not problems, "\n".join(problems)


def test_layout_listings_are_not_commands():
    assert _is_layout(
        "app.py                 starts the app\nbindlab/ui/            one module per tab\n"
        "                       callbacks"
    )
    assert not _is_command("bindlab/ui/            one module per tab")
    assert _is_command("nice -n 5 python -m bindlab jobs compare X") and _is_command("bindlab models")


@pytest.mark.parametrize("key", [_param(k) for k in SCENARIOS])
def test_documented_command(key, tmp_path):
    entry = SCENARIOS[key]
    found = matches(key, all_scenarios())
    if len(found) != 1:
        pytest.fail(f"{key}: matches {len(found)} documented commands (see test_table_entries_are_valid)")
    sc = found[0]
    if entry["cls"] == "mention":
        check_mention(sc)
    elif entry["cls"] == "parse":
        check_parse(sc, entry)
    else:
        run_scenario(sc, entry, tmp_path)
