"""Pure data -> plotly Figure builders for the Attention tab: margin curves with bands, a word x word heatmap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from bindlab.present.figures import message_figure

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def result_curves(res: dict[str, Any]) -> list[dict[str, Any]]:
    """One curve per (model, caption set) of a :func:`~bindlab.analysis.attention.results_json` document."""
    from bindlab.studies.attention import curve_data

    return curve_data(res)


def margin_curves(curves: Sequence[dict[str, Any]], title: str = "Attention binding margin per layer") -> go.Figure:
    """Line chart of the mean margin per layer, one line per curve, its 95 % interval as a shaded band.

    Args:
        curves: ``{"label", "layers", "margin_mean", "ci_low", "ci_high"}`` dicts (values may be None).
    """
    curves = [c for c in curves if c and c.get("layers")]
    if not curves:
        return message_figure("no margins to show yet")
    fig = go.Figure()
    for k, c in enumerate(curves):
        colour = COLOURS[k % len(COLOURS)]
        x = list(c["layers"])
        if c.get("ci_low") and None not in c["ci_low"] + c["ci_high"]:
            band = list(c["ci_high"]) + list(c["ci_low"])[::-1]  # upper edge left to right, lower edge back
            fig.add_trace(go.Scatter(x=x + x[::-1], y=band, fill="toself", mode="lines",
                                     fillcolor=_rgba(colour, 0.18), line=dict(width=0), hoverinfo="skip",
                                     name=f"{c['label']} 95% CI", showlegend=False))
        fig.add_trace(go.Scatter(x=x, y=c["margin_mean"], mode="lines+markers", name=c["label"],
                                 line=dict(color=colour, width=2.5),
                                 hovertemplate="layer %{x}: %{y:+.4f}<extra>" + c["label"] + "</extra>"))
    fig.add_hline(y=0, line_dash="dash", line_color="grey", annotation_text="no preference")
    fig.update_layout(title=title, xaxis_title="layer (0 = first transformer block)",
                      yaxis_title="own − other attribute attention", height=380,
                      margin=dict(l=60, r=20, t=50, b=40), legend=dict(orientation="h", y=-0.25))
    return fig


def attention_heatmap(words: Sequence[str], matrix: Any, pairs: Sequence[tuple[int, int, bool]],
                      title: str = "") -> go.Figure:
    """Word x word attention (row = from word, column = to word) with binding pairs outlined.

    Args:
        words: ``(W,)`` caption words.
        matrix: ``(W, W)`` word-level attention.
        pairs: ``(from word, to word, own)`` cells to outline: green for an object and its own attribute, red for
            an object and another object's attribute.
    """
    if not len(words):
        return message_figure("no words to show")
    labels = [f"{i}:{w}" for i, w in enumerate(words)]  # index prefix keeps repeated words apart
    fig = go.Figure(go.Heatmap(z=matrix, x=labels, y=labels, colorscale="Blues", colorbar=dict(title="attention"),
                               hovertemplate="from %{y} to %{x}: %{z:.4f}<extra></extra>"))
    for r, c, own in pairs:
        fig.add_shape(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5,
                      line=dict(color="#2ca02c" if own else "#d62728", width=3 if own else 1.5,
                                dash="solid" if own else "dot"))
    fig.update_layout(title=title, xaxis_title="to (earlier word when later→earlier)", yaxis_title="from",
                      yaxis_autorange="reversed", height=460, margin=dict(l=90, r=20, t=50, b=90))
    return fig
