"""Exports in a real browser: the Browse tab's scores download as a CSV that pandas reads and that agrees with the
accuracy the page shows; an exported SVG and a standalone HTML figure open in Chromium with the network off; every
download also comes as one zip holding the same files; the Finetune tab downloads after *Compare*, its separated
in-format / general report included."""

from __future__ import annotations

import pandas as pd
import pytest

from bindlab.present import exports
from tests.ui.conftest import download_export, download_file, screenshot, set_dropdown, zip_names

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def figure_files(tmp_path_factory):
    """``eval mcq --export`` of a generated benchmark scored by the bag-of-words baseline: its SVG and HTML chart."""
    from bindlab.cli import main
    from bindlab.data.saber import generate_saber, write_benchmark

    root = tmp_path_factory.mktemp("export-figures")
    data = write_benchmark(root / "saber", generate_saber(per_size=4, sizes=[2, 3, 4], seed=7), {"seed": 7})
    formats = "svg,html" if exports.find_browser() else "html"
    assert (
        main(
            [
                "eval",
                "mcq",
                "--data",
                str(data),
                "--model",
                "bow",
                "--export",
                str(root / "x"),
                "--export-formats",
                formats,
            ]
        )
        == 0
    )
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


@pytest.fixture(scope="module")
def finished_job(tmp_path_factory, tiny_st_holdout_jobs):
    """A finished 2-step job of a tiny text encoder on triplets with a held-out template and held-out words (so the
    report has general rows), made as the CLI makes it (the local page lists the CLI's jobs), and a few MCQs."""
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.studies import finetune as fs

    root = tmp_path_factory.mktemp("ft-export")
    job = tiny_st_holdout_jobs["scaled"]  # the run's shared job at the default LiNeS a, submitted as the CLI does
    assert fs.job_info(job)["status"]["state"] == "done"
    mcq = write_benchmark(root / "saber", generate_saber(per_size=2, sizes=[2, 3], seed=5), {"seed": 5})
    return job, str(mcq)


def test_finetune_downloads_after_compare_with_the_separated_report(app_url, page, tmp_path, finished_job):
    """The bug of issue 30: Download after Compare failed ("Error: lines"). Now it writes the study's result: the
    separated report (in-format vs general, each with its interval) beside the MCQ table, charts and curves."""
    job, mcq = finished_job
    page.goto(app_url)
    page.get_by_role("tab", name="Finetune").click(timeout=180_000)
    # the tab's first view fills the job list and picks a job of its own: choose ours after it, or the compare may
    # run on whichever job that view picked (CI's shared home holds many)
    page.wait_for_function("(id) => (document.querySelector('#ft-jobs') || {}).innerText?.includes(id)", arg=job)
    set_dropdown(page, "ft-job", job)
    page.wait_for_function(
        "(id) => { const s = document.querySelector('#ft-state'); const st = document.querySelector('#ft-status');"
        " return s && s.innerText === 'done' && st.innerText.includes(id); }",
        arg=job,
        timeout=120_000,
    )
    box = page.locator("#ft-mcq input, #ft-mcq textarea").first
    box.fill(mcq)
    box.press("Tab")
    page.click("#ft-compare-btn")
    page.wait_for_function(
        "() => document.querySelector('#ft-report').innerText.includes('out-of-template')", timeout=600_000
    )  # a row's format: the "in-format" header is there from the start
    shown = page.inner_text("#ft-report")
    assert job in page.inner_text("#ft-status"), "the compare ran on another job than the one chosen"

    path, names = download_export(page, "ft", "compare_report.csv", tmp_path)
    assert "Error" not in page.inner_text("#ft-export-note")
    assert {
        "compare_mcq.csv",
        "compare_accuracy_by_n.html",
        "compare_report.csv",
        "compare_report_values.csv",
        "compare_triplets.csv",
        "compare_training.csv",
        "compare_training.html",
        "compare_all.zip",
    } <= names
    report = pd.read_csv(path)
    assert {"in-format", "out-of-template", "unseen words", "held-out construction", "control"} <= set(
        report["format"]
    ), (job, report[["evaluation", "format"]].to_dict(orient="records"))  # once seen missing in CI: say what was there
    flat = " ".join(shown.split())  # the page's table wraps long cells
    assert all(f in flat for f in set(report["format"])), [
        f for f in set(report["format"]) if f not in flat
    ]  # the rows the page shows
    assert {"base 95% CI", "unscaled 95% CI"} <= set(report.columns)  # each model's value with its interval
    assert zip_names(download_file(page, "ft", "compare_all.zip", tmp_path)) == names - {"compare_all.zip"}
    screenshot(page, "export-finetune")
