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

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindlab.data.saber import SABER_VOCAB, Vocabulary
from bindlab.data.triplet_templates import ATTRIBUTE_FAMILIES, KINDS, OBJECT_POOL, object_kind
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


def _take(words: list[str], fraction: float, rng: random.Random, minimum: int = 0) -> list[str]:
    k = min(len(words), max(minimum, round(fraction * len(words))))
    return rng.sample(sorted(words), k)


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
    "read_holdout",
    "saber_vocab_from",
    "select_holdout",
    "write_holdout",
]
