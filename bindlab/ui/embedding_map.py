"""Map tab: a PCA / UMAP map of the query and candidate embeddings of a SABER subset, both modalities in one plot.

*Make map* embeds the subset and shows PCA at once (one event, in the GPU queue since it runs the encoder); a
chained event then computes UMAP (CPU only, outside the GPU queue) and swaps it in. Clicking a point shows its
caption and image beside the plot; *Open in Browse* switches to the Browse tab with that question selected. The map
of each visitor lives in a ``gr.State`` (its points and layouts; not its vectors, which the UMAP step and a point's
neighbours read back from the embedding cache); the backend is :mod:`bindlab.studies.map` (the ``map`` command's too).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import gradio as gr

from bindlab.present.figures import message_figure
from bindlab.present.map_figure import HOVER_JS, map_figure, thumbnails
from bindlab.present.safe_text import html_text, md_text, plot_text
from bindlab.studies import map as ms
from bindlab.ui.common import clear_on_error, data_picker, friendly, held_state, offer_data, shown_image
from bindlab.ui.exports import deliver, export_panel
from bindlab.ui.exports import wire as wire_export
from bindlab.ui.gpu import GPU_QUEUE, gpu_task

MODEL_CHOICES = ["toy:clip", "toy:shared", "toy:negclip", "toy:lit-minilm", "minilm", "bow"]
COLOR_CHOICES = [("role", "role"), ("modality", "modality"), ("number of objects", "n"), ("model correct", "correct")]
METHOD_CHOICES = [("UMAP", "umap"), ("PCA", "pca")]
PAIRING_OF = {"text": "tt", "image": "ii"}  # Browse pairing that shows a point of this modality

CSS = """
#map-detail .map-caption {font-size:1.05em; margin:4px 0}
#map-detail .map-meta {color:#555}
#map-selected {display:none !important}
.map-table {border-collapse:collapse; width:100%; font-size:0.9em}
.map-table th {white-space:nowrap; text-align:left; border-bottom:1px solid #ccc; padding:2px 6px}
.map-table td {padding:2px 6px; border-bottom:1px solid #eee; vertical-align:top}
.map-table td.cap {word-break:normal; overflow-wrap:anywhere}
#map-selection .map-table-wrap {max-height:360px; overflow-y:auto}
"""

# After every new figure: bind the hover box with thumbnails (map_figure.HOVER_JS, the same as the HTML export's) and
# bridge plotly clicks and selections to textboxes. gr.Plot has no click/select event (Gradio 6), so a plotly_click
# listener writes the clicked point's id into #map-point, and a plotly_selected listener (box / lasso) writes the
# selected point indices as JSON into the hidden #map-selected, each firing the box's input event.
CLICK_JS = """
() => {
  __HOVER_JS__
  let tries = 0;
  const timer = setInterval(() => {
    const gd = document.querySelector('#map-plot .js-plotly-plot');
    if (gd && gd.on) {
      blMapHover(gd);
      if (gd.removeAllListeners) gd.removeAllListeners('plotly_click');
      gd.on('plotly_click', (ev) => {
        const p = ev && ev.points && ev.points[0];
        const box = document.querySelector('#map-point textarea, #map-point input');
        if (!p || !p.customdata || !box) return;
        box.value = p.customdata[0];
        box.dispatchEvent(new Event('input', {bubbles: true}));
      });
      const send = (ids) => {
        const sel = document.querySelector('#map-selected textarea, #map-selected input');
        if (!sel) return;
        sel.value = JSON.stringify(ids);
        sel.dispatchEvent(new Event('input', {bubbles: true}));
      };
      if (gd.removeAllListeners) { gd.removeAllListeners('plotly_selected'); gd.removeAllListeners('plotly_deselect'); }
      gd.on('plotly_selected', (ev) => {
        const pts = (ev && ev.points) || [];
        send(pts.filter((p) => p.customdata).map((p) => p.customdata[2]));
      });
      gd.on('plotly_deselect', () => send([]));
    }
    if (++tries > 20) clearInterval(timer);
  }, 300);
}
""".replace("__HOVER_JS__", HOVER_JS)
THUMB_SIZE = 64  # hover thumbnails, px


NEIGHBOURS_K = 10  # nearest neighbours listed for a clicked point
MAX_LISTED = 200  # selected points listed in the table (the summary counts all of them)


# --- formatting (no maths) ------------------------------------------------------------------------------------------
def _figure(state: dict[str, Any] | None, color: str, search: str = "", joined: str | None = None) -> Any:
    if not state:
        return message_figure("make a map first")
    m, method = state["map"], state["shown"]
    hits = ms.search_points(m.points, search)
    label = f"search “{search.strip()}” ({len(hits)})" if hits else ""
    return map_figure(
        m.points,
        state["layouts"][method],
        color,
        plot_text(ms.map_title(m, method)),
        thumbs=state["thumbs"],
        highlight=hits,
        highlight_label=label,
        joined=joined,
    )


def _search_note(state: dict[str, Any] | None, search: str) -> str:
    if not state or not (search or "").strip():
        return ""
    n = len(ms.search_points(state["map"].points, search))
    if not n:
        return f"no caption contains every word of “{md_text(search.strip())}”"
    return f"**{n}** point{'s' if n != 1 else ''} match “{md_text(search.strip())}” (ringed in orange)"


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> str:
    """A small HTML table (headers never wrap, the caption column does)."""
    head = "".join(f"<th>{html_text(label)}</th>" for _, label in columns)
    body = []
    for r in rows:
        cells = []
        for key, _ in columns:
            v = r[key]
            text = ("✓" if v else "✗") if isinstance(v, bool) else html_text(v)
            cells.append(f"<td class='cap'>{text}</td>" if key == "caption" else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table class='map-table'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def neighbours_html(rows: list[dict[str, Any]]) -> str:
    """The nearest-neighbour table of a clicked point."""
    if not rows:
        return ""
    table = _table(
        rows,
        [
            ("rank", "#"),
            ("cosine", "cos"),
            ("role", "role"),
            ("modality", "mod."),
            ("same_question", "same q."),
            ("caption", "caption"),
        ],
    )
    return f"<b>{len(rows)} nearest points</b> (cosine in the full embedding space, not the 2-D layout){table}"


def selection_html(summary: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """What a box / lasso selection holds: counts, the model's accuracy on those questions, one row per point."""
    if not rows:
        return ""
    acc = summary["accuracy"]
    roles = ", ".join(f"{r} {n}" for r, n in summary["roles"].items())
    more = f" (first {MAX_LISTED} listed)" if len(rows) > MAX_LISTED else ""
    table = _table(
        rows[:MAX_LISTED],
        [
            ("id", "point"),
            ("role", "role"),
            ("modality", "mod."),
            ("n_objects", "N"),
            ("correct", "model correct"),
            ("caption", "caption"),
        ],
    )
    return (
        f"<p><b id='map-sel-count'>{summary['n_points']}</b> selected points{more} from "
        f"{summary['n_questions']} questions · model correct on {summary['n_correct']} of {summary['n_answers']} "
        f"(question, modality) answers = <b>{acc:.0%}</b> · {html_text(roles)}</p>"
        f"<div class='map-table-wrap'>{table}</div>"
    )


def _status(state: dict[str, Any], pending: str = "") -> str:
    m = state["map"]
    notes = "".join(f"<br>note: {md_text(n)}" for n in m.notes)
    return f"**{md_text(ms.summary_line(m))}** · showing **{state['shown'].upper()}**{pending}{notes}"


def find_point(state: dict[str, Any] | None, text: str) -> dict[str, Any]:
    """The point named by a point id (``question/modality/role``) or a question id (its query, first modality)."""
    if not state:
        raise ValueError("make a map first, then click a point")
    key, points = (text or "").strip(), state["map"].points
    for p in points:
        if p["id"] == key:
            return p
    for p in points:
        if p["question"] == key:
            return p
    raise ValueError(f"no point or question {key!r} in this map (a point id looks like {points[0]['id']!r})")


def point_markdown(p: dict[str, Any]) -> str:
    verdict = "✓ answered correctly" if p["correct"] else "✗ answered wrongly"
    # a gr.Markdown, but the line opens with <div>: an HTML block, which Markdown leaves as it is (no Markdown
    # inside, so no backslash escapes either): every field is escaped as HTML text
    mod = html_text(str(p["modality"])[:1])
    return (
        f'<div class="map-caption">{html_text(p["caption"])}</div>'
        f'<div class="map-meta"><b>{html_text(p["question"])}</b> · {html_text(p["role"])} · '
        f"{html_text(p['modality'])} · N={html_text(p['n_objects'])} · {html_text(p['subset'])} · {verdict} "
        f"({mod}→{mod})</div>"
    )


# --- callbacks: validate, call the backend, format ------------------------------------------------------------------
@gpu_task(duration=120)
@friendly
def make_map(
    data: str,
    model: str,
    n_objects: list[str],
    limit: float,
    seed: float,
    color: str,
    method: str,
    search: str = "",
    progress: gr.Progress = gr.Progress(),
) -> tuple[Any, ...]:
    """Embed the subset and show its PCA map; the state keeps what the UMAP step and the point panel need (the
    points, not their vectors: those read them back from the embedding cache, ``ms.map_vectors``)."""
    progress(0, desc="reading the questions")  # at once: loading the model can take a while before the embedding
    request = ms.MapRequest(
        model=model,
        data=data,
        n_objects=n_objects or None,
        limit=ms.DEFAULT_LIMIT if limit in (None, "") else limit,
        seed=seed or 0,
        method="pca",
        color=color,
    )
    m = ms.prepare_map(request, progress=lambda f, msg: progress(f, desc=msg))
    res = ms.run_map(request, prepared=m)
    m = res.figures_data["map"]  # without its vectors: 164 MB per session with bow at the Map's cap
    state = {
        "map": m,
        "result": res,
        "layouts": {"pca": res.figures_data["xy"]},
        "shown": "pca",
        "request": request,
        "thumbs": thumbnails(m.points, THUMB_SIZE),
    }  # thumbnails read the images once, not on every recolour
    pending = " · UMAP computing (its first run in this app compiles: about a minute) …" if method == "umap" else ""
    # a new map: the point, its neighbours and any selection belong to the old one
    return _figure(state, color, search), state, _status(state, pending), "", "", ""


@friendly
def add_umap(
    state: dict[str, Any] | None, color: str, method: str, search: str = "", progress: gr.Progress = gr.Progress()
) -> tuple[Any, ...]:
    """Chained after :func:`make_map`: compute (or read from the cache) the UMAP layout and show it."""
    if not state or method != "umap":
        return gr.update(), state, gr.update()
    progress(
        None, desc="UMAP layout (read from the cache, or computed: its first run in this app compiles, about a minute)"
    )
    res = ms.run_map(replace(state["request"], method="umap"), prepared=state["map"])
    state = {**state, "result": res, "layouts": {**state["layouts"], "umap": res.figures_data["xy"]}, "shown": "umap"}
    return (_figure(state, color, search), state, _status(state, " (from cache)" if res.summary["from_cache"] else ""))


@friendly
def recolor(
    state: dict[str, Any] | None, color: str, search: str = "", join: bool = False, point: str = ""
) -> tuple[Any, str]:
    """Redraw with the colouring, the search rings and (when asked) the clicked point's question joined."""
    joined = None
    if join and state and (point or "").strip():
        try:
            joined = find_point(state, point)["question"]
        except ValueError:
            joined = None  # the Point box says why already
    return _figure(state, color, search, joined), _search_note(state, search)


def join_clicked(state: dict[str, Any] | None, color: str, search: str, join: bool, point: str) -> tuple[Any, Any]:
    """After a click: redraw with the point's question joined when that option is on (else leave the plot)."""
    return recolor(state, color, search, join, point) if join else (gr.update(), gr.update())


@friendly
def show_selection(state: dict[str, Any] | None, text: str) -> str:
    """The box / lasso selection (point indices as JSON, written by the plot bridge) as a summary and a table."""
    import json

    if not state or not (text or "").strip():
        return ""
    try:
        indices = [int(i) for i in json.loads(text)]
    except (TypeError, ValueError):
        raise ValueError(f"selection {text[:40]!r} is not a list of point numbers") from None
    return selection_html(*ms.selected_points(state["map"], indices))


@friendly
def select_point(state: dict[str, Any] | None, text: str) -> tuple[Any, str, str]:
    """Image, description and nearest neighbours (full embedding space) of the point named in the Point box; while
    it names none, say so (no error toast: this runs on every change of the box, keystrokes included)."""
    if not (text or "").strip():
        return None, "", ""
    try:
        p = find_point(state, text)
    except ValueError as e:
        return None, md_text(e), ""
    near = neighbours_html(ms.point_neighbours(state["map"], p["id"], NEIGHBOURS_K))
    return shown_image(p["image"]), point_markdown(p), near


@friendly
def open_target(state: dict[str, Any] | None, text: str, request: gr.Request | None = None) -> tuple[Any, ...]:
    """Switch to Browse with the map's file and model, the pairing of the point's modality and no filters."""
    p = find_point(state, text)
    m = state["map"]
    data = offer_data("mcq", str(m.path), request)  # public mode: Browse's dropdown offers it
    return (gr.Tabs(selected="browse"), p["question"], data, m.model, PAIRING_OF[p["modality"]], "all", "all", "all")


@friendly
def export(
    state: dict[str, Any] | None,
    color: str,
    search: str = "",
    join: bool = False,
    point: str = "",
    selected: str = "",
    formats: list[str] | None = None,
) -> tuple[list[str], str]:
    """Download: every point with its coordinates in each layout computed, and the map shown (as the CLI writes it,
    with the search rings and the joined question on screen); the clicked point's nearest neighbours and the box /
    lasso selection's points when the page shows them."""
    import json

    from bindlab.present.exports import map_export

    if not state:
        raise ValueError("make a map first, then download it")
    m = state["map"]
    hits = ms.search_points(m.points, search or "")
    marks: dict[str, Any] = {
        "highlight": hits,
        "highlight_label": f"search “{search.strip()}” ({len(hits)})" if hits else "",
    }
    neighbours = selection = None
    if (point or "").strip():
        try:
            p = find_point(state, point)
        except ValueError:
            p = None  # the Point box names no point: the page shows no neighbours either
        if p is not None:
            neighbours = ms.point_neighbours(m, p["id"], NEIGHBOURS_K)
            marks["joined"] = p["question"] if join else None
    if (selected or "").strip():
        try:
            indices = [int(i) for i in json.loads(selected)]
        except (TypeError, ValueError):
            indices = []
        selection = ms.selected_points(m, indices)[1] if indices else None
    view = map_export(state["result"], state["layouts"], color, state["shown"], marks, neighbours, selection)
    request = replace(state["request"], method=state["shown"], color=color)
    settings = {**request.settings(), "layouts": sorted(state["layouts"])}
    return deliver(view, ms.map_provenance(m, settings, request.seed), formats)


def build_tab() -> dict[str, Any]:
    """Lay out the Map tab; returns a ``wire`` hook that ``build_app`` calls with the Tabs and the Browse handles."""
    gr.Markdown(
        "A 2-D map of the embeddings of a SABER subset: every query and candidate, in text and (for "
        "image+text models on an image benchmark) image form. Colour by role, modality, number of objects "
        "or whether the model answers the question correctly; queries are the large rings, drawn under "
        "their candidates (none hidden). PCA shows at once, UMAP follows. Click a legend entry to hide or "
        "show a group. Click a point to see it and its nearest neighbours, then open its question in "
        "Browse. Drag a box (or pick the lasso in the plot's toolbar) to list the points inside with the "
        "model's accuracy on them."
    )
    with gr.Row():
        data = data_picker(
            "mcq", "MCQ file (empty = embedded mini benchmark; with images for image models)", "map-data"
        )
        model = gr.Dropdown(
            MODEL_CHOICES, value="toy:clip", label="Encoder id", allow_custom_value=True, scale=2, elem_id="map-model"
        )
        n_objects = gr.Dropdown(
            [str(n) for n in range(2, 11)],
            value=[],
            multiselect=True,
            scale=2,
            label="Number of objects (empty = all)",
            elem_id="map-n",
        )
        limit = gr.Number(
            ms.DEFAULT_LIMIT,
            precision=0,
            minimum=1,
            maximum=ms.MAX_LIMIT,
            label="Questions (seeded sample)",
            scale=1,
            elem_id="map-limit",
        )
    with gr.Row():
        color = gr.Radio(COLOR_CHOICES, value="role", label="Colour by", scale=3, elem_id="map-color")
        method = gr.Radio(
            METHOD_CHOICES,
            value="umap",
            label="Layout (PCA shows at once while UMAP computes)",
            scale=2,
            elem_id="map-method",
        )
        seed = gr.Number(0, precision=0, label="Seed", scale=1, elem_id="map-seed")
        run = gr.Button("Make map", variant="primary", scale=1, elem_id="map-run")
    with gr.Row():
        search = gr.Textbox(
            label="Search captions (points whose caption has every word are ringed)",
            scale=3,
            placeholder="red cube (then Enter)",
            max_length=ms.MAX_SEARCH_CHARS,
            elem_id="map-search",
        )
        join = gr.Checkbox(
            False,
            label="Join the clicked point's question (lines from its query to its candidates)",
            scale=2,
            elem_id="map-join",
        )
    search_note = gr.Markdown(elem_id="map-search-note")
    status = gr.Markdown(elem_id="map-status")
    with gr.Row():
        with gr.Column(scale=3):
            plot = gr.Plot(label="Embedding map", elem_id="map-plot")
        with gr.Column(scale=1):
            point = gr.Textbox(
                label="Point (click one on the map, or type a point or question id)", elem_id="map-point"
            )
            thumb = gr.Image(
                label="Image of the point's item", type="pil", interactive=False, height=220, elem_id="map-thumb"
            )
            detail = gr.Markdown(elem_id="map-detail")
            open_btn = gr.Button("Open in Browse", elem_id="map-open")
    with gr.Row():
        neighbours = gr.HTML(elem_id="map-neighbours")
        selection = gr.HTML(elem_id="map-selection")
    selected = gr.Textbox(label="selected points", elem_id="map-selected", container=False)
    state = held_state()
    wire_export(
        export_panel("map", "the map"), export, [state, color, search, join, point, selected], api_name="map_export"
    )
    target = gr.State(None)  # the question id that Open in Browse hands over

    # results after an error (bindlab.ui.common): a failed map (or its UMAP step) clears the map and everything read
    # from it (point shown, neighbours, selection); a failed redraw clears the plot; a failed point or selection
    # clears what it would have shown
    made = [plot, state, status, search_note, point, thumb, detail, neighbours, selected, selection]
    make = run.click(
        make_map,
        [data, model, n_objects, limit, seed, color, method, search],
        [plot, state, status, point, selected, selection],
        api_name="map_make",
        **GPU_QUEUE,
    )
    clear_on_error(make, made)
    clear_on_error(
        make.success(add_umap, [state, color, method, search], [plot, state, status], api_name="map_umap"), made
    )
    redraw_inputs = [state, color, search, join, point]
    clear_on_error(color.change(recolor, redraw_inputs, [plot, search_note], api_name="map_color"), [plot, search_note])
    clear_on_error(
        search.submit(recolor, redraw_inputs, [plot, search_note], api_name="map_search"), [plot, search_note]
    )
    clear_on_error(join.change(recolor, redraw_inputs, [plot, search_note], api_name="map_join"), [plot, search_note])
    plot.change(None, None, None, js=CLICK_JS, api_name=False)
    # .change, not .input: the bridges set the boxes from JavaScript, which Gradio reports as a change only.
    clicked = point.change(
        select_point, [state, point], [thumb, detail, neighbours], api_name="map_point", trigger_mode="always_last"
    )
    clear_on_error(clicked, [thumb, detail, neighbours])
    clicked.then(join_clicked, redraw_inputs, [plot, search_note], api_name=False)
    clear_on_error(
        selected.change(
            show_selection, [state, selected], [selection], api_name="map_selection", trigger_mode="always_last"
        ),
        [selection],
    )

    def wire(tabs: gr.Tabs, hooks: dict[str, dict[str, Any]]) -> None:
        """Open in Browse: set Browse's inputs (no filters), switch tab, then select the question there."""
        from bindlab.ui import browse as browse_tab

        b = hooks["browse"]["handles"]
        open_btn.click(
            open_target, [state, point], [tabs, target, *b["source"], *b["filters"]], api_name="map_open"
        ).success(browse_tab.open_question, [*b["source"], target, b["k"]], b["outputs"], api_name=False, **GPU_QUEUE)

    return {"wire": wire}
