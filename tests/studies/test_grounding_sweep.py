"""Signal-strength sweep, combination holdout and global alignment end to end on a tiny grid and a tiny CLIP."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bindlab.analysis.grounding import ALPHA_GRID
from bindlab.cli import main
from bindlab.studies import grounding as gs
from bindlab.studies import grounding_align as ga
from bindlab.studies.grounding_sweep import SweepRequest, run_grounding_sweep

GRID_ARGS = [
    "--shapes",
    "3",
    "--hues",
    "3",
    "--patterns",
    "plain,striped,glittery",
    "--contexts",
    "3",
    "--replicas",
    "1",
    "--size",
    "32",
    "--workers",
    "1",
]
FAST = {"epochs": 3, "lrs": (1e-3,), "batch_size": 32}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("sweep")
    model = build_tiny("hf-clip", root / "tiny-clip")
    assert main(["generate", "factors", "--out", str(root / "grid"), *GRID_ARGS, "--signal-strengths", "1,.5,0"]) == 0
    return root, model


def test_sweep_reselects_alpha_and_reestimates_directions_at_every_gamma(setup, capsys):
    root, model = setup
    gs.clear_sessions()
    out = root / "sweep.json"
    assert main(["ground-sweep", "--data", str(root / "grid"), "--model", model, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "gamma" in printed and "cosine" in printed
    res = json.loads(out.read_text())
    rows = res["sweep"]
    assert [r["gamma"] for r in rows] == [1.0, 0.5, 0.0]
    assert rows[0]["cosine"] == pytest.approx(1.0)
    for r in rows:
        assert np.isclose(ALPHA_GRID, r["alpha"]).any()
        assert r["gain"] == pytest.approx(r["matched"] - r["native"])
        assert 0 <= r["native"] <= 1 and 0 <= r["matched"] <= 1 and r["n_test"] == 27
    assert res["full_signal_gain"] == rows[0]["gain"] and res["chance"] == pytest.approx(1 / 3)
    # each gamma is its own session: directions come from that gamma's calibration images
    again = run_grounding_sweep(SweepRequest(str(root / "grid"), model))
    assert [r["alpha"] for r in again.rows] == [r["alpha"] for r in rows]
    one = gs.open_session(root / "grid" / "signal" / "g1.000", model).state("pattern").directions.directions
    half = gs.open_session(root / "grid" / "signal" / "g0.500", model).state("pattern").directions.directions
    assert rows[1]["cosine"] == pytest.approx(float(np.mean(np.sum(one * half, axis=1))))
    assert rows[1]["cosine"] < 1 - 1e-6


def test_sweep_refuses_bad_requests(setup):
    root, model = setup
    with pytest.raises(ValueError, match="only --factor pattern"):
        SweepRequest(str(root / "grid"), model, factor="hue")
    (root / "bare").mkdir(exist_ok=True)
    with pytest.raises(ValueError, match="no signal-strength grids"):
        run_grounding_sweep(SweepRequest(str(root / "bare"), model))


def test_combination_protocol_holds_out_cells_not_values(setup):
    root, model = setup
    gs.clear_sessions()
    out = root / "comb.json"
    assert (
        main(
            [
                "ground",
                "--data",
                str(root / "grid"),
                "--model",
                model,
                "--no-controls",
                "--protocol",
                "combination",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    res = json.loads(out.read_text())
    assert res["provenance"]["settings"]["protocol"] == "combination"
    session = gs.open_session(root / "grid", model).view("combination")
    for f, r in res["factors"].items():
        assert r["protocol"] == "combination"
        m = session.masks_for(f)
        assert r["n_images"] == {s: int(v.sum()) for s, v in m.items()}
        assert not all((m[s] == session.masks[s]).all() for s in m)  # not the context split
        idx = session.index
        for s in ("calibration", "validation", "test"):
            assert {x.context for x, keep in zip(idx.rows, m[s], strict=True) if keep} == {0, 1, 2}


def test_alignment_sees_no_test_image_and_identity_is_native(setup, monkeypatch):
    root, model = setup
    gs.clear_sessions()
    base = gs.open_session(root / "grid", model)
    seen = []
    real_fit = ga.fit_global_map

    def spy(cal_x, cal_cells, val_x, val_cells, *args, **kwargs):
        seen.append((cal_x.copy(), val_x.copy()))
        return real_fit(cal_x, cal_cells, val_x, val_cells, *args, **kwargs)

    monkeypatch.setattr(ga, "fit_global_map", spy)
    reports = ga.alignment_reports(base, ["pattern", "hue"], "factor", **FAST)
    test_rows = base.embeddings[base.masks["test"]]
    assert len(seen) == 2
    for cal_x, val_x in seen:  # exactly the calibration and validation images, never a test image
        assert (cal_x == base.embeddings[base.masks["calibration"]]).all()
        assert (val_x == base.embeddings[base.masks["validation"]]).all()
        assert not any((test_rows == row).all(1).any() for row in np.concatenate([cal_x, val_x]))
    # replacing every test image changes nothing that was chosen before the test readout
    noisy = base.embeddings.copy()
    noisy[base.masks["test"]] = np.random.default_rng(0).standard_normal(test_rows.shape).astype(np.float32)
    other = gs.GroundingSession(base.index, noisy, base.embed_texts, base.encoder)
    monkeypatch.setattr(ga, "fit_global_map", real_fit)
    moved = ga.alignment_reports(other, ["pattern", "hue"], "factor", **FAST)
    for f in ("pattern", "hue"):
        a, b = reports[f], moved[f]
        assert a["map"]["lr"] == b["map"]["lr"] and a["map"]["epoch"] == b["map"]["epoch"]
        assert a["map"]["validation"] == b["map"]["validation"] and a["alpha"] == b["alpha"]
        assert a["map"]["loss"] == b["map"]["loss"]
    for f, r in reports.items():
        t = r["test"]
        native = gs.factor_report(base, f, controls=False)
        assert t["native"] == native["test"]["native"] and t["matched"] == native["test"]["grounded"]
        ident = gs.factor_report(
            base.view(queries={f: base.native(f) @ np.eye(base.embeddings.shape[1])}), f, controls=False
        )
        assert ident["test"] == native["test"] and ident["per_value"] == native["per_value"]  # A = I: native


def test_cli_align_reports_global_and_global_matched(setup, capsys, monkeypatch):
    root, model = setup
    gs.clear_sessions()
    monkeypatch.setattr(ga, "fit_global_map", lambda *a, **k: ga.__dict__["_real_fit"](*a, **{**k, **FAST}))
    monkeypatch.setitem(
        ga.__dict__, "_real_fit", __import__("bindlab.analysis.alignment", fromlist=["x"]).fit_global_map
    )
    out = root / "align.json"
    assert (
        main(
            [
                "ground",
                "--data",
                str(root / "grid"),
                "--model",
                model,
                "--no-controls",
                "--factor",
                "pattern,shape",
                "--align",
                "shared",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    res = json.loads(out.read_text())
    assert "global map" in capsys.readouterr().out
    for f in ("pattern", "shape"):
        al = res["factors"][f]["alignment"]
        assert al["scope"] == "shared" and set(al["test"]) == {"native", "matched", "global", "global_matched"}
        assert al["map"]["factors"] == ["shape", "hue", "pattern"]
    assert res["factors"]["pattern"]["alignment"]["map"] == res["factors"]["shape"]["alignment"]["map"]  # one map
    assert res["global_macro_map"] == pytest.approx(
        np.mean([res["factors"][f]["alignment"]["test"]["global"]["macro_map"] for f in ("pattern", "shape")])
    )
    with pytest.raises(SystemExit):
        main(["ground", "--data", str(root / "grid"), "--model", model, "--align", "rotate"])
