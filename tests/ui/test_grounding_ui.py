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
    spec = FactorGridSpec(shapes=("cube", "sphere", "torus"), hues=("red", "green", "blue", "yellow"),
                          patterns=("striped", "checkered", "glowing"), n_contexts=3, replicas=2, size=32)
    generate_grid(root / "grid", spec, workers=1)
    return str(root / "grid"), build_tiny("hf-clip", root / "tiny-clip")


def _text(page, sel: str) -> str:
    return page.inner_text(sel).strip()


def test_slider_moves_alpha_and_changes_ap(app_url, page, tiny_grid):
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
    page.wait_for_function("() => document.querySelector('#gd-alpha-shown').innerText.trim() !== '1.00'",
                           timeout=60_000)
    alpha = float(_text(page, "#gd-alpha-shown"))
    assert 5 <= alpha <= 7
    after = (_text(page, "#gd-map-grounded"), _text(page, "#gd-ap-value"))
    assert after != before  # grounded AP moved with alpha...
    assert _text(page, "#gd-map-native") == native  # ...the native query did not

    # "Select alpha on validation" sets the slider to the validation choice and the summary follows.
    page.click("#gd-select")
    page.wait_for_selector("#gd-chosen", timeout=60_000)
    chosen = _text(page, "#gd-chosen")
    page.wait_for_function(f"() => document.querySelector('#gd-alpha-shown').innerText.trim() === '{chosen}'",
                           timeout=60_000)
    screenshot(page, "grounding")


def test_text_only_encoder_shows_a_message(app_url, page, tiny_grid):
    grid, _ = tiny_grid
    page.goto(app_url)
    page.get_by_role("tab", name="Grounding").click()
    page.fill("#gd-data textarea, #gd-data input", grid)
    set_dropdown(page, "gd-model", "bow")
    page.click("#gd-load")
    page.wait_for_selector("text=/no image tower|not an image\\+text encoder/", timeout=60_000)


def _crossings(grid: str, model: str) -> dict[str, dict[str, float]]:
    """c = q . d of every value of every factor, computed in this process as the app does."""
    from bindlab.studies import grounding as gs

    session = gs.open_session(grid, model)
    return {f: dict(zip(session.state(f).values.tolist(), session.state(f).c.tolist(), strict=True))
            for f in ("shape", "hue", "pattern")}


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
    page.wait_for_function(f"() => document.querySelector('#gd-summary-line').innerText.includes('value {value}')",
                           timeout=60_000)
    assert _text(page, "#gd-alpha-star") == f"{-c:.2f}"
    page.wait_for_function("() => Array.from(document.querySelectorAll('#gd-margin .legendtext'))"
                           ".some(t => t.textContent.startsWith('α* ='))", timeout=60_000)
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
        page.wait_for_function("() => document.querySelector('#gd-alpha-star').innerText.trim() === 'no crossing'",
                               timeout=60_000)

    # controls: the table appears only once they have run
    page.click("#gd-controls")
    page.wait_for_selector("#gd-controls-table:has-text('readout')", timeout=180_000)
    assert page.locator("#gd-controls-table").is_visible()


def test_a_failed_load_clears_the_earlier_results(app_url, page, tiny_grid):
    grid, model = tiny_grid
    _load(page, app_url, grid, model, "hue")
    assert page.locator("#gd-gallery img").count() >= 8
    set_dropdown(page, "gd-model", "bow")
    page.click("#gd-load")
    page.wait_for_selector("text=/no image tower|not an image\\+text encoder/", timeout=60_000)
    page.wait_for_function("() => !document.querySelector('#gd-map-grounded')", timeout=30_000)
    assert page.locator("#gd-gallery img").count() == 0
    assert page.locator("#gd-margin .legendtext").count() == 0
