"""scripts/hostile_check.py's pure helpers: what a refusal told, and how its estimates compare with the waits."""

from __future__ import annotations

from tests.script_module import load_script

SAID = (
    "the server is busy with 1 large request: you are 4th in line for the next; try again in about 240 s "
    "(your place is kept: the slot waits 90 s for you once free, and if you come later you go next after whoever "
    "took it; small requests still run now)"
)


def test_a_refusal_is_read_for_its_place_and_wait():
    mod = load_script("hostile_check")
    assert mod._first_place(SAID) == 4 and mod._told_wait(SAID) == 240.0
    assert mod._first_place("busy, try later") == 0 and mod._told_wait("busy, try later") == 30.0


def test_estimates_are_summarised_as_actual_over_told():
    mod = load_script("hostile_check")
    out = mod.estimate_errors([(0.0, 60.0, 270.0), (30.0, 240.0, 240.0), (60.0, 200.0, 150.0)])
    assert out == {"n": 3, "median_ratio": 1.0, "max_ratio": 4.5, "min_ratio": 0.75, "within_2x": 0.67}
    assert mod.estimate_errors([]) == {"n": 0}
