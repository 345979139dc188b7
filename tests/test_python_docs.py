"""docs/python.md: every ```python example runs, in order, in one session (as a reader pastes them), in a fresh
folder, and every public function of the API has its section. An example whose first line says ``# not run here``
(it needs hub weights or the Hub) is compiled, so its syntax and names still have to be right."""

from __future__ import annotations

import os
import re
import shutil
import warnings
from pathlib import Path

import pytest

import bindlab

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "python.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_every_public_function_has_a_section():
    text = DOC.read_text()
    for name in bindlab.__all__:
        if name not in ("__version__", "Result"):
            assert re.search(rf"^### .*`{name}\(", text, re.M), f"docs/python.md has no section for {name}"


def test_the_examples_run_in_order(tmp_path, monkeypatch, capsys, default_scores_cached):
    pytest.importorskip("datasets")
    bench = Path(os.environ["BINDLAB_HOME"]) / "benchmarks" / "sugarcrepe_pp"  # where the doc says its files are
    if not bench.is_dir():
        staging = bench.parent / f".staging-{os.getpid()}"
        shutil.copytree(ROOT / "tests" / "fixtures" / "sugarcrepe_pp", staging)
        try:
            staging.rename(bench)
        except OSError:  # another worker put it there first
            shutil.rmtree(staging)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    blocks = BLOCK.findall(DOC.read_text())
    assert len(blocks) >= 14
    ran = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i, code in enumerate(blocks):
            compiled = compile(code, f"docs/python.md block {i + 1}", "exec")
            if code.startswith("# not run here"):
                continue
            exec(compiled, namespace)  # noqa: S102 - the documentation's own examples
            ran += 1
    out = capsys.readouterr().out
    assert ran >= 12 and "py:word-order-64 py:word-order-64|probe:" in out
    assert not [w for w in caught if "now names another model object" in str(w.message)]  # the doc reuses `mine`
    same = namespace["same"]
    assert same[0] == same[1]  # the JSONL and its datasets folder give the same accuracy
