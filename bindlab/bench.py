"""``python -m bindlab bench``: speed figures for the hot paths, as JSON.

- ``pipeline_overhead`` = wall time of the full ``eval mcq`` pipeline (read file, hash, cache lookups and writes,
  scoring) on a cold cache / wall time of the bare encoder forward on the same texts with the same batch size.
  Target <= 1.15.
- ``cache_speedup`` = cold pipeline / warm pipeline (everything served from the cache). Target >= 20.
- throughput of the encoders in items/s.

Each timed section runs in this process with the model already loaded, in a temporary ``BINDLAB_HOME`` so the
user's cache is never touched.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator


@contextmanager
def _temporary_home() -> Iterator[Path]:
    old = os.environ.get("BINDLAB_HOME")
    with tempfile.TemporaryDirectory(prefix="bindlab-bench-") as d:
        os.environ["BINDLAB_HOME"] = d
        try:
            yield Path(d)
        finally:
            if old is None:
                os.environ.pop("BINDLAB_HOME", None)
            else:
                os.environ["BINDLAB_HOME"] = old


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def bench_eval_pipeline(model: str = "minilm", per_size: int = 200, batch_size: int = 64) -> dict[str, Any]:
    """Pipeline overhead and cache speedup of ``eval mcq`` (text–text) on a generated benchmark."""
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.data.schema import load_mcqs
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.mcq import evaluate_mcq

    with _temporary_home() as home:
        questions = generate_saber(per_size=per_size, seed=0)
        path = write_benchmark(home / "saber", questions, {"seed": 0, "per_size": per_size})
        encoder = load_encoder(model, batch_size=batch_size)
        texts = [it.text for q in questions for it in (q.query, *q.candidates)]
        encoder.embed_texts(texts[:batch_size])  # load weights and warm up kernels outside the timings
        t_bare, _ = _timed(lambda: encoder.embed_texts(texts))

        def pipeline() -> Any:
            qs, _ = load_mcqs(path)
            return evaluate_mcq(qs, path.parent, encoder, ["tt"])

        t_cold, (res, _) = _timed(pipeline)
        t_warm = min(_timed(pipeline)[0] for _ in range(3))
    return {
        "model": encoder.id,
        "questions": len(questions),
        "texts": len(texts),
        "batch_size": batch_size,
        "bare_forward_s": round(t_bare, 3),
        "eval_cold_s": round(t_cold, 3),
        "eval_warm_s": round(t_warm, 4),
        "pipeline_overhead": round(t_cold / t_bare, 3),
        "cache_speedup": round(t_cold / t_warm, 1),
        "targets": {"pipeline_overhead": "<= 1.15", "cache_speedup": ">= 20"},
        "throughput_texts_per_s": round(len(texts) / t_bare, 1),
        "accuracy_tt": round(res["tt"]["accuracy"], 4),
    }


def bench_retrieval(per_size: int = 200) -> dict[str, Any]:
    """Retrieval scoring time (relevance + AP + recall) on bag-of-words embeddings of a full-size benchmark."""
    from bindlab.data.saber import generate_saber
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.retrieval import evaluate_retrieval

    with _temporary_home():
        questions = generate_saber(per_size=per_size, seed=0)
        enc = load_encoder("bow")
        evaluate_retrieval(questions, ".", enc)  # fill the cache
        t, _ = _timed(lambda: evaluate_retrieval(questions, ".", enc))
    return {"queries": len(questions), "gallery": 4 * len(questions), "warm_retrieval_eval_s": round(t, 3)}


# Each section is (name, function(quick, model) -> dict); features add theirs here.
SECTIONS: list[tuple[str, Callable[[bool, str], dict[str, Any]]]] = [
    ("eval_mcq_pipeline", lambda quick, model: bench_eval_pipeline(model=model, per_size=20 if quick else 200)),
    ("retrieval", lambda quick, model: bench_retrieval(per_size=20 if quick else 200)),
]


def run_bench(quick: bool = False, model: str = "minilm", only: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark sections (all, or those named in ``only``); ``quick`` uses smaller workloads."""
    import torch

    out: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(),
                    "torch_threads": torch.get_num_threads(), "cuda": torch.cuda.is_available()},
    }
    names = [n for n, _ in SECTIONS]
    unknown = sorted(set(only or []) - set(names))
    if unknown:
        raise ValueError(f"unknown bench section(s) {unknown}; choose from {names}")
    for name, fn in SECTIONS:
        if only and name not in only:
            continue
        out[name] = fn(quick, model)
    return out
