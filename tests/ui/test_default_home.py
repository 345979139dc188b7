"""The app as a first-time user starts it: ``HOME`` a fresh folder outside /tmp and the checkout, nothing set, so
``$BINDLAB_HOME`` is the default ``~/.cache/bindlab``. Every feature that shows an image must show it (Gradio sends
files from its temp folder on its own, so a home under /tmp once hid that the app allowed none of its own folders),
with no error toast and no server traceback — through the API as a script would, and in Chromium as a person would.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import seed_embedding_cache
from tests.ui.conftest import ARTIFACTS, ROOT, fresh_user_home, no_error_toast, no_traceback, screenshot

pytestmark = pytest.mark.ui

LOG = ROOT / ".app-default-home-test.log"


@pytest.fixture(scope="module")
def user_app(default_scores_cached):
    """``python app.py`` with HOME = a fresh folder and BINDLAB_HOME unset: yields (url, the default home)."""
    from bindlab.speed.browser import running_app

    home = fresh_user_home()
    # the run's embedding cache (the default benchmark's MiniLM vectors): the page load reads them instead of spending
    # half a minute computing them again; everything else (the default data, its images) is made here from nothing
    seed_embedding_cache(Path(home) / ".cache" / "bindlab")
    env = {"HOME": home, "BINDLAB_HOME": "", "BINDLAB_TEST_OWN_HOME": ""}
    try:
        with running_app(env, timeout_s=float(os.environ.get("BINDLAB_TEST_APP_START_S", "120")), log=LOG) as (
            url,
            _,
            _,
        ):
            yield url, Path(home) / ".cache" / "bindlab"
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _images(value) -> list[str]:
    """The local files a gallery / image output came back as through gradio_client."""
    if isinstance(value, dict):
        value = value.get("value", value)
    items = value if isinstance(value, list) else [value]
    out = []
    for it in items:
        if isinstance(it, dict):
            it = it.get("image") or it.get("path") or it
            if isinstance(it, dict):
                it = it.get("path")
        if isinstance(it, str):
            out.append(it)
    return out


def test_browse_and_pairs_images_through_the_api(user_app):
    from gradio_client import Client
    from PIL import Image

    url, home = user_app
    client = Client(url, verbose=False)
    for pairing in ("ti", "ii"):
        outputs = client.predict("", "toy:clip", pairing, "all", "all", "all", 8, api_name="/browse_score")
        files = [f for o in outputs for f in _images(o) if str(f).endswith((".png", ".jpg", ".webp"))]
        assert files, (pairing, outputs)
        for f in files:
            with Image.open(f) as im:
                assert im.size[0] > 0
    assert (home / "default").is_dir()  # the images came from the default home, not a temp folder
    outputs = client.predict("", "toy:clip", "short", api_name="/pairs_score")
    files = [f for o in outputs for f in _images(o) if str(f).endswith((".png", ".jpg", ".webp"))]
    assert len(files) >= 2, outputs  # the first pair's base and foil images
    no_traceback(LOG)


def _loaded_images(page, selector: str) -> int:
    return page.eval_on_selector_all(
        f"{selector} img", "els => els.filter(e => e.complete && e.naturalWidth > 0).length"
    )


def test_a_first_time_user_sees_every_image(user_app, page):
    url, _ = user_app
    page.goto(url, timeout=120_000)
    page.wait_for_selector("#bl-question-html .bl-card", timeout=300_000)
    # Browse, image -> image: switching the pairing picks the image model and scores
    page.click("#bl-pairing [data-testid='ii-radio-label']")
    page.wait_for_function("() => document.querySelectorAll('#bl-images img').length >= 5", timeout=300_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('#bl-images img')].every(e => e.complete && e.naturalWidth > 0)",
        timeout=60_000,
    )
    no_error_toast(page)
    screenshot(page, "default-home-browse-ii")

    page.get_by_role("tab", name="Pairs").click()
    page.click("#bl-pairs-score-btn")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#bl-pairs-base-img img, #bl-pairs-foil-img img')]"
        ".filter(e => e.complete && e.naturalWidth > 0).length >= 2",
        timeout=300_000,
    )
    no_error_toast(page)
    screenshot(page, "default-home-pairs")

    page.click("button[role='tab']:has-text('Map')")
    page.click("#map-method [data-testid='PCA-radio-label']")
    page.click("#map-run")
    page.wait_for_selector("#map-plot .js-plotly-plot .scatterlayer .point", timeout=300_000)
    point = page.evaluate(
        "() => document.querySelector('#map-plot .js-plotly-plot').layout.meta.bindlab_map"
        ".points.find(p => p.modality === 'image').id"
    )
    page.fill("#map-point textarea, #map-point input", point)
    page.wait_for_selector("#map-thumb img", timeout=60_000)
    page.click("#map-open")
    qid = point.split("/")[0]
    page.wait_for_function(
        f"() => (document.querySelector('#bl-question-html') || {{}}).innerText?.includes({qid + ' ·'!r})",
        timeout=300_000,
    )
    page.wait_for_function(
        "() => [...document.querySelectorAll('#bl-images img')].filter(e => e.complete && "
        "e.naturalWidth > 0).length >= 5",
        timeout=120_000,
    )
    no_error_toast(page)
    screenshot(page, "default-home-map-open-in-browse")
    assert ARTIFACTS.exists()
    no_traceback(LOG)
