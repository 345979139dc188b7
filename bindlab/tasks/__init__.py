"""Tasks: a benchmark as an object — what it measures, what it needs, how it is loaded and scored.

:class:`~bindlab.tasks.base.Task` (``metadata`` + ``run(encoder, data, options, progress) -> Result``) in a
registry: ``list_tasks()``, ``get_task(name)``. The built-ins are SABER MCQ (``mcq``), retrieval, CompoSET-style
2x2 pairs (``pairs``) and one task per published benchmark (``winoground``, ``colorswap``, ``sugarcrepe``,
``sugarcrepe_pp``, ``aro_vg_attribution``). Adding a benchmark is one module here (or in a folder named by
``$BINDLAB_TASK_PATH``) that calls :func:`register_task`; Compare, ``bindlab tasks``, the API and the tabs find it.

This layer sits below the studies: it scores with :mod:`bindlab.eval` and :mod:`bindlab.encoders` and returns a
:class:`bindlab.result.Result`.
"""

from __future__ import annotations

from bindlab.tasks.base import (
    TASK_PATH_ENV,
    Task,
    TaskMetadata,
    TaskOptions,
    get_task,
    list_tasks,
    register_task,
    with_options,
)

BENCHMARK_PREFIX = "benchmark:"  # Compare's suite spells a published benchmark benchmark:NAME[=PATH]


def parse_spec(spec: str) -> tuple[Task, str | None]:
    """A suite entry as ``(task, data path or None)``: a registered name (``mcq``, ``winoground``, ``NAME=PATH``)
    or ``benchmark:NAME[=PATH]`` (NAME a registered benchmark, or a manifest's name or path).

    Raises:
        ValueError: an unknown name, or ``benchmark:`` without a name.
    """
    text = str(spec).strip()
    bench = text.startswith(BENCHMARK_PREFIX)
    name, _, path = text.removeprefix(BENCHMARK_PREFIX).partition("=")
    name, path = name.strip(), (path.strip() or None)
    if not name:
        raise ValueError(f"task {spec!r} has no name")
    registered = {t.metadata.name: t for t in list_tasks()}
    if name in registered and (not bench or registered[name].metadata.data_kind == "published"):
        return registered[name], path
    if bench:
        from bindlab.tasks.published import for_manifest

        return for_manifest(name), path
    raise ValueError(f"unknown task {name!r}; choose from {', '.join(registered)}")


__all__ = [
    "BENCHMARK_PREFIX",
    "TASK_PATH_ENV",
    "Task",
    "TaskMetadata",
    "TaskOptions",
    "get_task",
    "list_tasks",
    "parse_spec",
    "register_task",
    "with_options",
]
