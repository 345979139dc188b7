"""Texts an encoder cuts at its token limit, counted where the number is shown (not only in the server log).

An encoder that can say which texts it truncates has ``truncated(texts) -> list[bool]`` and ``token_limit`` (the
most tokens a text keeps); :func:`truncation` reads them for the texts a study scores, and :func:`truncation_text`
says it in one sentence for a result's notes and a tab's summary line. An encoder without the method cannot say
(:func:`truncation` gives None): nothing is claimed for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bindlab.encoders.base import EncoderError


def truncated(encoder: Any, texts: Sequence[str]) -> list[bool] | None:
    """Per text, whether ``encoder`` cuts it at its token limit; None when the encoder cannot say (it has no
    ``truncated`` method, or a wrapper whose inner encoder has none).

    Raises:
        EncoderError: the encoder answered for another number of texts.
    """
    report = getattr(encoder, "truncated", None)
    if report is None or not callable(report):
        return None
    out = report(list(texts))
    if out is None:
        return None
    if len(out) != len(texts):
        raise EncoderError(
            f"{getattr(encoder, 'id', encoder)}: truncated gave {len(out)} answers for {len(texts)} texts"
        )
    return [bool(t) for t in out]


def truncation(encoder: Any, texts: Sequence[str]) -> dict[str, Any] | None:
    """How many of ``texts`` (duplicates counted once) ``encoder`` truncates, and to how many tokens.

    Returns:
        ``{"model", "n_truncated", "n_texts", "max_tokens", "max_words"}`` (``max_words``: the words a text keeps,
        when the tokenizer is word-level, else None), or None when the encoder cannot say or there are no texts.
    """
    unique = list(dict.fromkeys(t for t in texts if isinstance(t, str) and t.strip()))
    if not unique:
        return None
    flags = truncated(encoder, unique)
    if flags is None:
        return None
    tokenizer = getattr(encoder, "tokenizer", None)
    return {
        "model": str(getattr(encoder, "id", encoder)),
        "n_truncated": sum(flags),
        "n_texts": len(unique),
        "max_tokens": getattr(encoder, "token_limit", None),
        "max_words": getattr(tokenizer, "max_words", None),
    }


def truncation_text(report: dict[str, Any] | None) -> str:
    """One sentence on a :func:`truncation` report: how many texts were cut and to how many tokens; "" when none
    was (or the encoder cannot say)."""
    if not report or not report.get("n_truncated"):
        return ""
    n, total, limit = report["n_truncated"], report["n_texts"], report.get("max_tokens")
    to = f" to {limit} tokens" if limit else ""
    words = f" (words after word {report['max_words']} are not read)" if report.get("max_words") else ""
    return f"{report['model']} truncated {n} of {total} texts{to}{words}."
