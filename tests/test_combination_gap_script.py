"""scripts/combination_gap.py: seen minus never-shown retrieval over training seeds (docs/reproductions.md uses it)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.script_module import load_script


def _write(path, seen, unseen, exposed=0):
    rows = [{"combination": "seen", "t2i": int(h), "i2t": 1} for h in seen]
    rows += [{"combination": "unseen_clean", "t2i": int(h), "i2t": 1} for h in unseen]
    rows += [{"combination": "unseen_colour_slot", "t2i": 0, "i2t": 0}] * exposed
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_a_gap_in_every_seed_holds_and_none_is_ns(tmp_path, capsys):
    mod = load_script("combination_gap")
    rng = np.random.default_rng(0)
    runs = [
        _write(tmp_path / f"s{s}.jsonl", rng.random(800) < 0.8, rng.random(110) < 0.6, exposed=37) for s in range(5)
    ]
    assert mod.main(["--runs", ",".join(runs), "--key", "t2i,i2t"]) == 0
    table = capsys.readouterr().out.splitlines()
    t2i = next(line for line in table if line.startswith("| t2i "))
    i2t = next(line for line in table if line.startswith("| i2t "))
    assert t2i.endswith("| holds |") and "(110, 110, 110, 110, 110)" in t2i  # the colour-slot renders left out
    assert "+0.000 ± 0.000" in i2t and i2t.endswith("| n.s. |")  # every render found in both sets: no gap
    seen, unseen = mod.split(runs[0], "t2i", "unseen_clean")
    assert seen.size == 800 and unseen.size == 110


def test_a_file_without_held_out_pairs_is_refused(tmp_path):
    mod = load_script("combination_gap")
    path = tmp_path / "plain.jsonl"
    path.write_text(json.dumps({"combination": None, "t2i": 1, "i2t": 1}) + "\n")
    with pytest.raises(SystemExit, match="--holdout-combos"):
        mod.main(["--runs", str(path)])
