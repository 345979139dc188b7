"""``python -m bindlab <command>``: the command-line face of the backend.

Every command prints a short human summary; ``--out FILE`` writes the full result as JSON with provenance.
User errors (bad ids, bad files) print one clear line to stderr and exit with status 2 — no traceback.
One module per feature adds its commands (``_add_*``); each command parses, calls the feature's study, and formats.
Under ``torchrun``/``accelerate launch`` rank 0 runs the command (scores, prints, writes outputs and the cache)
while the other ranks embed shards of what it asks for and exit 0 quietly; a job process (``jobs _run``) runs on
every rank (data-parallel training).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path

from bindlab.cli import attention, audit, browse, compare, datasets, finetune, grounding, map, models, pairs, tasks, toy
from bindlab.cli.common import Groups, Parser
from bindlab.config import __version__

# Each feature module adds its commands; the order is the order of --help.
COMMAND_GROUPS: list[Callable[[Groups], None]] = [
    browse.add_commands,
    models.add_commands,
    attention.add_commands,
    finetune.add_commands,
    grounding.add_commands,
    pairs.add_commands,
    toy.add_commands,
    map.add_commands,
    compare.add_commands,
    tasks.add_commands,
    datasets.add_commands,
    audit.add_commands,
]


EPILOG = """examples (COMMAND --help lists a command's options and their defaults):
  python -m bindlab generate saber --out runs/saber [--per-size 200] [--sizes 2-10]
  python -m bindlab eval mcq --model minilm [--data runs/saber/mcq.jsonl] [--pairings tt] [--out r.json]
  python -m bindlab compare --models bow,minilm,toy:clip [--suite mcq,pairs] [--data F]
  python -m bindlab finetune --model minilm --data runs/triplets [--background]
  python -m bindlab jobs list
  python -m bindlab jobs compare ID [--data F] [--no-attention]
"""


def program_name() -> str:
    """How the user called the CLI: ``bindlab`` for the installed console script, else ``python -m bindlab``."""
    return "bindlab" if Path(sys.argv[0] if sys.argv else "").name == "bindlab" else "python -m bindlab"


def build_parser() -> argparse.ArgumentParser:
    prog = program_name()
    parser = Parser(
        prog=prog,
        description="bindlab: attribute–object binding lab bench",
        epilog=EPILOG.replace("python -m bindlab", prog),
    )
    parser.add_argument("--version", action="version", version=f"bindlab {__version__}")
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    gen = top.add_parser("generate", help="generate a benchmark or dataset").add_subparsers(
        dest="what", required=True, metavar="KIND", title="kinds"
    )
    ev = top.add_parser("eval", help="score an encoder on a benchmark").add_subparsers(
        dest="what", required=True, metavar="KIND", title="kinds"
    )
    groups = Groups(top, gen, ev)
    for add in COMMAND_GROUPS:
        add(groups)
    return parser


# Commands whose --out names a folder (everything else writes one file there).
OUT_IS_DIR = ("generate", "train", "export-dataset")


def validate_args(a: argparse.Namespace) -> None:
    """Validation before work (:func:`bindlab.studies.validate.check_options`): numbers, caps, input paths inside
    the allowed data roots, output paths; ``--card`` is the explicit ask that allows writing into ``bindlab/assets/``."""
    from bindlab.studies.validate import check_options

    check_options(vars(a), out_is_dir=a.command in OUT_IS_DIR, allow_assets=bool(getattr(a, "card", False)))


# How running out of memory reads when it does not arrive as a MemoryError: an mmap of model weights (torch,
# safetensors: "Cannot allocate memory (12)", "os error 12"), a shared library that cannot be mapped
# ("failed to map segment from shared object"), an allocator (std::bad_alloc, "can't allocate memory"), CUDA.
_OOM_TEXT = (
    "cannot allocate memory",
    "failed to map segment",
    "os error 12",
    "errno 12",
    "enomem",
    "bad_alloc",
    "can't allocate memory",
    "out of memory",
)


def _own(e: BaseException) -> bool:
    """bindlab's own errors: their words are ours (they may quote user text, which is never read as a symptom)."""
    from bindlab.data.schema import DataError
    from bindlab.encoders.base import EncoderError

    return isinstance(e, (DataError, EncoderError))


def _out_of_memory(e: BaseException | None) -> bool:
    """``e``, or an error it was raised from (``__cause__``/``__context__``, also behind ``from None``), means the
    process ran out of memory."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, MemoryError) or (isinstance(e, OSError) and e.errno == errno.ENOMEM):
            return True
        if not _own(e) and any(t in str(e).lower() for t in _OOM_TEXT):
            return True
        e = e.__cause__ or e.__context__
    return False


def _message(e: BaseException) -> str:
    """One line for an error: the message, else the error's kind (never a traceback). Running out of memory, in any
    of its disguises, is one sentence, unless bindlab's own message already says so (CUDA at its smallest batch)."""
    if _out_of_memory(e) and not (_own(e) and "out of memory" in str(e).lower()):
        msg = "out of memory; free some memory, or use a smaller model, a smaller input or smaller sizes"
    elif isinstance(e, KeyError) and e.args:
        msg = str(e.args[0])
    elif isinstance(e, RecursionError):
        msg = "input nested too deeply"
    elif isinstance(e, OSError) and e.strerror:
        msg = f"{e.strerror}" + (f": {e.filename}" if e.filename else "")
    else:
        msg = str(e) or type(e).__name__
    return " ".join(msg.split())  # one line


def _runs_on_every_rank(a: argparse.Namespace) -> bool:
    """A job process trains data-parallel on every rank; every other command runs on rank 0 only."""
    return a.command == "jobs" and getattr(a, "action", None) == "_run"


def _run(a: argparse.Namespace) -> None:
    """Validate and run the command; under a launcher, on rank 0 with the other ranks serving embedding shards."""
    from bindlab.encoders import distributed

    world = distributed.world_from_env()
    if not world.active or _runs_on_every_rank(a):
        validate_args(a)
        a.func(a)
        return
    from bindlab.encoders.service import serve_embedding_requests, shard_totals, stop_serving

    distributed.init()
    if not world.main:
        serve_embedding_requests()  # until rank 0 is done; then exit 0 without output
        distributed.shutdown()
        return
    try:
        validate_args(a)
        a.func(a)
    finally:
        stop_serving()
        distributed.shutdown()
        if os.environ.get("BINDLAB_DIST_VERBOSE", "") not in ("", "0"):
            print(f"sharded embedding over {world.size} processes: items per rank {shard_totals()}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    from bindlab.data.schema import DataError
    from bindlab.encoders.base import EncoderError

    try:
        _run(a)
    except (
        DataError,
        EncoderError,
        ValueError,
        FileNotFoundError,
        KeyError,
        OSError,
        MemoryError,
        RecursionError,
        UnicodeError,
        OverflowError,
    ) as e:
        print(f"error: {_message(e)}", file=sys.stderr)
        return 2
    except Exception as e:  # out of memory in disguise (an mmap's RuntimeError, an ImportError, a SafetensorError)
        if not _out_of_memory(e):
            raise
        print(f"error: {_message(e)}", file=sys.stderr)
        return 2
    return 0
