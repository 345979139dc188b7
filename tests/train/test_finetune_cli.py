"""The triplets / finetune / jobs commands: output and one-line user errors (in-process, no training)."""

from __future__ import annotations

import json

from bindlab.cli import main


def test_generate_triplets_prints_splits_and_rejections(tmp_path, capsys):
    assert main(["generate", "triplets", "--out", str(tmp_path / "t"), "--n", "60", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "generated 60 triplet rows (30 examples, seed 2" in out
    assert "splits: " in out and "heldout" in out and "rejected examples: " in out
    rows = [json.loads(x) for x in (tmp_path / "t" / "triplets.jsonl").read_text().splitlines()]
    assert len(rows) == 60


def test_user_errors_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    assert main(["generate", "triplets", "--out", str(tmp_path / "t"), "--n", "7"]) == 2
    assert "even" in capsys.readouterr().err
    assert main(["finetune", "--model", "minilm", "--data", str(tmp_path / "missing"), "--background"]) == 2
    assert "not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["finetune", "--model", "minilm", "--data", str(tmp_path / "empty"), "--background"]) == 2
    assert "no triplets at" in capsys.readouterr().err
    assert main(["finetune", "--data", str(tmp_path)]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["jobs", "show", "nope"]) == 2
    assert "no job 'nope'" in capsys.readouterr().err
    assert main(["jobs", "list"]) == 0
    assert "no jobs under" in capsys.readouterr().out
