"""The job queue serves visitors in turn and tells a waiting visitor its place and when it should start (issue 56,
item 8): a visitor's second job waits behind every other visitor's first, whatever the order they came in; a queued
job's view — the tab's job list, ``jobs list`` / ``jobs show`` and the API — carries ``queue_position``,
``starts_in_s`` and a message that says both; the queue-full refusal says when a place should free."""

from __future__ import annotations

import datetime as dt

import pytest

from bindlab.jobs.manager import (
    DEFAULT_JOB_S,
    JobLimitError,
    JobManager,
    fair_order,
    queue_estimates,
    typical_run_s,
    waiting_message,
)


def _iso(seconds_ago: float) -> str:
    return (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds_ago)).isoformat(timespec="seconds")


def _job(i: int, state: str, address: str, **kw) -> dict:
    return {"id": f"j{i:02d}", "state": state, "address": address, "owner": f"session:{address}", **kw}


def test_a_visitors_second_job_waits_behind_everyone_elses_first():
    statuses = [
        _job(0, "running", "a", started=_iso(10)),
        _job(1, "queued", "a"),
        _job(2, "queued", "a"),
        _job(3, "queued", "b"),
        _job(4, "queued", "c"),
        _job(5, "queued", "b"),
    ]
    assert [s["id"] for s in fair_order(statuses)] == ["j03", "j04", "j01", "j05", "j02"]
    # with no address (the CLI), the owner is the visitor; one visitor alone keeps first come, first served
    alone = [{"id": f"k{i}", "state": "queued", "owner": "local:me"} for i in range(3)]
    assert [s["id"] for s in fair_order(alone)] == ["k0", "k1", "k2"]


def test_the_estimate_follows_the_running_jobs_and_the_recent_run_times():
    finished = [
        _job(90 + i, "done", "z", started=_iso(1000 + 100 * i), finished=_iso(1000 + 100 * i - span))
        for i, span in enumerate((100, 120, 140))
    ]
    assert typical_run_s(finished, 0) == 120 and typical_run_s(finished, 60) == 60
    assert typical_run_s([], 0) == DEFAULT_JOB_S
    statuses = [*finished, _job(0, "running", "a", started=_iso(30)), _job(1, "queued", "b"), _job(2, "queued", "c")]
    # the running job reports 50 s left: b starts then, c one typical run (120 s) later
    est = queue_estimates(statuses, slots=1, cap_s=1800, progress={"j00": {"eta_s": 50}})
    assert est == {"j01": (1, 50.0), "j02": (2, 170.0)}
    # no progress yet: a typical run minus what it has run; the time cap bounds it
    est = queue_estimates(statuses, slots=1, cap_s=1800)
    assert est["j01"] == (1, pytest.approx(90, abs=3))
    assert queue_estimates(statuses, slots=1, cap_s=40)["j01"] == (1, pytest.approx(10, abs=3))
    # two slots: both start as soon as the running job's slot and the free one allow
    assert queue_estimates(statuses, slots=2, cap_s=0, progress={"j00": {"eta_s": 50}}) == {
        "j01": (1, 0.0),
        "j02": (2, 50.0),
    }
    assert waiting_message(2, 5, 170) == (
        "waiting: 2nd of 5 in the queue; starts in about 3 min (jobs run in turn, one visitor's each)"
    )
    assert waiting_message(1, 1, 0).startswith("waiting: 1st of 1 in the queue; starts as soon as a slot is free")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from bindlab.data.triplets import generate_triplets, write_triplets
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("fair")
    model = build_tiny("st", root / "st")
    rows, stats = generate_triplets(60, seed=0)
    write_triplets(root / "trip", rows, stats)
    return model, str(root / "trip")


def test_real_jobs_start_in_turn_and_a_waiting_visitor_sees_its_place(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    for name, value in (("JOBS_PER_SESSION", 1), ("QUEUED_PER_SESSION", 2), ("JOBS_GLOBAL", 1), ("QUEUED_GLOBAL", 4)):
        monkeypatch.setenv(f"BINDLAB_MAX_{name}", str(value))
    root = tmp_path / "jobs"
    a, b, c = (JobManager(root, owner=f"session:{x}", show_logs=False, address=f"addr:{x}") for x in "abc")
    cfg = {"model": tiny[0], "data": tiny[1], "batch_size": 4, "device": "cpu", "evaluate": False}
    try:
        first = a.submit({**cfg, "max_steps": 60, "debug": {"sleep_per_step": 1.0}})  # runs for a minute
        a_next = [a.submit({**cfg, "max_steps": 1}) for _ in range(2)]
        b_job = b.submit({**cfg, "max_steps": 1})
        c_job = c.submit({**cfg, "max_steps": 1})
        with pytest.raises(JobLimitError, match=r"job queue is full \(4 queued.*a place should free in about"):
            JobManager(root, owner="session:d", address="addr:d").submit({**cfg, "max_steps": 1})
        mine = {j["id"]: j for j in b.list()}
        assert list(mine) == [b_job]  # b sees only its own job, with its place
        view = mine[b_job]
        assert view["state"] == "queued" and view["queue_position"] == 1 and view["queue_length"] == 4
        assert view["message"].startswith("waiting: 1st of 4 in the queue; starts in about")
        assert 0 <= view["starts_in_s"] <= 1800
        assert c.show(c_job)["status"]["queue_position"] == 2
        assert [a.show(j)["status"]["queue_position"] for j in a_next] == [3, 4]
        a.cancel(first, grace_s=2)  # the slot frees: b's job starts, not a's next
        admin = JobManager(root, owner="session:admin", admin=True)
        started = {j["id"]: j.get("started") for j in admin.list()}
        assert started[b_job] and not started[a_next[0]] and not started[c_job]
        admin.wait(b_job, timeout=240)
        assert {j["id"]: j["state"] for j in admin.list()}[c_job] in ("running", "done")
        assert not {j["id"]: j.get("started") for j in admin.list()}[a_next[1]]
    finally:
        admin = JobManager(root, owner="session:admin", admin=True)
        for j in admin.list():
            if j["state"] in ("running", "queued"):
                admin.cancel(j["id"], grace_s=2)
