"""What a benchmark is: :class:`TaskMetadata`, :class:`TaskOptions`, :class:`Task`, and the registry of tasks.

The registry is filled from outside, as the encoders' backends are: each module of :mod:`bindlab.tasks` calls
:func:`register_task` at import, and :func:`list_tasks` / :func:`get_task` import every module of the package (and of
the folders named in ``$BINDLAB_TASK_PATH``) the first time they are asked. So adding a benchmark is one new module —
its metadata and its loader — and no edit elsewhere: Compare, the CLI (``bindlab tasks``), the API and the tabs ask
the registry.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import re
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bindlab.eval.metrics import bootstrap_ci, choice_chance
from bindlab.result import Result

MODALITIES = frozenset({"text", "image"})
TASK_PATH_ENV = "BINDLAB_TASK_PATH"  # extra folders of task modules, separated like PATH
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_FIRST = ("saber", "composet")  # the generated-data tasks are listed first (mcq, retrieval, pairs), then the rest


@dataclass(frozen=True)
class TaskMetadata:
    """What a task is, declared once (the ``bindlab tasks`` table and the checks of every face read it).

    Attributes:
        name: the registry name, e.g. ``"mcq"``, ``"winoground"`` (lower case, digits, ``_``).
        label: the short name a face shows, e.g. ``"SABER MCQ"``.
        description: one sentence on what it measures.
        modalities: the towers an encoder needs: a task runs on ``encoder`` when ``modalities <=
            encoder.modalities``.
        main_score: the key of the result's summary that a leaderboard sorts by (``Result.primary_metric``).
        data_kind: where its items come from: ``"saber"`` (an MCQ JSONL file), ``"composet"`` (a Pairs JSONL
            file), ``"published"`` (a published benchmark through its manifest), or a task's own kind.
        citation: the paper to cite.
        source: where the data comes from (a URL, or the bindlab generator that writes it).
        item_shape: ``(positives, negatives)`` of one item's headline decision: the item passes when every positive
            outscores every negative; its chance is :func:`bindlab.eval.metrics.choice_chance` of that shape (None:
            a ranking score with no chance level, e.g. mAP).
        chance_note: where an item's chance differs from the shape's (e.g. ties in small MCQs), in words.
        version: bumped when the contents of its result change (keys the cache of finished runs).
        license: the data's license, where known.
    """

    name: str
    label: str
    description: str
    modalities: frozenset[str]
    main_score: str
    data_kind: str
    citation: str = ""
    source: str = ""
    item_shape: tuple[int, int] | None = None
    chance_note: str = ""
    version: int = 1
    license: str = ""

    @property
    def chance(self) -> float | None:
        """The main score's chance level for an item of :attr:`item_shape` (None without one)."""
        return choice_chance(*self.item_shape) if self.item_shape else None

    def check(self) -> None:
        """Refuse metadata a face could not use, naming the field.

        Raises:
            ValueError: a bad name, modalities outside text/image or empty, an empty main score, label or data
                kind, or an item shape that is not two counts of at least one.
        """
        if not _NAME.fullmatch(self.name or ""):
            raise ValueError(f"task name {self.name!r}: use lower-case letters, digits and _ (at most 40)")
        if not self.modalities or not set(self.modalities) <= MODALITIES:
            raise ValueError(f"task {self.name}: modalities must be a non-empty subset of {sorted(MODALITIES)}")
        for key in ("label", "description", "main_score", "data_kind"):
            if not str(getattr(self, key) or "").strip():
                raise ValueError(f"task {self.name}: metadata {key} is empty")
        if self.item_shape is not None:
            choice_chance(*self.item_shape)  # at least one positive and one negative


@dataclass
class TaskOptions:
    """How a task is run (the same fields whatever the task; each uses those that apply to it).

    Attributes:
        pairings: MCQ / retrieval query->candidate modalities (``tt``, ``ti``, ``it``, ``ii``).
        verbosity: the caption level of 2x2 pairs (``short|medium|long|all``).
        limit: the first N items (per split for a published benchmark); 0 = all.
        seed: the bootstrap seed of the 95 % intervals.
        batch_size: recorded in the provenance (the encoder was built with it).
        skip_bad: skip malformed lines (said in the notes) instead of refusing the file.
        variant: a published benchmark's task (``itt`` or ``tot``); None = its default.
        split, images, source: a published benchmark's split(s), image folder and source (auto | local | hub).
    """

    pairings: list[str] = field(default_factory=lambda: ["tt"])
    verbosity: str = "all"
    limit: int = 0
    seed: int = 0
    batch_size: int | None = None
    skip_bad: bool = False
    variant: str | None = None
    split: str | None = None
    images: str | None = None
    source: str = "auto"


class Task:
    """A benchmark: its :attr:`metadata`, how to load its items and how to score an encoder on them.

    A subclass sets :attr:`metadata` (and :attr:`summary_type`, the TypedDict of its summary's keys) and implements
    :meth:`run`; the other methods have defaults that suit a task with one headline score.
    """

    metadata: TaskMetadata
    summary_type: type | None = None

    def run(
        self, encoder: Any, data: str | Path | None, options: TaskOptions | None = None, progress: Any = None
    ) -> Result:
        """Score ``encoder`` on the task's items read from ``data`` (None = the task's own default, where it has
        one) and return a :class:`~bindlab.result.Result` whose ``primary_metric`` is ``metadata.main_score``."""
        raise NotImplementedError

    def unable(self, encoder: Any, options: TaskOptions) -> str:
        """Why ``encoder`` cannot be scored on this task ("" when it can): the towers it lacks."""
        lacking = sorted(set(self.metadata.modalities) - set(encoder.modalities))
        return f"needs an {' and '.join(lacking)} tower" if lacking else ""

    def options_for(self, encoder: Any, options: TaskOptions) -> TaskOptions:
        """The options this encoder is run with (e.g. only the pairings it can embed)."""
        return options

    def cache_settings(self, spec: str, options: TaskOptions) -> dict[str, Any]:
        """The settings that key a finished run in Compare's cache (with the model, the data and the version)."""
        return {"task": spec, "limit": options.limit, "seed": options.seed}

    def scores(self, result: Result, seed: int = 0) -> list[dict[str, Any]]:
        """The leaderboard columns of one result: ``[{column, value, ci95: [lo, hi] or None, n, chance}]``."""
        s = result.summary
        ci = s.get(f"{self.metadata.main_score}_ci95") or s.get("ci95")
        if ci is None and result.rows and all(isinstance(r.get("pass"), bool) for r in result.rows):
            import numpy as np

            ci = bootstrap_ci(np.array([r["pass"] for r in result.rows], dtype=np.float64), seed=seed)
        return [
            {
                "column": f"{self.metadata.label} ({self.metadata.main_score})",
                "value": result.primary,
                "ci95": ci,
                "n": s.get("n"),
                "chance": s.get("chance", self.metadata.chance),
            }
        ]

    def __repr__(self) -> str:
        return f"<Task {self.metadata.name}: {self.metadata.label}>"


# --- the registry ---------------------------------------------------------------------------------------------------
_TASKS: dict[str, Task] = {}
_LOCK = threading.RLock()
_LOADED: set[str] = set()  # modules and files imported for their tasks


def register_task(task: Task) -> Task:
    """Add ``task`` to the registry (at import of its module); returns it.

    Raises:
        ValueError: bad metadata (:meth:`TaskMetadata.check`), or a name another task already has.
    """
    task.metadata.check()
    with _LOCK:
        old = _TASKS.get(task.metadata.name)
        if old is not None and type(old).__qualname__ != type(task).__qualname__:
            raise ValueError(f"task {task.metadata.name!r} is registered twice ({old!r} and {task!r}): rename one")
        _TASKS[task.metadata.name] = task
    return task


def _import_builtins() -> None:
    names = [m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if not m.name.startswith("_")]
    for name in sorted(names, key=lambda n: (n not in _FIRST, _FIRST.index(n) if n in _FIRST else 0, n)):
        module = f"bindlab.tasks.{name}"
        if module not in _LOADED:
            importlib.import_module(module)
            _LOADED.add(module)


def _import_extra() -> None:
    """The modules of the folders in ``$BINDLAB_TASK_PATH`` (each ``*.py`` once per process)."""
    for folder in filter(None, os.environ.get(TASK_PATH_ENV, "").split(os.pathsep)):
        for path in sorted(Path(folder).glob("*.py")):
            key = str(path.resolve())
            if key in _LOADED or path.name.startswith("_"):
                continue
            spec = importlib.util.spec_from_file_location(f"bindlab_task_{path.stem}", path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            _LOADED.add(key)
            spec.loader.exec_module(module)


def _discover() -> None:
    with _LOCK:
        _import_builtins()
        _import_extra()


def list_tasks() -> list[Task]:
    """Every registered task: SABER MCQ, retrieval, 2x2 pairs, one per published benchmark, then any added."""
    _discover()
    return list(_TASKS.values())


def get_task(name: str) -> Task:
    """The task registered as ``name``.

    Raises:
        ValueError: no such task, listing the names there are.
    """
    _discover()
    task = _TASKS.get(str(name).strip())
    if task is None:
        raise ValueError(f"unknown task {name!r}; choose from {', '.join(_TASKS)} (python -m bindlab tasks)")
    return task


def with_options(options: TaskOptions | None, **changes: Any) -> TaskOptions:
    """``options`` (default ones when None) with ``changes``."""
    return replace(options or TaskOptions(), **changes)
