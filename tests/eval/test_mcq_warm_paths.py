"""The warm MCQ path's shortcuts give what the plain path gives: the remembered parse of a file, the unknown-word
lists of a whole caption set in one cache row, and the accuracy-by-N intervals from numpy masks."""

from __future__ import annotations

import sqlite3

import numpy as np

from bindlab.data.schema import load_mcqs, load_mcqs_memo
from bindlab.encoders.base import load_encoder, unknown_words
from bindlab.encoders.cache import EmbeddingCache, word_set_key
from bindlab.eval.metrics import bootstrap_ci


def test_a_remembered_file_gives_the_loaders_questions_and_a_changed_file_is_read_again(small_benchmark, tmp_path):
    src, _ = small_benchmark
    path = tmp_path / "mcq.jsonl"
    lines = src.read_text().splitlines(keepends=True)
    path.write_text("".join(lines))
    plain, report = load_mcqs(path)
    first, first_report = load_mcqs_memo(path)
    second, _ = load_mcqs_memo(path)
    assert first == plain and first_report == report
    assert all(a is b for a, b in zip(first, second, strict=True))  # parsed once
    assert first is not second  # each caller gets its own list
    path.write_text("".join(lines[:5]))  # same path, new content
    changed, changed_report = load_mcqs_memo(path)
    assert changed == load_mcqs(path)[0] and len(changed) == 5 and changed_report.n_loaded == 5
    lax, _ = load_mcqs_memo(path, strict=False)  # strict is part of the key
    assert lax == changed and lax[0] is not changed[0]


def test_a_caption_set_row_gives_the_tokenizers_answers_and_a_damaged_row_is_ignored(tmp_path, monkeypatch):
    from bindlab.eval.mcq import unknown_words_of_set

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    texts = ["A red cube and a blue sphere.", "A ☃ snowman ⟁ next to a cube.", "A red cube and a blue sphere."]
    encoder = load_encoder("minilm")
    expected = unknown_words(encoder, texts)
    assert any(expected)
    assert unknown_words_of_set(encoder, texts) == expected  # computed, then stored as one row
    key = word_set_key(encoder.tokenizer_fingerprint, texts)
    cache_path = tmp_path / "home" / "cache" / "embeddings.sqlite"
    assert EmbeddingCache(cache_path).get_word_set(key, len(texts)) == expected
    fresh = load_encoder("minilm")
    assert unknown_words_of_set(fresh, texts) == expected and fresh._tokenizer is None  # read, not tokenized
    assert word_set_key(encoder.tokenizer_fingerprint, texts[1:] + texts[:1]) != key  # order matters
    conn = sqlite3.connect(cache_path)
    conn.execute("UPDATE unk SET words = '[[\"x\"]]' WHERE key = ?", (key,))  # wrong length
    conn.commit()
    conn.close()
    damaged = EmbeddingCache(cache_path)
    assert damaged.get_word_set(key, len(texts)) is None and damaged.corrupt_seen == 1
    assert unknown_words_of_set(load_encoder("minilm"), texts) == expected  # recomputed from the per-text rows


def test_accuracy_by_n_intervals_equal_a_loop_over_the_rows():
    from bindlab.tasks.saber import accuracy_by_n_rows as _accuracy_by_n

    rng = np.random.default_rng(0)
    rows = [
        {
            "pairing": p,
            "n_objects": int(rng.integers(2, 6)),
            "subset": str(rng.choice(["independent", "nested"])),
            "credit": float(rng.choice([0.0, 0.5, 1.0])),
            "chance": 0.25,
        }
        for p in ("tt", "ti")
        for _ in range(300)
    ]
    out = _accuracy_by_n(rows, "tt")
    tt = [r for r in rows if r["pairing"] == "tt"]
    assert {(r["subset"], r["n_objects"]) for r in out} == {
        (s, r["n_objects"]) for r in tt for s in ("all", r["subset"])
    }
    for row in out:
        credit = [
            r["credit"] for r in tt if r["n_objects"] == row["n_objects"] and row["subset"] in ("all", r["subset"])
        ]
        assert row["n"] == len(credit) and row["accuracy"] == np.mean(credit)
        assert (row["ci95_low"], row["ci95_high"]) == bootstrap_ci(np.asarray(credit))
