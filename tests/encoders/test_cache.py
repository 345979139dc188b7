"""The persistent embedding cache: reuse across processes, concurrent writers, corrupt entries."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import numpy as np

from bindlab.encoders.cache import EmbeddingCache, content_key


def test_get_or_compute_computes_only_missing(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    calls = []

    def compute(idx):
        calls.append(list(idx))
        return np.array([[float(i), 1.0] for i in idx], np.float32)

    keys = ["a", "b", "a", "c"]
    v, n = cache.get_or_compute(keys, compute)
    assert n == 3 and calls == [[0, 1, 3]]
    np.testing.assert_array_equal(v[0], v[2])
    v2, n2 = cache.get_or_compute(keys, compute)
    assert n2 == 0 and len(calls) == 1
    np.testing.assert_array_equal(v, v2)


def test_key_depends_on_every_part():
    base = content_key("fp", "text", "red cube", "")
    assert base != content_key("fp2", "text", "red cube", "")
    assert base != content_key("fp", "image", "red cube", "")
    assert base != content_key("fp", "text", "red cube", "instr")
    assert base != content_key("fp", "text", "blue cube", "")


def test_corrupt_entry_is_recomputed_not_served(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many({"k": np.array([1, 2, 3], np.float32)})
    con = sqlite3.connect(path)
    con.execute("UPDATE emb SET vec = ? WHERE key = 'k'", (b"\x00" * 12,))  # bytes no longer match the checksum
    con.commit()
    con.close()
    fresh = EmbeddingCache(path)
    v, n = fresh.get_or_compute(["k"], lambda idx: np.array([[7, 8, 9]], np.float32))
    assert n == 1 and v[0].tolist() == [7, 8, 9]
    assert fresh.corrupt_seen == 1
    assert fresh.get_many(["k"])["k"].tolist() == [7, 8, 9]  # overwritten with the good value


def test_unreadable_database_is_moved_aside(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a sqlite database" * 100)
    cache = EmbeddingCache(path)
    cache.put_many({"k": np.ones(4, np.float32)})
    assert cache.count() == 1
    assert list(tmp_path.glob("c.sqlite.corrupt-*"))


WRITER = textwrap.dedent("""
    import sys, numpy as np
    from bindlab.encoders.cache import EmbeddingCache
    path, tag = sys.argv[1], sys.argv[2]
    cache = EmbeddingCache(path)
    for r in range(40):
        keys = [f"shared-{i}" for i in range(50)] + [f"{tag}-{r}-{i}" for i in range(5)]
        vecs, _ = cache.get_or_compute(keys, lambda idx: np.stack([np.full(8, len(keys[i]), np.float32) for i in idx]))
        assert vecs.shape == (55, 8)
    print("ok")
""")


def test_two_processes_write_at_once(tmp_path):
    path = tmp_path / "shared.sqlite"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), tag], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for tag in ("p1", "p2")
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    cache = EmbeddingCache(path)
    assert cache.count() == 50 + 2 * 40 * 5
    assert cache.corrupt_seen == 0
    got = cache.get_many([f"p1-{r}-{i}" for r in range(40) for i in range(5)])
    assert len(got) == 200


# -- never lose or poison data --------------------------------------------------------------------------------
def _poison_row(path, key, vec):
    """Store a vector straight into the file with a valid checksum, as a buggy writer once did."""
    import zlib

    blob = np.asarray(vec, np.float32).tobytes()
    con = sqlite3.connect(path)
    con.execute("INSERT OR REPLACE INTO emb VALUES (?, ?, ?, ?, 0)", (key, len(blob) // 4, zlib.crc32(blob), blob))
    con.commit()
    con.close()


def test_put_refuses_zero_and_non_finite_vectors(tmp_path):
    import pytest

    cache = EmbeddingCache(tmp_path / "c.sqlite")
    for bad in (np.zeros(4), np.array([1, np.nan, 0, 0]), np.array([np.inf, 1, 1, 1])):
        with pytest.raises(ValueError, match="zero or non-finite"):
            cache.put_many({"good": np.ones(4, np.float32), "bad": bad})
    assert cache.count() == 0  # nothing stored, not even the good row of a refused batch


def test_poisoned_rows_are_treated_as_missing_and_recomputed(tmp_path):
    path = tmp_path / "c.sqlite"
    EmbeddingCache(path).put_many({"x": np.ones(3, np.float32)})
    _poison_row(path, "zero", np.zeros(3))
    _poison_row(path, "nan", [np.nan, 1, 1])
    cache = EmbeddingCache(path)
    assert set(cache.get_many(["zero", "nan", "x"])) == {"x"}
    v, n = cache.get_or_compute(["zero", "nan"], lambda idx: np.array([[1, 0, 0], [0, 1, 0]], np.float32))
    assert n == 2 and v.tolist() == [[1, 0, 0], [0, 1, 0]]
    assert EmbeddingCache(path).get_many(["zero"])["zero"].tolist() == [1, 0, 0]  # overwritten with the good value


def test_zero_vectors_from_the_encoder_raise_and_are_not_cached(tmp_path):
    import pytest

    from bindlab.encoders.base import EncoderError

    cache = EmbeddingCache(tmp_path / "c.sqlite")
    with pytest.raises(EncoderError, match=r"1 zero or non-finite vector\(s\) out of 2 \(first: input #1\)"):
        cache.get_or_compute(["a", "b"], lambda idx: np.array([[1, 2], [0, 0]], np.float32))
    assert set(cache.get_many(["a", "b"])) == {"a"}  # the good one was kept, the zero one never stored


def test_negative_batch_size_is_refused_before_anything_is_embedded(tmp_path, tiny_id):
    import pytest

    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.service import embed_texts, get_encoder

    for bad in (-1, 0, 2.5, True, "x"):
        with pytest.raises(ValueError, match="batch_size must be a positive integer"):
            load_encoder(tiny_id("st"), batch_size=bad)
        with pytest.raises(ValueError, match="batch_size must be a positive integer"):
            get_encoder(tiny_id("st"), batch_size=bad)
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    vecs = embed_texts(load_encoder(tiny_id("st"), batch_size=1), ["a red cube", "a blue sphere"], cache=cache)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)


def _garble_pages(path):
    with open(path, "r+b") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(4096)  # keep page 1 (the header and schema): the file still opens, its pages do not read
        f.write(bytes((i * 37 + 11) % 256 for i in range(size - 4096)))


def test_malformed_database_is_moved_aside_and_rebuilt(tmp_path, caplog):
    path = tmp_path / "c.sqlite"
    cache = EmbeddingCache(path)
    cache.put_many({f"k{i}": np.full(384, i + 1, np.float32) for i in range(300)})
    cache.close()
    _garble_pages(path)
    con = sqlite3.connect(path)
    try:
        con.execute("SELECT vec FROM emb").fetchall()
        raise AssertionError("the garbled file still reads")
    except sqlite3.DatabaseError as e:
        assert "malformed" in str(e)
    finally:
        con.close()

    cache = EmbeddingCache(path)
    with caplog.at_level("WARNING", logger="bindlab.encoders.cache"):
        v, n = cache.get_or_compute(["k1", "new"], lambda idx: np.ones((len(idx), 384), np.float32))
    assert n == 2 and v.shape == (2, 384)
    assert cache.rebuilt == 1 and cache.memory_only is None
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "moved it aside" in warnings[0].getMessage()
    assert list(tmp_path.glob("c.sqlite.corrupt-*"))
    assert EmbeddingCache(path).count() == 2  # a fresh, working file: the new rows are on disk


def test_garbled_header_warns_once(tmp_path, caplog):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a sqlite database" * 100)
    with caplog.at_level("WARNING", logger="bindlab.encoders.cache"):
        cache = EmbeddingCache(path)
        cache.put_many({"k": np.ones(4, np.float32)})
        assert cache.count() == 1
    assert sum(r.levelname == "WARNING" for r in caplog.records) == 1


def test_full_disk_keeps_vectors_in_memory_and_the_run_finishes(tmp_path, monkeypatch, caplog):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cache.put_many({"old": np.ones(2, np.float32)})

    def full(conn, rows):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(EmbeddingCache, "_write", staticmethod(full))
    calls = []

    def compute(idx):
        calls.append(idx)
        return np.array([[float(i) + 1, 1.0] for i in idx], np.float32)

    with caplog.at_level("WARNING", logger="bindlab.encoders.cache"):
        for _ in range(3):
            v, _n = cache.get_or_compute(["a", "b", "c"], compute)
    assert len(calls) == 1 and v.tolist() == [[1, 1], [2, 1], [3, 1]]  # kept in memory, computed once
    msgs = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(msgs) == 1 and "disk is full" in msgs[0] and "kept in memory" in msgs[0]
    assert cache.memory_only


def test_unwritable_folder_falls_back_to_memory(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    with caplog.at_level("WARNING", logger="bindlab.encoders.cache"):
        cache = EmbeddingCache(blocker / "cache" / "c.sqlite")
        v, n = cache.get_or_compute(["a"], lambda idx: np.ones((1, 3), np.float32))
        v2, n2 = cache.get_or_compute(["a"], lambda idx: np.zeros((1, 3), np.float32))
    assert (n, n2) == (1, 0) and v.tolist() == v2.tolist() == [[1, 1, 1]]
    assert sum(r.levelname == "WARNING" for r in caplog.records) == 1


def test_read_only_database_keeps_serving_and_computes_in_memory(tmp_path, monkeypatch, caplog):
    path = tmp_path / "c.sqlite"
    EmbeddingCache(path).put_many({"old": np.ones(2, np.float32)})
    real_connect = sqlite3.connect

    def read_only(db, *a, **kw):  # what a read-only mount does (chmod does not stop root, who runs the tests)
        conn = real_connect(f"file:{db}?mode=ro", *a, uri=True, **kw)
        return conn

    monkeypatch.setattr(sqlite3, "connect", read_only)
    cache = EmbeddingCache(path)
    with caplog.at_level("WARNING", logger="bindlab.encoders.cache"):
        v, n = cache.get_or_compute(["new"], lambda idx: np.ones((1, 2), np.float32))
    assert n == 1 and v.tolist() == [[1, 1]]
    assert cache.memory_only and sum(r.levelname == "WARNING" for r in caplog.records) == 1
