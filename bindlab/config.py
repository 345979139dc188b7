"""Process-wide settings: where bindlab keeps its files, which device to use, whether the hub is reachable."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__version__ = "0.1.0"


def home() -> Path:
    """``$BINDLAB_HOME`` (default ``~/.cache/bindlab``): embedding cache, jobs, generated default data.

    Raises:
        ValueError: when the path exists and is not a folder (or cannot be created).
    """
    p = Path(os.environ.get("BINDLAB_HOME") or Path.home() / ".cache" / "bindlab").expanduser()
    if p.exists() and not p.is_dir():
        raise ValueError(f"BINDLAB_HOME={p} is not a folder; point BINDLAB_HOME at a folder (or a new path)")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(
            f"BINDLAB_HOME={p} cannot be created ({e.strerror}); point BINDLAB_HOME at a writable folder"
        ) from None
    return p


def jobs_root() -> Path:
    """``$BINDLAB_HOME/jobs``: one folder per background job (a finetune job's model loads as ``lora:<job_id>``)."""
    return home() / "jobs"


def repo_root() -> Path:
    """The folder holding ``app.py`` in a checkout (one up from the package; in an installed package, site-packages)."""
    return Path(__file__).resolve().parent.parent


def package_root() -> Path:
    """The ``bindlab`` package folder: it carries the bundled models (``assets/``) and the benchmark manifests
    (``data_manifests/``) both in a checkout and in an installed package."""
    return Path(__file__).resolve().parent


def assets_root() -> Path:
    """``bindlab/assets``: the bundled toy models, one folder each, never written to by a command."""
    return package_root() / "assets"


@contextmanager
def temporary_home() -> Iterator[Path]:
    """``$BINDLAB_HOME`` pointed at a new temporary folder for the block (a benchmark's cold cache), then restored."""
    import tempfile

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


def uploads_root() -> Path:
    """``$BINDLAB_HOME/uploads``: one folder per browser session (the app's uploads, and what is unpacked from them)."""
    return home() / "uploads"


def manifests_root() -> Path:
    """``bindlab/data_manifests``: one JSON per known published benchmark."""
    return package_root() / "data_manifests"


def resolve_device(device: str = "auto") -> str:
    """``auto`` -> ``cuda`` if available, else ``mps``, else ``cpu``; explicit choices are checked.

    Raises:
        ValueError: for an unknown device string or one that is not available here.
    """
    import torch

    d = (device or "auto").strip().lower()
    if d == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if d == "cpu":
        return d
    if d == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ValueError("device 'mps': no Apple GPU (MPS) is available on this machine; use cpu or auto")
        return d
    if d == "cuda" or d.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r}: no CUDA GPU is visible on this machine; use cpu or auto")
        if ":" in d:
            idx = d.split(":", 1)[1]
            if not idx.isdigit() or int(idx) >= torch.cuda.device_count():
                raise ValueError(
                    f"device {device!r}: this machine has {torch.cuda.device_count()} CUDA devices, "
                    f"cuda:0 to cuda:{torch.cuda.device_count() - 1}; use one of them, or auto"
                )
        return d
    raise ValueError(f"unknown device {device!r}; choose auto, cpu, cuda, cuda:N or mps")


def hub_offline() -> bool:
    """True when the Hugging Face hub must not or cannot be used (env flags, or no route to it)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False") or os.environ.get(
        "TRANSFORMERS_OFFLINE", "0"
    ) not in ("", "0", "false", "False"):
        return True
    return not _hub_reachable()


@lru_cache(maxsize=1)
def _hub_reachable(timeout: float = 1.5) -> bool:
    try:
        with socket.create_connection(("huggingface.co", 443), timeout=timeout):
            return True
    except OSError:
        return False


# --- public mode, allowed data roots, limits ------------------------------------------------------------------------
_TRUE = ("1", "true", "yes", "on")


def public_mode() -> bool:
    """True on a public deployment: ``BINDLAB_PUBLIC=1``, or automatically on a Hugging Face Space (``SPACE_ID``).

    On a Space, ``BINDLAB_PUBLIC=0`` turns it off explicitly (a private Space); elsewhere it is off by default.
    """
    flag = os.environ.get("BINDLAB_PUBLIC", "").strip().lower()
    if flag in _TRUE:
        return True
    if flag in ("0", "false", "no", "off"):
        return False
    return bool(os.environ.get("SPACE_ID"))


def roots_enforced() -> bool:
    """True when user-given paths must lie inside :func:`data_roots`: in public mode, or when the person set
    ``$BINDLAB_DATA_ROOTS`` explicitly. On a person's own machine (the default) the CLI and the local app read and
    write any path the person gives: they could read the file anyway, and ``generate`` must not write where ``eval``
    then refuses to read."""
    return public_mode() or bool(os.environ.get("BINDLAB_DATA_ROOTS", "").strip())


# The folders under $BINDLAB_HOME that hold what the app shows or hands out: generated data and its images, uploads,
# downloads, rendered grids, published benchmarks' images. Not the embedding cache, the jobs or any loose file.
SERVED_HOME_DIRS = (
    "default",
    "data",
    "uploads",
    "exports",
    "factor-grid-default-v2",
    "factor-grid-signal",
    "hub_images",
    "crops",
    "toy-eval",
    "benchmarks",
)


def served_roots() -> tuple[Path, ...]:
    """The folders the app's web server may send files from (Gradio's ``allowed_paths``): :data:`SERVED_HOME_DIRS`
    under ``$BINDLAB_HOME`` (wherever the home is), the repo's ``data/``, the bundled ``assets/`` and, locally, the
    data roots. An image elsewhere (a person's own data folder, a set under a public root) is sent decoded instead
    (:func:`bindlab.ui.common.shown_image`).
    """
    h = home()
    roots = [*(h / d for d in SERVED_HOME_DIRS), repo_root() / "data", assets_root()]
    if not public_mode():
        roots += [r for r in data_roots() if r != Path(os.path.realpath(h))]
    seen: dict[str, Path] = {}
    for r in roots:
        seen.setdefault(os.path.realpath(r), Path(os.path.realpath(r)))
    return tuple(seen.values())


def private_home_paths() -> tuple[Path, ...]:
    """What under ``$BINDLAB_HOME`` the web server never sends (Gradio's ``blocked_paths``), even where a data root
    holds the home: the embedding cache, the jobs' folders (adapters, logs, owners), the weights fingerprint memo."""
    h = home()
    return (h / "cache", h / "jobs", h / "fingerprints.json")


def data_roots() -> tuple[Path, ...]:
    """The folders every user-given path must resolve inside (realpaths, existing or not).

    ``$BINDLAB_DATA_ROOTS`` (``os.pathsep``-separated) replaces the default, which is the repo's ``data/`` and
    ``bindlab/assets/``, ``$BINDLAB_HOME`` and, outside public mode only, the current folder (on a Space the current folder
    is the app's checkout, with its ``.git``).
    """
    raw = os.environ.get("BINDLAB_DATA_ROOTS", "")
    if raw.strip():
        roots = [Path(r).expanduser() for r in raw.split(os.pathsep) if r.strip()]
    else:
        roots = [repo_root() / "data", assets_root(), home()]
        if not public_mode():
            roots.append(Path.cwd())
    return tuple(Path(os.path.realpath(r)) for r in roots)


@dataclass(frozen=True)
class Limits:
    """Every size bindlab caps before work starts. Each field is read from its environment variable
    (``BINDLAB_<FIELD NAME IN CAPITALS>``, see :data:`LIMIT_ENV`), with one default for local use and a tighter one
    in public mode (:data:`LIMIT_DEFAULTS`). docs/deploy.md lists them all."""

    max_file_bytes: int  # any data file, manifest, meta.json or index.csv read from disk
    max_jsonl_lines: int  # non-blank lines of one JSONL data file
    max_json_depth: int  # nesting depth of one JSON value (deeper -> refused, never a RecursionError)
    max_upload_mb: int  # one uploaded file in the app, in MiB (Gradio's upload route refuses larger ones)
    upload_quota_mb: int  # MiB one client address may upload in an hour through the app's upload route (0: no quota)
    upload_space_mb: int  # MiB all uploads waiting in Gradio's upload folder may take (0: no cap)
    max_image_pixels: int  # width x height of one image file, checked before decoding
    max_caption_words: int  # words in one caption typed by a user (checked before tokenising)
    max_caption_chars: int  # characters in one caption typed by a user
    max_questions: int  # questions / pairs / rows scored in one request
    max_batch_size: int  # encoder batch size
    max_steps: int  # training steps of one job
    max_epochs: int  # training epochs of one job
    max_per_size: int  # `generate saber --per-size`
    max_triplets: int  # `generate triplets --n`
    max_scenes: int  # `generate composet --scenes`
    max_foils_per_scene: int  # `generate composet --foils-per-scene`
    max_grid_images: int  # images of one factor grid (shapes x hues x patterns x contexts x replicas)
    max_render_size: int  # side in pixels of generated images
    max_workers: int  # rendering / data-loading processes of one command
    max_n_objects: int  # objects in one MCQ scene (n_objects and bindings of a data file)
    max_compare_models: int  # encoders compared in one `compare` / Compare tab request
    max_loaded_models: int  # encoder instances one process keeps loaded (least recently used dropped beyond it)
    max_request_seconds: int  # seconds one app request may use the model (0: no limit)
    heavy_request_items: int  # items through the model that make an app request heavy (0: none is heavy)
    max_heavy_requests: int  # heavy app requests at once on the server (one per session and per client address)
    session_state_seconds: int  # seconds a session's large page state (maps, comparisons) is kept unused (0: no limit)
    scored_memory_mb: int  # MiB of scored sets (scores and loaded embeddings) Browse keeps for all visitors together
    max_jobs_per_session: int  # running background jobs (walkthrough jobs included) of one session / owner
    max_queued_per_session: int  # queued background jobs of one session / owner
    max_jobs_global: int  # running background jobs on the server
    max_queued_global: int  # queued background jobs on the server
    max_job_seconds: int  # wall-clock seconds one job may run before it is cancelled (0: no cap)
    max_dataset_mb: int  # MiB of one datasets folder's parquet shards after decoding (records and images), in all
    max_value_mb: int  # MiB of one value of a datasets folder after decoding (one record's JSON, one image's bytes)
    max_images_per_item: int  # images one record of a datasets folder may name
    max_factor_values: int  # values of one factor (shapes, hues, patterns, contexts) in one factor grid


MIB = 1 << 20

# field -> (local default, public default)
LIMIT_DEFAULTS: dict[str, tuple[int, int]] = {
    "max_file_bytes": (512 * MIB, 50 * MIB),
    "max_jsonl_lines": (1_000_000, 20_000),
    "max_json_depth": (64, 32),
    "max_upload_mb": (50, 20),
    "upload_quota_mb": (0, 200),
    "upload_space_mb": (0, 2_048),
    "max_image_pixels": (178_956_970, 16_000_000),  # local: PIL's own decompression-bomb limit
    "max_caption_words": (1_000, 200),
    "max_caption_chars": (10_000, 2_000),
    "max_questions": (200_000, 5_000),
    "max_batch_size": (4_096, 256),
    "max_steps": (1_000_000, 5_000),
    "max_epochs": (1_000, 5),
    "max_per_size": (100_000, 1_000),
    "max_triplets": (2_000_000, 20_000),
    "max_scenes": (10_000, 200),
    "max_foils_per_scene": (200, 40),
    "max_grid_images": (500_000, 20_000),
    "max_render_size": (2_048, 512),
    "max_workers": (64, 2),
    "max_n_objects": (64, 20),
    "max_compare_models": (8, 4),
    "max_loaded_models": (12, 5),
    "max_request_seconds": (0, 300),
    "heavy_request_items": (0, 2_000),
    "max_heavy_requests": (4, 1),
    "session_state_seconds": (0, 1_800),
    "scored_memory_mb": (1_024, 256),
    "max_jobs_per_session": (4, 1),
    "max_queued_per_session": (16, 2),
    "max_jobs_global": (2, 1),
    "max_queued_global": (64, 8),
    "max_job_seconds": (0, 1_800),
    "max_dataset_mb": (4_096, 64),
    "max_value_mb": (64, 8),
    "max_images_per_item": (64, 16),
    "max_factor_values": (1_000, 64),
}

LIMIT_ENV: dict[str, str] = {name: f"BINDLAB_{name.upper()}" for name in LIMIT_DEFAULTS}


def _limit_from_env(name: str, default: int) -> int:
    raw = os.environ.get(LIMIT_ENV[name], "").strip().replace("_", "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(
            f"{LIMIT_ENV[name]}={os.environ[LIMIT_ENV[name]]!r} must be a whole number (default {default})"
        ) from None
    if value < 0:
        raise ValueError(f"{LIMIT_ENV[name]}={value} must be >= 0 (default {default})")
    return value


_HELD_LIMITS: ContextVar[Limits | None] = ContextVar("bindlab_held_limits", default=None)


@contextmanager
def held_limits() -> Iterator[Limits]:
    """Read the limits once and answer every :func:`limits` call inside the block with them (in this thread or task).

    For loops that check caps per item: reading the ~35 environment variables costs ~90 µs, which a 5,000-question
    file's 360,000 checks turned into 34 s of a 37 s load; held, the load takes about 2 s.
    """
    held = limits()
    token = _HELD_LIMITS.set(held)
    try:
        yield held
    finally:
        _HELD_LIMITS.reset(token)


def limits() -> Limits:
    """The limits in force now (environment read on every call, so a test or a Space setting takes effect; inside
    :func:`held_limits`, the ones read when the block began).

    Raises:
        ValueError: an environment variable that is not a non-negative whole number.
    """
    held = _HELD_LIMITS.get()
    if held is not None:
        return held
    col = 1 if public_mode() else 0
    env = tuple(os.environ.get(var) for var in LIMIT_ENV.values())
    return _limits_for(col, env)


@lru_cache(maxsize=8)
def _limits_for(col: int, env: tuple[str | None, ...]) -> Limits:
    """The limits for one public/local choice and one set of environment values (readers call limits() per line)."""
    del env  # the cache key: _limit_from_env reads the same values
    return Limits(**{name: _limit_from_env(name, pair[col]) for name, pair in LIMIT_DEFAULTS.items()})
