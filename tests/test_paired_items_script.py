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


def test_a_family_table_carries_the_two_level_interval_and_holm(tmp_path):
    """Three seeds that all gain hold; a row where the seeds disagree is mixed or n.s.; Holm p >= raw p."""
    mod = _script()
    rng = np.random.default_rng(0)
    base_v = rng.integers(0, 2, 60).astype(float)
    base = _write(tmp_path / "base.jsonl", list(base_v))
    ups = [_write(tmp_path / f"up{s}.jsonl", list(np.maximum(base_v, rng.integers(0, 2, 60)))) for s in range(3)]
    flips = [_write(tmp_path / f"f{s}.jsonl", list(rng.integers(0, 2, 60).astype(float))) for s in range(3)]
    rows = [
        {"row": "gains", "base": base, "runs": ups, "key": "credit"},
        {"row": "noise", "base": base, "runs": flips, "key": "credit"},
    ]
    table = mod.family_table(rows)
    lines = table.splitlines()
    assert lines[0].startswith("| row | n | base | per seed |") and len(lines) == 4
    gains, noise = (line.split(" | ") for line in lines[2:])
    assert gains[-1].rstrip(" |") == "holds" and noise[-1].rstrip(" |") in {"n.s.", "mixed"}
    p_raw, p_holm = (float(x.replace("<", "")) for x in gains[6:8])
    assert p_holm >= p_raw
    res = mod.paired(base_v, [np.maximum(base_v, 1.0)] * 3)
    assert res["seeds"]["verdict"] == "holds" and res["seeds"]["n_seeds"] == 3
