"""Pure data -> plotly Figure builders for the Attention tab: margin curves with bands, a word x word heatmap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from bindlab.analysis.attention import normalised_depth
from bindlab.present.figures import SIDE_LEGEND, message_figure
from bindlab.present.safe_text import plot_text

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def result_curves(res: dict[str, Any]) -> list[dict[str, Any]]:
    """One curve per (model, caption set) of a :func:`~bindlab.analysis.attention.results_json` document."""
    from bindlab.studies.attention import curve_data

    return curve_data(res)


def uses_depth(curves: Sequence[dict[str, Any]]) -> bool:
    """True when the curves' layer counts differ: they then share a relative-depth axis in [0, 1]."""
    return len({len(c["layers"]) for c in curves if c and c.get("layers")}) > 1


def margin_curves(curves: Sequence[dict[str, Any]], title: str = "Attention binding margin per layer") -> go.Figure:
    """Line chart of the mean margin per layer, one line per curve, its 95 % interval as a shaded band.

    When the curves' layer counts differ (MiniLM's 6 against a 3-layer model) the x axis is the relative depth
    ``layer / (layers − 1)`` in [0, 1] instead of the layer index, and the title and axis say so.

    Args:
        curves: ``{"label", "layers", "margin_mean", "ci_low", "ci_high"}`` dicts (values may be None).
    """
    curves = [c for c in curves if c and c.get("layers")]
    if not curves:
        return message_figure("no margins to show yet")
    by_depth = uses_depth(curves)
    fig = go.Figure()
    for k, c in enumerate(curves):
        colour = COLOURS[k % len(COLOURS)]
        label = plot_text(c["label"])  # a model id or caption set name: text, not plotly markup
        x = list(c.get("depth") or normalised_depth(len(c["layers"]))) if by_depth else list(c["layers"])
        if c.get("ci_low") and None not in c["ci_low"] + c["ci_high"]:
            band = list(c["ci_high"]) + list(c["ci_low"])[::-1]  # upper edge left to right, lower edge back
            fig.add_trace(
                go.Scatter(
                    x=x + x[::-1],
                    y=band,
                    fill="toself",
                    mode="lines",
                    fillcolor=_rgba(colour, 0.18),
                    line=dict(width=0),
                    hoverinfo="skip",
                    name=f"{label} 95% CI",
                    showlegend=False,
                )
            )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=c["margin_mean"],
                mode="lines+markers",
                name=label,
                line=dict(color=colour, width=2.5),
                customdata=list(c["layers"]),
                hovertemplate=("layer %{customdata} (depth %{x:.2f})" if by_depth else "layer %{x}")
                + ": %{y:+.4f}<extra>"
                + label
                + "</extra>",
            )
        )
    fig.add_hline(y=0, line_dash="dash", line_color="grey", annotation_text="no preference")
    if by_depth:
        counts = ", ".join(f"{plot_text(c['label'])} {len(c['layers'])}" for c in curves)
        title = f"{title}: relative depth, layer counts differ"
        xaxis_title = f"relative depth (layer / (layers − 1); 0 = first block, 1 = last) — layers: {counts}"
    else:
        xaxis_title = "layer (0 = first transformer block)"
    fig.update_layout(
        title=title,
        xaxis_title=xaxis_title,
        yaxis_title="own − other attribute attention",
        height=380,
        margin=dict(l=60, r=20, t=50, b=40),
        legend=SIDE_LEGEND,
    )
    return fig


def attention_heatmap(
    words: Sequence[str], matrix: Any, pairs: Sequence[tuple[int, int, bool]], title: str = ""
) -> go.Figure:
    """Word x word attention (row = from word, column = to word) with binding pairs outlined.

    Args:
        words: ``(W,)`` caption words.
        matrix: ``(W, W)`` word-level attention.
        pairs: ``(from word, to word, own)`` cells to outline: green for an object and its own attribute, red for
            an object and another object's attribute.
    """
    if not len(words):
        return message_figure("no words to show")
    labels = [f"{i}:{plot_text(w)}" for i, w in enumerate(words)]  # index prefix keeps repeated words apart
    fig = go.Figure(
        go.Heatmap(
            z=matrix,
            x=labels,
            y=labels,
            colorscale="Blues",
            colorbar=dict(title="attention"),
            hovertemplate="from %{y} to %{x}: %{z:.4f}<extra></extra>",
        )
    )
    # All outlines in one assignment: add_shape per cell re-validates the layout each time (quadratic in the number
    # of outlined cells; 20 bindings took minutes).
    fig.update_layout(
        shapes=[
            dict(
                type="rect",
                x0=c - 0.5,
                x1=c + 0.5,
                y0=r - 0.5,
                y1=r + 0.5,
                line=dict(
                    color="#2ca02c" if own else "#d62728", width=3 if own else 1.5, dash="solid" if own else "dot"
                ),
            )
            for r, c, own in pairs
        ]
    )
    fig.update_layout(
        title=title,
        xaxis_title="to (earlier word when later→earlier)",
        yaxis_title="from",
        yaxis_autorange="reversed",
        height=460,
        margin=dict(l=90, r=20, t=50, b=90),
    )
    return fig


def head_grid(
    head_margins: Any,
    layer: int | None = None,
    head: int | None = None,
    title: str = "Binding margin per layer and head",
) -> go.Figure:
    """Layer x head grid of one caption's binding margin (bertviz's head view), diverging around zero.

    Args:
        head_margins: ``(layers, heads)`` margins (NaN where undefined).
        layer, head: the cell whose word x word map is shown (outlined); ``head`` None = the layer's head mean.

    Each cell's ``customdata`` is ``[layer, head]`` so a click can name it.
    """
    import numpy as np

    z = np.asarray(head_margins, dtype=np.float64) if head_margins is not None else np.zeros((0, 0))
    if z.ndim != 2 or not z.size:
        return message_figure("no per-head margins yet: pick a caption")
    n_layers, n_heads = z.shape
    lim = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
    custom = [[[li, h] for h in range(n_heads)] for li in range(n_layers)]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(n_heads)),
            y=list(range(n_layers)),
            colorscale="RdBu",
            zmid=0,
            zmin=-lim or -1,
            zmax=lim or 1,
            customdata=custom,
            colorbar=dict(title="margin"),
            xgap=1,
            ygap=1,
            hovertemplate="layer %{y} · head %{x}: %{z:+.4f}<extra>click for its map</extra>",
        )
    )
    if layer is not None:
        x0, x1 = (head - 0.5, head + 0.5) if head is not None else (-0.5, n_heads - 0.5)
        fig.add_shape(type="rect", x0=x0, x1=x1, y0=layer - 0.5, y1=layer + 0.5, line=dict(color="#111", width=3))
    fig.update_layout(
        title=title,
        xaxis_title="head",
        yaxis_title="layer",
        height=360,
        xaxis=dict(dtick=1),
        yaxis=dict(dtick=1, autorange="reversed"),
        margin=dict(l=60, r=20, t=50, b=40),
    )
    return fig


def compare_margin_figure(section: dict[str, Any] | None, curves: Sequence[dict[str, Any]]) -> go.Figure:
    """The Finetune compare's attention part: one margin curve per model (base, unscaled, LiNeS) with its band, the
    layers its "deep" differences average over shaded (the tab and its Download draw this same figure).

    Args:
        section: :func:`bindlab.studies.finetune.attention_compare`'s section (None: not computed).
        curves: its curves, the models named for a reader (:func:`bindlab.studies.finetune.attention_curves`).
    """
    if not section:
        return message_figure("attention margins were not computed")
    if not section["available"]:
        return message_figure(section["note"])
    title = (
        f"Attention binding margin per layer: base vs finetuned ({section['n_captions']} "
        f"{plot_text(section['caption_set'])})"
    )
    fig = margin_curves(curves, title=title)
    deep = next((d["deep"]["layers"] for d in section["diff"].values() if "deep" in d), None)
    if deep:  # the layers the "deep" differences average over
        fig.add_vrect(
            x0=deep[0] - 0.5,
            x1=deep[-1] + 0.5,
            fillcolor="grey",
            opacity=0.08,
            line_width=0,
            annotation_text="deep layers",
            annotation_position="top left",
        )
    return fig
