"""Validation before work, shared by the CLI and the app: numbers, sizes, input and output paths.

Everything here runs before a model loads, a file is written or a job is queued, and raises ``ValueError`` with one
line that names the option, the bad value and what to do. The CLI (``bindlab.cli.main``) runs
:func:`check_options` on every parsed command; a tab's study calls the same function with its inputs.

- numbers: :func:`positive_int`, :func:`nonneg_int`, :func:`finite_float`, :func:`capped` (a limit from
  :func:`bindlab.config.limits`, named with its environment variable); seeds within numpy's range (0 to 2**32 - 1);
- the device: :func:`check_device` (what :func:`bindlab.config.resolve_device` accepts, for every model);
- input paths: :func:`input_path` (inside the allowed data roots, then it must exist);
- output paths: :func:`output_file` and :func:`output_dir` (a regular file or a new one whose folder exists or can
  be made; never a device, never a folder where a file is needed and the reverse, never inside the repo's
  ``bindlab/assets/`` unless asked for explicitly, names no longer than the file system allows).
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any

from bindlab.analysis.embedding_map import MAX_N_NEIGHBORS
from bindlab.config import LIMIT_ENV, Limits, assets_root, limits
from bindlab.data.files import DataError, resolve_allowed

NAME_MAX = 255  # bytes in one path component on every common file system
PATH_MAX = 4096


def _flag(name: str) -> str:
    return name if name.startswith("-") or " " in name else "--" + name.replace("_", "-")


# --- numbers -------------------------------------------------------------------------------------------------------
def _as_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{_flag(name)} must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value  # exact, however many digits (a float would round a 22-digit seed)
    try:
        f = float(value)
        if not math.isfinite(f) or f != int(f):
            raise ValueError
        return int(f)
    except (ValueError, OverflowError):
        raise ValueError(f"{_flag(name)} must be a whole number, got {value!r}") from None


def positive_int(value: Any, name: str = "value") -> int:
    """``value`` as an int >= 1, else a ``ValueError`` naming ``name``."""
    n = _as_int(value, name)
    if n < 1:
        raise ValueError(f"{_flag(name)} must be at least 1, got {n}")
    return n


def nonneg_int(value: Any, name: str = "value") -> int:
    """``value`` as an int >= 0 (0 usually means "no limit" / "all")."""
    n = _as_int(value, name)
    if n < 0:
        raise ValueError(f"{_flag(name)} must be 0 or more, got {n} (0 means all)")
    return n


def finite_float(
    value: Any, name: str = "value", lo: float | None = None, hi: float | None = None, lo_open: bool = False
) -> float:
    """``value`` as a finite float within ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{_flag(name)} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{_flag(name)} must be a finite number, got {value!r}")
    if lo is not None and (x < lo or (lo_open and x == lo)):
        raise ValueError(f"{_flag(name)} must be {'>' if lo_open else '>='} {lo:g}, got {x:g}")
    if hi is not None and x > hi:
        raise ValueError(f"{_flag(name)} must be <= {hi:g}, got {x:g}")
    return x


def capped(value: int, name: str, limit: str, lims: Limits | None = None) -> int:
    """``value`` unless it exceeds the limit ``limit`` (a :class:`bindlab.config.Limits` field); the message says
    the cap and its environment variable."""
    cap = getattr(lims or limits(), limit)
    if cap and value > cap:
        raise ValueError(
            f"{_flag(name)} {value:,} is above the cap of {cap:,}; use a smaller value or raise {LIMIT_ENV[limit]}"
        )
    return value


# --- paths ---------------------------------------------------------------------------------------------------------
def _check_name_lengths(p: Path, name: str) -> None:
    if len(os.fsencode(str(p))) > PATH_MAX:
        raise ValueError(f"{_flag(name)}: the path is longer than {PATH_MAX} bytes; choose a shorter path")
    for part in p.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise ValueError(
                f"{_flag(name)}: the name {part[:40]}… is longer than {NAME_MAX} bytes; choose a shorter file name"
            )


def _nearest_existing(p: Path, name: str) -> Path:
    """The nearest existing ancestor of ``p``; it must be a writable folder (the rest is created on write)."""
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{_flag(name)}: {parent} is a file, not a folder; choose a path inside a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{_flag(name)}: the folder {parent} is not writable; choose another path")
    return parent


def _refuse_assets(real: Path, name: str, allow_assets: bool) -> None:
    assets = Path(os.path.realpath(assets_root()))
    if not allow_assets and (real == assets or assets in real.parents):
        raise ValueError(
            f"{_flag(name)}: {real} is inside the shipped bindlab/assets/ folder, which is never written "
            "unless a command asks for it explicitly (e.g. `eval toy --card`); choose another path"
        )


def output_file(path: str | os.PathLike, name: str = "out", allow_assets: bool = False) -> Path:
    """Check an output file path: an existing regular file (replaced) or a new file whose folder exists or can
    be created. Never a folder, a device (``/dev/full``), a FIFO or a socket.

    Returns:
        The path (as given, expanded).
    """
    raw = os.fspath(path)
    if not raw.strip() or "\x00" in raw:
        raise ValueError(f"{_flag(name)} needs a file path, got {raw!r}")
    p = Path(raw).expanduser()
    _check_name_lengths(p, name)
    if p.exists():
        mode = os.stat(p).st_mode
        if stat.S_ISDIR(mode):
            raise ValueError(f"{_flag(name)}: {p} is a folder; give a file path (e.g. {p / 'result.json'})")
        if not stat.S_ISREG(mode):
            raise ValueError(f"{_flag(name)}: {p} is not a regular file (a device, pipe or socket); give a file path")
        if not os.access(p, os.W_OK):
            raise ValueError(f"{_flag(name)}: {p} is not writable; choose another path")
    elif p.is_symlink():
        raise ValueError(f"{_flag(name)}: {p} is a dangling symbolic link; choose another path")
    else:
        _nearest_existing(p, name)
    _refuse_assets(Path(os.path.realpath(p)), name, allow_assets)
    return p


def output_dir(path: str | os.PathLike, name: str = "out", allow_assets: bool = False) -> Path:
    """Check an output folder: an existing folder, or a new one whose parent exists or can be created."""
    raw = os.fspath(path)
    if not raw.strip() or "\x00" in raw:
        raise ValueError(f"{_flag(name)} needs a folder path, got {raw!r}")
    p = Path(raw).expanduser()
    _check_name_lengths(p, name)
    if p.exists():
        if not p.is_dir():
            raise ValueError(f"{_flag(name)}: {p} is a file, not a folder; give a folder path (new or existing)")
        if not os.access(p, os.W_OK | os.X_OK):
            raise ValueError(f"{_flag(name)}: the folder {p} is not writable; choose another folder")
    else:
        _nearest_existing(p, name)
    _refuse_assets(Path(os.path.realpath(p)), name, allow_assets)
    return p


def input_path(path: str | os.PathLike, name: str = "data", must_exist: bool = True) -> Path:
    """An input file or folder: inside the allowed data roots (one message otherwise, saying nothing about the
    path), then present. Returns the resolved path."""
    raw = os.fspath(path)
    if "\x00" in raw:
        raise DataError(f"{_flag(name)}: the path contains a NUL byte")
    if len(os.fsencode(raw)) > PATH_MAX:
        raise DataError(f"{_flag(name)}: the path is longer than {PATH_MAX} bytes")
    try:
        real = resolve_allowed(raw)
    except DataError as e:
        raise DataError(f"{_flag(name)}: {e}") from None
    for part in real.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise DataError(f"{_flag(name)}: a name in the path is longer than {NAME_MAX} bytes")
    if must_exist and not real.exists():
        raise DataError(f"{_flag(name)}: {raw}: file not found")
    return real


def hub_dataset_id(value: Any) -> bool:
    """``hf:ORG/NAME`` that is not a local path: a dataset on the Hugging Face Hub."""
    text = str(value or "").strip()
    return text.startswith("hf:") and not Path(text).exists()


def data_input(value: str | os.PathLike, name: str = "data", kind: str | None = None) -> Path:
    """An input set as bindlab's loaders read it: a path inside the allowed data roots (as :func:`input_path`, not
    required to exist yet) or, outside public mode, ``hf:ORG/NAME``; a Hugging Face datasets folder (``bindlab
    export-dataset``) or Hub dataset becomes bindlab's own files once
    (:func:`bindlab.data.hf_datasets.as_bindlab_path`). Any other path comes back as given.

    Raises:
        DataError: a path outside the roots, a Hub id in public mode or when the Hub cannot be reached, a dataset
            of another kind than ``kind``.
    """
    from bindlab.config import public_mode
    from bindlab.data.hf_datasets import as_bindlab_path

    text = os.fspath(value).strip()
    if hub_dataset_id(text):
        if public_mode():
            raise DataError(
                f"{_flag(name)}: this server does not fetch datasets from the Hugging Face Hub; choose a "
                "listed set or upload a file"
            )
    else:
        input_path(text, name, must_exist=False)
    return as_bindlab_path(text, kind)


# --- options of one command ------------------------------------------------------------------------------------------
def _pos(limit: str | None = None) -> Callable[[Any, str, Limits], Any]:
    def check(v: Any, name: str, lims: Limits) -> int:
        n = positive_int(v, name)
        return capped(n, name, limit, lims) if limit else n

    return check


def _nonneg(limit: str | None = None) -> Callable[[Any, str, Limits], Any]:
    def check(v: Any, name: str, lims: Limits) -> int:
        n = nonneg_int(v, name)
        return capped(n, name, limit, lims) if limit else n

    return check


def _between(lo: int, hi: int, what: str = "") -> Callable[[Any, str, Limits], Any]:
    def check(v: Any, name: str, lims: Limits) -> int:
        n = _as_int(v, name)
        if not lo <= n <= hi:
            raise ValueError(f"{_flag(name)} must be between {lo} and {hi:,}{what}, got {n:,}")
        return n

    return check


SEED_MAX = 2**32 - 1  # numpy's (and UMAP's) seed range is 0 <= seed < 2**32


def check_device(value: Any, name: str = "device", lims: Limits | None = None) -> str:
    """The one device check of every face (CLI, API, app) and every study's request: a device string that
    :func:`bindlab.config.resolve_device` accepts *on this machine* (``auto|cpu|cuda|cuda:N|mps``, and the device must
    be there), checked before any work starts, also for models that ignore it (``bow``). ``auto`` and ``cpu`` are
    accepted without importing torch. Returns the value stripped (resolution is the loader's).

    Raises:
        ValueError: one sentence naming the device, why it cannot be used here, and what to use instead.
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be one of auto, cpu, cuda, cuda:N or mps, got {value!r}")
    text = value.strip()
    if text.lower() in ("auto", "cpu"):
        return text
    from bindlab.config import resolve_device

    try:
        resolve_device(text)
    except ValueError as e:
        raise ValueError(str(e) if name == "device" else f"{_flag(name)}: {e}") from None
    return text


# --- the options every run shares ------------------------------------------------------------------------------------
DEVICE_HELP = "auto|cpu|cuda|cuda:N|mps; auto (the default) takes cuda if there is one, else mps, else cpu"
DTYPE_HELP = (
    "auto|float32|bfloat16|float16: the precision a hub model (hf:, open_clip:, qwen3vl:) runs in; auto (the default) "
    "is bfloat16 on a GPU that has it (else float16) and float32 on CPU, where half precision falls back to float32 "
    "with a warning; the bundled models (toy:, minilm, bow) always run in float32"
)


def _check_model(value: Any, f: Field) -> str:
    text = str(value or "").strip()
    if not text and "empty" in f.metadata:
        raise ValueError(f.metadata["empty"])
    return text


def _check_device(value: Any, f: Field) -> str:
    return check_device(value or "auto")  # None or "" (an empty box in a tab): auto


def _check_dtype(value: Any, f: Field) -> str:
    from bindlab.encoders.runtime import DTYPES

    name = str(value or "auto").strip().lower()  # None or "" (an empty box in a tab): auto
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {value!r}; choose {', '.join(DTYPES[:-1])} or {DTYPES[-1]}")
    return name


def _check_batch_size(value: Any, f: Field) -> int | None:
    return None if value is None else positive_int(value, "batch_size")


def _check_limit(value: Any, f: Field) -> int:
    return nonneg_int(value, "limit")


def _check_seed(value: Any, f: Field) -> int:
    return _between(0, SEED_MAX, " (2**32 - 1: numpy's seed range)")(value, "seed", limits())


def _run(default: Any, help: str, check: Callable[[Any, Field], Any], cap: str | None = None, **cli: Any) -> Any:  # noqa: A002
    return field(default=default, metadata={"help": help, "check": check, "cap": cap, **cli})


@dataclass
class RunOptions:
    """The options every run of a model shares, defined and checked here once: which encoder, on which device and in
    which precision, how many items per forward pass, how many items, which seed, and whether malformed lines are skipped.

    Every study's request declares the ones it takes with :func:`run_option` (at its own position; a request may
    change a default or the help text, never the check) and calls :func:`check_run_options` first thing in
    ``__post_init__``; the CLI builds ``--device``, ``--dtype``, ``--batch-size``, ``--limit``, ``--seed`` and ``--skip-bad``
    from these fields (:func:`bindlab.cli.common.add_run_args`), and :func:`check_options` checks them with the same
    functions, under the caps in force (``cap``: a :class:`bindlab.config.Limits` field).
    """

    model: str = _run("", "encoder id, e.g. minilm, bow or toy:clip", _check_model)
    device: str = _run("auto", DEVICE_HELP, _check_device, metavar="DEVICE")
    dtype: str = _run("auto", DTYPE_HELP, _check_dtype, metavar="DTYPE")
    batch_size: int | None = _run(
        None,
        "texts or images per encoder forward pass",
        _check_batch_size,
        "max_batch_size",
        metavar="N",
        cli_default=64,
        type=int,
    )
    limit: int = _run(0, "score only the first N items (0 = all)", _check_limit, "max_questions", metavar="N", type=int)
    seed: int = _run(0, "bootstrap seed", _check_seed, metavar="N", type=int)
    skip_bad: bool = _run(False, "skip malformed lines (reported) instead of refusing the file", lambda v, f: bool(v))

    def __post_init__(self) -> None:
        check_run_options(self)


def run_option(name: str, *, required: bool = False, **change: Any) -> Any:
    """A request's field for the run option ``name`` (a :class:`RunOptions` field): its default, help text and check,
    with ``default`` or ``help`` changed where the request's differ; ``required``: no default (a positional field);
    ``empty``: for ``model``, the message when it is empty (else an empty id passes).
    """
    base = RunOptions.__dataclass_fields__[name]
    meta = {**base.metadata, **{k: v for k, v in change.items() if k != "default"}, "run_option": name}
    if required:
        return field(metadata=meta)
    return field(default=change.get("default", base.default), metadata=meta)


def run_options(request: Any) -> list[Field]:
    """The run option fields a request (or its class) declares, in its order."""
    return [f for f in fields(request) if "check" in f.metadata]


def check_run_options(request: Any) -> None:
    """Check every run option ``request`` declares, in place (frozen dataclasses too), each with its one check.

    Raises:
        ValueError: one line naming the option, the value and what to do.
    """
    for f in run_options(request):
        object.__setattr__(request, f.name, f.metadata["check"](getattr(request, f.name), f))


def _float(lo: float | None = None, hi: float | None = None, lo_open: bool = False):
    return lambda v, name, lims: finite_float(v, name, lo, hi, lo_open)


def _lines_a(v: Any, name: str, lims: Limits) -> Any:
    if isinstance(v, str) and v.strip().lower() == "auto":
        return v
    return finite_float(v, name, 0.0, 1.0)


# option name (argparse dest, or the app's keyword) -> check(value, name, limits). None values are skipped.
OPTION_RULES: dict[str, Callable[[Any, str, Limits], Any]] = {
    "sample": _nonneg("max_questions"),
    "eval_sample": _nonneg("max_questions"),
    "attention_limit": _nonneg("max_questions"),
    "eval_rows": _nonneg("max_questions"),
    "per_size": _pos("max_per_size"),
    "eval_per_size": _pos("max_per_size"),
    "n": _pos("max_triplets"),
    "scenes": _pos("max_scenes"),
    "foils_per_scene": _pos("max_foils_per_scene"),
    "contexts": _pos("max_grid_images"),
    "replicas": _pos("max_grid_images"),
    "size": _pos("max_render_size"),
    "image_size": _nonneg("max_render_size"),
    "thumb_size": _pos("max_render_size"),
    "workers": _pos("max_workers"),
    "num_processes": _pos("max_workers"),
    "threads": _pos("max_workers"),
    "steps": _pos("max_steps"),
    "max_steps": _nonneg("max_steps"),
    "checkpoint_every": _pos(),
    "epochs": _pos("max_epochs"),
    "lora_rank": _pos(),
    "n_boot": _nonneg("max_questions"),
    "n_neighbors": _between(2, MAX_N_NEIGHBORS, " (UMAP neighbourhood size)"),
    "pool_size": _pos("max_triplets"),
    "heads": _nonneg(),
    "layers": _nonneg(),
    "width": _nonneg(),
    "patch_size": _nonneg(),
    "lr": _float(0.0, 1.0, lo_open=True),  # train.finetune.MAX_LR: larger rates diverge at the first steps
    "lora_alpha": _float(0.0, None, lo_open=True),
    "margin": _float(0.0),
    "weight_decay": _float(0.0),
    "min_dist": _float(0.0),
    "hard_share": _float(0.0, 1.0),
    "holdout_words": _float(0.0, 0.5, lo_open=True),
    "lines_a": _lines_a,
}


def _run_rule(f: Field) -> Callable[[Any, str, Limits], Any]:
    """A run option's check as an :data:`OPTION_RULES` entry: its one check, then its cap."""

    def check(v: Any, name: str, lims: Limits) -> Any:
        value = f.metadata["check"](v, f)
        cap = f.metadata["cap"]
        return capped(value, name, cap, lims) if cap and value is not None else value

    return check


OPTION_RULES.update(
    {name: _run_rule(RunOptions.__dataclass_fields__[name]) for name in ("batch_size", "limit", "seed")}
)
OPTION_RULES["device"] = check_device  # strict here: an empty --device is a mistake, not auto

INPUT_PATHS = ("data", "images", "config", "vocab_from")  # user-given files/folders that are read
OUTPUT_FILES = ("per_item",)  # always files


def check_options(opts: Mapping[str, Any], out_is_dir: bool = False, allow_assets: bool = False) -> dict[str, Any]:
    """Validate every known option of one command before any work starts.

    Args:
        opts: option name -> value (an argparse namespace's ``vars()``, or a tab's inputs). Unknown names pass.
        out_is_dir: ``out`` names a folder (``generate *``, ``train toy``) rather than a file.
        allow_assets: the command asked explicitly to write into the repo's ``bindlab/assets/`` (``eval toy --card``).

    Returns:
        The checked values (numbers converted), by option name.

    Raises:
        ValueError (or its subclass ``DataError``): one line naming the option, the value and what to do.
    """
    lims = limits()
    checked: dict[str, Any] = {}
    for name, value in opts.items():
        if value is None or name not in OPTION_RULES:
            continue
        checked[name] = OPTION_RULES[name](value, name, lims)
    for name in INPUT_PATHS:
        value = opts.get(name)
        if name == "data" and isinstance(value, str) and hub_dataset_id(value):
            checked[name] = data_input(value, name)  # hf:ORG/NAME: fetched by the request, refused in public mode
        elif isinstance(value, (str, os.PathLike)) and os.fspath(value):
            checked[name] = input_path(value, name)
    out = opts.get("out")
    if isinstance(out, (str, os.PathLike)):
        checked["out"] = (output_dir if out_is_dir else output_file)(out, "out", allow_assets)
    for name in OUTPUT_FILES:
        if isinstance(opts.get(name), (str, os.PathLike)):
            checked[name] = output_file(opts[name], name, allow_assets)
    if isinstance(opts.get("export"), (str, os.PathLike)):
        checked["export"] = output_dir(opts["export"], "export", allow_assets)
    return checked


def check_caption(text: str, lims: Limits | None = None) -> str:
    """A user-typed caption within the word and character caps (checked before tokenising)."""
    lims = lims or limits()
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the caption is empty; type a caption")
    if len(text) > lims.max_caption_chars:
        raise ValueError(
            f"the caption has {len(text):,} characters, above the cap of {lims.max_caption_chars:,} "
            f"({LIMIT_ENV['max_caption_chars']}); shorten it"
        )
    words = len(text.split())
    if words > lims.max_caption_words:
        raise ValueError(
            f"the caption has {words:,} words, above the cap of {lims.max_caption_words:,} "
            f"({LIMIT_ENV['max_caption_words']}); shorten it"
        )
    return text


__all__ = [
    "DEVICE_HELP",
    "OPTION_RULES",
    "SEED_MAX",
    "RunOptions",
    "capped",
    "check_caption",
    "check_device",
    "check_options",
    "check_run_options",
    "finite_float",
    "input_path",
    "nonneg_int",
    "output_dir",
    "output_file",
    "positive_int",
    "run_option",
    "run_options",
]


def encoder_id(model: Any, default: str | None = None) -> str:
    """A stripped encoder id whose syntax parses and whose backend exists (nothing is loaded)."""
    from bindlab.encoders.base import EncoderError, backends, parse_encoder_id

    text = str(model or "").strip() or (default or "")
    if not text:
        raise ValueError("give an encoder id, e.g. minilm, bow or toy:shared")
    eid = parse_encoder_id(text)
    if eid.backend not in backends():
        raise EncoderError(f"unknown encoder backend {eid.backend!r} in {text!r}; known backends: {sorted(backends())}")
    return text
