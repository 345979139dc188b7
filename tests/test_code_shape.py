"""The shape of the package's code, read with ``ast``: one name per class, and no new long functions.

A class name names one thing: two classes called ``CompareRequest`` in two studies made a reader (and an import)
guess which one was meant. A function over :data:`MAX_LINES` lines is hard to read on one screen; the ones that are
longer today are listed in :data:`LONG_FUNCTIONS` with their length, and the list may only shrink: a new long
function fails, a listed one that grew fails, and one that got short enough must leave the list.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "bindlab"
MAX_LINES = 100  # lines from ``def`` to the function's last line, docstring included

# "module path:function" -> its length today. Shrink it: split a function where the split names a real step.
LONG_FUNCTIONS: dict[str, int] = {
    "train/toy/train.py:train_toy": 114,
    "ui/finetune.py:build_tab": 189,
    "present/exports.py:walkthrough_export": 159,
    "ui/browse.py:build_tab": 151,
    "ui/embedding_map.py:build_tab": 129,
    "ui/pairs.py:build_tab": 124,
    "data/composet.py:candidate_edits": 124,
    "ui/attention.py:build_tab": 122,
    "train/finetune.py:train": 121,
    "train/toy/card.py:_lit_card_text": 117,
    "ui/grounding.py:build_tab": 113,
    "data/composet.py:generate_composet": 104,
}


def _trees() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(PACKAGE)): ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))
    }


def long_functions(limit: int = MAX_LINES) -> dict[str, int]:
    """``{"path:name": lines}`` of every function (methods and nested ones included) longer than ``limit`` lines."""
    out: dict[str, int] = {}
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    key = f"{path}:{node.name}"
                    out[key] = max(lines, out.get(key, 0))
    return out


def test_no_two_classes_share_a_name():
    where: dict[str, list[str]] = defaultdict(list)
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{path}:{node.lineno}")
    shared = {name: places for name, places in where.items() if len(places) > 1}
    assert not shared, f"classes with one name in several places (rename one so the name says which): {shared}"


def test_no_new_long_functions():
    found = long_functions()
    new = {k: v for k, v in found.items() if k not in LONG_FUNCTIONS}
    assert not new, f"functions over {MAX_LINES} lines (split them where a step has a name): {new}"
    grown = {k: (LONG_FUNCTIONS[k], v) for k, v in found.items() if k in LONG_FUNCTIONS and v > LONG_FUNCTIONS[k]}
    assert not grown, f"listed long functions that grew (allowed, now): {grown}"
    gone = sorted(set(LONG_FUNCTIONS) - set(found))
    assert not gone, f"now short enough or gone: take them off LONG_FUNCTIONS: {gone}"


def test_the_check_sees_a_long_function(tmp_path, monkeypatch):
    """The walker counts a function's lines from ``def`` to its last line, and sees nested functions."""
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def outer():\n    def inner():\n{body}\n    return 1\n", encoding="utf-8")
    monkeypatch.setitem(globals(), "PACKAGE", tmp_path)
    assert long_functions() == {"m.py:outer": MAX_LINES + 3, "m.py:inner": MAX_LINES + 1}
