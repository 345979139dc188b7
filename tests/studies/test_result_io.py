"""A Result travels: it prints as a few lines naming the model and the headline, writes CSV, draws its figure, and
saves to one JSON file that loads back equal (NaN as NaN) — for real results of every study the API runs. Older files
load too: an ``--out`` file (summary only, with a note) and a compare cache entry; a newer format is refused."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

import bindlab
from bindlab.result import RESULT_FILE_FORMAT, SUMMARY_ONLY_NOTE, Result
from tests.cli_run import run

FIELDS = ("feature", "summary", "rows", "figures_data", "provenance", "primary_metric", "tables", "notes")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def results(tmp_path_factory, small_benchmark):
    """One real result of each study the API runs, on small inputs (bow, MiniLM, the toy CLIP)."""
    path, _ = small_benchmark
    root = tmp_path_factory.mktemp("results")
    grid = bindlab.generate_factors(
        root / "grid", shapes=3, hues=4, patterns=3, contexts=3, replicas=2, size=32, workers=1
    )
    return {
        "mcq": bindlab.evaluate_mcq("minilm", limit=40),
        "mcq-bow": bindlab.evaluate_mcq("bow", data=path, pairings="tt"),
        "retrieval": bindlab.evaluate_retrieval("bow", data=path),
        "pairs": bindlab.evaluate_pairs("toy:clip", limit=12),
        "compare": bindlab.compare(["bow", "minilm"], data=path, limit=40, use_cache=False),
        "attention": bindlab.attention_margins("minilm", limit=10, n_boot=50),
        "grounding": bindlab.ground("toy:clip", data=grid, factors="hue", n_boot=50),
        "benchmark": bindlab.evaluate_benchmark(
            "minilm", "sugarcrepe_pp", data=str(FIXTURES / "sugarcrepe_pp"), task="tot"
        ),
    }


def same(a, b) -> bool:
    """Equal as data, NaN equal to NaN, numpy arrays by value and dtype; a tuple may come back as a list."""
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def test_same_tells_nan_and_values_apart():
    assert same({"a": [float("nan"), 1]}, {"a": [float("nan"), 1]})
    assert not same({"a": [float("nan")]}, {"a": [0.0]}) and not same([1], [1.0]) and not same({"a": 1}, {"b": 1})


# --- repr ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind", ["mcq", "mcq-bow", "retrieval", "pairs", "compare", "attention", "grounding", "benchmark"]
)
def test_repr_is_a_few_lines_naming_the_model_and_headline(results, kind):
    res = results[kind]
    text = repr(res)
    assert str(res) == text
    lines = text.splitlines()
    assert len(lines) < 15 and all(len(line) <= 120 for line in lines), text
    models = [e["id"] for e in res.provenance.get("encoders") or [res.provenance["encoder"]]]
    assert all(m in text for m in models), text
    assert f"{res.primary:.3f}" in lines[1], text  # the headline, on the line under the study's name
    assert res.feature in lines[0] and "notes: " in text


def test_repr_gives_the_interval_and_chance_where_the_study_has_them(results):
    tt = results["mcq"].summary["pairings"]["tt"]
    head = repr(results["mcq"]).splitlines()[1]
    assert head.startswith("  accuracy (tt): ")
    assert f"95% CI [{tt['ci95'][0]:.3f}, {tt['ci95'][1]:.3f}]" in head and f"chance {tt['chance']:.3f}" in head
    assert f"n = {tt['n']}" in head and "minilm" in repr(results["mcq"]).lower()
    o = results["pairs"].summary["overall"]
    head = repr(results["pairs"]).splitlines()[1]
    assert f"Group: {o['group']:.3f}, 95% CI [{o['group_ci95'][0]:.3f}, {o['group_ci95'][1]:.3f}]" in head
    assert "chance 0.167" in head
    board = results["compare"]
    text = repr(board)
    top = board.summary["leaderboard"][0]["model"]
    assert (f"of the leader, {top}" if board.summary.get("leader") == top else f"of the top model, {top}") in text
    assert "leaderboard (2)" in text
    assert results["mcq"].provenance["dataset"]["sha256"][:12] in repr(results["mcq"])


def test_repr_of_a_result_with_nothing_to_read_still_prints():
    odd = Result("mystery", {"x": [1, 2]}, notes=["one", "two"])
    text = repr(odd)
    assert len(text.splitlines()) < 15 and "mystery" in text and "headline: none" in text and "notes: 2" in text
    broken = Result("mcq", {"pairings": "nonsense", "accuracy": 0.5}, primary_metric="accuracy")
    assert "0.500" in repr(broken)  # a summary of another shape falls back to the primary metric alone


# --- CSV and figures -----------------------------------------------------------------------------------------------
def test_to_csv_writes_the_rows_or_a_table(results, tmp_path):
    res = results["mcq-bow"]
    text = res.to_csv()
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert len(parsed) == len(res.rows) and parsed[0]["id"] == res.rows[0]["id"]
    assert json.loads(parsed[0]["scores"]) == res.rows[0]["scores"]  # a list cell is JSON, not Python's repr
    out = res.to_csv(tmp_path / "sub" / "by_n.csv", table="accuracy_by_n")
    assert out == tmp_path / "sub" / "by_n.csv"
    by_n = list(csv.DictReader(out.open()))
    assert len(by_n) == len(res.tables["accuracy_by_n"])
    assert float(by_n[0]["accuracy"]) == pytest.approx(res.tables["accuracy_by_n"][0]["accuracy"])
    with pytest.raises(KeyError, match="no table 'nope'; it has"):
        res.to_csv(table="nope")


@pytest.mark.parametrize(
    "kind, name",
    [
        ("mcq", "accuracy_by_n"),
        ("retrieval", "map_by_n"),
        ("pairs", "by_edit_type"),
        ("compare", "leaderboard"),
        ("attention", "margins"),
        ("grounding", "ap_hue"),
    ],
)
def test_plot_draws_the_results_figure(results, kind, name):
    from bindlab.present.result_figures import result_figures

    fig = bindlab.plot(results[kind])
    assert len(fig.data) > 0 and next(iter(result_figures(results[kind]))) == name
    assert bindlab.plot(results[kind], kind=name) is not None


def test_plot_draws_the_data_it_is_given(results):
    ret = results["retrieval"]
    fig = bindlab.plot(ret)
    by_n = ret.tables["map_by_n"]
    assert list(fig.data[0].y) == [r["map"] for r in sorted(by_n, key=lambda r: r["n_objects"])]
    board = bindlab.plot(results["compare"])
    assert sorted(board.data[0].y, reverse=True) == list(board.data[0].y)
    assert max(board.data[0].y) == results["compare"].summary["top_score"]


def test_plot_refuses_what_it_cannot_draw(results, tmp_path):
    with pytest.raises(ValueError, match="has no figure 'nope'; it has accuracy_by_n"):
        bindlab.plot(results["mcq"], kind="nope")
    with pytest.raises(ValueError, match="no figures for a 'benchmark' result"):
        bindlab.plot(results["benchmark"])
    (tmp_path / "out.json").write_text(json.dumps(results["mcq"].to_json()))
    with pytest.raises(ValueError, match="lacks the data its figures draw.*summary-only"):
        bindlab.plot(bindlab.load_result(tmp_path / "out.json"))


# --- save / load ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind", ["mcq", "mcq-bow", "retrieval", "pairs", "compare", "attention", "grounding", "benchmark"]
)
def test_a_saved_result_loads_back_equal(results, kind, tmp_path):
    res = results[kind]
    path = res.save(tmp_path / "deep" / f"{kind}.json")
    back = bindlab.load_result(path)
    for name in FIELDS:
        assert same(getattr(res, name), getattr(back, name)), name
    assert back.primary == res.primary or math.isnan(back.primary)
    doc = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert doc["format"] == RESULT_FILE_FORMAT and doc["kind"] == "bindlab-result"
    assert repr(back) == repr(res)
    assert not list(path.parent.glob(".*.tmp"))  # written through a temp file that is gone


def test_nan_and_infinity_travel_as_floats(tmp_path):
    res = Result(
        "custom",
        {"a": float("nan"), "b": [float("inf"), -float("inf"), 0.5]},
        rows=[{"x": float("nan")}],
        figures_data={"xy": np.array([[1.0, np.nan]], dtype=np.float32)},
        primary_metric="a",
    )
    back = Result.load(res.save(tmp_path / "r.json"))
    assert math.isnan(back.summary["a"]) and back.summary["b"] == [math.inf, -math.inf, 0.5]
    assert math.isnan(back.rows[0]["x"]) and math.isnan(back.primary)
    assert back.figures_data["xy"].dtype == np.float32 and same(res.figures_data, back.figures_data)
    assert "NaN" not in (tmp_path / "r.json").read_text().replace('"NaN"', "")  # no bare NaN token


def test_a_value_json_cannot_hold_is_named(tmp_path):
    with pytest.raises(TypeError, match=r"summary\.when is a object"):
        Result("custom", {"when": object()}).save(tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()


def test_an_out_file_loads_summary_only_with_a_note(results, tmp_path):
    """What ``--out`` writes (Result.to_json, from the real CLI) loads as the summary, with a note saying so."""
    from bindlab.studies.pairs import default_pairs_dataset

    out = tmp_path / "cli.json"
    run("eval", "pairs", "--data", default_pairs_dataset(), "--model", "toy:clip", "--limit", "12", "--out", out)
    back = bindlab.load_result(out)
    res = results["pairs"]
    assert back.feature == "pairs" and back.primary_metric == "group" and back.primary == res.primary
    assert back.summary["overall"]["i2t"] == res.summary["overall"]["i2t"] and back.rows == [] and back.tables == {}
    assert back.notes[-1] == SUMMARY_ONLY_NOTE and back.provenance["encoder"]["id"] == "toy:clip"
    assert "Group: " in repr(back) and "rows: 0" in repr(back)
    att = tmp_path / "att.json"
    att.write_text(json.dumps(results["attention"].to_json()))  # its provenance does not name the study
    assert bindlab.load_result(att).feature == "attention"


def test_a_compare_cache_entry_loads(results, tmp_path):
    """The compare cache's entries written before the format (dataclasses.asdict, NaN as Python's json writes it)."""
    res = results["pairs"]
    old = tmp_path / "cache.json"
    old.write_text(json.dumps(dataclasses.asdict(res), default=str))
    assert "NaN" in old.read_text()  # this result carries NaN controls: the old writer's bare token
    back = Result.load(old)
    for name in FIELDS:
        assert same(getattr(res, name), getattr(back, name)), name


def test_the_compare_cache_writes_result_files(tmp_path, monkeypatch, small_benchmark):
    from bindlab.studies import compare

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    path, _ = small_benchmark
    first = bindlab.compare(["bow", "minilm"], data=path, limit=20)
    files = sorted(compare.cache_dir().glob("*.json"))
    assert len(files) == 2 and all(json.loads(f.read_text())["format"] == RESULT_FILE_FORMAT for f in files)
    again = bindlab.compare(["bow", "minilm"], data=path, limit=20)
    assert sorted(again.summary["from_cache"]) == ["bow:mcq", "minilm:mcq"]
    assert again.tables["leaderboard"] == first.tables["leaderboard"]


def test_a_newer_format_or_another_file_is_refused(tmp_path):
    future = tmp_path / "future.json"
    future.write_text(
        json.dumps({"format": RESULT_FILE_FORMAT + 1, "kind": "bindlab-result", "feature": "mcq", "summary": {}})
    )
    with pytest.raises(ValueError, match=rf"format {RESULT_FILE_FORMAT + 1}, newer than this bindlab reads .*upgrade"):
        bindlab.load_result(future)
    cases = {
        "list.json": "[1, 2]",
        "other.json": '{"name": "x"}',
        "bad.json": "{not json",
        "damaged.json": json.dumps({"format": 1, "feature": "mcq", "summary": [1]}),
    }
    messages = {
        "list.json": "holds a JSON list",
        "other.json": "not a bindlab result file: expected",
        "bad.json": "not JSON",
        "damaged.json": "summary is a list, not a dict",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=messages[name]):
            Result.load(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        Result.load(tmp_path / "missing.json")
