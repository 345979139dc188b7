"""Fixtures for encoder tests: tiny random encoders (one per backend), built once per session, offline."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: loads real checkpoints from the hub or cache (deselected by default)")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (deselected by default)")


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.mktemp("tiny-encoders")


@pytest.fixture(scope="session")
def tiny_id(tiny_dir):
    """kind -> encoder id of the tiny model, built on first use and reused for the session."""
    from bindlab.encoders.tiny import build_tiny

    built: dict[str, str] = {}

    def get(kind: str) -> str:
        if kind not in built:
            built[kind] = build_tiny(kind, tiny_dir / kind)
        return built[kind]

    return get


@pytest.fixture(scope="session")
def tiny_encoder(tiny_id):
    """(kind, options) -> a loaded tiny encoder, loaded once per session per (kind, options)."""
    from bindlab.encoders.base import load_encoder

    loaded: dict[tuple, object] = {}

    def get(kind: str, **options):
        key = (kind, tuple(sorted(options.items())))
        if key not in loaded:
            loaded[key] = load_encoder(tiny_id(kind), device="cpu", **options)
        return loaded[key]

    return get
