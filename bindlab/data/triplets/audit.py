"""Audit a triplet set's held-out splits by reading its text, as an independent reviewer would (``audit-splits``).

The generator promises that a held-out sentence template and held-out words are absent from training. This module
does not trust the generator's bookkeeping: it scans every text of every row (query, positive, negative) and
finds, for each attribute word, which sentence template its binding is written in:

- ``attributive``: the attribute comes before its object with only other attributes between ("a tiny red kite");
- ``with``: after its object, as "with a/an <attribute> colour|finish|pattern|texture";
- ``relative``: after its object, with "which" or "that" between them ("a kite that is red", "the kite, which was
  red, ...");
- ``predicative``: after its object otherwise ("the kite is red", "the kite, as usual, looked red").

A row's attribute and object words are the ones in its ``bindings`` (the positive's; the negatives permute the same
words). Held-out words are those of the set's ``holdout_vocab.json``; held-out templates are those with a
``test_template_<name>`` split. The training side is the ``train`` and ``val`` splits (val picks LiNeS and stops
training); the other splits are reported too, for reading.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from bindlab.data.templates import WITH_NOUNS
from bindlab.data.triplets.words import words_of

TRAINING_SPLITS = ("train", "val")
_RELATIVE = frozenset({"which", "that"})


def template_uses(text: str, attributes: set[str], objects: set[str]) -> list[tuple[str, str]]:
    """``(attribute, template)`` for each occurrence of an attribute word in ``text`` (see the module docstring).

    An attribute with no object after it (only attributes between) and none before it is left out.
    """
    words = words_of(text)
    uses = []
    for i, w in enumerate(words):
        if w not in attributes:
            continue
        j = i + 1
        while j < len(words) and words[j] in attributes:
            j += 1
        if j < len(words) and words[j] in objects:
            uses.append((w, "attributive"))
            continue
        k = i - 1
        while k >= 0 and words[k] not in objects:
            k -= 1
        if k < 0:
            continue
        between = words[k + 1 : i]
        after = words[i + 1] if i + 1 < len(words) else ""
        if "with" in between and after in WITH_NOUNS.values():
            uses.append((w, "with"))
        elif _RELATIVE & set(between):
            uses.append((w, "relative"))
        else:
            uses.append((w, "predicative"))
    return uses


def _held_templates(rows: list[dict[str, Any]]) -> list[str]:
    from bindlab.data.triplets.spec import TEMPLATE_SPLIT_PREFIX

    return sorted(
        {r["split"][len(TEMPLATE_SPLIT_PREFIX) :] for r in rows if r["split"].startswith(TEMPLATE_SPLIT_PREFIX)}
    )


def audit_rows(
    rows: list[dict[str, Any]],
    held_words: frozenset[str] = frozenset(),
    held_templates: list[str] | None = None,
    examples: int = 3,
    tokenizers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Count, per split, the texts that use a held-out template or contain a held-out word.

    Returns:
        ``{"held_templates", "held_words" (count), "rows" {split: n}, "template_uses" {split: {template: n}},
        "template_leaks" {split: n texts}, "word_leaks" {split: n texts}, "examples": [...], "clean": bool}``;
        ``clean`` is true when no training-side text (:data:`TRAINING_SPLITS`) uses a held-out template or word,
        and no training word holds a held-out word below the word (``"near_leaks"``:
        :func:`bindlab.data.triplets.holdout.near_leaks`, by stem and by each of ``tokenizers``' pieces, e.g. held-out
        *cup* in training's *cupcake*, *snowy* beside *snow*).
    """
    from bindlab.data.triplets.holdout import near_leaks

    held_t = set(_held_templates(rows) if held_templates is None else held_templates)
    uses: dict[str, Counter] = {}
    template_leaks: Counter = Counter()
    word_leaks: Counter = Counter()
    found: list[dict[str, Any]] = []
    trained_words: set[str] = set()
    for r in rows:
        split = r["split"]
        if split in TRAINING_SPLITS:
            for field in ("query", "positive", "negative"):
                trained_words.update(words_of(r[field]))
        attrs = {a.lower() for a, _ in r["bindings"]}
        objs = {o.lower() for _, o in r["bindings"]}
        for field in ("query", "positive", "negative"):
            text = r[field]
            kinds = {t for _, t in template_uses(text, attrs, objs)}
            uses.setdefault(split, Counter()).update(kinds)
            bad_t = sorted(kinds & held_t)
            bad_w = sorted(held_words.intersection(words_of(text)))
            own_split = split.startswith("test_template_") or split == "test_unseen_words"
            if bad_t and not own_split:
                template_leaks[split] += 1
            if bad_w and split != "test_unseen_words":
                word_leaks[split] += 1
            if (
                (bad_t and not own_split or bad_w and split != "test_unseen_words")
                and split in TRAINING_SPLITS
                and len(found) < examples
            ):
                found.append(
                    {
                        "id": r.get("id"),
                        "split": split,
                        "field": field,
                        "text": text,
                        "templates": bad_t,
                        "words": bad_w,
                    }
                )
    near = near_leaks(held_words, trained_words, tokenizers) if held_words else []
    clean = not any(template_leaks[s] or word_leaks[s] for s in TRAINING_SPLITS) and not near
    return {
        "held_templates": sorted(held_t),
        "held_words": len(held_words),
        "rows": dict(Counter(r["split"] for r in rows)),
        "template_uses": {s: dict(c) for s, c in uses.items()},
        "template_leaks": dict(template_leaks),
        "word_leaks": dict(word_leaks),
        "examples": found,
        "near_leaks": near,
        "clean": clean,
    }


def audit_triplets(data: str | Path, tokenizers: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`audit_rows` for a triplet folder (``triplets.jsonl`` and, when present, ``holdout_vocab.json``)."""
    from bindlab.data.triplets.holdout import HOLDOUT_FILE, read_holdout
    from bindlab.data.triplets.io import load_triplets

    folder = Path(data)
    folder = folder if folder.is_dir() else folder.parent
    rows = load_triplets(folder)
    held = read_holdout(folder / HOLDOUT_FILE).words if (folder / HOLDOUT_FILE).is_file() else frozenset()
    return {"data": str(folder), **audit_rows(rows, frozenset(w.lower() for w in held), tokenizers=tokenizers)}


def format_audit(report: dict[str, Any]) -> str:
    """The audit as plain text: per split its rows, template uses and leaks, then the verdict."""
    out = [
        f"held-out templates: {', '.join(report['held_templates']) or 'none'}; held-out words: {report['held_words']}",
        f"{'split':<28}{'role':<11}{'rows':>7}  {'uses of held-out templates':>27}  {'held-out words':>14}  "
        "template uses (texts)",
    ]
    for split, n in sorted(report["rows"].items()):
        uses = ", ".join(f"{t} {c}" for t, c in sorted(report["template_uses"].get(split, {}).items()))
        role = "training" if split in TRAINING_SPLITS else "evaluation"
        out.append(
            f"{split:<28}{role:<11}{n:>7}  {report['template_leaks'].get(split, 0):>27}  "
            f"{report['word_leaks'].get(split, 0):>14}  {uses}"
        )
    for e in report["examples"]:
        out.append(
            f"  leak in {e['split']} {e['id']} ({e['field']}): {e['templates'] or ''} {e['words'] or ''} {e['text']!r}"
        )
    for n in report.get("near_leaks", []):
        how = f"{n['tokenizer']} pieces" if n["why"] == "pieces" else n["why"]
        out.append(f"  held-out word {n['held']!r} inside training's {n['trained']!r} ({how})")
    out.append(
        "clean: no train/val text uses a held-out template or word, whole or below the word"
        if report["clean"]
        else "NOT CLEAN: held-out templates or words occur in training rows, whole or below the word (see above)"
    )
    return "\n".join(out)


__all__ = ["TRAINING_SPLITS", "audit_rows", "audit_triplets", "format_audit", "template_uses"]
