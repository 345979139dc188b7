"""Import one of ``scripts/*.py`` as a module, for tests of its functions (the scripts are not a package)."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from bindlab.config import repo_root


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py``, freshly executed as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, repo_root() / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
