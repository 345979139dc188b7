"""Held-out vocabulary: a seeded, listed fraction of objects and attributes that training text never contains.

``generate triplets --holdout-words FRACTION --seed S`` picks the held-out words with :func:`select_holdout` and
writes them to ``DIR/holdout_vocab.json`` (:func:`write_holdout`); ``generate saber --vocab-from FILE`` builds
questions only from them (:func:`saber_vocab_from`).

The choice is stratified so that every part of the vocabulary loses the same fraction: objects per kind (animal,
food, plant, thing) and attributes per triplet family, SABER's 50 attributes separately from the other words of
each family (so a SABER benchmark built from the held-out words gets about ``FRACTION x 50`` attributes). Every
object kind and every family keeps at least two held-out words, so each construction type can still be planned
from held-out words alone.
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindlab.data.saber import SABER_VOCAB, Vocabulary
from bindlab.data.triplets.template_engine import ATTRIBUTE_FAMILIES, KINDS, OBJECT_POOL, object_kind
from bindlab.data.vocab import ATTRIBUTE_BY_NAME

HOLDOUT_FILE = "holdout_vocab.json"
MIN_PER_GROUP = 2


@dataclass(frozen=True)
class HeldOutWords:
    """The held-out objects and attributes (sorted), with how they were chosen."""

    objects: tuple[str, ...]
    attributes: tuple[str, ...]
    fraction: float
    seed: int

    @property
    def words(self) -> frozenset[str]:
        return frozenset(self.objects) | frozenset(self.attributes)

    def to_json(self) -> dict[str, Any]:
        return {
            "fraction": self.fraction,
            "seed": self.seed,
            "objects": list(self.objects),
            "attributes": list(self.attributes),
            "saber_attributes": [a for a in self.attributes if a in ATTRIBUTE_BY_NAME],
        }


def check_fraction(fraction: float) -> float:
    """A held-out fraction strictly between 0 and 0.5 (training keeps the larger part)."""
    f = float(fraction)
    if not 0 < f <= 0.5 or math.isnan(f):
        raise ValueError(f"--holdout-words {fraction!r} must be a fraction above 0 and at most 0.5, e.g. 0.1")
    return f


_SUFFIXES = ("ing", "ies", "es", "ed", "er", "est", "ly", "y", "s")


def word_stem(word: str) -> str:
    """A light suffix-stripping stem (``snowy`` -> ``snow``, ``striped`` -> ``strip``); a stem shorter than three
    letters keeps the word (``red`` stays ``red``)."""
    w = word.lower()
    for suf in _SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def related(a: str, b: str, pieces: Any = None) -> str:
    """Why a held-out word ``a`` and a training word ``b`` count as one below the word: "stem" (same
    :func:`word_stem`), "pieces" (with a tokenizer ``pieces(word) -> list[str]``: ``a``'s pieces start ``b``'s, e.g.
    WordPiece ``cup`` and ``cup ##cake``; not the other way, or every held-out word whose first piece is a short word
    would leak), "prefix" (without one: one word starts the other, at least three letters); "" otherwise."""
    a, b = a.lower(), b.lower()
    if a == b:
        return ""
    if word_stem(a) == word_stem(b):
        return "stem"
    if pieces is not None:
        pa, pb = list(pieces(a)), list(pieces(b))
        return "pieces" if pa and len(pa) < len(pb) and pb[: len(pa)] == pa else ""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return "prefix" if len(short) >= 3 and long_.startswith(short) else ""


def near_leaks(
    held: Iterable[str], trained: Iterable[str], tokenizers: Mapping[str, Any] | None = None
) -> list[dict[str, str]]:
    """Held-out words that training text contains below the word: ``{"held", "trained", "why", "tokenizer"}`` for
    every held-out word and training word that :func:`related` joins, by stem and by each tokenizer's pieces
    (``tokenizers``: name -> ``pieces(word)``; none: the letters). Multi-word held-out entries are checked word by
    word."""
    held_words = sorted({w for h in held for w in h.lower().split()})
    train_words = sorted({w.lower() for w in trained} - set(held_words))
    out: list[dict[str, str]] = []
    checks = dict(tokenizers or {}) or {"letters": None}
    cache: dict[tuple[str, str], list[str]] = {}
    for name, fn in checks.items():
        pieces = None
        if fn is not None:

            def pieces(w: str, fn: Any = fn, name: str = name) -> list[str]:
                if (name, w) not in cache:
                    cache[name, w] = list(fn(w))
                return cache[name, w]

        for h in held_words:
            for t in train_words:
                why = related(h, t, pieces)
                if why and not any(o["held"] == h and o["trained"] == t and o["why"] == why for o in out):
                    out.append({"held": h, "trained": t, "why": why, "tokenizer": name if why == "pieces" else ""})
    return out


@functools.lru_cache(maxsize=1)
def _generator_words() -> frozenset[str]:
    """Every single word the triplet generator can write in an object, attribute or scene phrase."""
    from bindlab.data.triplets import template_engine as tt

    words: set[str] = set()
    for name in dir(tt):
        v = getattr(tt, name)
        if isinstance(v, tuple) and v and all(isinstance(x, str) for x in v):
            words.update(w.strip(",.") for x in v for w in x.lower().split())
    words.update(w for o in OBJECT_POOL for w in o.lower().split())
    words.update(w for fam in ATTRIBUTE_FAMILIES for x in fam.words for w in x.lower().split())
    return frozenset(w for w in words if w.isalpha())


def _take(words: list[str], fraction: float, rng: random.Random, minimum: int = 0) -> list[str]:
    """Sample ``fraction`` of ``words`` (at least ``minimum``), never a word with a relative below the word among
    the generator's other words (:func:`related`), unless too few remain for ``minimum``."""
    k = min(len(words), max(minimum, round(fraction * len(words))))
    vocab = _generator_words()
    safe = [w for w in sorted(words) if not any(related(p, v) for p in w.lower().split() for v in vocab if v != p)]
    pool = safe if len(safe) >= k else sorted(words)
    return rng.sample(pool, k)


def select_holdout(fraction: float, seed: int = 0) -> HeldOutWords:
    """Hold out ``fraction`` of the objects (per kind) and of the attributes (per family; SABER's separately)."""
    f = check_fraction(fraction)
    rng = random.Random(f"bindlab-holdout:{seed}:{f!r}")
    objects: list[str] = []
    for kind in KINDS:
        objects += _take([o for o in OBJECT_POOL if object_kind(o) == kind], f, rng, MIN_PER_GROUP)
    attributes: list[str] = []
    for fam in ATTRIBUTE_FAMILIES:
        saber = _take([w for w in fam.words if w in ATTRIBUTE_BY_NAME], f, rng)
        other = _take([w for w in fam.words if w not in ATTRIBUTE_BY_NAME], f, rng, max(0, MIN_PER_GROUP - len(saber)))
        attributes += saber + other
    return HeldOutWords(tuple(sorted(objects)), tuple(sorted(set(attributes))), f, seed)


def write_holdout(out_dir: str | Path, held: HeldOutWords) -> Path:
    """Write ``out_dir/holdout_vocab.json``; return its path."""
    path = Path(out_dir) / HOLDOUT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(held.to_json(), indent=2) + "\n", encoding="utf-8")
    return path


def read_holdout(path: str | Path) -> HeldOutWords:
    """Read a held-out vocabulary file (or the folder holding ``holdout_vocab.json``).

    Raises:
        ValueError: the file is missing, is not JSON, or lacks ``objects``/``attributes`` word lists.
    """
    p = Path(path)
    if p.is_dir():
        p = p / HOLDOUT_FILE
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except OSError:
        raise ValueError(
            f"--vocab-from {path}: no such file; write one with 'python -m bindlab generate triplets "
            "--holdout-words 0.2 --out DIR' and pass DIR/holdout_vocab.json"
        ) from None
    except json.JSONDecodeError as e:
        raise ValueError(f"--vocab-from {p}: not JSON ({e})") from None
    lists = {k: obj.get(k) if isinstance(obj, dict) else None for k in ("objects", "attributes")}
    if any(not isinstance(v, list) or not all(isinstance(w, str) for w in v) for v in lists.values()):
        raise ValueError(
            f"--vocab-from {p}: needs 'objects' and 'attributes' lists of words (a "
            f"{HOLDOUT_FILE} from 'generate triplets --holdout-words')"
        )
    return HeldOutWords(
        tuple(lists["objects"]),
        tuple(lists["attributes"]),
        float(obj.get("fraction", 0) or 0),
        int(obj.get("seed", 0) or 0),
    )


def saber_vocab_from(path: str | Path, base: Vocabulary = SABER_VOCAB) -> Vocabulary:
    """The part of ``base`` (SABER's lists, or the renderable ones) that a held-out file holds out.

    Attributes of the file that ``base`` has no realisation for (the triplet-only words) are ignored.

    Raises:
        ValueError: naming the file when fewer than three objects or attributes remain (no question possible).
    """
    held = read_holdout(path)
    objects = tuple(o for o in base.objects if o in set(held.objects))
    attributes = tuple(a for a in base.attributes if a.name in set(held.attributes))
    if min(len(objects), len(attributes)) < 3:
        raise ValueError(
            f"--vocab-from {path}: only {len(objects)} held-out objects and {len(attributes)} held-out "
            "attributes of this vocabulary, too few for any question (N = 2 needs 3 of each); hold "
            "out a larger fraction with 'generate triplets --holdout-words'"
        )
    return Vocabulary(objects, attributes)


__all__ = [
    "HOLDOUT_FILE",
    "HeldOutWords",
    "check_fraction",
    "near_leaks",
    "read_holdout",
    "saber_vocab_from",
    "related",
    "select_holdout",
    "word_stem",
    "write_holdout",
]
