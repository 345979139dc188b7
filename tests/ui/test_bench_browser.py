"""The browser-driven bench sections run against the real app (their figures are reported, never asserted)."""

from __future__ import annotations

import pytest

from bindlab.speed.browser import bench_startup, bench_walkthrough

pytestmark = pytest.mark.ui


def test_startup_measures_the_page_and_the_first_tab(
    browser,
):  # the fixture skips without Chromium; one sync Playwright per process, so the bench uses it
    out = bench_startup(browser)
    assert "error" not in out, out
    assert 0 < out["seconds_to_page"] <= out["seconds_to_first_tab"]


@pytest.mark.slow
def test_walkthrough_driver_clicks_steps_and_reads_results(browser):
    out = bench_walkthrough(quick=True, browser=browser)
    assert "error" not in out, out
    assert set(out["seconds"]) == {"bow", "objects"} and out["total_s"] >= out["seconds"]["bow"]


def test_slider_bench_places_the_server_on_a_core_of_its_own_and_gives_the_cores_back():
    import os

    from bindlab.speed.browser import _placed

    mine = os.sched_getaffinity(0)
    with _placed("shared") as server:
        assert server is None and os.sched_getaffinity(0) == mine
    with _placed("separate") as server:
        if len(mine) > 1:
            assert server == {max(mine)} and os.sched_getaffinity(0) == mine - server  # the browser starts from here
        else:
            assert server is None
    assert os.sched_getaffinity(0) == mine
    with pytest.raises(ValueError, match="unknown placement"), _placed("elsewhere"):
        pass
