"""Early clicks on fresh servers: does the app survive a class that clicks before it has warmed up?

A classroom opens the app and clicks at once. Two requests that each import torch (or another heavy library) for
the first time, on two threads, used to abort the whole server (SIGABRT, ``No module named
'torch._C._distributed_c10d'``). This check starts ``python app.py`` afresh ``--servers`` times; for each, two pages
load at once and, as soon as the tabs show, click the first torch-using action of several tabs within about a second
(Walkthrough steps 1 and 2 on one page; Browse's Score, Grounding's Load, Attention's margins and Map on the other).
A server passes when it is still answering afterwards and the first answers (Walkthrough step 1, Browse's summary)
arrive with no error toast.

Run: ``python scripts/early_click_check.py`` (20 servers, about 10-15 min on a quiet 2-core machine);
``--servers 3`` for a short one. Prints one line per server and a JSON summary; exits 1 when any server failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bindlab.speed.browser import CHROMIUM, CHROMIUM_ARGS, running_app  # noqa: E402

# (page, what it clicks): a tab's label to open first (None: stays on Browse) and the button to press there
CLICKS: list[list[tuple[str | None, str]]] = [
    [("Walkthrough", "#wt-bow-run"), ("Walkthrough", "#wt-text-run")],
    [(None, "#bl-score-btn"), ("Grounding", "#gd-load"), ("Attention", "#at-run"), ("Map", "#map-run")],
]
# what must arrive on each page: (selector, what it says when it is there)
ANSWERS: list[str] = ["#wt-bow-result", "#bl-summary"]
ERROR_TOAST = ".toast-body.error"


def alive(url: str) -> bool:
    """True while the server answers its page."""
    try:
        urllib.request.urlopen(url, timeout=10).read(64)
        return True
    except OSError:
        return False


def click_early(page, clicks: list[tuple[str | None, str]]) -> float:
    """As soon as the loading page shows its tabs, press every button of ``clicks``. Returns seconds from the tabs
    showing to the last click."""
    page.wait_for_selector("button[role='tab']", timeout=120_000)
    t0 = time.perf_counter()
    for tab, button in clicks:
        if tab:
            page.get_by_role("tab", name=tab).click()
        page.locator(button).first.click(timeout=10_000)
    return time.perf_counter() - t0


def answered(page, selector: str, timeout_s: float) -> bool:
    """True once ``selector`` holds some text (its answer), False after ``timeout_s``."""
    try:
        page.wait_for_function(
            "sel => { const el = document.querySelector(sel); return el && el.innerText.trim().length > 0; }",
            arg=selector,
            timeout=timeout_s * 1000,
        )
        return True
    except Exception:  # playwright's TimeoutError
        return False


def one_server(browser, index: int, answer_timeout_s: float) -> dict:
    """Start a fresh server, click early on two pages at once, report what happened."""
    with running_app(timeout_s=180) as (url, _, start_s):
        contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in CLICKS]
        pages = [c.new_page() for c in contexts]
        # both pages load together; their clicks then interleave as fast as the browser goes
        for p in pages:
            p.goto(url, wait_until="commit")
        click_s = [click_early(p, clicks) for p, clicks in zip(pages, CLICKS, strict=True)]
        got = [answered(p, sel, answer_timeout_s) for p, sel in zip(pages, ANSWERS, strict=True)]
        toasts = [p.locator(ERROR_TOAST).count() for p in pages]
        up = alive(url)
        for c in contexts:
            c.close()
    ok = up and all(got) and not any(toasts)
    return {
        "server": index,
        "ok": ok,
        "alive": up,
        "answers": got,
        "error_toasts": toasts,
        "start_s": round(start_s, 1),
        "click_s": [round(s, 2) for s in click_s],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=20, help="fresh servers to start, one after another (default 20)")
    ap.add_argument("--answer-timeout", type=float, default=240, help="seconds to wait for the first answers")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    results = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        for i in range(args.servers):
            r = one_server(browser, i, args.answer_timeout)
            results.append(r)
            print(json.dumps(r), flush=True)
        browser.close()
    failed = [r["server"] for r in results if not r["ok"]]
    print(json.dumps({"servers": len(results), "failed": len(failed), "failed_servers": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
