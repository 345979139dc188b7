"""Pure data -> plotly Figure builders. A builder given nothing to draw returns an empty figure with a message."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

SUBSET_COLOURS = {"all": "#1f77b4", "independent": "#2ca02c", "nested": "#ff7f0e"}


def message_figure(text: str) -> go.Figure:
    """An empty figure that shows ``text`` in its middle (used instead of a broken chart)."""
    fig = go.Figure()
    fig.add_annotation(text=text, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(xaxis_visible=False, yaxis_visible=False, height=320, margin=dict(l=20, r=20, t=40, b=20))
    return fig


def accuracy_by_n(rows: list[dict[str, Any]], title: str = "MCQ accuracy by number of objects",
                  chance: float = 0.25) -> go.Figure:
    """Line chart of accuracy vs N, one line per subset, with the chance level dashed.

    Args:
        rows: ``{"n_objects", "subset", "accuracy", "n"}`` dicts.
    """
    if not rows:
        return message_figure("no questions to summarise")
    fig = go.Figure()
    for subset in ("all", "independent", "nested"):
        pts = sorted((r for r in rows if r["subset"] == subset), key=lambda r: r["n_objects"])
        if not pts:
            continue
        fig.add_trace(go.Scatter(
            x=[r["n_objects"] for r in pts], y=[r["accuracy"] for r in pts], mode="lines+markers", name=subset,
            line=dict(color=SUBSET_COLOURS[subset], width=3 if subset == "all" else 1.5),
            customdata=[r["n"] for r in pts], hovertemplate="N=%{x}: %{y:.3f} (n=%{customdata})<extra>" + subset + "</extra>",
        ))
    fig.add_hline(y=chance, line_dash="dash", line_color="grey", annotation_text=f"chance {chance:.2f}")
    fig.update_layout(title=title, xaxis_title="number of objects (N)", yaxis_title="accuracy", yaxis_range=[0, 1.02],
                      height=360, margin=dict(l=50, r=20, t=50, b=40), legend=dict(orientation="h", y=-0.2))
    return fig
