"""SABER MCQ evaluation: embed questions once per modality, score every pairing, aggregate by N and subset.

A pairing ``XY`` puts the query in modality X and the candidates in modality Y (t = text, i = image).
:func:`evaluate_mcq` embeds and scores :data:`SCORE_CHUNK` questions at a time and keeps only their ``(q, 4)``
scores, so its memory does not grow with the file: 5,000 questions with ``bow`` (4,096 dimensions) would otherwise
hold ~410 MB per copy of the vectors.

**Chance is per question** (:func:`question_chance`): a question's chance level is the expected credit of a model
blind to binding, one that knows which attributes and objects each candidate holds but not which attribute goes with
which object. It ties among the candidates with the right answer's attributes and objects, so a question's chance
is 1/t for t such candidates: 1/4 for N >= 3 (all four candidates hold the query's words), 1/3 for N = 2 (the
``replace`` candidate has a word the query lacks). The chance of an accuracy is the mean of its questions' chance,
ties included, so the bag-of-words baseline (``bow``) scores exactly chance: (1/3 + 8 x 1/4) / 9 = 0.259 on the
embedded default (the same number of questions at each N = 2..10), not 0.25.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.data.files import gc_paused
from bindlab.data.saber_images import require_images
from bindlab.data.schema import MCQ, Item
from bindlab.data.toy_vocab import WORD_RE
from bindlab.data.vocab import tokens
from bindlab.encoders.base import Encoder, EncoderError
from bindlab.encoders.cache import word_set_key
from bindlab.encoders.service import (
    default_cache,
    embed_image_files,
    embed_texts,
    expect_work,
    unknown_words_cached,
)
from bindlab.eval.metrics import bootstrap_ci, chance_label, mcq_credit, tie_chance

PAIRINGS: dict[str, tuple[str, str]] = {
    "tt": ("text", "text"),
    "ti": ("text", "image"),
    "it": ("image", "text"),
    "ii": ("image", "image"),
}

Progress = Callable[[float, str], None]
TOP_UNKNOWN = 20  # unknown words listed by count in a result
SCORE_CHUNK = 256  # questions embedded and scored at once: 1,280 texts, ~21 MB of float32 at 4,096 dimensions


def parse_pairings(spec: str | Sequence[str]) -> list[str]:
    """``"tt,ti"`` -> ``["tt", "ti"]``; raises ValueError listing the valid pairings."""
    parts = [p.strip().lower() for p in (spec.split(",") if isinstance(spec, str) else spec) if p.strip()]
    bad = [p for p in parts if p not in PAIRINGS]
    if bad or not parts:
        raise ValueError(f"unknown pairing(s) {bad or spec!r}; choose from {list(PAIRINGS)} (comma-separated)")
    return list(dict.fromkeys(parts))


def embed_questions(
    questions: Sequence[MCQ], root: str | Path, encoder: Encoder, modality: str
) -> tuple[np.ndarray, np.ndarray]:
    """Embed every query and candidate of ``questions`` in one modality, in one cached batch.

    Returns:
        ``(queries (q, d), candidates (q, 4, d))``.
    """
    items = [it for q in questions for it in (q.query, *q.candidates)]
    if modality == "text":
        vecs = embed_texts(encoder, [it.text for it in items])
    elif modality == "image":
        require_images(questions, root)  # names every missing file before any model runs
        vecs = embed_image_files(encoder, [Path(root) / it.image for it in items])
    else:
        raise ValueError(f"unknown modality {modality!r}")
    vecs = vecs.reshape(len(questions), 5, -1)
    return vecs[:, 0], vecs[:, 1:]


def score_mcq(queries: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Cosine scores of unit vectors: ``(q, d)`` x ``(q, 4, d)`` -> ``(q, 4)``."""
    return np.einsum("qd,qkd->qk", queries, candidates)


def content_key(item: Item, by_bindings: bool) -> tuple[tuple[str, ...], ...]:
    """What a model blind to binding sees of a query or candidate: its attributes and its objects, each as a sorted
    multiset (``by_bindings``), or else the sorted bag of its content words (:func:`bindlab.data.vocab.tokens`,
    the words ``bow`` counts)."""
    if by_bindings:
        attributes, objects = zip(*item.bindings, strict=True)
        return tuple(sorted(attributes)), tuple(sorted(objects))
    return (tuple(sorted(tokens(item.text))),)


def question_chance(questions: Sequence[MCQ]) -> np.ndarray:
    """Each question's own chance level (ties included): 1/t, where t candidates hold the same attributes and objects
    as the right answer and differ from it only in which attribute goes with which object.

    This is the expected credit (:func:`bindlab.eval.metrics.mcq_credit`) of a model blind to binding: it tells
    candidates with other words apart (the N = 2 ``replace`` candidate) but ties among the t. For SABER questions
    t = 4 at N >= 3 and t = 3 at N = 2, so the chance of an accuracy, the mean over its questions, is 0.25 only when
    no question has N = 2. Candidates are compared by their bindings when every item of the question has bindings,
    else by the bag of content words of their captions (:func:`content_key`); a ``bow`` model therefore scores
    exactly this on text questions whose right answer has the query's words.

    Returns:
        ``(q,)`` float64 in (0, 1].
    """
    if not questions:
        return np.zeros(0)
    groups = []
    with gc_paused():  # many small tuples, no cycles
        for q in questions:
            by_bindings = all(it.bindings for it in (q.query, *q.candidates))
            keys: dict[Any, int] = {}
            groups.append([keys.setdefault(content_key(c, by_bindings), len(keys)) for c in q.candidates])
    return tie_chance(np.array(groups, dtype=np.int64), np.array([q.answer for q in questions]))


def summarize(credit: np.ndarray, questions: Sequence[MCQ], chance: np.ndarray | None = None) -> dict[str, Any]:
    """Accuracy overall, by number of objects and by subset, with a bootstrap 95 % interval and the chance level
    of each (the mean of its questions' :func:`question_chance`; computed here when ``chance`` is None).

    Returns:
        ``{"accuracy", "ci95", "by_n", "by_subset", "n", "chance", "vs_chance"`` (above / at / below chance by the
        interval, :func:`bindlab.eval.metrics.chance_label`), ``"chance_by_n", "chance_by_subset"}``.
    """
    chance = question_chance(questions) if chance is None else np.asarray(chance, dtype=np.float64)
    if len(credit) != len(questions) or len(chance) != len(questions):
        raise ValueError(f"{len(questions)} questions but {len(credit)} credits and {len(chance)} chance levels")
    by_n: dict[str, list[int]] = defaultdict(list)
    by_subset: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        by_n[str(q.n_objects)].append(i)
        by_subset[q.subset].append(i)
    lo, hi = bootstrap_ci(credit)
    credit = np.asarray(credit, dtype=np.float64)
    by_n = dict(sorted(by_n.items(), key=lambda kv: int(kv[0])))
    by_subset = dict(sorted(by_subset.items()))
    mean_chance = float(np.mean(chance)) if len(chance) else 0.25
    return {
        "accuracy": float(np.mean(credit)),
        "ci95": [lo, hi],
        "by_n": {k: float(np.mean(credit[v])) for k, v in by_n.items()},
        "by_subset": {k: float(np.mean(credit[v])) for k, v in by_subset.items()},
        "n": int(len(credit)),
        "chance": mean_chance,
        "vs_chance": chance_label(lo, hi, mean_chance),
        "chance_by_n": {k: float(np.mean(chance[v])) for k, v in by_n.items()},
        "chance_by_subset": {k: float(np.mean(chance[v])) for k, v in by_subset.items()},
    }


def item_rows(
    questions: Sequence[MCQ], scores: np.ndarray, credit: np.ndarray, pairing: str, chance: np.ndarray | None = None
) -> list[dict[str, Any]]:
    """Per-question result rows (``eval mcq --per-item``, the Browse export): id, pairing, N, subset, roles, scores,
    answer, predicted (argmax), credit and the question's chance level (:func:`question_chance`). ``scores`` is
    ``(q, 4)``, ``credit`` and ``chance`` ``(q,)``."""
    chance = question_chance(questions) if chance is None else chance
    scores = np.asarray(scores)
    predicted = np.argmax(scores, axis=1).tolist() if len(scores) else []
    return [
        {
            "id": q.id,
            "pairing": pairing,
            "n_objects": q.n_objects,
            "subset": q.subset,
            "roles": [x.role for x in q.candidates],
            "scores": s,
            "answer": q.answer,
            "predicted": p,
            "credit": c,
            "chance": ch,
        }
        for q, s, p, c, ch in zip(
            questions,
            scores.tolist(),
            predicted,
            np.asarray(credit, dtype=np.float64).tolist(),
            np.asarray(chance, dtype=np.float64).tolist(),
            strict=True,
        )
    ]


def accuracy_by_n(
    n_objects: Sequence[int], subsets: Sequence[str], credit: Sequence[float], chance: Sequence[float] | None = None
) -> list[dict[str, Any]]:
    """Rows ``{n_objects, subset, accuracy, n}`` per (subset, N), subset ``all`` first, for the accuracy-by-N chart;
    with ``chance`` (each question's :func:`question_chance`) each row also has its ``chance``, their mean.

    Args:
        n_objects, subsets, credit, chance: one entry per question.
    """
    rows = []
    n_arr = np.asarray(n_objects, dtype=np.int64).reshape(-1)
    sub_arr = np.asarray(list(subsets), dtype=object)
    credit_arr = np.asarray(credit, dtype=np.float64).reshape(-1)
    chance_arr = None if chance is None else np.asarray(chance, dtype=np.float64).reshape(-1)
    if not len(n_arr) == len(sub_arr) == len(credit_arr) or (chance_arr is not None and len(chance_arr) != len(n_arr)):
        raise ValueError("n_objects, subsets, credit and chance need one entry per question")
    for subset in ("all", "independent", "nested"):
        in_subset = np.ones(len(n_arr), bool) if subset == "all" else sub_arr == subset
        for n in sorted(set(n_arr.tolist())):
            sel = in_subset & (n_arr == n)
            if sel.any():
                row = {
                    "n_objects": n,
                    "subset": subset,
                    "accuracy": float(np.mean(credit_arr[sel])),
                    "n": int(sel.sum()),
                }
                if chance_arr is not None:
                    row["chance"] = float(np.mean(chance_arr[sel]))
                rows.append(row)
    return rows


def unknown_word_summary(
    texts: Sequence[str], unknown: Sequence[Sequence[str]], per_question: int = 5, top: int = TOP_UNKNOWN
) -> dict[str, Any]:
    """How many words of the texts a model does not know (maps to its unknown token), and which.

    Args:
        texts: the texts, ``per_question`` per question, the query first (``(q * per_question,)``).
        unknown: per text, the words the model does not know (an encoder's ``unknown_words``).
        per_question: texts per question (query + candidates).
        top: how many of the most frequent unknown words to list.

    Returns:
        ``{"share", "query_share", "candidate_share"`` (unknown words / words: all texts, queries, candidates; words
        as :data:`bindlab.data.toy_vocab.WORD_RE` splits them), ``"n_words", "n_unknown", "questions_with_unknown",
        "n_questions", "top": [{"word", "count"}]}`` (lower-cased, most frequent first, ties alphabetical).
    """
    if len(texts) != len(unknown):
        raise ValueError(f"{len(texts)} texts but {len(unknown)} unknown-word lists")
    words = np.array([len(WORD_RE.findall(t)) for t in texts], dtype=np.int64)  # (q * per_question,)
    unk = np.array([len(u) for u in unknown], dtype=np.int64)
    is_query = np.arange(len(texts)) % per_question == 0
    counts: dict[str, int] = defaultdict(int)
    for u in unknown:
        for w in u:
            counts[w.lower()] += 1

    def share(mask: np.ndarray) -> float:
        return float(unk[mask].sum() / words[mask].sum()) if words[mask].sum() else 0.0

    n_q = len(texts) // per_question
    return {
        "share": share(np.ones(len(texts), bool)),
        "query_share": share(is_query),
        "candidate_share": share(~is_query),
        "n_words": int(words.sum()),
        "n_unknown": int(unk.sum()),
        "questions_with_unknown": int((unk[: n_q * per_question].reshape(n_q, per_question).sum(1) > 0).sum()),
        "n_questions": n_q,
        "top": [{"word": w, "count": c} for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]],
    }


def unknown_word_report(questions: Sequence[MCQ], encoder: Encoder) -> dict[str, Any] | None:
    """:func:`unknown_word_summary` of every query and candidate caption, or None when the encoder cannot say which
    words it does not know (it has no ``unknown_words`` method). The answers are cached by tokenizer and text
    (:func:`bindlab.encoders.service.unknown_words_cached`): a second run over the same captions tokenizes none."""
    texts = [it.text for q in questions for it in (q.query, *q.candidates)]
    with gc_paused():  # one list per caption, no cycles
        unknown = unknown_words_of_set(encoder, texts)
        return None if unknown is None else unknown_word_summary(texts, unknown, per_question=5)


def unknown_words_of_set(encoder: Encoder, texts: Sequence[str]) -> list[list[str]] | None:
    """:func:`bindlab.encoders.service.unknown_words_cached` of ``texts``, with the whole answer kept as one cache row
    by (tokenizer fingerprint, the texts in order) (:func:`bindlab.encoders.cache.word_set_key`): a run over the
    captions of a file seen before reads one row instead of looking each caption up."""
    fingerprint = getattr(encoder, "tokenizer_fingerprint", None)
    if not isinstance(fingerprint, str) or not fingerprint or getattr(encoder, "unknown_words", None) is None:
        return unknown_words_cached(encoder, texts)
    cache = default_cache()
    key = word_set_key(fingerprint, texts)
    known = cache.get_word_set(key, len(texts))
    if known is not None:
        return known
    unknown = unknown_words_cached(encoder, texts, cache)
    if unknown is not None:
        cache.put_word_set(key, unknown)
    return unknown


def evaluate_mcq(
    questions: Sequence[MCQ],
    root: str | Path,
    encoder: Encoder,
    pairings: Sequence[str] = ("tt",),
    progress: Progress | None = None,
    chunk: int | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score MCQs in each pairing, ``chunk`` questions at a time (embed, score, drop the vectors).

    Args:
        questions: validated questions.
        root: folder that image paths are relative to.
        encoder: any :class:`Encoder` with the modalities the pairings need.
        pairings: subset of :data:`PAIRINGS`.
        progress: optional ``(fraction, message)`` callback.
        chunk: questions embedded at once (>= 1; default :data:`SCORE_CHUNK`); only their vectors are in memory
            at a time. Texts repeated across chunks are embedded once (the cache answers the later chunks).

    Returns:
        ``({pairing: summary}, per-item rows)``; a summary has accuracy, ci95, by_n, by_subset, n, chance,
        vs_chance, chance_by_n and chance_by_subset (:func:`summarize`); per-item rows carry id, pairing, scores, answer,
        credit and chance.
    """
    needed = {m for p in pairings for m in PAIRINGS[p]}
    lacking = needed - set(encoder.modalities)
    if lacking:
        raise EncoderError(
            f"{encoder.id} cannot embed {sorted(lacking)}; pairings {list(pairings)} need "
            f"{sorted(needed)} (this encoder has {sorted(encoder.modalities)})"
        )
    chunk = SCORE_CHUNK if chunk is None else chunk
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1 question, got {chunk}")
    if "image" in needed:
        require_images(questions, root)  # every missing file named before any model runs
    items = [it for q in questions for it in (q.query, *q.candidates)]
    expect_work(
        encoder,
        [it.text for it in items] if "text" in needed else (),
        [Path(root) / it.image for it in items if it.image] if "image" in needed else (),
    )
    scores = _score_in_chunks(questions, root, encoder, list(pairings), sorted(needed, reverse=True), chunk, progress)
    answer = np.array([q.answer for q in questions])
    chance = question_chance(questions)  # (q,) the same in every pairing
    results: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    with gc_paused():  # one dict per question and pairing, no cycles
        for p in pairings:
            credit = mcq_credit(scores[p], answer)
            results[p] = summarize(credit, questions, chance)
            rows.extend(item_rows(questions, scores[p], credit, p, chance))
    if progress:
        progress(1.0, "done")
    return results, rows


def _score_in_chunks(
    questions: Sequence[MCQ],
    root: str | Path,
    encoder: Encoder,
    pairings: list[str],
    modalities: list[str],
    chunk: int,
    progress: Progress | None,
) -> dict[str, np.ndarray]:
    """``{pairing: (q, 4) float32 scores}``, embedding ``chunk`` questions at a time in each modality (text first)."""
    total = len(questions)
    scores = {p: np.empty((total, 4), dtype=np.float32) for p in pairings}
    steps = max(-(-total // chunk) * len(modalities), 1)
    step = 0
    for lo in range(0, total, chunk):
        part = questions[lo : lo + chunk]
        emb: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for m in modalities:  # text first: it is the fast one
            if progress:
                progress(step / steps, f"embedding {m}s with {encoder.id} ({lo}/{total} questions)")
            emb[m] = embed_questions(part, root, encoder, m)
            step += 1
        for p in pairings:
            qm, cm = PAIRINGS[p]
            scores[p][lo : lo + len(part)] = score_mcq(emb[qm][0], emb[cm][1])
        del emb  # this chunk's vectors go before the next chunk's arrive
    return scores
