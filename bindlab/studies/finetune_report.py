"""The finetune report that separates the training distribution from the general test (part of the Finetune study).

A triplet finetune is trained on queries in one sentence template (``attributive`` unless the triplets say
otherwise) over the words its training rows contain. A gain measured on questions in that template with only those
words shows the model learnt the training format; it says nothing yet about binding in general. So the report's MCQ
rows are a grid of *construction* (each sentence template: trained, or held out of training) x *vocabulary* (only
words some training text contains, or words none does), and every row's name, format and "in training distribution"
mark are computed from what the row holds — the training rows' words are read from the data
(:func:`training_words`), never taken from the generator's settings:

- the questions given (the request's MCQ file, or the embedded mini benchmark), split by vocabulary;
- for every template x vocabulary, questions generated like the given ones (same seed, sizes and count per size;
  :func:`bindlab.data.saber.generate_saber` over the part of the vocabulary training texts do or do not contain);
- the triplet evaluation splits, each cut the same way by its rows' query template and words; the deferred-binding
  split is a construction never trained on;
- controls: the forgetting controls on general sentences (similarity drift from the base, paraphrase R@1) and, for
  image models, single-object text->image R@1.

Formats (:data:`bindlab.train.compare.FORMATS`): ``in-format`` (training template, seen words: the only rows in the
training distribution), ``unseen words``, ``out-of-template``, ``out-of-template, unseen words``, ``held-out
construction``, ``control``. Every number carries a 95 % percentile bootstrap interval over its items (questions,
triplets, sentences) and its chance level. The rows are shaped by :func:`bindlab.train.compare.report_rows`; the
summary (:func:`bindlab.train.compare.report_text`) names the rows that moved beyond their intervals and counts those
that did not, never averaging rows of different kinds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.eval.metrics import task_chance

Progress = Callable[[float, str], None]


def _item_summary(values: np.ndarray) -> dict[str, Any]:
    from bindlab.eval.metrics import bootstrap_ci

    v = np.asarray(values, dtype=np.float64)
    lo, hi = bootstrap_ci(v)
    return {"value": float(np.mean(v)) if v.size else float("nan"), "ci95": [lo, hi], "n": int(v.size)}


ONE_RUN = "items of one training run: no seed variance (scripts/seed_study.py gives the interval over seeds)"
DRIFT_NOTE = (
    "drift is >= 0 by construction; its interval is no test against 0 (seed_study.py tests it against its own null)"
)


def _compared(values: dict[str, np.ndarray], note: str = ONE_RUN) -> dict[str, Any]:
    """Each model's summary (``models``) and, for every model after the first (the base), the **paired** change:
    per item the model's value minus the base's on the same item, its mean and percentile bootstrap 95 % interval
    (``paired``). Items are the same questions, triplets or sentences for every model, so the paired interval is
    much tighter than two separate ones; it is over the items of one training run (``interval_over``), so it says
    whether this run moved a row, not whether the finetune procedure does."""
    from bindlab.eval.metrics import bootstrap_ci

    labels = list(values)
    base = np.asarray(values[labels[0]], dtype=np.float64)
    paired = {}
    for label in labels[1:]:
        d = np.asarray(values[label], dtype=np.float64) - base
        lo, hi = bootstrap_ci(d)
        paired[label] = {"change": float(d.mean()) if d.size else float("nan"), "ci95": [lo, hi], "interval_over": note}
    return {"models": {label: _item_summary(v) for label, v in values.items()}, "paired": paired}


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


VOCABULARIES = {
    "seen": "words seen in training",
    "mixed": "words seen in training mixed with words no training text contains",
    "unseen": "words no training text contains",
}


def training_words(rows: Sequence[dict[str, Any]]) -> frozenset[str]:
    """Every word of every text (query, positive, negative) of the training rows, lower-cased: what "seen in
    training" means for a row of the report (read from the data, not from the generator's settings)."""
    from bindlab.data.triplets.words import words_of

    return frozenset(w for r in rows for k in ("query", "positive", "negative") for w in words_of(str(r.get(k, ""))))


def is_seen(word: str, seen: frozenset[str]) -> bool:
    """A word counts as seen when training text holds it, or holds it below the word (the same stem, or a word it
    starts or that starts it: held-out *cup* inside training's *cupcake*, :func:`bindlab.data.triplets.holdout.related`), so
    a leaked held-out word of an existing set is read as seen without retraining."""
    from bindlab.data.triplets.holdout import related

    w = word.lower()
    return w in seen or any(related(w, t) for t in seen)


def question_vocabulary(q: Any, seen: frozenset[str]) -> str:
    """``"seen"`` when every attribute and object of the question's candidates occurs in training texts
    (:func:`is_seen`), ``"unseen"`` when none does, ``"mixed"`` otherwise."""
    return words_vocabulary({w for c in (q.query, *q.candidates) for pair in c.bindings for w in pair}, seen)


def words_vocabulary(words: set[str], seen: frozenset[str]) -> str:
    """``"seen"`` / ``"mixed"`` / ``"unseen"``: all, some or none of ``words`` seen in training (:func:`is_seen`)."""
    known = sum(is_seen(w, seen) for w in {w.lower() for w in words})
    return "seen" if known == len({w.lower() for w in words}) else "unseen" if known == 0 else "mixed"


def split_vocab(vocab: Any, seen: frozenset[str]) -> dict[str, Any]:
    """``vocab`` cut into the words training texts contain and the rest (each ``None`` when too small for a
    question): ``{"seen": Vocabulary | None, "unseen": Vocabulary | None}``."""
    from bindlab.data.saber import Vocabulary

    out = {}
    for key, keep in (("seen", True), ("unseen", False)):
        objects = tuple(o for o in vocab.objects if is_seen(o, seen) == keep)
        attributes = tuple(a for a in vocab.attributes if is_seen(a.name, seen) == keep)
        out[key] = Vocabulary(objects, attributes) if min(len(objects), len(attributes)) >= 3 else None
    return out


def row_format(trained_template: bool, vocabulary: str) -> str:
    """The format of a report row from what it contains (:data:`bindlab.train.compare.FORMATS`)."""
    if trained_template:
        return "in-format" if vocabulary == "seen" else "unseen words"
    return "out-of-template" if vocabulary == "seen" else "out-of-template, unseen words"


def mcq_label(template: str, trained: bool, vocabulary: str, source: str) -> str:
    """A report row's name, computed from its contents: ``MCQ, predicative template (held out of training), words
    seen in training (generated)``."""
    return (
        f"MCQ, {template} template ({'trained' if trained else 'held out of training'}), "
        f"{VOCABULARIES[vocabulary]} ({source})"
    )


def _mcq_sets(questions: list[Any], trained: tuple[str, ...], seen: frozenset[str], seed: int) -> list[dict[str, Any]]:
    """The MCQ rows of the report: the given questions split by vocabulary, then the grid of every template x
    {words seen in training, words no training text contains}, generated like the given questions (same seed,
    sizes and count per size)."""
    from bindlab.data.saber import generate_saber, max_size, template_vocab
    from bindlab.data.templates import TEMPLATES

    vocab0 = base_vocab(questions)
    own = question_template(questions)
    counts = Counter(q.n_objects for q in questions)
    sizes, per_size = sorted(counts), max(counts.values())
    sets = []
    for v in VOCABULARIES:
        qs = [q for q in questions if question_vocabulary(q, seen) == v]
        if qs:
            sets.append({"questions": qs, "template": own, "vocabulary": v, "source": "the questions given"})
    parts = split_vocab(vocab0, seen)
    for t in TEMPLATES:
        for v, vocab in parts.items():
            if vocab is None:
                continue
            usable = [n for n in sizes if n <= max_size(template_vocab(vocab, t))]
            if usable:
                qs = generate_saber(per_size=per_size, sizes=usable, seed=seed, vocab=vocab, template=t)
                sets.append({"questions": qs, "template": t, "vocabulary": v, "source": "generated"})
    for s in sets:
        s["trained"] = s["template"] in trained
        s["format"] = row_format(s["trained"], s["vocabulary"])
        s["evaluation"] = mcq_label(s["template"], s["trained"], s["vocabulary"], s["source"])
    return sets


def _triplet_groups(
    splits: dict[str, list[dict[str, Any]]], trained: tuple[str, ...], seen: frozenset[str]
) -> list[dict[str, Any]]:
    """The triplet rows of the report: each evaluation split cut by what its rows contain (query template, words
    seen in training or not); the held-out deferred-binding split is its own construction, never trained on."""
    from bindlab.data.templates import DEFAULT_TEMPLATE

    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for split, rows in splits.items():
        if split == "train":
            continue
        for r in rows:
            v = words_vocabulary({w for pair in r.get("bindings") or [] for w in pair}, seen)
            groups.setdefault((split, r.get("template") or DEFAULT_TEMPLATE, v), []).append(r)
    out = []
    for (split, t, v), rows in groups.items():
        if split == "heldout":
            fmt = "held-out construction"
            name = f"triplets, held-out deferred-binding construction, {VOCABULARIES[v]}"
        else:
            fmt = row_format(t in trained, v)
            name = (
                f"triplets, {t} query ({'trained' if t in trained else 'held out of training'}), "
                f"{VOCABULARIES[v]} (split {split})"
            )
        out.append({"evaluation": name, "rows": rows, "template": t, "vocabulary": v, "format": fmt})
    return out


def _triplet_credit(encoder: Any, rows: Sequence[dict[str, Any]]) -> np.ndarray:
    """``(n,)`` 1.0 where cos(query, positive) > cos(query, negative), else 0.0."""
    m = len(rows)
    v = encoder.embed_texts([r["query"] for r in rows] + [r["positive"] for r in rows] + [r["negative"] for r in rows])
    q, p, n = v[:m], v[m : 2 * m], v[2 * m :]
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


def separated_report(
    encoders: dict[str, Any],
    questions: list[Any],
    config: dict[str, Any],
    progress: Progress | None = None,
    mcq_path: str | Path | None = None,
) -> list[dict[str, Any]]:
    """Every model of a job on every evaluation of the report, each value with its 95 % CI.

    Args:
        encoders: ``{"base": …, "unscaled": …, "lines": …}`` (the job's three models).
        questions: the in-template MCQs of the compare (text pairing ``tt`` is what the report scores).
        config: the job's finetune config (its ``data`` folder, ``eval_rows`` and ``seed``).
        mcq_path: where ``questions`` came from: the generated sets use the seed of its ``meta.json`` (0 without one),
            so with a generated file they are the same questions in other words.
        progress: optional ``(fraction, message)`` callback.

    Returns:
        Entries ``{"evaluation", "kind" (mcq | triplets | control), "format", "in_format", "template", "vocabulary",
        "source", "chance", "n", "higher_is_better", "models": {label: {"value", "ci95", "n"}}, "paired": {label:
        {"change", "ci95"}}}`` (``paired``: each finetuned model minus the base, item by item) in reading order:
        MCQs, triplets, controls.
    """
    from bindlab.train.finetune import load_splits

    data = Path(str(config["data"]))
    data_dir = data if data.is_dir() else data.parent
    splits = load_splits(str(data), int(config.get("eval_rows", 400) or 0), int(config.get("seed", 0) or 0))
    trained = training_templates(splits["train"]) or ("attributive",)
    seen = training_words(splits["train"])
    sets = _mcq_sets(questions, trained, seen, seed=benchmark_seed(mcq_path))
    entries: list[dict[str, Any]] = []
    n_steps, done = len(encoders) * (len(sets) + 2), 0

    def tick(msg: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done / n_steps, msg)

    for s in sets:
        entries.append(_mcq_entry(s, encoders, data_dir, tick))
    entries += [_triplet_entry(g, encoders) for g in _triplet_groups(splits, trained, seen)]
    tick("report: triplets")
    entries += _control_entries(encoders)
    tick("report: forgetting controls")
    for e in entries:
        e["n"] = next(iter(e["models"].values()))["n"]
    return entries


def _mcq_entry(
    s: dict[str, Any], encoders: dict[str, Any], data_dir: Path, tick: Callable[[str], None]
) -> dict[str, Any]:
    """The report's row of one MCQ set (:func:`_mcq_sets`): every model on its questions (text pairing), with the
    changes paired item by item."""
    from bindlab.eval.mcq import evaluate_mcq, question_chance

    credits = {}
    order = [q.id for q in s["questions"]]
    for label, encoder in encoders.items():
        _, items = evaluate_mcq(s["questions"], data_dir, encoder, ["tt"])
        by_id = {r["id"]: r["credit"] for r in items}
        credits[label] = np.array([by_id[i] for i in order])  # item order fixed: the changes are paired
        tick(f"report: {s['evaluation']} ({label})")
    return {
        "evaluation": s["evaluation"],
        "kind": "mcq",
        "format": s["format"],
        "template": s["template"],
        "vocabulary": s["vocabulary"],
        "source": s["source"],
        "in_format": s["format"] == "in-format",
        "higher_is_better": True,
        "chance": float(np.mean(question_chance(s["questions"]))),
        **_compared(credits),
    }


def _triplet_entry(g: dict[str, Any], encoders: dict[str, Any]) -> dict[str, Any]:
    """The report's row of one triplet group (:func:`_triplet_groups`): every model's triplet credit."""
    return {
        "evaluation": g["evaluation"],
        "kind": "triplets",
        "format": g["format"],
        "template": g["template"],
        "vocabulary": g["vocabulary"],
        "source": "triplets",
        "in_format": g["format"] == "in-format",
        "higher_is_better": True,
        "chance": task_chance("triplet"),
        **_compared({label: _triplet_credit(enc, g["rows"]) for label, enc in encoders.items()}),
    }


def _control(
    evaluation: str,
    values: dict[str, np.ndarray],
    higher_is_better: bool,
    chance: float | None = None,
    note: str = ONE_RUN,
) -> dict[str, Any]:
    """A control row: not a binding evaluation, so no format; ``note`` says what its paired interval is over."""
    return {
        "evaluation": evaluation,
        "kind": "control",
        "format": "control",
        "in_format": False,
        "higher_is_better": higher_is_better,
        "chance": chance,
        **_compared(values, note),
    }


def _control_entries(encoders: dict[str, Any]) -> list[dict[str, Any]]:
    """The forgetting controls: general-sentence similarity drift from the base (the first model), paraphrase R@1,
    and for an image model single-object text->image R@1."""
    from bindlab.train.general_sentences import general_sentences

    labels = list(encoders)
    base_general = encoders[labels[0]].embed_texts(general_sentences())
    forget = {label: _forgetting_items(encoders[label], base_general) for label in labels}
    out = [
        _control(
            "control: general-sentence similarity drift from base",
            {label: forget[label]["drift"] for label in labels},
            False,
            note=DRIFT_NOTE,
        ),
        _control(
            "control: paraphrase R@1 (general sentences)", {k: f["paraphrase_r1"] for k, f in forget.items()}, True
        ),
    ]
    if "image" in encoders[labels[0]].modalities:
        from bindlab.train.finetune import single_object_set

        items = single_object_set()  # rendered once, for all three models
        out.append(
            _control(
                "control: single-object text->image R@1",
                {label: _t2i_items(enc, items) for label, enc in encoders.items()},
                True,
                chance=task_chance("one_of", len(items)),
            )
        )
    return out
