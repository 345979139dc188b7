"""Grounding tab: matched visual grounding on a factor grid, with a slider on alpha.

Pick a grid, an image+text encoder and a factor, then *Load*: image embeddings are computed once (cached) and the
factor's state is built, and the page receives the slider's payload (:func:`bindlab.studies.grounding.slider_payload`).
Moving the slider is then computed in the browser, with no server call (``grounding_slider.js``): the current point
on the margin curve M(alpha), per-value test AP native vs grounded, macro-mAP, top-1, the q'(alpha) arrow of the 2-D
view and the summary. The top-8 test images of the grounded query follow from the server when the slider is let go.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from bindlab.config import public_mode
from bindlab.present import grounding_figures as gf
from bindlab.present import numbers
from bindlab.present.exports import grounding_export
from bindlab.present.safe_text import html_text, md_text
from bindlab.studies import grounding as gs
from bindlab.ui import share
from bindlab.ui.common import clear_on_error, data_picker, friendly, held_state, shown_image
from bindlab.ui.exports import deliver, export_panel, wire
from bindlab.ui.gpu import GPU_QUEUE, gpu_task
from bindlab.ui.slider_js import payload_js

MODEL_CHOICES = ["toy:clip", "toy:shared", "toy:negclip", "toy:lit-minilm"]
CSS = """
#gd-summary .gd-num {font-family: monospace; font-weight: bold}
"""


def _report(progress: gr.Progress | None) -> Any:
    return (lambda f, m: progress(f, desc=m)) if progress is not None else None


def _request(
    key: dict[str, Any] | None, alpha: str | float = "auto", controls: bool = False, **settings: Any
) -> gs.GroundingRequest:
    """The study request of the loaded grid, model and factor (the same defaults as ``ground``)."""
    if not key:
        raise ValueError("press Load first (choose a grid folder, an image+text encoder and a factor)")
    return gs.GroundingRequest(key["data"], key["model"], key["factor"], alpha, controls=controls, settings=settings)


def _session(key: dict[str, Any] | None, progress: gr.Progress | None = None) -> gs.GroundingSession:
    request = _request(key)
    return gs.open_session(request.data, request.model, progress=_report(progress))


def crossing_html(alpha_star: float | None, c: float | None = None) -> str:
    """``α* = 0.43`` where the value's margin crosses zero (−1 < c < 0), otherwise "no crossing" and why."""
    if alpha_star is not None:
        return f"α* = <span id='gd-alpha-star' class='gd-num'>{alpha_star:.2f}</span>"
    why = f" (c = q·d = {c:.2f} ≥ 0: the margin is never negative)" if c is not None and c >= 0 else ""
    return f"α*: <span id='gd-alpha-star' class='gd-num'>no crossing</span>{why}"


def summary_html(view: dict[str, Any], factor: str, model: str, chosen: float | None) -> str:
    """One line of headline numbers (ids let tests read them)."""
    v = view["value_index"]
    c = view["c"][v] if "c" in view else None
    pick = f" · validation α = <span id='gd-chosen' class='gd-num'>{chosen:.2f}</span>" if chosen is not None else ""
    return (
        f"<div id='gd-summary-line'><b>{html_text(model)}</b> · factor <b>{html_text(factor)}</b> · α = "
        f"<span id='gd-alpha-shown' class='gd-num'>{view['alpha']:.2f}</span>{pick}<br>"
        f"test macro-mAP native <span id='gd-map-native' class='gd-num'>{view['map_native']:.3f}</span> → "
        f"grounded <span id='gd-map-grounded' class='gd-num'>{view['map_grounded']:.3f}</span> · top-1 "
        f"{view['top1_native']:.3f} → <span id='gd-top1-grounded'>{view['top1_grounded']:.3f}</span><br>"
        f"value <b>{html_text(view['value'])}</b>: AP {view['ap_native'][v]:.3f} → "
        f"<span id='gd-ap-value' class='gd-num'>{view['ap_grounded'][v]:.3f}</span>, "
        f"{crossing_html(view['alpha_star'][v], c)}, top-8 precision "
        f"<span id='gd-top-precision'>{view['top_precision']:.3f}</span></div>"
    )


def _gallery(view: dict[str, Any]) -> list[tuple[Any, str]]:
    return [
        (shown_image(t["path"]), f"{t['label']} · {t['score']:.3f}" + (" ✓" if t["hit"] else "")) for t in view["top"]
    ]


def _render(key: dict[str, Any], value: str, alpha: float) -> tuple[Any, ...]:
    session = _session(key)
    view = gs.slider_view(session, key["factor"], value, float(alpha))
    v = view["value_index"]
    chosen = key.get("chosen")
    return (
        summary_html(view, key["factor"], session.encoder.id if session.encoder else key["model"], chosen),
        gf.margin_curve(
            view["curve"]["alphas"], view["curve"]["margin"], view["alpha"], view["alpha_star"][v], chosen, value
        ),
        gf.ap_bars(view["values"], view["ap_native"], view["ap_grounded"], view["alpha"], value),
        gf.grounding_plane(view["plane"], value, view["alpha"]),
        _gallery(view),
    )


# --- callbacks: validate, call the backend, format ------------------------------------------------------------
@gpu_task(duration=180)
@friendly
def load(data: str, model: str, factor: str, alpha: float, progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:
    return _load(data, model, factor, alpha, progress)


def _load(data: str, model: str, factor: str, alpha: float, progress: Any, value: str | None = None) -> tuple[Any, ...]:
    """Load's outputs; ``value`` shown when it is one of the factor's values (else the first)."""
    if not isinstance(factor, str) or factor.strip() not in gs.FACTORS:  # the radio sends one factor (or none)
        raise ValueError(f"choose a factor: one of {', '.join(gs.FACTORS)} (got {str(factor)[:40]!r})")
    factor = factor.strip()
    request = gs.GroundingRequest(data, model, factor, alpha, controls=False)  # validates factor, model, alpha
    grid = gs.resolve_grid(request.data, _report(progress))
    # input: the data as chosen ("" = the default grid), which a shared link names (bindlab.ui.share)
    key = {"data": str(grid), "model": request.model, "factor": factor, "chosen": None, "input": request.data}
    progress(0.0, desc=f"embedding the grid and building the {factor} state")
    result = gs.run_grounding(_request(key, alpha), _report(progress))  # the numbers `ground` reports
    values = result.summary["factors"][factor]["values"]
    payload = gs.slider_payload(_session(key), factor)  # the slider's numbers, for the browser
    # a new grid/model/factor: controls and notes of the previous one no longer apply
    shown = value if value in values else values[0]
    return (
        key,
        payload,
        gr.update(choices=values, value=shown),
        *_render(key, shown, alpha),
        gr.update(value=pd.DataFrame(), visible=False),
        "",
    )


@gpu_task(duration=180)
@friendly
def load_link(
    key: dict[str, Any] | None, request: gr.Request, progress: gr.Progress = gr.Progress()
) -> tuple[Any, ...]:
    """On page load, a shared Grounding link (``?tab=grounding&model=…&alpha=…``, :mod:`bindlab.ui.share`): its
    grid, model and factor loaded, its value shown, the slider at its α. Any other page: nothing changes. A link
    whose Load fails leaves the tab unloaded with one sentence on why in the note (never an error toast).

    Returns:
        Load's outputs (state, payload, value, view, controls, note), then the data, model, factor and α inputs.
    """
    link, _ = share.page_link(request)  # a link that fails its checks is reported by Browse, the page's default
    if link is None or link.tab != "grounding":
        return (key, *[gr.update()] * 13)
    alpha = 1.0 if link.alpha is None else link.alpha
    try:
        out = _load(share.data_path(link), link.model, link.factor, alpha, progress, link.value)
    except (ValueError, KeyError, OSError) as e:  # nothing loaded: the tab as before Load, and why
        unloaded = (
            None,
            None,
            gr.update(choices=[], value=None),
            "",
            None,
            None,
            None,
            [],
            gr.update(value=pd.DataFrame(), visible=False),
        )
        return (*unloaded, share.refused(e), *[gr.update()] * 4)
    note = ""
    if link.value and out[2]["value"] != link.value:
        note = f"Value **{md_text(link.value[:80])}** is not a value of {link.factor}; showing the first value instead."
    data_in = share.data_input(link, public_mode(), getattr(request, "session_hash", None))
    return (*out[:-1], note, data_in, link.model, link.factor, alpha)


@friendly
def share_view(key: dict[str, Any] | None, value: str, alpha: float, base: str) -> tuple[str, str]:
    """The link to what is loaded (grid, model, factor), the value shown and the slider's α."""
    if not isinstance(key, dict) or not key:
        raise ValueError("press Load first: a link names the grid, model and factor loaded")
    link = share.Link(
        "grounding",
        key["model"],
        share.link_data("grounding", key.get("input", "")),
        factor=key["factor"],
        value=str(value or ""),
        alpha=alpha,
    )
    url = share.build_url(base, link)
    return url, share.share_note(url)


@friendly
def move(key: dict[str, Any] | None, value: str, alpha: float) -> tuple[Any, ...]:
    if not key or not value:
        raise ValueError("press Load first (choose a grid folder, an image+text encoder and a factor)")
    return _render(key, value, alpha)


@friendly
def gallery_at(key: dict[str, Any] | None, value: str, alpha: float) -> list[tuple[Any, str]]:
    """The top-8 test images of the grounded query at ``alpha`` (the slider was let go; the rest moved in the page)."""
    if not key or not value:
        raise ValueError("press Load first (choose a grid folder, an image+text encoder and a factor)")
    return _gallery({"top": gs.top_images(_session(key), key["factor"], value, float(alpha))})


@friendly
def select_alpha(key: dict[str, Any] | None) -> tuple[dict[str, Any], Any, str]:
    session = _session(key)
    sel = gs.validation_choice(session, key["factor"])
    key = {**key, "chosen": sel["alpha"]}
    note = (
        f"Validation (contexts {md_text(session.index.splits['validation'])}) picks α = **{sel['alpha']:.2f}** "
        f"(validation macro-mAP {sel['macro_map']:.3f}, top-1 {sel['top1']:.3f}); test contexts untouched."
    )
    return key, gr.update(value=sel["alpha"]), note


@gpu_task(duration=60)
@friendly
def run_controls(key: dict[str, Any] | None, progress: gr.Progress = gr.Progress()) -> tuple[Any, str]:
    request = _request(key, "auto", controls=True)
    progress(0.1, desc="selecting α, λ and the selective gate on validation, then scoring test")
    d = gs.run_grounding(request, _report(progress)).summary["factors"][key["factor"]]["controls"]
    rows = [
        {"readout": name, "macro-mAP": r["macro_map"], "top-1": r["top1"]}
        for name, r in d["test"].items()
        if r is not None
    ]
    gate = d.get("gate")
    kept = "all" if gate is None else f"{sum(gate['ground'])}/{len(gate['ground'])}"
    note = (
        f"Controls on test: α = {d['alpha']:.2f}, λ = {d['lambda']:.4f} (both from validation); selective "
        f"grounding keeps {kept} values. Mismatched = each query grounded with every other value's direction."
    )
    return gr.update(value=numbers.table(pd.DataFrame(rows)), visible=True), note


@friendly
def export(
    key: dict[str, Any] | None,
    value: str,
    alpha: float,
    controls: pd.DataFrame | None,
    sweep: dict[str, Any] | None = None,
    alignment: dict[str, Any] | None = None,
    formats: list[str] | None = None,
) -> tuple[list[str], str]:
    """Download at the slider's α: summary, AP per value, margin curves of every value, the controls (if run),
    the figures on screen and the top test images; the γ sweep's table and chart and the alignment baseline's table
    when they have been run (the alignment only for the grid, encoder and factor loaded)."""
    ran_controls = controls is not None and len(controls) > 0 and "readout" in controls.columns
    request = _request(
        key,
        float(alpha),
        controls=ran_controls,
        value=value,  # controls: the memoised audit
        validation_alpha=key.get("chosen") if key else None,
    )
    result = gs.run_grounding(request)
    shown = gs.slider_view(_session(key), key["factor"], value, float(alpha)) if value else None
    same = alignment and all(alignment.get(k) == key.get(k) for k in ("data", "model", "factor"))
    view = grounding_export(
        result, shown, key.get("chosen"), sweep=(sweep or {}).get("rows"), alignment=alignment["rows"] if same else None
    )
    return deliver(view, result.provenance, formats)


def build_tab() -> dict[str, Any]:
    """Lay out the Grounding tab inside the current ``gr.Blocks``; returns its shared-link load (``"link"``, wired
    by :func:`bindlab.ui.share.install`)."""
    gr.Markdown(
        "**Matched visual grounding** (FactorAtlas): move each value's text query along its image "
        "direction, q′(α) = norm(q + α·d), and watch test retrieval change. Empty grid = a default "
        "grid rendered once under $BINDLAB_HOME (4,224 images); the encoder must embed images and text."
    )
    with gr.Row():
        data = data_picker("grid", "Factor grid folder (empty = default grid)", "gd-data")
        model = gr.Dropdown(
            MODEL_CHOICES, value="toy:clip", label="Encoder id", allow_custom_value=True, scale=2, elem_id="gd-model"
        )
        factor = gr.Radio(list(gs.FACTORS), value="pattern", label="Factor", scale=2, elem_id="gd-factor")
        load_btn = gr.Button("Load", variant="primary", scale=1, elem_id="gd-load")
    with gr.Row():
        value = gr.Dropdown([], label="Value", scale=1, elem_id="gd-value")
        alpha = gr.Slider(0, 8, value=1.0, step=0.05, label="α (grounding strength)", scale=3, elem_id="gd-alpha")
        select_btn = gr.Button("Select α on validation", scale=1, elem_id="gd-select")
        controls_btn = gr.Button("Run controls", scale=1, elem_id="gd-controls")
    with gr.Row():
        share_btn = gr.Button("Share this view", size="sm", scale=1, elem_id="gd-share-btn")
        link = gr.Textbox(
            label="Link to this view (copy it; opening it loads this grid, model, factor, value and α)",
            interactive=False,
            buttons=["copy"],
            visible=False,
            scale=4,
            elem_id="gd-share-link",
        )
    link_note = gr.Markdown(elem_id="gd-share-note")
    base = gr.Textbox(visible=False)  # the page's address, filled in the browser when Share is pressed
    key = gr.State(None)
    payload = gr.JSON(visible=False, elem_id="gd-payload")  # the slider's numbers (slider_payload), read in the page
    summary = gr.HTML(elem_id="gd-summary")
    note = gr.Markdown(elem_id="gd-note")
    with gr.Row():
        margin = gr.Plot(label="Margin curve", elem_id="gd-margin")
        bars = gr.Plot(label="AP per value", elem_id="gd-ap")
    with gr.Row():
        with gr.Column(scale=1):
            gallery = gr.Gallery(
                label="Top-8 test images, grounded query (when the slider is let go)",
                columns=4,
                height=360,
                elem_id="gd-gallery",
            )
            # shown once "Run controls" has run (no placeholder table before)
            controls = gr.Dataframe(
                label="Controls (test)", interactive=False, visible=False, elem_id="gd-controls-table"
            )
        plane = gr.Plot(label="2-D view", elem_id="gd-plane")

    view = [summary, margin, bars, plane, gallery]
    # results after an error (bindlab.ui.common): a failed Load clears everything loaded before (the state too,
    # so the slider asks for Load again); a failed slider/value move clears the view; failed controls clear theirs
    clear_on_error(
        load_btn.click(
            load,
            [data, model, factor, alpha],
            [key, payload, value, *view, controls, note],
            api_name="grounding_load",
            **GPU_QUEUE,
        ),
        [key, payload, *view, controls, note],
        hide=[controls],
    )
    # the slider: every move computed in the page (no server call); the gallery follows when it is let go
    payload.change(None, [payload], None, js=payload_js("grounding"), api_name=False)
    clear_on_error(
        alpha.release(
            gallery_at,
            [key, value, alpha],
            [gallery],
            api_name="grounding_alpha",
            trigger_mode="always_last",
            show_progress="hidden",
        ),
        [gallery],
    )
    clear_on_error(
        value.change(move, [key, value, alpha], view, api_name="grounding_value", show_progress="hidden"), view
    )
    selected = select_btn.click(select_alpha, [key], [key, alpha, note], api_name="grounding_select_alpha")
    clear_on_error(selected, [note])
    clear_on_error(selected.success(move, [key, value, alpha], view, api_name=False, show_progress="hidden"), view)
    clear_on_error(
        controls_btn.click(run_controls, [key], [controls, note], api_name="grounding_controls", **GPU_QUEUE),
        [controls, note],
        hide=[controls],
    )
    sweep, alignment = held_state(), held_state()  # the experiments' rows, for the Download panel
    wire(
        export_panel("gd", "results"),
        export,
        [key, value, alpha, controls, sweep, alignment],
        api_name="grounding_export",
    )
    _build_experiments(data, model, key, sweep, alignment)
    clear_on_error(
        share_btn.click(
            share_view, [key, value, alpha, base], [link, link_note], js=share.BASE_JS, api_name="grounding_share"
        ).success(lambda: gr.update(visible=True), None, [link], api_name=False, queue=False),
        [link, link_note],
    )
    return {
        "link": {
            "fn": load_link,
            "inputs": [key],
            "outputs": [key, payload, value, *view, controls, note, data, model, factor, alpha],
            "progress_on": [summary],
        }
    }


# ---------------------------------------------------------------------------------------------- experiments
SWEEP_READOUTS = {"native": "native text", "matched": "matched grounding", "image_prototype": "image prototype"}


@gpu_task(duration=300)
@friendly
def run_sweep(data: str, model: str, progress: gr.Progress = gr.Progress()) -> tuple[Any, Any, str, dict[str, Any]]:
    """The signal-strength sweep of the grid in ``data`` (empty: the default signal grid) with ``model``."""
    from bindlab.studies.grounding_sweep import SweepRequest, run_grounding_sweep

    result = run_grounding_sweep(SweepRequest(data or "", model), _report(progress))
    table = numbers.table(
        pd.DataFrame(
            [
                {
                    "γ": r["gamma"],
                    "image prototype": r["image_prototype"],
                    "native": r["native"],
                    "matched": r["matched"],
                    "gain": r["gain"],
                    "α (validation)": r["alpha"],
                    "cosine to γ=1": r["cosine"],
                }
                for r in result.rows
            ]
        ),
        keep=("γ", "α (validation)"),
    )
    long = pd.DataFrame(
        [
            {"gamma": r["gamma"], "readout": label, "test macro-mAP": r[k]}
            for r in result.rows
            for k, label in SWEEP_READOUTS.items()
        ]
    )
    s = result.summary
    note = (
        f"Pattern signal strength: at γ = 1 matched grounding gains {s['full_signal']['gain']:+.3f} macro-mAP; "
        f"at γ = {s['weakest']['gamma']:g} {s['weakest']['gain']:+.3f} (direction cosine "
        f"{s['weakest']['cosine']:.3f}); at γ = 0 {s['gain_at_zero'] if s['gain_at_zero'] is None else round(s['gain_at_zero'], 3)}"
        f" (chance {s['chance']:.3f}). α re-selected on validation at every γ."
    )
    return gr.update(value=table, visible=True), gr.update(value=long, visible=True), note, {"rows": result.rows}


@gpu_task(duration=300)
@friendly
def run_alignment(
    key: dict[str, Any] | None, scope: str, progress: gr.Progress = gr.Progress()
) -> tuple[Any, str, dict[str, Any]]:
    """Global alignment baseline (``A_shared`` or ``A_f``) for the loaded grid, encoder and factor."""
    if not key:
        raise ValueError("press Load first (choose a grid folder, an image+text encoder and a factor)")
    request = gs.GroundingRequest(key["data"], key["model"], key["factor"], "auto", controls=False, align=scope)
    r = gs.run_grounding(request, _report(progress)).summary["factors"][key["factor"]]["alignment"]
    names = {
        "native": "native q",
        "global": "global norm(A q)",
        "matched": "matched norm(q + α d)",
        "global_matched": "global + matched",
    }
    rows = [
        {"readout": label, "macro-mAP": r["test"][k]["macro_map"], "top-1": r["test"][k]["top1"]}
        for k, label in names.items()
    ]  # shown with 3 decimals (numbers.table), exported as computed
    m = r["map"]
    chosen = "the identity" if m["lr"] is None else f"lr {m['lr']:g}, epoch {m['epoch']}"
    note = (
        f"{md_text(scope)} map chosen on validation ({chosen}); matched grounding on top uses α = {r['alpha']:.2f} "
        "(re-selected on validation). Test numbers."
    )
    state = {**{k: key[k] for k in ("data", "model", "factor")}, "rows": [{"map": scope, **r} for r in rows]}
    return gr.update(value=numbers.table(pd.DataFrame(rows)), visible=True), note, state


def _build_experiments(data: Any, model: Any, key: Any, sweep: Any, alignment: Any) -> None:
    """The paper's signal-strength sweep and global-alignment baselines, each with its own Run button; their rows
    go to the ``sweep`` and ``alignment`` states (the Download panel's)."""
    with gr.Accordion("Signal strength (γ sweep) and global alignment", open=False, elem_id="gd-experiments"):
        gr.Markdown(
            "**Signal strength**: every pattern blended with its nuisance-matched plain image, γ = 1 … 0; "
            "directions and α re-estimated at every γ. Uses the grid folder above if it has "
            "`signal/g*/` grids (`generate factors --signal-strengths`), else a small default grid."
        )
        sweep_btn = gr.Button("Run γ sweep", elem_id="gd-sweep-run")
        sweep_note = gr.Markdown(elem_id="gd-sweep-note")
        with gr.Row():
            sweep_table = gr.Dataframe(
                label="Pattern, test macro-mAP per γ", interactive=False, visible=False, elem_id="gd-sweep-table"
            )
            sweep_plot = gr.LinePlot(
                x="gamma",
                y="test macro-mAP",
                color="readout",
                label="Signal strength",
                visible=False,
                elem_id="gd-sweep-plot",
            )
        gr.Markdown(
            "**Global alignment**: a bias-free, identity-initialised linear map on the text query, "
            "q = norm(A q), trained on calibration captions with factor-replacement hard negatives and "
            "chosen on validation; then matched grounding on top. Uses the loaded grid, encoder and factor."
        )
        with gr.Row():
            scope = gr.Radio(["shared", "factor"], value="factor", label="Map", elem_id="gd-align-scope")
            align_btn = gr.Button("Run alignment baseline", elem_id="gd-align-run")
        align_note = gr.Markdown(elem_id="gd-align-note")
        align_table = gr.Dataframe(
            label="Alignment baselines (test)", interactive=False, visible=False, elem_id="gd-align-table"
        )
    clear_on_error(
        sweep_btn.click(
            run_sweep,
            [data, model],
            [sweep_table, sweep_plot, sweep_note, sweep],
            api_name="grounding_sweep",
            **GPU_QUEUE,
        ),
        [sweep_table, sweep_plot, sweep_note, sweep],
        hide=[sweep_table, sweep_plot],
    )
    clear_on_error(
        align_btn.click(
            run_alignment,
            [key, scope],
            [align_table, align_note, alignment],
            api_name="grounding_alignment",
            **GPU_QUEUE,
        ),
        [align_table, align_note, alignment],
        hide=[align_table],
    )
