"""A faster ``import gradio``: skip two things Gradio does on import that this app never uses.

Measured on this project's 2-core machine (2026-12-01, load 1.2): ``python -c "import gradio"`` took 7.6 s, most of
the app's start-up.

- **Stub rewriting (about 2 s).** Gradio 6's component metaclass calls
  ``gradio.component_meta.create_or_modify_pyi`` for every component class it defines: it re-reads the class's
  source, parses it with ``ast`` and rewrites the ``.pyi`` stub next to it. The stubs ship with the wheel; type
  checkers read those, and nothing at run time does. Here the function becomes a no-op as soon as
  ``gradio.component_meta`` is loaded, before Gradio defines its components.
- **IPython (about 0.5 s).** Gradio imports IPython to look for a notebook: ``gradio.ipython_ext`` for the
  ``%%blocks`` magic on import, ``gradio.utils.colab_check``/``ipython_check`` while building and launching a page.
  When IPython is not already loaded, the process is not a notebook, so there is nothing to find: that module loads
  without IPython (it catches the ImportError, as where IPython is not installed) and both checks answer False
  without importing it. In a notebook IPython is already loaded and all of this works as before.

:func:`fast_gradio_import` sets this up; ``bindlab.ui`` calls it on import, so anything that imports a tab (the app,
the tests, ``bindlab.speed.bench``) gets the faster import. It changes nothing else in Gradio, and does nothing for a module
that has already been loaded or no longer has what it patches.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


def _no_stub(*args: Any, **kwargs: Any) -> None:
    """Stands in for Gradio's stub writer: the stubs in the installed package stay as shipped."""


def _skip_stubs(module: ModuleType) -> None:
    if hasattr(module, "create_or_modify_pyi"):
        module.create_or_modify_pyi = _no_stub


def _without_ipython(run: Callable[[ModuleType], None], module: ModuleType) -> None:
    if "IPython" in sys.modules:  # a notebook: keep the magic
        run(module)
        return
    sys.modules["IPython"] = None  # type: ignore[assignment]  # ``import IPython`` raises ImportError
    try:
        run(module)
    finally:
        if sys.modules.get("IPython", 0) is None:
            del sys.modules["IPython"]


def _only_in_a_notebook(check: Callable[[], bool]) -> Callable[[], bool]:
    @functools.wraps(check)
    def checked() -> bool:
        return "IPython" in sys.modules and check()

    return checked


def _notebook_checks(module: ModuleType) -> None:
    for name in ("colab_check", "ipython_check"):
        if callable(getattr(module, name, None)):
            setattr(module, name, _only_in_a_notebook(getattr(module, name)))


def _run_then(after: Callable[[ModuleType], None]) -> Callable[[Callable[[ModuleType], None], ModuleType], None]:
    def wrap(run: Callable[[ModuleType], None], module: ModuleType) -> None:
        run(module)
        after(module)

    return wrap


# module name -> how to run its code: wrap(the loader's exec_module, the module)
WRAPS: dict[str, Callable[[Callable[[ModuleType], None], ModuleType], None]] = {
    "gradio.component_meta": _run_then(_skip_stubs),
    "gradio.ipython_ext": _without_ipython,
    "gradio.utils": _run_then(_notebook_checks),
}


class _WrapOnLoad(importlib.abc.MetaPathFinder):
    """Finds the modules in :data:`WRAPS` as Python would, and runs each one's code through its wrapper."""

    def __init__(self) -> None:
        self.pending = set(WRAPS)

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name not in self.pending:
            return None
        self.pending.discard(name)
        if not self.pending:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run, wrap = loader.exec_module, WRAPS[name]
        loader.exec_module = lambda module: wrap(run, module)
        return spec


def fast_gradio_import() -> None:
    """Set up the faster import (see the module's text). When ``gradio.component_meta`` is already loaded, its stub
    writer is switched off at once (components defined from now on skip it). Calling it again changes nothing."""
    if "gradio.component_meta" in sys.modules:
        _skip_stubs(sys.modules["gradio.component_meta"])
    if "gradio" in sys.modules or any(isinstance(f, _WrapOnLoad) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _WrapOnLoad())
