"""The import layering of the package: no cycles, and dependencies only run downward.

Every ``import`` is read from the source with ``ast`` — function-level imports included, since a lazy import is still
a dependency — so a cycle cannot hide behind ``def f(): from x import y``. The layer picture (docs/architecture.md, "Layers"):

    ui, cli, api  ->  studies  ->  tasks  ->  {eval, analysis, train, jobs}  ->  {encoders, data}  ->  config
    present/ (pure figures and the export writer) is used by the faces only: ui, cli and api.
    tasks/ (one Task per benchmark, in a registry) is asked by Compare, the CLI and the API; it scores with eval/ and
    encoders/ and returns a result (bindlab/result.py: plain data that imports nothing of bindlab).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "bindlab"

# What each layer may import besides itself. A layer is the first name under ``bindlab`` (a sub-package or a
# top-level module); "bindlab" itself is the package's __init__.
BASE = {"bindlab", "config", "heavy"}  # heavy: the one lock for importing heavy libraries
ALLOWED: dict[str, set[str]] = {
    "bindlab": {"config", "api"},  # the package's __init__: its version from config, the API's names from api
    "config": set(),
    "heavy": set(),
    "data": BASE,
    "encoders": BASE | {"data"},
    "provenance": BASE | {"data"},
    "result": BASE,  # the one result shape: plain data, saved and loaded as JSON
    "eval": BASE | {"data", "encoders"},
    "analysis": BASE | {"data", "encoders", "eval"},
    "train": BASE | {"data", "encoders", "eval", "analysis", "provenance"},
    "jobs": BASE | {"data", "encoders", "train", "provenance"},
    # a benchmark as an object: metadata, loader and scoring (eval/), returning a result; below the studies
    "tasks": BASE | {"data", "encoders", "eval", "analysis", "provenance", "result"},
    "studies": BASE | {"data", "encoders", "eval", "analysis", "train", "jobs", "provenance", "result", "tasks"},
    "present": BASE | {"data", "encoders", "eval", "analysis", "train", "provenance", "result", "studies"},
    # the faces: a tab calls studies and present only; a command may also call the generators (data) and list
    # encoders, which are not features with a study of their own
    "ui": BASE | {"studies", "present"},
    "cli": BASE | {"data", "encoders", "result", "tasks", "studies", "present", "speed"},
    # the Python API, a third face: it calls studies, adopts model objects and reads datasets folders itself, and
    # draws a result's figures (bindlab.plot) with present/ as the other faces do
    "api": BASE | {"data", "encoders", "result", "tasks", "studies", "present"},
    "__main__": BASE | {"cli"},
    # the speed benchmarks (python -m bindlab bench) measure every layer; the browser bench drives the app (tests/ui
    # uses it too) and vs_library runs bindlab's loops beside the libraries' own; nothing else imports them but the CLI
    "speed": BASE
    | {"data", "encoders", "eval", "analysis", "train", "jobs", "provenance", "result", "tasks", "studies", "present"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(bindlab module, line) for every import in the file, at any depth; ``from a import b`` counts as ``a.b``
    when that is a module, else as ``a``."""
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                yield (full if full in known else target), node.lineno


def graph() -> dict[str, dict[str, int]]:
    mods = modules()
    known = set(mods)
    edges: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        deps: dict[str, int] = {}
        for target, line in imported(name, path, known):
            if target.startswith("bindlab") and target != name:
                # `import bindlab.x.y` or a name from a package: attribute it to the deepest known module
                while target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in known and target != name:
                    deps.setdefault(target, line)
        edges[name] = deps
    return edges


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "bindlab"


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_every_layer_is_listed():
    unknown = sorted({layer(m) for m in modules()} - set(ALLOWED))
    assert not unknown, f"new top-level modules/packages {unknown}: add them to ALLOWED with what they may import"


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles (function-level imports count):\n" + "\n".join(" <-> ".join(c) for c in found)


def test_dependencies_run_downward():
    bad = []
    for mod, deps in graph().items():
        src = layer(mod)
        for dep, line in deps.items():
            dst = layer(dep)
            if dst != src and dst not in ALLOWED.get(src, set()):
                bad.append(f"{mod}:{line} imports {dep} ({src} may not import {dst})")
    assert not bad, "forbidden import directions:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "text, expect",
    [
        ("import bindlab.encoders.base\n", {"bindlab.encoders.base"}),
        ("def f():\n    from bindlab.eval import mcq\n", {"bindlab.eval.mcq"}),
        ("from bindlab.config import home\n", {"bindlab.config"}),
    ],
)
def test_imports_are_read_at_any_depth(tmp_path, text, expect):
    p = tmp_path / "m.py"
    p.write_text(text)
    known = {"bindlab.encoders.base", "bindlab.eval.mcq", "bindlab.config", "bindlab.eval"}
    assert {t for t, _ in imported("bindlab.x", p, known)} == expect


def test_cycle_finder_finds_a_planted_cycle():
    edges = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
    assert cycles(edges) == [["a", "b", "c"]]
