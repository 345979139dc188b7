"""Two visitors at once: selections in one browser context never change what the other sees."""

from __future__ import annotations

import pytest

from tests.ui.conftest import pick_option, set_dropdown

pytestmark = pytest.mark.ui


def test_two_sessions_do_not_affect_each_other(app_url, browser):
    a_ctx, b_ctx = browser.new_context(), browser.new_context()
    a, b = a_ctx.new_page(), b_ctx.new_page()
    try:
        for page in (a, b):
            page.goto(app_url)
        for page in (a, b):
            page.wait_for_selector("#bl-question-html .bl-card", timeout=300_000)
        # A picks a two-object question; B switches to the bag-of-words model and re-scores.
        pick_option(a, "bl-question", "n02-ind-005")
        a.wait_for_function(
            "() => document.querySelector('#bl-question-html').innerText.includes('n02-ind-005')", timeout=60_000
        )
        set_dropdown(b, "bl-model", "bow")
        b.click("#bl-score-btn")
        b.wait_for_function(
            "() => document.querySelector('#bl-summary').innerText.includes('bow:words')", timeout=60_000
        )
        # A still shows its own question with MiniLM's scores; B shows bag-of-words scores for the first question.
        assert "n02-ind-005" in a.inner_text("#bl-question-html")
        assert "MiniLM" in a.inner_text("#bl-summary")
        assert "bow:words" not in a.inner_text("#bl-summary")
        assert "n02-ind-000" in b.inner_text("#bl-question-html")
    finally:
        a_ctx.close()
        b_ctx.close()
