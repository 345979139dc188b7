"""Bounded, allow-listed file access (bindlab/data/files.py) and the limits in bindlab.config."""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
import tempfile
import zlib
from pathlib import Path

import pytest
from PIL import Image

from bindlab import config
from bindlab.data import files as F
from bindlab.data.files import DataError


def _bomb(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00" * 16))
        + chunk(b"IEND", b"")
    )


def test_resolve_allowed_same_message_for_existing_and_missing(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.jsonl").write_text("{}")
    assert F.resolve_allowed(root / "a.jsonl", [root]) == (root / "a.jsonl").resolve()
    assert F.resolve_allowed(root / "new.jsonl", [root]).name == "new.jsonl"  # need not exist
    messages = set()
    for outside in ["/etc/passwd", "/etc/no-such-file", str(root / ".." / "x"), "", "a\x00b"]:
        with pytest.raises(DataError) as e:
            F.resolve_allowed(outside, [root])
        messages.add(str(e.value))
    (root / "link").symlink_to("/etc/passwd")
    with pytest.raises(DataError) as e:
        F.resolve_allowed(root / "link", [root])
    messages.add(str(e.value))
    assert len(messages) == 1 and "passwd" not in messages.pop()


def test_default_roots_follow_public_mode(monkeypatch, tmp_path):
    monkeypatch.delenv("BINDLAB_DATA_ROOTS", raising=False)
    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.chdir(tmp_path)
    assert not config.public_mode() and tmp_path.resolve() in config.data_roots()
    monkeypatch.setenv("SPACE_ID", "user/space")
    assert config.public_mode() and tmp_path.resolve() not in config.data_roots()
    monkeypatch.setenv("BINDLAB_PUBLIC", "0")
    assert not config.public_mode()
    monkeypatch.setenv("BINDLAB_DATA_ROOTS", os.pathsep.join(["/srv/a", "/srv/b"]))
    assert config.data_roots() == (config.Path("/srv/a"), config.Path("/srv/b"))


def test_limits_env_and_public_defaults(monkeypatch):
    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    local = config.limits()
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    public = config.limits()
    assert public.max_batch_size < local.max_batch_size and public.max_epochs < local.max_epochs
    monkeypatch.setenv("BINDLAB_MAX_EPOCHS", "3")
    assert config.limits().max_epochs == 3
    monkeypatch.setenv("BINDLAB_MAX_EPOCHS", "many")
    with pytest.raises(ValueError, match="BINDLAB_MAX_EPOCHS"):
        config.limits()
    assert set(config.LIMIT_DEFAULTS) == {f.name for f in dataclasses.fields(config.Limits)}


def test_home_that_is_a_file_is_a_message(monkeypatch, tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    monkeypatch.setenv("BINDLAB_HOME", str(f))
    with pytest.raises(ValueError, match="not a folder"):
        config.home()


def test_non_regular_files_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    for path, what in [
        (fifo, "named pipe"),
        ("/dev/zero", "character device"),
        (tmp_path, "folder"),
        (tmp_path / "missing", "not found"),
    ]:
        with pytest.raises(DataError, match=what):
            F.read_text_bounded(path)


def test_size_and_line_caps(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text("{}\n" * 10)
    with pytest.raises(DataError, match="larger than"):
        F.read_text_bounded(p, max_bytes=5)
    with pytest.raises(DataError, match="more than 3 lines"):
        list(F.iter_jsonl_bounded(p, max_lines=3))
    assert len(list(F.iter_jsonl_bounded(p, max_lines=10))) == 10


@pytest.mark.parametrize(
    "line,message",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("[" * 80 + "]" * 80, "nested too deeply"),
        ('{"a": NaN}', "NaN is not allowed"),
        ('{"a": -Infinity}', "Infinity is not allowed"),
        ("{oops", "not valid JSON"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, line, message):
    p = tmp_path / "d.jsonl"
    p.write_text('{"ok": 1}\n' + line + "\n")
    (n1, ok), (n2, bad) = list(F.iter_jsonl_bounded(p))
    assert ok == {"ok": 1} and n2 == 2 and isinstance(bad, DataError)
    assert message in str(bad) and f"{p}:2" in str(bad)


def test_undecodable_bytes_name_the_file(tmp_path):
    p = tmp_path / "d.json"
    p.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(DataError, match="not UTF-8") as e:
        F.load_json_bounded(p)
    assert str(p) in str(e.value)


def test_top_level_must_be_an_object(tmp_path):
    p = tmp_path / "meta.json"
    p.write_text("[1, 2]")
    with pytest.raises(DataError, match="top level must be an object"):
        F.load_json_bounded(p, dict, "meta.json")
    assert F.load_json_bounded(p, list) == [1, 2]


def test_image_fields_stay_in_the_data_folder(tmp_path):
    (tmp_path / "img").mkdir()
    assert F.resolve_image_field(tmp_path, "img/a.png", "f:1") == (tmp_path / "img" / "a.png").resolve()
    (tmp_path / "out").symlink_to("/etc")
    for rel in ["../x.png", "/etc/passwd", "img/../../x.png", "out/passwd", "", "."]:
        with pytest.raises(DataError, match="f:1"):
            F.resolve_image_field(tmp_path, rel, "f:1")


def test_open_image_caps_pixels_and_names_bad_files(tmp_path):
    ok = tmp_path / "ok.png"
    Image.new("RGB", (4, 3), (1, 2, 3)).save(ok)
    assert F.open_image(ok).size == (4, 3)
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(_bomb(20000, 20000))
    with pytest.raises(DataError, match="above the cap") as e:
        F.open_image(bomb)
    assert str(bomb) in str(e.value)
    with pytest.raises(DataError, match="above the cap"):
        F.open_image(ok, max_pixels=10)
    trunc = tmp_path / "t.png"
    trunc.write_bytes(ok.read_bytes()[:50])
    junk = tmp_path / "j.png"
    junk.write_bytes(b"not an image at all")
    fifo = tmp_path / "f.png"
    os.mkfifo(fifo)
    for bad in (trunc, junk, fifo):
        with pytest.raises(DataError) as e:
            F.open_image(bad)
        assert str(bad) in str(e.value)


def test_local_use_reads_any_path_and_roots_apply_only_when_asked(monkeypatch, tmp_path):
    """On a person's own machine every path is theirs; $BINDLAB_DATA_ROOTS set explicitly, or public mode, brings the
    roots back (one message for every refused path)."""
    monkeypatch.delenv("BINDLAB_DATA_ROOTS", raising=False)
    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    outside = Path("/etc/hostname")
    assert F.resolve_allowed(outside) == Path(os.path.realpath(outside))
    monkeypatch.setenv("BINDLAB_DATA_ROOTS", str(tmp_path))
    with pytest.raises(F.DataError, match=F.REFUSED):
        F.resolve_allowed(outside)
    assert F.resolve_allowed(tmp_path / "a.jsonl") == (tmp_path / "a.jsonl").resolve()
    monkeypatch.delenv("BINDLAB_DATA_ROOTS")
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    with pytest.raises(F.DataError, match=F.REFUSED):
        F.resolve_allowed(outside)


def test_the_readme_cli_example_writes_and_reads_outside_the_checkout(tmp_path):
    """`generate saber --out DIR` then `eval mcq --data DIR/mcq.jsonl` from a folder outside the checkout, with no
    BINDLAB_DATA_ROOTS: the file generate wrote is the file eval reads."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("BINDLAB_DATA_ROOTS", "BINDLAB_PUBLIC")}
    work = Path(tempfile.mkdtemp(dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None))
    try:
        for args in (
            ["generate", "saber", "--out", str(work / "s"), "--per-size", "2"],
            ["eval", "mcq", "--data", str(work / "s" / "mcq.jsonl"), "--model", "bow", "--out", str(work / "r.json")],
        ):
            r = subprocess.run(
                [sys.executable, "-m", "bindlab", *args], cwd=work, env=env, capture_output=True, text=True, timeout=300
            )
            assert r.returncode == 0, r.stderr
        assert (work / "r.json").is_file()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_build_once_builds_once_across_threads_and_processes(tmp_path):
    """Two processes and two threads ask for one target at once: one builds, the others wait and find it."""
    import subprocess
    import sys
    import threading

    target = tmp_path / "set" / "data.jsonl"
    script = (
        "import sys, time\nfrom pathlib import Path\nfrom bindlab.data.files import build_once\n"
        "t = Path(sys.argv[1])\n"
        "def build():\n    t.parent.mkdir(parents=True, exist_ok=True)\n"
        "    with open(t.parent.parent / 'builds', 'a') as f: f.write('x')\n"
        "    time.sleep(1.0)\n    t.write_text('done')\n"
        "build_once(t, build)\nassert t.read_text() == 'done'\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(target)]) for _ in range(2)]

    def build_here() -> None:
        import time

        target.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp_path / "builds", "a") as f:
            f.write("t")
        time.sleep(1.0)
        target.write_text("done")

    from bindlab.data.files import build_once

    threads = [threading.Thread(target=build_once, args=(target, build_here)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert len((tmp_path / "builds").read_text()) == 1 and target.read_text() == "done"


def test_default_benchmark_an_older_bindlab_built_is_rebuilt(tmp_path, monkeypatch):
    """A home whose embedded text benchmark was written before the current text format (e.g. "a scissors") gets
    it rebuilt on first use, and a current one is read as it is."""
    import json

    from bindlab.data.saber import TEXT_FORMAT
    from bindlab.studies.common import default_dataset

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path))
    path = default_dataset()
    meta = json.loads((path.parent / "meta.json").read_text())
    assert meta["text_format"] == TEXT_FORMAT
    assert "a pair of" in path.read_text().lower() and " a scissors" not in path.read_text().lower()
    stamp = path.stat().st_mtime_ns
    assert default_dataset().stat().st_mtime_ns == stamp  # current: not rebuilt
    meta.pop("text_format")
    (path.parent / "meta.json").write_text(json.dumps(meta))
    path.write_text(path.read_text().replace("a pair of ", "a "))
    rebuilt = default_dataset()
    assert "a pair of" in rebuilt.read_text().lower()
    assert json.loads((rebuilt.parent / "meta.json").read_text())["text_format"] == TEXT_FORMAT
