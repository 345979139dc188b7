"""Walkthrough tab in a real browser: the steps run live and show the numbers the backend computes."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from bindlab.studies import walkthrough as wt
from tests.ui.conftest import download_export, download_file, pick_option, screenshot, set_dropdown, zip_names

pytestmark = pytest.mark.ui


def _open(page, app_url) -> None:
    page.goto(app_url)
    page.get_by_role("tab", name="Walkthrough").click(timeout=180_000)  # a loaded 2-core machine is slow to draw
    page.wait_for_selector("#wt-bow-run", timeout=60_000)


def _text(page, selector: str, timeout: int) -> str:
    page.wait_for_selector(selector, timeout=timeout)
    return page.inner_text(selector).strip()


# In the page: from the click on a step's button, the time (ms) until each of Gradio 6's progress elements first
# shows in the step's result block (``.progress-text``: "queue … | 0.3s" or "processing"; ``.progress-level``: the
# callback's own gr.Progress description and fraction), and every description shown.
_WATCH_PROGRESS = """(key) => {
  window.__seen = {}; window.__desc = [];
  document.querySelector(`#wt-${key}-run`).addEventListener('click', () => { window.__t0 = performance.now(); },
                                                            {capture: true, once: true});
  const tick = () => {
    if (window.__t0 !== undefined) {
      for (const sel of ['.progress-text', '.eta-bar', '.progress-level']) {
        if (!(sel in window.__seen) && document.querySelector(`#wt-${key}-result ${sel}`))
          window.__seen[sel] = performance.now() - window.__t0;
      }
      const level = document.querySelector(`#wt-${key}-result .progress-level`);
      if (level && level.innerText && !window.__desc.includes(level.innerText)) window.__desc.push(level.innerText);
    }
    requestAnimationFrame(tick);
  };
  tick();
}"""


def _shown(value: str) -> bool:
    """A signed number as the page shows it reads non-zero."""
    return value not in ("+0.000", "-0.000", "0.000")


def test_steps_1_and_4_their_download_and_the_messages_for_bad_entries(app_url, page, tmp_path):
    """One visitor's path through the tab's quick steps, on one page load (a load costs Chromium ~8 s of CPU).

    A typed entry that is not a model and pairing is refused with a message in step 4 (never the previous choice run
    silently); step 6 uses a typed encoder id (an unknown one is named in the registry's message); *Show before/after*
    with no job is a readable message. Then step 1 (bag of words) and step 4 (accuracy by N) show the numbers the
    backend computes, and the Download panel holds this session's two steps and a zip of them."""
    bow = wt.step_bag_of_words()  # the same embedded default the app uses (same BINDLAB_HOME)
    objects = wt.step_objects(model="bow", pairing="tt")
    _open(page, app_url)

    set_dropdown(page, "wt-objects-model", "not a model")
    page.click("#wt-objects-run")
    page.wait_for_selector("text=is not a model and pairing", timeout=60_000)
    assert page.locator("#wt-objects-small").count() == 0  # nothing ran
    set_dropdown(page, "wt-attention-model", "nope:model")
    page.click("#wt-attention-run")
    page.wait_for_selector("text=unknown encoder backend", timeout=60_000)
    assert page.locator("#wt-attention-peak").count() == 0
    body = page.inner_text("body")
    assert "--skip-bad" not in body and "python -m bindlab" not in body
    page.click("#wt-ft-show")  # before/after with no job: a message, and the page keeps working
    page.wait_for_selector("text=start the finetune first", timeout=60_000)

    # step 1: bag of words
    page.click("#wt-bow-run")
    assert _text(page, "#wt-bow-acc", 120_000) == f"{bow['accuracy']:.3f}"
    assert page.inner_text("#wt-bow-ties").strip() == f"{100 * bow['tie_share']:.1f}"
    assert "tie" in page.inner_text("#wt-bow-text")  # the paragraph is there; the numbers are in the result
    # the example question's cards hold the live scores
    page.click("text=Example question (bag of words)")
    page.wait_for_selector("#wt-bow-question .bl-card", timeout=30_000)
    assert page.locator("#wt-bow-question .bl-card").count() == 5
    screenshot(page, "walkthrough")

    # step 4: accuracy by N for bow, with 95 % intervals: an error bar at every point of every line
    pick_option(page, "wt-objects-model", "bag of words · text → text")
    page.click("#wt-objects-run")
    assert _text(page, "#wt-objects-small", 900_000) == f"{objects['small']['accuracy']:.3f}"
    assert page.inner_text("#wt-objects-large").strip() == f"{objects['large']['accuracy']:.3f}"
    page.wait_for_selector("#wt-objects-fig .js-plotly-plot", timeout=180_000)
    points = sum(len(r["ci95"]) > 0 for r in objects["rows"])
    assert page.locator("#wt-objects-fig .errorbar").count() >= points > 0

    # the Download panel holds this session's steps (1 and 4 here, no other), with the numbers the page showed,
    # and a zip of them
    path, names = download_export(page, "wt", "walkthrough_step4_small_vs_large.csv", tmp_path)
    assert {"walkthrough_step4_objects.csv", "walkthrough_step4_accuracy_by_n.html", "walkthrough_all.zip"} <= names
    assert any("step1" in n for n in names)
    assert not any(f"step{k}" in n for n in names for k in (2, 3, 5, 6, 7))
    groups = pd.read_csv(path).set_index("group")
    assert f"{groups.loc['small', 'accuracy']:.3f}" == f"{objects['small']['accuracy']:.3f}"
    assert zip_names(download_file(page, "wt", "walkthrough_all.zip", tmp_path)) == names - {"walkthrough_all.zip"}
    screenshot(page, "export-walkthrough")

    # a reload empties the page, but the browser remembers the steps run: the download (its default, the main files)
    # rebuilds steps 1 and 4 from what the server remembers, with a README saying what each file is
    _open(page, app_url)  # the same address again: a reload
    assert page.locator("#wt-objects-small").count() == 0
    (tmp_path / "reloaded").mkdir()
    path, names = download_export(page, "wt", "walkthrough_step4_small_vs_large.csv", tmp_path / "reloaded", main=True)
    assert names == {
        "walkthrough_step1_bow.csv",
        "walkthrough_step4_small_vs_large.csv",
        "walkthrough_step4_accuracy_by_n.html",
        "provenance.json",
        "README.txt",
        "walkthrough_all.zip",
    }
    groups = pd.read_csv(path).set_index("group")
    assert f"{groups.loc['large', 'accuracy']:.3f}" == f"{objects['large']['accuracy']:.3f}"
    readme = download_file(page, "wt", "README.txt", tmp_path / "reloaded").read_text()
    assert "walkthrough_step4_small_vs_large.csv — step 4: small vs large scenes" in readme
    assert "step1_example" in readme  # named among what 'everything' adds

    # "Open the Browse tab" (step 1) switches tabs
    page.click("#wt-bow-open")
    page.wait_for_function(
        "() => [...document.querySelectorAll('[role=tab]')].some("
        "t => t.innerText.trim() === 'Browse' && t.getAttribute('aria-selected') === 'true')",
        timeout=30_000,
    )


@pytest.mark.slow
def test_step2_minilm_numbers(app_url, page):
    """MiniLM embeds the default benchmark's 900 texts on first use (tens of seconds on a 2-core CPU)."""
    expected = wt.step_text_encoder()
    _open(page, app_url)
    page.click("#wt-text-run")
    assert _text(page, "#wt-text-acc", 600_000) == f"{expected['accuracy']:.3f}"
    assert page.inner_text("#wt-text-gap").strip() == f"{expected['median_abs_gap']:.4f}"
    screenshot(page, "walkthrough-step2")


@pytest.mark.slow
def test_step3_failure_and_fix_shows_both_models_with_live_numbers(app_url, page):
    """The default image benchmark is rendered and embedded by three toy models on first use (minutes on 2 cores):
    toy:clip and toy:negclip side by side in image → image, image → text and text → image, as measured now."""
    _open(page, app_url)  # before the backend renders the image benchmark below: the step's click meets a cold cache
    assert "NegCLIP" in page.inner_text("#wt-images-text") and "hard negative" in page.inner_text("#wt-images-text")
    page.evaluate(_WATCH_PROGRESS, "images")
    page.click("#wt-images-run")
    # Gradio's progress shows within a second of the click, then the step's own description and fraction
    page.wait_for_function(
        "() => '.progress-level' in window.__seen || document.querySelector('#wt-images-fix-ii')", timeout=1_200_000
    )
    seen = page.evaluate("window.__seen")
    assert min(seen.values()) < 1000, seen
    page.wait_for_selector("#wt-images-fix-ii", timeout=1_200_000)
    descriptions = page.evaluate("window.__desc")
    assert any("image benchmark" in d and "%" in d for d in descriptions), descriptions
    # "texts and images", or "images" alone when the texts were embedded by an earlier step
    assert any(re.search(r"embedding (texts and )?images with toy:negclip", d) for d in descriptions), descriptions
    expected = wt.step_images()  # the same embedded default the app uses (same BINDLAB_HOME; embeddings cached)
    for x in expected["fix"]["rows"]:
        item = f"#wt-images-fix-{x['pairing']}"
        assert page.inner_text(f"{item} .wt-fix-before").strip() == f"{x['before']:.3f}"
        assert page.inner_text(f"{item} .wt-fix-after").strip() == f"{x['after']:.3f}"
    assert "toy:clip → toy:negclip" in page.inner_text("#wt-images-fix")
    page.wait_for_function(
        "() => document.querySelector('#wt-images-table').innerText.includes('toy:negclip')", timeout=60_000
    )
    table = page.inner_text("#wt-images-table")
    assert all(m in table for m in ("toy:clip", "toy:negclip", "toy:shared"))
    page.wait_for_selector("#wt-images-fig .js-plotly-plot", timeout=120_000)
    legend = page.locator("#wt-images-fig .legendtext").all_text_contents()
    assert {"toy:clip", "toy:negclip"} <= set(legend)
    # the example's labels (role · score) show whole under each image: inside the gallery and on top where they are
    page.wait_for_selector("#wt-images-gallery .caption-label", timeout=60_000)
    labels = page.evaluate("""() => {
      const g = document.querySelector('#wt-images-gallery'), box = g.getBoundingClientRect();
      return [...g.querySelectorAll('.caption-label')].map(c => {
        c.scrollIntoView({block: 'center'});
        const r = c.getBoundingClientRect(), outer = g.getBoundingClientRect();
        const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
        return {text: c.innerText, top: hit === c || c.contains(hit), inside: r.top >= outer.top && r.bottom <= outer.bottom,
                shown: getComputedStyle(c).display !== 'none' && r.height > 0, boxHeight: box.height};
      });
    }""")
    assert [x["text"] for x in labels][0] == "query" and len(labels) == 5, labels
    assert all(x["top"] and x["inside"] and x["shown"] for x in labels), labels
    assert any("preserve ✓" in x["text"] for x in labels)
    screenshot(page, "walkthrough-step3-fix")

    # step 4 opens on the model and pairing where the fall with N is clear (the image benchmark is cached now)
    page.evaluate(_WATCH_PROGRESS, "objects")
    page.click("#wt-objects-run")
    change = _text(page, "#wt-objects-change", 600_000)
    objects = wt.step_objects()
    assert change == f"{objects['change']['value']:+.3f}" and _shown(change)
    assert "the interval excludes 0" in page.inner_text("#wt-objects-verdict")
    assert min(page.evaluate("window.__seen").values()) < 1000


@pytest.mark.slow
def test_step5_slider_moves_in_the_page_with_no_request_and_lands_on_the_servers_numbers(app_url, page):
    """Step 5 loads the default factor grid with toy:clip (its image embeddings: about a minute on first use); a drag
    of its slider redraws the numbers in the page with no request to the server, and once let go the line equals the
    server's at the final α."""
    import re

    from bindlab.ui.walkthrough import grounding_md

    _open(page, app_url)
    page.click("#wt-grounding-run")
    page.wait_for_selector("#wt-grounding-grounded", timeout=900_000)
    page.wait_for_selector("#wt-grounding-curve .js-plotly-plot", timeout=60_000)
    # it opens where grounding shows: a gain that reads non-zero, its interval excluding 0
    assert page.input_value("#wt-grounding-value input") == wt.GROUNDING_VALUE
    assert _shown(page.inner_text("#wt-grounding-gain").strip())
    assert "it excludes 0" in page.inner_text("#wt-grounding-gain-ci")
    start = _text(page, "#wt-grounding-alpha", 10_000)
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    box = page.locator("#wt-grounding-alpha-slider input[type=range]").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 0.05 * box["width"], y)
    page.mouse.down()
    for i in range(1, 21):
        page.mouse.move(box["x"] + (0.05 + 0.03 * i) * box["width"], y)
        page.wait_for_timeout(30)
    page.wait_for_function(
        "(a) => document.querySelector('#wt-grounding-alpha').innerText.trim() !== a", arg=start, timeout=30_000
    )
    during = list(posts)
    page.mouse.up()
    assert during == [], during  # the drag asked nothing of the server
    alpha = float(page.locator("#wt-grounding-alpha-slider input[type=number]").input_value())
    page.wait_for_function(
        "(a) => document.querySelector('#wt-grounding-alpha').innerText.trim() === a",
        arg=f"{alpha:.2f}",
        timeout=30_000,
    )
    value = page.input_value("#wt-grounding-value input")
    expected = grounding_md(wt.step_grounding(alpha=alpha, value=value))  # the same default grid and model
    for elem_id in ("wt-grounding-grounded", "wt-grounding-gain", "wt-grounding-map", "wt-grounding-margin"):
        want = re.search(rf"id='{elem_id}'>([^<]*)<", expected).group(1)
        assert page.inner_text(f"#{elem_id}").strip() == want, elem_id
    screenshot(page, "walkthrough-step5")


@pytest.mark.slow
def test_step7_finetune_runs_in_the_background_and_shows_before_after(app_url, page):
    """The real walkthrough job (a few minutes): the timer follows it to done, then the before/after appears."""
    _open(page, app_url)
    page.click("#wt-ft-run")
    page.wait_for_selector("#wt-ft-message :text('Started job')", timeout=120_000)
    page.wait_for_selector("#wt-ft-state", timeout=60_000)
    page.click("#wt-bow-run")  # the page stays usable while the job runs
    page.wait_for_selector("#wt-bow-acc", timeout=120_000)
    page.wait_for_function(
        "() => { const s = document.querySelector('#wt-ft-state'); return s && s.innerText === 'done'; }",
        timeout=1_500_000,
    )
    drift = _text(page, "#wt-ft-drift", 1_200_000)
    assert float(drift) >= 0
    page.wait_for_function(
        "() => document.querySelector('#wt-ft-table').innerText.includes('image → image')", timeout=60_000
    )
    screenshot(page, "walkthrough-finetune")
    table = page.inner_text("#wt-ft-table")
    assert all(p in table for p in ("text → text", "text → image", "image → text", "image → image"))
    assert "LiNeS a =" in page.inner_text("#wt-ft-result")
    # what the numbers prove: the questions are in the training template (in-format); the separated report's general
    # rows sit beside them with n and a 95 % interval, and the page says which rows moved beyond their interval
    result = page.inner_text("#wt-ft-result")
    assert "training template" in result and "in-format" in result and "moved up beyond the interval" in result
    report = page.inner_text("#wt-ft-report")
    assert all(f in report for f in ("in-format", "out-of-template", "unseen words", "95% CI"))
    # one small chart per pairing, one legend entry per model (not 12 lines in one chart)
    titles = page.locator("#wt-ft-fig .annotation-text").all_text_contents()
    assert {"text → text", "text → image", "image → text", "image → image"} <= set(titles)
    legend = page.locator("#wt-ft-fig .legendtext").all_text_contents()
    assert [t for t in legend if t != "chance"] == ["base", "finetuned (unscaled)", "finetuned + LiNeS (a=0.1)"]
