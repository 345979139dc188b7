"""The Finetune tab shows a waiting job's place (issue 56, item 8): the jobs table's step column reads ``queue 2/5``
and the status line carries the manager's message with the estimate; other jobs keep their step."""

from __future__ import annotations

from bindlab.jobs.manager import waiting_message
from bindlab.ui.finetune import jobs_frame, status_md


def _job(job_id: str, state: str, **kw) -> dict:
    return {"id": job_id, "model_id": f"lora:{job_id}", "base_model": "minilm", "state": state, "progress": {}, **kw}


def test_the_jobs_table_and_status_show_the_place_in_the_queue():
    message = waiting_message(2, 5, 170)
    jobs = [
        _job("a", "running", progress={"step": 3, "total_steps": 10}, message="training: step 3/10"),
        _job("b", "queued", queue_position=2, queue_length=5, starts_in_s=170, message=message),
        _job("c", "queued", message="waiting for a free slot"),  # a view without the estimate (an older manager)
    ]
    frame = jobs_frame(jobs)
    steps = dict(zip(frame["id"], frame["step"], strict=True))
    assert steps == {"a": "3/10", "b": "queue 2/5", "c": ""}
    assert dict(zip(frame["id"], frame["message"], strict=True))["b"].startswith("waiting: 2nd of 5 in the queue")
    md = status_md({"status": jobs[1], "result": None})
    assert "queued" in md and "2nd of 5 in the queue; starts in about 3 min" in md
