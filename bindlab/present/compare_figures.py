"""Figures of a model comparison (``compare``, the Compare tab): pure rows -> plotly Figure builders."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from bindlab.eval.metrics import task_chance
from bindlab.present.figures import SIDE_LEGEND, add_chance_by_n, message_figure
from bindlab.present.safe_text import plot_text

PAIRS_CHANCE_GROUP = task_chance("pairs_group")


def by_n_figure(rows: list[dict[str, Any]], pairing: str | None = None, chance: float = 0.25) -> go.Figure:
    """MCQ accuracy against N, one line per model, chance dashed (per N from the rows' ``chance``: every model is
    scored on the same questions, so the first model's rows give it).

    Args:
        rows: ``{"model", "pairing", "n_objects", "accuracy", "n", "chance"?}`` (the comparison's ``by_n`` table).
        pairing: the pairing drawn (default: the first in ``rows``).
    """
    if not rows:
        return message_figure("no MCQ results: add mcq to the suite")
    pairing = pairing or rows[0]["pairing"]
    fig = go.Figure()
    for model in dict.fromkeys(r["model"] for r in rows):
        pts = sorted((r for r in rows if r["model"] == model and r["pairing"] == pairing), key=lambda r: r["n_objects"])
        if pts:
            fig.add_trace(
                go.Scatter(
                    x=[r["n_objects"] for r in pts],
                    y=[r["accuracy"] for r in pts],
                    mode="lines+markers",
                    name=plot_text(model),
                    customdata=[r["n"] for r in pts],
                    hovertemplate="N=%{x}: %{y:.3f} (n=%{customdata})<extra>" + plot_text(model) + "</extra>",
                )
            )
    first = next(iter(dict.fromkeys(r["model"] for r in rows if r["pairing"] == pairing)), None)
    add_chance_by_n(fig, [r for r in rows if r["model"] == first and r["pairing"] == pairing], chance)
    fig.update_layout(
        title=f"MCQ accuracy by number of objects ({plot_text(pairing)})",
        xaxis_title="number of objects (N)",
        yaxis_title="accuracy",
        yaxis_range=[0, 1.02],
        height=380,
        margin=dict(l=50, r=20, t=50, b=40),
        legend=SIDE_LEGEND,
    )
    return fig


def by_edit_type_figure(rows: list[dict[str, Any]], metric: str = "group") -> go.Figure:
    """Grouped bars of a 2x2 score per edit type, one bar per model, with ``n`` per type on the axis.

    Args:
        rows: ``{"model", "edit_type", "n", "i2t", "t2i", "group"}`` (the comparison's ``by_edit_type`` table); a row
            whose ``origin`` is "composet" (the CompoSET paper's edit types) is marked ◆.
        metric: ``group`` | ``i2t`` | ``t2i``.
    """
    if not rows:
        return message_figure("no pairs results: add pairs to the suite and an image+text model")
    types = list(dict.fromkeys(r["edit_type"] for r in rows))
    n = {r["edit_type"]: r["n"] for r in rows}
    paper = {r["edit_type"] for r in rows if r.get("origin") == "composet"}  # the CompoSET paper's own types: ◆
    labels = [f"{'◆ ' if t in paper else ''}{plot_text(t)} (n={n[t]})" for t in types]
    fig = go.Figure()
    for model in dict.fromkeys(r["model"] for r in rows):
        by = {r["edit_type"]: r[metric] for r in rows if r["model"] == model}
        fig.add_trace(
            go.Bar(
                x=labels,
                y=[by.get(t) for t in types],
                name=plot_text(model),
                hovertemplate="%{x}: %{y:.3f}<extra>" + plot_text(model) + "</extra>",
            )
        )
    chance = task_chance(f"pairs_{metric}")
    fig.add_hline(
        y=chance,
        line_dash="dash",
        line_color="grey",
        annotation_text=f"chance {chance:.3f}",
        annotation_position="top right",
    )
    name = "Group" if metric == "group" else metric.upper()
    marked = " (◆ = the CompoSET paper's edit types)" if paper else ""
    fig.update_layout(
        title=f"Pairs {name} score by edit type{marked}",
        barmode="group",
        yaxis_title=name,
        yaxis_range=[0, 1.02],
        height=400,
        margin=dict(l=50, r=20, t=50, b=120),
        xaxis_tickangle=-35,
        legend=dict(orientation="h", y=1.08),
    )
    return fig


def leaderboard_figure(scores: list[dict[str, Any]], column: str) -> go.Figure:
    """One score per model as bars with 95 % interval whiskers (the leaderboard's sort column).

    Args:
        scores: the comparison's long-form ``scores`` table.
        column: the leaderboard column drawn, e.g. ``"MCQ tt"``.
    """
    pts = [s for s in scores if s["column"] == column and s["value"] is not None]
    if not pts:
        return message_figure(f"no scores for {plot_text(repr(column))}")
    pts.sort(key=lambda s: -s["value"])
    err_hi = [(s["ci95_high"] - s["value"]) if s["ci95_high"] is not None else 0 for s in pts]
    err_lo = [(s["value"] - s["ci95_low"]) if s["ci95_low"] is not None else 0 for s in pts]
    fig = go.Figure(
        go.Bar(
            x=[plot_text(s["model"]) for s in pts],
            y=[s["value"] for s in pts],
            error_y=dict(type="data", array=err_hi, arrayminus=err_lo),
        )
    )
    if pts[0]["chance"] is not None:
        fig.add_hline(
            y=pts[0]["chance"], line_dash="dash", line_color="grey", annotation_text=f"chance {pts[0]['chance']:.3f}"
        )
    fig.update_layout(
        title=f"{plot_text(column)} with 95% intervals",
        yaxis_title=plot_text(column),
        height=340,
        margin=dict(l=50, r=20, t=50, b=40),
    )
    return fig
