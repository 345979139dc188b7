"""A job stopped for its wall-clock cap gets SIGTERM, then SIGKILL after the grace period when its process ignores
SIGTERM: from the stopping manager's timer, or (when that process has gone) from the next promote of any manager.
The processes are real; the grace period is shortened for the test."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bindlab.jobs import manager as jm

STUBBORN = (
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(600)\n"
)


@pytest.fixture()
def stubborn_job(tmp_path):
    """A 'running' job whose process (its own session and group) ignores SIGTERM and started an hour ago."""
    root = tmp_path / "jobs"
    d = root / "20990101-000000-5ab0bb"
    d.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout.readline().strip() == b"ready"  # the SIGTERM handler is in place
    started = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).isoformat(timespec="seconds")
    (d / "config.json").write_text("{}")
    (d / "status.json").write_text(
        json.dumps(
            {
                "id": d.name,
                "state": "running",
                "owner": jm.local_owner(),
                "heavy": True,
                "created": started,
                "started": started,
                "pid": proc.pid,
                "pgid": proc.pid,
                "pid_start": jm._proc_start(proc.pid),
            }
        )
    )
    yield root, d, proc
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _dead_within(proc: subprocess.Popen, seconds: float) -> bool:
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=seconds)
    return proc.poll() is not None


def test_a_job_ignoring_sigterm_is_killed_after_the_grace_period(stubborn_job, monkeypatch):
    root, d, proc = stubborn_job
    monkeypatch.setattr(jm, "KILL_GRACE_S", 1.0)
    monkeypatch.setenv("BINDLAB_MAX_JOB_SECONDS", "60")
    t0 = time.time()
    jm.JobManager(root).promote()
    st = jm.read_json(d / "status.json")
    assert st["state"] == "cancelled" and "BINDLAB_MAX_JOB_SECONDS" in st["message"]
    assert not _dead_within(proc, 0.5), "SIGTERM alone should not stop a process that ignores it"
    assert _dead_within(proc, 15), "no SIGKILL after the grace period"
    assert proc.returncode == -signal.SIGKILL and time.time() - t0 >= 1.0
    deadline = (
        time.time() + 15
    )  # the timer writes the status just after its SIGKILL: on a loaded machine, a moment later
    while jm.read_json(d / "status.json").get("kill_after") is not None and time.time() < deadline:
        time.sleep(0.1)
    assert jm.read_json(d / "status.json")["kill_after"] is None
    assert "SIGKILL" in (d / "log.txt").read_text()


def test_the_next_promote_kills_when_the_stopping_process_has_no_timer(stubborn_job, monkeypatch):
    root, d, proc = stubborn_job
    monkeypatch.setattr(jm, "KILL_GRACE_S", 0.5)
    monkeypatch.setenv("BINDLAB_MAX_JOB_SECONDS", "60")
    monkeypatch.setattr(jm.JobManager, "_schedule_kill", lambda self, job_id, delay_s: None)  # a CLI that exited
    jm.JobManager(root).promote()
    assert jm.read_json(d / "status.json")["state"] == "cancelled"
    jm.JobManager(root).promote()  # within the grace period: nothing yet
    assert not _dead_within(proc, 0.3)
    time.sleep(0.5)
    jm.JobManager(root, owner="session:someone").promote()  # any manager's promote sweeps
    assert _dead_within(proc, 10) and proc.returncode == -signal.SIGKILL
    page = jm.JobManager(root, owner=jm.local_owner(), show_logs=False).show(d.name)["status"]
    assert "kill_after" not in page and "pgid" not in page
