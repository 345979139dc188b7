"""Words and positions: the word view of a caption, article checks, and word-level permutation (negatives)."""

from __future__ import annotations

import string

from bindlab.data.vocab import article

PUNCT = string.punctuation + "\u2018\u2019\u201c\u201d\u2013\u2014\u2026"  # stripped from word edges


def words_of(text: str) -> list[str]:
    """Lower-cased words of a text, punctuation stripped (hyphens and apostrophes inside words kept)."""
    return [w for t in text.lower().split() if (w := t.strip(PUNCT))]


def folded(words: list[str]) -> list[str]:
    """Words with ``an`` read as ``a`` (negatives are permutations up to article repair)."""
    return ["a" if w == "an" else w for w in words]


def article_errors(words: list[str]) -> list[int]:
    """Positions of ``a``/``an`` that disagree with the pronunciation of the next word."""
    return [i for i, w in enumerate(words[:-1]) if w in ("a", "an") and w != article(words[i + 1])]


def permute_words(text: str, replacements: dict[str, str]) -> str:
    """Replace whole words (each ``old -> new``, simultaneously), keep punctuation and case, repair a/an.

    Only articles directly before a replaced word are repaired ("an apple" -> "a kite"), so the result is a
    word-level permutation of the input whenever ``replacements`` permutes words of the text.
    """
    toks = text.split()
    changed: list[int] = []
    for i, tok in enumerate(toks):
        core = tok.strip(PUNCT)
        new = replacements.get(core.lower())
        if new is None:
            continue
        start = tok.find(core)
        new = new[0].upper() + new[1:] if core[:1].isupper() else new
        toks[i] = tok[:start] + new + tok[start + len(core) :]
        changed.append(i)
    for i in changed:
        j = i - 1
        if j >= 0 and toks[j].lower() in ("a", "an"):  # a bare article right before a replaced word
            right = article(toks[i].strip(PUNCT))
            toks[j] = right.capitalize() if toks[j][0].isupper() else right
    return " ".join(toks)
