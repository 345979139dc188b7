"""``pip install "bindlab[notebook]"`` gives what the documentation's Python imports: every import of
docs/python.md's code blocks and of docs/notebook.py is the standard library, bindlab, a core dependency or a package
of the ``notebook`` extra — and the ``test`` extra (what CI installs) includes that extra."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
RUNS_THE_NOTEBOOK = {"jupytext", "nbclient", "ipykernel"}  # not imported by it, but what opens and runs it


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def name_of(requirement: str) -> str:
    """The distribution a requirement names, normalised (PEP 503): ``"open_clip_torch>=3.0"`` -> ``open-clip-torch``."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)
    return re.sub(r"[-_.]+", "-", name).lower()


def top_level_imports(source: str) -> set[str]:
    """The top-level module of every absolute import in ``source``, at any depth."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def documented_imports() -> set[str]:
    blocks = BLOCK.findall((ROOT / "docs" / "python.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 10  # the pattern still finds the examples
    return set().union(
        *(top_level_imports(b) for b in blocks),
        top_level_imports((ROOT / "docs" / "notebook.py").read_text(encoding="utf-8")),
    )


def test_the_documentation_imports_only_what_the_notebook_extra_installs():
    core = {name_of(r) for r in project()["dependencies"]}
    extra = {name_of(r) for r in project()["optional-dependencies"]["notebook"]}
    dists = md.packages_distributions()
    imports = documented_imports()
    assert {"bindlab", "numpy", "IPython", "datasets"} <= imports  # the parser sees the known imports
    missing = {}
    for module in sorted(imports - set(sys.stdlib_module_names) - {"bindlab"}):
        names = {name_of(d) for d in dists.get(module, [])}
        assert names, f"{module} (imported by the docs) is not installed here, so its distribution is unknown"
        if not names & (core | extra):
            missing[module] = sorted(names)
    assert not missing, (
        f"imported by docs/python.md or docs/notebook.py but in neither the core dependencies nor "
        f"the notebook extra of pyproject.toml: {missing}"
    )
    assert RUNS_THE_NOTEBOOK <= extra


def test_the_test_extra_includes_the_notebook_extra_and_it_is_installed():
    test = project()["optional-dependencies"]["test"]
    assert "bindlab[notebook]" in [r.replace(" ", "") for r in test]
    for requirement in project()["optional-dependencies"]["notebook"]:
        assert md.version(name_of(requirement)), requirement  # PackageNotFoundError when it is not


def test_the_import_reader_sees_nested_and_from_imports():
    src = "import a.b\nfrom c.d import e\ndef f():\n    import g\nfrom . import h\n"
    assert top_level_imports(src) == {"a", "c", "g"}
    assert name_of("open_clip_torch>=3.0") == "open-clip-torch" and name_of("bindlab[notebook]") == "bindlab"
