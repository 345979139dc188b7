"""The cache's bulk paths: one query for many keys, rows checked together, unknown words cached by tokenizer."""

from __future__ import annotations

import sqlite3
import zlib

import numpy as np

from bindlab.encoders.cache import EmbeddingCache, content_key, content_keys, word_keys
from bindlab.encoders.service import unknown_words_cached


def test_content_keys_are_content_key_of_each_item():
    items = ["a red cube", "", "ünïcode ✓", b"\x00\xffbytes"]
    assert content_keys("fp", "text", items, "inst") == [content_key("fp", "text", x, "inst") for x in items]
    assert content_keys("fp", "text", items) != content_keys("fp2", "text", items)


def test_many_keys_are_read_in_one_query(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    keys = [f"k{i}" for i in range(3000)]  # more than one old 500-key chunk
    vecs = np.random.default_rng(0).standard_normal((3000, 8)).astype(np.float32)
    cache.put_many(dict(zip(keys, vecs, strict=True)))
    selects: list[str] = []
    cache._conn().set_trace_callback(lambda sql: selects.append(sql) if sql.startswith("SELECT") else None)
    found = cache.get_many(keys + ["missing"])
    assert len(selects) == 1
    assert set(found) == set(keys)
    np.testing.assert_array_equal(np.stack([found[k] for k in keys]), vecs)


def test_damaged_rows_in_a_bulk_read_are_missing_and_counted(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = EmbeddingCache(path)
    good = {f"g{i}": np.full(4, i + 1.0, np.float32) for i in range(50)}
    cache.put_many(good)
    conn = sqlite3.connect(path)
    nan = np.array([1, np.nan, 0, 0], np.float32).tobytes()
    zero = np.zeros(4, np.float32).tobytes()
    short = np.ones(3, np.float32).tobytes()
    conn.executemany(
        "INSERT INTO emb VALUES (?, ?, ?, ?, 0)",
        [
            ("nan", 4, zlib.crc32(nan), nan),
            ("zero", 4, zlib.crc32(zero), zero),
            ("badcrc", 4, 12345, np.ones(4, np.float32).tobytes()),
            ("short", 4, zlib.crc32(short), short),
            ("dim8", 8, zlib.crc32(np.ones(8, np.float32).tobytes()), np.ones(8, np.float32).tobytes()),
        ],
    )
    conn.commit()
    conn.close()
    found = cache.get_many(["nan", "zero", "badcrc", "short", "dim8", *good])
    assert set(found) == {"dim8", *good}
    assert cache.corrupt_seen == 4
    assert found["dim8"].shape == (8,) and found["g3"][0] == 4.0


def test_unknown_words_are_stored_and_read_back(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    keys = word_keys("tok", ["a b", "c d", "e"])
    cache.put_words({keys[0]: [], keys[1]: ["d", "ü"]})
    assert cache.get_words(keys) == {keys[0]: [], keys[1]: ["d", "ü"]}
    assert EmbeddingCache(tmp_path / "c.sqlite").get_words(keys[:2]) == {keys[0]: [], keys[1]: ["d", "ü"]}
    conn = sqlite3.connect(tmp_path / "c.sqlite")
    conn.execute("UPDATE unk SET words = 'not json' WHERE key = ?", (keys[1],))
    conn.commit()
    conn.close()
    fresh = EmbeddingCache(tmp_path / "c.sqlite")
    assert fresh.get_words(keys) == {keys[0]: []} and fresh.corrupt_seen == 1


def test_minilm_unknown_words_are_tokenized_once(tmp_path):
    from bindlab.encoders.base import load_encoder, unknown_words

    cache = EmbeddingCache(tmp_path / "c.sqlite")
    texts = ["A red cube and a blue sphere.", "A ☃ snowman ⟁ next to a cube.", "A red cube and a blue sphere."]
    first = load_encoder("minilm")
    expected = unknown_words(first, texts)
    assert unknown_words_cached(first, texts, cache) == expected
    assert any(expected)  # the symbols are unknown to MiniLM's WordPiece vocabulary
    again = load_encoder("minilm")  # a fresh instance: nothing loaded yet
    assert again.tokenizer_fingerprint == first.tokenizer_fingerprint
    assert unknown_words_cached(again, texts, cache) == expected
    assert again._tokenizer is None and again._model is None  # answered from the cache alone
    other = load_encoder("minilm", max_seq_length=8)  # another token limit: another tokenizer fingerprint
    assert other.tokenizer_fingerprint != first.tokenizer_fingerprint
