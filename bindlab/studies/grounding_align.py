"""Global alignment baselines on a factor grid (``ground --align shared|factor``, the Grounding tab's view).

For each requested factor: fit ``A`` (:func:`bindlab.analysis.alignment.fit_global_map`) on the calibration split
of that factor's protocol, choose its checkpoint on the validation split, then read out on test (a) the aligned
native queries ``norm(A q)`` ("global") and (b) matched grounding on top of them ("global + matched": directions
from calibration, alpha re-selected on validation) next to native and matched grounding in the native space.
Fitting only ever receives calibration and validation rows; the test split is read once, after every choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bindlab.analysis.alignment import FACTOR_ORDER, AlignmentFit, caption_table, caption_texts, fit_global_map
from bindlab.analysis.grounding import value_index
from bindlab.studies.progress import Progress

__all__ = ["alignment_reports", "alignment_summary", "cells_of", "fit_for"]


def cells_of(session: Any) -> np.ndarray:
    """``(n, 3)`` value positions (shape, hue, pattern) of every grid image."""
    idx = session.index
    return np.stack([value_index(idx.labels(f), idx.values(f)) for f in FACTOR_ORDER], axis=1)


def _captions(session: Any) -> np.ndarray:
    cache = session.__dict__.setdefault("_caption_table", {})
    if "table" not in cache:
        vocab = {f: session.index.values(f) for f in FACTOR_ORDER}
        cache["table"] = caption_table(np.asarray(session.embed_texts(caption_texts(vocab))), vocab)
    return cache["table"]


def fit_for(session: Any, factor: str, scope: str, **options: Any) -> AlignmentFit:
    """The global map that serves ``factor`` under the session's protocol (``A_f`` or ``A_shared``).

    ``A_shared`` uses every factor's hard negatives and validation readout on the split of ``factor``'s protocol
    (under the context protocol all factors share that split, so one shared map serves them all and is cached).
    """
    masks = session.masks_for(factor)
    key = (scope, factor if scope == "factor" or session.protocol != "context" else "*", tuple(sorted(options.items())))
    cache = session.__dict__.setdefault("_alignment_fits", {})
    if key not in cache:
        cells = cells_of(session)
        cal, val = masks["calibration"], masks["validation"]
        queries = {f: session.native(f) for f in FACTOR_ORDER}
        cache[key] = fit_global_map(
            session.embeddings[cal],
            cells[cal],
            session.embeddings[val],
            cells[val],
            _captions(session),
            queries,
            scope,
            factor if scope == "factor" else None,
            **options,
        )
    return cache[key]


def alignment_reports(
    session: Any, factors: Sequence[str], scope: str, progress: Progress | None = None, **options: Any
) -> dict[str, dict[str, Any]]:
    """Per factor: the chosen map and test macro-mAP / top-1 of native, matched, global and global + matched.

    Args:
        session: an open :class:`~bindlab.studies.grounding.GroundingSession` (any protocol view).
        factors: factors to report.
        scope: ``"shared"`` or ``"factor"``.
        progress: optional ``progress(fraction, message)``.
        options: passed to :func:`fit_global_map` (``lrs``, ``epochs``, ``batch_size``, ...; tests shrink them).
    """
    out: dict[str, dict[str, Any]] = {}
    for i, f in enumerate(factors):
        if progress:
            progress(i / max(len(factors), 1), f"training the {scope} alignment map for {f}")
        fit = fit_for(session, f, scope, **options)
        native = _readouts(session, f)
        aligned = _readouts(session.view(queries={f: fit.apply(session.native(f))}), f)
        out[f] = {
            "scope": scope,
            "map": fit.to_dict(),
            "alpha": aligned["alpha"],
            "test": {
                "native": native["test"]["native"],
                "matched": native["test"]["grounded"],
                "global": aligned["test"]["native"],
                "global_matched": aligned["test"]["grounded"],
            },
            "per_value": [
                {
                    "value": a["value"],
                    "ap_native": n["ap_native"],
                    "ap_matched": n["ap_grounded"],
                    "ap_global": a["ap_native"],
                    "ap_global_matched": a["ap_grounded"],
                }
                for n, a in zip(native["per_value"], aligned["per_value"], strict=True)
            ],
        }
    return out


def _readouts(session: Any, factor: str) -> dict[str, Any]:
    """Test native vs grounded readouts at the validation-chosen alpha (as ``factor_report`` without controls)."""
    state = session.state(factor)
    alpha = state.select_alpha().value
    view = state.at_alpha(alpha)
    return {
        "alpha": alpha,
        "test": {
            "native": {"macro_map": view["map_native"], "top1": view["top1_native"]},
            "grounded": {"macro_map": view["map_grounded"], "top1": view["top1_grounded"]},
        },
        "per_value": [
            {"value": v, "ap_native": view["ap_native"][i], "ap_grounded": view["ap_grounded"][i]}
            for i, v in enumerate(view["values"])
        ],
    }


def alignment_summary(reports: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Means over the factors of test macro-mAP of the global and global + matched readouts."""
    blocks = [r["alignment"]["test"] for r in reports.values() if "alignment" in r]
    return (
        {f"{k}_macro_map": float(np.mean([b[k]["macro_map"] for b in blocks])) for k in ("global", "global_matched")}
        if blocks
        else {}
    )
