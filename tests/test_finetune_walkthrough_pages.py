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


@pytest.mark.parametrize(("jobs", "expected"), [
    ([], None),
    ([_job("done", "a"), _job("running", "b"), _job("done", "c")], "b"),
    ([_job("queued", "a"), _job("done", "b")], "a"),
    ([_job("done", "a"), _job("failed", "b")], "b"),
    ([_job("running", "a"), _job("queued", "b"), _job("running", "c")], "c"),
])
def test_the_tab_selects_the_running_else_the_newest_job(jobs, expected):
    assert ft_tab.default_job(jobs) == expected


def test_a_failed_job_shows_its_one_line_error_not_its_log():
    info = {"status": {"id": "j1", "model_id": "lora:j1", "base_model": "bow", "state": "failed",
                       "message": "RuntimeError: out of memory", "error": "RuntimeError: out of memory",
                       "log_tail": "Traceback (most recent call last):\n  File secret.py"},
            "log_tail": "Traceback (most recent call last):", "result": None}
    md = ft_tab.status_md(info)
    assert "RuntimeError: out of memory" in md
    assert "Traceback" not in md and "secret.py" not in md


def _status_file(root, job_id: str, owner: str) -> None:
    d = root / "jobs" / job_id
    d.mkdir(parents=True)
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    write_json_atomic(d / "status.json", {"id": job_id, "kind": "finetune", "model_id": f"lora:{job_id}",
                                          "base_model": "bow", "state": "done", "owner": owner, "created": now,
                                          "message": "finished 2 steps"})


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


@pytest.mark.parametrize(("raw", "expected"), [
    ("q1: bad role (refusing the file; fix the line or load with strict=False / --skip-bad)",
     "q1: bad role (refusing the file; fix the line)"),
    ("finetune needs a triplets folder (--data); make one with 'python -m bindlab generate triplets --out DIR'",
     "finetune needs a triplets folder"),
    ("no job 'x'; your recent jobs: [] (see 'python -m bindlab jobs list')", "no job 'x'; your recent jobs: []"),
    ("--lora-rank 5000 is above 1024; LoRA ranks are small (default 4)",
     "lora rank 5000 is above 1024; LoRA ranks are small (default 4)"),
    ("unknown encoder backend 'nope'; known: bow, minilm", "unknown encoder backend 'nope'; known: bow, minilm"),
])
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
    rows = [{"pairing": p, "N": str(n), "base": 0.3, "unscaled": 0.4, "lines": 0.5}
            for p in ("tt", "ti", "it", "ii") for n in range(2, 6)]
    fig = finetune_figure({"by_n": rows + [{"pairing": "tt", "N": "all", "base": 0.3, "unscaled": 0.4, "lines": 0.5}]})
    titles = [a.text for a in fig.layout.annotations if a.text in wt_tab.PAIRING_NAMES.values()]
    assert titles == list(wt_tab.PAIRING_NAMES.values())
    assert len(fig.data) == 12 and {len(t.x) for t in fig.data} == {4}  # "all" is not a point
    assert [t.name for t in fig.data if t.showlegend] == ["base", "finetuned (no LiNeS)", "finetuned + LiNeS"]
    assert len({t.xaxis for t in fig.data}) == 4
