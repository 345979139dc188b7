"""The job manager with real subprocesses on a tiny random encoder: a 2-step job runs and reports progress, its
``lora:`` model loads; cancel stops the process group within seconds and keeps the checkpoint; the queue runs one
heavy job at a time; a new manager (an app restart) sees everything; resume continues from the checkpoint;
crashing jobs are reported failed with their log tail."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from bindlab.jobs.manager import JobManager, group_alive, read_json


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from bindlab.data.triplets import generate_triplets, write_triplets
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("ft")
    model = build_tiny("st", root / "st")
    rows, stats = generate_triplets(120, seed=0)
    write_triplets(root / "trip", rows, stats)
    return model, str(root / "trip")


def _cfg(tiny, **kw):
    return {"model": tiny[0], "data": tiny[1], "batch_size": 4, "eval_rows": 8, "device": "cpu", **kw}


def _wait_progress(d: Path, step: int, timeout: float = 240) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        pr = read_json(d / "progress.json", {}) or {}
        if pr.get("step", 0) >= step:
            return pr
        st = read_json(d / "status.json", {})
        assert st["state"] in ("queued", "running"), (st, (d / "log.txt").read_text()[-2000:])
        time.sleep(0.2)
    raise AssertionError(f"no progress to step {step} in {timeout}s: {(d / 'log.txt').read_text()[-2000:]}")


def test_two_step_job_runs_reports_progress_and_its_model_loads(tiny_st_job):
    from bindlab.encoders.adapter import read_adapter
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.service import embed_texts
    from bindlab.train.lines import scale_lora_state

    # The run's shared job: this module's config (_cfg on the same tiny model and 120 triplets, max_steps=2, lr=1e-2,
    # lines_a=0.5) submitted to a JobManager and waited for, trained once for every test that reads a finished job.
    tiny = (tiny_st_job["model"], tiny_st_job["triplets"])
    m = JobManager(tiny_st_job["root"])
    job = tiny_st_job["job"]
    assert (
        read_json(m.job_dir(job) / "config.json", {}).items() >= _cfg(tiny, max_steps=2, lr=1e-2, lines_a=0.5).items()
    )
    st = m.wait(job, timeout=300)
    d = m.job_dir(job)
    assert st["state"] == "done", m.log_tail(job)
    pr = read_json(d / "progress.json")
    assert (pr["step"], pr["total_steps"], pr["fraction"], pr["phase"]) == (2, 2, 1.0, "done")
    metrics = m.metrics(job)
    assert [e["step"] for e in metrics if "loss" in e] == [1, 2]
    assert [e["step"] for e in metrics if "val_acc" in e][0] == 0  # baseline point of the curve
    res = read_json(d / "result.json")
    assert set(res["eval"]) == {"base", "unscaled", "lines"}
    for split in ("test", "heldout", "heldout:deferred_bind_anaphoric", "heldout:deferred_bind_respective"):
        assert 0.0 <= res["eval"]["lines"]["triplets"][split] <= 1.0
    assert res["eval"]["base"]["forgetting"]["drift"] == 0.0
    assert res["provenance"]["encoder"]["id"] == tiny[0]

    # The saved LiNeS adapter is the unscaled one scaled by the formula (2 blocks: factors 0.5 and 1).
    lines = read_json(d / "lines.json")
    assert lines["a"] == 0.5 and lines["factors"] == [0.5, 1.0] and lines["chosen_on"] == "given"
    raw, scaled = read_adapter(d / "adapter_unscaled.safetensors"), read_adapter(d / "adapter_lines.safetensors")
    for k, v in scale_lora_state(raw, 2, 0.5).items():
        assert torch.allclose(scaled[k], v)

    # lora:<job> loads (by job folder here; by id under $BINDLAB_HOME/jobs) and embeds through the cache.
    texts = ["a red cube and a blue sphere", "a blue cube and a red sphere"]
    base = load_encoder(tiny[0], device="cpu")
    ft = load_encoder(f"lora:{d}", device="cpu")
    raw_enc = load_encoder(f"lora:{d}/unscaled", device="cpu")
    e0, e1, e2 = (embed_texts(e, texts) for e in (base, ft, raw_enc))
    assert e1.shape == e0.shape and np.allclose(np.linalg.norm(e1, axis=1), 1, atol=1e-5)
    assert not np.allclose(e0, e1, atol=1e-6) and not np.allclose(e1, e2, atol=1e-6)
    assert len({base.fingerprint, ft.fingerprint, raw_enc.fingerprint}) == 3

    # A restarted app (a new manager on the same root) still sees the job.
    again = {j["id"]: j for j in JobManager(tiny_st_job["root"]).list()}
    assert again[job]["state"] == "done" and again[job]["model_id"] == f"lora:{job}"


def test_cancel_queue_restart_and_resume(tiny, tmp_path):
    root = tmp_path / "jobs"
    m = JobManager(root, max_heavy=1)
    slow = m.submit(_cfg(tiny, max_steps=6, evaluate=False, checkpoint_every=1, debug={"sleep_per_step": 1.0}))
    quick = m.submit(_cfg(tiny, max_steps=1, evaluate=False))
    states = {j["id"]: j["state"] for j in m.list()}
    assert states == {slow: "running", quick: "queued"}  # one heavy job at a time

    d = m.job_dir(slow)
    _wait_progress(d, 2)
    pgid = read_json(d / "status.json")["pgid"]
    t0 = time.time()
    st = m.cancel(slow)
    assert time.time() - t0 < 10 and not group_alive(pgid)
    assert st["state"] == "cancelled" and "checkpoint kept" in st["message"]
    ckpt = torch.load(d / "checkpoints" / "last.pt", map_location="cpu", weights_only=False)
    assert ckpt["step"] >= 2

    # The freed slot went to the queued job; a new manager (the app restarted) sees both and cancels the second.
    m2 = JobManager(root, max_heavy=1)
    states = {j["id"]: j["state"] for j in m2.list()}
    assert states == {slow: "cancelled", quick: "running"}
    assert m2.cancel(quick)["state"] == "cancelled"

    # Resume continues from the checkpoint, not from step 0.
    m2.resume(slow)
    st = m2.wait(slow, timeout=300)
    assert st["state"] == "done", m2.log_tail(slow)
    assert f"(from step {ckpt['step']})" in m2.log_tail(slow, 200)
    res = read_json(d / "result.json")
    assert res["steps"] == 6 and res["triplets_seen"] == 6 * 4
    losses = [e["step"] for e in m2.metrics(slow) if "loss" in e]
    assert losses[-1] == 6 and sorted(set(losses)) == list(range(1, 7))


def test_crashing_jobs_are_reported_failed_with_their_log(tiny, tmp_path):
    m = JobManager(tmp_path / "jobs")
    bad = m.submit(_cfg(tiny, max_steps=3, evaluate=False, debug={"fail_at_step": 1}))
    st = m.wait(bad, timeout=300)
    assert st["state"] == "failed" and "injected failure" in st["message"]
    assert "RuntimeError: injected failure" in st["log_tail"]

    # A process that dies without a word (killed, segfault, OOM) is noticed by the manager.
    killed = m.submit(_cfg(tiny, max_steps=50, evaluate=False, debug={"sleep_per_step": 1.0}))
    _wait_progress(m.job_dir(killed), 1)
    os.kill(read_json(m.job_dir(killed) / "status.json")["pid"], signal.SIGKILL)
    st = m.wait(killed, timeout=30)
    assert st["state"] == "failed" and "without reporting" in st["message"]
    assert "step" in st["log_tail"] or "training" in st["log_tail"]


def test_submit_refuses_bad_input_before_starting(tiny, tmp_path):
    from bindlab.encoders.base import EncoderError

    m = JobManager(tmp_path / "jobs")
    with pytest.raises(FileNotFoundError, match="generate triplets"):
        m.submit(_cfg(tiny, data=str(tmp_path / "nothing")))
    with pytest.raises(EncoderError, match="no backend"):
        m.submit(_cfg(tiny, model="nobackend"))
    with pytest.raises(ValueError, match="unknown finetune setting"):
        m.submit(_cfg(tiny, learning_rate=1))
    with pytest.raises(KeyError, match="no job"):
        m.show("20990101-000000-beef")
    assert m.list() == []
    assert json.loads(json.dumps(m.list())) == []


# -- owners, caps, what a page sees ---------------------------------------------------------------------------
def _job_dirs(root: Path) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir()} if root.exists() else set()


def test_jobs_belong_to_their_owner_and_a_failed_job_shows_one_line(tiny, tmp_path):
    from bindlab.jobs.manager import local_owner

    root = tmp_path / "jobs"
    alice, bob = JobManager(root, owner="session:alice"), JobManager(root, owner="session:bob")
    job = alice.submit(_cfg(tiny, max_steps=3, evaluate=False, debug={"fail_at_step": 1}))
    st = alice.wait(job, timeout=300)
    assert st["state"] == "failed" and st["owner"] == "session:alice"

    # Bob cannot see, show, cancel or resume it, and the refusal reads like a job that does not exist.
    assert bob.list() == []
    messages = []
    for jid in (job, "20990101-000000-beefee"):
        for call in (bob.show, bob.cancel, bob.resume, bob.log_tail):
            with pytest.raises(KeyError) as e:
                call(jid)
            messages.append(str(e.value).replace(jid, "ID"))
    assert len(set(messages)) == 1 and str(root) not in messages[0]

    # Alice's page: the one-line error, no traceback, log, pid or server folder anywhere.
    info = alice.show(job)
    page = json.dumps([info, alice.list(), alice.wait(job)])
    assert info["status"]["error"] == "RuntimeError: injected failure (debug fail_at_step)" or info["status"][
        "error"
    ].startswith("RuntimeError: injected failure")
    assert "\n" not in info["status"]["error"] and info["log_tail"] == "" and alice.log_tail(job) == ""
    for secret in ("Traceback", 'log_tail": "=', str(root), '"pid"', '"pgid"'):
        assert secret not in page, secret
    # The traceback is in the job's log on the server, and the local admin (the CLI) sees it and every job.
    assert "Traceback" in (root / job / "log.txt").read_text()
    admin = JobManager(root)
    assert admin.owner == local_owner() and [j["id"] for j in admin.list()] == [job]
    assert "RuntimeError: injected failure" in admin.show(job)["log_tail"]


def test_one_line_hides_server_paths():
    from bindlab.jobs.manager import one_line

    msg = one_line(
        "FileNotFoundError: [Errno 2] No such file: '/srv/app/.cache/x/trip.jsonl'\nTraceback ...", hide_paths=True
    )
    assert msg == "FileNotFoundError: [Errno 2] No such file: '…/trip.jsonl'"
    assert len(one_line("x" * 1000)) == 240


def test_caps_are_checked_in_submit_before_anything_is_queued(tiny, tmp_path, monkeypatch):
    from bindlab.jobs.manager import JobLimitError

    for name, value in (
        ("JOBS_PER_SESSION", 1),
        ("QUEUED_PER_SESSION", 1),
        ("JOBS_GLOBAL", 1),
        ("QUEUED_GLOBAL", 2),
        ("EPOCHS", 2),
        ("STEPS", 50),
    ):
        monkeypatch.setenv(f"BINDLAB_MAX_{name}", str(value))
    root = tmp_path / "jobs"
    a, b, c = (JobManager(root, owner=f"session:{x}") for x in "abc")
    slow = {"evaluate": False, "debug": {"sleep_per_step": 1.0}, "heavy": False}  # light jobs count too

    with pytest.raises(JobLimitError, match="epochs=3 is over the cap of 2"):
        a.submit(_cfg(tiny, epochs=3, **slow))
    with pytest.raises(JobLimitError, match="max_steps=51 is over the cap of 50"):
        a.submit(_cfg(tiny, max_steps=51, **slow))
    assert _job_dirs(root) == set()

    a1 = a.submit(_cfg(tiny, max_steps=40, **slow))
    a2 = a.submit(_cfg(tiny, max_steps=1, **slow))  # a's one queued job
    with pytest.raises(JobLimitError, match="1 running and 1 queued"):
        a.submit(_cfg(tiny, max_steps=1, **slow))
    b1 = b.submit(_cfg(tiny, max_steps=1, **slow))  # the server's second queued job
    with pytest.raises(JobLimitError, match="job queue is full"):
        c.submit(_cfg(tiny, max_steps=1, **slow))
    assert _job_dirs(root) == {a1, a2, b1}
    admin = JobManager(root)
    assert {j["id"]: j["state"] for j in admin.list()} == {a1: "running", a2: "queued", b1: "queued"}

    # A job past the wall-clock cap is stopped (and can be resumed); the next queued job in turn gets the slot: b's
    # first, since a just had one (jobs.manager.fair_order).
    _wait_progress(root / a1, 1)
    monkeypatch.setenv("BINDLAB_MAX_JOB_SECONDS", "1")
    time.sleep(1.5)
    states = {j["id"]: j for j in admin.list()}
    assert states[a1]["state"] == "cancelled" and "BINDLAB_MAX_JOB_SECONDS" in states[a1]["message"]
    assert states[b1]["state"] == "running" and states[a2]["state"] == "queued"
    monkeypatch.delenv("BINDLAB_MAX_JOB_SECONDS")
    for job in (a2, b1):
        with contextlib.suppress(ValueError):
            admin.cancel(job)


def test_public_mode_keeps_the_last_queue_places_for_visitors_with_no_job(tiny, tmp_path, monkeypatch):
    """Issue 56, item 3: a few visitors filled the job queue for everyone for up to 30 minutes. With a queue of 4,
    the last place is kept for a visitor who has no job yet."""
    from bindlab.jobs.manager import JobLimitError, queue_reserve

    assert [queue_reserve(n) for n in (1, 2, 4, 8, 64)] == [0, 1, 1, 2, 16]
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    for name, value in (
        ("JOBS_PER_SESSION", 1),
        ("QUEUED_PER_SESSION", 2),
        ("JOBS_GLOBAL", 1),
        ("QUEUED_GLOBAL", 4),
        ("STEPS", 100),
    ):
        monkeypatch.setenv(f"BINDLAB_MAX_{name}", str(value))
    root = tmp_path / "jobs"
    a, b, c, d = (JobManager(root, owner=f"session:{x}") for x in "abcd")
    slow = {"evaluate": False, "debug": {"sleep_per_step": 1.0}, "heavy": False}
    try:
        a.submit(_cfg(tiny, max_steps=60, **slow))  # runs
        a.submit(_cfg(tiny, max_steps=1, **slow))
        a.submit(_cfg(tiny, max_steps=1, **slow))  # 2 queued
        b.submit(_cfg(tiny, max_steps=1, **slow))  # 3 queued: b had no job
        with pytest.raises(
            JobLimitError,
            match=r"nearly full \(3 of 4 places taken; the last 1 are kept for "
            r"visitors with no job yet\)",
        ):
            b.submit(_cfg(tiny, max_steps=1, **slow))
        c.submit(_cfg(tiny, max_steps=1, **slow))  # the kept place: c had no job
        with pytest.raises(JobLimitError, match="job queue is full"):
            d.submit(_cfg(tiny, max_steps=1, **slow))
    finally:
        admin = JobManager(root, owner="session:admin", admin=True)
        for j in admin.list():
            if j["state"] in ("running", "queued"):
                admin.cancel(j["id"])


def test_a_job_without_max_steps_stops_at_the_steps_cap(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("BINDLAB_MAX_STEPS", "2")
    m = JobManager(tmp_path / "jobs", owner="session:a")
    job = m.submit(_cfg(tiny, evaluate=False))  # one epoch of ~24 steps without the cap
    st = JobManager(tmp_path / "jobs").wait(job, timeout=300)
    assert st["state"] == "done", st
    assert read_json(tmp_path / "jobs" / job / "result.json")["steps"] == 2


def test_a_job_with_a_equal_1_is_called_unscaled_not_lines():
    from bindlab.jobs.runner import lines_label

    assert lines_label(0.1) == "LiNeS a = 0.1"
    assert lines_label(1) == lines_label(1.0) == "unscaled (LiNeS a = 1 scales nothing)"


@pytest.mark.parametrize("folder", ["empty", "other", "missing"])
def test_the_job_runner_refuses_a_folder_that_is_not_a_job_and_writes_nothing(tmp_path, folder):
    """Issue 56, item 7: ``jobs _run /etc`` wrote a status.json into /etc and printed a traceback."""
    from tests.cli_run import run

    target = tmp_path / folder
    if folder != "missing":
        target.mkdir()
    if folder == "other":
        (target / "notes.txt").write_text("mine")
    before = sorted(p.name for p in target.iterdir()) if target.exists() else None
    p = run("jobs", "_run", str(target), check=False)
    assert p.returncode == 2 and "not a job folder" in p.stderr and "Traceback" not in p.stderr
    assert (sorted(q.name for q in target.iterdir()) if target.exists() else None) == before
