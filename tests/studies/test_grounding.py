"""Grounding on a factor grid end to end: tiny grid, tiny random CLIP, the real CLI, validation-only selection."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pandas.io.formats.style import Styler
from PIL import Image

from bindlab.analysis.grounding import ALPHA_GRID, ground
from bindlab.cli import main
from bindlab.data.factors import FACTORS, load_index
from bindlab.studies import grounding as gs

GRID_ARGS = [
    "--shapes",
    "3",
    "--hues",
    "4",
    "--patterns",
    "3",
    "--contexts",
    "3",
    "--replicas",
    "2",
    "--size",
    "32",
    "--workers",
    "1",
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("ground")
    model = build_tiny("hf-clip", root / "tiny-clip")
    assert main(["generate", "factors", "--out", str(root / "grid"), *GRID_ARGS]) == 0
    return root, model


def _ground(root, model, out, *extra):
    gs.clear_sessions()
    assert (
        main(["ground", "--data", str(root / "grid"), "--model", model, "--out", str(out), "--n-boot", "100", *extra])
        == 0
    )
    return json.loads(out.read_text())


def test_cli_reports_native_and_grounded_for_all_factors(setup, capsys):
    root, model = setup
    res = _ground(root, model, root / "res.json")
    assert sorted(res["factors"]) == sorted(FACTORS)
    assert res["provenance"]["encoder"]["id"] == model and res["provenance"]["dataset"]["sha256"]
    for f, r in res["factors"].items():
        k = {"shape": 3, "hue": 4, "pattern": 3}[f]
        assert len(r["values"]) == len(r["per_value"]) == k
        assert r["alpha_source"] == "validation" and r["alpha"] == r["validation"]["alpha"]
        assert np.isclose(ALPHA_GRID, r["alpha"]).any()
        for side in ("native", "grounded"):
            t = r["test"][side]
            assert 0 <= t["macro_map"] <= 1 and 0 <= t["top1"] <= 1
            assert t["macro_map"] == pytest.approx(np.mean([row[f"ap_{side}"] for row in r["per_value"]]))
        assert r["n_images"] == {"calibration": 72, "validation": 72, "test": 72}
        assert set(r["controls"]["test"]) >= {"native", "grounded", "attraction", "mismatched", "image_prototype"}
        assert r["controls"]["test"]["grounded"]["macro_map"] == pytest.approx(r["test"]["grounded"]["macro_map"])
    out = capsys.readouterr().out
    assert all(f"{model} {f}" in out for f in FACTORS) and "macro-mAP" in out


def test_alpha_is_chosen_on_validation_only(setup, tmp_path):
    """Replacing every test image changes the test readout but none of the choices made on validation."""
    root, model = setup
    clean = _ground(root, model, tmp_path / "clean.json", "--factor", "hue")["factors"]["hue"]
    grid = tmp_path / "grid"
    import shutil

    shutil.copytree(root / "grid", grid)
    index = load_index(grid)
    rng = np.random.default_rng(0)
    for r in index.rows:
        if r.context in index.splits["test"]:
            Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(grid / r.image)
    gs.clear_sessions()
    assert (
        main(
            [
                "ground",
                "--data",
                str(grid),
                "--model",
                model,
                "--factor",
                "hue",
                "--n-boot",
                "100",
                "--out",
                str(tmp_path / "tampered.json"),
            ]
        )
        == 0
    )
    tampered = json.loads((tmp_path / "tampered.json").read_text())["factors"]["hue"]
    assert tampered["validation"] == clean["validation"]
    for key in ("alpha", "lambda", "validation", "gate"):
        assert tampered["controls"][key] == clean["controls"][key]
    assert tampered["test"]["native"] != clean["test"]["native"]  # the test split really changed


def test_selection_never_reads_test_embeddings(setup):
    """NaN in every test embedding leaves the validation choices finite and unchanged (backend level)."""
    root, model = setup
    gs.clear_sessions()
    session = gs.open_session(root / "grid", model)
    poisoned = session.embeddings.copy()
    poisoned[session.masks["test"]] = np.nan
    other = gs.GroundingSession(session.index, poisoned, session.embed_texts)
    for f in FACTORS:
        a, b = session.audit(f, n_boot=50), other.audit(f, n_boot=50)
        assert b.alpha.value == a.alpha.value and b.lam.value == a.lam.value
        assert np.array_equal(b.gate.ground, a.gate.ground)
        assert other.state(f).select_alpha().value == session.state(f).select_alpha().value
        assert np.isnan(b.native.ap).all()  # ...while the test readout did see the poison


def test_fixed_alpha_and_slider_view(setup, tmp_path):
    root, model = setup
    r = _ground(root, model, tmp_path / "fixed.json", "--factor", "pattern", "--alpha", "2.5", "--no-controls")
    r = r["factors"]["pattern"]
    assert r["alpha"] == 2.5 and r["alpha_source"] == "fixed" and "controls" not in r
    session = gs.open_session(root / "grid", model)
    state = session.state("pattern")
    view = gs.slider_view(session, "pattern", "polka-dot", 2.5)
    assert view["ap_grounded"] == pytest.approx([row["ap_grounded"] for row in r["per_value"]])
    scores = [t["score"] for t in view["top"]]
    assert len(scores) == gs.TOP_K and scores == sorted(scores, reverse=True)
    # the top-8 scores are the cosines of the explicitly grounded query with those images' embeddings
    v = view["value_index"]
    q2 = ground(state.queries[v], state.directions.directions[v], 2.5)
    rows = {str(session.index.root / row.image): i for i, row in enumerate(session.index.rows)}
    emb = session.embeddings / np.linalg.norm(session.embeddings, axis=1, keepdims=True)
    assert [emb[rows[t["path"]]] @ q2 for t in view["top"]] == pytest.approx(scores, abs=1e-5)
    # the 2-D view is an exact projection: q'(alpha) in the plane equals the grounded query's coordinates
    d = state.directions.directions[v]
    q_perp = state.queries[v] - state.c[v] * d
    q_perp /= np.linalg.norm(q_perp)
    assert view["plane"]["q_alpha"] == pytest.approx([q2 @ d, q2 @ q_perp], abs=1e-9)
    assert view["curve"]["margin"][0] == pytest.approx(view["margin_native"][v])
    with pytest.raises(ValueError, match="not a pattern"):
        gs.slider_view(session, "pattern", "blob", 1.0)


def test_user_errors_are_one_line(setup, capsys):
    root, model = setup
    assert main(["ground", "--data", str(root / "grid"), "--model", model, "--alpha", "lots"]) == 2
    assert "alpha must be 'auto' or a number" in capsys.readouterr().err
    assert main(["ground", "--data", str(root / "grid"), "--model", model, "--factor", "size"]) == 2
    assert "choose from shape, hue, pattern" in capsys.readouterr().err
    assert main(["ground", "--data", str(root / "nowhere"), "--model", model]) == 2
    assert "nowhere: file not found" in capsys.readouterr().err
    gs.clear_sessions()
    assert main(["ground", "--data", str(root / "grid"), "--model", "bow"]) == 2
    assert "image" in capsys.readouterr().err


# --- the study's request, and the two faces giving the same numbers ----------------------------------------------
@pytest.mark.parametrize(
    "field, value, message",
    [
        ("alpha", "lots", "alpha must be 'auto' or a number in \\[0, 8\\], got 'lots'"),
        ("alpha", float("nan"), "alpha must be .* got nan"),
        ("alpha", float("inf"), "got inf"),
        ("alpha", 8.5, "got 8.5"),
        ("alpha", -0.1, "got -0.1"),
        ("alpha", True, "got True"),
        ("factors", "size", "factor 'size': choose from shape, hue, pattern"),
        ("factors", "", "choose from shape, hue, pattern"),
        ("n_boot", 0, "n_boot must be at least 1, got 0"),
        ("batch_size", 0, "batch-size must be at least 1, got 0"),
        ("seed", 1.5, "seed must be a whole number, got 1.5"),
        ("model", "  ", "model is empty"),
    ],
)
def test_request_names_the_bad_value(field, value, message):
    kwargs = {"data": "grid", "model": "toy:clip", field: value}
    with pytest.raises(ValueError, match=message):
        gs.GroundingRequest(**kwargs)


def test_request_normalises_its_inputs(tmp_path):
    r = gs.GroundingRequest(f" {tmp_path} ", " toy:clip ", "hue, pattern,hue", "2.5")
    assert (r.data, r.model, r.factors, r.alpha) == (str(tmp_path), "toy:clip", ("hue", "pattern"), 2.5)
    assert gs.GroundingRequest("", "m").factors == FACTORS
    assert gs.GroundingRequest("", "m", ["shape"], " AUTO ").alpha == "auto"
    with pytest.raises(ValueError, match="nowhere: file not found"):
        gs.GroundingRequest(tmp_path / "nowhere", "m")


def test_run_grounding_result_is_the_cli_json(setup, tmp_path):
    root, model = setup
    cli = _ground(root, model, tmp_path / "cli.json", "--factor", "hue,pattern", "--n-boot", "50")
    result = gs.run_grounding(gs.GroundingRequest(root / "grid", model, "hue,pattern", n_boot=50))
    assert result.feature == "grounding" and result.primary_metric == "grounded_macro_map"
    assert result.summary["factors"] == cli["factors"]
    assert result.primary == pytest.approx(
        np.mean([cli["factors"][f]["test"]["grounded"]["macro_map"] for f in ("hue", "pattern")])
    )
    assert cli["grounded_macro_map"] == result.primary and cli["primary_metric"] == "grounded_macro_map"
    assert len(result.rows) == 4 + 3 and {r["factor"] for r in result.rows} == {"hue", "pattern"}
    curve = result.figures_data["curves"]["hue"]
    assert len(curve["alphas"]) == len(ALPHA_GRID) and len(curve["margins"][0]) == 4
    assert result.provenance["encoder"]["id"] == cli["provenance"]["encoder"]["id"] == model
    assert result.provenance["dataset"]["sha256"] == cli["provenance"]["dataset"]["sha256"]


def _noop(*args, **kwargs):
    return None


def test_tab_and_cli_give_the_same_numbers(setup, tmp_path):
    """The Grounding tab's Load, controls and Download go through the same study as ``ground``."""
    import re

    from bindlab.ui import grounding as tab

    root, model = setup
    grid = str(root / "grid")
    fixed = _ground(root, model, tmp_path / "fixed.json", "--factor", "hue", "--alpha", "2.5")["factors"]["hue"]
    key, _payload, _value, summary, *_ = tab.load(grid, model, "hue", 2.5, progress=_noop)
    shown = {
        k: float(re.search(f"id='gd-{k}' class='gd-num'>([0-9.]+)<", summary).group(1))
        for k in ("map-native", "map-grounded")
    }
    # the page shows 3 decimals; the numbers underneath (the export below) are the CLI's to the last digit
    assert shown["map-native"] == pytest.approx(fixed["test"]["native"]["macro_map"], abs=5e-4)
    assert shown["map-grounded"] == pytest.approx(fixed["test"]["grounded"]["macro_map"], abs=5e-4)

    shown_table, _ = tab.run_controls(key, progress=_noop)  # the protocol's audit: alpha chosen on validation
    table = shown_table["value"]  # a gr.update: the table is hidden until controls have run
    table = table.data if isinstance(table, Styler) else table  # the page shows 3 decimals of these numbers
    auto = _ground(root, model, tmp_path / "auto.json", "--factor", "hue")["factors"]["hue"]
    assert dict(zip(table["readout"], table["macro-mAP"], strict=True)) == pytest.approx(
        {k: v["macro_map"] for k, v in auto["controls"]["test"].items() if v is not None}, abs=5e-5
    )

    # the alignment baseline's table: 3 decimals on the page (one format for every macro-mAP and top-1), the numbers
    # underneath and in its state (the export) as computed
    shown_align, _, align_state = tab.run_alignment(key, "factor", progress=_noop)
    styled = shown_align["value"]
    assert isinstance(styled, Styler)
    html = styled.to_html()
    for row in align_state["rows"]:
        assert f">{row['macro-mAP']:.3f}<" in html and f">{row['top-1']:.3f}<" in html
    assert list(styled.data["macro-mAP"]) == [row["macro-mAP"] for row in align_state["rows"]]

    files, _ = tab.export(key, "red", 2.5, table, formats=["json"])
    summary_json = next(Path(p) for p in files if str(p).endswith("grounding_summary.json"))
    doc = json.loads(summary_json.read_text())
    row = doc["rows"][0]
    assert row["alpha"] == 2.5 and row["alpha_source"] == "fixed"
    assert row["grounded_macro_map"] == fixed["test"]["grounded"]["macro_map"]
    assert row["native_macro_map"] == fixed["test"]["native"]["macro_map"]
    assert doc["provenance"]["settings"]["value"] == "red"


def test_tab_errors_are_messages(setup):
    import gradio as gr

    from bindlab.ui import grounding as tab

    root, model = setup
    with pytest.raises(gr.Error, match="alpha must be"):
        tab.load(str(root / "grid"), model, "hue", float("nan"), progress=_noop)
    with pytest.raises(gr.Error, match="factor.*'size'"):
        tab.load(str(root / "grid"), model, "size", 1.0, progress=_noop)
    with pytest.raises(gr.Error, match="press Load first"):
        tab.move(None, "red", 1.0)


def test_the_session_cache_is_capped_by_bytes_and_shares_the_encoder(setup, tmp_path, monkeypatch):
    """Issue 56, item 5: four grids held about +540 MB each (capped by count, not bytes; each with its own model)."""
    import shutil

    root, model = setup
    gs.clear_sessions()
    copy = tmp_path / "grid2"
    shutil.copytree(root / "grid", copy)
    first = gs.open_session(root / "grid", model)
    monkeypatch.setattr(gs, "MAX_SESSION_BYTES", gs._session_bytes(first) + 1)  # room for one grid only
    second = gs.open_session(copy, model)
    assert second.encoder is first.encoder  # one instance of the model for every grid
    assert list(gs._SESSIONS.values()) == [second]  # the older grid went for the newer
    assert gs.open_session(copy, model) is second
    gs.clear_sessions()


def test_a_session_is_one_encoder_instance_device_and_weights_included(setup, tmp_path):
    """The session cache used to key on the model id and dtype only: a grid opened on one device was served for
    another, and retrained weights in the same folder got the old embeddings back."""
    import shutil

    from safetensors.torch import load_file, save_file

    root, model = setup
    gs.clear_sessions()
    folder = tmp_path / "clip"
    shutil.copytree(model.removeprefix("hf:"), folder)
    ours = f"hf:{folder}"
    auto = gs.open_session(root / "grid", ours)
    assert gs.open_session(root / "grid", ours) is auto
    cpu = gs.open_session(root / "grid", ours, device="cpu")
    assert cpu is not auto and gs.open_session(root / "grid", ours, device="cpu") is cpu
    weights = folder / "model.safetensors"
    tensors = {k: v + 0.05 if v.is_floating_point() else v for k, v in load_file(weights).items()}
    save_file(tensors, weights, metadata={"format": "pt"})
    retrained = gs.open_session(root / "grid", ours)
    assert retrained is not auto
    assert not np.allclose(retrained.embeddings, auto.embeddings)
    gs.clear_sessions()
