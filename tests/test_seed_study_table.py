"""scripts/seed_study.py's run-mode table: every row's change over seeds, Holm across the family, drift against its
own null, and the table written into a report's marked block."""

from __future__ import annotations

import numpy as np
import pytest

from tests.script_module import load_script


def _pieces(rng, seeds=(0, 1, 2, 3, 4)):
    ss = load_script("seed_study")
    base_emb = rng.normal(size=(20, 8))
    base = {
        "row A": (rng.random(100) < 0.3).astype(float),
        "row B": (rng.random(100) < 0.5).astype(float),
        ss.DRIFT: np.zeros(20),
        ss.PARAPHRASE: np.ones(20),
        ss.GENERAL: base_emb,
    }
    credits = {"base": base}
    for s in seeds:
        r = np.random.default_rng(100 + s)
        credits[s] = {
            "unscaled": {
                "row A": np.minimum(1.0, base["row A"] + (r.random(100) < 0.6)),  # a large gain in every seed
                "row B": base["row B"].copy(),  # no change
                ss.DRIFT: np.full(20, 0.05),
                ss.PARAPHRASE: np.ones(20),
                ss.GENERAL: base_emb + 3.0 + 0.01 * r.normal(size=base_emb.shape),  # far from the base
            }
        }
    rows = [{"evaluation": e, "kind": "mcq", "format": "f", "chance": 0.25} for e in ("row A", "row B")]
    return ss, {"seeds": list(seeds), "rows": rows, "labels": {"unscaled": "unscaled"}, "credits": credits}


def test_table_verdicts_holm_and_drift(tmp_path):
    ss, pieces = _pieces(np.random.default_rng(0))
    res = ss.seed_table(pieces, n_boot=500)
    by = {r["evaluation"]: r["models"]["unscaled"] for r in res["rows"]}
    assert by["row A"]["verdict"] == "holds" and by["row A"]["ci95"][0] > 0
    assert by["row B"]["verdict"] == "n.s." and by["row B"]["mean"] == 0
    assert res["family_size"] == 4
    raw = [by[e]["p"] for e in ("row A", "row B", ss.DRIFT, ss.PARAPHRASE)]
    adj = [by[e]["p_holm"] for e in ("row A", "row B", ss.DRIFT, ss.PARAPHRASE)]
    assert all(a >= r for a, r in zip(adj, raw, strict=True))
    drift = by[ss.DRIFT]
    assert drift["test"] == "permutation of the base label" and drift["p"] < 0.01
    assert drift["null"]["drift"] > drift["null"]["seed_drift"]
    md = ss.seed_markdown(res)
    assert "| row A | unscaled | 100 | 0.250 |" in md and "holds" in md and "own null" in md

    doc = tmp_path / "r.md"
    doc.write_text("intro\n<!-- seed-study:x -->\nold\n<!-- /seed-study:x -->\nafter\n")
    ss.write_block(doc, "x", md)
    text = doc.read_text()
    assert "\nold\n" not in text and md in text and text.startswith("intro") and text.endswith("after\n")
    with pytest.raises(SystemExit, match="no <!-- seed-study:y -->"):
        ss.write_block(doc, "y", md)


def test_parse_seeds():
    ss = load_script("seed_study")
    assert ss.parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert ss.parse_seeds("0,2,5-6") == [0, 2, 5, 6]
    with pytest.raises(SystemExit):
        ss.parse_seeds("1,1")
