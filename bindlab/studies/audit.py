"""The split audit (``audit-splits``): held out means absent, proven from the data (the CLI's and Python's entry).

Two scans, each independent of the generator's bookkeeping: a triplet folder's texts
(:mod:`bindlab.data.triplets.audit`) and a toy model's training streams regenerated from its ``training.json``
(:mod:`bindlab.train.toy.audit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def tokenizers_of(models: Sequence[str]) -> dict[str, Any]:
    """``{model: pieces(word)}``: each model's own tokenizer (WordPiece for ``minilm`` and ``toy:lit-minilm``); a
    model with a word-level tokenizer (the other toys) reads a word whole, and the stem and letter checks cover it."""
    from bindlab.encoders.base import load_encoder

    out: dict[str, Any] = {}
    for m in models:
        tok = getattr(load_encoder(m), "tokenizer", None)
        if tok is not None and hasattr(tok, "tokenize"):
            out[m] = tok.tokenize
        else:
            out[m] = lambda w: [w]
    return out


def audit_splits(
    data: str | Path | None = None, toy: str | None = None, models: Sequence[str] = ("minilm",)
) -> dict[str, Any]:
    """``{"triplets": report, "toy": report}`` for what was given (at least one); each report has ``clean``. The
    triplet audit also checks held-out words below the word, by stem and with the tokenizer of each of ``models``
    (the models the set is used with; default the bundled MiniLM's WordPiece).

    Raises:
        DataError: neither given, or the toy model has no ``training.json``.
    """
    from bindlab.data.schema import DataError

    if not data and not toy:
        raise DataError("audit-splits needs a triplet folder (DIR) or --toy MODEL (e.g. toy:shared)")
    out: dict[str, Any] = {}
    if data:
        from bindlab.data.triplets.audit import audit_triplets
        from bindlab.studies.validate import data_input

        out["triplets"] = audit_triplets(data_input(str(data)), tokenizers_of(models))
    if toy:
        from bindlab.train.toy.audit import audit_toy

        out["toy"] = audit_toy(toy)
    return out


def format_audits(result: dict[str, Any]) -> str:
    """Both reports as plain text."""
    from bindlab.data.triplets.audit import format_audit
    from bindlab.train.toy.audit import format_toy_audit

    parts = []
    if "triplets" in result:
        parts.append(format_audit(result["triplets"]))
    if "toy" in result:
        parts.append(format_toy_audit(result["toy"]))
    return "\n".join(parts)


__all__ = ["audit_splits", "format_audits", "tokenizers_of"]
