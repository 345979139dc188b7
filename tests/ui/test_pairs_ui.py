"""Pairs tab in a real browser: score a generated pairs file with a tiny CLIP, read the 2x2 matrix, filter; compare
with a second model in the same click; errors clear the results."""

from __future__ import annotations

import re

import pytest

from tests.ui.conftest import pick_option, screenshot, set_dropdown, unknown_model

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def pairs_setup(tmp_path_factory):
    from bindlab.data.composet import generate_composet
    from bindlab.encoders.tiny import build_tiny

    d = tmp_path_factory.mktemp("pairs-ui")
    path = generate_composet(d / "cs", scenes=2, foils_per_scene=15, seed=1, size=96, workers=1)
    return str(path), build_tiny("hf-clip", d / "clip")


def _matrix(page) -> dict[str, float]:
    """The 2x2 scores at full precision (each cell shows 3 decimals, its full value in its title)."""
    cells = {c: page.locator(f"#bl-pairs-matrix td[data-cell='{c}']") for c in ("c0_i0", "c0_i1", "c1_i0", "c1_i1")}
    for cell in cells.values():
        assert re.fullmatch(r"-?\d\.\d{3}", cell.inner_text().strip())
    return {c: float(cell.get_attribute("title")) for c, cell in cells.items()}


def test_pairs_tab_from_scoring_to_compare_filters_and_errors(app_url, page, pairs_setup, tmp_path):
    """One visitor's path through the tab, on one page load (a load costs Chromium ~8 s of CPU): score a generated
    file with a tiny CLIP (and, by default, toy:negclip beside it), read the 2x2 matrix, the edit-type chart and the
    side-by-side table, filter, drop the comparison, then an unknown model and a missing file."""
    from bindlab.data.composet import EDIT_ORIGIN, EDIT_TYPES
    from bindlab.data.pairs_schema import load_pairs
    from bindlab.studies import pairs as study

    data, model = pairs_setup
    page.goto(app_url)
    page.get_by_role("tab", name="Pairs").click()
    # the page-load note names the default pair; "Compare with" defaults to toy:negclip (toy:clip's fix)
    page.wait_for_function(
        "() => { const t = document.querySelector('#bl-pairs-summary').innerText;"
        " return t.includes('toy:clip') && t.includes('toy:negclip'); }",
        timeout=120_000,
    )
    assert page.input_value("#bl-pairs-compare input") == "toy:negclip"
    # before any scoring no table stands empty (an empty Dataframe shows only a placeholder header, "1 2 3")
    assert not page.locator("#bl-pairs-compare-table").is_visible()
    assert not page.locator("#bl-pairs-edit-table").is_visible()
    page.fill("#bl-pairs-data textarea, #bl-pairs-data input", data)
    set_dropdown(page, "bl-pairs-model", model)
    page.click("#bl-pairs-score-btn")
    page.wait_for_selector("#bl-pairs-matrix td[data-cell='c0_i0']", timeout=180_000)
    # every n says what it counts, and each score stands beside its 95 % interval and chance
    summary = page.inner_text("#bl-pairs-summary")
    assert "n = 90 rows = 30 pairs × 3 caption levels (short, medium, long)" in summary
    for name in ("I2T", "T2I", "Group"):
        assert re.search(rf"{name} \d\.\d{{3}} \(95% CI \d\.\d{{3}}–\d\.\d{{3}}; chance 0\.\d{{3}}", summary), summary
    assert "30 pairs match" in page.inner_text("#bl-pairs-count")
    page.wait_for_selector("#bl-pairs-base-img img", timeout=60_000)
    page.wait_for_selector("#bl-pairs-foil-img img", timeout=60_000)

    # the pass/fail marks shown follow the 2x2 definitions applied to the scores shown (ties fail)
    s = _matrix(page)
    text = page.inner_text("#bl-pairs-matrix")
    i2t = s["c0_i0"] > s["c1_i0"] and s["c1_i1"] > s["c0_i1"]
    t2i = s["c0_i0"] > s["c0_i1"] and s["c1_i1"] > s["c1_i0"]
    assert re.search(r"I2T (pass|fail)", text).group(1) == ("pass" if i2t else "fail")
    assert re.search(r"T2I (pass|fail)", text).group(1) == ("pass" if t2i else "fail")
    margin = min(s["c0_i0"] - s["c1_i0"], s["c1_i1"] - s["c0_i1"], s["c0_i0"] - s["c0_i1"], s["c1_i1"] - s["c1_i0"])
    assert float(page.get_attribute("#bl-pairs-matrix .bl-pair-margin", "title")) == pytest.approx(margin, abs=1e-6)
    assert "e-0" not in text and re.search(r"edit type \w+ \(category \w+, origin (composet|bindlab)\)", text), text

    # the chart: every edit type, top to bottom in taxonomy order, with its pairs and its n (three caption levels
    # scored per pair); the CompoSET paper's own types marked ◆; each bar with its 95 % interval
    counts = {t: 0 for t in EDIT_TYPES}
    for pair in load_pairs(data)[0]:
        counts[pair.edit_type] += 1
    page.wait_for_selector("#bl-pairs-chart .ytick text", timeout=60_000)
    ticks = page.locator("#bl-pairs-chart .ytick text")
    top_down = sorted((ticks.nth(i).bounding_box()["y"], ticks.nth(i).text_content()) for i in range(ticks.count()))
    assert [t for _, t in top_down] == [
        f"{'◆ ' if EDIT_ORIGIN[t] == 'composet' else ''}{t} ({n} pairs, n={3 * n})" for t, n in counts.items()
    ]
    chart = " ".join(page.locator("#bl-pairs-chart text").all_text_contents())
    if 0 in counts.values():
        assert "no pairs (missing)" in chart  # an edit type without pairs says so
    assert "chance Group (0.167)" in chart  # chance lines are named in the legend
    assert "bars: 95% CI" in chart and page.locator("#bl-pairs-chart .errorbar").count() > 0

    # the per-edit-type table: not empty, every edit type with its pairs, n rows and each score's interval
    page.wait_for_selector("#bl-pairs-edit-table [data-testid='cell-0-0']", timeout=60_000)
    table = page.inner_text("#bl-pairs-edit-table")
    assert all(h in table for h in ("pairs", "n (rows)", "I2T 95% CI", "T2I 95% CI", "Group 95% CI"))
    assert all(t in table for t in EDIT_TYPES)
    assert re.search(r"\d\.\d{3}–\d\.\d{3}", table)
    screenshot(page, "tab-pairs")

    # the same click scored toy:negclip too: both models' I2T / T2I / Group per edit type side by side, each the
    # numbers the study computes for that model alone
    page.wait_for_function(
        "() => document.querySelector('#bl-pairs-compare-table').innerText.includes('overall')", timeout=300_000
    )
    expected = study.compare_pairs(data, model, "toy:negclip", "all")
    first, second = expected.models
    # a score whose interval lies below chance is explained, in each model's summary, as the study words it
    for s, box in ((expected.first, "#bl-pairs-summary"), (expected.second, "#bl-pairs-compare-summary")):
        shown = page.inner_text(box)
        for note in study.below_chance_notes(s):
            assert note.split(":")[0] in shown and "1 time in" in shown, (note, shown)
    header = page.inner_text("#bl-pairs-compare-table")
    assert "n (rows)" in header and "pairs" in header  # the overall row: 30 pairs, n = 90 rows
    assert all(f"{k} toy:negclip" in header for k in ("i2t", "t2i", "group"))
    assert header.count(first.rsplit("/", 1)[-1]) >= 3  # the first model's three columns
    top = expected.table[0]  # the overall row (the table shows 3 decimals)
    for m in (first, second):
        for k in ("i2t", "t2i", "group"):
            assert f"{top[f'{k} {m}']:.3f}".rstrip("0").rstrip(".") in header
    assert "toy:negclip" in page.inner_text("#bl-pairs-compare-summary")
    page.wait_for_selector("#bl-pairs-compare-chart .js-plotly-plot", timeout=60_000)
    legend = set(page.locator("#bl-pairs-compare-chart .legendtext").all_text_contents())
    assert "toy:negclip" in legend and len(legend) == 2
    screenshot(page, "pairs-compare")

    # filter by edit type, as a user would: every listed pair now has that edit type
    pick_option(page, "bl-pairs-edit-type", "modify_color")
    page.wait_for_function(
        "() => document.querySelector('#bl-pairs-matrix').innerText.includes('modify_color')", timeout=60_000
    )
    n = int(re.search(r"(\d+) pairs match", page.inner_text("#bl-pairs-count")).group(1))
    assert 0 < n < 30
    # the foil caption differs from the base caption (one edit), both visible
    base_cap = page.input_value("#bl-pairs-base-cap textarea, #bl-pairs-base-cap input")
    foil_cap = page.input_value("#bl-pairs-foil-cap textarea, #bl-pairs-foil-cap input")
    assert base_cap and foil_cap and base_cap != foil_cap
    screenshot(page, "pairs")

    # "Compare with" none: one model only, the comparison is gone
    set_dropdown(page, "bl-pairs-compare", "none")
    page.click("#bl-pairs-score-btn")
    page.wait_for_function(
        "() => !document.querySelector('#bl-pairs-compare-table') || "
        "!document.querySelector('#bl-pairs-compare-table').innerText.includes('overall')",
        timeout=120_000,
    )
    assert "Group" in page.inner_text("#bl-pairs-summary")
    assert not page.locator("#bl-pairs-compare-table").is_visible()  # hidden, not an empty "1 2 3" table
    assert page.locator("#bl-pairs-edit-table").is_visible()

    # an error: the previous results no longer match the inputs and are cleared
    unknown_model(page, "bl-pairs-model", "#bl-pairs-score-btn")
    page.wait_for_function("() => !document.querySelector('#bl-pairs-matrix td[data-cell]')", timeout=30_000)
    assert "Group" not in page.inner_text("#bl-pairs-summary")
    assert page.locator("#bl-pairs-chart .ytick text").count() == 0
    assert not page.locator("#bl-pairs-edit-table").is_visible()  # cleared and hidden, not left empty

    # the local app reads any path the person gives: a missing file is simply missing, wherever it is
    for missing in (tmp_path / "missing-pairs.jsonl", "/nonexistent/pairs.jsonl"):
        page.fill("#bl-pairs-data textarea, #bl-pairs-data input", str(missing))
        page.click("#bl-pairs-score-btn")
        # get_by_text: a "text=/…" selector would be read as a regular expression (the path starts with a slash)
        page.get_by_text(f"{missing}: file not found").first.wait_for(timeout=60_000)
