"""Pure data -> plotly Figure builders for the Grounding tab (no state, no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

NATIVE, GROUNDED, TARGET, OTHER = "#7f7f7f", "#d62728", "#1f77b4", "#c7c7c7"


def margin_curve(alphas: Sequence[float], margin: Sequence[float], alpha: float, alpha_star: float,
                 chosen: float | None = None, value: str = "") -> go.Figure:
    """Closed-form calibration margin ``M(alpha)`` of one value, its current point, ``alpha*`` and the chosen alpha.

    Args:
        alphas, margin: ``(m,)`` the curve.
        alpha: the slider position (its margin is interpolated on the curve).
        alpha_star: the zero crossing ``-c`` (drawn when it lies inside the curve's range).
        chosen: the validation-selected alpha, if known.
    """
    fig = go.Figure(go.Scatter(x=list(alphas), y=list(margin), mode="lines", name="M(α)",
                               line=dict(color=GROUNDED, width=2)))
    fig.add_trace(go.Scatter(x=[alpha], y=[float(np.interp(alpha, alphas, margin))], mode="markers",
                             name=f"α = {alpha:.2f}", marker=dict(size=12, color="black")))
    fig.add_hline(y=0, line=dict(color="#999", dash="dot"))
    if min(alphas) <= alpha_star <= max(alphas):
        fig.add_vline(x=alpha_star, line=dict(color=TARGET, dash="dash"), annotation_text=f"α* = {alpha_star:.2f}")
    if chosen is not None:
        fig.add_vline(x=chosen, line=dict(color="#2ca02c", dash="dot"), annotation_text=f"validation α = {chosen:.2f}",
                      annotation_position="bottom right")
    fig.update_layout(title=f"matched margin M(α) for {value!r} (α* = {alpha_star:.2f})", xaxis_title="α",
                      yaxis_title="margin on calibration contrast", height=330, margin=dict(l=50, r=20, t=50, b=40),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def ap_bars(values: Sequence[str], ap_native: Sequence[float], ap_grounded: Sequence[float], alpha: float,
            highlight: str | None = None) -> go.Figure:
    """Per-value test AP, native versus grounded at ``alpha``; the selected value's label is bold."""
    labels = [f"<b>{v}</b>" if v == highlight else str(v) for v in values]
    fig = go.Figure([go.Bar(x=labels, y=list(ap_native), name="native", marker_color=NATIVE),
                     go.Bar(x=labels, y=list(ap_grounded), name=f"grounded (α = {alpha:.2f})", marker_color=GROUNDED)])
    fig.update_layout(barmode="group", title="test AP per value", yaxis=dict(range=[0, 1], title="AP"), height=330,
                      margin=dict(l=50, r=20, t=50, b=40), legend=dict(orientation="h", y=-0.25))
    return fig


def grounding_plane(plane: dict[str, Any], value: str, alpha: float) -> go.Figure:
    """Test images projected on the (d_v, q_v⊥) plane with the arrows q, q'(α) and d.

    Args:
        plane: ``{"x", "y", "positive", "q", "q_alpha", "d"}`` as from ``grounding_session.slider_view``.
    """
    pos = [bool(p) for p in plane["positive"]]
    fig = go.Figure()
    for flag, name, colour in ((False, "other values", OTHER), (True, f"{value}", TARGET)):
        xs = [x for x, p in zip(plane["x"], pos, strict=True) if p == flag]
        ys = [y for y, p in zip(plane["y"], pos, strict=True) if p == flag]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=f"test images: {name}",
                                 marker=dict(size=4, color=colour, opacity=0.6)))
    for key, name, colour in (("q", "q (native)", NATIVE), ("q_alpha", f"q'(α={alpha:.2f})", GROUNDED),
                              ("d", "d (direction)", "#2ca02c")):
        x, y = plane[key]
        fig.add_trace(go.Scatter(x=[0, x], y=[0, y], mode="lines+markers", name=name,
                                 line=dict(color=colour, width=3), marker=dict(size=[0, 10], color=colour)))
    fig.update_layout(title="2-D view: plane of d and q (exact for q, q'(α), d)", xaxis_title="· d_v",
                      yaxis_title="· q_v⊥", height=420, margin=dict(l=50, r=20, t=50, b=40),
                      yaxis=dict(scaleanchor="x"), legend=dict(orientation="h", y=-0.2))
    return fig
