"""evaluate_mcq embeds and scores a bounded chunk of questions at a time: never the whole file's vectors at once."""

from __future__ import annotations

import numpy as np
import pytest

import bindlab.eval.mcq as mcq
from bindlab.encoders.base import load_encoder


def test_chunks_are_honoured_and_change_no_result(small_benchmark, monkeypatch):
    path, qs = small_benchmark  # 54 questions
    enc = load_encoder("bow")
    whole, whole_rows = mcq.evaluate_mcq(qs, path.parent, enc, ["tt"], chunk=10_000)
    seen: list[int] = []
    real = mcq.embed_questions

    def spy(questions, root, encoder, modality):
        seen.append(len(questions))
        out = real(questions, root, encoder, modality)
        assert out[0].shape[0] == len(questions) <= 7  # only this chunk's vectors exist
        return out

    monkeypatch.setattr(mcq, "embed_questions", spy)
    fracs: list[float] = []
    chunked, rows = mcq.evaluate_mcq(qs, path.parent, enc, ["tt"], progress=lambda f, _m: fracs.append(f), chunk=7)
    assert seen == [7] * 7 + [5]
    assert chunked == whole
    assert [r["scores"] for r in rows] == [r["scores"] for r in whole_rows]
    assert fracs == sorted(fracs) and fracs[-1] == 1.0


def test_the_default_chunk_bounds_a_large_request(monkeypatch, small_benchmark):
    path, qs = small_benchmark
    assert mcq.SCORE_CHUNK == 256
    monkeypatch.setattr(mcq, "SCORE_CHUNK", 20)
    seen: list[int] = []
    real = mcq.embed_questions
    monkeypatch.setattr(mcq, "embed_questions", lambda q, r, e, m: (seen.append(len(q)), real(q, r, e, m))[1])
    mcq.evaluate_mcq(qs * 3, path.parent, load_encoder("bow"), ["tt"])
    assert seen == [20] * 8 + [2]


def test_a_chunk_below_one_is_refused(small_benchmark):
    path, qs = small_benchmark
    with pytest.raises(ValueError, match="chunk must be at least 1 question, got 0"):
        mcq.evaluate_mcq(qs, path.parent, load_encoder("bow"), ["tt"], chunk=0)
    assert np.isfinite(mcq.evaluate_mcq(qs[:3], path.parent, load_encoder("bow"), ["tt"], chunk=1)[0]["tt"]["accuracy"])
