"""Screenshots for the README that need more than a quick test's tiny data: the Compare tab on the embedded default
sets (SABER MCQ and Pairs, the four default models). Slow (it scores every model unless the compare cache holds
them), so deselected by default; run it with ``-m slow`` and copy test-artifacts/readme-*.png to docs/."""

from __future__ import annotations

import pytest

from tests.ui.conftest import screenshot

pytestmark = [pytest.mark.ui, pytest.mark.slow]


def test_compare_on_the_embedded_defaults(app_url, page):
    page.goto(app_url, timeout=120_000)
    page.click("button[role='tab']:has-text('Compare')")
    page.wait_for_selector("#cmp-run", state="visible")
    page.locator("#cmp-suite label", has_text="retrieval mAP").click()  # MCQ and Pairs: both charts drawn
    page.click("#cmp-run")
    page.wait_for_function(
        "() => (document.querySelector('#cmp-leaderboard') || {}).innerText?.includes('95% CI')", timeout=1_200_000
    )
    board = page.inner_text("#cmp-leaderboard")
    assert all(m in board for m in ("bow", "minilm", "toy:clip", "toy:shared")) and "Group" in board
    page.wait_for_selector("#cmp-by-edit .js-plotly-plot .bars", timeout=120_000)
    page.wait_for_selector("#cmp-diff [data-testid='cell-0-0']", timeout=60_000)  # the default diff is listed
    screenshot(page, "readme-compare")
