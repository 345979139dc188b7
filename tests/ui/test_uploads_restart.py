"""Uploads do not outlive their server (issue 56): a session ends with the server that served it, so a server
starting up deletes the upload folders a stopped server left — and only those: another live server on the same home
keeps its visitors' uploads (the browser tests run two servers on one home)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bindlab.studies import datasets

STORE = """
import sys
from pathlib import Path
from bindlab.studies.datasets import store_upload
src = Path(sys.argv[1])
print(store_upload(src, "mcq", "visitor-of-a-stopped-server"))
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    mcq = tmp_path / "mcq.jsonl"
    mcq.write_text('{"id": "q1"}\n')
    return tmp_path / "home", mcq


def _upload_in_a_process_that_ends(mcq) -> str:
    """An upload stored by another process (a server), which then stops."""
    done = subprocess.run([sys.executable, "-c", STORE, str(mcq)], capture_output=True, text=True, env=os.environ)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_stopped_servers_uploads_go_at_start_up_and_a_live_servers_stay(home):
    _, mcq = home
    orphan = _upload_in_a_process_that_ends(mcq)
    assert os.path.isfile(orphan)
    live = datasets.store_upload(mcq, "mcq", "visitor-of-this-server")  # this process is a live server
    unmarked = datasets.session_uploads("from-an-older-version") / "mcq-x"
    unmarked.mkdir(parents=True)
    assert datasets.sweep_orphan_uploads() == 1
    assert not os.path.exists(os.path.dirname(os.path.dirname(orphan)))  # the whole session folder
    assert live.is_file() and unmarked.is_dir()  # the age sweep takes unmarked folders
    assert datasets.sweep_orphan_uploads() == 0


def test_a_reused_pid_is_not_its_old_server():
    me = datasets.this_server()
    pid, ticks = me.split()
    assert datasets.server_alive(me)
    assert not datasets.server_alive(f"{pid} {int(ticks) + 1}")  # same pid, another start: not the server
    assert not datasets.server_alive("not a mark") and not datasets.server_alive("")


@pytest.mark.ui
def test_the_app_deletes_a_stopped_servers_uploads_when_it_starts(home):
    from bindlab.speed.browser import running_app

    root, mcq = home
    orphan = _upload_in_a_process_that_ends(mcq)
    live = datasets.store_upload(mcq, "mcq", "visitor-of-this-server")
    with running_app(env={"BINDLAB_HOME": str(root), "BINDLAB_PUBLIC": "1"}, timeout_s=180):
        assert not os.path.exists(orphan)
        assert live.is_file()
