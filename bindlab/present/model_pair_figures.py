"""Two models side by side (pure: rows -> plotly Figure): a failure and its fix.

- :func:`fix_figure` — the Walkthrough's step 3: one model before and after binding hard negatives, accuracy per
  pairing with 95 % intervals and the chance level (from :func:`bindlab.studies.walkthrough.fix_rows`).
- :func:`pairs_two_models_figure` — the Pairs tab's *Compare with*: I2T / T2I / Group per edit type, one panel per
  score, the two models' bars next to each other (from :func:`bindlab.studies.pairs.compare_edit_types`).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from bindlab.present.figures import message_figure
from bindlab.present.safe_text import plot_text

PAIRING_NAMES = {"tt": "text → text", "ti": "text → image", "it": "image → text", "ii": "image → image"}
COLOURS = ("#7f7f7f", "#2ca02c")  # first model (the failure) grey, second (the fix) green
SCORES = (("i2t", "I2T", 0.25), ("t2i", "T2I", 0.25), ("group", "Group", 1 / 6))  # key, label, chance


def fix_figure(fix: dict[str, Any], chance: float = 0.25) -> go.Figure:
    """Grouped bars per pairing: ``fix["before"]`` and ``fix["after"]`` with their 95 % intervals, chance dashed.

    Args:
        fix: ``{"before", "after", "rows": [{"pairing", "before", "after", "before_ci95", "after_ci95", "change",
            "change_ci95"}]}``.
    """
    rows = fix.get("rows") or []
    if not rows:
        return message_figure("no pairing to compare")
    names = [PAIRING_NAMES.get(r["pairing"], r["pairing"]) for r in rows]
    fig = go.Figure()
    for side, colour in zip(("before", "after"), COLOURS, strict=True):
        vals = [r[side] for r in rows]
        ci = [r[f"{side}_ci95"] for r in rows]
        fig.add_trace(
            go.Bar(
                # the value inside the bar at its foot: above the bar it sat on the interval's whisker
                x=names,
                y=vals,
                name=plot_text(fix[side]),
                marker_color=colour,
                text=[f"{v:.3f}" for v in vals],
                textposition="inside",
                insidetextanchor="start",
                textangle=0,
                textfont=dict(color="white"),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=[hi - v for v, (_, hi) in zip(vals, ci, strict=True)],
                    arrayminus=[v - lo for v, (lo, _) in zip(vals, ci, strict=True)],
                    color="#444",
                ),
                customdata=[[lo, hi] for lo, hi in ci],
                hovertemplate="%{x} · "
                + plot_text(fix[side])
                + ": %{y:.3f} (95 % CI %{customdata[0]:.3f}–%{customdata[1]:.3f})"
                "<extra></extra>",
            )
        )
    fig.add_hline(y=chance, line=dict(color="grey", dash="dash", width=1.5))
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="lines",
            name=f"chance ({chance:.3f})",
            hoverinfo="skip",
            line=dict(color="grey", dash="dash", width=1.5),
        )
    )
    fig.update_layout(
        title=f"A failure and its fix: {plot_text(fix['before'])} vs {plot_text(fix['after'])}",
        barmode="group",
        yaxis=dict(title="MCQ accuracy", range=[0, 1.05]),
        height=380,
        uniformtext=dict(minsize=9, mode="hide"),
        margin=dict(l=10, r=20, t=50, b=40),
        legend=dict(orientation="h", y=-0.12, yanchor="top"),
    )
    return fig


def pairs_two_models_figure(rows: list[dict[str, Any]], models: tuple[str, str]) -> go.Figure:
    """I2T, T2I and Group per edit type for two models: one panel per score, edit types top to bottom, the two
    models' bars side by side, each panel's chance level dotted. An edit type without pairs shows no bar.

    Args:
        rows: ``{"edit_type", "n", "model", "i2t", "t2i", "group"}`` per (edit type, model), edit types in the
            order to show; with ``pairs`` (the pairs behind the n scored rows) each label says both.
        models: the two model ids, in legend order.
    """
    from plotly.subplots import make_subplots

    if not rows:
        return message_figure("no pairs to compare")
    types = list(dict.fromkeys(r["edit_type"] for r in rows))
    n = {r["edit_type"]: r["n"] for r in rows}
    pairs = {r["edit_type"]: r["pairs"] for r in rows if "pairs" in r}
    labels = [f"{plot_text(t)} ({str(pairs[t]) + ' pairs, ' if t in pairs else ''}n={n[t]})" for t in types]
    by = {(r["model"], r["edit_type"]): r for r in rows}
    fig = make_subplots(
        rows=1,
        cols=len(SCORES),
        shared_yaxes=True,
        horizontal_spacing=0.03,
        subplot_titles=[label for _, label, _ in SCORES],
    )
    for col, (key, label, chance) in enumerate(SCORES, start=1):
        for m, colour in zip(models, COLOURS, strict=True):
            vals = [(by.get((m, t)) or {}).get(key) for t in types]
            fig.add_trace(
                go.Bar(
                    y=labels,
                    x=vals,
                    orientation="h",
                    name=plot_text(m),
                    legendgroup=m,
                    showlegend=col == 1,
                    marker_color=colour,
                    hovertemplate="%{y} · " + label + ": %{x:.3f}<extra>" + plot_text(m) + "</extra>",
                ),
                row=1,
                col=col,
            )
        fig.add_vline(x=chance, line=dict(color="#444", dash="dot", width=1), row=1, col=col)
    fig.update_xaxes(range=[0, 1.02])
    fig.update_yaxes(autorange="reversed", automargin=True, type="category")
    fig.update_layout(
        title=f"{plot_text(models[0])} vs {plot_text(models[1])}: 2x2 scores by edit type (dotted: chance)",
        barmode="group",
        height=max(380, 110 + 40 * len(types)),
        bargap=0.2,
        margin=dict(l=10, r=20, t=70, b=40),
        legend=dict(orientation="h", y=-0.05, yanchor="top"),
    )
    return fig
