"""A running job's status agrees with its progress: once it reports a step, list() and show() say that step, not the
"starting" written when its process began (issue 19: the jobs table said "starting" at step 87/160)."""

from __future__ import annotations

import datetime as dt
import os
import time

from bindlab.jobs.manager import JobManager, _proc_start, live_message, write_json_atomic


def _running_job(root, progress: dict | None, started: str | None = None) -> str:
    """A job folder whose status says running, held by this (live) test process, with ``progress`` on disk."""
    job_id = "20260101-000000-abcdef"
    d = root / job_id
    d.mkdir(parents=True)
    now = started or dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    write_json_atomic(d / "config.json", {})
    write_json_atomic(
        d / "status.json",
        {
            "id": job_id,
            "kind": "finetune",
            "model_id": f"lora:{job_id}",
            "base_model": "bow",
            "state": "running",
            "heavy": False,
            "created": now,
            "started": now,
            "pid": os.getpid(),
            "pgid": os.getpid(),
            "pid_start": _proc_start(os.getpid()),
            "attempts": 1,
            "message": "starting",
        },
    )
    if progress is not None:
        write_json_atomic(d / "progress.json", progress)
    return job_id


def test_list_and_show_say_the_reported_step(tmp_path):
    job = _running_job(tmp_path, {"phase": "training", "step": 87, "total_steps": 160, "updated": time.time()})
    m = JobManager(tmp_path)
    [st] = m.list()
    assert st["state"] == "running" and st["message"] == "training: step 87/160"
    assert m.show(job)["status"]["message"] == "training: step 87/160"


def test_a_job_without_progress_is_still_starting(tmp_path):
    job = _running_job(tmp_path, None)
    m = JobManager(tmp_path)
    assert m.list()[0]["message"] == "starting"
    assert m.show(job)["status"]["message"] == "starting"


def test_a_previous_attempts_progress_is_not_taken_for_this_one():
    started = dt.datetime.now(dt.UTC)
    old = {"phase": "training", "step": 40, "total_steps": 160, "updated": started.timestamp() - 600}
    st = {"state": "running", "started": started.isoformat(timespec="seconds"), "message": "starting"}
    assert live_message(st, old) == "starting (resuming after step 40/160)"
    assert live_message(st, {**old, "updated": started.timestamp() + 5}) == "training: step 40/160"


def test_final_states_keep_their_own_message():
    pr = {"phase": "done", "step": 160, "total_steps": 160, "updated": time.time()}
    assert live_message({"state": "done", "message": "finished 160 steps"}, pr) == "finished 160 steps"
    assert live_message({"state": "failed", "message": "RuntimeError: boom"}, pr) == "RuntimeError: boom"


def test_before_the_first_step_the_phase_is_said():
    st = {"state": "running", "started": None, "message": "starting"}
    assert live_message(st, {"phase": "loading", "step": 0, "total_steps": None, "updated": time.time()}) == "loading"
