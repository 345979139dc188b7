"""Exports in a real browser: the Browse tab's scores download as a CSV that pandas reads and that agrees with the
accuracy the page shows; an exported SVG and a standalone HTML figure open in Chromium with the network off."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from bindlab.present import exports
from tests.ui.conftest import download_export, screenshot

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def figure_files(tmp_path_factory):
    """``eval mcq --export`` of a generated benchmark scored by the bag-of-words baseline: its SVG and HTML chart."""
    from bindlab.cli import main
    from bindlab.data.saber import generate_saber, write_benchmark

    root = tmp_path_factory.mktemp("export-figures")
    data = write_benchmark(root / "saber", generate_saber(per_size=4, sizes=[2, 3, 4], seed=7), {"seed": 7})
    formats = "svg,html" if exports.find_browser() else "html"
    assert main(["eval", "mcq", "--data", str(data), "--model", "bow", "--export", str(root / "x"),
                 "--export-formats", formats]) == 0
    return root / "x" / "mcq_accuracy_by_n.svg", root / "x" / "mcq_accuracy_by_n.html"


def test_svg_renders_in_chromium(browser, figure_files):
    svg = figure_files[0]
    if not svg.is_file():
        pytest.skip("kaleido found no Chromium to render the SVG with")
    ctx = browser.new_context(offline=True)
    page = ctx.new_page()
    page.goto(svg.as_uri())
    assert page.evaluate("document.documentElement.localName") == "svg"
    box = page.evaluate("(() => { const b = document.documentElement.getBBox(); return [b.width, b.height]; })()")
    assert box[0] > 100 and box[1] > 100
    assert "accuracy by number of objects" in page.evaluate("document.documentElement.textContent")
    ctx.close()


def test_html_renders_offline_in_chromium(browser, figure_files):
    ctx = browser.new_context(offline=True)  # no network: the inlined plotly.js must draw the chart by itself
    page = ctx.new_page()
    # 5 MB of inline JS: seconds on an idle machine, minutes on a starved one
    page.goto(figure_files[1].as_uri(), timeout=300_000)
    page.wait_for_selector(".main-svg", timeout=120_000)
    assert page.locator(".scatterlayer .trace").count() >= 1
    ctx.close()


def test_browse_scores_download_as_csv_that_pandas_reads(app_url, page, tmp_path):
    page.goto(app_url)
    page.wait_for_selector("#bl-question-html .bl-card", timeout=300_000)  # the page scores the default on load
    shown = float(re.search(r"accuracy (\d\.\d+)", page.inner_text("#bl-summary")).group(1))

    path, names = download_export(page, "bl", "mcq_accuracy_by_n.csv", tmp_path)
    assert {"mcq_items.jsonl", "mcq_accuracy_by_n.html", "provenance.json"} <= names
    assert "mcq_accuracy_by_n.png" not in names
    screenshot(page, "export-browse")

    table = pd.read_csv(path)
    assert list(table.columns) == ["pairing", "n_objects", "subset", "accuracy", "n"]
    overall = table[table["subset"] == "all"]
    assert list(overall["n_objects"]) == list(range(2, 11)) and (overall["n"] == 20).all()
    assert (overall["accuracy"] * overall["n"]).sum() / overall["n"].sum() == pytest.approx(shown, abs=6e-4)
