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
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for tag in ("p1", "p2")]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    cache = EmbeddingCache(path)
    assert cache.count() == 50 + 2 * 40 * 5
    assert cache.corrupt_seen == 0
    got = cache.get_many([f"p1-{r}-{i}" for r in range(40) for i in range(5)])
    assert len(got) == 200
