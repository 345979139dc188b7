"""Pure data -> plotly Figure builders. A builder given nothing to draw returns an empty figure with a message."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from bindlab.eval.metrics import task_chance
from bindlab.present.safe_text import plot_text

SUBSET_COLOURS = {"all": "#1f77b4", "independent": "#2ca02c", "nested": "#ff7f0e"}


def message_figure(text: str) -> go.Figure:
    """An empty figure that shows ``text`` in its middle (used instead of a broken chart)."""
    fig = go.Figure()
    fig.add_annotation(text=text, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(xaxis_visible=False, yaxis_visible=False, height=320, margin=dict(l=20, r=20, t=40, b=20))
    return fig


def add_chance_by_n(fig: go.Figure, rows: list[dict[str, Any]], chance: float = 0.25) -> None:
    """The chance level, dashed grey: per N from the rows' ``chance`` (the mean of the questions' own chance, 1/3 at
    N = 2 and 1/4 above for SABER) when they carry one, else a flat line at ``chance``.

    Args:
        rows: ``{"n_objects", "chance"?}`` points of one line (one row per N).
    """
    pts = sorted({int(r["n_objects"]): r["chance"] for r in rows if r.get("chance") is not None}.items())
    if not pts:
        fig.add_hline(y=chance, line_dash="dash", line_color="grey", annotation_text=f"chance {chance:.2f}")
        return
    fig.add_trace(
        go.Scatter(
            x=[n for n, _ in pts],
            y=[c for _, c in pts],
            mode="lines+markers",
            name="chance",
            line=dict(color="grey", dash="dash", width=1.5),
            marker=dict(size=4, color="grey"),
            hovertemplate="N=%{x}: chance %{y:.3f}<extra>chance</extra>",
        )
    )


def accuracy_by_n(
    rows: list[dict[str, Any]], title: str = "MCQ accuracy by number of objects", chance: float = 0.25
) -> go.Figure:
    """Line chart of accuracy vs N, one line per subset, each point with its 95 % interval as an error bar when the
    rows carry one (``ci95_low``, ``ci95_high``), with the chance level dashed (per N when the rows carry ``chance``,
    see :func:`add_chance_by_n`; else flat at ``chance``).

    Args:
        rows: ``{"n_objects", "subset", "accuracy", "n", "chance"?, "ci95_low"?, "ci95_high"?}`` dicts.
    """
    if not rows:
        return message_figure("no questions to summarise")
    fig = go.Figure()
    for subset in ("all", "independent", "nested"):
        pts = sorted((r for r in rows if r["subset"] == subset), key=lambda r: r["n_objects"])
        if not pts:
            continue
        with_ci = all(r.get("ci95_low") is not None and r.get("ci95_high") is not None for r in pts)
        error = (
            dict(
                type="data",
                symmetric=False,
                array=[r["ci95_high"] - r["accuracy"] for r in pts],
                arrayminus=[r["accuracy"] - r["ci95_low"] for r in pts],
                thickness=1.3,
                width=4,
            )
            if with_ci
            else None
        )
        ci = [f", 95% CI {r['ci95_low']:.3f}–{r['ci95_high']:.3f}" if with_ci else "" for r in pts]
        fig.add_trace(
            go.Scatter(
                x=[r["n_objects"] for r in pts],
                y=[r["accuracy"] for r in pts],
                mode="lines+markers",
                name=subset,
                line=dict(color=SUBSET_COLOURS[subset], width=3 if subset == "all" else 1.5),
                error_y=error,
                customdata=[r["n"] for r in pts],
                text=ci,
                hovertemplate="N=%{x}: %{y:.3f} (n=%{customdata}%{text})<extra>" + subset + "</extra>",
            )
        )
    add_chance_by_n(fig, [r for r in rows if r["subset"] == "all"] or rows, chance)
    if any(r.get("ci95_low") is not None for r in rows) and "CI" not in title:  # say what the bars are, once
        title = f"{title}<br><sup>bars: 95% bootstrap interval of each point</sup>"
    fig.update_layout(
        title=title,
        xaxis_title="number of objects (N)",
        yaxis_title="accuracy",
        yaxis_range=[0, 1.02],
        height=360,
        margin=dict(l=50, r=20, t=50, b=40),
        legend=SIDE_LEGEND,
    )
    return fig


# A legend beside the plot: below it, at a fixed fraction of the plot's height, it met the x title whenever the plot
# was drawn short (Gradio gives a titled plot a 100 px top margin).
SIDE_LEGEND = dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top")


def training_curves(metrics: list[dict[str, Any]], title: str = "training") -> go.Figure:
    """Loss per step (left axis) and validation triplet accuracy (right axis, chance 0.5) of a finetune job.

    Args:
        metrics: ``{"step", "loss"}`` and ``{"step", "val_acc"}`` events, in order.
    """
    loss = [m for m in metrics if "loss" in m]
    acc = [m for m in metrics if "val_acc" in m]
    if not loss and not acc:
        return message_figure("no training steps yet")
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[m["step"] for m in loss],
            y=[m["loss"] for m in loss],
            mode="lines",
            name="hinge loss",
            line=dict(color="#1f77b4"),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[m["step"] for m in acc],
            y=[m["val_acc"] for m in acc],
            mode="lines+markers",
            name="val triplet accuracy",
            yaxis="y2",
            line=dict(color="#2ca02c"),
        )
    )
    fig.update_layout(
        title=title,
        xaxis_title="step",
        yaxis=dict(title="loss", rangemode="tozero"),
        yaxis2=dict(title="triplet accuracy", overlaying="y", side="right", range=[0, 1.02]),
        height=340,
        margin=dict(l=50, r=50, t=50, b=40),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def compare_by_n(
    rows: list[dict[str, Any]],
    labels: tuple[str, ...] = ("base", "unscaled", "lines"),
    chance: float = 0.25,
    names: dict[str, str] | None = None,
) -> go.Figure:
    """MCQ accuracy vs N for several models side by side, one line per (model, pairing).

    Args:
        rows: ``{"pairing", "N", <label>: accuracy, ...}`` with ``N`` an int-like string or ``"all"`` (the study's
            raw rows, keyed by ``labels``).
        names: how each label is named in the legend (e.g. ``lines`` -> ``LiNeS (a=0.1)``); default the label.
    """
    pts = [r for r in rows if r["N"] != "all"]
    if not pts or not labels:
        return message_figure("nothing to compare yet")
    fig = go.Figure()
    colour = {"base": "#7f7f7f", "unscaled": "#ff7f0e", "lines": "#2ca02c"}  # one colour per model
    dash = {"tt": "solid", "ti": "dash", "it": "dot", "ii": "dashdot"}  # one dash per pairing
    pairings = list(dict.fromkeys(r["pairing"] for r in pts))
    for p in pairings:
        sel = sorted((r for r in pts if r["pairing"] == p), key=lambda r: int(r["N"]))
        for lab in labels:
            name = (names or {}).get(lab, lab)
            fig.add_trace(
                go.Scatter(
                    x=[int(r["N"]) for r in sel],
                    y=[r[lab] for r in sel],
                    mode="lines+markers",
                    name=plot_text(f"{name} · {p}" if len(pairings) > 1 else name),
                    line=dict(color=colour.get(lab), dash=dash.get(p, "solid"), width=2.5),
                )
            )
    fig.add_hline(y=chance, line_dash="dash", line_color="grey", annotation_text=f"chance {chance:.2f}")
    title = "MCQ accuracy by N: base vs finetuned" + (f" ({plot_text(pairings[0])})" if len(pairings) == 1 else "")
    fig.update_layout(
        title=title,
        xaxis_title="number of objects (N)",
        yaxis_title="accuracy",
        yaxis_range=[0, 1.02],
        height=360,
        margin=dict(l=50, r=20, t=50, b=40),
        legend=dict(orientation="h", y=-0.25, font=dict(size=13)),
    )
    return fig


def _ci_error_bars(vals: list[Any], cis: list[Any]) -> dict[str, Any] | None:
    """Plotly error bars from each value's 95 % interval ``(low, high)`` (None where a value has none); None when no
    value has one."""
    if not any(c is not None for c in cis):
        return None
    return dict(
        type="data",
        symmetric=False,
        thickness=1.2,
        width=3,
        color="#444",
        array=[None if c is None else c[1] - float(v) for c, v in zip(cis, vals, strict=True)],
        arrayminus=[None if c is None else float(v) - c[0] for c, v in zip(cis, vals, strict=True)],
    )


def _pairs_chance_lines(fig: go.Figure) -> None:
    """The 2x2 chance levels (:func:`bindlab.eval.metrics.task_chance`) as dashed vertical lines named in the legend."""
    text_chance, group_chance = task_chance("pairs_i2t"), task_chance("pairs_group")
    for x, name, dash, colour in (
        (text_chance, f"chance I2T / T2I ({text_chance:.2f})", "dash", "grey"),
        (group_chance, f"chance Group ({group_chance:.3f})", "dot", "#2ca02c"),
    ):
        fig.add_vline(x=x, line=dict(color=colour, dash=dash, width=1.5))
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="lines",
                name=name,
                hoverinfo="skip",  # legend entry
                line=dict(color=colour, dash=dash, width=1.5),
            )
        )


def pairs_by_edit_type(rows: list[dict[str, Any]], title: str = "2x2 scores by edit type") -> go.Figure:
    """Horizontal grouped bars of I2T / T2I / Group per edit type, every edit type on the axis with its n.

    A score of zero is drawn as zero (a thin stub at 0 labelled "0"); an edit type with no pairs (``n = 0``, scores
    ``None``) stays on the axis and says "no pairs". The chance levels (25 %, 25 %, 16.7 %) are dashed lines named
    in the legend, so no label sits on a bar.

    Args:
        rows: ``{"edit_type", "n", "i2t", "t2i", "group"}`` dicts (``bindlab.studies.pairs.edit_type_table``), in
            the order to show top to bottom; a row whose ``origin`` is "composet" (the paper's edit types) is marked.
            With ``pairs`` (the pairs behind the n scored rows) each label says both, "(2 pairs, n=6)"; with
            ``i2t_ci95`` etc. each bar carries its 95 % interval as an error bar and in its hover.
    """
    if not rows:
        return message_figure("no pairs to summarise")
    fig = go.Figure()
    # edit types the CompoSET paper names are marked "◆"; its categories under bindlab's names are not (see the title)
    paper = any(r.get("origin") == "composet" for r in rows)
    labels = [
        f"{'◆ ' if r.get('origin') == 'composet' else ''}{plot_text(r['edit_type'])} "
        f"({str(r['pairs']) + ' pairs, ' if 'pairs' in r else ''}n={r['n']})"
        for r in rows
    ]
    stub = 0.004  # a zero score still shows as a sliver at 0 (its label and hover say 0)
    for key, label, colour in (("group", "Group", "#2ca02c"), ("t2i", "T2I", "#ff7f0e"), ("i2t", "I2T", "#1f77b4")):
        vals = [r.get(key) for r in rows]
        cis = [r.get(f"{key}_ci95") if v is not None else None for r, v in zip(rows, vals, strict=True)]
        text = [
            "no pairs" if v is None else f"{float(v):.3f}" + (f" (95% CI {c[0]:.3f}–{c[1]:.3f})" if c else "")
            for v, c in zip(vals, cis, strict=True)
        ]
        fig.add_trace(
            go.Bar(
                y=labels,
                x=[None if v is None else max(float(v), stub) for v in vals],
                orientation="h",
                name=label,
                marker_color=colour,
                text=["0" if v is not None and v == 0 else "" for v in vals],
                textposition="outside",
                textfont=dict(size=10, color=colour),
                cliponaxis=False,
                error_x=_ci_error_bars(vals, cis),
                customdata=[[r["n"], s] for r, s in zip(rows, text, strict=True)],
                hovertemplate="%{y}: %{customdata[1]}<extra>" + label + "</extra>",
            )
        )
    for r, lab in zip(rows, labels, strict=True):
        if not r["n"] or all(r.get(k) is None for k in ("i2t", "t2i", "group")):
            fig.add_annotation(
                x=0.01,
                y=lab,
                xref="x",
                yref="y",
                text="no pairs (missing)",
                showarrow=False,
                xanchor="left",
                font=dict(color="#888", size=11),
            )
    _pairs_chance_lines(fig)
    # a short line per note under the title (one long line was cut off); the legend at the figure's foot, below the x title
    notes = (["◆ = named in the CompoSET paper; unmarked: its categories under bindlab's names"] if paper else []) + (
        ["n = pairs × caption levels scored; bars: 95% CI"] if any("pairs" in r for r in rows) else []
    )
    height = max(400, 170 + 46 * len(rows) + 18 * len(notes))
    shown = "<br>".join([title, *(f"<sup>{n}</sup>" for n in notes)])
    fig.update_layout(
        title=shown,
        barmode="group",
        xaxis=dict(title="share of (pair, level) rows passing", range=[0, 1.02]),
        yaxis=dict(autorange="reversed", automargin=True, type="category"),
        height=height,
        bargap=0.25,
        margin=dict(l=10, r=20, t=50 + 20 * len(notes), b=120),
        legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", traceorder="normal"),
    )
    return fig
