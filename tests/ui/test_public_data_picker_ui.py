"""Public mode in a real browser: the data dropdown (opaque choice values, never a server path) is drawn with its
label, a visitor picks an offered set or uploads a file through it, and Browse scores what was chosen; the page never
holds the server path of either."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import seed_embedding_cache
from tests.ui.conftest import pick_option, screenshot

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def public_url(tmp_path_factory, default_scores_cached):
    """``python app.py`` in public mode; its $BINDLAB_HOME holds one 4-question MCQ set from the start, and the run's
    embedding cache (its page load reads the embedded default's MiniLM vectors instead of computing them again)."""
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.speed.browser import running_app

    home = tmp_path_factory.mktemp("public-ui-home")
    write_benchmark(home / "sets" / "tiny", generate_saber(per_size=2, sizes=[2, 3], seed=0), {"seed": 0})
    seed_embedding_cache(home)
    env = {"BINDLAB_PUBLIC": "1", "BINDLAB_HOME": str(home), "BINDLAB_DATA_ROOTS": ""}
    start_s = float(os.environ.get("BINDLAB_TEST_APP_START_S", "180"))
    with running_app(env=env, timeout_s=start_s, log=ROOT / ".app-public-ui-test.log") as (url, _, _):
        yield url, home


def _summary_says(page, text: str) -> None:
    page.wait_for_function(f"() => document.querySelector('#bl-summary').innerText.includes({text!r})", timeout=180_000)


def test_a_visitor_scores_an_offered_set_and_an_upload_by_opaque_values(public_url, page, tmp_path):
    from bindlab.data.saber import generate_saber, write_benchmark

    url, home = public_url
    page.goto(url)
    page.wait_for_selector("#bl-question-html .bl-card", timeout=240_000)  # the page load scores the default
    assert page.locator("#bl-data").get_by_text("MCQ file").count() >= 1  # the dropdown is drawn with its label
    pick_option(page, "bl-data", f"{home.name}/sets/tiny/mcq.jsonl")
    pick_option(page, "bl-model", "bow")
    page.click("#bl-score-btn")
    _summary_says(page, "4 questions")
    assert str(home) not in page.content()
    # an upload becomes the chosen value (by its label on the page, an upload:<token> value underneath)
    src = write_benchmark(tmp_path / "up", generate_saber(per_size=1, sizes=[2, 3, 4], seed=3), {"seed": 3})
    page.set_input_files("#bl-data-upload input[type=file]", str(src))
    page.wait_for_function(
        "() => document.querySelector('#bl-data input').value.startsWith('uploaded: ')", timeout=120_000
    )
    page.click("#bl-score-btn")
    _summary_says(page, "3 questions")
    assert str(home) not in page.content() and os.path.realpath(home) not in page.content()
    screenshot(page, "public-data-picker")

    # an image set arrives as one .zip (its JSONL and its images) and shows with its images in an image pairing
    import zipfile

    from tests.cli_run import run

    run(
        "generate",
        "saber",
        "--out",
        tmp_path / "img",
        "--per-size",
        "1",
        "--sizes",
        "2-3",
        "--images",
        "--size",
        "32",
        "--workers",
        "1",
    )
    archive = tmp_path / "img-set.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for f in sorted((tmp_path / "img").rglob("*")):
            if f.is_file():
                zf.write(f, f"img-set/{f.relative_to(tmp_path / 'img').as_posix()}")
    page.set_input_files("#bl-data-upload input[type=file]", str(archive))
    page.wait_for_function(
        "() => document.querySelector('#bl-data input').value === 'uploaded: mcq.jsonl + 10 images'", timeout=120_000
    )
    pick_option(page, "bl-model", "toy:clip")
    page.click("#bl-pairing label:has-text('ti')")
    _summary_says(page, "pairing ti")
    page.wait_for_function(
        "() => { const imgs = document.querySelectorAll('#bl-images img');"
        " return imgs.length === 5 && Array.from(imgs).every(i => i.complete && i.naturalWidth > 0); }",
        timeout=60_000,
    )
    assert "2 questions" in page.inner_text("#bl-summary") and str(home) not in page.content()
