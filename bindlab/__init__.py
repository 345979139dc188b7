"""bindlab: attribute–object binding in vision–language embeddings (see README.md; the Python API: docs/python.md).

``import bindlab`` is cheap: the API's functions (:mod:`bindlab.api`) load on first use, so the CLI and the app pay
nothing for them.
"""

from typing import Any

from bindlab.config import __version__

_API = (
    "Result",
    "adopt",
    "attention_margins",
    "compare",
    "evaluate_benchmark",
    "evaluate_mcq",
    "evaluate_pairs",
    "evaluate_retrieval",
    "export_dataset",
    "generate_factors",
    "generate_pairs",
    "generate_saber",
    "get_task",
    "ground",
    "list_tasks",
    "load_encoder",
    "load_result",
    "plot",
    "run_task",
    "wrap_open_clip",
    "wrap_transformers",
)
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        from bindlab import api

        return getattr(api, name)
    raise AttributeError(f"module 'bindlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
