"""The Finetune study: a bad config is refused before any job exists (from the study, the command and the tab), and
``jobs compare`` and the tab's Compare give the same before/after numbers on a real tiny job."""

from __future__ import annotations

import json
import math
import re
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from bindlab.cli import main
from bindlab.jobs.manager import JobManager
from bindlab.studies import finetune as fs


def _noop_progress(*_args, **_kwargs):
    return None


def _job_folders(root):
    """The job folders under a jobs root (the manager's lock file is not a job)."""
    return [d for d in root.iterdir() if d.is_dir()] if root.is_dir() else []


@pytest.fixture(scope="module")
def triplets(tmp_path_factory):
    from bindlab.data.triplets import generate_triplets, write_triplets

    out = tmp_path_factory.mktemp("ft-study") / "trip"
    rows, stats = generate_triplets(60, seed=0)
    write_triplets(out, rows, stats)
    return out


# --- validation before any job ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "change, match",
    [
        ({"lr": math.inf}, "--lr must be a finite number"),
        ({"lr": "inf"}, "--lr must be a finite number"),
        ({"lr": 0}, "--lr must be > 0"),
        ({"lr": 1e308}, "--lr must be <= 1"),  # accepted once, and the job failed at its first step
        ({"lora_alpha": math.nan}, "--lora-alpha must be a finite number"),
        ({"margin": 0}, "--margin must be > 0"),
        ({"margin": -0.1}, "--margin must be"),
        ({"weight_decay": math.nan}, "--weight-decay must be a finite number"),
        ({"epochs": 0}, "--epochs must be at least 1"),
        ({"epochs": 10**9}, "--epochs 1,000,000,000 is above the cap"),
        ({"batch_size": 0}, "--batch-size must be at least 1"),
        ({"max_steps": -1}, "--max-steps must be 0 or more"),
        ({"max_steps": 2.5}, "--max-steps must be a whole number"),
        ({"lora_rank": 10**6}, "--lora-rank 1000000 is above"),
        ({"lines_a": math.nan}, "--lines-a must be a finite number"),
        ({"lines_a": 2}, "--lines-a must be <= 1"),
        ({"model": "nope:x"}, "unknown encoder backend 'nope'"),
        ({"threads": 10**8}, "--threads 100,000,000 is above the cap"),  # was a job that crashed
        ({"model": ""}, "base model id"),
    ],
)
def test_a_bad_config_is_refused_before_a_job_exists(triplets, tmp_path, change, match):
    manager = JobManager(root=tmp_path / "jobs")
    cfg = {"model": "minilm", "data": str(triplets), "epochs": 1, "max_steps": 1, **change}
    with pytest.raises(ValueError, match=match):
        fs.submit_finetune(cfg, manager)
    assert manager.list() == [] and not _job_folders(tmp_path / "jobs")


def test_a_missing_data_folder_is_refused_before_a_job_exists(tmp_path):
    manager = JobManager(root=tmp_path / "jobs")
    with pytest.raises(FileNotFoundError, match="no triplets at"):
        fs.submit_finetune({"model": "minilm", "data": str(tmp_path / "missing")}, manager)
    with pytest.raises(FileNotFoundError, match="no triplets at"):  # a folder without triplets.jsonl
        fs.submit_finetune({"model": "minilm", "data": str(tmp_path)}, manager)
    assert manager.list() == [] and not _job_folders(tmp_path / "jobs")


def test_check_config_keeps_good_values_and_coerces_numbers(triplets):
    cfg = fs.check_config(
        {
            "model": " minilm ",
            "data": str(triplets),
            "epochs": 2.0,
            "lr": "1e-4",
            "lines_a": "auto",
            "debug": {"sleep_per_step": 0},
        }
    )
    assert cfg["model"] == "minilm" and cfg["epochs"] == 2 and cfg["lr"] == 1e-4 and cfg["lines_a"] == "auto"
    assert cfg["debug"] == {"sleep_per_step": 0}  # keys it does not check pass through to FinetuneConfig


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--lr", "inf"], r"lr must be a finite number"),
        (["--lora-alpha", "nan"], r"lora.alpha must be a finite number"),
        (["--epochs", "0"], r"epochs must be at least 1"),
        (["--model", "nope:x"], r"unknown encoder backend"),
    ],
)
def test_the_command_refuses_before_queueing(triplets, tmp_path, monkeypatch, capsys, flags, match):
    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    argv = ["finetune", "--model", "minilm", "--data", str(triplets), "--background", *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(match, err) and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not _job_folders(tmp_path / "home" / "jobs")


def test_the_tab_refuses_before_queueing(triplets, tmp_path, monkeypatch):
    import gradio as gr

    from bindlab.ui import finetune as tab

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    with pytest.raises(gr.Error, match="lr must be a finite number"):
        tab.launch("minilm", str(triplets), 1, 0, 16, math.inf, 4, "auto", request=SimpleNamespace(session_hash="t"))
    with pytest.raises(gr.Error, match="epochs must be at least 1"):
        tab.launch("minilm", str(triplets), 0, 0, 16, 5e-5, 4, "auto", request=SimpleNamespace(session_hash="t"))
    assert fs.list_jobs() == []


def test_compare_request_checks():
    with pytest.raises(ValueError, match="select a finished job"):
        fs.FinetuneCompareRequest(" ")
    with pytest.raises(ValueError, match="limit must be 0 or more"):
        fs.FinetuneCompareRequest("j", limit=-1)
    with pytest.raises(ValueError, match="attention-limit must be a whole number"):
        fs.FinetuneCompareRequest("j", attention_limit=math.nan)
    assert fs.FinetuneCompareRequest("j", limit=3.0, attention_limit=None).limit == 3


# --- the same numbers from both faces ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def done_job(tiny_st_job, tmp_path_factory):
    """A finished 2-step job of a tiny random text encoder (LiNeS a = 0.5) under the session's $BINDLAB_HOME/jobs
    (where ``lora:<job>`` resolves; the run's shared one, these tests only read it), and a four-question benchmark to
    compare on."""
    from bindlab.data.saber import generate_saber, write_benchmark

    root = tmp_path_factory.mktemp("ft-study-job")
    mcq = write_benchmark(root / "saber", generate_saber(per_size=2, sizes=[2, 3], seed=5), {"seed": 5})
    return tiny_st_job["job"], mcq


def test_cli_and_tab_compare_give_the_same_tables(done_job, tmp_path, capsys):
    from bindlab.ui import finetune as tab

    job, mcq = done_job
    out = tmp_path / "cmp.json"
    assert main(["jobs", "compare", job, "--data", str(mcq), "--out", str(out)]) == 0
    assert "MCQ accuracy" in capsys.readouterr().out
    cli = json.loads(out.read_text())

    page = SimpleNamespace(session_hash="test-page")  # a page visitor (outside public mode: sees CLI jobs too)
    head, table, trip, fig, _, att, report, note, shown, pick_models, pick_pairings = tab.compare(
        job, str(mcq), request=page, progress=_noop_progress
    )
    assert (
        job in " ".join(cli["models"].values()) and str(mcq) in head and "LiNeS \\(a=0.5\\)" in head
    )  # Markdown-escaped
    from pandas.io.formats.style import Styler

    # the page shows 3 decimals through a Styler (bindlab.present.numbers.table); the numbers underneath are the CLI's
    table, trip, report = (x.data if isinstance(x, Styler) else x for x in (table, trip, report))
    assert table.to_dict(orient="records") == fs.labelled(fs.mcq_table(cli), 0.5)
    assert list(table.columns) == ["pairing", "N", "base", "unscaled", "LiNeS (a=0.5)"]
    # the report on the page: each model's value and its 95 % CI in one cell, so the table fits without scrolling
    rows = fs.report_rows(cli["report"], 0.5)
    assert (
        list(report.columns)
        == ["evaluation", "format", "N", "chance", "base (95% CI)", "unscaled (95% CI)", "LiNeS (a=0.5) (95% CI)"]
        and "training distribution" in note
    )
    assert list(report["evaluation"]) == [r["evaluation"] for r in rows]
    for shown_row, row in zip(report.to_dict(orient="records"), rows, strict=True):
        for name in ("base", "unscaled", "LiNeS (a=0.5)"):
            assert shown_row[f"{name} (95% CI)"] == f"{row[name]:.3f} {row[f'{name} 95% CI']}"
    # the triplet table's headers wrap between words (triplet_heldout:x_y -> "heldout: x y"), its numbers the CLI's
    assert [list(r.values()) for r in trip.to_dict(orient="records")] == [list(r.values()) for r in cli["triplets"]]
    assert "_" not in "".join(trip.columns) and len(cli["triplets"]) == 3
    # the accuracy-by-N chart: base vs the job's model (LiNeS) on the first pairing, the pickers offering the rest
    assert [t.name for t in fig.data] == ["base", "LiNeS (a=0.5)"]
    assert pick_models["value"] == ["base", "lines"] and [c[1] for c in pick_models["choices"]] == [
        "base",
        "unscaled",
        "lines",
    ]
    assert pick_pairings["value"] == ["tt"]
    assert [t.name for t in tab.by_n_view(shown, ["unscaled"], ["tt"]).data] == ["unscaled"]
    want = pd.DataFrame(fs.attention_rows(cli["attention"], fs.display_labels(0.5)), columns=tab.ATTENTION_COLUMNS)
    pd.testing.assert_frame_equal(att.data if isinstance(att, Styler) else att, want)
    assert cli["attention"]["available"] and cli["attention"]["n_captions"] == 4

    # The Download after Compare writes the study's result (not the frames on screen): the MCQ table named as shown,
    # its chart, the separated report (as shown and in long form), triplets, attention and the curves, and one zip
    paths, dl_note = tab.export_compare(job, shown, ["csv", "json", "html"], request=page)
    files = {Path(f).name: Path(f) for f in paths}
    assert {
        "compare_mcq.csv",
        "compare_accuracy_by_n.html",
        "compare_report.csv",
        "compare_report_values.csv",
        "compare_triplets.csv",
        "compare_attention.csv",
        "compare_attention_per_layer.csv",
        "compare_attention.html",
        "compare_training.csv",
        "compare_training.html",
        "compare_jobs.csv",
        "provenance.json",
        "compare_all.zip",
    } <= set(files), sorted(files)
    assert pd.read_csv(files["compare_mcq.csv"]).columns.tolist() == [
        "pairing",
        "N",
        "base",
        "unscaled",
        "LiNeS (a=0.5)",
    ]
    shown_report = pd.read_csv(files["compare_report.csv"])
    assert list(shown_report["evaluation"]) == [r["evaluation"] for r in fs.report_rows(cli["report"], 0.5)]
    assert set(shown_report["in training distribution"]) == {"yes", "no"}
    values = pd.read_csv(files["compare_report_values.csv"])
    assert set(values["model"]) == {"base", "unscaled", "LiNeS (a=0.5)"}
    assert (values["ci95_low"] <= values["value"] + 1e-9).all() and (
        values["value"] <= values["ci95_high"] + 1e-9
    ).all()
    with zipfile.ZipFile(files["compare_all.zip"]) as z:
        assert sorted(z.namelist()) == sorted(n for n in files if n != "compare_all.zip")
    assert "files ready" in dl_note
    # another job selected than the one compared: its own curves, no stale comparison
    other_paths, other_note = tab.export_compare(
        job, SimpleNamespace(summary={"job": "another"}), ["csv"], request=page
    )
    assert not any("report" in Path(f).name for f in other_paths) and "another" in other_note

    # the study both faces call (the report, compared above, left out: it is most of a compare's work)
    res = fs.run_finetune_compare(fs.FinetuneCompareRequest(job, str(mcq), report=False))
    assert res.feature == "finetune" and res.rows == fs.mcq_table(cli)
    assert res.summary["mcq"] == cli["mcq"] and res.provenance["settings"] == cli["provenance"]["settings"]
    assert res.figures_data["metrics"] and res.tables["attention"] == fs.attention_rows(
        cli["attention"], fs.display_labels(0.5)
    )


# --- the separated report: in-format vs general, each row with its label and CI ---------------------------------------
@pytest.fixture(scope="module")
def report_jobs(tiny_st_holdout_jobs, tmp_path_factory):
    """Two finished 2-step jobs of a tiny text encoder on triplets with a held-out template (predicative) and held-out
    words: one at the default LiNeS a (0.1), one at a = 1 (the run's shared pair: these tests only read them); and a
    small attributive benchmark."""
    from bindlab.data.saber import generate_saber, write_benchmark

    root = tmp_path_factory.mktemp("ft-report")
    mcq = write_benchmark(root / "saber", generate_saber(per_size=3, sizes=[2, 3], seed=5), {"seed": 5})
    return tiny_st_holdout_jobs["scaled"], tiny_st_holdout_jobs["unscaled"], mcq


def test_separated_report_labels_every_row_and_gives_each_a_ci(report_jobs):
    """The report is a grid of template (trained / held out) x vocabulary (seen in training / not), each row named,
    formatted and marked from what it holds, with n, chance and a 95 % CI; no summary averages rows."""
    from bindlab.data.templates import TEMPLATES

    job, _, mcq = report_jobs
    res = fs.run_finetune_compare(fs.FinetuneCompareRequest(job, str(mcq), attention_limit=None))
    entries = res.summary["report"]
    by_name = {e["evaluation"]: e for e in entries}
    fmt = {e["evaluation"]: (e["format"], e["in_format"]) for e in entries}
    seen, unseen = "words seen in training", "words no training text contains"
    given = [e for e in entries if e.get("source") == "the questions given"]
    assert sum(e["n"] for e in given) == 6 and all(e["template"] == "attributive" for e in given)
    for t in TEMPLATES:  # the whole grid, generated like the given questions
        trained = "trained" if t == "attributive" else "held out of training"
        in_t = t == "attributive"
        assert fmt[f"MCQ, {t} template ({trained}), {seen} (generated)"] == (
            "in-format" if in_t else "out-of-template",
            in_t,
        )
        assert fmt[f"MCQ, {t} template ({trained}), {unseen} (generated)"] == (
            "unseen words" if in_t else "out-of-template, unseen words",
            False,
        )
    assert by_name[f"MCQ, predicative template (held out of training), {seen} (generated)"]["n"] == 6
    assert [e["evaluation"] for e in entries if e["in_format"] and e["kind"] == "mcq"] == [
        e["evaluation"]
        for e in entries
        if e["kind"] == "mcq" and e["template"] == "attributive" and e["vocabulary"] == "seen"
    ]
    assert fmt[f"triplets, attributive query (trained), {seen} (split val)"] == ("in-format", True)
    assert fmt[f"triplets, predicative query (held out of training), {seen} (split test_template_predicative)"] == (
        "out-of-template",
        False,
    )
    assert fmt[f"triplets, attributive query (trained), {unseen} (split test_unseen_words)"] == ("unseen words", False)
    assert any(f == ("held-out construction", False) for name, f in fmt.items() if "deferred-binding" in name)
    assert {f for f, _ in fmt.values()} >= {"control"}
    for e in entries:
        assert set(e["models"]) == {"base", "unscaled", "lines"}
        if e["kind"] == "mcq":
            assert 0.25 <= e["chance"] <= 1 / 3  # the mean of 1/3 at N = 2 and 1/4 above
        if e["kind"] == "triplets":
            assert e["chance"] == 0.5
        for m in e["models"].values():
            lo, hi = m["ci95"]
            assert lo - 1e-9 <= m["value"] <= hi + 1e-9 and m["n"] == e["n"] > 0
    for e in entries:  # the change of each finetuned model is paired: item by item against the base
        assert set(e["paired"]) == {"unscaled", "lines"}
        for label, p in e["paired"].items():
            assert p["change"] == pytest.approx(e["models"][label]["value"] - e["models"]["base"]["value"], abs=1e-9)
            assert p["ci95"][0] - 1e-9 <= p["change"] <= p["ci95"][1] + 1e-9
    from bindlab.train.compare import report_moves

    for m in report_moves(entries, 0.1):
        lo, hi = m["change_ci95"]
        assert m["paired"] and m["moved"] == ("up" if lo > 0 else "down" if hi < 0 else "within")
    drift = by_name["control: general-sentence similarity drift from base"]["models"]["base"]
    assert drift["value"] == 0.0 and drift["ci95"] == [0.0, 0.0]  # the base against itself

    rows = res.tables["report"]
    assert [r["evaluation"] for r in rows] == [e["evaluation"] for e in entries]
    assert {r["in training distribution"] for r in rows} == {"yes", "no"} and "chance" in rows[0]
    assert all(re.fullmatch(r"\[\d\.\d{3}, \d\.\d{3}\]", r["LiNeS (a=0.1) 95% CI"]) for r in rows)
    note = res.notes[0]
    assert "training distribution" in note and "not binding in general" in note
    assert "rows moved beyond their intervals" in note and "on average" not in note


def test_a_row_is_unseen_when_one_of_its_words_is_not_in_training():
    """The vocabulary of a row is read from the training texts: one word they lack makes a question unseen."""
    from bindlab.data.saber import generate_saber
    from bindlab.studies.finetune_report import question_vocabulary, training_words

    q = generate_saber(per_size=1, sizes=[2], seed=0)[0]
    words = {w for c in (q.query, *q.candidates) for pair in c.bindings for w in pair}
    rows = [{"query": " ".join(sorted(words)), "positive": "", "negative": ""}]
    assert question_vocabulary(q, training_words(rows)) == "seen"
    rows[0]["query"] = " ".join(sorted(words)[1:])
    assert question_vocabulary(q, training_words(rows)) == "mixed"  # one word missing: seen and unseen mixed
    rows[0]["query"] = "nothing here"
    assert question_vocabulary(q, training_words(rows)) == "unseen"


def test_a_of_one_is_reported_as_unscaled_never_lines(report_jobs, tmp_path, capsys):
    _, job, mcq = report_jobs
    out = tmp_path / "cmp.json"
    assert main(["jobs", "compare", job, "--data", str(mcq), "--no-attention", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    cli = json.loads(out.read_text())
    assert cli["lines"]["a"] == 1.0 and cli["lines"]["label"] == "unscaled" and cli["labels"]["lines"] == "unscaled"
    assert "LiNeS (a=" not in printed and "scales nothing" in printed
    assert all(r["model"] in ("base", "unscaled") for r in cli["triplets"])  # the job's rows: no LiNeS row
    res = fs.run_finetune_compare(fs.FinetuneCompareRequest(job, str(mcq), attention_limit=None))
    assert all("LiNeS" not in k for r in res.tables["report"] for k in r)
    assert all("LiNeS" not in k for r in fs.labelled(res.rows, 1.0) for k in r)
    # its download names no LiNeS model either: not in a table, not in the chart's legend
    from bindlab.present.exports import compare_export

    view = compare_export(res)
    assert all("LiNeS" not in str(v) for t in ("mcq", "report", "report_values") for r in view.tables[t] for v in r)
    assert view.tables["report_values"] and {r["model"] for r in view.tables["report_values"]} == {"base", "unscaled"}
    assert all("LiNeS" not in t.name and "lines" not in t.name for t in view.figures["accuracy_by_n"].data)


def test_default_compare_data_is_the_text_benchmark_for_a_text_model(report_jobs):
    job, _, _ = report_jobs
    assert fs.default_compare_data(job).parent.name == "saber-mini"  # a toy: base gets saber-mini-images instead


# --- progress: a launched job followed to its end, a compare's parts with the time left --------------------------------
def test_job_progress_says_phase_step_loss_and_time_left():
    running = {"state": "running", "message": "training: step 12/300"}
    fraction, line = fs.job_progress(
        running, {"phase": "training", "step": 12, "total_steps": 300, "loss": 0.31274, "eta_s": 130.0}
    )
    assert fraction == pytest.approx(0.04)
    assert line == "training: step 12/300 · loss 0.3127 · about 2 min left"
    assert fs.job_progress(running, {"phase": "baseline", "step": 0, "total_steps": 300}) == (
        0.0,
        "baseline: training: step 12/300",
    )
    assert fs.job_progress({"state": "queued", "message": "waiting"}, {}) == (0.0, "queued: waiting")
    assert fs.job_progress({"state": "done", "message": "finished"}, {})[0] == 1.0
    assert [fs.about(s) for s in (None, 0.2, 40, 240, 3900)] == [
        "",
        "about 1 s",
        "about 40 s",
        "about 4 min",
        "about 1 h 5 min",
    ]


def test_with_estimate_adds_the_time_left_once_it_can_tell():
    said, now = [], [0.0]
    report = fs.with_estimate(lambda f, msg: said.append((f, msg)), clock=lambda: now[0])
    report(0.01, "part 1/3 (MCQs): scoring base")  # too little done to tell
    now[0] = 60.0
    report(0.5, "part 2/3 (attention margins)")  # 60 s for half: about 60 s left
    report(1.0, "done")
    assert said == [
        (0.01, "part 1/3 (MCQs): scoring base"),
        (0.5, "part 2/3 (attention margins) · about 60 s left (estimate)"),
        (1.0, "done"),
    ]


def test_compare_parts_report_one_rising_fraction_with_their_names():
    said = []
    part = fs._parts(
        lambda f, msg: said.append((round(f, 3), msg)), {"MCQs": 1.0, "attention margins": 0.0, "report": 3.0}
    )
    part("MCQs")(0.5, "scoring base")
    part("report")(0.0, "report: first set")
    part("report")(1.0, "report: controls")
    assert said == [
        (0.125, "part 1/2 (MCQs): scoring base"),
        (0.25, "part 2/2 (report): first set"),
        (1.0, "part 2/2 (report): controls"),
    ]


def test_follow_job_reports_a_finished_job_and_returns(done_job):
    job, _ = done_job
    said = []
    st = fs.follow_job(job, lambda f, msg: said.append((f, msg)), poll_s=0.01)
    assert st["state"] == "done" and said == [(1.0, f"done: {st['message']}")]
