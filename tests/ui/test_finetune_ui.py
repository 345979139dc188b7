"""Finetune tab in a real browser: launch a tiny 2-step job, watch the polled progress reach done, see the curve."""

from __future__ import annotations

import contextlib
import time

import pytest

from tests.ui.conftest import screenshot, set_dropdown

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def tiny_job_inputs(tmp_path_factory):
    from bindlab.data.triplets import generate_triplets, write_triplets
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("ft-ui")
    model = build_tiny("st", root / "st")
    rows, stats = generate_triplets(80, seed=0)
    write_triplets(root / "trip", rows, stats)
    return model, str(root / "trip")


@pytest.fixture(scope="module")
def small_mcq(tmp_path_factory):
    """A few MCQs, so the compare step stays quick on a loaded 2-core machine."""
    from bindlab.data.saber import generate_saber, write_benchmark

    return str(
        write_benchmark(
            tmp_path_factory.mktemp("ft-ui-mcq"), generate_saber(per_size=2, sizes=range(2, 6)), {"per_size": 2}
        )
    )


def _fill(page, elem_id: str, value: str) -> None:
    box = page.locator(f"#{elem_id} input, #{elem_id} textarea").first
    box.fill(value)
    box.press("Tab")


# Gradio's progress bar with its words (gr.Progress's description) inside one of the given components, the words
# matching ``pattern``: the seconds from the call (just before a click) to its first appearance, recorded in the page.
WATCH_PROGRESS = """([ids, pattern]) => { window.__progressAt = null; const t0 = performance.now(); const re = new RegExp(pattern);
  const seen = () => ids.some(id => [...document.querySelectorAll(`#${id} .progress-level-inner`)].some(
    e => re.test(e.innerText)));
  const obs = new MutationObserver(() => { if (window.__progressAt === null && seen()) {
    window.__progressAt = (performance.now() - t0) / 1000; obs.disconnect(); } });
  obs.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true}); }"""

# Elements of a component that scroll sideways: their scroll width is over their visible width.
SIDEWAYS = """(id) => [...document.querySelectorAll(`#${id}, #${id} *`)].filter(e => {
  const o = getComputedStyle(e).overflowX; return (o === 'auto' || o === 'scroll') && e.scrollWidth > e.clientWidth + 1;
}).map(e => `${e.className || e.tagName}: ${e.scrollWidth} > ${e.clientWidth}`)"""


# Measured 0.2-0.3 s after the click on a 2-core machine at load 2, 2 s at load 15; without gr.Progress the words
# would only come with the result (a launch: when the job ends; a compare: tens of seconds).
PROGRESS_S = 3.0


def _progress_within(page, ids: list[str], seconds: float = PROGRESS_S) -> float:
    """Wait for :data:`WATCH_PROGRESS`'s record (set up before the click); assert it came within ``seconds``."""
    page.wait_for_function("() => window.__progressAt !== null", timeout=60_000)
    at = page.evaluate("() => window.__progressAt")
    assert at <= seconds, f"Gradio's progress showed in {ids} only {at:.2f} s after the click"
    return at


def _legend(page, elem_id: str) -> list[str]:
    return page.locator(f"#{elem_id} .legendtext").all_text_contents()


def test_launch_a_job_and_follow_it_to_done(app_url, page, tiny_job_inputs, small_mcq):
    model, data = tiny_job_inputs
    page.goto(app_url)
    page.get_by_role("tab", name="Finetune").click()
    _fill(page, "ft-model", model)
    _fill(page, "ft-data", data)
    _fill(page, "ft-max-steps", "2")
    _fill(page, "ft-batch", "4")
    page.evaluate(WATCH_PROGRESS, [["ft-message", "ft-follow"], "checking the settings|queued|job "])
    page.click("#ft-launch")
    _progress_within(page, ["ft-message", "ft-follow"])  # Gradio's progress with its words, at once
    page.wait_for_selector("#ft-message :text('Started job')", timeout=60_000)
    job_id = page.inner_text("#ft-message").split("job ")[1].split(";")[0].strip()
    assert f"lora:{job_id}" in page.inner_text("#ft-message")
    # the launch's own output lists the job and shows its status at once: no waiting for the timer (every 2 s)
    page.wait_for_function(
        "(id) => document.querySelector('#ft-jobs').innerText.includes(id) && "
        "document.querySelector('#ft-status').innerText.includes(id)",
        arg=job_id,
        timeout=1_500,
    )
    assert "No jobs yet" not in page.inner_text("#ft-status")
    # then Gradio's progress bar follows the job (its words name it), and says how it ended
    page.wait_for_function(
        "(id) => document.querySelector('#ft-follow').innerText.includes(id)", arg=job_id, timeout=60_000
    )

    # The timer polls the job; the page shows its state, then the progress bar at 100 % and the result table. The
    # state read is this job's (the tab may first show an earlier job of the run's home, already done).
    page.wait_for_function(
        "(job) => (document.querySelector('#ft-status') || {}).innerText?.includes(job) && "
        "(document.querySelector('#ft-state') || {}).innerText === 'done'",
        arg=job_id,
        timeout=300_000,
    )
    assert "step 2/2" in page.inner_text("#ft-progress")
    assert "100%" in page.inner_text("#ft-progress")
    status = page.inner_text("#ft-status")
    assert "LiNeS a =" in status and "unscaled" in status
    # the jobs table refreshes on the same tick as the status (a busy machine may draw it a moment later)
    page.wait_for_function(
        "(id) => document.querySelector('#ft-jobs').innerText.includes(id)", arg=job_id, timeout=60_000
    )
    page.wait_for_selector(f"#ft-follow :text('Job {job_id}: done')", timeout=60_000)
    screenshot(page, "finetune")

    # Compare: its progress shows at once, then the attention part shows one margin curve per model (base,
    # unscaled, LiNeS) and a row per model.
    _fill(page, "ft-mcq", small_mcq)
    page.evaluate(WATCH_PROGRESS, [["ft-compare-head"], "starting the comparison|part [0-9]"])
    page.click("#ft-compare-btn")
    _progress_within(page, ["ft-compare-head"])
    page.wait_for_selector("#ft-compare-attention-fig .gtitle:has-text('base vs finetuned')", timeout=300_000)
    legend = page.locator("#ft-compare-attention-fig .legendtext").all_text_contents()
    assert [t.split(" ")[0] for t in legend] == ["base", "unscaled", "LiNeS"]  # the job's a = 0.1, named so
    rows = page.inner_text("#ft-compare-attention")
    assert "unscaled" in rows and "LiNeS (a=0.1)" in rows and "[" in rows  # differences carry their 95 % interval

    # The separated report: every row says its format and whether it is in-format, each model with its 95 % CI.
    report = page.inner_text("#ft-report")
    for label in (
        "in-format",
        "out-of-template",
        "held-out construction",
        "control",
        "LiNeS (a=0.1) (95% CI)",
        "predicative template (held out of training)",
    ):
        assert label in report, label
    assert "not binding in general" in page.inner_text("#ft-report-note")
    assert "2–5 minutes" in page.inner_text("#ft-expect")  # the page says how long the default job takes

    # The accuracy-by-N chart draws only the picked models and pairings: base vs the job's model at first
    page.wait_for_function("() => document.querySelectorAll('#ft-compare-fig .legendtext').length > 0", timeout=30_000)
    assert _legend(page, "ft-compare-fig") == ["base", "LiNeS (a=0.1)"]
    page.locator("#ft-by-n-models label", has_text="unscaled").click()
    page.wait_for_function(
        "() => document.querySelectorAll('#ft-compare-fig .legendtext').length === 3", timeout=30_000
    )
    assert _legend(page, "ft-compare-fig") == ["base", "unscaled", "LiNeS (a=0.1)"]
    page.locator("#ft-by-n-models label", has_text="base").click()
    page.wait_for_function(
        "() => document.querySelectorAll('#ft-compare-fig .legendtext').length === 2", timeout=30_000
    )
    assert _legend(page, "ft-compare-fig") == ["unscaled", "LiNeS (a=0.1)"]

    # No table scrolls sideways at 1400 px: each fits its box
    for elem_id in (
        "ft-status",
        "ft-jobs",
        "ft-compare",
        "ft-compare-triplets",
        "ft-report",
        "ft-compare-attention",
    ):
        assert page.evaluate(SIDEWAYS, elem_id) == [], elem_id
    screenshot(page, "finetune-compare")


def test_the_tab_opens_on_the_running_job_and_its_status_follows_its_progress(app_url, page, tiny_job_inputs):
    """A job started outside the page (the CLI's local owner, visible to the local page) is selected when the tab
    opens, not "No job selected"; once it reports steps, its jobs-table message says the step, not "starting"."""
    from bindlab.jobs.manager import JobManager, read_json

    model, data = tiny_job_inputs
    m = JobManager()  # the app's jobs folder: the same BINDLAB_HOME
    # evaluate=False: no baseline evaluation before step 1 (what is checked here is the tab following a running job)
    job = m.submit(
        {
            "model": model,
            "data": data,
            "max_steps": 300,
            "epochs": 100,
            "batch_size": 4,
            "eval_rows": 8,
            "device": "cpu",
            "evaluate": False,
            "debug": {"sleep_per_step": 1.0},
        }
    )
    try:
        page.goto(app_url)
        page.get_by_role("tab", name="Finetune").click(timeout=180_000)
        page.wait_for_function(
            "() => { const i = document.querySelector('#ft-job input'); return i && i.value; }", timeout=120_000
        )
        assert "No job selected" not in page.inner_text("#ft-status")
        shown = page.input_value("#ft-job input")
        if shown != job:
            # the newest running job is selected: another xdist worker's test may have started one since (the
            # workers share the run's BINDLAB_HOME); then it must be running, and this test follows its own job
            assert m.show(shown)["status"]["state"] in ("running", "queued", "done"), shown
            set_dropdown(page, "ft-job", job)
            page.wait_for_function(
                "(job) => (document.querySelector('#ft-status') || {}).innerText?.includes(job)",
                arg=job,
                timeout=60_000,
            )
        assert job in page.inner_text("#ft-status")
        # the polled table: the job's row says its step once it has one (never "starting" at step k > 0); a loaded
        # machine may take minutes to start the job's process, so wait for its first step on disk first
        deadline = time.time() + 900
        while (read_json(m.job_dir(job) / "progress.json", {}) or {}).get("step", 0) < 1:
            assert time.time() < deadline, f"job {job} reported no step: {m.log_tail(job)}"
            time.sleep(1)
        page.wait_for_function(
            "(job) => { const t = document.querySelector('#ft-jobs');"
            " return t && /step [1-9][0-9]*\\/[0-9]+/.test(t.innerText); }",
            arg=job,
            timeout=120_000,
        )
        # cells wrap, so the table's text has one cell per line: the job's row is its id and the 4 cells after it
        lines = [x.strip() for x in page.inner_text("#ft-jobs").splitlines() if x.strip()]
        start = next(i for i, x in enumerate(lines) if x == job)
        row = " | ".join(lines[start : start + 5])
        assert "starting" not in row and "running" in row
    finally:
        with contextlib.suppress(ValueError):  # already finished
            m.cancel(job, grace_s=2)


def test_the_jobs_table_fits_at_1400_and_1280_with_many_jobs_and_a_long_name(app_url, page, tiny_job_inputs, tmp_path):
    """Many jobs (more than the table's 500 px show), one of a base model whose folder name is long and has no
    place to break (underscores): the jobs table still fits its box at 1400 and 1280 px, never scrolling sideways
    (with fixed column shares, that one name widened its column and the table past its box). One job runs slowly;
    the others wait in the queue behind it (one heavy job at a time) and cost no process; all are cancelled at the
    end."""
    import shutil

    from bindlab.jobs.manager import JobManager

    model, data = tiny_job_inputs
    kind, folder = model.split(":", 1)  # "st:<folder>"
    long_named = shutil.copytree(folder, tmp_path / "my_sentence_encoder_finetuned_on_the_lab_triplets_second_try")
    m = JobManager()  # the app's jobs folder: the same BINDLAB_HOME
    config = {
        "model": model,
        "data": data,
        "max_steps": 300,
        "epochs": 100,
        "batch_size": 4,
        "eval_rows": 8,
        "device": "cpu",
        "evaluate": False,
        "debug": {"sleep_per_step": 1.0},
    }
    jobs: list[str] = []
    try:
        jobs += [m.submit(config) for _ in range(15)]
        jobs.append(m.submit({**config, "model": f"{kind}:{long_named}"}))
        page.goto(app_url)
        page.get_by_role("tab", name="Finetune").click(timeout=180_000)
        page.wait_for_function(
            "(id) => (document.querySelector('#ft-jobs') || {}).innerText?.includes(id)", arg=jobs[-1], timeout=120_000
        )
        for width, height in ((1400, 1100), (1280, 800)):
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_timeout(1200)  # Gradio re-measures its tables at the new width
            tall = page.eval_on_selector("#ft-jobs .virtual-table-viewport", "e => e.scrollHeight > e.clientHeight + 1")
            assert tall, "the jobs table is not taller than its box: nothing was tested"
            assert page.evaluate(SIDEWAYS, "ft-jobs") == [], f"ft-jobs at {width} px"
    finally:
        for job in jobs:
            with contextlib.suppress(ValueError):  # already finished
                m.cancel(job, grace_s=2)


@pytest.fixture(scope="module")
def toy_world_inputs(tmp_path_factory):
    """A random tiny toy:shared model (2 layers) and renderable toy-world triplets."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber
    from bindlab.data.triplets import write_triplets
    from bindlab.encoders.toy.backend import build_random

    root = tmp_path_factory.mktemp("ft-ui-toy")
    rows = []
    for i, q in enumerate(generate_saber(per_size=8, sizes=(2, 3), seed=5, vocab=RENDER_VOCAB)):
        c = next(c for c in q.candidates if c.role == "attr_swap")
        rows.append(
            {
                "id": f"{q.id}-a",
                "construction": "pair_swap",
                "query": q.query.text,
                "positive": q.candidates[q.answer].text,
                "negative": c.text,
                "negative_kind": "attribute",
                "bindings": [list(b) for b in q.query.bindings],
                "split": "train" if i % 4 else "val",
            }
        )
    write_triplets(root / "trip", rows, {"n_rows": len(rows)})
    return build_random(root / "model", arch="shared", width=16, layers=2, heads=2), str(root / "trip")


def test_objective_controls_reach_the_job_config_and_a_refused_launch_clears_its_message(
    app_url, page, toy_world_inputs
):
    """The attention-loss weight, its layer band and the supervision radio go into the job's config; a launch the
    model refuses (a band outside its layers) shows why and clears the earlier "Started job" line; so does a launch
    with a missing data folder."""
    from bindlab.config import repo_root
    from bindlab.jobs.manager import JobManager, read_json

    model, data = toy_world_inputs
    page.goto(app_url)
    page.get_by_role("tab", name="Finetune").click(timeout=180_000)  # a loaded machine draws the page slowly
    hint = page.inner_text("#ft-objective-hint")
    assert "Attention loss" in hint and "Supervision" in hint and "minutes" in hint
    # SABER's transfer question: the button fills the base model box with toy:lit-minilm
    assert "transfer question" in page.inner_text("#ft-transfer-hint")
    page.click("#ft-use-lit")
    page.wait_for_function(
        "() => document.querySelector('#ft-model textarea, #ft-model input').value === 'toy:lit-minilm'", timeout=30_000
    )
    _fill(page, "ft-model", model)
    _fill(page, "ft-data", data)
    _fill(page, "ft-max-steps", "2")
    _fill(page, "ft-batch", "4")
    _fill(page, "ft-attention-loss", "0.5")
    _fill(page, "ft-attention-layers", "0-1")
    page.locator("#ft-supervision label:has-text('image')").click()
    page.click("#ft-launch")
    page.wait_for_selector("#ft-message :text('Started job')", timeout=120_000)
    job = page.inner_text("#ft-message").split("job ")[1].split(";")[0].strip()
    m = JobManager()
    try:
        config = read_json(m.job_dir(job) / "config.json", {})
        assert (config["attention_loss"], config["attention_layers"], config["supervision"]) == (0.5, "0-1", "image")
        _fill(page, "ft-attention-layers", "0-7")  # the tiny model has layers 0 and 1
        page.click("#ft-launch")
        page.wait_for_selector("text=has layers 0 to 1", timeout=60_000)
        page.wait_for_function(
            "() => !document.querySelector('#ft-message').innerText.includes('Started job')", timeout=30_000
        )
        # a missing folder inside the allowed data roots (a path outside them is refused before existence is
        # checked) is a message too
        _fill(page, "ft-data", str(repo_root() / "data" / "no-such-triplets"))
        page.click("#ft-launch")
        page.wait_for_selector("text=no triplets at", timeout=60_000)
    finally:
        with contextlib.suppress(ValueError):  # already finished
            m.cancel(job, grace_s=2)
