"""The Walkthrough's charts, built from the step dicts of :mod:`bindlab.studies.walkthrough` (pure: dict -> plotly Figure).

The Walkthrough tab shows them and its Download panel (:func:`bindlab.present.exports.walkthrough_export`) exports them, so
both draw the same figures.
"""

from __future__ import annotations

from typing import Any

from bindlab.present import attention_figures as af
from bindlab.present import figures
from bindlab.present import grounding_figures as gf
from bindlab.present.safe_text import plot_text

PAIRING_NAMES = {"tt": "text → text", "ti": "text → image", "it": "image → text", "ii": "image → image"}


def objects_figure(r: dict[str, Any]) -> Any:
    """Step 4: accuracy by number of objects, each point with its 95 % interval as an error bar (rows' ``ci95``),
    with the chance level."""
    title = f"{plot_text(r['model'])} · {PAIRING_NAMES[r['pairing']]}: accuracy by number of objects (bars: 95 % CI)"
    fig = figures.accuracy_by_n(r["rows"], title=title, chance=r["chance"])
    for trace in fig.data:
        ci = {int(x["n_objects"]): x["ci95"] for x in r["rows"] if x["subset"] == trace.name and x.get("ci95")}
        if not ci or trace.x is None:
            continue
        lo = [ci[int(n)][0] if int(n) in ci else None for n in trace.x]
        hi = [ci[int(n)][1] if int(n) in ci else None for n in trace.x]
        trace.error_y = dict(
            type="data",
            symmetric=False,
            thickness=1.2,
            width=4,
            array=[None if h is None else h - y for h, y in zip(hi, trace.y, strict=True)],
            arrayminus=[None if lo_ is None else y - lo_ for lo_, y in zip(lo, trace.y, strict=True)],
        )
        trace.customdata = [[n_, a_, b_] for n_, a_, b_ in zip(trace.customdata, lo, hi, strict=True)]
        trace.hovertemplate = (
            "N=%{x}: %{y:.3f} (n=%{customdata[0]}; 95 % CI %{customdata[1]:.3f}–"
            "%{customdata[2]:.3f})<extra>" + trace.name + "</extra>"
        )
    return fig


def fix_chart(r: dict[str, Any]) -> Any:
    """Step 3: a failure and its fix: before vs after accuracy per pairing with 95 % intervals (the page and its
    Download draw this same chart)."""
    from bindlab.present.model_pair_figures import fix_figure

    return fix_figure(r["fix"])


def grounding_curve(r: dict[str, Any]) -> Any:
    """Step 5: the margin M(α) of the chosen value, with α, α* and the validation α marked."""
    return gf.margin_curve(
        r["curve"]["alphas"], r["curve"]["margin"], r["alpha"], r["alpha_star"], r["alpha_validation"], r["value"]
    )


def grounding_bars(r: dict[str, Any]) -> Any:
    """Step 5: test AP per value, text query vs grounded query, the chosen value highlighted."""
    return gf.ap_bars(r["values"], r["ap_native_all"], r["ap_grounded_all"], r["alpha"], r["value"])


def attention_figure(r: dict[str, Any]) -> Any:
    """Step 6: the attention binding margin per layer with its 95 % interval."""
    return af.margin_curves(af.result_curves(r), title=f"Attention binding margin per layer: {plot_text(r['model'])}")


FINETUNE_STYLES = {"base": ("#7f7f7f", "dot"), "unscaled": ("#ff7f0e", "dash"), "lines": ("#2ca02c", "solid")}


def finetune_models(r: dict[str, Any]) -> list[tuple[str, str]]:
    """Step 7's models as ``(key, name)``: base, finetuned (unscaled) and, only when a ≠ 1, finetuned + LiNeS (a=…)
    (:func:`bindlab.studies.walkthrough.finetune_names`; with a = 1 the job's model is the unscaled one, never LiNeS)."""
    from bindlab.studies.walkthrough import finetune_names, finetune_shown

    names = r.get("names") or finetune_names(r.get("lines_a"))
    return [(k, names[k]) for k in (r.get("shown") or finetune_shown(r.get("lines_a")))]


def finetune_figure(r: dict[str, Any], chance: float | None = None) -> Any:
    """Step 7: accuracy by N, base vs finetuned (unscaled) vs LiNeS (a ≠ 1 only, :func:`finetune_models`): one small
    chart per pairing (2 x 2), the models in the same colours in each, one legend entry per model, the chance level dashed (per N from ``r["chance_by_n"]``
    when given, else flat at ``chance``, default ``r["chance"]`` or 0.25).

    Args:
        r: :func:`bindlab.studies.walkthrough.step_finetune`'s dict; its ``by_n`` rows are
            ``{"pairing", "N", "base", "unscaled", "lines"}`` with ``N`` an int-like string or ``"all"``.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    pts = [x for x in r["by_n"] if x["N"] != "all"]
    if not pts:
        return figures.message_figure("nothing to compare yet")
    chance = r.get("chance", 0.25) if chance is None else chance
    by_n = {str(n): float(c) for n, c in (r.get("chance_by_n") or {}).items()}
    pairings = list(dict.fromkeys(x["pairing"] for x in pts))
    cols = 2 if len(pairings) > 1 else 1
    rows = (len(pairings) + cols - 1) // cols
    fig = make_subplots(
        rows=rows,
        cols=cols,
        shared_xaxes=True,
        shared_yaxes=True,
        vertical_spacing=0.14,
        horizontal_spacing=0.06,
        subplot_titles=[plot_text(PAIRING_NAMES.get(p, p)) for p in pairings],
    )
    for i, p in enumerate(pairings):
        sel = sorted((x for x in pts if x["pairing"] == p), key=lambda x: int(x["N"]))
        for key, label in finetune_models(r):
            colour, dash = FINETUNE_STYLES[key]
            fig.add_trace(
                go.Scatter(
                    x=[int(x["N"]) for x in sel],
                    y=[x[key] for x in sel],
                    mode="lines+markers",
                    name=label,
                    legendgroup=key,
                    showlegend=i == 0,
                    line=dict(color=colour, dash=dash),
                    marker=dict(size=6),
                    hovertemplate=f"{plot_text(PAIRING_NAMES.get(p, p))} · {label}<br>N = %{{x}}: "
                    "%{y:.3f}<extra></extra>",
                ),
                row=i // cols + 1,
                col=i % cols + 1,
            )
        if by_n:
            xs = sorted(int(n) for n in by_n)
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=[by_n[str(n)] for n in xs],
                    mode="lines",
                    name="chance",
                    legendgroup="chance",
                    showlegend=i == 0,
                    line=dict(color="grey", dash="dash", width=1),
                    hovertemplate="N = %{x}: chance %{y:.3f}<extra></extra>",
                ),
                row=i // cols + 1,
                col=i % cols + 1,
            )
        else:
            fig.add_hline(
                y=chance, line_dash="dash", line_color="grey", line_width=1, row=i // cols + 1, col=i % cols + 1
            )
    fig.update_yaxes(range=[0, 1.02], title_text="accuracy", col=1)
    fig.update_xaxes(title_text="number of objects (N)", dtick=1, row=rows)
    fig.update_layout(
        title=f"MCQ accuracy by N: base vs finetuned (chance dashed: {chance:.3f} over all N)",
        height=260 * rows + 150,
        margin=dict(l=55, r=20, t=70, b=90),
        legend=dict(orientation="h", y=-0.1, yanchor="top", x=0.5, xanchor="center"),
    )
    return fig
