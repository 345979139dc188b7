"""Browser-test fixtures: the real app in a subprocess, and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import pytest

from bindlab.speed.browser import CHROMIUM, CHROMIUM_ARGS  # Debian's Chromium and its flags

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def app_url():
    """Start ``python app.py`` on a free local port (output in .app-test.log); yield its URL; stop it afterwards."""
    from bindlab.speed.browser import running_app

    start_s = float(os.environ.get("BINDLAB_TEST_APP_START_S", "120"))  # raise it on a heavily loaded machine
    with running_app(timeout_s=start_s, log=ROOT / ".app-test.log") as (url, _, _):
        yield url


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(
            f"browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium); .ci/run installs it"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1100})
    pg = ctx.new_page()
    yield pg
    ctx.close()


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot under test-artifacts/ (kept for people to look at)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def set_dropdown(page, elem_id: str, value: str) -> None:
    """Type ``value`` into a Gradio dropdown that allows custom values (an encoder id, a file) and commit it."""
    page.fill(f"#{elem_id} input", value)
    page.keyboard.press("Enter")


def unknown_model(page, model_elem_id: str, run_selector: str) -> None:
    """Enter an encoder id no backend knows and run: the registry's message must show as a message."""
    set_dropdown(page, model_elem_id, "nope:model")
    page.click(run_selector)
    page.wait_for_selector("text=unknown encoder backend", timeout=60_000)


def unknown_model_then_bow(page, model_elem_id: str, run_selector: str) -> None:
    """:func:`unknown_model`, then switch to the bag-of-words baseline and run again (the caller checks that the tab
    answered)."""
    unknown_model(page, model_elem_id, run_selector)
    set_dropdown(page, model_elem_id, "bow")
    page.click(run_selector)


def pick_option(page, elem_id: str, label: str) -> None:
    """Open a Gradio dropdown and click the option whose label is ``label``."""
    page.click(f"#{elem_id} input")
    page.click(f"[role='option'][aria-label='{label}']")


def download_export(
    page, prefix: str, filename: str, folder: Path, images: bool = False, main: bool = False
) -> tuple[Path, set[str]]:
    """Use a tab's Download panel (element ids ``<prefix>-export…``): open it, leave PNG/SVG out unless ``images``
    (kaleido takes seconds per figure), untick *main files only* unless ``main`` (so: everything), prepare the files,
    download ``filename``.

    Every download also offers ``<view>_all.zip`` beside the single files (checked here; :func:`download_file` fetches
    it).

    Returns:
        the downloaded file's path under ``folder``, and the names of every file the panel offered.
    """
    page.click(f"#{prefix}-export button:has-text('Download')")  # open the accordion
    if not images:
        for fmt in ("png", "svg"):
            page.locator(f"#{prefix}-export-formats label", has_text=fmt).click()
    if not main:
        from bindlab.ui.exports import MAIN_LABEL

        page.locator(f"#{prefix}-export-formats label", has_text=MAIN_LABEL).click()
    page.click(f"#{prefix}-export-btn")
    link = page.locator(f"#{prefix}-export-files a[download='{filename}']")
    link.wait_for(timeout=180_000)
    assert "files ready" in page.inner_text(f"#{prefix}-export-note")
    names = set(page.eval_on_selector_all(f"#{prefix}-export-files td.filename", "els => els.map(e => e.ariaLabel)"))
    assert any(n.endswith("_all.zip") for n in names), f"no zip among the {prefix} panel's files: {sorted(names)}"
    return download_file(page, prefix, filename, folder), names


def download_file(page, prefix: str, filename: str, folder: Path) -> Path:
    """Click ``filename`` in a Download panel whose files are ready; returns where it was saved under ``folder``."""
    link = page.locator(f"#{prefix}-export-files a[download='{filename}']")
    with page.expect_download() as info:
        link.click()
    path = Path(folder) / info.value.suggested_filename
    info.value.save_as(path)
    return path


def zip_names(path: Path) -> set[str]:
    """The names of the files in a downloaded zip."""
    import zipfile

    with zipfile.ZipFile(path) as z:
        return set(z.namelist())


# --- the user's conditions: a fresh HOME outside /tmp and the checkout, nothing set ------------------------------------
def fresh_user_home() -> str:
    """A new folder standing in for a user's HOME: outside /tmp (Gradio serves its temp folder on its own, which once
    hid that the app allowed none of its own folders) and outside the checkout, as ``~/.cache/bindlab`` is."""
    base = next(d for d in ("/var/tmp", os.path.expanduser("~")) if os.access(d, os.W_OK))
    home = tempfile.mkdtemp(prefix="bindlab-user-", dir=base)
    real = Path(os.path.realpath(home))
    assert not real.is_relative_to(os.path.realpath(tempfile.gettempdir())) and not real.is_relative_to(ROOT)
    return home


def no_error_toast(page) -> None:
    """No error toast on the page (each quotes what went wrong)."""
    toasts = page.locator("[data-testid='toast-body']")
    assert toasts.count() == 0, toasts.all_inner_texts()


def no_traceback(log: Path) -> None:
    """The app's output has no traceback (an error a person would only have seen as a broken page)."""
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "InvalidPathError" not in text, text[-3000:]
