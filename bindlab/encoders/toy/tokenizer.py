"""The word-level tokenizer of the toy models (``toy:clip``, ``toy:shared``), saved as ``vocab.json`` beside them."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bindlab.data.toy_vocab import WORD_RE, default_words

SPECIALS = ("[PAD]", "[UNK]", "[BOS]", "[EOS]")
PAD, UNK, BOS, EOS = range(4)


@dataclass
class WordTokenizer:
    """Lower-cased word-level tokenizer: one token per :data:`WORD_RE` word, punctuation dropped, unknown -> [UNK].

    ``encode`` returns ``[BOS] w1 .. wn [EOS]``; ``spans`` gives each position's character span in the text.
    """

    vocab: list[str]  # specials first, then words
    max_len: int = 48  # positions including [BOS] and [EOS]; longer captions are cut before [EOS]

    def __post_init__(self) -> None:
        if tuple(self.vocab[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a toy vocabulary starts with {SPECIALS}")
        self.index = {w: i for i, w in enumerate(self.vocab)}

    @classmethod
    def build(cls, max_len: int = 48) -> WordTokenizer:
        """The tokenizer over :func:`bindlab.data.toy_vocab.default_words`."""
        return cls([*SPECIALS, *default_words()], max_len)

    @classmethod
    def load(cls, path: str | Path) -> WordTokenizer:
        """Read a ``vocab.json`` written by :meth:`save`."""
        data = json.loads(Path(path).read_text())
        return cls(list(data["vocab"]), int(data["max_len"]))

    def save(self, path: str | Path) -> None:
        """Write ``{"vocab": [...], "max_len": n}`` to ``path``."""
        Path(path).write_text(json.dumps({"vocab": self.vocab, "max_len": self.max_len}, indent=1))

    def __len__(self) -> int:
        return len(self.vocab)

    def words(self, text: str) -> list[re.Match]:
        """The word matches of ``text``, in order."""
        return list(WORD_RE.finditer(text))

    def encode(self, text: str) -> tuple[list[int], list[tuple[int, int] | None], bool]:
        """text -> (ids, per-position caption spans (None for [BOS]/[EOS]), truncated)."""
        found = self.words(text)
        keep = found[: self.max_len - 2]
        ids = [BOS] + [self.index.get(m.group().lower(), UNK) for m in keep] + [EOS]
        spans: list[tuple[int, int] | None] = [None] + [m.span() for m in keep] + [None]
        return ids, spans, len(keep) < len(found)

    @property
    def max_words(self) -> int:
        """The most words a text may have before it is cut (``max_len`` less [BOS] and [EOS])."""
        return self.max_len - 2

    def truncated(self, text: str) -> bool:
        """Whether ``text`` has more than :attr:`max_words` words, so :meth:`encode` cuts it."""
        return len(self.words(text)) > self.max_words

    def unknown(self, text: str) -> list[str]:
        """The words of ``text`` outside the vocabulary (each becomes ``[UNK]``), in order, as written."""
        return [m.group() for m in self.words(text) if m.group().lower() not in self.index]

    def batch(self, texts: Sequence[str]) -> np.ndarray:
        """Right-padded id matrix (n, longest) int64, padding = [PAD] = 0."""
        rows = [self.encode(t)[0] for t in texts]
        out = np.zeros((len(rows), max(len(r) for r in rows)), dtype=np.int64)
        for i, r in enumerate(rows):
            out[i, : len(r)] = r
        return out

    def tokens(self, ids: Sequence[int]) -> list[str]:
        """Token strings of ``ids``."""
        return [self.vocab[i] for i in ids]
