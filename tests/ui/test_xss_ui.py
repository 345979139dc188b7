"""Hostile input in a real browser (issue 32, item 1): an MCQ file whose ids, captions and bindings are script
payloads (in a folder named like a tag), a factor grid whose ``index.csv`` names a value with one, and typed encoder
ids that carry one: a model folder named like a tag (a tiny random CLIP), and an ``@<payload>`` revision on a
bundled model, which is refused with a message that quotes it. Browse, Grounding, Walkthrough steps 4 and 6, their messages and a downloaded HTML
figure must show every one of them as text: no payload may run (each would set ``window.__xss`` or open a dialog),
and the page shows the characters that were typed.

The app runs locally (not in public mode): there a person may type any encoder id, a model folder included, and
any data path; public mode refuses such ids before they reach a page (tests/ui/test_public_mode.py)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from tests.conftest import seed_embedding_cache
from tests.ui.conftest import download_export, screenshot, set_dropdown

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[2]


def xss(n: int) -> str:
    """A payload that marks ``window.__xss = n`` if it ever runs."""
    return f"<img src=x onerror=window.__xss={n}>"


OCTAL = "\\074img src=x onerror=window.__xss=11\\076"  # what re.sub's replacement string would turn into a tag
SET_NAME = "<svg onload=window.__xss=9>"  # a folder name
REVISION = f"toy:clip@{xss(2)}"  # bundled weights have one version: refused, and the message quotes it
MODEL_MARKS = (4, 6, 7, 8, 15)  # one tiny CLIP folder per place a model id is shown


def model_id(home: Path, n: int) -> str:
    """The encoder id of the tiny CLIP whose folder is named ``xss(n)``."""
    return f"hf:{(home / 'models' / xss(n)).resolve()}"


def _hostile_mcq(folder: Path) -> None:
    from bindlab.data.saber import generate_saber, write_benchmark

    path = write_benchmark(folder, generate_saber(per_size=1, sizes=[2, 3], seed=0), {"seed": 0})
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    payloads = [xss(1), '"><script>window.__xss=12</script>', "[click](javascript:window.__xss=13)"]
    for k, q in enumerate(rows):
        q["id"] = f"{xss(1)}-{k}" if k == 0 else f"{payloads[k % 3]}-{k}"
        q["query"]["text"] += f" and a {OCTAL} cube"
        q["query"]["bindings"].append([OCTAL, "cube"])
        for c in q["candidates"]:
            c["text"] += f" {xss(3)} ![x](javascript:window.__xss=14) and a {OCTAL} cube"
            c["bindings"].append([OCTAL, "cube"])
        q["n_objects"] = len(q["query"]["bindings"])
    path.write_text("".join(json.dumps(q) + "\n" for q in rows))


def _grids(sets: Path) -> None:
    """``sets/grid``: a 24-image grid; ``sets/grid-bad``: the same with a pattern value that is a payload."""
    from bindlab.data.factors import FactorGridSpec, generate_grid

    spec = FactorGridSpec(
        shapes=("cube", "sphere"),
        hues=("red", "blue"),
        patterns=("plain", "striped"),
        n_contexts=3,
        replicas=1,
        size=32,
    )
    generate_grid(sets / "grid", spec, workers=1)
    generate_grid(sets / "grid-bad", spec, workers=1)
    index = sets / "grid-bad" / "index.csv"
    rows = list(csv.DictReader(index.open()))
    for r in rows:
        r["pattern"] = xss(5) if r["pattern"] == "striped" else r["pattern"]
    with index.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


@pytest.fixture(scope="module")
def hostile_url(tmp_path_factory, default_scores_cached):
    """``python app.py`` (local mode, a fresh $BINDLAB_HOME holding the run's embedding cache, so the page load reads
    the embedded default's MiniLM vectors instead of computing them again) and a folder with the hostile MCQ file and
    two grids."""
    from bindlab.speed.browser import running_app

    home = tmp_path_factory.mktemp("xss-home")
    _hostile_mcq(home / "sets" / SET_NAME)
    _grids(home / "sets")
    seed_embedding_cache(home)
    from bindlab.encoders.tiny import build_tiny

    for n in MODEL_MARKS:
        build_tiny("hf-clip", home / "models" / xss(n))
    env = {"BINDLAB_PUBLIC": "0", "BINDLAB_HOME": str(home), "BINDLAB_DATA_ROOTS": ""}
    start_s = float(os.environ.get("BINDLAB_TEST_APP_START_S", "180"))
    with running_app(env=env, timeout_s=start_s, log=ROOT / ".app-xss-test.log") as (url, _, _):
        yield url, home


def _no_script_ran(page, dialogs: list[str]) -> None:
    assert page.evaluate("() => window.__xss") is None, "a payload ran"
    assert not dialogs, f"a payload opened a dialog: {dialogs}"


def _toast(page, text: str) -> str:
    """The text of the error toast that says ``text`` (it quotes the visitor's input), then close it."""
    toast = page.locator("[data-testid='toast-body']", has_text=text).first
    toast.wait_for(timeout=180_000)
    said = toast.inner_text()
    page.locator("[data-testid='toast-close']").first.click()
    return said


def test_hostile_data_and_ids_show_as_text_and_never_run(hostile_url, page, tmp_path):
    url, home = hostile_url
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    page.wait_for_selector("#bl-question-html .bl-card", timeout=240_000)  # the page load scores the default

    # Browse: the hostile file, a hostile model id, the question card, the table, model B beside it
    page.fill("#bl-data textarea, #bl-data input", str(home / "sets" / SET_NAME / "mcq.jsonl"))
    set_dropdown(page, "bl-model", REVISION)
    page.click("#bl-score-btn")
    assert xss(2) in _toast(page, "names weights on this machine")
    model = model_id(home, 15)
    set_dropdown(page, "bl-model", model)
    page.click("#bl-score-btn")
    page.wait_for_function(
        "() => document.querySelector('#bl-summary').innerText.includes('2 questions')", timeout=180_000
    )
    page.wait_for_function(
        f"() => document.querySelector('#bl-question-html').innerText.includes({OCTAL!r})", timeout=60_000
    )
    assert model in page.inner_text("#bl-summary")  # the typed characters, not an element
    card = page.inner_text("#bl-question-html")
    assert any(f"{p}-{k}" in card for k, p in enumerate([xss(1), '"><script>window.__xss=12</script>']))
    assert xss(3) in card and "![x](javascript:" in card
    assert page.locator(".bl-card img, .bl-card svg, .bl-card script, .bl-card a").count() == 0
    assert page.locator("#bl-question-html .bl-kept", has_text=OCTAL).count() >= 1  # highlighted as text
    assert xss(3) in page.inner_text("#bl-candidates")
    set_dropdown(page, "bl-compare-model", model_id(home, 4))
    page.wait_for_selector("#bl-compare .bl-side", timeout=180_000)
    assert model_id(home, 4) in page.inner_text("#bl-compare")
    _no_script_ran(page, dialogs)

    # Grounding: a grid whose index.csv names a value with a payload (its message quotes it), then a hostile model id
    page.get_by_role("tab", name="Grounding").click()
    page.fill("#gd-data textarea, #gd-data input", str(home / "sets" / "grid-bad"))
    set_dropdown(page, "gd-model", model_id(home, 6))
    page.get_by_label("pattern").check()
    page.click("#gd-load")
    assert xss(5) in _toast(page, "vocabulary")
    page.fill("#gd-data textarea, #gd-data input", str(home / "sets" / "grid"))
    page.click("#gd-load")
    page.wait_for_selector("#gd-summary-line", timeout=180_000)
    assert model_id(home, 6) in page.inner_text("#gd-summary-line")
    _no_script_ran(page, dialogs)

    # Walkthrough: a refused MODEL|PAIRING is quoted in the message; steps 4 and 6 name the typed model id
    page.get_by_role("tab", name="Walkthrough").click()
    set_dropdown(page, "wt-objects-model", f"{xss(10)}|zz")
    page.click("#wt-objects-run")
    assert f"{xss(10)}|zz" in _toast(page, "is not a model and pairing")
    set_dropdown(page, "wt-objects-model", model_id(home, 7) + "|tt")
    page.click("#wt-objects-run")
    page.wait_for_selector("#wt-objects-line", timeout=300_000)
    assert model_id(home, 7) in page.inner_text("#wt-objects-line")
    # one export: step 4's chart as standalone HTML, its title naming the hostile model id
    path, _ = download_export(page, "wt", "walkthrough_step4_accuracy_by_n.html", tmp_path)
    set_dropdown(page, "wt-attention-model", model_id(home, 8))
    page.click("#wt-attention-run")
    page.wait_for_selector("#wt-attention-line", timeout=300_000)
    assert model_id(home, 8) in page.inner_text("#wt-attention-line")
    page.wait_for_selector("#wt-attention-fig .js-plotly-plot", timeout=60_000)
    screenshot(page, "xss-walkthrough")
    _no_script_ran(page, dialogs)

    # the downloaded figure, opened on its own: the model id in its title is text there too
    page.goto(path.resolve().as_uri())
    page.wait_for_selector(".js-plotly-plot .gtitle", timeout=60_000)
    assert model_id(home, 7) in page.text_content(".js-plotly-plot .gtitle")
    assert page.locator("body img, body svg image").count() == 0
    _no_script_ran(page, dialogs)
