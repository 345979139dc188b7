"""A study's :class:`~bindlab.result.Result` as plotly figures, by its feature: the figures its export
writes (:mod:`bindlab.present.exports`, the ones the CLI's ``--export`` and the tabs draw), plus the mAP-by-N chart of
a retrieval result and the leaderboard of a comparison. ``bindlab.plot(result)`` in the Python API calls this."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go

from bindlab.present.figures import SIDE_LEGEND, message_figure
from bindlab.present.safe_text import plot_text
from bindlab.result import Result


def map_by_n(rows: list[dict[str, Any]], title: str = "Retrieval mAP by number of objects") -> go.Figure:
    """mAP against N, one line per pairing.

    Args:
        rows: ``{"pairing", "n_objects", "map"}`` (a retrieval result's ``map_by_n`` table).
    """
    if not rows:
        return message_figure("no queries to summarise")
    fig = go.Figure()
    for pairing in dict.fromkeys(r["pairing"] for r in rows):
        pts = sorted((r for r in rows if r["pairing"] == pairing), key=lambda r: r["n_objects"])
        fig.add_trace(
            go.Scatter(
                x=[r["n_objects"] for r in pts],
                y=[r["map"] for r in pts],
                mode="lines+markers",
                name=plot_text(pairing),
                hovertemplate="N=%{x}: mAP %{y:.3f}<extra>" + plot_text(pairing) + "</extra>",
            )
        )
    fig.update_layout(
        title=title,
        xaxis_title="number of objects (N)",
        yaxis_title="mAP",
        yaxis_range=[0, 1.02],
        height=360,
        margin=dict(l=50, r=20, t=50, b=40),
        legend=SIDE_LEGEND,
    )
    return fig


def _mcq(result: Result) -> dict[str, Any]:
    from bindlab.present.exports import mcq_export

    return mcq_export(result).figures


def _retrieval(result: Result) -> dict[str, Any]:
    model = result.provenance.get("encoder", {}).get("id", "")
    title = f"{plot_text(model)}: retrieval mAP by number of objects" if model else "Retrieval mAP by number of objects"
    return {"map_by_n": map_by_n(result.tables["map_by_n"], title=title)}


def _pairs(result: Result) -> dict[str, Any]:
    from bindlab.present.exports import pairs_export

    return pairs_export(result).figures


def _compare(result: Result) -> dict[str, Any]:
    from bindlab.present.compare_figures import leaderboard_figure
    from bindlab.present.exports import models_compare_export

    board = {"leaderboard": leaderboard_figure(result.tables["scores"], result.summary["sort_by"])}
    return {**board, **models_compare_export(result).figures}


def _attention(result: Result) -> dict[str, Any]:
    from bindlab.present.exports import attention_export

    return attention_export(result).figures


def _grounding(result: Result) -> dict[str, Any]:
    from bindlab.present.exports import grounding_export

    return grounding_export(result).figures


def _finetune(result: Result) -> dict[str, Any]:
    from bindlab.present.exports import compare_export

    return compare_export(result).figures


def _map(result: Result) -> dict[str, Any]:
    from bindlab.present.exports import map_export

    return map_export(result).figures


FIGURES: dict[str, Callable[[Result], dict[str, Any]]] = {
    "mcq": _mcq,
    "retrieval": _retrieval,
    "pairs": _pairs,
    "compare": _compare,
    "attention": _attention,
    "grounding": _grounding,
    "finetune": _finetune,
    "map": _map,
}


def result_figures(result: Result) -> dict[str, go.Figure]:
    """Every figure of ``result`` by name, the headline one first (e.g. ``accuracy_by_n`` of an MCQ result,
    ``leaderboard`` of a comparison).

    Raises:
        ValueError: a study with no figures here, or a result without the tables its figures draw (one loaded from a
            summary-only ``--out`` file), saying which.
    """
    build = FIGURES.get(result.feature)
    if build is None:
        raise ValueError(
            f"no figures for a {result.feature or 'nameless'!r} result; results of "
            f"{', '.join(sorted(FIGURES))} have them (res.to_pandas() holds this one's rows)"
        )
    try:
        figures = build(result)
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        raise ValueError(
            f"this {result.feature} result lacks the data its figures draw ({type(e).__name__}: {e})"
            + ("; it was loaded from a summary-only file" if not result.tables and not result.rows else "")
        ) from None
    if not figures:
        raise ValueError(f"this {result.feature} result has nothing to draw")
    return figures


def plot_result(result: Result, kind: str | None = None) -> go.Figure:
    """One figure of ``result``: ``kind`` names it (see :func:`result_figures`); None = the headline figure.

    Raises:
        ValueError: as :func:`result_figures`, or a ``kind`` the result does not have, listing the ones it has.
    """
    figures = result_figures(result)
    if kind is None:
        return next(iter(figures.values()))
    if kind not in figures:
        raise ValueError(f"a {result.feature} result has no figure {kind!r}; it has {', '.join(figures)}")
    return figures[kind]
