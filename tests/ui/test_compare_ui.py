"""Compare tab in a real browser: run several encoders on a tiny set, see the leaderboard with intervals, pick a
question from the per-question diff and open it in Browse with both models' scores side by side."""

from __future__ import annotations

import re

import pytest

from tests.ui.conftest import screenshot, set_dropdown

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory):
    from bindlab.data.saber import generate_saber, write_benchmark

    qs = generate_saber(per_size=4, sizes=[2, 3, 4], seed=11)
    return str(write_benchmark(tmp_path_factory.mktemp("cmp-ui"), qs, {"seed": 11}))


def _text(page, sel: str) -> str:
    return page.inner_text(sel) if page.locator(sel).count() else ""


def test_compare_table_and_diff_open_in_browse_and_a_failed_run_clears_them(app_url, page, tiny_set):
    """One page load (a load costs Chromium ~8 s of CPU): the leaderboard, the per-question diff opened in Browse
    with both models side by side, then a failed run back in Compare clears what the earlier one drew."""
    page.goto(app_url, timeout=120_000)
    # Wait for Browse's page-load scoring: it would otherwise land after "Open in Browse" and show question 1.
    page.wait_for_selector("#bl-question-html .bl-card", timeout=300_000)
    # the Glossary panel above the tabs: closed at first, its terms as text once opened
    assert page.locator("#bl-glossary").is_visible() and not page.locator("#bl-glossary-text").is_visible()
    page.locator("#bl-glossary").get_by_text("Glossary", exact=True).click()
    page.wait_for_selector("#bl-glossary-text", state="visible", timeout=30_000)
    terms = page.inner_text("#bl-glossary-text")
    for term in ("margin:", "Group:", "I2T:", "T2I:", "α:", "α*:", "LiNeS:", "tt / ti / it / ii:", "chance:", "n:"):
        assert term in terms
    page.locator("#bl-glossary").get_by_text("Glossary", exact=True).click()  # closed again for the screenshots
    page.wait_for_selector("#bl-glossary-text", state="hidden", timeout=30_000)
    page.click("button[role='tab']:has-text('Compare')")
    page.wait_for_selector("#cmp-run", state="visible")
    page.fill("#cmp-data textarea, #cmp-data input", tiny_set)
    for label in ("retrieval mAP", "Pairs 2x2"):  # MCQ only: the four default models on the tiny set
        page.locator("#cmp-suite label", has_text=label).click()
    page.click("#cmp-run")
    page.wait_for_function(
        "() => (document.querySelector('#cmp-leaderboard') || {}).innerText?.includes('95% CI')", timeout=300_000
    )
    board = page.inner_text("#cmp-leaderboard")
    for text in ("bow", "minilm", "toy:clip", "MCQ tt", "95% CI"):
        assert text in board
    status = page.inner_text("#cmp-status")
    assert "sorted by" in status and "scored: MCQ tt: 12 of 12 questions of" in status  # the set, n, nothing left out
    assert re.search(r"no clear leader on MCQ tt: the 95 % interval|leader on MCQ tt: \S+ \(its 95 % interval", status)
    page.wait_for_selector("#cmp-by-n .js-plotly-plot", timeout=60_000)

    # the diff: minilm right, bow wrong (bow ties on every exact binding swap, so it never has full credit)
    set_dropdown(page, "cmp-a", "minilm")
    set_dropdown(page, "cmp-b", "bow")
    page.wait_for_function(
        "() => (document.querySelector('#cmp-diff') || {}).innerText?.includes('n0')", timeout=60_000
    )
    first = page.locator("#cmp-diff [data-testid='cell-0-0']")  # Gradio 6 draws body cells as grid cells
    qid = first.inner_text().strip()
    first.click()  # choosing a row selects its question
    page.wait_for_function(
        f"() => (document.querySelector('#cmp-question input') || {{}}).value === {qid!r}", timeout=30_000
    )
    screenshot(page, "tab-compare")

    page.click("#cmp-open")
    page.wait_for_function(
        f"() => document.querySelector('#bl-question-html') && "
        f"document.querySelector('#bl-question-html').innerText.includes({qid + ' ·'!r})",
        timeout=120_000,
    )
    assert page.locator("button[role='tab'][aria-selected='true']").inner_text().strip() == "Browse"
    assert page.input_value("#bl-question input") == qid
    assert "MiniLM" in page.inner_text("#bl-summary")  # model A, by its resolved id (st:all-MiniLM-L6-v2)
    page.wait_for_function(
        "() => (document.querySelector('#bl-compare') || {}).innerText?.includes(' vs bow')", timeout=120_000
    )
    side = page.inner_text("#bl-compare")
    assert qid in side and "MiniLM-L6-v2 score" in side and "bow" in side and "(correct)" in side
    assert side.count("score") >= 2 and ("(wrong)" in side or "(tie" in side)  # A right, B not: "(tied)" / "(tie)"
    assert page.locator("#bl-compare table tr").count() == 5  # header + four candidates
    screenshot(page, "compare-open-in-browse")

    # back in Compare, an error: the leaderboard, charts, model pickers and diff no longer match the inputs and
    # are cleared
    page.click("button[role='tab']:has-text('Compare')")
    page.wait_for_selector("#cmp-run", state="visible")
    page.fill("#cmp-data textarea, #cmp-data input", "/nonexistent/mcq.jsonl")
    page.click("#cmp-run")
    page.wait_for_selector("text=file not found", timeout=120_000)
    page.wait_for_function(
        "() => !(document.querySelector('#cmp-leaderboard') || {}).innerText?.includes('95% CI')", timeout=60_000
    )
    assert "sorted by" not in page.inner_text("#cmp-status")
    assert page.locator("#cmp-by-n .js-plotly-plot").count() == 0
    assert page.input_value("#cmp-a input") == ""
