"""The Finetune and Walkthrough tabs' pure parts (no browser): which job the Finetune tab selects, what a failed job
shows, jobs per visitor, messages that name only what the page offers, typed dropdown values, the step-7 chart."""

from __future__ import annotations

import datetime as dt

import pytest

from bindlab.jobs.manager import write_json_atomic
from bindlab.present.walkthrough_figures import finetune_figure
from bindlab.studies import finetune as fs
from bindlab.ui import finetune as ft_tab
from bindlab.ui import walkthrough as wt_tab


def _job(state: str, job_id: str) -> dict:
    return {"id": job_id, "state": state}


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        ([], None),
        ([_job("done", "a"), _job("running", "b"), _job("done", "c")], "b"),
        ([_job("queued", "a"), _job("done", "b")], "a"),
        ([_job("done", "a"), _job("failed", "b")], "b"),
        ([_job("running", "a"), _job("queued", "b"), _job("running", "c")], "c"),
    ],
)
def test_the_tab_selects_the_running_else_the_newest_job(jobs, expected):
    assert ft_tab.default_job(jobs) == expected


def test_a_failed_job_shows_its_one_line_error_not_its_log():
    info = {
        "status": {
            "id": "j1",
            "model_id": "lora:j1",
            "base_model": "bow",
            "state": "failed",
            "message": "RuntimeError: out of memory",
            "error": "RuntimeError: out of memory",
            "log_tail": "Traceback (most recent call last):\n  File secret.py",
        },
        "log_tail": "Traceback (most recent call last):",
        "result": None,
    }
    md = ft_tab.status_md(info)
    assert "RuntimeError: out of memory" in md
    assert "Traceback" not in md and "secret.py" not in md


def _status_file(root, job_id: str, owner: str) -> None:
    d = root / "jobs" / job_id
    d.mkdir(parents=True)
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    write_json_atomic(
        d / "status.json",
        {
            "id": job_id,
            "kind": "finetune",
            "model_id": f"lora:{job_id}",
            "base_model": "bow",
            "state": "done",
            "owner": owner,
            "created": now,
            "message": "finished 2 steps",
        },
    )


def test_jobs_per_visitor_and_the_local_user_sees_cli_jobs(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path))
    _status_file(tmp_path, "20260101-000000-aaaaaa", "local:someone")  # started from the CLI
    _status_file(tmp_path, "20260101-000001-bbbbbb", "session:visitor-a")
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    assert [j["id"] for j in fs.list_jobs(fs.page_manager("visitor-a"))] == ["20260101-000001-bbbbbb"]
    assert fs.list_jobs(fs.page_manager("visitor-b")) == []
    with pytest.raises(KeyError, match="no job"):
        fs.job_info("20260101-000001-bbbbbb", manager=fs.page_manager("visitor-b"))
    monkeypatch.setenv("BINDLAB_PUBLIC", "0")  # local mode: the page is the local user's, CLI jobs included
    assert len(fs.list_jobs(fs.page_manager("visitor-b"))) == 2
    info = fs.job_info("20260101-000000-aaaaaa", manager=fs.page_manager("visitor-b"))
    assert info["log_tail"] == "" and "dir" not in info  # no server details on a page
    with pytest.raises(ValueError, match="session id"):
        fs.page_manager(None)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "q1: bad role (refusing the file; fix the line or load with strict=False / --skip-bad)",
            "q1: bad role (refusing the file; fix the line)",
        ),
        (
            "finetune needs a triplets folder (--data); make one with 'python -m bindlab generate triplets --out DIR'",
            "finetune needs a triplets folder",
        ),
        ("no job 'x'; your recent jobs: [] (see 'python -m bindlab jobs list')", "no job 'x'; your recent jobs: []"),
        (
            "--lora-rank 5000 is above 1024; LoRA ranks are small (default 4)",
            "lora rank 5000 is above 1024; LoRA ranks are small (default 4)",
        ),
        ("unknown encoder backend 'nope'; known: bow, minilm", "unknown encoder backend 'nope'; known: bow, minilm"),
    ],
)
def test_messages_name_only_what_the_page_offers(raw, expected):
    assert wt_tab.page_message(raw) == expected
    assert "--" not in wt_tab.page_message(raw)


def test_step4_dropdown_accepts_entries_and_model_pairing_and_refuses_the_rest():
    assert wt_tab.objects_choice("bow|tt") == ("bow", "tt")
    assert wt_tab.objects_choice("toy:clip · image → image") == ("toy:clip", "ii")  # an entry's label
    assert wt_tab.objects_choice(" toy:clip|it ") == ("toy:clip", "it")  # typed: a pairing not in the list
    for typed in ("toy:clip", "minilm|xx", "", None):
        with pytest.raises(ValueError, match="is not a model and pairing; choose one from the list"):
            wt_tab.objects_choice(typed)


def test_step7_chart_has_one_panel_per_pairing_and_one_legend_entry_per_model():
    rows = [
        {"pairing": p, "N": str(n), "base": 0.3, "unscaled": 0.4, "lines": 0.5}
        for p in ("tt", "ti", "it", "ii")
        for n in range(2, 6)
    ]
    fig = finetune_figure(
        {"by_n": rows + [{"pairing": "tt", "N": "all", "base": 0.3, "unscaled": 0.4, "lines": 0.5}], "lines_a": 0.1}
    )
    titles = [a.text for a in fig.layout.annotations if a.text in wt_tab.PAIRING_NAMES.values()]
    assert titles == list(wt_tab.PAIRING_NAMES.values())
    assert len(fig.data) == 12 and {len(t.x) for t in fig.data} == {4}  # "all" is not a point
    assert [t.name for t in fig.data if t.showlegend] == ["base", "finetuned (unscaled)", "finetuned + LiNeS (a=0.1)"]
    assert len({t.xaxis for t in fig.data}) == 4


def _step7(a: float) -> dict:
    """A step-7 result as :func:`bindlab.studies.walkthrough.step_finetune` shapes it, with a two-row report."""
    from bindlab.studies import walkthrough as wt
    from bindlab.train.compare import report_moves, report_rows

    def m(v, lo, hi):
        return {"value": v, "ci95": [lo, hi], "n": 30}

    entries = [
        {
            "evaluation": "MCQ, attributive template (the questions given)",
            "kind": "mcq",
            "format": "in-format",
            "in_format": True,
            "higher_is_better": True,
            "n": 30,
            "models": {"base": m(0.3, 0.2, 0.4), "unscaled": m(0.7, 0.6, 0.8), "lines": m(0.6, 0.5, 0.7)},
        },
        {
            "evaluation": "MCQ, predicative template (held out of training)",
            "kind": "mcq",
            "format": "out-of-template",
            "in_format": False,
            "higher_is_better": True,
            "n": 30,
            "models": {"base": m(0.3, 0.2, 0.4), "unscaled": m(0.35, 0.25, 0.45), "lines": m(0.33, 0.23, 0.43)},
        },
    ]
    row = {"base": 0.3, "unscaled": 0.7, "lines": 0.6}
    return {
        "job": "j",
        "rows": [{"pairing": p, "N": "all", **row} for p in ("tt", "ii")],
        "by_n": [{"pairing": p, "N": n, **row} for p in ("tt", "ii") for n in ("all", "2", "3")],
        "triplets": [],
        "lines_a": a,
        "names": wt.finetune_names(a),
        "shown": wt.finetune_shown(a),
        "template": "attributive",
        "report": entries,
        "report_rows": report_rows(entries, a),
        "report_moves": report_moves(entries, a),
        "image_drift": {"mean_1_minus_cos": 0.01, "max_1_minus_cos": 0.02, "n_images": 4},
        "steps": 3,
        "train_seconds": 5.0,
        "lr": 2e-3,
        "n_questions": 30,
    }


def test_step7_says_the_questions_are_in_format_and_which_report_rows_moved():
    r = _step7(0.1)
    text = wt_tab.finetune_md(r)
    assert "training template" in text and "in-format" in text and "not binding in general" in text
    moved = text.split("id='wt-ft-moves'")[1]
    in_format, general = moved.split("<li>")[1], moved.split("<li>")[2]
    assert "moved up beyond the interval: MCQ, attributive template" in in_format  # [.2, .4] vs [.5, .7]
    assert "moved up beyond the interval: none" in general and "within the noise: 1 of 1" in general
    report = wt_tab.report_frame(r)
    assert list(report["format"]) == ["in-format", "out-of-template"] and "LiNeS (a=0.1) 95% CI" in report.columns


def test_step7_calls_a_of_one_unscaled_never_lines():
    """a = 1 scales nothing (DESIGN: "unscaled", never "LiNeS"): no LiNeS column, legend entry, report column or
    model name on the page or in the download."""
    from bindlab.present.exports import walkthrough_export

    r = _step7(1.0)
    frame = wt_tab.finetune_frame(r)
    assert list(frame.columns) == ["pairing", "base", "finetuned (unscaled)"]
    assert [t.name for t in finetune_figure(r).data if t.showlegend and t.name != "chance"] == [
        "base",
        "finetuned (unscaled)",
    ]
    text = wt_tab.finetune_md(r)
    assert "base → finetuned (unscaled)" in text and "LiNeS (a=" not in text and "finetuned + LiNeS" not in text
    assert not any("LiNeS" in c for c in wt_tab.report_frame(r).columns)
    view = walkthrough_export({"finetune": r})
    assert not any("LiNeS" in str(k) for t in view.tables.values() for row in t for k in row)
    assert wt_tab.finetune_frame(_step7(0.1)).columns[-1] == "finetuned + LiNeS (a=0.1)"
