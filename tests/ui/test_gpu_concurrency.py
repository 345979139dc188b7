"""The GPU queue's width: one event at a time locally, a few in public mode (they share the model batch by batch)."""

from __future__ import annotations

import pytest

from bindlab.ui.gpu import LOCAL_CONCURRENCY, PUBLIC_CONCURRENCY, gpu_concurrency


def test_local_runs_one_event_at_a_time(monkeypatch):
    for var in ("BINDLAB_PUBLIC", "SPACE_ID", "BINDLAB_GPU_CONCURRENCY"):
        monkeypatch.delenv(var, raising=False)
    assert gpu_concurrency() == LOCAL_CONCURRENCY == 1


def test_public_mode_lets_a_few_events_run_together(monkeypatch):
    monkeypatch.delenv("BINDLAB_GPU_CONCURRENCY", raising=False)
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    assert gpu_concurrency() == PUBLIC_CONCURRENCY > 1
    monkeypatch.setenv("BINDLAB_GPU_CONCURRENCY", "2")
    assert gpu_concurrency() == 2


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5"])
def test_a_bad_value_is_named(monkeypatch, raw):
    monkeypatch.setenv("BINDLAB_GPU_CONCURRENCY", raw)
    with pytest.raises(ValueError, match="BINDLAB_GPU_CONCURRENCY must be a positive integer"):
        gpu_concurrency()
