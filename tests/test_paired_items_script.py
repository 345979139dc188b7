"""scripts/paired_items.py: paired gains of per-item result files over seeds (docs/reproductions.md uses it)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.script_module import load_script


def _script():
    return load_script("paired_items")


def _write(path, credits, ids=None):
    ids = ids or [f"q{i}" for i in range(len(credits))]
    path.write_text("".join(json.dumps({"id": i, "credit": c}) + "\n" for i, c in zip(ids, credits, strict=True)))
    return str(path)


def test_paired_gains_per_run_and_over_runs(tmp_path, capsys):
    mod = _script()
    base = _write(tmp_path / "base.jsonl", [0, 0, 1, 0, 1, 0, 0, 1])
    up = _write(tmp_path / "a.jsonl", [1, 1, 1, 1, 1, 1, 0, 1])  # +4 of 8
    same = _write(tmp_path / "b.jsonl", [0, 0, 1, 0, 1, 0, 0, 1])  # +0
    assert mod.main(["--base", base, "--runs", f"{up},{same}"]) == 0
    out = capsys.readouterr().out
    assert (
        "base 0.375 (n = 8)" in out
        and "0.875, gain +0.500" in out
        and "gain of their per-item mean +0.250" in out
        and "gain +0.000 [+0.000, +0.000]" in out
    )
    res = mod.paired(np.array([0, 0, 1, 0, 1, 0, 0, 1.0]), [np.array([1, 1, 1, 1, 1, 1, 0, 1.0])] * 3)
    assert res["sd"] == 0.0 and res["gain"] == pytest.approx(0.5) and res["gain_ci95"][0] > 0


def test_files_with_other_items_are_refused(tmp_path):
    mod = _script()
    base = _write(tmp_path / "base.jsonl", [0, 1])
    other = _write(tmp_path / "other.jsonl", [1, 1], ids=["q1", "q0"])
    with pytest.raises(SystemExit, match="other items"):
        mod.main(["--base", base, "--runs", other])
