"""Test-wide settings: offline, CPU, and a private BINDLAB_HOME so tests never touch the user's cache."""

from __future__ import annotations

import os
import tempfile

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

import pytest  # noqa: E402


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
