"""The finetune report that separates in-format from general (part of the Finetune study).

A triplet finetune is trained on queries in one sentence template (``attributive`` unless the triplets say
otherwise) over one vocabulary. A gain measured on questions in that template with those words shows the model
learnt the training format; it says nothing yet about binding in general. So every evaluation of a compare says
which it is (:data:`bindlab.train.compare.FORMATS`):

- ``in-format``: MCQs in a training template (the request's MCQ file, or the embedded mini benchmark) and the
  in-distribution triplet splits (val, test).
- ``unseen words``: MCQs in the training template built only from the job's held-out words (its
  ``holdout_vocab.json``, when the triplets were generated with ``--holdout-words``) and the ``test_unseen_words``
  triplets.
- ``out-of-template``: the same questions re-written in every template the job did not train on
  (:func:`bindlab.data.saber.generate_saber` with ``template=X``, on the fly from the same seed, sizes and count) and
  the ``test_template_<X>`` triplets.
- ``held-out construction``: the deferred-binding triplet types (split ``heldout``), never trained on.
- ``control``: the forgetting controls on general sentences (similarity drift from the base, paraphrase R@1) and,
  for image models, single-object text->image R@1.

Every number carries a 95 % percentile bootstrap interval over its items (questions, triplets, sentences). The rows
are shaped by :func:`bindlab.train.compare.report_rows`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

Progress = Callable[[float, str], None]


def _item_summary(values: np.ndarray) -> dict[str, Any]:
    from bindlab.eval.metrics import bootstrap_ci

    v = np.asarray(values, dtype=np.float64)
    lo, hi = bootstrap_ci(v)
    return {"value": float(np.mean(v)) if v.size else float("nan"), "ci95": [lo, hi], "n": int(v.size)}


def training_templates(rows: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The sentence templates of the train split's queries (rows without a ``template`` key are attributive)."""
    from bindlab.data.templates import DEFAULT_TEMPLATE, TEMPLATES

    seen = {r.get("template") or DEFAULT_TEMPLATE for r in rows}
    return tuple(t for t in TEMPLATES if t in seen)


def question_template(questions: Sequence[Any]) -> str:
    """The template a question file is written in (``extra["template"]``; attributive when absent)."""
    from bindlab.data.templates import DEFAULT_TEMPLATE

    return (questions[0].extra or {}).get("template", DEFAULT_TEMPLATE) if questions else DEFAULT_TEMPLATE


def base_vocab(questions: Sequence[Any]) -> Any:
    """The vocabulary the given questions come from: the renderable one (the toy models' world) when every object
    of theirs is in it, else SABER's; the generated sets use it, so a toy model is not tested on words it never saw."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import SABER_VOCAB

    objects = {o for q in questions for _, o in q.query.bindings}
    return RENDER_VOCAB if objects and objects <= set(RENDER_VOCAB.objects) else SABER_VOCAB


def _mcq_sets(questions: list[Any], data_dir: Path, trained: tuple[str, ...], seed: int) -> list[dict[str, Any]]:
    """The MCQ sets of the report: the given questions, each other template, and the unseen-word questions."""
    from bindlab.data.holdout import HOLDOUT_FILE, saber_vocab_from
    from bindlab.data.saber import generate_saber, max_size, template_vocab
    from bindlab.data.templates import TEMPLATES

    vocab0 = base_vocab(questions)
    own = question_template(questions)
    counts = Counter(q.n_objects for q in questions)
    sizes, per_size = sorted(counts), max(counts.values())
    sets = [{"evaluation": f"MCQ, {own} template (the questions given)", "questions": questions,
             "format": "in-format" if own in trained else "out-of-template", "template": own}]
    for t in TEMPLATES:
        if t in trained or t == own:
            continue
        usable = [n for n in sizes if n <= max_size(template_vocab(vocab0, t))]
        if not usable:
            continue
        qs = generate_saber(per_size=per_size, sizes=usable, seed=seed, vocab=vocab0, template=t)
        sets.append({"evaluation": f"MCQ, {t} template (held out of training)", "questions": qs,
                     "format": "out-of-template", "template": t})
    holdout = data_dir / HOLDOUT_FILE
    if holdout.is_file():
        t = trained[0]
        vocab = saber_vocab_from(holdout, vocab0)
        usable = [n for n in sizes if n <= max_size(template_vocab(vocab, t))]
        if usable:
            qs = generate_saber(per_size=per_size, sizes=usable, seed=seed, vocab=vocab, template=t)
            sets.append({"evaluation": f"MCQ, {t} template, held-out words only ({HOLDOUT_FILE})", "questions": qs,
                         "format": "unseen words", "template": t})
    return sets


def _split_format(split: str) -> str:
    from bindlab.data.triplets import UNSEEN_WORDS_SPLIT

    if split == UNSEEN_WORDS_SPLIT:
        return "unseen words"
    if split.startswith("test_template_"):
        return "out-of-template"
    if split == "heldout":
        return "held-out construction"
    return "in-format"


def _triplet_credit(encoder: Any, rows: Sequence[dict[str, Any]]) -> np.ndarray:
    """``(n,)`` 1.0 where cos(query, positive) > cos(query, negative), else 0.0."""
    m = len(rows)
    v = encoder.embed_texts([r["query"] for r in rows] + [r["positive"] for r in rows] + [r["negative"] for r in rows])
    q, p, n = v[:m], v[m:2 * m], v[2 * m:]
    return (np.einsum("md,md->m", q, p) > np.einsum("md,md->m", q, n)).astype(np.float64)


def _forgetting_items(encoder: Any, base_general: np.ndarray) -> dict[str, np.ndarray]:
    """Per-item forgetting values: each sentence's mean |change| of its similarities to the others (its mean is
    :func:`bindlab.train.finetune.similarity_drift`) and each sentence's paraphrase hit (mean = paraphrase R@1)."""
    from bindlab.train.general_sentences import general_sentences

    now = encoder.embed_texts(general_sentences())  # (m, d)
    diff = np.abs(now @ now.T - base_general @ base_general.T)
    off = ~np.eye(len(now), dtype=bool)
    drift = (diff * off).sum(1) / off.sum(1)
    s = now @ now.T
    np.fill_diagonal(s, -np.inf)
    hits = (np.argmax(s, axis=1) == (np.arange(len(now)) ^ 1)).astype(np.float64)
    return {"drift": drift, "paraphrase_r1": hits}


def _t2i_items(encoder: Any, items: list[tuple[str, Any]]) -> np.ndarray:
    """``(n,)`` 1.0 where a single-object caption retrieves its own render among ``items`` (text->image R@1)."""
    t = encoder.embed_texts([c for c, _ in items])
    i = encoder.embed_images([im for _, im in items])
    return (np.argmax(t @ i.T, axis=1) == np.arange(len(items))).astype(np.float64)


def benchmark_seed(mcq_path: str | Path | None) -> int:
    """The seed a benchmark was generated with (its ``meta.json``, as ``generate saber`` writes it); 0 without one."""
    import json

    meta = Path(mcq_path).parent / "meta.json" if mcq_path else None
    try:
        return int(json.loads(meta.read_text()).get("seed", 0)) if meta and meta.is_file() else 0
    except (OSError, ValueError, TypeError, AttributeError):
        return 0


def separated_report(encoders: dict[str, Any], questions: list[Any], config: dict[str, Any],
                     progress: Progress | None = None, mcq_path: str | Path | None = None) -> list[dict[str, Any]]:
    """Every model of a job on every evaluation of the report, each value with its 95 % CI.

    Args:
        encoders: ``{"base": …, "unscaled": …, "lines": …}`` (the job's three models).
        questions: the in-template MCQs of the compare (text pairing ``tt`` is what the report scores).
        config: the job's finetune config (its ``data`` folder, ``eval_rows`` and ``seed``).
        mcq_path: where ``questions`` came from: the generated sets use the seed of its ``meta.json`` (0 without one),
            so with a generated file they are the same questions in other words.
        progress: optional ``(fraction, message)`` callback.

    Returns:
        Entries ``{"evaluation", "kind" (mcq | triplets | control), "format", "in_format", "n", "higher_is_better",
        "models": {label: {"value", "ci95", "n"}}}`` in reading order: MCQs, triplets, controls.
    """
    from bindlab.eval.mcq import evaluate_mcq
    from bindlab.train.finetune import load_splits
    from bindlab.train.general_sentences import general_sentences

    data = Path(str(config["data"]))
    data_dir = data if data.is_dir() else data.parent
    splits = load_splits(str(data), int(config.get("eval_rows", 400) or 0), int(config.get("seed", 0) or 0))
    trained = training_templates(splits["train"]) or ("attributive",)
    sets = _mcq_sets(questions, data_dir, trained, seed=benchmark_seed(mcq_path))
    entries: list[dict[str, Any]] = []
    n_steps, done = len(encoders) * (len(sets) + 2), 0
    labels = list(encoders)

    def tick(msg: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done / n_steps, msg)

    for s in sets:
        models = {}
        for label in labels:
            res, items = evaluate_mcq(s["questions"], data_dir, encoders[label], ["tt"])
            models[label] = _item_summary(np.array([r["credit"] for r in items]))
            tick(f"report: {s['evaluation']} ({label})")
        entries.append({"evaluation": s["evaluation"], "kind": "mcq", "format": s["format"],
                        "in_format": s["format"] == "in-format", "higher_is_better": True, "models": models})
    for split, rows in splits.items():
        if split == "train" or not rows:
            continue
        fmt = _split_format(split)
        name = "held-out deferred-binding" if split == "heldout" else split
        entries.append({"evaluation": f"triplets, {name}", "kind": "triplets", "format": fmt,
                        "in_format": fmt == "in-format", "higher_is_better": True,
                        "models": {label: _item_summary(_triplet_credit(encoders[label], rows)) for label in labels}})
    tick("report: triplets")
    base_general = encoders[labels[0]].embed_texts(general_sentences())
    forget = {label: _forgetting_items(encoders[label], base_general) for label in labels}
    entries.append({"evaluation": "control: general-sentence similarity drift from base", "kind": "control",
                    "format": "control", "in_format": False, "higher_is_better": False,
                    "models": {label: _item_summary(forget[label]["drift"]) for label in labels}})
    entries.append({"evaluation": "control: paraphrase R@1 (general sentences)", "kind": "control",
                    "format": "control", "in_format": False, "higher_is_better": True,
                    "models": {label: _item_summary(forget[label]["paraphrase_r1"]) for label in labels}})
    if "image" in encoders[labels[0]].modalities:
        from bindlab.train.finetune import single_object_set

        items = single_object_set()  # rendered once, for all three models
        entries.append({"evaluation": "control: single-object text->image R@1", "kind": "control",
                        "format": "control", "in_format": False, "higher_is_better": True,
                        "models": {label: _item_summary(_t2i_items(encoders[label], items)) for label in labels}})
    tick("report: forgetting controls")
    for e in entries:
        e["n"] = next(iter(e["models"].values()))["n"]
    return entries
