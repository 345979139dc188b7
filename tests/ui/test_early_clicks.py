"""A class that clicks before the app has warmed up does not take it down.

Two requests importing torch for the first time on two threads used to abort the server (SIGABRT, ``No module named
'torch._C._distributed_c10d'``) in 7 of 12 fresh servers on a busy machine. ``launch`` now imports the heavy
libraries before the server starts (bindlab/heavy.py); the rest are imported under one lock. The full check (20
fresh servers) is ``scripts/early_click_check.py``; here, one fresh server with two pages clicking at once.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bindlab import heavy
from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_launch_imports_torch_before_the_server_starts():
    """``launch`` has torch and every start-up library loaded by the time Gradio's server would take a request."""
    code = textwrap.dedent("""
        import json, sys
        import gradio as gr
        import bindlab.ui.app as app
        before = "torch" in sys.modules
        seen = {}
        def fake_launch(self, *args, **kwargs):  # stands in for the server: it records what is loaded when it starts
            seen.update({name: name in sys.modules for name in ("torch", "torch.distributed", "transformers",
                                                                 "torchvision", "accelerate")})
        gr.Blocks.launch = fake_launch
        app.launch(port=1)
        print(json.dumps({"before": before, "at_launch": seen}))
    """)
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPACES_ZERO_GPU": ""},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["before"] is False  # importing the app stays light
    assert out["at_launch"] == dict.fromkeys(
        ("torch", "torch.distributed", "transformers", "torchvision", "accelerate"), True
    )


def test_module_refuses_a_library_that_is_preloaded():
    with pytest.raises(ValueError, match="not one of the late-imported"):
        heavy.module("torch")
    assert heavy.module("umap.umap_").__name__ == "umap.umap_"


def test_every_late_library_is_imported_through_the_lock():
    """No module of bindlab imports open_clip, timm, peft, umap or sentence-transformers with a plain ``import``
    (a request thread would race another one); ``heavy.module`` takes the lock."""
    offenders = []
    for path in sorted((ROOT / "bindlab").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in heavy.LATE]
    # the speed bench times the libraries' own loops in a process of its own, never inside the server
    assert [o for o in offenders if not o.startswith("bindlab/speed")] == []


@pytest.mark.ui
def test_two_pages_clicking_at_once_on_a_fresh_server(browser):
    """Walkthrough steps 1-2 on one page, Browse/Grounding/Attention/Map on the other, all within about a second of
    the tabs showing: the server stays up and the first answers arrive with no error toast."""
    check = load_script("early_click_check")
    r = check.one_server(browser, 0, answer_timeout_s=300)
    assert r["alive"], r
    assert r["answers"] == [True, True], r
    assert r["error_toasts"] == [0, 0], r
