"""The toy study: requests are checked before work, an evaluation returns one Result, the card needs a trained
folder, and ``eval toy`` prints and writes what the study returned."""

from __future__ import annotations

import json

import pytest

from bindlab.studies.toy import ToyEvalRequest, ToyTrainRequest, run_toy_eval


@pytest.fixture(scope="module")
def random_toy(tmp_path_factory):
    from bindlab.encoders.toy.backend import build_random

    return build_random(tmp_path_factory.mktemp("toy") / "m", arch="clip", width=16, layers=1, heads=2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"model": "nope:x"}, "unknown encoder backend"),
        ({"model": "toy:clip", "sample": -1}, "sample must be >= 0"),
        ({"model": "toy:clip", "per_size": -2}, "per_size must be >= 0"),
    ],
)
def test_eval_request_is_checked_before_work(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ToyEvalRequest(**kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"arch": "big", "out": "x"}, "unknown toy arch"),
        ({"arch": "clip", "out": ""}, "output folder"),
        ({"arch": "clip", "out": "x", "batch_size": 1}, "batch_size"),
    ],
)
def test_train_request_is_checked_before_work(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ToyTrainRequest(**kwargs)


def test_eval_returns_one_result_with_summary_lines_and_provenance(random_toy):
    res = run_toy_eval(ToyEvalRequest(model=random_toy, sample=12, per_size=0, seed=1))
    assert res.feature == "toy"
    s = res.summary["single_object"]
    assert s["n"] == 12 and 0.0 <= s["t2i_top1"] <= 1.0 and "mcq" not in res.summary
    assert res.notes and res.notes[0].startswith("single object (M=12)")
    assert res.provenance["encoder"]["id"] == random_toy and res.provenance["seed"] == 1
    assert res.provenance["settings"]["sample"] == 12


def test_card_needs_a_folder_trained_by_train_toy(random_toy, tmp_path):
    # build_random writes a training.json without a train_config: refused before any evaluation runs
    with pytest.raises(ValueError, match="--card needs a toy model folder trained by 'train toy'"):
        run_toy_eval(ToyEvalRequest(model=random_toy, sample=4, per_size=0, card=True))


def test_eval_toy_command_prints_the_study_lines_and_writes_its_summary(random_toy, tmp_path, capsys):
    from bindlab.cli import main

    out = tmp_path / "eval.json"
    assert main(["eval", "toy", "--model", random_toy, "--sample", "6", "--per-size", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "single object (M=6)" in printed and "MCQ tt:" in printed
    written = json.loads(out.read_text())
    assert written["single_object"]["n"] == 6 and written["mcq"]["per_size"] == 1
    assert written["provenance"]["encoder"]["id"] == random_toy and "notes" not in written
