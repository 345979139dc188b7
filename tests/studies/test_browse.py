"""The Browse study: ``eval mcq`` / ``eval retrieval`` and the Browse tab are two faces of ``run_mcq`` /
``run_retrieval``, so for the same file and model they report the same numbers (accuracy per pairing, by N, N
itself, per-question credit) and export the same tables; a bad request is refused before anything is embedded."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bindlab.cli import main
from bindlab.studies import browse as study
from bindlab.studies import common


def _noop_progress(*_args, **_kwargs):
    return None


def _exported(paths: list[str], name: str) -> pd.DataFrame:
    return pd.read_csv(next(p for p in paths if Path(p).name == name))


def test_eval_mcq_and_the_browse_tab_give_the_same_numbers(small_benchmark, tmp_path):
    from bindlab.ui import browse as tab

    path, questions = small_benchmark
    out, items, folder = tmp_path / "mcq.json", tmp_path / "items.jsonl", tmp_path / "export"
    assert (
        main(
            [
                "eval",
                "mcq",
                "--data",
                str(path),
                "--model",
                "minilm",
                "--out",
                str(out),
                "--per-item",
                str(items),
                "--export",
                str(folder),
                "--export-formats",
                "csv,json",
            ]
        )
        == 0
    )
    cli = json.loads(out.read_text())
    tt = cli["pairings"]["tt"]
    assert tt["n"] == len(questions) == 54 and cli["primary_metric"] == "accuracy" and cli["accuracy"] == tt["accuracy"]

    # the tab's Score callback, as the page calls it
    summary, *_ = tab.score(str(path), "minilm", "tt", "all", "all", "all", 5, progress=_noop_progress)
    assert f"accuracy **{tt['accuracy']:.3f}**" in summary and f"{tt['n']} questions" in summary
    s = study.scored_set(path, "minilm", "tt")  # the tab's memoised session, built by run_mcq
    assert s.summary == tt  # accuracy, ci95, by N, by subset, n: exactly equal
    rows = [json.loads(x) for x in items.read_text().splitlines()]
    assert [float(c) for c in s.credit] == [r["credit"] for r in rows]
    assert s.result.provenance["dataset"] == cli["provenance"]["dataset"]
    assert s.result.provenance["encoder"] == cli["provenance"]["encoder"]
    # accuracy by N: the tab's chart rows are the CLI's export table
    by_n = pd.read_csv(folder / "mcq_accuracy_by_n.csv")
    assert study.accuracy_table(s) == by_n.drop(columns="pairing").to_dict("records")

    # the tab's Download writes the same tables as --export
    paths, _ = tab.export(str(path), "minilm", "tt", formats=["csv", "json"])
    for name in ("mcq_summary.csv", "mcq_accuracy_by_n.csv", "mcq_scores.csv"):
        pd.testing.assert_frame_equal(_exported(paths, name), pd.read_csv(folder / name))


def test_several_pairings_and_a_limit_through_the_study_and_the_command(small_benchmark, tmp_path):
    path, _ = small_benchmark
    out = tmp_path / "mcq.json"
    assert (
        main(
            [
                "eval",
                "mcq",
                "--data",
                str(path),
                "--model",
                "bow",
                "--pairings",
                "tt",
                "--limit",
                "12",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    cli = json.loads(out.read_text())
    res = study.run_mcq(study.McqRequest(data=path, model="bow", limit=12))
    assert res.summary["pairings"] == cli["pairings"] and res.summary["pairings"]["tt"]["n"] == 12
    assert res.provenance["settings"]["limit"] == 12 and len(res.rows) == 12
    assert res.primary == pytest.approx(res.summary["pairings"]["tt"]["accuracy"])
    # bag of words: every swap ties with the preserve candidate, so N >= 3 sits at chance exactly
    assert all(v == pytest.approx(0.25) for n, v in res.summary["pairings"]["tt"]["by_n"].items() if int(n) >= 3)


def test_eval_retrieval_and_run_retrieval_agree(small_benchmark, tmp_path):
    path, _ = small_benchmark
    out = tmp_path / "ret.json"
    assert main(["eval", "retrieval", "--data", str(path), "--model", "minilm", "--out", str(out)]) == 0
    cli = json.loads(out.read_text())
    res = study.run_retrieval(study.McqRequest(data=path, model="minilm"))
    assert res.feature == "retrieval" and res.primary_metric == "map"
    assert res.summary["pairings"] == cli["pairings"] and cli["map"] == cli["pairings"]["tt"]["map"]["all"]
    assert res.tables["map_by_n"] == [
        {"pairing": "tt", "n_objects": int(n), "map": v} for n, v in cli["pairings"]["tt"]["map_by_n"].items()
    ]


def test_skipped_lines_are_a_note_and_a_warning(small_benchmark, tmp_path, capsys):
    path, _ = small_benchmark
    bad = tmp_path / "mcq.jsonl"
    bad.write_text(Path(path).read_text() + '{"id": "broken"}\n')
    res = study.run_mcq(study.McqRequest(data=bad, model="bow", skip_bad=True))
    assert res.summary["pairings"]["tt"]["n"] == 54 and res.provenance["settings"]["skipped_lines"] == 1
    assert len(res.notes) == 1 and "loaded 54 of 55" in res.notes[0]
    assert main(["eval", "mcq", "--data", str(bad), "--model", "bow", "--skip-bad"]) == 0
    assert "warning:" in capsys.readouterr().err
    assert main(["eval", "mcq", "--data", str(bad), "--model", "bow"]) == 2  # strict by default


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"limit": -1}, "--limit must be 0 or more, got -1"),
        ({"limit": 2.5}, "--limit must be a whole number"),
        ({"batch_size": 0}, "--batch-size must be at least 1, got 0"),
        ({"pairings": "tt,xy"}, r"unknown pairing\(s\) \['xy'\]"),
        ({"pairings": ""}, "unknown pairing"),
        ({"model": "  "}, "model: give an encoder id"),
        ({"data": ""}, "data: give an MCQ JSONL file"),
        ({"device": "gpu"}, "unknown device .gpu.; choose auto"),
    ],
)
def test_bad_requests_are_refused_naming_the_value(small_benchmark, kwargs, match):
    path, _ = small_benchmark
    with pytest.raises(ValueError, match=match):
        study.McqRequest(**{"data": path, "model": "bow", **kwargs})


def test_the_command_reports_a_bad_request_in_one_line(small_benchmark, capsys):
    path, _ = small_benchmark
    assert main(["eval", "mcq", "--data", str(path), "--model", "bow", "--limit", "-3"]) == 2
    err = capsys.readouterr().err
    assert "limit must be" in err and "-3" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(FileNotFoundError, match="file not found"):
        study.run_mcq(study.McqRequest(data=Path(path).parent / "none.jsonl", model="bow"))


def test_the_browse_memo_keeps_the_most_recent_sets_within_its_caps(small_benchmark, tmp_path, monkeypatch):
    """A public server must not keep every scored file's vectors forever: least recently used sets go first."""
    import shutil

    from bindlab.studies import browse as study

    path, _ = small_benchmark
    copies = []
    for i in range(3):
        folder = tmp_path / f"set{i}"
        folder.mkdir()
        copies.append(shutil.copy(path, folder / "mcq.jsonl"))
    monkeypatch.setattr(study, "_SCORED", {})
    monkeypatch.setattr(study, "MAX_SCORED_SETS", 2)
    first = study.scored_set(copies[0], "bow", "tt")
    study.scored_set(copies[1], "bow", "tt")
    assert study.scored_set(copies[0], "bow", "tt") is first  # a hit, and now the most recent
    study.scored_set(copies[2], "bow", "tt")
    kept = {Path(k[0]).parent.name for k in study._SCORED}
    assert kept == {"set0", "set2"}  # set1 was the least recently used
    assert first.gallery.shape[0] == 4 * len(first.questions)  # loads the embeddings: the byte cap counts them
    assert study.scored_bytes(first) > first.scores.nbytes
    monkeypatch.setattr(study, "scored_cap", lambda: 1)
    study.scored_set(copies[1], "bow", "tt")
    assert [Path(k[0]).parent.name for k in study._SCORED] == ["set1"]  # only the newest stays


def test_the_scored_sets_share_a_smaller_cap_in_public_mode(monkeypatch):
    """Issue 32: Browse's scored sets are kept for all visitors together under one byte cap — 1 GiB locally, 256 MiB
    in public mode (a departed visitor's set is dropped at once; the cap bounds the rest), set by
    $BINDLAB_SCORED_MEMORY_MB."""
    from bindlab.config import MIB

    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    monkeypatch.delenv("BINDLAB_SCORED_MEMORY_MB", raising=False)
    assert study.scored_cap() == 1024 * MIB
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    assert study.scored_cap() == 256 * MIB
    monkeypatch.setenv("BINDLAB_SCORED_MEMORY_MB", "64")
    assert study.scored_cap() == 64 * MIB


def test_a_toy_model_reports_its_unknown_words_and_defaults_to_the_renderable_benchmark(
    small_benchmark, monkeypatch, capsys
):
    """Issue 30: the MCQ result says how many caption words the model does not know, and which (the command and the
    tab's summary line show it); with no data given, a model that does not know the full benchmark's words (a toy)
    is scored on the renderable one, a model that knows them (MiniLM) on the full one."""
    from bindlab.ui import browse as tab

    path, _ = small_benchmark
    res = study.run_mcq(study.McqRequest(data=path, model="toy:clip"))
    unknown = res.summary["unknown_words"]
    assert 0.2 < unknown["share"] < 0.5 and unknown["questions_with_unknown"] == unknown["n_questions"] == 54
    assert len(unknown["top"]) == 20 and unknown["top"][0]["count"] >= unknown["top"][-1]["count"]
    assert res.summary["pairings"]["tt"]["chance"] == pytest.approx((1 / 3 + 8 / 4) / 9)
    assert main(["eval", "mcq", "--data", str(path), "--model", "toy:clip"]) == 0
    out = capsys.readouterr().out
    assert "chance 0.259" in out and f"{100 * unknown['share']:.1f} % of the caption words" in out
    summary = tab.summary_md(study.scored_set(path, "toy:clip", "tt"))
    assert "chance 0.259" in summary and "Unknown words:" in summary and unknown["top"][0]["word"] in summary
    assert study.run_mcq(study.McqRequest(data=path, model="bow")).summary["unknown_words"]["n_unknown"] == 0

    real = common.default_dataset

    def no_render(images=False, progress=None):  # the image version is rendered elsewhere; here only the choice
        return Path("/rendered/saber-mini-images/mcq.jsonl") if images else real()

    monkeypatch.setattr(common, "default_dataset", no_render)
    assert study.resolve_inputs("", "toy:clip", "tt")[0] == "/rendered/saber-mini-images/mcq.jsonl"
    assert Path(study.resolve_inputs("", "minilm", "tt")[0]).parent.name == "saber-mini"
    assert study.resolve_inputs(str(path), "toy:clip", "tt")[0] == str(path)  # a file given is the file used
    assert (
        common.default_dataset_for([common.get_encoder("bow"), common.get_encoder("toy:shared")]).parent.name
        == "saber-mini-images"
    )
