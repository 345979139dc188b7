"""Downloads never pile up: per-session export folders under $BINDLAB_HOME/exports, deleted with the session and
swept by age."""

from __future__ import annotations

import os
import time

import pytest

from bindlab.ui import exports as ui_exports


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_exports_go_to_the_session_folder_and_leave_with_it(home):
    a = ui_exports.new_export_dir("abc123")
    b = ui_exports.new_export_dir("abc123")
    (a / "table.csv").write_text("x\n1\n")
    assert a != b and a.parent == b.parent == home / "exports" / "abc123"
    assert ui_exports.new_export_dir().parent == home / "exports" / ui_exports.NO_SESSION  # outside a request
    assert ui_exports.session_dir("../../etc") == home / "exports" / "______etc"  # never outside the root

    class Request:
        session_hash = "abc123"

    ui_exports.end_session(Request())
    assert not (home / "exports" / "abc123").exists()
    assert not ui_exports.delete_session("abc123")


def test_sweep_deletes_only_folders_older_than_the_age(home):
    root = home / "exports"
    old = ui_exports.new_export_dir("s1")
    (old / "fig.png").write_bytes(b"png")
    fresh = ui_exports.new_export_dir("s1")
    lonely = ui_exports.new_export_dir("s2")
    _age(old, 7200)
    _age(lonely, 7200)
    _age(root / "s2", 7200)
    assert ui_exports.sweep(root, older_than_s=3600) == 2
    assert not old.exists() and fresh.exists() and not lonely.exists()
    assert not (root / "s2").exists() and (root / "s1").is_dir()  # an emptied, old session folder goes too
    assert ui_exports.sweep(root, older_than_s=3600) == 0
    assert ui_exports.sweep(root, older_than_s=3600, now=time.time() + 7200) == 1  # later, the fresh one is old
    assert ui_exports.sweep(home / "missing") == 0


def test_sweep_age_comes_from_the_environment(home, monkeypatch):
    folder = ui_exports.new_export_dir("s")
    _age(folder, 120)
    monkeypatch.setenv("BINDLAB_EXPORT_MAX_AGE_S", "600")
    assert ui_exports.sweep() == 0
    monkeypatch.setenv("BINDLAB_EXPORT_MAX_AGE_S", "60")
    assert ui_exports.sweep() == 1
    monkeypatch.setenv("BINDLAB_EXPORT_MAX_AGE_S", "soon")
    with pytest.raises(ValueError, match="BINDLAB_EXPORT_MAX_AGE_S='soon' must be a number of seconds"):
        ui_exports.sweep()


def test_the_sweeper_thread_runs_once_per_process(home):
    t1 = ui_exports.start_sweeper(every_s=3600)
    assert t1.daemon and t1.is_alive() and ui_exports.start_sweeper() is t1
