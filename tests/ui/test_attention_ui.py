"""Attention tab in a real browser: margins per layer on MiniLM draw a curve with its band; a caption's heatmap
shows with the binding cells outlined; free text with marked bindings works; a malformed binding is a message."""

from __future__ import annotations

import re

import pytest

from tests.ui.conftest import screenshot

SIGNED = r"[+-](?:\d\.\d{3}|\de[+-]\d\d)"  # a margin as numbers.signed writes it

pytestmark = pytest.mark.ui

PLOT = "document.querySelector('#{id} .js-plotly-plot')"


def _traces(page, elem_id: str) -> list[dict]:
    """The plotly traces drawn in a gr.Plot: name, number of points and y values."""
    return page.evaluate(
        f"() => {{ const gd = {PLOT.format(id=elem_id)}; return gd ? gd.data.map(t => "
        "({name: t.name, n: (t.y || []).length, y: t.y, type: t.type, fill: t.fill || null})) : []; }"
    )


def test_attention_curve_heatmap_free_text_and_a_failed_run(app_url, page):
    """One page load (a load costs Chromium ~8 s of CPU): margins per layer with their band, the head grid and a
    caption's heatmap, free text with marked bindings, a malformed binding, then a failed run that clears the curve
    and the caption view."""
    page.goto(app_url)
    page.get_by_role("tab", name="Attention").click(timeout=480_000)  # a loaded machine draws the page slowly
    page.fill("#at-limit input", "8")
    page.click("#at-run")
    page.wait_for_function(
        "() => document.querySelector('#at-summary').innerText.includes('captions')", timeout=480_000
    )
    summary = page.inner_text("#at-summary")
    assert "st:all-MiniLM-L6-v2" in summary and "8 captions (0 skipped)" in summary and "6 layers" in summary

    # The curve: one line of 6 layers (MiniLM has 6 blocks) and its interval band around it.
    page.wait_for_function(
        f"() => {PLOT.format(id='at-curve')} && {PLOT.format(id='at-curve')}.data.length >= 2", timeout=240_000
    )
    traces = _traces(page, "at-curve")
    line = next(t for t in traces if t["name"] == "st:all-MiniLM-L6-v2")
    band = next(t for t in traces if t["fill"] == "toself")
    assert line["n"] == 6 and band["n"] == 12
    upper, lower = band["y"][:6], band["y"][6:][::-1]
    assert all(lo - 1e-9 <= m <= hi + 1e-9 for lo, m, hi in zip(lower, line["y"], upper, strict=True))
    peak = float(re.search(rf"peak margin ({SIGNED})", summary).group(1))  # 3 decimals, like every margin shown
    assert peak == pytest.approx(max(line["y"]), abs=5e-4)

    # Computing margins selects the first caption and draws its heatmap with the binding cells outlined.
    page.wait_for_selector("#at-caption-margin", timeout=240_000)
    _head_grid_click_shows_that_heads_map(page)
    heat = _traces(page, "at-heatmap")
    assert heat and heat[0]["type"] == "heatmap"
    n_shapes = page.evaluate(f"() => ({PLOT.format(id='at-heatmap')}.layout.shapes || []).length")
    assert n_shapes == 4  # N=2: two objects x (own + other attribute)

    # Free text with bindings marked by the user.
    page.fill("#at-text textarea, #at-text input", "a polka-dot teddy-bear, a red cube, and a striped yo-yo")
    page.fill("#at-bindings textarea, #at-bindings input", "polka-dot:teddy-bear, red:cube, striped:yo-yo")
    page.click("#at-text-btn")
    page.wait_for_function(
        "() => document.querySelector('#at-caption-info').innerText.includes('teddy-bear')", timeout=240_000
    )
    info = page.inner_text("#at-caption-info")
    assert "polka-dot:teddy-bear" in info and len(re.findall(rf"L\d: {SIGNED}", info)) == 6
    page.wait_for_function(
        f"() => ({PLOT.format(id='at-heatmap')}.layout.shapes || []).length == 9", timeout=240_000
    )  # 3 objects x (1 own + 2 other)
    screenshot(page, "attention")

    # A malformed binding is a readable message and the tab keeps working.
    page.fill("#at-bindings textarea, #at-bindings input", "red cube")
    page.click("#at-text-btn")
    page.wait_for_selector("text=is not attribute:object", timeout=240_000)

    # an error: the curve, the captions and the caption view came from the old inputs and are cleared
    page.fill("#at-data textarea, #at-data input", "/nonexistent/captions.jsonl")
    page.click("#at-run")
    page.wait_for_selector("text=file not found", timeout=120_000)
    page.wait_for_function("() => !document.querySelector('#at-caption-margin')", timeout=60_000)
    # the summary is one more output of the same event: on a loaded machine it may arrive a moment after the others
    page.wait_for_function(
        "() => !document.querySelector('#at-summary').innerText.includes('captions')", timeout=60_000
    )
    assert not any(t["n"] for t in _traces(page, "at-curve"))
    for elem_id in ("at-heads", "at-heatmap"):  # blank, or the "pick a caption" message figure: no heatmap
        assert not any(t["type"] == "heatmap" for t in _traces(page, elem_id))


def _head_grid_click_shows_that_heads_map(page):
    """The per-head grid (MiniLM: 6 layers x 12 heads) shows; clicking the cell of layer 2, head 7 redraws the word x
    word map for that head and moves the layer slider to 2."""
    grid = PLOT.format(id="at-heads")
    page.wait_for_function(f"() => {grid} && {grid}.data.length && {grid}.data[0].type === 'heatmap'", timeout=240_000)
    # calcdata holds the decoded z (gd.data keeps plotly's base64 array spec)
    assert page.evaluate(f"() => [{grid}.calcdata[0][0].z.length, {grid}.calcdata[0][0].z[0].length]") == [6, 12]
    page.locator("#at-heads").scroll_into_view_if_needed()
    page.wait_for_timeout(1000)  # the click bridge binds after the plot draws
    x, y = page.evaluate(f"""() => {{ const gd = {grid}, r = gd.getBoundingClientRect(), fl = gd._fullLayout;
        return [r.left + fl._size.l + fl.xaxis.l2p(7), r.top + fl._size.t + fl.yaxis.l2p(2)]; }}""")
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_function(
        f"() => {PLOT.format(id='at-heatmap')}.layout.title.text.includes('head 7')", timeout=240_000
    )
    assert "layer 2" in page.evaluate(f"() => {PLOT.format(id='at-heatmap')}.layout.title.text")
    assert page.inner_text("#at-head-shown") == "7"
    assert page.input_value("#at-layer input[type='number']") == "2"
    screenshot(page, "attention-heads")
