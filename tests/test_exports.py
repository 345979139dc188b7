"""Exports open in the tools people use: CSV in pandas, JSON with provenance, JSONL rows round-trip, SVG as XML, PNG
in PIL, standalone HTML with plotly.js inlined. Real data, real CLI. (SVG and HTML in a real Chromium, and a download
from the app: tests/ui/test_exports_ui.py.)"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from PIL import Image

from bindlab.cli import main
from bindlab.present import exports

needs_browser = pytest.mark.skipif(
    exports.find_browser() is None, reason="PNG/SVG need Chromium (apt-get install chromium, or set BROWSER_PATH)"
)


def read_jsonl(path):
    """Rows of a JSONL file, parsed the plain way (what any reader would do)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _json(path):
    return json.loads(path.read_text(encoding="utf-8"))


def _csv_equals_json(csv):
    """The CSV, read by pandas as it is, holds the same table as the JSON twin's rows."""
    doc = _json(csv.with_suffix(".json"))
    got = pd.read_csv(csv)
    want = pd.DataFrame(doc["rows"], columns=doc["columns"])
    assert list(got.columns) == doc["columns"]

    def plain(df):  # empty cells: NaN in pandas, null in JSON
        return df.astype(object).where(df.notna(), None)

    pd.testing.assert_frame_equal(plain(got), plain(want), check_dtype=False)
    return got, doc


@pytest.fixture(scope="module")
def mcq_run(tmp_path_factory):
    """``eval mcq --export DIR`` on a generated benchmark with the bag-of-words baseline, every format."""
    from bindlab.data.saber import generate_saber, write_benchmark

    root = tmp_path_factory.mktemp("exports")
    data = write_benchmark(root / "saber", generate_saber(per_size=4, sizes=[2, 3, 4], seed=7), {"seed": 7})
    out, items, folder = root / "res.json", root / "items.jsonl", root / "export"
    assert (
        main(
            [
                "eval",
                "mcq",
                "--data",
                str(data),
                "--model",
                "bow",
                "--out",
                str(out),
                "--per-item",
                str(items),
                "--export",
                str(folder),
            ]
        )
        == 0
    )
    return folder, _json(out), read_jsonl(items)


def test_cli_export_writes_every_kind(mcq_run):
    folder, _, _ = mcq_run
    names = {p.name for p in folder.iterdir()}
    for table in ("summary", "accuracy_by_n", "scores"):
        assert {f"mcq_{table}.csv", f"mcq_{table}.json"} <= names
    assert {"mcq_items.jsonl", "mcq_accuracy_by_n.html", "provenance.json"} <= names
    manifest = _json(folder / "provenance.json")
    assert set(manifest["files"]) == names - {"provenance.json"}
    if exports.find_browser():
        assert {"mcq_accuracy_by_n.png", "mcq_accuracy_by_n.svg"} <= names and not manifest["notes"], manifest["notes"]


def test_csv_loads_in_pandas_with_the_same_values(mcq_run):
    folder, res, items = mcq_run
    for csv in folder.glob("*.csv"):
        _csv_equals_json(csv)
    summary, _ = _csv_equals_json(folder / "mcq_summary.csv")
    tt = res["pairings"]["tt"]
    assert summary.loc[0, "accuracy"] == tt["accuracy"] and summary.loc[0, "n"] == tt["n"]
    assert [summary.loc[0, "ci95_low"], summary.loc[0, "ci95_high"]] == tt["ci95"]
    by_n, _ = _csv_equals_json(folder / "mcq_accuracy_by_n.csv")
    overall = by_n[by_n["subset"] == "all"]
    assert {str(n): a for n, a in zip(overall["n_objects"], overall["accuracy"], strict=True)} == tt["by_n"]
    scores, _ = _csv_equals_json(folder / "mcq_scores.csv")
    assert list(scores["id"]) == [r["id"] for r in items]
    assert list(scores["credit"]) == [r["credit"] for r in items]
    for row, item in zip(scores.to_dict(orient="records"), items, strict=True):
        assert [row[f"score_{role}"] for role in item["roles"]] == item["scores"]


def test_json_carries_provenance(mcq_run):
    folder, res, _ = mcq_run
    for js in folder.glob("mcq_*.json"):
        prov = _json(js)["provenance"]
        assert prov == res["provenance"]
        assert prov["encoder"]["id"] == "bow:words" and len(prov["dataset"]["sha256"]) == 64 and prov["seed"] == 7
    assert _json(folder / "provenance.json")["provenance"] == res["provenance"]


def test_jsonl_rows_round_trip(mcq_run):
    folder, _, items = mcq_run
    assert read_jsonl(folder / "mcq_items.jsonl") == items


def test_html_is_standalone_with_plotly_inlined(mcq_run):
    html = (mcq_run[0] / "mcq_accuracy_by_n.html").read_text(encoding="utf-8")
    assert "plotly.js v" in html and "Plotly.newPlot" in html
    assert not re.search(r"<script[^>]*\bsrc=", html)  # every script inline: nothing to fetch


@needs_browser
def test_png_opens_in_pil_with_a_sane_size(mcq_run):
    with Image.open(mcq_run[0] / "mcq_accuracy_by_n.png") as im:
        im.load()
        assert im.format == "PNG" and 600 <= im.width <= 4000 and 300 <= im.height <= 4000
        assert len(set(im.convert("L").getdata())) > 10  # drawn, not blank


@needs_browser
def test_svg_is_xml(mcq_run):
    root = ET.parse(mcq_run[0] / "mcq_accuracy_by_n.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and float(root.get("width")) > 100
    assert "accuracy by number of objects" in "".join(root.itertext())


def test_write_table_flattens_nested_values_and_round_trips(tmp_path):
    rows = [
        {
            "name": 'a "quoted", comma',
            "x": np.float32(0.5),
            "n": np.int64(3),
            "ci": [0.1, 0.9],
            "scores": {"c0_i0": 0.25, "c1_i1": float("nan")},
            "ok": True,
        },
        {
            "name": "line\nbreak",
            "x": 1e-12,
            "n": 4,
            "ci": [0.2, 0.8],
            "scores": {"c0_i0": -1.0, "c1_i1": 2.0},
            "ok": False,
        },
    ]
    csv, js = exports.write_table(rows, tmp_path / "t", {"seed": 1})
    got, doc = _csv_equals_json(csv)
    assert doc["provenance"] == {"seed": 1}
    assert doc["columns"] == ["name", "x", "n", "ci", "scores.c0_i0", "scores.c1_i1", "ok"]
    assert doc["rows"][0]["scores.c1_i1"] is None  # NaN -> null, never the invalid JSON token NaN
    assert list(got["name"]) == ['a "quoted", comma', "line\nbreak"]
    assert [json.loads(c) for c in got["ci"]] == [[0.1, 0.9], [0.2, 0.8]]
    assert math.isnan(got.loc[0, "scores.c1_i1"]) and got.loc[1, "x"] == 1e-12
    frame = pd.DataFrame({"a": [1.5, 2.5], "b": ["x", "y"]})
    csv2, _ = exports.write_table(frame, tmp_path / "frame", {})
    pd.testing.assert_frame_equal(pd.read_csv(csv2), frame)


def test_without_a_browser_the_html_is_written_and_the_note_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-such-chromium"))
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    w = exports.write_figure(fig, tmp_path / "fig")
    assert [p.name for p in w.paths] == ["fig.html"]
    assert len(w.notes) == 1 and "Chromium" in w.notes[0] and "BROWSER_PATH" in w.notes[0]
    assert not (tmp_path / "fig.png").exists()


def test_bad_formats_are_refused_with_the_choices(tmp_path, capsys):
    with pytest.raises(ValueError, match="csv, json, jsonl, png, svg, html"):
        exports.check_formats(["pdf"])
    with pytest.raises(ValueError):
        exports.write_view(exports.ResultView("x"), tmp_path, {}, [])
    with pytest.raises(SystemExit) as e:
        main(
            ["eval", "mcq", "--data", "x.jsonl", "--model", "bow", "--export", str(tmp_path), "--export-formats", "pdf"]
        )
    assert e.value.code == 2 and "choose one or more of" in capsys.readouterr().err


# --- the other result kinds, through the real CLI on tiny real data ----------------------------------------------
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("exports-tiny")
    return root, build_tiny("hf-clip", root / "tiny-clip")


def test_pairs_cli_export(tiny):
    from bindlab.data.composet import generate_composet

    root, model = tiny
    data = generate_composet(root / "cs", scenes=2, foils_per_scene=15, seed=1, size=64, workers=1)
    out, folder = root / "pairs.json", root / "pairs-export"
    assert (
        main(
            [
                "eval",
                "pairs",
                "--data",
                str(data),
                "--model",
                model,
                "--verbosity",
                "short",
                "--out",
                str(out),
                "--export",
                str(folder),
                "--export-formats",
                "csv,json,jsonl,html",
            ]
        )
        == 0
    )
    res = _json(out)
    edit, _ = _csv_equals_json(folder / "pairs_by_edit_type.csv")
    assert dict(zip(edit["edit_type"], edit["group"], strict=True)) == {
        k: v["group"] for k, v in res["by_edit_type"].items()
    }
    pairs, _ = _csv_equals_json(folder / "pairs_pairs.csv")
    items = read_jsonl(folder / "pairs_items.jsonl")
    assert len(pairs) == len(items) == 30 and list(pairs["scores.c0_i0"]) == [r["scores"]["c0_i0"] for r in items]
    scores, _ = _csv_equals_json(folder / "pairs_scores.csv")
    assert scores.loc[0, "group"] == res["overall"]["group"]
    assert (folder / "pairs_by_edit_type.html").is_file() and not (folder / "pairs_by_edit_type.png").exists()


def test_ground_cli_export(tiny):
    root, model = tiny
    grid = root / "grid"
    assert (
        main(
            [
                "generate",
                "factors",
                "--out",
                str(grid),
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
        )
        == 0
    )
    out, folder = root / "ground.json", root / "ground-export"
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
                "50",
                "--out",
                str(out),
                "--export",
                str(folder),
                "--export-formats",
                "csv,json",
            ]
        )
        == 0
    )
    res = _json(out)["factors"]["hue"]
    per_value, doc = _csv_equals_json(folder / "grounding_per_value.csv")
    assert list(per_value["ap_grounded"]) == [r["ap_grounded"] for r in res["per_value"]]
    assert doc["provenance"]["encoder"]["id"] == model
    curves, _ = _csv_equals_json(folder / "grounding_margin_curves.csv")
    assert len(curves) == 4 * 161 and set(curves["value"]) == set(res["values"])
    controls, _ = _csv_equals_json(folder / "grounding_controls.csv")
    assert set(controls["readout"]) >= {"native", "grounded", "attraction"}


def test_attention_cli_export(tiny, mcq_run):
    root, model = tiny
    data = json.loads((mcq_run[0] / "mcq_summary.json").read_text())["provenance"]["dataset"]["path"]
    out, folder = root / "att.json", root / "att-export"
    assert (
        main(
            [
                "attention",
                "--model",
                model,
                "--data",
                data,
                "--limit",
                "6",
                "--out",
                str(out),
                "--export",
                str(folder),
                "--export-formats",
                "csv,json,jsonl",
            ]
        )
        == 0
    )
    res = _json(out)
    margins, _ = _csv_equals_json(folder / "attention_margins.csv")
    main_set = margins[margins["set"] == res["caption_set"]]
    assert [None if pd.isna(x) else x for x in main_set["margin_mean"]] == res["margin_mean"]
    assert list(main_set["layer"]) == res["layers"]
    captions, _ = _csv_equals_json(folder / "attention_captions.csv")
    items = read_jsonl(folder / "attention_items.jsonl")
    assert len(captions) == len(items) and set(captions["set"]) == set(res["sets"])
    assert list(captions["text"]) == [r["text"] for r in items]


def test_compare_export_tables_and_figures(tmp_path):
    """The Finetune compare's download, from the study's result (raw rows keyed base / unscaled / lines): the MCQ
    table with the models named for a reader, its chart, the separated report as shown and in long form, triplets and
    the training curves; with a = 1 no LiNeS anywhere."""
    from bindlab.result import Result
    from bindlab.train.compare import report_rows

    mcq = [
        {"pairing": "tt", "N": "all", "base": 0.3, "unscaled": 0.4, "lines": 0.45},
        {"pairing": "tt", "N": "2", "base": 0.35, "unscaled": 0.5, "lines": 0.55},
        {"pairing": "tt", "N": "3", "base": 0.25, "unscaled": 0.3, "lines": 0.35},
    ]
    metrics = [{"step": 1, "loss": 0.05}, {"step": 2, "loss": 0.04}, {"step": 2, "val_acc": 0.6}]
    entry = {
        "evaluation": "MCQ, attributive template (the questions given)",
        "kind": "mcq",
        "format": "in-format",
        "in_format": True,
        "higher_is_better": True,
        "n": 3,
        "models": {
            k: {"value": v, "ci95": [v - 0.1, v + 0.1], "n": 3}
            for k, v in (("base", 0.3), ("unscaled", 0.4), ("lines", 0.45))
        },
    }

    def result(a):
        return Result(
            "finetune",
            {"lines": {"a": a}, "report": [entry], "job": "j1"},
            rows=mcq,
            tables={
                "mcq": mcq,
                "triplets": [{"model": "base", "triplet_test": 0.5}],
                "report": report_rows([entry], a),
            },
        )

    w = exports.write_view(
        exports.compare_export(result(0.1), metrics), tmp_path, {"settings": {"job": "j1"}}, ["csv", "json", "html"]
    )
    assert {p.name for p in w.paths} >= {
        "compare_mcq.csv",
        "compare_triplets.json",
        "compare_training.csv",
        "compare_accuracy_by_n.html",
        "compare_training.html",
        "compare_report.csv",
        "compare_report_values.csv",
    }
    got, _ = _csv_equals_json(tmp_path / "compare_mcq.csv")
    assert list(got["LiNeS (a=0.1)"]) == [0.45, 0.55, 0.35]
    values, _ = _csv_equals_json(tmp_path / "compare_report_values.csv")
    assert list(values["model"]) == ["base", "unscaled", "LiNeS (a=0.1)"] and list(values["ci95_low"]) == pytest.approx(
        [0.2, 0.3, 0.35]
    )
    unscaled = exports.compare_export(result(1.0))
    assert list(unscaled.tables["mcq"][0]) == ["pairing", "N", "base", "unscaled"]
    assert [t.name for t in unscaled.figures["accuracy_by_n"].data] == [
        "base",
        "unscaled",
    ]  # one pairing: named by model


def test_each_download_request_gets_its_own_folder():
    from bindlab.ui.exports import deliver

    view = exports.ResultView("t", {"rows": [{"a": 1}]})
    first, note = deliver(view, {}, ["csv"])
    second, _ = deliver(view, {}, ["csv"])
    assert note.startswith("3 files ready (every file;") and "t_all.zip" in note
    assert [p.rsplit("/", 1)[1] for p in first] == ["t_rows.csv", "provenance.json", "README.txt", "t_all.zip"]
    with zipfile.ZipFile(first[-1]) as z:  # the zip holds every single file of the download, byte for byte
        assert z.namelist() == ["t_rows.csv", "provenance.json", "README.txt"]
        assert all(z.read(Path(p).name) == Path(p).read_bytes() for p in first[:-1])
    assert {str(p).rsplit("/", 1)[0] for p in first}.isdisjoint(str(p).rsplit("/", 1)[0] for p in second)
    with pytest.raises(ValueError, match="tick at least one format"):
        deliver(view, {}, [])


def test_exports_never_write_through_a_link(tmp_path):
    """A link planted where an export file goes is refused before anything is written; its target stays as it was."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "t_rows.csv").symlink_to(outside)
    view = exports.ResultView("t", {"rows": [{"a": 1}]}, items={"items": [{"a": 1}]})
    with pytest.raises(ValueError, match="symbolic link"):
        exports.write_view(view, folder, {}, ["csv", "json", "jsonl"])
    with pytest.raises(ValueError, match="symbolic link"):
        exports.write_table([{"a": 1}], folder / "t_rows", {})
    assert outside.read_text() == "keep" and (folder / "t_rows.csv").is_symlink()
    assert [p.name for p in folder.iterdir()] == ["t_rows.csv"]  # nothing else written, no temporary file left
    (folder / "t_rows.csv").unlink()
    (folder / "t_rows.json").write_text("old")  # a regular file is replaced, as before
    w = exports.write_view(view, folder, {}, ["csv", "json", "jsonl"])
    assert sorted(p.name for p in folder.iterdir()) == ["provenance.json", "t_items.jsonl", "t_rows.csv", "t_rows.json"]
    assert len(w.paths) == 4 and json.loads((folder / "t_rows.json").read_text())["rows"] == [{"a": 1}]
    assert (folder / "t_items.jsonl").read_text() == '{"a": 1}\n'


def _many_files_view() -> exports.ResultView:
    """A view about the size of a full Walkthrough download: many tables and charts."""
    tables = {f"table{k}": [{"k": k, "v": k / 10}] for k in range(12)}
    figures = {f"chart{k}": go.Figure(go.Bar(x=[1, 2], y=[k, k + 1])) for k in range(4)}
    return exports.ResultView(
        "t",
        tables,
        figures,
        {"items": [{"id": 1}, {"id": 2}]},
        main=("table0", "chart0", "items"),
        about={"table0": "the summary: one row per run", "chart0": "the main chart"},
    )


def test_the_panel_default_is_a_few_main_files_with_a_readme_and_everything_stays_an_option():
    """The Download panel's default (every format ticked, and *main files only*) gives the main table once (CSV),
    the main chart once (HTML), the per-item JSONL, provenance, a README naming each file and what was left out, and
    the zip; unticking *main files only* gives every table and chart in every ticked format, README included."""
    from bindlab.ui.exports import DEFAULT_CHOICES, MAIN, deliver

    view = _many_files_view()
    default = [f for f in DEFAULT_CHOICES if f not in ("png", "svg")]  # kaleido's images: see the tests above
    assert MAIN in DEFAULT_CHOICES and set(exports.FORMATS) <= set(DEFAULT_CHOICES)
    paths, note = deliver(view, {"settings": {"k": 1}}, default)
    names = [Path(p).name for p in paths]
    assert names == ["t_table0.csv", "t_items.jsonl", "t_chart0.html", "provenance.json", "README.txt", "t_all.zip"]
    assert note.startswith("5 files ready (the main files;")
    readme = Path(paths[names.index("README.txt")]).read_text()
    assert "t_table0.csv — the summary: one row per run (a table: one header row" in readme
    assert "t_chart0.html — the main chart (an interactive chart, standalone" in readme
    assert "t_items.jsonl — items 'items' (per-item rows, one JSON object per line)" in readme
    assert "provenance.json — what was run" in readme and "t_all.zip" in readme
    assert "tick 'everything'" in readme and "table11" in readme and "chart3 (chart)" in readme
    with zipfile.ZipFile(paths[-1]) as z:
        assert z.namelist() == names[:-1] and "README.txt" in z.namelist()

    everything, note = deliver(view, {}, [f for f in default if f != MAIN])
    names = [Path(p).name for p in everything]
    assert (
        len(names) == 12 * 2 + 1 + 4 + 3 and "every file" in note
    )  # tables ×2, items, charts, provenance, README, zip
    readme = Path(everything[names.index("README.txt")]).read_text()
    assert all(n in readme for n in names[:-2]) and "tick 'everything'" not in readme


def test_main_files_fall_back_to_the_first_table_and_chart_and_to_one_format_each():
    view = _many_files_view()
    plain = exports.ResultView("t", view.tables, view.figures, view.items)  # no main named
    assert list(exports.main_view(plain).tables) == ["table0"] and list(exports.main_view(plain).figures) == ["chart0"]
    assert exports.main_formats(["json", "csv", "svg", "png"]) == ["csv", "png"]
    assert exports.main_formats(["json", "jsonl", "svg"]) == ["json", "jsonl", "svg"]
