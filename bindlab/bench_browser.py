"""Bench sections that drive the real app (``python app.py``) in headless Chromium, as a person would.

- ``startup``: seconds from ``python app.py`` to the server answering, and to the first tab drawn in the browser.
- ``walkthrough``: a teacher going through the Walkthrough tab from an empty ``BINDLAB_HOME`` (nothing cached, the
  image benchmark and factor grid rendered on first use): start step 7's finetune first, as the tab advises, click
  steps 1–6 in order, then wait for the before/after. Seconds per step and in total (target: under 15 minutes).

Chromium is Debian's (``/usr/bin/chromium``) driven by the ``playwright`` package; without them these sections say
so and measure what they can. The browser starts before the clock, like a person's browser that is already open.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
FIRST_TAB_SELECTOR = "#bl-score-btn"  # the Browse tab's Score button: the first tab is drawn once it is visible
WALKTHROUGH_TARGET_S = 15 * 60


@contextmanager
def _browser(given: Any = None) -> Iterator[Any]:
    """``given`` if set (a playwright ``Browser`` the caller owns: one process can run only one sync Playwright),
    else a headless Chromium started here, or None when Chromium or playwright is missing."""
    if given is not None:
        yield given
        return
    if not os.path.exists(CHROMIUM):
        yield None
        return
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        yield None
        return
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def running_app(env: dict[str, str] | None = None, timeout_s: float = 120, log: str | Path | None = None
                ) -> Iterator[tuple[str, float, float]]:
    """Start ``python app.py`` on a free local port; yield ``(url, start time, seconds until the server answered)``;
    stop it afterwards. The browser tests start their app through here too.

    Args:
        env: variables added to this process's environment (the port and host are set here).
        timeout_s: how long to wait for the first answer before giving up.
        log: file for the app's output (its tail is in the error when the app exits early); default: discarded.
    """
    from bindlab.config import repo_root

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", **(env or {}), "GRADIO_SERVER_PORT": str(port),
           "GRADIO_SERVER_NAME": "127.0.0.1"}
    url = f"http://127.0.0.1:{port}"
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below, after the process
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=repo_root(), env=env, stdout=out,
                            stderr=subprocess.STDOUT)
    try:
        while True:
            if proc.poll() is not None:
                tail = Path(log).read_text(errors="replace")[-2000:] if log else "(no log kept)"
                raise RuntimeError(f"app.py exited with {proc.returncode} before answering: {tail}")
            if time.perf_counter() - t0 > timeout_s:
                raise RuntimeError(f"app.py did not answer within {timeout_s:.0f} s")
            try:
                urllib.request.urlopen(url, timeout=2).read()
                break
            except OSError:
                time.sleep(0.1)
        yield url, t0, time.perf_counter() - t0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log:
            out.close()


def bench_startup(browser: Any = None) -> dict[str, Any]:
    """Seconds from ``python app.py`` to the server answering the page, and to the first tab being visible in a
    browser that asks for the page as soon as the server answers (target: within 10 s). ``browser``: a playwright
    ``Browser`` to use instead of starting one. ``load_average``: the machine's 1/5/15-minute load when the clock
    starts (on a 2-core machine, a figure taken above 2 measures the other work as much as the app)."""
    out: dict[str, Any] = {"target_s": 10, "load_average": [round(x, 2) for x in os.getloadavg()]}
    with _browser(browser) as browser:
        try:
            with running_app() as (url, t0, answered):
                out["seconds_to_page"] = round(answered, 2)
                if browser is None:
                    out["seconds_to_first_tab"] = None
                    out["note"] = f"first-tab time needs {CHROMIUM} and the playwright package"
                    return out
                page = browser.new_page()
                try:
                    page.goto(url)
                    page.wait_for_selector(FIRST_TAB_SELECTOR, state="visible", timeout=60_000)
                    out["seconds_to_first_tab"] = round(time.perf_counter() - t0, 2)
                finally:
                    page.close()
        except RuntimeError as e:
            out["error"] = str(e)
    return out


# (step key, button to press, element that holds the step's result once it is there)
WALKTHROUGH_CLICKS = [
    ("bow", "#wt-bow-run", "#wt-bow-acc"),
    ("text", "#wt-text-run", "#wt-text-acc"),
    ("images", "#wt-images-run", "#wt-images-best"),
    ("objects", "#wt-objects-run", "#wt-objects-small"),
    ("grounding", "#wt-grounding-run", "#wt-grounding-grounded"),
    ("attention", "#wt-attention-run", "#wt-attention-peak"),
]


def bench_walkthrough(quick: bool = False, step_timeout_s: float = 1200, browser: Any = None,
                      app_env: dict[str, str] | None = None) -> dict[str, Any]:
    """The whole Walkthrough tab clicked through in Chromium from an empty ``BINDLAB_HOME``.

    ``quick`` runs only steps 1 and 4 (no finetune): a check that the driver still works, not a timing.
    ``browser``: a playwright ``Browser`` to use instead of starting one. ``app_env``: extra environment for the app
    (e.g. ``{"OMP_NUM_THREADS": "1"}``).

    Returns:
        ``{"seconds": {step: seconds from its click to its result}, "finetune_job_s" (start click to state done),
        "before_after_s", "total_s" (first click to the last result), "target_s", "home"}``.
    """
    out: dict[str, Any] = {"target_s": WALKTHROUGH_TARGET_S, "home": "empty temporary BINDLAB_HOME"}
    clicks = [c for c in WALKTHROUGH_CLICKS if c[0] in ("bow", "objects")] if quick else WALKTHROUGH_CLICKS
    timeout_ms = step_timeout_s * 1000
    with _browser(browser) as browser, tempfile.TemporaryDirectory(prefix="bindlab-bench-wt-") as home:
        if browser is None:
            return {**out, "error": f"the walkthrough bench needs {CHROMIUM} and the playwright package"}
        with running_app({**(app_env or {}), "BINDLAB_HOME": home}) as (url, _, answered):
            out["seconds_to_page"] = round(answered, 2)
            ctx = browser.new_context(viewport={"width": 1400, "height": 1100})
            page = ctx.new_page()
            page.goto(url)
            page.get_by_role("tab", name="Walkthrough").click(timeout=120_000)
            page.wait_for_selector("#wt-bow-run", state="visible", timeout=60_000)
            start = time.perf_counter()
            if not quick:  # start the background finetune first, as the tab's introduction advises
                page.click("#wt-ft-run")
                page.wait_for_selector("#wt-ft-state", timeout=timeout_ms)
            seconds: dict[str, float] = {}
            for key, button, result in clicks:
                t = time.perf_counter()
                page.click(button)
                page.wait_for_selector(result, timeout=timeout_ms)
                seconds[key] = round(time.perf_counter() - t, 1)
            out["seconds"] = seconds
            if not quick:
                page.wait_for_function("() => { const s = document.querySelector('#wt-ft-state');"
                                       " return s && s.innerText === 'done'; }", timeout=timeout_ms)
                out["finetune_job_s"] = round(time.perf_counter() - start, 1)
                t = time.perf_counter()
                page.wait_for_selector("#wt-ft-drift", timeout=timeout_ms)  # the before/after follows by itself
                out["before_after_s"] = round(time.perf_counter() - t, 1)
            out["total_s"] = round(time.perf_counter() - start, 1)
            ctx.close()
    return out
