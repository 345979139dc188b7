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
