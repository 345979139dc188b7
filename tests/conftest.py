"""Test-wide settings: offline, CPU, and a private BINDLAB_HOME so tests never touch the user's cache."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

# The tests run where users run: BINDLAB_HOME outside the temp folder and outside the checkout, as the default
# ~/.cache/bindlab is (Gradio serves files from the temp folder on its own, so a home under /tmp hid a missing
# allowed path once). One home for the whole run, shared by the xdist workers (they inherit the environment).
_OWN_HOME = "BINDLAB_HOME" not in os.environ
if _OWN_HOME:
    _base = next((d for d in ("/var/tmp", os.path.expanduser("~/.cache")) if os.access(d, os.W_OK)), None)
    os.environ["BINDLAB_HOME"] = tempfile.mkdtemp(prefix="bindlab-test-home-", dir=_base)
    os.environ["BINDLAB_TEST_OWN_HOME"] = os.environ["BINDLAB_HOME"]
# No BINDLAB_DATA_ROOTS: locally every path is the user's own (tests of the roots set it, or public mode, themselves).
os.environ.pop("BINDLAB_DATA_ROOTS", None)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
_RUN_HOME = os.environ["BINDLAB_HOME"]  # the run's home, whatever a test later monkeypatches
# Artefacts built once per run (once_per_run) go under a folder named after the run: set once by the process that loads
# this file first (the xdist controller, or the one process) and inherited by the workers.
os.environ.setdefault("BINDLAB_TEST_RUN", f"{os.getpid()}-{uuid.uuid4().hex[:8]}")

import pytest  # noqa: E402

# Test modules that import gradio directly get the app's faster import too (no stub rewriting, no IPython probe:
# bindlab/ui/gradio_import.py), whichever of them the collection reaches first.
from bindlab.ui.gradio_import import fast_gradio_import  # noqa: E402

fast_gradio_import()


def pytest_configure(config):
    """Torch threads per process when xdist shares the cores among workers: ``cores // workers`` (1 on the 2-core
    machine with ``-n auto``), set before any test process imports torch and inherited by what they start (the app
    per worker, job processes, CLI subprocesses). Two torch threads per process with every core already busy turn
    each small op into a wait for the other thread: a tiny job's compare took 45 s with torch's default and 9 s with
    one thread on a loaded 2-core machine, the same finding as ``FinetuneConfig.threads`` and bench.py's scale runs.
    A single process (``-p no:xdist``, ``-n 0``) keeps torch's default; an OMP_NUM_THREADS set by the caller wins."""
    workers = getattr(config.option, "numprocesses", None) or int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if isinstance(workers, int) and workers > 1:
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))


def pytest_sessionfinish(session, exitstatus):
    """The run's own BINDLAB_HOME goes when the run ends (the controller's session, not an xdist worker's)."""
    import shutil

    own = os.environ.get("BINDLAB_TEST_OWN_HOME")
    if own and not hasattr(session.config, "workerinput") and os.environ.get("BINDLAB_HOME") == own:
        shutil.rmtree(own, ignore_errors=True)
    if not hasattr(session.config, "workerinput"):
        shutil.rmtree(run_shared_dir(), ignore_errors=True)


# --- built once per run ------------------------------------------------------------------------------------------------
def run_shared_dir() -> Path:
    """This run's folder of shared artefacts (in the temp folder, like every test's own data, so no data picker lists
    it); removed when the run ends."""
    return Path(tempfile.gettempdir()) / f"bindlab-test-run-{os.environ['BINDLAB_TEST_RUN']}"


def once_per_run(name: str, build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """``build(folder)``'s JSON-able result, built once per run and shared by every xdist worker (they share the run's
    BINDLAB_HOME): the first caller builds it under a file lock and stores it, later callers wait for the lock and read
    it. For artefacts tests only read (a finished job, cached vectors). A failed build stores nothing, so the next
    caller builds again (and fails in its own test)."""
    import fcntl
    import json

    shared = run_shared_dir()
    shared.mkdir(parents=True, exist_ok=True)
    done = shared / f"{name}.json"
    with open(shared / f"{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.exists():
                from unittest import mock

                with mock.patch.dict(os.environ, {"BINDLAB_HOME": _RUN_HOME}):  # built in the run's home
                    value = build(shared / name)
                part = done.with_suffix(".part")
                part.write_text(json.dumps(value))
                part.replace(done)
            return json.loads(done.read_text())
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def tiny_st_job() -> dict[str, str]:
    """A finished 2-step LoRA job of a tiny random text encoder (``build_tiny("st")``) on 120 plain triplets (seed 0):
    batch 4, 8 eval rows, lr 1e-2 (so the adapter is far from zero), LiNeS a = 0.5, in the run's ``$BINDLAB_HOME/jobs``
    where ``lora:<job>`` resolves. Trained once per run for every test that only reads a finished job.

    Returns:
        ``{"job": id, "model": the tiny encoder's id, "triplets": folder, "root": the jobs folder}``.
    """

    def build(folder: Path) -> dict[str, str]:
        from bindlab.data.triplets import generate_triplets, write_triplets
        from bindlab.encoders.tiny import build_tiny
        from bindlab.jobs.manager import JobManager

        model = build_tiny("st", folder / "st")
        rows, stats = generate_triplets(120, seed=0)
        write_triplets(folder / "trip", rows, stats)
        m = JobManager(Path(_RUN_HOME) / "jobs")
        job = m.submit(
            {
                "model": model,
                "data": str(folder / "trip"),
                "batch_size": 4,
                "eval_rows": 8,
                "device": "cpu",
                "max_steps": 2,
                "lr": 1e-2,
                "lines_a": 0.5,
            }
        )
        st = m.wait(job, timeout=900)  # one heavy job at a time in the run's home: it may queue behind another
        assert st["state"] == "done", m.log_tail(job)
        return {"job": job, "model": model, "triplets": str(folder / "trip"), "root": str(m.root)}

    return once_per_run("tiny-st-job", build)


@pytest.fixture(scope="session")
def tiny_st_holdout_jobs() -> dict[str, str]:
    """Two finished 2-step LoRA jobs of a tiny random text encoder on 400 triplets with a held-out template
    (predicative) and held-out words, so the separated report has its general rows: ``scaled`` at the default LiNeS a
    (0.1) and ``unscaled`` at a = 1; batch 4, 12 eval rows, lr 1e-2, in the run's ``$BINDLAB_HOME/jobs``. Trained once
    per run for the tests that only read them.

    Returns:
        ``{"scaled": id, "unscaled": id, "model": the tiny encoder's id, "triplets": folder, "root": the jobs folder}``.
    """

    def build(folder: Path) -> dict[str, str]:
        from bindlab.data.triplets import Variants, generate_triplets, write_triplets
        from bindlab.data.triplets.holdout import select_holdout
        from bindlab.encoders.tiny import build_tiny
        from bindlab.jobs.manager import JobManager

        variants = Variants(("attributive",), ("predicative",), select_holdout(0.2, 0))
        rows, stats = generate_triplets(400, seed=0, variants=variants)
        write_triplets(folder / "trip", rows, stats, variants.holdout)
        model = build_tiny("st", folder / "st")
        cfg = {
            "model": model,
            "data": str(folder / "trip"),
            "batch_size": 4,
            "eval_rows": 12,
            "device": "cpu",
            "max_steps": 2,
            "lr": 1e-2,
        }
        m = JobManager(Path(_RUN_HOME) / "jobs")
        jobs = {"scaled": m.submit(cfg), "unscaled": m.submit({**cfg, "lines_a": 1.0})}  # the default a, and a = 1
        for job in jobs.values():
            st = m.wait(job, timeout=900)  # one heavy job at a time: the second waits for the first
            assert st["state"] == "done", m.log_tail(job)
        return {**jobs, "model": model, "triplets": str(folder / "trip"), "root": str(m.root)}

    return once_per_run("tiny-st-holdout-jobs", build)


@pytest.fixture(scope="session")
def default_scores_cached() -> dict[str, Any]:
    """The embedded default benchmark scored by MiniLM once per run, so its vectors are in the run's embedding cache
    (``$BINDLAB_HOME/cache``): every app's page load scores it (Browse's first view), and an app whose cache holds the
    vectors reads them instead of embedding its 900 captions again — once per xdist worker's app before. The Browse
    tests still see the page-load scoring; it reads instead of computing."""

    def build(folder: Path) -> dict[str, Any]:
        from bindlab.studies import browse

        data, model = browse.resolve_inputs("", "minilm", "tt")  # what the page load scores
        return {"data": str(data), "questions": len(browse.scored_set(data, model, "tt").questions)}

    return once_per_run("default-scores", build)


def seed_embedding_cache(home: str | Path) -> None:
    """Copy the run's embedding cache (the default benchmark's MiniLM vectors among them: ask for
    :func:`default_scores_cached` first) into another ``home`` before an app starts there, so its page load reads the
    vectors instead of computing them."""
    import sqlite3
    from contextlib import closing

    target = Path(home) / "cache" / "embeddings.sqlite"
    target.parent.mkdir(parents=True, exist_ok=True)
    with (
        closing(sqlite3.connect(Path(_RUN_HOME) / "cache" / "embeddings.sqlite")) as src,
        closing(sqlite3.connect(target)) as dst,
    ):
        src.backup(dst)


@pytest.fixture(autouse=True)
def _default_scores_before_the_shared_app(request):
    """A browser test on the shared app (``app_url``) has the default benchmark's vectors cached before its page loads."""
    if "app_url" in request.fixturenames:
        request.getfixturevalue("default_scores_cached")


@pytest.fixture
def tmp_roots(monkeypatch):
    """Allowed data roots set explicitly, as a public deployment (or a careful local user) sets them: the temp folder
    (pytest's tmp_path), the tests' BINDLAB_HOME and the repo (its fixtures). Without it, local use reads any path."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    monkeypatch.setenv("BINDLAB_DATA_ROOTS", os.pathsep.join([tempfile.gettempdir(), os.environ["BINDLAB_HOME"], repo]))


@pytest.fixture(scope="session")
def minilm():
    """The real bundled MiniLM encoder, loaded once per test session."""
    from bindlab.encoders.base import load_encoder

    enc = load_encoder("minilm", device="cpu")
    enc.embed_texts(["warm up"])
    return enc


@pytest.fixture(scope="session")
def small_benchmark(tmp_path_factory):
    """A small generated SABER benchmark on disk: (path to mcq.jsonl, questions)."""
    from bindlab.data.saber import generate_saber, write_benchmark

    qs = generate_saber(per_size=6, sizes=range(2, 11), seed=3)
    path = write_benchmark(tmp_path_factory.mktemp("saber"), qs, {"seed": 3, "per_size": 6})
    return path, qs
