"""The options are written once: the run options (``RunOptions``), the device check (``check_device``) and the toy
training settings (``TrainConfig``, ``ModelSize``) each have one home, and the CLI's flags are built from them.

The flags a parser holds are compared with the dataclass fields they come from (name, default, type, help, choices,
metavar), and the source is read (``ast``) for a second copy of each: a field declared again, a flag added by hand,
a device string parsed outside the check.
"""

from __future__ import annotations

import argparse
import ast
from dataclasses import MISSING, asdict, fields
from pathlib import Path

import pytest

from bindlab.cli import build_parser
from bindlab.cli.common import field_argument
from bindlab.studies.toy import ModelSize, ToyTrainRequest, TrainConfig, train_command
from bindlab.studies.validate import DEVICE_HELP, RunOptions, check_run_options, run_options

PACKAGE = Path(__file__).resolve().parent.parent / "bindlab"
PARSER = build_parser()
TYPES = {"int": int, "float": float}


def subparser(*path: str) -> argparse.ArgumentParser:
    p = PARSER
    for name in path:
        p = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    return p


def parsers(p: argparse.ArgumentParser = PARSER, path: tuple[str, ...] = ()):
    yield path, p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from parsers(sub, (*path, name))


def actions(p: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in p._actions if a.option_strings and a.dest != "help"}


# --- the flags come from the fields ---------------------------------------------------------------------------------
TOY = subparser("train", "toy")
TOY_FIELDS = [f for cls in (ToyTrainRequest, ModelSize) for f in fields(cls) if "help" in f.metadata]
CLI_ONLY = {"eval_sample", "eval_per_size", "no_progress"}  # the final evaluation's and the bar's, not settings


@pytest.mark.parametrize("f", TOY_FIELDS, ids=lambda f: f.name)
def test_every_toy_flag_is_its_fields_name_default_type_and_help(f):
    a = actions(TOY)[f.name]
    assert a.option_strings == [f.metadata.get("flag", "--" + f.name.replace("_", "-"))]
    assert a.help == f.metadata["help"] and a.metavar == f.metadata.get("metavar")
    assert a.choices == f.metadata.get("choices")
    assert a.type is TYPES.get(str(f.type))
    if f.metadata.get("required"):
        assert a.required and a.default is None
    else:
        assert not a.required and a.default == f.default  # the dataclass's default, never one of the CLI's own
    assert field_argument(f)[0] == a.option_strings[0]


def test_train_toy_has_no_flag_written_by_hand():
    assert set(actions(TOY)) == {f.name for f in TOY_FIELDS} | CLI_ONLY
    assert len(TOY_FIELDS) >= 40  # every setting of a run is a flag


def test_the_flagless_settings_are_the_loops_own():
    flagless = {f.name for f in fields(TrainConfig) if "help" not in f.metadata}
    assert flagless == {"warmup", "weight_decay", "render_workers", "model"}  # model: the ModelSize flags


def _train(argv: list[str]) -> ToyTrainRequest:
    from bindlab.cli.toy import _train_request

    return _train_request(PARSER.parse_args(argv))


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--holdout-combos", "0.15", "--twin-share", "0.5", "--twin-layout", "shuffled", "--max-objects", "5"],
        ["--pair-twins", "0.25", "--pair-scenes", "40", "--render-size", "128", "--render-share", "0.5"],
        ["--width", "16", "--layers", "2", "--heads", "2", "--stem", "light", "--patch-size", "8"],
    ],
)
def test_a_parsed_command_is_the_request_and_its_card_command_parses_back_to_it(tmp_path, extra):
    argv = ["train", "toy", "--arch", "clip", "--out", str(tmp_path / "m"), "--steps", "30", "--seed", "3", *extra]
    cfg = _train(argv).config()
    assert cfg.steps == 30 and cfg.seed == 3 and cfg.warmup == 3  # a tenth of the steps, at most 60
    if "--holdout-combos" in extra:
        assert (cfg.holdout_fraction, cfg.twin_layout, cfg.max_objects) == (0.15, "shuffled", 5)
    if "--width" in extra:
        sizes = {"width": 16, "layers": 2, "text_layers": 2, "heads": 2, "patch_size": 8, "stem": "light"}
        assert cfg.model == {**sizes, "embed_dim": 16}
        assert cfg.model_config(10).embed_dim == 16 and cfg.model_config(10).stem == "light"
    command = train_command(asdict(cfg), out=str(tmp_path / "again"))
    assert command.startswith("python -m bindlab train toy --arch clip --out ")
    again = _train(command.split()[3:]).config()
    shown = {f.name for f in fields(TrainConfig) if "help" in f.metadata and f.metadata.get("shown") is not None}
    for name in shown - {"hard_share", "checkpoint_every", "threads"}:  # the three the command never names
        assert getattr(again, name) == getattr(cfg, name), name
    assert again.model == cfg.model and again.holdout_fraction == cfg.holdout_fraction


def test_a_lit_command_names_the_text_model_and_its_lit_settings_only_for_lit():
    lit = TrainConfig(arch="lit", lit_target="phrases", target_rank_steps=5, rank_scenes=10, twin_share=0.5)
    command = train_command(asdict(lit))
    assert command.startswith("python -m bindlab train toy --arch lit --text minilm --out DIR --steps 6000")
    assert "--lit-target phrases --target-bag-weight 0.5 --target-shrink 0.03" in command
    assert "--target-rank-steps 5 --rank-scenes 10" in command and "--target-twin-weight" not in command
    clip = train_command({**asdict(TrainConfig()), "captions_per_scene": 2, "lit_target": "phrases"})
    assert "--captions-per-scene" not in clip and "--lit-target" not in clip and "--text" not in clip


RUN_COMMANDS = [  # finetune's --batch-size is its training config's (triplets per step), not a run option
    path for path, p in parsers() if "device" in actions(p) and "batch_size" in actions(p) and path != ("finetune",)
]


def test_the_run_commands_are_found():
    assert {("eval", "mcq"), ("eval", "pairs"), ("compare",), ("eval", "benchmark")} <= set(RUN_COMMANDS)


@pytest.mark.parametrize("path", RUN_COMMANDS, ids=" ".join)
def test_every_run_flag_is_its_run_option(path):
    own = actions(subparser(*path))
    for f in fields(RunOptions):
        a = own.get(f.name)
        if a is None or (f.name == "model" and a.option_strings != ["--model"]):
            continue
        flag, kw = field_argument(f)
        assert a.option_strings == [flag] and a.metavar == kw.get("metavar"), (path, f.name)
        assert a.type is kw.get("type"), (path, f.name)
        if f.name == "device":
            assert a.help == DEVICE_HELP and a.default in (f.default, None)  # None: finetune's --config decides
        if f.name in ("limit", "seed"):
            assert a.default == f.default and a.type is int
        if f.name == "batch_size":
            assert a.type is int and a.default in (64, None)  # the CLI's batch (RunOptions' cli_default) or none
        if f.name == "skip_bad":
            assert isinstance(a, argparse._StoreTrueAction) and a.help == f.metadata["help"]


# --- the checks are the run options' ------------------------------------------------------------------------------
REQUESTS = [
    ("bindlab.studies.browse", "McqRequest"),
    ("bindlab.studies.pairs", "PairsRequest"),
    ("bindlab.studies.benchmark", "BenchmarkRequest"),
    ("bindlab.studies.compare", "CompareRequest"),
    ("bindlab.studies.finetune", "FinetuneCompareRequest"),
    ("bindlab.studies.grounding", "GroundingRequest"),
    ("bindlab.studies.grounding_sweep", "SweepRequest"),
    ("bindlab.studies.attention", "AttentionRequest"),
    ("bindlab.studies.attention", "CaptionRequest"),
    ("bindlab.studies.map", "MapRequest"),
    ("bindlab.studies.toy", "ToyEvalRequest"),
]


def _request(module: str, name: str):
    import importlib

    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("module, name", REQUESTS, ids=lambda x: x.rsplit(".", 1)[-1])
def test_every_request_takes_its_run_options_from_run_options(module, name):
    cls = _request(module, name)
    declared = {f.name for f in fields(cls)} & {f.name for f in fields(RunOptions)} - {"model"}
    assert declared, name
    assert declared <= {f.name for f in run_options(cls)}, name  # none declared with a default of its own
    for f in run_options(cls):
        base = RunOptions.__dataclass_fields__[f.name]
        assert f.metadata["check"] is base.metadata["check"]
        if f.default is not MISSING and f.name not in ("model", "limit", "batch_size"):
            assert f.default == base.default  # the map's limit and the grounding batch are their own, named


def test_run_options_are_checked_once_with_one_message_each():
    assert RunOptions(model=" bow ", device=" cpu ", batch_size="8").batch_size == 8
    assert RunOptions(dtype=" BFloat16 ").dtype == "bfloat16" and RunOptions(dtype=None).dtype == "auto"
    for kwargs, message in [
        ({"limit": -1}, "--limit must be 0 or more"),
        ({"limit": 2.5}, "--limit must be a whole number"),
        ({"batch_size": 0}, "--batch-size must be at least 1"),
        ({"seed": -3}, "--seed must be between 0 and"),
        ({"seed": 2**32}, "--seed must be between 0 and"),
        ({"device": "tpu"}, "choose auto, cpu, cuda, cuda:N or mps"),
        ({"dtype": "bf16"}, "unknown dtype 'bf16'; choose auto, float32, bfloat16 or float16"),
    ]:
        with pytest.raises(ValueError, match=message):
            RunOptions(**kwargs)
    from bindlab.studies.attention import AttentionRequest
    from bindlab.studies.pairs import PairsRequest

    for cls, kwargs in [(AttentionRequest, {"model": "minilm"}), (PairsRequest, {"data": "x.jsonl", "model": "m"})]:
        with pytest.raises(ValueError, match="--seed must be between 0 and"):  # the same sentence from every request
            cls(**kwargs, seed=-3)


def test_check_run_options_works_on_frozen_requests():
    from bindlab.studies.map import MapRequest

    req = MapRequest(model=" bow ", seed=7)
    assert req.model == "bow" and req.seed == 7
    check_run_options(req)  # idempotent, frozen or not
    with pytest.raises(ValueError, match="--seed must be between 0 and"):
        MapRequest(seed=-1)


# --- and nothing is written twice ------------------------------------------------------------------------------------
def _sources() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}


SOURCES = _sources()


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def test_the_device_strings_are_parsed_in_one_place():
    """``cuda:N`` in code (not prose) only where the device is resolved and checked; every other module calls
    ``check_device`` (a request through its run options)."""
    homes = {PACKAGE / "config.py", PACKAGE / "studies" / "validate.py"}
    found = set()
    for path, tree in SOURCES.items():
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if "cuda:N" in node.value:
                    found.add(path)
    assert found and found <= homes, sorted(map(str, found - homes))
    defs = [
        p
        for p, t in SOURCES.items()
        for n in ast.walk(t)
        if isinstance(n, ast.FunctionDef) and n.name == "check_device"
    ]
    assert defs == [PACKAGE / "studies" / "validate.py"]
    callers = {
        p.name
        for p, t in SOURCES.items()
        if p.parent.name == "studies"
        for n in ast.walk(t)
        if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "check_device"
    }
    assert callers <= {"validate.py"}  # the requests check the device through check_run_options


def _flag_literals(tree: ast.Module) -> list[str]:
    return [
        n.args[0].value
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and getattr(n.func, "attr", "") == "add_argument"
        and n.args
        and isinstance(n.args[0], ast.Constant)
    ]


TOY_ONLY = (
    {f.name for f in fields(TrainConfig) if "help" in f.metadata}
    - {f.name for f in fields(RunOptions)}
    - {
        "arch",
        "text",
        "out",
        "steps",
        "lr",
        "threads",
        "checkpoint_every",
        "heads",
        "layers",
        "width",
        "stem",
        "image_size",
        "patch_size",
        "max_objects",
    }
)  # names other features use for their own settings


def test_no_run_or_toy_flag_is_added_by_hand():
    toy_flags = {field_argument(f)[0] for f in TOY_FIELDS if f.name in TOY_ONLY}
    assert "--holdout-combos" in toy_flags and "--target-bag-weight" in toy_flags
    by_hand = {str(p.relative_to(PACKAGE)): set(_flag_literals(t)) for p, t in SOURCES.items()}
    for path, flags in by_hand.items():
        assert not flags & toy_flags, (path, flags & toy_flags)
        assert not flags & {"--device", "--skip-bad"}, path  # always RunOptions' (add_run_args / add_device)


def test_the_toy_settings_are_declared_once():
    """No class but ``TrainConfig``/``ModelSize`` declares a toy setting as a field (the request inherits them)."""
    homes = {PACKAGE / "train" / "toy" / "config.py"}
    for path, tree in SOURCES.items():
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            names = {s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            if names & TOY_ONLY:
                assert path in homes, (path, cls.name, sorted(names & TOY_ONLY))
    assert len(TOY_ONLY) >= 25


def test_run_options_are_declared_once():
    """A request declares a run option only through ``run_option`` (its default, help and check are RunOptions')."""
    names = {f.name for f in fields(RunOptions)} - {"model"}
    for path, tree in SOURCES.items():
        if path.parent.name != "studies":
            continue
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name.endswith("Request")):
            for s in cls.body:
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id in names:
                    call = s.value
                    assert isinstance(call, ast.Call) and getattr(call.func, "id", "") == "run_option", (
                        path.name,
                        cls.name,
                        s.target.id,
                    )
