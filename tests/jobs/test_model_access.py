"""``lora:<job_id>`` models belong to their job's owner: in public mode a page visitor loads only their own
session's jobs' models, through every study a page reaches (shared encoder loader, Browse and Pairs memos, the
Grounding session, a finetune's base model), and gets one message that says nothing about other owners; locally
everything loads as before."""

from __future__ import annotations

import json

import pytest

from bindlab.studies.access import check_model_access, current_visitor, visitor

JOB = "20990101-000000-a1a1a1"


@pytest.fixture()
def jobs(tmp_path, monkeypatch):
    """$BINDLAB_HOME with one job owned by the page session 'alice' (no adapter yet: it is still running)."""
    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    d = tmp_path / "home" / "jobs" / JOB
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"model": "bow", "data": str(tmp_path)}))
    (d / "status.json").write_text(
        json.dumps(
            {
                "id": JOB,
                "state": "running",
                "owner": "session:alice",
                "created": "2099-01-01T00:00:00+00:00",
                "model_id": f"lora:{JOB}",
            }
        )
    )
    return d


def _refusal(model: str, session: str | None) -> str:
    with pytest.raises(ValueError) as e:
        check_model_access(model, session)
    return str(e.value)


def test_public_mode_a_visitor_loads_only_their_own_jobs_models(jobs, monkeypatch):
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    for model in (f"lora:{JOB}", f"lora:{JOB}/unscaled", f"lora:{JOB}/lines", "bow", "toy:clip"):
        assert check_model_access(model, "alice") == model
    # Someone else's job, a job that does not exist, a folder path, a traversal: one message, no owner, no path.
    texts = {
        _refusal(m, s).replace(m.removeprefix("lora:")[:80], "X")
        for m, s in [
            (f"lora:{JOB}", "bob"),
            ("lora:20990101-000000-ffffff", "alice"),
            (f"lora:{jobs}", "alice"),
            (f"lora:{JOB}/../{JOB}", "alice"),
            (f"lora:{JOB}", None),
        ]
    }
    assert len(texts) == 1, texts
    text = texts.pop()
    assert "alice" not in text and "session:" not in text and str(jobs.parent) not in text
    assert "only for jobs you started in this browser" in text


def test_local_mode_keeps_loading_any_job(jobs, monkeypatch):
    monkeypatch.setenv("BINDLAB_PUBLIC", "0")
    assert check_model_access(f"lora:{JOB}", "bob") == f"lora:{JOB}"
    assert check_model_access(f"lora:{jobs}", None) == f"lora:{jobs}"


@pytest.mark.usefixtures("tmp_roots")
def test_every_page_path_runs_the_check_before_any_cache(jobs, monkeypatch, small_benchmark):
    """Shared loader, Browse and Pairs memos, the Grounding session, the finetune base model: refused for 'bob';
    'alice' gets past the check to the loader's own message (her job has no adapter yet)."""
    from bindlab.encoders.base import EncoderError
    from bindlab.studies import browse, common, grounding, pairs
    from bindlab.studies.finetune import check_config

    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    model = f"lora:{JOB}"
    calls = [
        lambda: common.get_encoder(model),
        lambda: browse.scored_set(small_benchmark[0], model, "tt"),
        lambda: pairs.scored_pairs(small_benchmark[0], model),
        lambda: grounding.open_session("x", model),
        lambda: check_config({"model": model, "data": str(jobs)}),
    ]
    for call in calls:
        with visitor("bob"), pytest.raises(ValueError, match="not one of your finetuned models"):
            call()
    with visitor("alice"), pytest.raises(EncoderError, match="no adapter_lines.safetensors yet"):
        common.get_encoder(model)
    assert current_visitor() is None


def test_a_page_callback_runs_as_its_session(monkeypatch):
    """The UI's callback wrapper sets the visitor from the Gradio request it serves, and resets it after."""
    from types import SimpleNamespace

    from gradio.context import LocalContext

    from bindlab.ui.common import friendly

    token = LocalContext.request.set(SimpleNamespace(session_hash="alice"))
    try:
        assert friendly(current_visitor)() == "alice"
    finally:
        LocalContext.request.reset(token)
    assert friendly(current_visitor)() is None and current_visitor() is None
