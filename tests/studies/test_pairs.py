"""The Pairs study: ``eval pairs`` and the Pairs tab are two faces of ``run_pairs``, so for the same file and
model they report the same I2T / T2I / Group scores overall and per edit type and export the same tables;
``eval benchmark`` goes through ``run_benchmark``; a bad request is refused before anything is embedded."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import pytest

from bindlab.cli import main
from bindlab.studies import benchmark as bench_study
from bindlab.studies import pairs as study

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def _noop_progress(*_args, **_kwargs):
    return None


@pytest.fixture(scope="module")
def pairs_setup(tmp_path_factory):
    """A small generated CompoSET-style file (2 scenes x 15 foils) and a tiny random CLIP."""
    from bindlab.data.composet import generate_composet
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("pairs-study")
    data = generate_composet(root / "cs", scenes=2, foils_per_scene=15, seed=1, size=64, workers=1)
    return str(data), build_tiny("hf-clip", root / "tiny-clip")


def _per_edit_type(summary: dict) -> dict[str, tuple]:
    return {t: (b["n"], b["i2t"], b["t2i"], b["group"]) for t, b in summary["by_edit_type"].items()}


def test_eval_pairs_and_the_pairs_tab_give_the_same_scores(pairs_setup, tmp_path):
    from bindlab.ui import pairs as tab

    data, model = pairs_setup
    out, folder = tmp_path / "pairs.json", tmp_path / "export"
    assert (
        main(
            [
                "eval",
                "pairs",
                "--data",
                data,
                "--model",
                model,
                "--verbosity",
                "short",
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
    cli = json.loads(out.read_text())
    assert cli["n_pairs"] == 30 and cli["overall"]["n"] == 30 and cli["primary_metric"] == "group"
    assert cli["group"] == cli["overall"]["group"]

    # the tab's Score callback, as the page calls it
    summary, *_ = tab.score(data, model, "short", progress=_noop_progress)
    o = cli["overall"]
    for k, name in (("i2t", "I2T"), ("t2i", "T2I"), ("group", "Group")):  # each score beside its interval
        assert (
            f"{name} **{o[k]:.3f}** (95% CI {o[f'{k}_ci95'][0]:.3f}–{o[f'{k}_ci95'][1]:.3f}; chance "
            f"{o['chance'][k]:.3f}"
        ) in summary
    s = study.scored_pairs(data, model, "short")  # the tab's memoised session, built by run_pairs
    assert s.summary["overall"] == o and len(s.pairs) == 30
    assert _per_edit_type(s.summary) == _per_edit_type(cli)  # I2T / T2I / Group and N per edit type
    assert s.result.provenance["encoder"] == cli["provenance"]["encoder"]
    assert s.result.provenance["dataset"] == cli["provenance"]["dataset"]
    chart = pd.read_csv(folder / "pairs_by_edit_type.csv")
    # the tab's chart also lists the taxonomy's types this set lacks (n = 0, "missing"); the export has the scored ones
    assert [{k: r[k] for k in chart.columns} for r in study.edit_type_table(s) if r["n"]] == chart.to_dict("records")

    # the tab's Download writes the same tables as --export
    paths, _ = tab.export(data, model, "short", formats=["csv", "json"])
    for name in ("pairs_scores.csv", "pairs_by_edit_type.csv", "pairs_pairs.csv"):
        got = pd.read_csv(next(p for p in paths if Path(p).name == name))
        pd.testing.assert_frame_equal(got, pd.read_csv(folder / name))


def test_run_pairs_limit_and_seed(pairs_setup):
    data, model = pairs_setup
    res = study.run_pairs(study.PairsRequest(data=data, model=model, verbosity="short", limit=12, seed=3))
    assert res.feature == "pairs" and res.summary["n_pairs"] == 12 and len(res.rows) == 12
    assert res.provenance["seed"] == 3 and res.provenance["settings"]["limit"] == 12
    assert res.primary == res.summary["overall"]["group"]
    assert sum(r["n"] for r in res.tables["by_edit_type"]) == 12


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"limit": -1}, "--limit must be 0 or more, got -1"),
        ({"batch_size": 0}, "--batch-size must be at least 1, got 0"),
        ({"seed": -2}, "--seed must be between 0 and .*, got -2"),
        ({"verbosity": "huge"}, "huge"),
        ({"model": ""}, "model: give an image\\+text encoder id"),
        ({"data": " "}, "data: give a Pairs JSONL file"),
    ],
)
def test_bad_pairs_requests_are_refused_naming_the_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        study.PairsRequest(**{"data": "pairs.jsonl", "model": "toy:clip", **kwargs})


def test_a_text_only_model_is_refused_in_one_line(pairs_setup, capsys):
    data, _ = pairs_setup
    assert main(["eval", "pairs", "--data", data, "--model", "bow"]) == 2
    assert "image+text encoder" in capsys.readouterr().err


def test_eval_benchmark_and_run_benchmark_agree(tmp_path):
    out = tmp_path / "bench.json"
    assert (
        main(
            [
                "eval",
                "benchmark",
                "--name",
                "sugarcrepe_pp",
                "--data",
                str(FIX / "sugarcrepe_pp"),
                "--model",
                "bow",
                "--task",
                "tot",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    cli = json.loads(out.read_text())
    res = bench_study.run_benchmark(
        bench_study.BenchmarkRequest(name="sugarcrepe_pp", model="bow", task="tot", data=str(FIX / "sugarcrepe_pp"))
    )
    assert res.summary["native_metric"] == cli["native_metric"] and res.summary["n"] == cli["n"] == 10
    assert res.primary_metric == "native_value" and res.primary == cli["native_metric"]["value"]
    assert res.provenance["settings"]["task"] == "tot" and res.provenance["encoder"]["id"] == "bow:words"
    assert res.summary["validity"]["model_on_same_bag"] == 0.0  # a bag of words cannot pass a reordering


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"name": ""}, "name: give a benchmark name"),
        ({"source": "web"}, "source must be one of"),
        ({"task": "xyz"}, "task must be one of"),
        ({"limit": -5}, "--limit must be 0 or more, got -5"),
    ],
)
def test_bad_benchmark_requests_are_refused_naming_the_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bench_study.BenchmarkRequest(**{"name": "winoground", "model": "bow", **kwargs})


def test_the_pairs_memo_keeps_only_the_most_recent_files(pairs_setup, tmp_path, monkeypatch):
    """Scored Pairs files are memoised for the tab's views, at most MAX_SCORED_PAIRS of them (least recent out)."""
    import shutil
    from types import SimpleNamespace

    data, model = pairs_setup[0], pairs_setup[1]
    calls = []

    def fake_run(request, progress=None):
        calls.append(request.data)
        return SimpleNamespace(provenance={"encoder": {"id": model}}, rows=[], summary={}), []

    monkeypatch.setattr(study, "_run", fake_run)
    monkeypatch.setattr(study, "_SCORED", {})
    monkeypatch.setattr(study, "MAX_SCORED_PAIRS", 2)
    copies = []
    for i in range(3):
        folder = tmp_path / f"p{i}"
        shutil.copytree(Path(data).parent, folder)
        copies.append(folder / Path(data).name)
    study.scored_pairs(copies[0], model)
    study.scored_pairs(copies[1], model)
    study.scored_pairs(copies[0], model)  # a hit: no new run, and now the most recent
    assert len(calls) == 2
    study.scored_pairs(copies[2], model)
    assert {Path(k[0]).parent.name for k in study._SCORED} == {"p0", "p2"}


def test_every_edit_type_carries_its_origin_and_the_paper_s_types_are_scored_apart(pairs_setup, capsys):
    """Issue 28, item 3: a generated item says whether its edit type is named in the CompoSET paper or in a category it names under bindlab's name; the
    evaluation scores the two apart (their n adding up to the whole), every edit-type row names its origin, the CLI
    and the tab print the by-origin line, and the chart marks the paper's types."""
    from bindlab.data.composet import EDIT_ORIGIN, PAPER_NAMES
    from bindlab.data.pairs_schema import load_pairs
    from bindlab.present.figures import pairs_by_edit_type
    from bindlab.ui import pairs as tab

    data, model = pairs_setup
    items, _ = load_pairs(data)
    assert {p.extra["edit_origin"] for p in items} <= {"composet", "bindlab"}
    assert all(p.extra["edit_origin"] == ("composet" if p.edit_type in PAPER_NAMES else "bindlab") for p in items)
    assert sorted(set(PAPER_NAMES.values())) == [
        "modify_color",
        "modify_material",
        "modify_presence",
        "modify_transparency",
        "swap_color",
        "swap_material",
    ]  # the six
    s = study.scored_pairs(data, model, "short")
    by = s.summary["by_origin"]
    n_paper = sum(p.edit_type in PAPER_NAMES for p in items)
    assert by["composet"]["n"] == n_paper and by["bindlab"]["n"] == len(items) - n_paper
    rows = study.edit_type_table(s)
    assert all(r["origin"] == EDIT_ORIGIN[r["edit_type"]] for r in rows)
    assert main(["eval", "pairs", "--data", data, "--model", model, "--verbosity", "short"]) == 0
    line = f"edit types named in the CompoSET paper: Group {by['composet']['group']:.3f}"
    assert line in capsys.readouterr().out
    summary, *_ = tab.score(data, model, "short", progress=_noop_progress)
    assert line in html.unescape(summary).replace("\\", "")  # Markdown-escaped as text in the tab
    labels = pairs_by_edit_type(rows).data[0].y
    assert all(
        lab.startswith("◆ ") == (EDIT_ORIGIN[r["edit_type"]] == "composet") for lab, r in zip(labels, rows, strict=True)
    )
