"""``bow:words`` — a pure bag-of-words text encoder, the baseline that cannot bind by construction.

Each lower-cased word (letters, digits, hyphens) is hashed into one of ``dim`` buckets with a fixed sign; the
embedding is the L2-normalised count vector of the content words :func:`bindlab.data.vocab.tokens`. Word order
never matters, so a binding swap — same words, other order — gets *exactly* the same embedding and ties with the
preserve candidate.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from bindlab.data.vocab import tokens
from bindlab.encoders.base import EncoderError, EncoderId, TextOnlyMixin, check_texts, register_backend


class BagOfWordsEncoder(TextOnlyMixin):
    """Order-invariant hashed word counts, L2-normalised."""

    modalities = frozenset({"text"})

    def __init__(self, dim: int = 4096) -> None:
        if dim < 16:
            raise ValueError(f"bag-of-words dim must be at least 16, got {dim}")
        self.dim = dim
        self.id = "bow:words"
        self.fingerprint = f"bow:words:dim={dim}:v1"

    def _bucket(self, word: str) -> tuple[int, float]:
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        return h % self.dim, (1.0 if (h >> 63) & 1 else -1.0)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        texts = check_texts(texts, self.id)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)  # (n, dim)
        for i, text in enumerate(texts):
            for w in tokens(text):
                j, s = self._bucket(w)
                out[i, j] += s
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        if np.any(norms == 0):
            bad = int(np.flatnonzero(norms[:, 0] == 0)[0])
            raise EncoderError(f"{self.id}: text #{bad} ({texts[bad]!r}) has no content words to count")
        return out / norms

    def unknown_words(self, texts: list[str]) -> list[list[str]]:
        """No word is unknown: every word is hashed into a bucket (stop words are left out, not unknown)."""
        return [[] for _ in check_texts(texts, self.id)]


def _load(eid: EncoderId, options: dict[str, Any]) -> BagOfWordsEncoder:
    if eid.name != "words":
        raise EncoderError(f"unknown bag-of-words encoder {str(eid)!r}; the only one is 'bow:words' (alias 'bow')")
    return BagOfWordsEncoder(dim=int(options.get("dim", 4096)))


register_backend("bow", _load, "pure bag-of-words baseline (order-invariant: binding swaps tie exactly)")
