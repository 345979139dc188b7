"""Attention tab: binding margin per layer for one or two models, and a word x word heatmap for one caption."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import gradio as gr

from bindlab.analysis import attention as att
from bindlab.studies.browse import default_dataset, get_encoder
from bindlab.present import attention_figures as figs
from bindlab.ui.common import friendly
from bindlab.ui.exports import deliver, export_panel, wire
from bindlab.ui.gpu import GPU_QUEUE, gpu_task

MODEL_CHOICES = ["minilm", "toy:clip", "toy:shared"]
DIRECTION_CHOICES = [("later → earlier word (any model)", "later_to_earlier"),
                     ("earlier → later word (bidirectional models only)", "earlier_to_later")]

CSS = """
#at-caption-info .at-own {background:#d9f2d9; border-radius:4px; padding:0 3px}
#at-caption-info code {font-size: 0.95em}
"""

INTRO = """Does the text transformer keep each object's attention on **its own** attributes? For every object in a
caption: attention to its own attribute words minus attention to the other objects' attribute words, read from the
**later** word to the **earlier** one ("a red cube": cube → red; "the cube is red": red → cube), summed over the
earlier word's sub-tokens and averaged over the later word's sub-tokens and the heads; then averaged over objects.
Zero = no preference. The SABER paper finds this margin positive in early layers and fading in the last third."""


def _summary(res: dict[str, Any]) -> str:
    parts = []
    for name, s in res["sets"].items():
        mm = [m for m in s["margin_mean"] if m is not None]
        peak = max(range(len(mm)), key=lambda i: mm[i]) if mm else None
        parts.append(f"**{res['model']}** · {name}: {s['n_captions']} captions ({s['n_skipped']} skipped) · "
                     f"{len(s['layers'])} layers · peak margin {mm[peak]:+.4f} at layer {peak}"
                     if mm else f"**{res['model']}** · {name}: no caption could be analysed")
    if "compare" in res:
        for name, r in res["compare"]["ratio"].items():
            ratio = r.get("ratio")
            txt = ", ".join("n/a" if x is None else f"{x:.2f}" for x in ratio) if ratio else r.get("note", "n/a")
            parts.append(f"ratio **{res['compare']['model']} / {res['model']}** per layer ({name}): {txt}")
    return "  \n".join(parts) + f"  \ndirection: {res['direction']}"


def _caption_choices(sets: dict[str, list[att.Caption]]) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    choices, stored = [], []
    for name, caps in sets.items():
        for c in caps:
            choices.append((f"{name} · {c.id} · {c.text}"[:140], str(len(stored))))
            stored.append({"text": c.text, "bindings": [list(b) for b in c.bindings], "id": c.id})
    return choices, stored


# --- callbacks: validate, call the backend, format ------------------------------------------------------------
@gpu_task(duration=120)
@friendly
def compute(model: str, compare: str, data: str, limit: float, direction: str,
            progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:
    model, compare = (model or "").strip(), (compare or "").strip()
    if not model:
        raise ValueError("pick a model (e.g. minilm)")
    n = int(limit or 0)
    if n < 0:
        raise ValueError(f"number of captions must be 0 (all) or positive, got {n}")
    path = Path((data or "").strip()) if (data or "").strip() else default_dataset()
    sets = att.load_caption_sets(path, limit=n)
    progress(0, desc=f"loading {model}")
    enc = get_encoder(model)
    runs = att.run_attention(enc, sets, direction, progress=lambda f, m: progress(f, desc=m))
    cmp = None
    if compare:
        enc2 = get_encoder(compare)
        cmp = (enc2, att.run_attention(enc2, sets, direction, progress=lambda f, m: progress(f, desc=m)))
    res = att.results_json(enc, runs, direction, cmp)
    layers = len(res["layers"])
    choices, stored = _caption_choices(sets)
    fig = figs.margin_curves(figs.result_curves(res), title=f"Attention binding margin per layer ({path.name})")
    from bindlab.provenance import provenance

    result = {"res": res, "items": att.per_item_rows(runs),  # what the Download panel writes
              "provenance": provenance(path, enc, {"direction": direction, "limit": n, "compare": compare or None})}
    return (_summary(res), fig, gr.update(choices=choices, value=choices[0][1] if choices else None), stored,
            gr.update(maximum=max(layers - 1, 0), value=min(layers // 2, layers - 1)), result)


@friendly
def export(result: dict[str, Any] | None, model: str, direction: str, current: dict[str, Any] | None, layer: float,
           formats: list[str]) -> tuple[list[str], str]:
    """Download: margins per layer (and the ratio), per-caption margins, the curves and the heatmap on screen."""
    from bindlab.present.exports import attention_export

    if not result:
        raise ValueError("press Compute margins first; the download holds the margins computed there")
    heatmap = _caption_view(model, direction, current, layer)[0] if current else None
    return deliver(attention_export(result["res"], result["items"], heatmap), result["provenance"], formats)


@gpu_task(duration=30)
@friendly
def show_caption(model: str, direction: str, choice: str, layer: float, stored: list[dict[str, Any]]
                 ) -> tuple[Any, str, dict[str, Any] | None]:
    if not stored or choice in (None, ""):
        return figs.attention_heatmap([], None, []), "Compute margins first, then pick a caption.", None
    item = stored[int(choice)]
    return (*_caption_view(model, direction, item, layer), item)


@gpu_task(duration=30)
@friendly
def analyse_text(model: str, direction: str, text: str, bindings: str, layer: float
                 ) -> tuple[Any, str, dict[str, Any]]:
    text = (text or "").strip()
    if not text:
        raise ValueError("type a caption, e.g. 'a red cube and a blue sphere'")
    item = {"text": text, "bindings": [list(b) for b in att.parse_bindings(bindings)], "id": "free text"}
    return (*_caption_view(model, direction, item, layer), item)


@gpu_task(duration=30)
@friendly
def redraw(model: str, direction: str, current: dict[str, Any] | None, layer: float) -> tuple[Any, str]:
    if not current:
        return figs.attention_heatmap([], None, []), "Pick a caption or type your own."
    return _caption_view(model, direction, current, layer)


def _caption_view(model: str, direction: str, item: dict[str, Any], layer: float) -> tuple[Any, str]:
    cap = att.Caption(item["text"], tuple(tuple(b) for b in item["bindings"]), item["id"])
    enc = get_encoder((model or "").strip() or "minilm")
    r = att.analyse_caption(att.attention_access(enc), cap, direction, with_words=True)
    if len(r.layout.objects) < 2:
        raise ValueError("the margin compares objects: mark at least two objects with their attributes, "
                         "e.g. 'red:cube, blue:sphere'")
    n_layers = len(r.margins)
    li = min(max(int(layer or 0), 0), n_layers - 1)
    words = [w.word for w in r.words]
    fig = figs.attention_heatmap(words, r.word_attn[li], att.binding_cells(r.layout, direction),
                                 title=f"{enc.id} · layer {li} · word × word attention (row = from)")
    own = ", ".join(f"{r.layout.labels[a]}:{r.layout.labels[o]}" for o, attrs in r.layout.objects for a in attrs)
    per_layer = " ".join(f"L{i}: {m:+.4f}" for i, m in enumerate(r.margins))
    note = f" (layer {int(layer)} does not exist; showing {li})" if int(layer or 0) != li else ""
    info = (f"<p><b>{html.escape(cap.text)}</b></p><p>bindings: <span class='at-own'>{html.escape(own)}</span>; "
            f"green outline = object ↔ own attribute, red dotted = object ↔ another object's attribute{note}</p>"
            f"<p>margin at layer {li}: <b id='at-caption-margin'>{r.margins[li]:+.4f}</b></p>"
            f"<p><code>{per_layer}</code></p>")
    return fig, info


def build_tab() -> None:
    """Lay out the Attention tab inside the current ``gr.Blocks``."""
    gr.Markdown(INTRO)
    with gr.Row():
        model = gr.Dropdown(MODEL_CHOICES, value="minilm", label="Model", allow_custom_value=True, scale=2,
                            elem_id="at-model")
        compare = gr.Dropdown([""] + MODEL_CHOICES, value="", label="Compare with (optional)", allow_custom_value=True,
                              scale=2, elem_id="at-compare")
        data = gr.Textbox(label="Captions: MCQ, triplets or captions JSONL (empty = embedded mini benchmark)",
                          value="", scale=3, elem_id="at-data")
        limit = gr.Number(value=40, precision=0, label="Captions per set (0 = all)", scale=1, elem_id="at-limit")
    with gr.Row():
        direction = gr.Radio(DIRECTION_CHOICES, value="later_to_earlier", label="Direction", scale=3,
                             elem_id="at-direction")
        run = gr.Button("Compute margins", variant="primary", scale=1, elem_id="at-run")
    summary = gr.Markdown(elem_id="at-summary")
    curve = gr.Plot(label="Binding margin per layer", elem_id="at-curve")
    stored = gr.State([])
    result = gr.State(None)
    current = gr.State(None)

    gr.Markdown("### One caption: word × word attention")
    with gr.Row():
        caption = gr.Dropdown([], label="Caption (from the set above)", scale=4, elem_id="at-caption")
        layer = gr.Slider(0, 47, value=0, step=1, label="Layer", scale=2, elem_id="at-layer")
    with gr.Row():
        text = gr.Textbox(label="…or your own caption", placeholder="a red cube and a blue sphere", scale=3,
                          elem_id="at-text")
        bindings = gr.Textbox(label="Bindings (attribute:object, comma-separated)", placeholder="red:cube, blue:sphere",
                              scale=2, elem_id="at-bindings")
        text_btn = gr.Button("Analyse this text", scale=1, elem_id="at-text-btn")
    with gr.Row():
        with gr.Column(scale=3):
            heatmap = gr.Plot(label="Attention heatmap", elem_id="at-heatmap")
        with gr.Column(scale=2):
            info = gr.HTML(elem_id="at-caption-info")

    run.click(compute, [model, compare, data, limit, direction], [summary, curve, caption, stored, layer, result],
              api_name="attention_margins", **GPU_QUEUE)
    caption.change(show_caption, [model, direction, caption, layer, stored], [heatmap, info, current],
                   api_name="attention_caption", **GPU_QUEUE)
    layer.release(redraw, [model, direction, current, layer], [heatmap, info], api_name="attention_layer",
                  **GPU_QUEUE)
    text_btn.click(analyse_text, [model, direction, text, bindings, layer], [heatmap, info, current],
                   api_name="attention_text", **GPU_QUEUE)
    wire(export_panel("at", "margins"), export, [result, model, direction, current, layer], api_name="attention_export")
