"""Test-wide settings: offline, CPU, and a private BINDLAB_HOME so tests never touch the user's cache."""

from __future__ import annotations

import os
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("BINDLAB_HOME", tempfile.mkdtemp(prefix="bindlab-test-home-"))
# Tests read data from pytest's tmp folders and the repo (fixtures): both are allowed data roots here.
os.environ.setdefault("BINDLAB_DATA_ROOTS", os.pathsep.join(
    [tempfile.gettempdir(), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


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
