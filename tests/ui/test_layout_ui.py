"""Readable at 1280x800 and 1920x1080 (issue 30, item 7): every tab, its default action run with the fastest models on
small data, a viewport screenshot at both sizes (docs/layout/<tab>-<width>.png) and these checks in the page:

(a) no text wraps inside a word or a number: in every table header and cell (Gradio Dataframes, Markdown and HTML
    tables) and every Markdown/HTML block (the summary lines), each word — split at spaces and after a hyphen, dash
    or slash, where a line may break — lies on one line (its ``Range.getClientRects()`` are all on one line);
(b) no Dataframe cell cuts its value off ("0.99…"); a wide table scrolls sideways with its key columns pinned;
(c) in every plotly figure no title (main, x, y) overlaps the legend, no two legend entries overlap, every title and
    the legend lie inside the figure, and the figure fits its box (a figure drawn while its tab was hidden, after
    *Open in Browse*, is redrawn at its box's width);
(d) the Map draws the candidates above the queries (none hidden under a query marker).

The walk is also the researcher's and (Walkthrough steps 1 and 4) the teacher's path through every tab in the user's
conditions (issue 30, item 2): the app runs with a fresh ``HOME`` outside /tmp and the checkout and ``BINDLAB_HOME``
unset, and no error toast may show after any step, nor a traceback in the app's output by the end.

Both walks take minutes (this one about 200 s of a two-worker run; the finetune report, *Compare base vs finetuned*, minutes
even for a 2-step job on a busy machine), so both are marked slow: left out of the README's test command (and CI's), run with ``python -m pytest -m slow``.
"""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import seed_embedding_cache
from tests.ui.conftest import ROOT, fresh_user_home, no_error_toast, no_traceback, pick_option, set_dropdown

pytestmark = pytest.mark.ui

SIZES = ((1280, 800), (1920, 1080))
SHOTS = ROOT / "docs" / "layout"
LOG = ROOT / ".app-layout-test.log"

# The checks, run in the page on the selected tab's panel (hidden panels are skipped); returns a list of problems.
CHECK_JS = r"""
(root) => {
  const problems = [];
  const visible = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility === 'visible';
  const describe = (el) => (el.closest('[id]') || {}).id || el.tagName;
  const lines = (range) => {
    const tops = [];
    for (const r of range.getClientRects()) {
      if (r.width < 0.5) continue;
      if (!tops.some(t => Math.abs(t - r.top) < 3)) tops.push(r.top);
    }
    return tops.length;
  };
  // (a) words on one line: text in tables and in Markdown/HTML blocks
  const blocks = root.querySelectorAll('.table-wrap th, .table-wrap [role=gridcell], table th, table td, .prose');
  const seen = new Set();
  for (const block of blocks) {
    if (!visible(block) || block.closest('.sizing-body')) continue;
    const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (seen.has(node) || node.parentElement.closest('svg, .sizing-body, textarea, input')) continue;
      seen.add(node);
      if (!visible(node.parentElement)) continue;
      const text = node.data;
      for (const m of text.matchAll(/[^\s\-\u2010-\u2015\/]+[\-\u2010-\u2015\/]?/g)) {
        if (m[0].length < 2) continue;
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        if (lines(range) > 1) problems.push(`wraps inside "${m[0]}" in ${describe(node.parentElement)}`);
      }
    }
  }
  // (b) no Dataframe cell cuts its value off
  for (const span of root.querySelectorAll('.table-wrap th span, .table-wrap [role=gridcell] span')) {
    if (!visible(span) || span.closest('.sizing-body') || !span.textContent.trim()) continue;
    if (span.scrollWidth > span.clientWidth + 1)
      problems.push(`cell cut off: "${span.textContent.trim().slice(0, 40)}" in ${describe(span)}`);
  }
  // (c) plotly figures: titles clear of the legend, legend entries clear of each other, all inside the figure
  const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const inside = (a, b) => a.left >= b.left - 1 && a.right <= b.right + 1 && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
  for (const gd of root.querySelectorAll('.js-plotly-plot')) {
    if (!visible(gd)) continue;
    const name = describe(gd);
    const svg = gd.querySelector('.main-svg');
    if (!svg) continue;
    const box = svg.getBoundingClientRect();
    if (box.width > gd.parentElement.getBoundingClientRect().width + 2)
      problems.push(`figure wider than its box in ${name}: ${box.width} > ${gd.parentElement.getBoundingClientRect().width}`);
    const titles = [...gd.querySelectorAll('.gtitle, .g-xtitle, .g-ytitle, [class^="g-x"][class$="title"], [class^="g-y"][class$="title"]')]
      .filter(t => t.getBoundingClientRect().width > 0);
    const legend = gd.querySelector('.legend');
    const lbox = legend && legend.getBoundingClientRect().width > 0 ? legend.getBoundingClientRect() : null;
    for (const t of titles) {
      const tb = t.getBoundingClientRect();
      const label = (t.textContent || '').slice(0, 40);
      if (lbox && overlap(tb, lbox)) problems.push(`title "${label}" overlaps the legend in ${name}`);
      if (!inside(tb, box)) problems.push(`title "${label}" cut off in ${name}`);
    }
    if (lbox) {
      const entries = [...legend.querySelectorAll('.traces')].map(e => e.getBoundingClientRect()).filter(r => r.width > 0);
      for (let i = 0; i < entries.length; i++)
        for (let j = i + 1; j < entries.length; j++)
          if (overlap(entries[i], entries[j])) problems.push(`legend entries ${i} and ${j} overlap in ${name}`);
      if (!inside(lbox, box)) problems.push(`legend cut off in ${name}`);
    }
  }
  return problems;
}
"""


@pytest.fixture(scope="module")
def user_url(default_scores_cached):
    """``python app.py`` as a user starts it: HOME a fresh folder, BINDLAB_HOME unset (so ``~/.cache/bindlab``), its
    embedding cache seeded with the run's (the page load reads the default benchmark's MiniLM vectors)."""
    from bindlab.speed.browser import running_app

    home = fresh_user_home()
    seed_embedding_cache(Path(home) / ".cache" / "bindlab")
    env = {"HOME": home, "BINDLAB_HOME": "", "BINDLAB_TEST_OWN_HOME": ""}
    try:
        with running_app(env, timeout_s=float(os.environ.get("BINDLAB_TEST_APP_START_S", "120")), log=LOG) as (
            url,
            _,
            _,
        ):
            yield url
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    """Small inputs for every tab: a text MCQ file, an image MCQ file, a pairs set, a factor grid, a tiny
    sentence encoder with triplets (the finetune job)."""
    from bindlab.data.composet import generate_composet
    from bindlab.data.factors import FactorGridSpec, generate_grid
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.data.saber_images import render_mcq_images
    from bindlab.data.triplets import generate_triplets, write_triplets
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("layout")
    mcq = write_benchmark(root / "mcq", generate_saber(per_size=2, sizes=range(2, 6), seed=3), {"seed": 3})
    qs = generate_saber(per_size=2, sizes=[2, 3], seed=2, vocab=RENDER_VOCAB)
    render_mcq_images(qs, root / "images", size=64, workers=1)
    images = write_benchmark(root / "images", qs, {"seed": 2})
    pairs = generate_composet(root / "cs", scenes=2, foils_per_scene=15, seed=1, size=96, workers=1)
    spec = FactorGridSpec(
        shapes=("cube", "sphere", "torus"),
        hues=("red", "green", "blue", "yellow"),
        patterns=("striped", "checkered", "glowing"),
        n_contexts=3,
        replicas=2,
        size=32,
    )
    generate_grid(root / "grid", spec, workers=1)
    rows, stats = generate_triplets(80, seed=0)
    write_triplets(root / "trip", rows, stats)
    return {
        "mcq": str(mcq),
        "images": str(images),
        "pairs": str(pairs),
        "grid": str(root / "grid"),
        "st": build_tiny("st", root / "st"),
        "triplets": str(root / "trip"),
    }


def _fill(page, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} input, #{elem_id} textarea").first
    box.fill(value)
    box.press("Tab")
    page.keyboard.press("Escape")  # Tab may have opened the next dropdown's list, which would cover buttons


def _tab(page, label: str) -> None:
    page.get_by_role("tab", name=label).click(timeout=180_000)


def _text_has(page, selector: str, text: str, timeout: int = 240_000) -> None:
    page.wait_for_function(
        "([s, t]) => (document.querySelector(s) || {}).innerText?.includes(t)", arg=[selector, text], timeout=timeout
    )


def _launch_and_finish(page, timeout: int) -> None:
    """Launch the finetune filled in, wait until the status shows that job (not an earlier one) in a final state, and
    require it done (a failed or cancelled job fails here with its status, not by a timeout).

    Twice in CI runs of the slow set (never alone) the page kept showing another job while the launched one finished;
    if the status shows another job for 30 s, the launched one is picked in the Job list, as a visitor would, and
    a warning names both (so the cause stays visible in the run's summary while the layout is still checked)."""
    import time
    import warnings

    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.click("#ft-launch")
    page.wait_for_selector("#ft-message :text('Started job')", timeout=60_000)
    job = page.inner_text("#ft-message").split("job ")[1].split(";")[0].strip()
    deadline = time.time() + timeout / 1000
    while True:
        try:
            page.wait_for_function(
                "(job) => (document.querySelector('#ft-status') || {}).innerText?.includes(job) && "
                "['done', 'failed', 'cancelled'].includes((document.querySelector('#ft-state') "
                "|| {}).innerText)",
                arg=job,
                timeout=30_000,
            )
            break
        except PlaywrightTimeout:
            shown, status = page.input_value("#ft-job input"), page.inner_text("#ft-status")
            assert time.time() < deadline, (
                f"job {job} not finished after {timeout / 1000:.0f} s; the page shows {shown!r}: {status}"
            )
            if job not in status:
                warnings.warn(
                    f"the Finetune tab showed job {shown!r} 30 s after launching {job}; picked {job}", stacklevel=1
                )
                set_dropdown(page, "ft-job", job)
    assert page.inner_text("#ft-state") == "done", page.inner_text("#ft-status")


def _pinned_columns_stay(page, elem_id: str, n: int) -> None:
    """Scrolled sideways to its end, the Dataframe ``elem_id`` keeps its first ``n`` columns where they were."""
    cells = [page.locator(f"#{elem_id} [data-testid='cell-0-{c}']") for c in range(n)]
    before = [c.bounding_box()["x"] for c in cells]
    page.eval_on_selector(f"#{elem_id} .virtual-table-viewport", "e => e.scrollLeft = e.scrollWidth")
    page.wait_for_timeout(300)
    after = [c.bounding_box()["x"] for c in cells]
    page.eval_on_selector(f"#{elem_id} .virtual-table-viewport", "e => e.scrollLeft = 0")
    assert all(abs(a - b) < 2 for a, b in zip(after, before, strict=True)), (elem_id, before, after)


def _save_small_png(png: bytes, path: Path) -> None:
    """The screenshot with a 256-colour palette: text stays sharp, the file about a third of the size."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def _check_at_both_sizes(page, name: str, focus: str) -> list[str]:
    """At each size: scroll ``focus`` to the top of the viewport, save a viewport screenshot, run the checks on the
    selected tab's panel. Returns the problems found, each prefixed with the tab and the width."""
    no_error_toast(page)  # the step before went through without an error
    SHOTS.mkdir(parents=True, exist_ok=True)
    problems = []
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(1200)  # Gradio re-measures its tables, plotly redraws at the new width
        page.eval_on_selector(focus, "el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
        _save_small_png(page.screenshot(), SHOTS / f"{name}-{width}.png")
        panel = page.locator("[role='tabpanel']:visible").first
        problems += [f"{name} @{width}: {p}" for p in panel.evaluate(CHECK_JS)]
    return problems


@pytest.mark.slow  # minutes: 202 s of a 2-worker run at load 2-5 (every tab's default action, a finetune job included)
def test_every_tab_is_readable_at_1280_and_1920(user_url, browser, small_data):
    ctx = browser.new_context(viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    page = ctx.new_page()
    problems: list[str] = []
    try:
        page.goto(user_url, timeout=120_000)
        page.wait_for_selector("#bl-question-html .bl-card", timeout=300_000)  # Browse's page-load scoring

        # Browse: score a small file with the bag of words (every candidate ties: shared ranks)
        _fill(page, "bl-data", small_data["mcq"])
        set_dropdown(page, "bl-model", "bow")
        page.click("#bl-score-btn")
        _text_has(page, "#bl-summary", "bow")
        page.wait_for_selector("#bl-topk [data-testid='cell-0-0']", timeout=60_000)
        # bag-of-words ties share a rank (waited for: the card may be drawn a moment after the summary)
        page.wait_for_function(
            "() => [...document.querySelectorAll('#bl-question-html .bl-score')]"
            ".some(e => e.innerText.includes('rank =1'))",
            timeout=30_000,
        )
        ranks = page.locator("#bl-question-html .bl-score").all_inner_texts()
        assert all(re.search(r"score -?\d\.\d{3} ", r) for r in ranks), ranks  # 3 decimals
        problems += _check_at_both_sizes(page, "browse", "#bl-summary")
        page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
        page.wait_for_timeout(1200)
        _pinned_columns_stay(page, "bl-topk", 2)  # at 1280 the top-k table scrolls; rank and question stay

        # Pairs: score a small pairs set with toy:clip and its partner toy:negclip
        _tab(page, "Pairs")
        _fill(page, "bl-pairs-data", small_data["pairs"])
        page.click("#bl-pairs-score-btn")
        page.wait_for_selector("#bl-pairs-matrix td[data-cell='c0_i0']", timeout=240_000)
        page.wait_for_selector("#bl-pairs-compare-table [data-testid='cell-0-0']", timeout=60_000)
        problems += _check_at_both_sizes(page, "pairs", "#bl-pairs-summary")

        # Grounding: load a tiny grid with toy:clip
        _tab(page, "Grounding")
        _fill(page, "gd-data", small_data["grid"])
        page.click("#gd-load")
        page.wait_for_selector("#gd-map-grounded", timeout=240_000)
        page.wait_for_selector("#gd-plane .js-plotly-plot .legend", timeout=60_000)
        problems += _check_at_both_sizes(page, "grounding", "#gd-margin")

        # Attention: margins per layer of toy:clip's text tower on 8 captions
        _tab(page, "Attention")
        set_dropdown(page, "at-model", "toy:clip")
        _fill(page, "at-data", small_data["mcq"])
        _fill(page, "at-limit", "8")
        page.click("#at-run")
        _text_has(page, "#at-summary", "captions")
        page.wait_for_selector("#at-curve .js-plotly-plot .legend", timeout=120_000)
        problems += _check_at_both_sizes(page, "attention", "#at-summary")

        # Finetune: a 2-step job of a tiny sentence encoder, followed to done (its result table)
        _tab(page, "Finetune")
        _fill(page, "ft-model", small_data["st"])
        _fill(page, "ft-data", small_data["triplets"])
        _fill(page, "ft-max-steps", "2")
        _fill(page, "ft-batch", "4")
        _launch_and_finish(page, timeout=300_000)
        page.wait_for_selector("#ft-status table", timeout=60_000)
        problems += _check_at_both_sizes(page, "finetune", "#ft-message")

        # Map: PCA of a small image benchmark with toy:clip, coloured by role
        _tab(page, "Map")
        _fill(page, "map-data", small_data["images"])
        page.click("#map-method [data-testid='PCA-radio-label']")
        page.click("#map-run")
        page.wait_for_selector("#map-plot .js-plotly-plot .scatterlayer .point", timeout=240_000)
        order = page.evaluate(
            "() => document.querySelector('#map-plot .js-plotly-plot')._fullData"
            ".filter(t => t.mode === 'markers').map(t => t.name)"
        )
        assert order[0] == "query" and "query" not in order[1:], order  # candidates drawn above the queries
        problems += _check_at_both_sizes(page, "map", "#map-status")

        # Compare: the default models on the small files; then open a question of the diff in Browse
        _tab(page, "Compare")
        _fill(page, "cmp-data", small_data["mcq"])
        _fill(page, "cmp-pairs-data", small_data["pairs"])
        page.click("#cmp-run")
        _text_has(page, "#cmp-leaderboard", "95% CI", timeout=300_000)
        page.wait_for_selector("#cmp-by-n .js-plotly-plot", timeout=60_000)
        problems += _check_at_both_sizes(page, "compare", "#cmp-status")
        if page.input_value("#cmp-question input"):  # the default diff lists a question: open it in Browse
            page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
            page.click("#cmp-open")
            page.wait_for_function(
                "() => [...document.querySelectorAll('[role=tab]')].some("
                "t => t.getAttribute('aria-selected') === 'true' && t.innerText.includes('Browse'))",
                timeout=60_000,
            )
            _text_has(page, "#bl-compare", " vs ", timeout=240_000)
            problems += _check_at_both_sizes(page, "browse-opened", "#bl-question-html")

        # Walkthrough: step 1 (the bag of words) and step 4 (accuracy by N, bag of words)
        _tab(page, "Walkthrough")
        page.click("#wt-bow-run")
        page.wait_for_selector("#wt-bow-acc", timeout=120_000)
        pick_option(page, "wt-objects-model", "bag of words · text → text")
        page.click("#wt-objects-run")
        page.wait_for_selector("#wt-objects-fig .js-plotly-plot .legend", timeout=240_000)
        problems += _check_at_both_sizes(page, "walkthrough", "#wt-objects-result")
        no_error_toast(page)
    finally:
        ctx.close()
    no_traceback(LOG)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_finetune_report_is_readable_at_1280_and_1920(app_url, browser, small_data):
    """The finetune report (every evaluation with base, unscaled and LiNeS and their intervals) after *Compare*:
    it scrolls sideways with its evaluation column pinned; nothing wraps inside a word."""
    ctx = browser.new_context(viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    page = ctx.new_page()
    try:
        page.goto(app_url, timeout=120_000)
        _tab(page, "Finetune")
        _fill(page, "ft-model", small_data["st"])
        _fill(page, "ft-data", small_data["triplets"])
        _fill(page, "ft-max-steps", "2")
        _fill(page, "ft-batch", "4")
        _launch_and_finish(page, timeout=600_000)
        _fill(page, "ft-mcq", small_data["mcq"])
        page.click("#ft-compare-btn")
        page.wait_for_selector("#ft-report [data-testid='cell-0-0']", timeout=600_000)
        page.wait_for_selector("#ft-compare-attention-fig .js-plotly-plot .legend", timeout=120_000)
        problems = _check_at_both_sizes(page, "finetune-report", "#ft-report")
        headers = page.locator("#ft-report th").all_inner_texts()
        assert any("LiNeS" in h for h in headers), headers
        # the evaluation column stays in view while the table scrolls to the LiNeS columns
        page.eval_on_selector("#ft-report .virtual-table-viewport", "e => e.scrollLeft = e.scrollWidth")
        page.wait_for_timeout(300)
        first = page.locator("#ft-report [data-testid='cell-0-0']").bounding_box()
        view = page.locator("#ft-report .virtual-table-viewport").bounding_box()
        assert abs(first["x"] - view["x"]) < 2, (first, view)
        last = page.locator("#ft-report th").last.bounding_box()
        assert last["x"] + last["width"] <= view["x"] + view["width"] + 2  # the last (LiNeS) column reached
    finally:
        ctx.close()
    assert not problems, "\n".join(problems)
