"""Images on the page: a served file goes as its path; any other goes as a decoded copy written once, atomically.

The copy replaced handing Gradio a decoded PIL image, which Gradio wrote to a content-named file *in place*: the same
picture returned twice (a Grounding redraw, a question shown again) truncated the file while the browser was still
being sent it, and the server logged "Too little data for declared Content-Length".
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bindlab.config import home
from bindlab.data.files import DataError
from bindlab.studies import datasets


def _png(path: Path, color=(200, 30, 30), size=(24, 16), mode="RGB") -> Path:
    Image.new(mode, size, color).save(path)
    return path


def test_a_served_file_goes_as_its_own_path():
    served = home() / "data" / "shown-test"
    served.mkdir(parents=True, exist_ok=True)
    img = _png(served / "a.png")
    assert datasets.shown_image(img) == str(img)
    assert datasets.shown_image("") is None and datasets.shown_image(None) is None


def test_another_file_goes_as_a_decoded_copy_under_the_temp_folder(tmp_path):
    src = _png(tmp_path / "mine.png")
    shown = datasets.shown_image(src)
    assert shown != str(src) and Path(shown).is_file()
    assert Path(shown).resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())  # Gradio may copy from there
    with Image.open(shown) as a, Image.open(src) as b:
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_the_copy_is_written_once_and_never_rewritten(tmp_path):
    src = _png(tmp_path / "mine.png")
    first = datasets.shown_copy(src)
    inode, size = os.stat(first).st_ino, os.stat(first).st_size
    again = [datasets.shown_copy(src) for _ in range(3)]
    assert again == [first] * 3
    assert os.stat(first).st_ino == inode and os.stat(first).st_size == size  # the same file, untouched in content


def test_a_changed_source_gets_a_new_copy(tmp_path):
    src = _png(tmp_path / "mine.png")
    first = datasets.shown_copy(src)
    _png(src, color=(0, 0, 255), size=(30, 30))
    os.utime(src, ns=(os.stat(src).st_atime_ns, os.stat(src).st_mtime_ns + 10**9))
    second = datasets.shown_copy(src)
    assert second != first
    with Image.open(second) as im:
        assert im.size == (30, 30) and im.getpixel((0, 0)) == (0, 0, 255)


def test_modes_png_cannot_store_are_converted(tmp_path):
    src = tmp_path / "cmyk.jpg"
    Image.new("CMYK", (8, 8), (0, 255, 255, 0)).save(src)
    with Image.open(datasets.shown_copy(src)) as im:
        assert im.mode == "RGB"


def test_a_readers_view_of_a_copy_never_shrinks_while_it_is_handed_out_again(tmp_path):
    # what the browser saw: the server stats the file, then reads it; a rewrite in place in between sent less
    src = _png(tmp_path / "big.png", size=(256, 256))
    path = datasets.shown_copy(src)
    short: list[int] = []
    stop = threading.Event()

    def hand_out():
        while not stop.is_set():
            datasets.shown_copy(src)

    t = threading.Thread(target=hand_out)
    t.start()
    try:
        for _ in range(200):
            want = os.stat(path).st_size
            with open(path, "rb") as f:
                got = len(f.read())
            if got != want:
                short.append(got)
    finally:
        stop.set()
        t.join()
    assert not short


def test_bad_files_say_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    with pytest.raises(DataError, match="bad.png"):
        datasets.shown_copy(bad)
    with pytest.raises(DataError):
        datasets.shown_copy(tmp_path / "missing.png")
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.png"
        os.mkfifo(fifo)
        with pytest.raises(DataError):  # refused, never opened for reading (that would block)
            datasets.shown_copy(fifo)


def test_old_copies_are_swept(tmp_path):
    src = _png(tmp_path / "old.png")
    old = Path(datasets.shown_copy(src))
    past = os.stat(old).st_mtime - datasets.SHOWN_MAX_AGE_S - 10
    os.utime(old, (past, past))
    datasets._shown["swept"] = 0.0
    datasets._sweep_shown(old.parent)
    assert not old.exists()
    assert Path(datasets.shown_copy(src)).is_file()  # asked again: written again
