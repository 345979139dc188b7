"""Pure data -> plotly Figure builders for the Grounding tab (no state, no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from bindlab.present.safe_text import plot_text

NATIVE, GROUNDED, TARGET, OTHER = "#7f7f7f", "#d62728", "#1f77b4", "#c7c7c7"
# the other values' colours in the 2-D view (muted, none close to TARGET blue)
PALETTE = ("#e6a157", "#9bc48a", "#c9a0dc", "#e0c35a", "#8fc1c6", "#d98c9f", "#b5a48e", "#a3a3d1", "#c2c26a")


def margin_curve(
    alphas: Sequence[float],
    margin: Sequence[float],
    alpha: float,
    alpha_star: float | None,
    chosen: float | None = None,
    value: str = "",
) -> go.Figure:
    """Closed-form calibration margin ``M(alpha)`` of one value, its current point, ``alpha*`` and the chosen alpha.

    Args:
        alphas, margin: ``(m,)`` the curve.
        alpha: the slider position (its margin is interpolated on the curve).
        alpha_star: the zero crossing ``-c``, or ``None``/NaN where the margin has no crossing (``c`` outside
            (-1, 0)). When it exists it is marked on the curve (a point at ``(alpha*, 0)`` and a dashed line)
            and the α axis is extended to reach it if the curve's range does not.
        chosen: the validation-selected alpha, if known.
    """
    star = crossing_or_none(alpha_star)
    fig = go.Figure(
        go.Scatter(x=list(alphas), y=list(margin), mode="lines", name="M(α)", line=dict(color=GROUNDED, width=2))
    )
    fig.add_trace(
        go.Scatter(
            x=[alpha],
            y=[float(np.interp(alpha, alphas, margin))],
            mode="markers",
            name=f"α = {alpha:.2f}",
            marker=dict(size=12, color="black"),
        )
    )
    fig.add_hline(y=0, line=dict(color="#999", dash="dot"))
    if star is not None:
        fig.add_vline(x=star, line=dict(color=TARGET, dash="dash"))
        fig.add_trace(
            go.Scatter(
                x=[star],
                y=[0.0],
                mode="markers+text",
                name=f"α* = {star:.2f} (zero crossing)",
                text=[f"α* = {star:.2f}"],
                textposition="bottom right",
                cliponaxis=False,
                marker=dict(size=13, color=TARGET, symbol="diamond", line=dict(color="white", width=1)),
            )
        )
    if chosen is not None:
        fig.add_vline(
            x=chosen,
            line=dict(color="#2ca02c", dash="dot"),
            annotation_text=f"validation α = {chosen:.2f}",
            annotation_position="bottom right",
        )
    crossing = f"α* = {star:.2f}" if star is not None else "no zero crossing"
    fig.update_layout(
        title=f"matched margin M(α) for {plot_text(repr(value))} ({crossing})",
        xaxis_title="α",
        xaxis=dict(range=alpha_axis_range(alphas, star)),
        yaxis_title="margin on calibration contrast",
        height=330,
        margin=dict(l=50, r=20, t=50, b=40),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def crossing_or_none(alpha_star: float | None) -> float | None:
    """``alpha*`` as a float, or ``None`` where there is no crossing (``None`` or NaN)."""
    if alpha_star is None or not np.isfinite(alpha_star):
        return None
    return float(alpha_star)


def alpha_axis_range(alphas: Sequence[float], alpha_star: float | None) -> list[float]:
    """The α axis of the margin curve: the curve's range, extended to reach ``alpha*`` when it lies outside."""
    lo, hi = float(min(alphas)), float(max(alphas))
    if alpha_star is not None:
        lo, hi = min(lo, alpha_star), max(hi, alpha_star)
    pad = 0.02 * (hi - lo or 1.0)
    return [lo - pad, hi + pad]


def ap_bars(
    values: Sequence[str],
    ap_native: Sequence[float],
    ap_grounded: Sequence[float],
    alpha: float,
    highlight: str | None = None,
) -> go.Figure:
    """Per-value test AP, native versus grounded at ``alpha``; the selected value's label is bold."""
    labels = [f"<b>{plot_text(v)}</b>" if v == highlight else plot_text(v) for v in values]
    fig = go.Figure(
        [
            go.Bar(x=labels, y=list(ap_native), name="native", marker_color=NATIVE),
            go.Bar(x=labels, y=list(ap_grounded), name=f"grounded (α = {alpha:.2f})", marker_color=GROUNDED),
        ]
    )
    fig.update_layout(
        barmode="group",
        title="test AP per value",
        yaxis=dict(range=[0, 1], title="AP"),
        height=330,
        margin=dict(l=50, r=20, t=50, b=40),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def grounding_plane(plane: dict[str, Any], value: str, alpha: float) -> go.Figure:
    """Test images projected on the plane of ``d_v`` and ``q_v⊥``, zoomed to the images, with q, q'(α) and d.

    Each image ``g`` sits at ``(g·d_v, g·q_v⊥)``; every query in this plane (q, q'(α), d) scores an image by its
    projection on the query's direction, so images further along the q'(α) arrow rank higher. The axes are
    zoomed to the images (the arrows are unit directions, drawn from the images' centre at a length that fits
    the view); the target value's images are drawn last and larger, the other values in their own colours.

    Args:
        plane: ``{"x", "y", "positive", "q", "q_alpha", "d"}`` and optionally ``"labels"`` (each point's value)
            as from ``bindlab.studies.grounding.slider_view``.
    """
    x, y = np.asarray(plane["x"], dtype=float), np.asarray(plane["y"], dtype=float)
    pos = np.asarray(plane["positive"], dtype=bool)
    labels = plane.get("labels") or [value if p else "other values" for p in pos]
    fig = go.Figure()
    others = sorted({str(lab) for lab, p in zip(labels, pos, strict=True) if not p})
    for k, name in enumerate(others):
        m = np.array([str(lab) == name and not p for lab, p in zip(labels, pos, strict=True)], dtype=bool)
        colour = OTHER if name == "other values" else PALETTE[k % len(PALETTE)]
        fig.add_trace(
            go.Scatter(
                x=x[m],
                y=y[m],
                mode="markers",
                name=plot_text(name),
                legendgroup="others",
                marker=dict(size=6, color=colour, opacity=0.6),
            )
        )
    fig.add_trace(
        go.Scatter(
            x=x[pos],
            y=y[pos],
            mode="markers",
            name=f"{plot_text(value)} (target)",
            marker=dict(size=8, color=TARGET, opacity=0.9, line=dict(color="black", width=0.6)),
        )
    )
    xr, yr = _zoom(x), _zoom(y)
    centre = np.array([np.mean(xr), np.mean(yr)])
    length = 0.35 * min(xr[1] - xr[0], yr[1] - yr[0])
    for key, name, colour in (
        ("q", "q (text query)", NATIVE),
        ("q_alpha", f"q'(α={alpha:.2f}) (grounded)", GROUNDED),
        ("d", "d (image direction)", "#2ca02c"),
    ):
        u = np.asarray(plane[key], dtype=float)
        tip = centre + length * u / max(float(np.linalg.norm(u)), 1e-12)
        fig.add_annotation(
            x=tip[0],
            y=tip[1],
            ax=centre[0],
            ay=centre[1],
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            showarrow=True,
            arrowhead=2,
            arrowsize=1.3,
            arrowwidth=3,
            arrowcolor=colour,
            text="",
        )
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=name, line=dict(color=colour, width=3)))
    # The legend (a dozen entries: every value, the target, three arrows) stands beside the plot, clear of the axis
    # titles; below it, it took the plot's height and sat on the x title.
    fig.update_layout(
        title=f"2-D view of the test images: {plot_text(repr(value))} vs the rest<br>"
        "<sup>arrows: query directions</sup>",
        xaxis=dict(title=f"cosine with d (image direction of {plot_text(value)})", range=xr, automargin=True),
        yaxis=dict(title="cosine with q⊥ (query ⟂ d)", range=yr, scaleanchor="x", automargin=True),
        height=480,
        margin=dict(l=60, r=10, t=60, b=50),
        legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top", font=dict(size=11), tracegroupgap=2),
    )
    return fig


def _zoom(v: np.ndarray, pad: float = 0.08) -> list[float]:
    """An axis range around all the data, padded, never empty."""
    if v.size == 0:
        return [-1.0, 1.0]
    lo, hi = float(v.min()), float(v.max())
    span = max(float(hi - lo), 1e-3)
    return [float(lo - pad * span), float(hi + pad * span)]


SWEEP_READOUTS = {"native": "native text", "matched": "matched grounding", "image_prototype": "image prototype"}


def sweep_figure(rows: Sequence[dict[str, Any]], title: str = "Signal strength: test macro-mAP per γ") -> go.Figure:
    """The signal-strength sweep: test macro-mAP of the native text query, matched grounding and the image prototype
    against γ (1 = full pattern signal, 0 = none), one line per readout.

    Args:
        rows: :func:`bindlab.studies.grounding_sweep.run_grounding_sweep`'s rows (``gamma`` and one value per readout).
    """
    from bindlab.present.figures import message_figure

    if not rows:
        return message_figure("no signal strengths swept")
    pts = sorted(rows, key=lambda r: r["gamma"])
    fig = go.Figure()
    for key, name in SWEEP_READOUTS.items():
        fig.add_trace(
            go.Scatter(
                x=[r["gamma"] for r in pts],
                y=[r[key] for r in pts],
                mode="lines+markers",
                name=name,
                hovertemplate="γ = %{x}: %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    fig.update_layout(
        title=title,
        xaxis_title="signal strength γ",
        yaxis_title="test macro-mAP",
        yaxis_range=[0, 1.02],
        height=360,
        margin=dict(l=50, r=20, t=50, b=40),
        legend=dict(orientation="h", y=-0.2),
    )
    return fig
