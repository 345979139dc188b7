"""scripts/lit_twin_terms.py: a lit run's twin margins taken apart on its own pool's swap pairs (docs/reproductions.md)."""

from __future__ import annotations

import json

from tests.script_module import load_script
from tests.train.test_toy_lit import _train


def test_lit_twin_terms_reads_the_run_rebuilds_its_targets_and_prints_one_row_per_points(
    tmp_path, monkeypatch, capsys, minilm
):
    """A tiny ranked phrase run with shuffled twins: the script rebuilds the pool (with the run's twin layout) and the
    targets from the run folder alone, takes true swaps only, and prints the targets' row and the model's."""
    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "lit-terms"
    assert (
        _train(
            out,
            3,
            [
                "--lit-target",
                "phrases",
                "--target-bag-weight",
                "0",
                "--target-rank-steps",
                "5",
                "--twin-share",
                "0.5",
                "--twin-layout",
                "shuffled",
                "--pool-size",
                "40",
            ],
        )
        == 0
    )
    assert json.loads((out / "training.json").read_text())["train_config"]["twin_layout"] == "shuffled"
    capsys.readouterr()  # the training's own output
    assert load_script("lit_twin_terms").main(["--run", str(out), "--pairs", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("4 swap pairs of ") and "x 2 captions" in lines[0]
    rows = [line for line in lines if line.startswith("| targets") or line.startswith("| toy:")]
    assert len(rows) == 2 and rows[0].split("|")[6].strip() == "1" and rows[1].startswith(f"| toy:{out} |")
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert all(0 <= float(c) <= 1 for c in cells[-2:])  # shares of decisions ranked right
    capsys.readouterr()

    # a fresh pool: other scenes, the run's hold-out kept out, its captions cached in the run folder
    assert (
        load_script("lit_twin_terms").main(
            ["--run", str(out), "--pairs", "4", "--fresh-seed", "5", "--fresh-size", "30"]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert "of a fresh pool (30 scenes, seed 5, " in lines[0]
    assert (out / "fresh-5-30-captions.npz").exists() and (out / "fresh-5-30-twin_captions.npz").exists()
    rows = [line for line in lines if line.startswith("| targets") or line.startswith("| toy:")]
    assert len(rows) == 2 and rows[0].split("|")[6].strip() == "1"
    import pytest

    with pytest.raises(SystemExit, match="the run's own seed"):
        load_script("lit_twin_terms").main(["--run", str(out), "--fresh-seed", "0"])
