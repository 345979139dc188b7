"""Map tab in a real browser: make a map of a small image benchmark, click a point, open its question in Browse."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.ui.conftest import download_export, screenshot, unknown_model_then_bow

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def image_benchmark(tmp_path_factory):
    """Four questions (N = 2, 3) with rendered images, for the bundled image+text model toy:clip."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.data.saber_images import render_mcq_images

    out = tmp_path_factory.mktemp("map-images")
    qs = generate_saber(per_size=2, sizes=[2, 3], seed=2, vocab=RENDER_VOCAB)
    render_mcq_images(qs, out, size=64, workers=1)
    return write_benchmark(out, qs, {"seed": 2})


def _open_map_tab(page, app_url):
    page.goto(app_url, timeout=120_000)
    # Wait for Browse's page-load scoring: it would otherwise land after "Open in Browse" and show question 1.
    page.wait_for_selector("#bl-question-html .bl-card", timeout=300_000)
    page.click("button[role='tab']:has-text('Map')")
    page.wait_for_selector("#map-run", state="visible")


def test_map_point_opens_its_question_in_browse(app_url, page, image_benchmark):
    _open_map_tab(page, app_url)
    page.fill("#map-data textarea, #map-data input", str(image_benchmark))
    page.click("#map-method [data-testid='PCA-radio-label']")
    page.click("#map-run")
    page.wait_for_selector("#map-plot .js-plotly-plot .scatterlayer .point", timeout=120_000)
    # toy:clip (the tab's default) on an image benchmark: 4 questions x 5 items x (text + image) points
    assert page.locator("#map-plot .scatterlayer .point").count() == 40
    assert "text + image" in page.inner_text("#map-status")

    # Click a point as a user would: hover it (plotly picks the nearest point), then click.
    page.locator("#map-plot").scroll_into_view_if_needed()
    box = page.locator("#map-plot .scatterlayer .point").nth(3).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    # hovering shows the point's caption and its item's image (every item of an image benchmark has one)
    page.wait_for_selector("#bl-hover-box img", state="visible", timeout=30_000)
    hover = page.inner_text("#bl-hover-box")
    page.mouse.click(x, y)
    page.wait_for_function(
        "() => (document.querySelector('#map-point textarea, #map-point input') || {}).value", timeout=30_000
    )
    point = page.input_value("#map-point textarea, #map-point input")
    qid = point.split("/")[0]
    page.wait_for_function(f"() => document.querySelector('#map-detail').innerText.includes({qid!r})", timeout=30_000)
    page.wait_for_selector("#map-thumb img", timeout=30_000)  # the item's image beside the plot
    assert point in hover  # the hover box described the point that was then clicked
    screenshot(page, "tab-map")

    page.click("#map-open")
    page.wait_for_function(
        f"() => document.querySelector('#bl-question-html') && "
        f"document.querySelector('#bl-question-html').innerText.includes({qid + ' ·'!r})",
        timeout=120_000,
    )
    assert page.locator("button[role='tab'][aria-selected='true']").inner_text().strip() == "Browse"
    assert page.input_value("#bl-question input") == qid
    assert "toy:clip" in page.inner_text("#bl-summary")
    screenshot(page, "map-open-in-browse")


def _plot_traces(page) -> list[dict]:
    """The drawn traces (plotly's full data: arrays decoded): name, number of points, mode, visibility, marker size."""
    return page.evaluate(
        "() => document.querySelector('#map-plot .js-plotly-plot')._fullData.map(t => ({name: t.name, "
        "n: t._length, mode: t.mode, visible: t.visible, size: t.marker && t.marker.size, "
        "group: t.legendgroup}))"
    )


def test_map_tools_a_typed_point_a_failed_map_and_a_text_only_model(app_url, page, image_benchmark, tmp_path):
    """One visitor's path through the map's tools, on one page load (a load costs Chromium ~8 s of CPU): legend,
    box selection, caption search, a query's neighbours and join lines; a point typed by its id; a failed map clears
    the map and the point; an unknown model is a message and bow then maps the text points, which download."""
    _open_map_tab(page, app_url)
    page.fill("#map-data textarea, #map-data input", str(image_benchmark))
    page.click("#map-method [data-testid='PCA-radio-label']")
    page.click("#map-run")
    page.wait_for_selector("#map-plot .js-plotly-plot .scatterlayer .point", timeout=120_000)
    traces = _plot_traces(page)
    # queries first, larger (open rings); the candidates drawn over them
    assert traces[0]["name"] == "query" and traces[0]["size"] > traces[-1]["size"]

    # Legend click hides a role, a second click shows it again.
    page.locator("#map-plot .legend .traces", has_text="joint_swap").click()
    page.wait_for_function(
        "() => document.querySelector('#map-plot .js-plotly-plot').data"
        ".find(t => t.name === 'joint_swap').visible === 'legendonly'",
        timeout=10_000,
    )
    page.locator("#map-plot .legend .traces", has_text="joint_swap").click()
    page.wait_for_function(
        "() => document.querySelector('#map-plot .js-plotly-plot').data"
        ".find(t => t.name === 'joint_swap').visible !== 'legendonly'",
        timeout=10_000,
    )

    # Box selection over the whole plot area lists every point with the model's accuracy.
    page.locator("#map-plot").scroll_into_view_if_needed()
    area = page.locator("#map-plot .nsewdrag").first.bounding_box()
    page.mouse.move(area["x"] + 3, area["y"] + 3)
    page.mouse.down()
    page.mouse.move(area["x"] + area["width"] / 2, area["y"] + area["height"] / 2, steps=5)
    page.mouse.move(area["x"] + area["width"] - 3, area["y"] + area["height"] - 3, steps=5)
    page.mouse.up()
    page.wait_for_selector("#map-sel-count", timeout=60_000)
    count = int(page.inner_text("#map-sel-count"))
    assert count >= 30  # 40 points; a few may sit under the plot's edge
    assert page.locator("#map-selection tbody tr").count() == count
    assert "model correct on" in page.inner_text("#map-selection")

    # Caption search rings the matches and says how many.
    word = page.evaluate(
        "() => document.querySelector('#map-plot .js-plotly-plot').layout.meta.bindlab_map"
        ".points[0].caption.split(' ').pop()"
    )
    page.fill("#map-search textarea, #map-search input", word)
    page.press("#map-search textarea, #map-search input", "Enter")
    page.wait_for_function(
        "() => (document.querySelector('#map-search-note') || {}).innerText"
        " && document.querySelector('#map-search-note').innerText.includes('match')",
        timeout=60_000,
    )
    ring = next(t for t in _plot_traces(page) if (t["name"] or "").startswith("search"))
    assert ring["n"] >= 2 and f"{ring['n']} point" in page.inner_text("#map-search-note")

    # Click a query: its nearest neighbours (full embedding space) are listed with their roles; join draws its lines.
    page.check("#map-join input")
    page.wait_for_timeout(1500)
    k = page.evaluate(
        "() => document.querySelector('#map-plot .js-plotly-plot').data.findIndex(t => t.name === 'query')"
    )
    q = page.locator("#map-plot .scatterlayer .trace").nth(k).locator(".point").first.bounding_box()
    page.mouse.move(q["x"] + q["width"] / 2, q["y"] + q["height"] / 2)
    page.mouse.click(q["x"] + q["width"] / 2, q["y"] + q["height"] / 2)
    page.wait_for_selector("#map-neighbours tbody tr", timeout=60_000)
    assert page.locator("#map-neighbours tbody tr").count() == 10
    assert "full embedding space" in page.inner_text("#map-neighbours")
    page.wait_for_function(
        "() => document.querySelector('#map-plot .js-plotly-plot').data.some(t => t.mode === 'lines')", timeout=60_000
    )
    screenshot(page, "tab-map-tools")

    # a point typed by its id (question/modality/role): its description and nearest neighbours show
    point = page.evaluate(
        "() => document.querySelector('#map-plot .js-plotly-plot').layout.meta.bindlab_map.points[0].id"
    )
    qid = point.split("/")[0]
    page.fill("#map-point textarea, #map-point input", point)
    page.wait_for_function(f"() => document.querySelector('#map-detail').innerText.includes({qid!r})", timeout=60_000)
    page.wait_for_selector("#map-neighbours tbody tr", timeout=60_000)

    # an error: the map, its status and the point shown no longer match the inputs and are cleared
    page.fill("#map-data textarea, #map-data input", "/nonexistent/mcq.jsonl")
    page.click("#map-run")
    page.wait_for_selector("text=file not found", timeout=60_000)
    page.wait_for_function("() => !document.querySelector('#map-plot .scatterlayer .point')", timeout=30_000)
    page.wait_for_function("() => !document.querySelector('#map-neighbours tbody tr')", timeout=30_000)
    assert "points" not in page.inner_text("#map-status")
    assert qid not in page.inner_text("#map-detail")
    assert page.locator("#map-thumb img").count() == 0

    # the tab keeps working: an unknown model is a message, then bow (no image tower) maps the text points
    page.fill("#map-data textarea, #map-data input", str(image_benchmark))
    unknown_model_then_bow(page, "map-model", "#map-run")
    # bow has no image tower: a map of its text points, with a note saying so
    page.wait_for_function(
        "() => document.querySelector('#map-status').innerText.includes('text points only')", timeout=60_000
    )
    assert "bow:words: 4 questions, 20 points (text)" in page.inner_text("#map-status")

    # Download: the points with their PCA coordinates, as a CSV that pandas reads, and the map as HTML
    path, names = download_export(page, "map", "map_points.csv", tmp_path)
    assert {"map_summary.json", "map_pca.html", "provenance.json"} <= names
    table = pd.read_csv(path)
    assert len(table) == 20 and {"id", "role", "caption", "pca_x", "pca_y"} <= set(table.columns)
    assert set(table["modality"]) == {"text"}
    screenshot(page, "export-map")
