"""Grounding tab in a real browser: load a tiny grid with a tiny CLIP, move the alpha slider, see AP change."""

from __future__ import annotations

import pytest

from tests.ui.conftest import screenshot, set_dropdown

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def tiny_grid(tmp_path_factory):
    from bindlab.data.factors import FactorGridSpec, generate_grid
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("grounding-ui")
    spec = FactorGridSpec(
        shapes=("cube", "sphere", "torus"),
        hues=("red", "green", "blue", "yellow"),
        patterns=("striped", "checkered", "glowing"),
        n_contexts=3,
        replicas=2,
        size=32,
    )
    generate_grid(root / "grid", spec, workers=1)
    return str(root / "grid"), build_tiny("hf-clip", root / "tiny-clip")


def _text(page, sel: str) -> str:
    return page.inner_text(sel).strip()


def test_slider_click_drag_and_a_failed_load(app_url, page, tiny_grid):
    """One visitor's path through the tab, on one page load (a load costs Chromium ~8 s of CPU): load a tiny grid
    with a tiny CLIP; a click on the slider moves α and AP; *Select α on validation* sets it; a drag redraws the
    summary and the figures in the page with no request to the server, and letting go asks once, for the top-8
    images (the numbers shown are the server's at the final α); then a text-only encoder is a message that clears
    the earlier results."""
    from bindlab.studies import grounding as gs

    grid, model = tiny_grid
    page.goto(app_url)
    page.get_by_role("tab", name="Grounding").click()
    page.fill("#gd-data textarea, #gd-data input", grid)
    set_dropdown(page, "gd-model", model)
    page.get_by_label("hue").check()
    page.click("#gd-load")
    page.wait_for_selector("#gd-map-grounded", timeout=180_000)
    assert _text(page, "#gd-alpha-shown") == "1.00"
    before = (_text(page, "#gd-map-grounded"), _text(page, "#gd-ap-value"))
    native = _text(page, "#gd-map-native")
    assert page.locator("#gd-gallery img").count() >= 8

    # Move the slider as a user does: click three quarters of the way along the track (alpha ~ 6).
    box = page.locator("#gd-alpha input[type=range]").bounding_box()
    page.mouse.click(box["x"] + 0.75 * box["width"], box["y"] + box["height"] / 2)
    page.wait_for_function(
        "() => document.querySelector('#gd-alpha-shown').innerText.trim() !== '1.00'", timeout=60_000
    )
    alpha = float(_text(page, "#gd-alpha-shown"))
    assert 5 <= alpha <= 7
    after = (_text(page, "#gd-map-grounded"), _text(page, "#gd-ap-value"))
    assert after != before  # grounded AP moved with alpha...
    assert _text(page, "#gd-map-native") == native  # ...the native query did not

    # "Select alpha on validation" sets the slider to the validation choice and the summary follows.
    page.click("#gd-select")
    page.wait_for_selector("#gd-chosen", timeout=60_000)
    chosen = _text(page, "#gd-chosen")
    page.wait_for_function(
        f"() => document.querySelector('#gd-alpha-shown').innerText.trim() === '{chosen}'", timeout=60_000
    )
    screenshot(page, "grounding")

    # drag the slider: the page redraws by itself
    page.wait_for_selector("#gd-margin .js-plotly-plot", timeout=60_000)
    moved = page.evaluate("() => window.bindlabSlider ? window.bindlabSlider.moves : 0")  # the click's moves
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    box = page.locator("#gd-alpha input[type=range]").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 0.1 * box["width"], y)
    page.mouse.down()
    for i in range(1, 21):
        page.mouse.move(box["x"] + (0.1 + 0.03 * i) * box["width"], y)
        page.wait_for_timeout(30)
    page.wait_for_function(
        "(m) => window.bindlabSlider && window.bindlabSlider.moves >= m + 10", arg=moved, timeout=30_000
    )
    during = list(posts)
    page.mouse.up()
    assert during == [], during  # nothing asked of the server while dragging
    alpha = float(page.locator("#gd-alpha input[type=number]").input_value())
    page.wait_for_function(
        "(a) => document.querySelector('#gd-alpha-shown').innerText.trim() === a", arg=f"{alpha:.2f}", timeout=30_000
    )
    value = page.input_value("#gd-value input")
    view = gs.slider_view(gs.open_session(grid, model), "hue", value, alpha)
    assert _text(page, "#gd-map-grounded") == f"{view['map_grounded']:.3f}"
    assert _text(page, "#gd-ap-value") == f"{view['ap_grounded'][view['value_index']]:.3f}"
    assert _text(page, "#gd-top1-grounded") == f"{view['top1_grounded']:.3f}"
    page.wait_for_timeout(400)  # at rest, plotly redraws the same state into its own figure data
    page.evaluate("() => window.bindlabSlider.settled")
    assert page.locator("#gd-grounding .bl-overlay, .bl-overlay").count() == 0  # the moving overlays are gone
    legend = page.locator("#gd-ap .legendtext").all_text_contents()
    assert f"grounded (α = {alpha:.2f})" in legend
    shown = page.evaluate("() => document.querySelector('#gd-margin .js-plotly-plot').data[1].x[0]")
    assert abs(shown - alpha) < 1e-9  # the current point moved along the curve
    bars = page.evaluate("() => document.querySelector('#gd-ap .js-plotly-plot').data[1].name")
    assert bars == f"grounded (α = {alpha:.2f})"
    assert page.locator("#gd-plane svg.bl-arrow").count() == 0  # the drag's arrow gave way to plotly's
    page.wait_for_timeout(500)
    assert 1 <= len(posts) <= 2, posts  # let go: the gallery, once (its queue join)

    # a text-only encoder: a message, and nothing of the earlier load stays on the page
    set_dropdown(page, "gd-model", "bow")
    page.click("#gd-load")
    page.wait_for_selector("text=/no image tower|not an image\\+text encoder/", timeout=60_000)
    page.wait_for_function("() => !document.querySelector('#gd-map-grounded')", timeout=30_000)
    assert page.locator("#gd-gallery img").count() == 0
    assert page.locator("#gd-margin .legendtext").count() == 0


def _crossings(grid: str, model: str) -> dict[str, dict[str, float]]:
    """c = q . d of every value of every factor, computed in this process as the app does."""
    from bindlab.studies import grounding as gs

    session = gs.open_session(grid, model)
    return {
        f: dict(zip(session.state(f).values.tolist(), session.state(f).c.tolist(), strict=True))
        for f in ("shape", "hue", "pattern")
    }


def _load(page, app_url, grid, model, factor):
    page.goto(app_url)
    page.get_by_role("tab", name="Grounding").click()
    page.fill("#gd-data textarea, #gd-data input", grid)
    set_dropdown(page, "gd-model", model)
    page.get_by_label(factor).check()
    page.click("#gd-load")
    page.wait_for_selector("#gd-map-grounded", timeout=180_000)


def test_alpha_star_is_marked_on_the_curve_when_a_crossing_exists(app_url, page, tiny_grid):
    grid, model = tiny_grid
    cs = _crossings(grid, model)
    with_crossing = [(f, v, c) for f, vals in cs.items() for v, c in vals.items() if -1 < c < 0]
    assert with_crossing, cs  # q . d is spread around 0 for a random tiny CLIP: some value has c < 0
    factor, value, c = with_crossing[0]
    _load(page, app_url, grid, model, factor)
    assert not page.locator("#gd-controls-table").is_visible()  # no placeholder table before controls run
    if page.input_value("#gd-value input") != value:
        page.click("#gd-value input")
        page.click(f"[role='option'][aria-label='{value}']")
    page.wait_for_function(
        f"() => document.querySelector('#gd-summary-line').innerText.includes('value {value}')", timeout=60_000
    )
    assert _text(page, "#gd-alpha-star") == f"{-c:.2f}"
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('#gd-margin .legendtext'))"
        ".some(t => t.textContent.startsWith('α* ='))",
        timeout=60_000,
    )
    legend = page.locator("#gd-margin .legendtext").all_text_contents()
    assert f"α* = {-c:.2f} (zero crossing)" in legend
    # the 2-D view names its axes without the stray dot
    axes = " ".join(page.locator("#gd-plane .g-xtitle, #gd-plane .g-ytitle").all_text_contents())
    assert "cosine with d" in axes and "· d_v" not in axes
    screenshot(page, "tab-grounding")

    # a value with no crossing says so
    no_cross = [v for v, cv in cs[factor].items() if not -1 < cv < 0]
    if no_cross:
        page.click("#gd-value input")
        page.click(f"[role='option'][aria-label='{no_cross[0]}']")
        page.wait_for_function(
            "() => document.querySelector('#gd-alpha-star').innerText.trim() === 'no crossing'", timeout=60_000
        )

    # controls: the table appears only once they have run
    page.click("#gd-controls")
    page.wait_for_selector("#gd-controls-table:has-text('readout')", timeout=180_000)
    assert page.locator("#gd-controls-table").is_visible()


# --------------------------------------------------------------------------------------- the slider in the browser
def _slider_page(browser, payload):
    """A blank page with the slider script loaded and ``payload`` as ``window.P``."""
    from bindlab.ui.slider_js import payload_js

    page = browser.new_page()
    page.set_content("<html><body></body></html>")
    page.evaluate(f"() => {{ const handler = {payload_js('grounding')}; handler(null); }}")
    page.evaluate("(p) => { window.P = p; }", payload)
    return page


def test_browser_numbers_equal_the_servers_at_20_alphas(browser, tiny_grid):
    """Issue 31: AP per value, macro-mAP, top-1, the top-8 and the margin point, computed by the page's script from
    the payload, equal the server's slider_view (analysis.grounding) to 1e-6, for every value at 20 alphas."""
    import numpy as np

    from bindlab.analysis.grounding import pencil_scores
    from bindlab.studies import grounding as gs

    grid, model = tiny_grid
    session = gs.open_session(grid, model)
    for factor in ("hue", "pattern"):
        payload = gs.slider_payload(session, factor)
        page = _slider_page(browser, payload)
        try:
            for value in payload["values"]:
                for alpha in np.linspace(0, 8, 20).round(2):
                    js = page.evaluate("([a, v]) => window.bindlabSlider.readout(a, v, window.P)", [alpha, value])
                    view = gs.slider_view(session, factor, value, float(alpha))
                    v = view["value_index"]
                    np.testing.assert_allclose(
                        np.array(js["ap_grounded"], dtype=float),
                        view["ap_grounded"],
                        atol=1e-6,
                        equal_nan=True,
                        err_msg=f"{factor}={value} α={alpha}",
                    )
                    assert abs(js["map_grounded"] - view["map_grounded"]) <= 1e-6
                    assert abs(js["top1_grounded"] - view["top1_grounded"]) <= 1e-6
                    assert abs(js["top_precision"] - view["top_precision"]) <= 1e-6
                    curve = view["curve"]
                    assert abs(js["point"] - float(np.interp(alpha, curve["alphas"], curve["margin"]))) <= 1e-6
                    s = pencil_scores(session.state(factor).test, 1.0, float(alpha))[:, v]
                    assert js["top_rows"] == np.argsort(-s, kind="stable")[: gs.TOP_K].tolist()
        finally:
            page.close()


def test_browser_formats_numbers_as_python_does(browser, tiny_grid):
    """The summary's numbers read as the server writes them (f"{x:.3f}": exact ties go to the even digit)."""
    page = _slider_page(browser, None)
    try:
        cases = [
            (0.5625, 3),
            (0.125, 2),
            (-0.0625, 3),
            (1 / 3, 3),
            (0.6665, 3),
            (2.675, 2),
            (0.0, 2),
            (-0.00001, 3),
            (7.95, 2),
            (0.99951, 3),
        ]
        for x, d in cases:
            assert page.evaluate("([x, d]) => window.bindlabSlider.fmt(x, d)", [x, d]) == f"{x:.{d}f}", (x, d)
            assert page.evaluate("([x, d]) => window.bindlabSlider.fmt(x, d, true)", [x, d]) == f"{x:+.{d}f}", (x, d)
    finally:
        page.close()


def test_walkthrough_step5_summary_moves_in_the_page_as_the_server_writes_it(browser, tiny_grid):
    """Walkthrough step 5's slider: the numbers the page rewrites at a new α equal the server's line at that α."""
    import re

    from bindlab.studies import walkthrough as wt
    from bindlab.ui.walkthrough import grounding_md

    grid, model = tiny_grid
    payload = wt.grounding_payload(grid=grid, model=model)
    start = wt.step_grounding(alpha=0.0, grid=grid, model=model)
    page = _slider_page(browser, payload)
    try:
        page.set_content(f"<html><body>{grounding_md(start)}</body></html>")
        ids = (
            "wt-grounding-alpha",
            "wt-grounding-grounded",
            "wt-grounding-gain",
            "wt-grounding-map",
            "wt-grounding-margin",
        )
        for alpha in (0.35, 1.0, 2.5, 7.95):
            page.evaluate(
                "([a, v, p]) => window.bindlabSlider.move('walkthrough', a, v, p)", [alpha, start["value"], payload]
            )
            expected = grounding_md(wt.step_grounding(alpha=alpha, value=start["value"], grid=grid, model=model))
            for elem_id in ids:
                want = re.search(rf"id='{elem_id}'>([^<]*)<", expected).group(1)
                assert page.inner_text(f"#{elem_id}") == want, (alpha, elem_id)
    finally:
        page.close()
