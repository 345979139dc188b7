"""Attention tab: binding margin per layer for one or two models, and a word x word heatmap for one caption."""

from __future__ import annotations

from typing import Any

import gradio as gr

from bindlab.present import attention_figures as figs
from bindlab.present import numbers
from bindlab.present.exports import attention_export
from bindlab.present.safe_text import html_text, md_text, plot_text
from bindlab.studies import attention as study
from bindlab.ui.common import clear_on_error, data_picker, friendly, held_state
from bindlab.ui.exports import deliver, export_panel, wire
from bindlab.ui.gpu import GPU_QUEUE, gpu_task

MODEL_CHOICES = ["minilm", "toy:clip", "toy:shared", "toy:negclip"]
DIRECTION_CHOICES = [
    ("later → earlier word (any model)", "later_to_earlier"),
    ("earlier → later word (bidirectional models only)", "earlier_to_later"),
]

CSS = """
#at-caption-info .at-own {background:#d9f2d9; border-radius:4px; padding:0 3px}
#at-caption-info code {font-size: 0.95em}
#at-cell {display:none !important}
"""

# gr.Plot has no click event (Gradio 6): after every new head grid, a plotly_click listener writes the clicked cell's
# "layer,head" into the hidden #at-cell textbox and fires its input event (the Map tab's bridge does the same).
GRID_JS = """
() => {
  let tries = 0;
  const timer = setInterval(() => {
    const gd = document.querySelector('#at-heads .js-plotly-plot');
    if (gd && gd.on) {
      if (gd.removeAllListeners) gd.removeAllListeners('plotly_click');
      gd.on('plotly_click', (ev) => {
        const p = ev && ev.points && ev.points[0];
        const box = document.querySelector('#at-cell textarea, #at-cell input');
        if (!p || !box) return;
        box.value = p.y + ',' + p.x;
        box.dispatchEvent(new Event('input', {bubbles: true}));
      });
    }
    if (++tries > 20) clearInterval(timer);
  }, 300);
}
"""

INTRO = """Does the text transformer keep each object's attention on **its own** attributes? For every object in a
caption: attention to its own attribute words minus attention to the other objects' attribute words, read from the
**later** word to the **earlier** one ("a red cube": cube → red; "the cube is red": red → cube), summed over the
earlier word's sub-tokens and averaged over the later word's sub-tokens and the heads; then averaged over objects.
Zero = no preference. The SABER paper finds this margin positive in early layers and fading in the last third."""


def _summary(res: dict[str, Any]) -> str:
    parts = []
    model = md_text(res["model"])
    for name, s in res["sets"].items():
        name = md_text(name)
        mm = [m for m in s["margin_mean"] if m is not None]
        peak = max(range(len(mm)), key=lambda i: mm[i]) if mm else None
        parts.append(
            f"**{model}** · {name}: {s['n_captions']} captions ({s['n_skipped']} skipped) · "
            f"{len(s['layers'])} layers · peak margin {numbers.signed(mm[peak])} at layer {peak}"
            if mm
            else f"**{model}** · {name}: no caption could be analysed"
        )
    if "compare" in res:
        for name, r in res["compare"]["ratio"].items():
            ratio = r.get("ratio")
            txt = (
                ", ".join("n/a" if x is None else f"{x:.2f}" for x in ratio) if ratio else md_text(r.get("note", "n/a"))
            )
            parts.append(f"ratio **{md_text(res['compare']['model'])} / {model}** per layer ({md_text(name)}): {txt}")
    if res.get("depth_note"):
        parts.append(md_text(res["depth_note"]))
    return "  \n".join(parts) + f"  \ndirection: {md_text(res['direction'])}"


def _caption_choices(rows: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """Dropdown choices and the stored captions, from the study's per-caption rows."""
    choices, stored = [], []
    for r in rows:
        choices.append((f"{r['set']} · {r['id']} · {r['text']}"[:140], str(len(stored))))
        stored.append({"text": r["text"], "bindings": r["bindings"], "id": r["id"]})
    return choices, stored


# --- callbacks: validate, call the study, format --------------------------------------------------------------
@gpu_task(duration=120)
@friendly
def compute(
    model: str,
    compare: str,
    data: str,
    limit: float,
    direction: str,
    seed: float = 0,
    progress: gr.Progress = gr.Progress(),
) -> tuple[Any, ...]:
    request = study.AttentionRequest(
        model, data, limit if limit is not None else 0, compare or "", direction, seed=seed if seed is not None else 0
    )
    result = study.run_attention(request, progress=lambda f, m: progress(f, desc=m))
    res = result.summary
    layers = len(res["layers"])
    choices, stored = _caption_choices(result.rows)
    fig = figs.margin_curves(
        result.figures_data["curves"],
        title=f"Attention binding margin per layer ({plot_text(result.figures_data['data_name'])})",
    )
    if figs.uses_depth(result.figures_data["curves"]):
        counts = " vs ".join(f"{c['label']} {len(c['layers'])}" for c in result.figures_data["curves"])
        res = {
            **res,
            "depth_note": f"layer counts differ ({counts}): the curves share a relative-depth axis "
            "(layer / (layers − 1), 0 = first block, 1 = last)",
        }
    return (
        _summary(res),
        fig,
        gr.update(choices=choices, value=choices[0][1] if choices else None),
        stored,
        gr.update(maximum=max(layers - 1, 0), value=min(layers // 2, layers - 1)),
        result,
    )


@friendly
def export(
    result: Any,
    model: str,
    direction: str,
    current: dict[str, Any] | None,
    layer: float,
    head: str = "",
    formats: list[str] | None = None,
) -> tuple[list[str], str]:
    """Download: margins per layer (and the ratio), per-caption margins, the curves, and the caption on screen: its
    word × word heatmap, its layer × head margin grid and that grid's numbers."""
    if not result:
        raise ValueError("press Compute margins first; the download holds the margins computed there")
    if not current:
        return deliver(attention_export(result), result.provenance, formats)
    heatmap, _, grid, v = _caption_parts(model, direction, current, layer, head)
    return deliver(attention_export(result, heatmap, grid, v), result.provenance, formats)


@gpu_task(duration=30)
@friendly
def show_caption(
    model: str, direction: str, choice: str, layer: float, stored: list[dict[str, Any]], head: str = ""
) -> tuple[Any, str, Any, dict[str, Any] | None]:
    if not stored or choice in (None, ""):
        return (
            figs.attention_heatmap([], None, []),
            "Compute margins first, then pick a caption.",
            figs.head_grid(None),
            None,
        )
    item = stored[int(choice)]
    return (*_caption_view(model, direction, item, layer, head), item)


@gpu_task(duration=30)
@friendly
def analyse_text(
    model: str, direction: str, text: str, bindings: str, layer: float, head: str = ""
) -> tuple[Any, str, Any, dict[str, Any]]:
    # the bindings box is text: an empty one (None from an API call) gets the "no bindings given" message
    request = study.CaptionRequest(model, text, bindings or "", direction, layer)  # length checked before tokenising
    item = {"text": request.text, "bindings": request.bindings, "id": request.id}
    return (*_caption_view(model, direction, item, layer, head), item)


@gpu_task(duration=30)
@friendly
def redraw(
    model: str, direction: str, current: dict[str, Any] | None, layer: float, head: str = ""
) -> tuple[Any, str, Any]:
    if not current:
        return figs.attention_heatmap([], None, []), "Pick a caption or type your own.", figs.head_grid(None)
    return _caption_view(model, direction, current, layer, head)


def parse_cell(text: str) -> tuple[int, int]:
    """``"layer,head"`` (what a click on the head grid writes) -> ``(layer, head)``."""
    parts = [p.strip() for p in (text or "").split(",")]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"grid cell {text!r} is not 'layer,head', e.g. '2,5'")
    return int(parts[0]), int(parts[1])


@gpu_task(duration=30)
@friendly
def pick_cell(model: str, direction: str, current: dict[str, Any] | None, cell: str) -> tuple[Any, ...]:
    """A click on the head grid: show that layer and head's word x word map (and move the layer slider there)."""
    if not (cell or "").strip() or not current:
        return gr.update(), gr.update(), gr.update(), gr.update(), gr.update()
    li, h = parse_cell(cell)
    fig, info, grid = _caption_view(model, direction, current, li, str(h))
    return fig, info, grid, gr.update(value=li), str(h)


def _head(head: str | float | None) -> int | None:
    """The Head box: empty = mean over heads, else a whole number."""
    text = str(head if head is not None else "").strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(f"head {text!r} is not a whole number; leave it empty for the mean over heads")
    return int(text)


def _caption_view(
    model: str, direction: str, item: dict[str, Any], layer: float, head: str | None = ""
) -> tuple[Any, str, Any]:
    return _caption_parts(model, direction, item, layer, head)[:3]


def _caption_parts(
    model: str, direction: str, item: dict[str, Any], layer: float, head: str | None = ""
) -> tuple[Any, str, Any, dict[str, Any]]:
    """The caption view's heatmap, text and head grid, and the study's view they are drawn from."""
    v = study.caption_view(
        study.CaptionRequest(
            model,
            item["text"],
            item["bindings"],
            direction,
            layer or 0,
            item.get("id") or "free text",
            head=_head(head),
        )
    )
    li, h = v["layer"], v["head"]
    which = "mean over heads" if h is None else f"head {h}"
    fig = figs.attention_heatmap(
        v["words"],
        v["matrix"],
        v["cells"],
        title=f"{plot_text(v['model'])} · layer {li} · {which} · word × word attention (row = from)",
    )
    grid = figs.head_grid(v["head_margins"], li, h, title="Margin per layer × head · click a cell")
    per_layer = " ".join(f"L{i}: {numbers.signed(m)}" for i, m in enumerate(v["margins"]))
    note = f" (layer {html_text(v['asked_layer'])} does not exist; showing {li})" if v["asked_layer"] != li else ""
    info = (
        f"<p><b>{html_text(v['text'])}</b></p><p>bindings: <span class='at-own'>"
        f"{html_text(', '.join(v['own']))}</span>; green outline = object ↔ own attribute, red dotted = "
        f"object ↔ another object's attribute{note}</p>"
        f"<p>margin at layer {li}: <b id='at-caption-margin'>{numbers.signed(v['margins'][li])}</b></p>"
        f"<p><code>{per_layer}</code></p>"
    )
    if h is not None:
        info += f"<p>layer {li}, head <b id='at-head-shown'>{h}</b>: margin <b>{numbers.signed(v['head_margins'][li][h])}</b></p>"
    return fig, info, grid, v


def build_tab() -> None:
    """Lay out the Attention tab inside the current ``gr.Blocks``."""
    gr.Markdown(INTRO)
    with gr.Row():
        model = gr.Dropdown(
            MODEL_CHOICES, value="minilm", label="Model", allow_custom_value=True, scale=2, elem_id="at-model"
        )
        compare = gr.Dropdown(
            [""] + MODEL_CHOICES,
            value="",
            label="Compare with (optional)",
            allow_custom_value=True,
            scale=2,
            elem_id="at-compare",
        )
        data = data_picker(
            "captions", "Captions: MCQ, triplets or captions JSONL (empty = embedded mini benchmark)", "at-data"
        )
        limit = gr.Number(value=40, precision=0, label="Captions per set (0 = all)", scale=1, elem_id="at-limit")
    with gr.Row():
        direction = gr.Radio(
            DIRECTION_CHOICES, value="later_to_earlier", label="Direction", scale=3, elem_id="at-direction"
        )
        seed = gr.Number(value=0, precision=0, label="Bootstrap seed", scale=1, elem_id="at-seed")
        run = gr.Button("Compute margins", variant="primary", scale=1, elem_id="at-run")
    summary = gr.Markdown(elem_id="at-summary")
    curve = gr.Plot(label="Binding margin per layer", elem_id="at-curve")
    stored = held_state([])
    result = held_state()
    current = gr.State(None)

    gr.Markdown(
        "### One caption: word × word attention, and the margin of every head\n"
        "The grid beside the map shows the caption's binding margin per layer and head (the mean of a row is "
        "the curve's margin at that layer); click a cell to see that head's word × word attention. When the "
        "two compared models have different layer counts, the curves above share a relative-depth axis."
    )
    with gr.Row():
        caption = gr.Dropdown([], label="Caption (from the set above)", scale=4, elem_id="at-caption")
        layer = gr.Slider(0, 47, value=0, step=1, label="Layer", scale=2, elem_id="at-layer")
        head = gr.Textbox(
            label="Head (empty = mean over heads; or click a cell of the grid)", scale=1, elem_id="at-head"
        )
    with gr.Row():
        text = gr.Textbox(
            label="…or your own caption", placeholder="a red cube and a blue sphere", scale=3, elem_id="at-text"
        )
        bindings = gr.Textbox(
            label="Bindings (attribute:object, comma-separated)",
            placeholder="red:cube, blue:sphere",
            scale=2,
            elem_id="at-bindings",
        )
        text_btn = gr.Button("Analyse this text", scale=1, elem_id="at-text-btn")
    with gr.Row():
        with gr.Column(scale=3):
            heatmap = gr.Plot(label="Attention heatmap", elem_id="at-heatmap")
        with gr.Column(scale=2):
            info = gr.HTML(elem_id="at-caption-info")
            grid = gr.Plot(label="Per-head binding margin (layer × head)", elem_id="at-heads")
            cell = gr.Textbox(label="grid cell (layer,head)", elem_id="at-cell", container=False)

    # results after an error (bindlab.ui.common): failed margins clear the curve, the captions and the caption view
    # (it came from the old inputs); a failed caption, layer, head, cell or free text clears the caption view
    view = [heatmap, info, grid]
    clear_on_error(
        run.click(
            compute,
            [model, compare, data, limit, direction, seed],
            [summary, curve, caption, stored, layer, result],
            api_name="attention_margins",
            **GPU_QUEUE,
        ),
        [summary, curve, caption, stored, result, *view, current],
    )
    clear_on_error(
        caption.change(
            show_caption,
            [model, direction, caption, layer, stored, head],
            [*view, current],
            api_name="attention_caption",
            **GPU_QUEUE,
        ),
        [*view, current],
    )
    clear_on_error(
        layer.release(redraw, [model, direction, current, layer, head], view, api_name="attention_layer", **GPU_QUEUE),
        view,
    )
    clear_on_error(
        head.submit(redraw, [model, direction, current, layer, head], view, api_name="attention_head", **GPU_QUEUE),
        view,
    )
    clear_on_error(
        text_btn.click(
            analyse_text,
            [model, direction, text, bindings, layer, head],
            [*view, current],
            api_name="attention_text",
            **GPU_QUEUE,
        ),
        [*view, current],
    )
    grid.change(None, None, None, js=GRID_JS, api_name=False)
    # .change, not .input: the grid bridge sets the box from JavaScript, which Gradio reports as a change only.
    clear_on_error(
        cell.change(
            pick_cell,
            [model, direction, current, cell],
            [*view, layer, head],
            api_name="attention_cell",
            trigger_mode="always_last",
            **GPU_QUEUE,
        ),
        view,
    )
    wire(
        export_panel("at", "margins"),
        export,
        [result, model, direction, current, layer, head],
        api_name="attention_export",
    )
