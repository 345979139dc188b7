"""The heavy libraries, imported once: at the app's start-up, or under one lock.

Two threads that import torch (or a library built on it) for the first time at the same moment can abort the whole
process: Python's import locks see a cycle between torch's submodules, hand one thread a half-initialised module,
and torch's C extension then fails (``No module named 'torch._C._distributed_c10d'``, SIGABRT). A server answers
requests on several threads, so in a classroom where everyone clicks as soon as the page shows, the first clicks
used to take the app down for everyone.

So:

- :func:`preload` imports :data:`STARTUP` — torch and what the bundled models and every tab's first action reach
  (torchvision, transformers and its BERT/CLIP/SigLIP models, accelerate, safetensors, scipy, scikit-learn) — on the
  calling thread. ``bindlab.ui.app.launch`` calls it before the server starts, so no request can race it. It costs
  a few seconds of start-up (see the README's Speed section) and is what the server would load on its first
  request anyway.
- :func:`module` imports a library of :data:`LATE` (open_clip, timm, peft, umap, sentence-transformers: seconds
  each, needed only by some models and the Map tab) under :data:`IMPORT_LOCK`, one thread at a time. Every import of
  these in bindlab goes through it (a test checks).

Importing ``bindlab`` or ``bindlab.ui.app`` imports none of this (a Space's start-up and the Python API stay light).
"""

from __future__ import annotations

import importlib
import threading
import time
import warnings
from types import ModuleType

# Imported at the app's start-up, in this order (a library's dependencies before it).
STARTUP: tuple[str, ...] = (
    "numpy",
    "PIL.Image",
    "scipy",
    "sklearn",
    "torch",
    "torch.distributed",  # the module the concurrent-import crash named; torch loads it lazily
    "safetensors.torch",
    "torchvision",
    "transformers",
    "transformers.models.auto.modeling_auto",  # transformers loads a model's module on first use of its class
    "transformers.models.bert.modeling_bert",  # minilm and every st: model
    "transformers.models.clip.modeling_clip",
    "transformers.models.siglip.modeling_siglip",
    "accelerate",
)
# Imported on first use, one thread at a time (see :func:`module`).
LATE: frozenset[str] = frozenset({"open_clip", "timm", "peft", "umap", "sentence_transformers"})

IMPORT_LOCK = threading.RLock()


def preload(names: tuple[str, ...] = STARTUP) -> dict[str, float]:
    """Import ``names`` on this thread (those not installed are skipped: an optional library stays optional).

    Returns:
        Seconds each import took, by name (0.0 for one already loaded; missing ones left out).
    """
    took: dict[str, float] = {}
    with IMPORT_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # libraries' import-time deprecation notes are not the user's business
        for name in names:
            t0 = time.perf_counter()
            try:
                importlib.import_module(name)
            except ImportError:
                continue
            took[name] = round(time.perf_counter() - t0, 3)
    return took


def module(name: str) -> ModuleType:
    """``import name`` under :data:`IMPORT_LOCK`: the first import of a library of :data:`LATE` runs on one
    thread while any other thread that asks for it (or another late library) waits, instead of racing it.

    Args:
        name: a module of :data:`LATE` or one of its submodules, e.g. ``"open_clip.pretrained"``.

    Raises:
        ValueError: ``name`` is not a late library (import the others normally: they are preloaded).
        ImportError: the library is not installed.
    """
    if name.split(".")[0] not in LATE:
        raise ValueError(f"{name!r} is not one of the late-imported libraries {sorted(LATE)}")
    with IMPORT_LOCK:
        return importlib.import_module(name)
