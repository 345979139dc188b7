"""Run ``python -m bindlab ARGS`` in the test process, for tests about what a command does rather than about the
process around it (tests/test_cli.py and tests/test_documented_commands.py keep real subprocesses for that)."""

from __future__ import annotations

import contextlib
import io
from types import SimpleNamespace


def run(*args, check=True):
    """``python -m bindlab ARGS`` in this process: ``returncode``, ``stdout`` and ``stderr`` as the subprocess gives
    them (argparse's ``--help`` and usage errors leave through ``SystemExit``, as they end the real process)."""
    from bindlab.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    p = SimpleNamespace(returncode=code or 0, stdout=out.getvalue(), stderr=err.getvalue())
    if check:
        assert p.returncode == 0, p.stderr
    return p
