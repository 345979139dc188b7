"""The task registry: every task's metadata, every task run on a tiny model and its result saved and loaded back
equal, no dispatch on task names outside bindlab/tasks, and a benchmark added as one module showing up in
``bindlab tasks``, Compare and the API."""

from __future__ import annotations

import ast
import json
import math
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import numpy as np
import pytest

import bindlab
from bindlab.eval.metrics import choice_chance
from bindlab.result import Result
from bindlab.tasks import TASK_PATH_ENV, TaskOptions, get_task, list_tasks, parse_spec
from tests.cli_run import run

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
BUILTIN = ["mcq", "retrieval", "pairs", "aro_vg_attribution", "colorswap", "sugarcrepe", "sugarcrepe_pp", "winoground"]
FIXTURE_DIR = {"aro_vg_attribution": "aro"}  # the published benchmarks' small local copies, by task


def same(a, b) -> bool:
    """Equal as data, NaN equal to NaN, numpy arrays by value and dtype; a tuple may come back as a list."""
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


# --- metadata -------------------------------------------------------------------------------------------------------
def test_the_builtins_are_registered_in_order():
    assert [t.metadata.name for t in list_tasks()][: len(BUILTIN)] == BUILTIN


@pytest.mark.parametrize("name", BUILTIN)
def test_every_task_has_complete_metadata(name):
    task = get_task(name)
    m = task.metadata
    m.check()
    assert m.name == name and m.label and m.description and m.source and m.citation
    assert m.modalities <= {"text", "image"} and m.modalities
    assert m.version >= 1
    # chance: the one function of the item's shape, never a stored constant
    assert m.chance == (choice_chance(*m.item_shape) if m.item_shape else None)
    assert typing.is_typeddict(task.summary_type)
    assert m.main_score in task.summary_type.__annotations__ or m.main_score in typing.get_type_hints(task.summary_type)


def test_chance_levels_follow_the_item_shapes():
    chance = {t.metadata.name: t.metadata.chance for t in list_tasks()}
    assert chance["mcq"] == 0.25 and chance["retrieval"] is None
    assert chance["pairs"] == pytest.approx(1 / 6) and chance["winoground"] == pytest.approx(1 / 6)
    assert chance["sugarcrepe"] == 0.5 and chance["sugarcrepe_pp"] == pytest.approx(1 / 3)


def test_bad_metadata_and_unknown_names_are_refused():
    from dataclasses import replace

    good = get_task("mcq").metadata
    for bad, match in [
        (replace(good, name="Bad Name"), "task name"),
        (replace(good, modalities=frozenset({"audio"})), "modalities"),
        (replace(good, main_score=""), "main_score"),
        (replace(good, item_shape=(0, 1)), "positive"),
    ]:
        with pytest.raises(ValueError, match=match):
            bad.check()
    with pytest.raises(ValueError, match="unknown task 'nope'; choose from mcq, retrieval, pairs"):
        get_task("nope")


def test_bindlab_tasks_lists_every_task():
    out = run("tasks").stdout
    lines = out.splitlines()
    assert lines[0].split() == ["name", "modalities", "main", "score", "chance", "source"]
    for name in BUILTIN:
        assert any(line.split()[0] == name for line in lines[1:]), name
    assert re.search(r"^pairs\s+image\+text\s+group\s+0\.167\s", out, re.M)
    rows = json.loads(run("tasks", "--json").stdout)
    assert [r["name"] for r in rows][: len(BUILTIN)] == BUILTIN
    assert {r["name"]: r["chance"] for r in rows}["mcq"] == 0.25


# --- every task runs on a tiny model, and its result saves and loads back equal -------------------------------------
def _run(name: str, small_path: str) -> Result:
    if name in ("mcq", "retrieval"):
        return bindlab.run_task(name, "bow", data=small_path, pairings="tt", progress=False)
    if name == "pairs":
        return bindlab.run_task(name, "toy:clip", limit=6, progress=False)
    data = FIXTURES / FIXTURE_DIR.get(name, name)
    model = "minilm" if name == "sugarcrepe_pp" else "toy:clip"  # SugarCrepe++ text-only (TOT): a text encoder
    return bindlab.run_task(f"benchmark:{name}={data}", model, progress=False)


@pytest.fixture(scope="module")
def task_results(small_benchmark):
    path, _ = small_benchmark
    return {name: _run(name, str(path)) for name in BUILTIN}


@pytest.mark.parametrize("name", BUILTIN)
def test_each_task_runs_and_its_result_round_trips(name, task_results, tmp_path):
    task, res = get_task(name), task_results[name]
    assert res.primary_metric == task.metadata.main_score
    assert isinstance(res.primary, float) and 0.0 <= res.primary <= 1.0
    required = getattr(task.summary_type, "__required_keys__", set())
    assert required <= set(res.summary), sorted(required - set(res.summary))
    scores = task.scores(res)
    assert scores and all({"column", "value", "ci95", "n", "chance"} <= set(s) for s in scores)
    back = Result.load(res.save(tmp_path / f"{name}.json"))
    for field in ("feature", "summary", "rows", "tables", "notes", "provenance", "primary_metric", "figures_data"):
        assert same(getattr(res, field), getattr(back, field)), field


def test_a_task_gives_what_its_study_gives(task_results, small_benchmark):
    """The task is the study's scoring: ``eval mcq`` (run_mcq) and the task give the same numbers."""
    path, _ = small_benchmark
    study = bindlab.evaluate_mcq("bow", data=path, pairings="tt", progress=False)
    assert same(study.summary, task_results["mcq"].summary) and same(study.rows, task_results["mcq"].rows)


def test_a_model_that_cannot_do_a_task_is_told_why():
    with pytest.raises(ValueError, match="bow cannot be scored on pairs: text-only: pairs need an image"):
        bindlab.run_task("pairs", "bow", progress=False)


def test_old_eval_out_files_load_as_summary_only(small_benchmark, tmp_path):
    from bindlab.result import SUMMARY_ONLY_NOTE

    path, _ = small_benchmark
    out = tmp_path / "mcq.json"
    run("eval", "mcq", "--model", "bow", "--data", path, "--out", out, "--no-progress")
    res = Result.load(out)
    assert res.feature == "mcq" and res.primary_metric == "accuracy" and res.notes[-1] == SUMMARY_ONLY_NOTE
    assert res.rows == [] and res.summary["pairings"]["tt"]["n"] > 0


# --- no dispatch on task names outside the registry -----------------------------------------------------------------
def _name_literals(node: ast.AST, names: set[str]) -> list[str]:
    found = []
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            if n.value in names or n.value.startswith("benchmark:"):
                found.append(n.value)
    return found


def dispatch_on_task_names(path: Path, names: set[str]) -> list[str]:
    """``if``/``elif`` tests, conditional expressions and comprehension filters that compare with a task's name
    (or ``benchmark:``) in one source file: ``file:line: the literal``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tests = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.IfExp | ast.While):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests += node.ifs
    return [f"{path.relative_to(ROOT)}:{t.lineno}: {lit!r}" for t in tests for lit in _name_literals(t, names)]


# the same words, not task names: a table column of the Pairs tab, the kind of a finetune report's row
NOT_DISPATCH = {("bindlab/ui/pairs.py", "'pairs'"), ("bindlab/ui/walkthrough.py", "'mcq'")}


def test_no_if_elif_on_task_names_outside_the_registry():
    names = {t.metadata.name for t in list_tasks()}
    files = [
        ROOT / "bindlab" / "api.py",
        *(f for d in ("studies", "cli", "ui") for f in sorted((ROOT / "bindlab" / d).rglob("*.py"))),
    ]
    found = [
        hit
        for f in files
        for hit in dispatch_on_task_names(f, names)
        if (hit.split(":")[0], hit.split(": ", 1)[1]) not in NOT_DISPATCH
    ]
    assert not found, "dispatch on task names (ask the registry, bindlab.tasks, instead):\n" + "\n".join(found)


def test_the_grep_finds_a_planted_dispatch(tmp_path):
    p = ROOT / "tests" / "tasks" / "_planted.py"
    p.write_text(
        'def f(task):\n    if task == "mcq":\n        return 1\n    return [t for t in task if t.startswith("benchmark:")]\n'
    )
    try:
        assert len(dispatch_on_task_names(p, {"mcq"})) == 2
    finally:
        p.unlink()


# --- a benchmark added as one module --------------------------------------------------------------------------------
TOY_MODULE = '''"""A toy benchmark: does the model put a sentence nearer its paraphrase than a word-swapped foil?"""

from __future__ import annotations

import numpy as np

from bindlab.eval.metrics import bootstrap_ci, choice_chance
from bindlab.result import Result
from bindlab.tasks import Task, TaskMetadata, register_task

ITEMS = [
    ("a red cube left of a blue ball", "a red cube to the left of a blue ball", "a blue cube left of a red ball"),
    ("a small dog under a big table", "a small dog beneath a big table", "a big dog under a small table"),
    ("a green cup on a white plate", "a green cup sitting on a white plate", "a white cup on a green plate"),
    ("the tall man holds a short pole", "the tall man is holding a short pole", "the short man holds a tall pole"),
]


class ToySwap(Task):
    metadata = TaskMetadata(
        name="toy_swap",
        label="toy swap",
        description="paraphrase above a word-swapped foil",
        modalities=frozenset({"text"}),
        main_score="accuracy",
        data_kind="toy",
        citation="a test of bindlab",
        source="tests/tasks",
        item_shape=(1, 1),
    )

    def run(self, encoder, data, options=None, progress=None):
        texts = [t for item in ITEMS for t in item]
        e = np.asarray(encoder.embed_texts(texts), dtype=np.float64).reshape(len(ITEMS), 3, -1)
        passes = (np.einsum("nd,nd->n", e[:, 0], e[:, 1]) > np.einsum("nd,nd->n", e[:, 0], e[:, 2])).astype(float)
        summary = {
            "accuracy": float(passes.mean()),
            "accuracy_ci95": bootstrap_ci(passes),
            "n": len(ITEMS),
            "chance": choice_chance(1, 1),
        }
        rows = [{"id": str(k), "pass": bool(p)} for k, p in enumerate(passes)]
        return Result("toy_swap", summary, rows, primary_metric="accuracy")


register_task(ToySwap())
'''


@pytest.fixture
def toy_task(tmp_path, monkeypatch):
    """The toy benchmark as one module in a folder of ``$BINDLAB_TASK_PATH``; unregistered afterwards."""
    from bindlab.tasks import base

    folder = tmp_path / "my_tasks"
    folder.mkdir()
    (folder / "toy_swap.py").write_text(TOY_MODULE)
    monkeypatch.setenv(TASK_PATH_ENV, str(folder))
    yield folder
    base._TASKS.pop("toy_swap", None)
    base._LOADED.discard(str((folder / "toy_swap.py").resolve()))
    sys.modules.pop("bindlab_task_toy_swap", None)


def test_a_benchmark_added_as_one_module_shows_up_everywhere(toy_task, tmp_path):
    from bindlab.studies import compare as cs

    env = {**os.environ, TASK_PATH_ENV: str(toy_task), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(  # the command, in a fresh process
        [sys.executable, "-m", "bindlab", "tasks"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"^toy_swap\s+text\s+accuracy\s+0\.500\s+tests/tasks$", out, re.M), out
    assert "toy_swap" in [t.metadata.name for t in bindlab.list_tasks()]  # the API
    assert ("toy swap", "toy_swap") in cs.suite_choices()  # the Compare tab's suite boxes
    res = bindlab.run_task("toy_swap", "minilm", progress=False)
    assert res.primary_metric == "accuracy" and res.summary["n"] == 4
    cmp = bindlab.compare(["bow", "minilm"], suite="toy_swap", use_cache=False, progress=False)  # Compare
    board = {r["model"]: r for r in cmp.summary["leaderboard"]}
    assert cmp.summary["sort_by"] == "toy swap (accuracy)"
    assert board["minilm"]["toy swap (accuracy)"] == res.primary
    assert board["minilm"]["toy swap (accuracy) 95% CI"] == list(res.summary["accuracy_ci95"])
    assert [c for c in cmp.summary["cross_benchmark"][0] if c != "model"] == [
        "toy swap (accuracy)",
        "toy swap (accuracy) vs chance",
    ]
    assert parse_spec("toy_swap")[0].metadata.name == "toy_swap"
    assert TaskOptions().limit == 0
