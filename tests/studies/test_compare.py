"""The Compare study: ``compare`` and the Compare tab are two faces of ``run_compare`` (same leaderboard); the
per-question diff and margins match what ``run_mcq`` gives each model alone; results are cached per model; the
per-scene agreement maths (Spearman ρ, two-way variance shares) match naive references."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bindlab.analysis import agreement as ag
from bindlab.cli import main
from bindlab.studies import browse
from bindlab.studies import compare as study


def _noop_progress(*_args, **_kwargs):
    return None


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory):
    """A tiny generated SABER set: 4 questions per N = 2..4 (independent and nested)."""
    from bindlab.data.saber import generate_saber, write_benchmark

    qs = generate_saber(per_size=4, sizes=[2, 3, 4], seed=11)
    return str(write_benchmark(tmp_path_factory.mktemp("cmp-saber"), qs, {"seed": 11}))


# --- maths against naive references ------------------------------------------------------------------------------
def _naive_ranks(x):
    return np.array([1 + sum(v < xi for v in x) + (sum(v == xi for v in x) - 1) / 2 for xi in x])


def _naive_pearson(a, b):
    a, b = a - np.mean(a), b - np.mean(b)
    return float(np.sum(a * b) / np.sqrt(np.sum(a * a) * np.sum(b * b)))


@pytest.mark.parametrize("seed", range(5))
def test_spearman_matches_naive_references(seed):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=12), rng.normal(size=12)
    d = _naive_ranks(x) - _naive_ranks(y)
    classic = 1 - 6 * np.sum(d**2) / (12 * (12**2 - 1))  # the no-ties formula
    assert ag.spearman_rho(x, y) == pytest.approx(classic, abs=1e-12)
    tx, ty = np.round(x), np.round(y)  # with ties: Pearson of average ranks
    assert np.array_equal(ag.average_ranks(tx), _naive_ranks(tx))
    assert ag.spearman_rho(tx, ty) == pytest.approx(_naive_pearson(_naive_ranks(tx), _naive_ranks(ty)), abs=1e-12)
    assert ag.spearman_rho(x, x**3) == pytest.approx(1.0)  # monotone
    assert ag.spearman_rho(x, -x) == pytest.approx(-1.0)
    assert np.isnan(ag.spearman_rho(x, np.ones(12)))  # a constant side has no ranking


def test_mean_pairwise_spearman_and_variance_shares_match_loops():
    rng = np.random.default_rng(7)
    m = rng.normal(size=(4, 9)) + rng.normal(size=9)[None, :]  # (models, scenes) with a shared scene effect
    want = np.mean([_naive_pearson(_naive_ranks(m[i]), _naive_ranks(m[j])) for i, j in combinations(range(4), 2)])
    assert ag.mean_pairwise_spearman(m)["mean_rho"] == pytest.approx(want, abs=1e-12)

    grand = sum(m[i, j] for i in range(4) for j in range(9)) / 36
    total = sum((m[i, j] - grand) ** 2 for i in range(4) for j in range(9))
    ss_scene = sum(4 * (sum(m[i, j] for i in range(4)) / 4 - grand) ** 2 for j in range(9))
    ss_model = sum(9 * (sum(m[i, j] for j in range(9)) / 9 - grand) ** 2 for i in range(4))
    got = ag.variance_shares(m)
    assert got["scene"] == pytest.approx(ss_scene / total) and got["model"] == pytest.approx(ss_model / total)
    assert got["scene"] + got["model"] + got["residual"] == pytest.approx(1.0)
    # pure effects: only scenes differ -> scene explains all; only models differ -> model explains all
    assert ag.variance_shares(np.tile(np.arange(5.0), (3, 1)))["scene"] == pytest.approx(1.0)
    assert ag.variance_shares(np.tile(np.arange(3.0)[:, None], (1, 5)))["model"] == pytest.approx(1.0)
    assert ag.variance_shares(np.ones((2, 3)))["scene"] is None


def test_scene_agreement_uses_the_common_scenes():
    per = {"a": {"s1": 0.1, "s2": 0.3, "s3": 0.2, "s4": 9.0}, "b": {"s1": 0.0, "s2": 0.5, "s3": 0.4}}
    out = ag.scene_agreement(per)
    assert out["scenes"] == ["s1", "s2", "s3"] and out["mean_spearman"] == pytest.approx(1.0)
    assert out["pairwise"] == [{"model_a": "a", "model_b": "b", "rho": pytest.approx(1.0)}]
    assert ag.scene_agreement({"a": per["a"]})["mean_spearman"] is None  # one model: nothing to agree with
    with pytest.raises(ValueError, match="matrix"):
        ag.variance_shares(np.ones(3))


# --- the study ---------------------------------------------------------------------------------------------------
def test_per_question_diff_matches_each_models_own_scores(tiny_set):
    res = study.run_compare(study.CompareRequest(models=["bow", "minilm"], suite="mcq", data=tiny_set, use_cache=False))
    alone = {m: browse.run_mcq(browse.McqRequest(data=tiny_set, model=m)) for m in ("bow", "minilm")}
    credit = {m: {r["id"]: r["credit"] for r in alone[m].rows} for m in alone}
    want = {q for q in credit["minilm"] if credit["minilm"][q] >= 1.0 and credit["bow"][q] < 1.0}
    diff = study.question_diff(res.rows, "minilm", "bow")
    assert {r["id"] for r in diff} == want and want  # minilm beats the order-blind baseline somewhere
    assert study.question_diff(res.rows, "bow", "minilm") == []  # bow never has full credit on an exact swap tie
    for r in diff:
        row = next(x for x in alone["minilm"].rows if x["id"] == r["id"])
        s = np.array(row["scores"])
        assert r["margin_a"] == pytest.approx(s[row["answer"]] - np.delete(s, row["answer"]).max())
        assert r["credit_b"] == credit["bow"][r["id"]]
    margins = [r["margin_a"] - r["margin_b"] for r in diff]
    assert margins == sorted(margins, reverse=True)  # largest gap first
    board = {r["model"]: r for r in res.summary["leaderboard"]}
    assert board["minilm"]["MCQ tt"] == alone["minilm"].summary["accuracy"]
    assert board["bow"]["MCQ tt 95% CI"] == alone["bow"].summary["pairings"]["tt"]["ci95"]
    with pytest.raises(ValueError, match="not in this comparison"):
        study.question_diff(res.rows, "minilm", "toy:clip")


def test_compare_cli_and_tab_write_the_same_table(tiny_set, tmp_path):
    from bindlab.ui import compare as tab

    out, folder = tmp_path / "res.json", tmp_path / "export"
    assert (
        main(
            [
                "compare",
                "--models",
                "minilm,bow",
                "--suite",
                "mcq,retrieval",
                "--data",
                tiny_set,
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
    res = study.run_compare(study.CompareRequest(models="minilm,bow", suite=["mcq", "retrieval"], data=tiny_set))
    assert cli["leaderboard"] == json.loads(json.dumps(res.summary["leaderboard"]))
    assert cli["sort_by"] == "MCQ tt" and [r["rank"] for r in cli["leaderboard"]] == [1, 2]
    assert cli["leaderboard"][0]["MCQ tt"] >= cli["leaderboard"][1]["MCQ tt"]  # best first
    assert cli["diff_models"] == ["minilm", "bow"] and cli["question_diff"]  # the direction with questions in it
    assert sorted(res.summary["from_cache"]) == ["bow:mcq", "bow:retrieval", "minilm:mcq", "minilm:retrieval"]
    csv = pd.read_csv(folder / "compare_models_leaderboard.csv")
    assert csv["mAP tt"].tolist() == pytest.approx([r["mAP tt"] for r in cli["leaderboard"]])
    assert len(pd.read_csv(folder / "compare_models_question_diff.csv")) == len(cli["question_diff"])

    shown = tab.run(["minilm", "bow"], ["mcq", "retrieval"], "tt", tiny_set, "", "", progress=_noop_progress)
    from pandas.io.formats.style import Styler

    frame = shown[1].data if isinstance(shown[1], Styler) else shown[1]  # 3 decimals shown, the numbers kept
    assert frame["model"].tolist() == [r["model"] for r in cli["leaderboard"]]
    assert frame["MCQ tt"].tolist() == pytest.approx([r["MCQ tt"] for r in cli["leaderboard"]], abs=5e-5)
    lo, hi = cli["leaderboard"][0]["mAP tt 95% CI"]
    assert frame["mAP tt 95% CI"][0] == f"{lo:.3f}–{hi:.3f}"
    assert len(shown[7].data if isinstance(shown[7], Styler) else shown[7]) == len(
        cli["question_diff"]
    )  # the diff table: minilm right, bow wrong


def test_a_corrupt_cache_entry_is_recomputed(tiny_set):
    req = study.CompareRequest(models="bow,minilm", suite="mcq", data=tiny_set)
    first = study.run_compare(req)
    for f in study.cache_dir().glob("*.json"):
        f.write_text("{not json")
    again = study.run_compare(req)
    assert again.summary["from_cache"] == [] and again.summary["leaderboard"] == first.summary["leaderboard"]
    assert study.run_compare(req).summary["from_cache"] == ["bow:mcq", "minilm:mcq"]


def test_text_only_models_get_na_on_pairs_and_the_cross_benchmark_table_says_vs_chance():
    scores = [
        study._score("m", "mcq", "MCQ tt", 0.5, [0.4, 0.6], 10, 0.25),
        study._score("m", "pairs", "Pairs Group", 0.17, [0.1, 0.2], 10, 1 / 6),
        study._score("m", "retrieval", "mAP tt", 0.3, [0.2, 0.4], 10, None),
    ]
    (row,) = study.cross_benchmark(scores, ["m"])
    assert row["MCQ tt vs chance"] == "above chance" and row["Pairs Group vs chance"] == "at chance"
    assert "mAP tt" not in row  # no chance level, not in the cross-benchmark table


def test_bow_is_at_chance_on_the_embedded_default_in_the_leaderboard(tmp_path):
    """Issue 30: the chance of the embedded default is the mean of its questions' own chance (1/3 at N = 2, 1/4
    above: 0.259), exactly bow's accuracy, so bow is "at chance" in the leaderboard and the cross-benchmark table,
    not "above chance" as against a flat 0.25; the leaderboard also says which share of words each model knows."""
    from bindlab.encoders.tiny import build_tiny

    tiny = build_tiny("st", tmp_path / "tiny-st")  # a second text model, fast on the 180 questions
    res = study.run_compare(study.CompareRequest(models=["bow", tiny], suite="mcq", use_cache=False))
    assert Path(res.summary["data"]).parent.name == "saber-mini"  # both read every word: the text benchmark
    board = {r["model"]: r for r in res.summary["leaderboard"]}
    score = next(s for s in res.tables["scores"] if s["model"] == "bow")
    assert score["chance"] == pytest.approx((1 / 3 + 8 / 4) / 9) and score["value"] == pytest.approx(score["chance"])
    assert board["bow"]["MCQ tt vs chance"] == "at chance"
    assert next(r for r in res.summary["cross_benchmark"] if r["model"] == "bow")["MCQ tt vs chance"] == "at chance"
    assert board["bow"][study.UNKNOWN_COLUMN] == 0.0 and board[tiny][study.UNKNOWN_COLUMN] == 0.0
    assert {r["model"] for r in res.summary["by_n"]} == {"bow", tiny}
    assert all(r["chance"] == pytest.approx(1 / 3 if r["n_objects"] == 2 else 1 / 4) for r in res.summary["by_n"])


def test_the_leaderboard_labels_scores_with_a_chance_level_and_gives_unknown_words():
    scores = [
        study._score("a", "mcq", "MCQ tt", 0.5, [0.4, 0.6], 10, 0.259),
        study._score("a", "retrieval", "mAP tt", 0.3, [0.2, 0.4], 10, None),
        study._score("b", "mcq", "MCQ tt", 0.26, [0.255, 0.263], 10, 0.259),
    ]
    rows, sort_by = study.leaderboard(scores, ["a", "b", "c"], {"a": 0.365, "b": 0.0})
    by = {r["model"]: r for r in rows}
    assert sort_by == "MCQ tt" and by["a"]["MCQ tt vs chance"] == "above chance"
    assert by["b"]["MCQ tt vs chance"] == "at chance" and by["c"]["MCQ tt vs chance"] == "n/a"
    assert "mAP tt vs chance" not in by["a"]  # no chance level, no label
    assert by["a"][study.UNKNOWN_COLUMN] == pytest.approx(36.5) and by["c"][study.UNKNOWN_COLUMN] is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"models": "bow"}, "at least two encoder ids"),
        ({"models": "bow,minilm", "suite": "mcq,nope"}, "unknown task 'nope'"),
        ({"models": "bow,minilm", "suite": "benchmark:"}, "unknown task"),
        ({"models": "bow,minilm", "pairings": "xx"}, "xx"),
        ({"models": "bow,minilm", "limit": -1}, "limit"),
    ],
)
def test_bad_requests_are_refused_naming_the_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        study.CompareRequest(**kwargs)


def test_cli_reports_a_bad_model_in_one_line(tiny_set, capsys):
    assert main(["compare", "--models", "bow,nosuch:model", "--data", tiny_set]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "nosuch" in err and "Traceback" not in err
    assert Path(tiny_set).exists()
