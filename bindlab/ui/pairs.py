"""Pairs tab: CompoSET-style base/foil pairs with their 2x2 score matrix, filters and a per-edit-type chart; a second
model ("Compare with", by default toy:negclip next to toy:clip: a failure and its fix) scored in the same click, its
I2T / T2I / Group per edit type side by side with the first model's."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from bindlab.present import figures, numbers
from bindlab.present.cards import pair_card, write_card
from bindlab.present.exports import pairs_export
from bindlab.present.model_pair_figures import pairs_two_models_figure
from bindlab.present.safe_text import html_text, md_text, plot_text
from bindlab.studies import pairs as pairs_study
from bindlab.ui.common import clear_on_error, data_picker, friendly, shown_image
from bindlab.ui.exports import deliver, export_panel, new_export_dir, wire
from bindlab.ui.gpu import GPU_QUEUE, gpu_task
from bindlab.ui.layout import pinned

DEFAULT_MODEL = "toy:clip"
NO_COMPARE = "none"
COMPARE_CHOICES = [NO_COMPARE, "toy:negclip", "toy:clip", "toy:shared", "toy:lit-minilm"]
CSS = """
.bl-mat {border-collapse: collapse; margin: 6px 0}
.bl-mat td, .bl-mat th {border: 1px solid #ccc; padding: 4px 10px; font-family: monospace; text-align: center}
.bl-mat td.own {background: #eef6ee; font-weight: bold}
.bl-pass {color: #2ca02c; font-weight: bold}
.bl-fail {color: #c0392b; font-weight: bold}
#bl-pairs-compare-table th, #bl-pairs-compare-table th *, #bl-pairs-edit-table th, #bl-pairs-edit-table th * {
  white-space: normal; word-break: keep-all; overflow-wrap: normal}
"""


def _mark(ok: bool) -> str:
    return '<span class="bl-pass">pass</span>' if ok else '<span class="bl-fail">fail</span>'


def _cell(c: int, i: int, score: float) -> str:
    """One cell of the 2x2 matrix: the score with 3 decimals, its full value on hover."""
    return (
        f'<td class="{"own" if c == i else ""}" data-cell="c{c}_i{i}" title="{float(score)}">'
        f"{numbers.score(score)}</td>"
    )


def matrix_html(view: dict[str, Any]) -> str:
    """The 2x2 matrix (rows = captions, columns = images) and which conditions pass."""
    s = view["scores"]
    cap = {0: html_text(view["base"]["caption"]), 1: html_text(view["foil"]["caption"])}
    rows = "".join(
        f"<tr><th>c{c} {'base' if c == 0 else 'foil'}: {cap[c]}</th>"
        + "".join(_cell(c, i, s[f"c{c}_i{i}"]) for i in (0, 1))
        + "</tr>"
        for c in (0, 1)
    )
    px = view.get("pixels_changed")
    extra = (f" · pixels changed {px:.3f}" if isinstance(px, (int, float)) else "") + (
        f" · image cosine {numbers.score(view['image_cosine'])}" if view.get("image_cosine") is not None else ""
    )
    origin = f", origin {html_text(view['edit_origin'])}" if view.get("edit_origin") else ""
    return (
        f'<div class="bl-pair-card"><p><b>{html_text(view["id"])}</b> · scene {html_text(view["scene_id"])} · '
        f'edit type <b class="bl-pair-edit-type">{html_text(view["edit_type"])}</b> (category '
        f"{html_text(view['edit_category'])}{origin}) · caption level {html_text(view['verbosity'])}"
        f"{extra}<br><i>{html_text(view['edit'])}</i></p>"
        f'<table class="bl-mat"><tr><th></th><th>i0 base image</th><th>i1 foil image</th></tr>{rows}</table>'
        f'<p>I2T {_mark(view["i2t"])} · T2I {_mark(view["t2i"])} · Group <span class="bl-pair-group">'
        f'{_mark(view["group"])}</span> · margin <b class="bl-pair-margin" title="{float(view["margin"])}">'
        f"{html_text(numbers.margin(view['margin'], tol=0.0))}</b></p></div>"
    )


def scores_md(block: dict[str, Any]) -> str:
    """I2T / T2I / Group of one score block, each with its 95 % interval, chance level and where the interval lies
    against it: "I2T **0.022** (95% CI 0.000–0.056; chance 0.250: below chance) · …"."""
    return " · ".join(
        f"{r['name']} **{numbers.score(r['value'])}** (95% CI {numbers.interval(r['ci95'])}; chance "
        f"{numbers.score(r['chance'])}" + (f": {r['vs_chance']}" if r["vs_chance"] else "") + ")"
        for r in pairs_study.score_summary(block)
    )


def summary_md(s: pairs_study.ScoredPairs) -> str:
    """The scored file: what n counts (pairs × caption levels), the three scores with their intervals against
    chance, the scene/edit split and image controls, the by-origin line, and a sentence per score below chance."""
    sp, c = s.summary["scene_edit_split"]["counts"], s.summary["controls"]
    lines = [
        f"**{md_text(s.model)}** · {md_text(pairs_study.n_label(s))} · {scores_md(s.summary['overall'])}; "
        "intervals: bootstrap over the scored rows",
        f"Scenes ({sp['scenes']}): {sp['scene_hard_only']} scene-hard only, {sp['edit_hard_only']} edit-hard only, "
        f"{sp['both']} both · within-pair image cosine {numbers.score(c['within_pair_image_cosine']['mean'])} vs "
        f"across scenes {numbers.score(c['across_scene_image_cosine'])}",
    ]
    if by_origin := pairs_study.origin_line(s.summary):
        lines.append(f"By origin: {md_text(by_origin)}")
    lines += [f"- {md_text(note)}" for note in pairs_study.below_chance_notes(s)]
    return "  \n".join(lines[:3]) + ("\n\n" + "\n".join(lines[3:]) if lines[3:] else "")


def edit_type_frame(s: pairs_study.ScoredPairs) -> pd.DataFrame:
    """The per-edit-type table: a row per edit type (taxonomy order) with its pairs, its n scored (pair, caption
    level) rows, and I2T / T2I / Group each beside its 95 % interval; an edit type the set lacks says "no pairs"."""
    rows = []
    for r in pairs_study.edit_type_table(s):
        row: dict[str, Any] = {
            "edit type": r["edit_type"],
            "category": r.get("category", ""),
            "origin": r.get("origin", ""),
            "pairs": r.get("pairs"),
            "n (rows)": r["n"],
        }
        for k, name in pairs_study.SCORE_NAMES.items():
            missing = r.get(k) is None
            row[name] = "no pairs" if missing else float(r[k])
            row[f"{name} 95% CI"] = "" if missing else numbers.interval(r.get(f"{k}_ci95"))
        rows.append(row)
    return numbers.table(pd.DataFrame(rows))


def _data(data: str) -> str:
    return (data or "").strip() or str(pairs_study.default_pairs_dataset())


def _show(s: pairs_study.ScoredPairs, pid: str | None, level: str | None) -> tuple[Any, ...]:
    if not pid:
        return None, "", None, "", "<p>No pair matches these filters.</p>"
    v = pairs_study.pair_view(s, pid, level)
    return (
        shown_image(v["base"]["image"]),
        v["base"]["caption"],
        shown_image(v["foil"]["image"]),
        v["foil"]["caption"],
        matrix_html(v),
    )


def _other(other: str | None) -> str:
    """The "Compare with" id, "" for none."""
    other = (other or "").strip()
    return "" if other == NO_COMPARE else other


def compare_frame(c: pairs_study.PairsComparison) -> pd.DataFrame:
    """The two-model table: a row per edit type (overall first) with its pairs and n scored (pair, caption level)
    rows, I2T / T2I / Group of each model (3 decimals); an edit type the set lacks says "no pairs" (missing, not
    zero)."""
    frame = pd.DataFrame(c.table)
    scores = [col for col in frame.columns if col not in ("edit_type", "pairs", "n")]
    values = frame[scores].astype(float)
    frame[scores] = values.astype(object).where(values.notna(), "no pairs")
    return numbers.table(frame.rename(columns={"edit_type": "edit type", "n": "n (rows)"}))


def compare_md(c: pairs_study.PairsComparison) -> str:
    return f"Compared with {summary_md(c.second)}"


def _comparison(data: str, model: str, other: str, verbosity: str, progress: Any) -> tuple[Any, ...]:
    """(first model's ScoredPairs, compare summary, compare chart, compare table); the second model only if asked.
    The table is hidden without one: an empty table would show only Gradio's placeholder header ("1 2 3")."""
    if not other:
        s = pairs_study.scored_pairs(data, model, verbosity, progress=progress)
        return s, "", None, gr.update(value=pd.DataFrame(), visible=False)
    c = pairs_study.compare_pairs(data, model, other, verbosity, progress=progress)
    return (
        c.first,
        compare_md(c),
        pairs_two_models_figure(c.rows, c.models),
        gr.update(value=compare_frame(c), visible=True),
    )


# --- callbacks: validate, call the backend, format ------------------------------------------------------------
@gpu_task(duration=120)
@friendly
def score(
    data: str, model: str, verbosity: str, other: str = NO_COMPARE, progress: gr.Progress = gr.Progress()
) -> tuple[Any, ...]:
    model = (model or "").strip()
    if not model:
        raise ValueError("give an image+text encoder id, e.g. toy:clip or hf:/path/to/clip")
    s, cmp_md, cmp_fig, cmp_table = _comparison(
        _data(data), model, _other(other), verbosity, lambda f, m: progress(f, desc=m)
    )
    opts = filter_options_updates(s)
    ids = pairs_study.filter_pairs(s, verbosity=opts["level"])
    first = ids[0] if ids else None
    fig = figures.pairs_by_edit_type(
        pairs_study.edit_type_table(s), title=f"{plot_text(s.model)}: 2x2 scores by edit type"
    )
    edit_table = gr.update(value=edit_type_frame(s), visible=True)
    return (
        summary_md(s),
        fig,
        edit_table,
        cmp_md,
        cmp_fig,
        cmp_table,
        *opts["updates"],
        gr.update(choices=ids, value=first),
        f"{len(ids)} pairs match",
        *_show(s, first, opts["level"]),
    )


def suggest_compare(model: str, other: str) -> Any:
    """A new first model: its default partner (toy:clip -> toy:negclip and back); else "none" when the second
    model is now the same as the first, else the choice stays."""
    partner = pairs_study.compare_default(model)
    if partner:
        return gr.update(value=partner)
    return gr.update(value=NO_COMPARE) if _other(other) == (model or "").strip() else gr.update()


def filter_options_updates(s: pairs_study.ScoredPairs) -> dict[str, Any]:
    o = pairs_study.filter_options(s)
    level = o["verbosity"][0]
    return {
        "level": level,
        "updates": [
            gr.update(choices=o["edit_type"], value="all"),
            gr.update(choices=o["category"], value="all"),
            gr.update(choices=o["scene"], value="all"),
            gr.update(choices=o["verbosity"], value=level),
            gr.update(value="all"),
        ],
    }


@friendly
def refilter(
    data: str, model: str, verbosity: str, edit_type: str, category: str, scene: str, level: str, outcome: str
) -> tuple[Any, ...]:
    s = pairs_study.scored_pairs(_data(data), (model or "").strip(), verbosity)
    ids = pairs_study.filter_pairs(s, edit_type, category, scene, level, outcome)
    first = ids[0] if ids else None
    return (gr.update(choices=ids, value=first), f"{len(ids)} pairs match", *_show(s, first, level))


@friendly
def show_pair(data: str, model: str, verbosity: str, level: str, pid: str) -> tuple[Any, ...]:
    s = pairs_study.scored_pairs(_data(data), (model or "").strip(), verbosity)
    return _show(s, pid, level)


@gpu_task(duration=120)
@friendly
def card_files(data: str, model: str, verbosity: str, level: str, pid: str | None) -> list[str]:
    """The pair on screen as a picture: ``<pair>_card.png`` and ``.svg`` (its two images and captions, the four
    scores, I2T / T2I / Group; :mod:`bindlab.present.cards`)."""
    if not pid:
        raise ValueError("pick a pair first (press Score, then choose one in the Pair list)")
    s = pairs_study.scored_pairs(_data(data), (model or "").strip(), verbosity)
    card = pair_card(pairs_study.pair_view(s, pid, level), s.model)
    return [str(p) for p in write_card(card, new_export_dir(), f"{pid}_card")]


@friendly
def check_default_model() -> str:
    """Page-load note: whether the default model loads here (no scoring happens until *Score*)."""
    try:
        pairs_study.check_model(DEFAULT_MODEL)
    except ValueError as e:
        return (
            f"The default model **{DEFAULT_MODEL}** cannot be loaded here ({md_text(e)}). Enter another image+text "
            "encoder id (e.g. `hf:/path/to/clip`) and press *Score*."
        )
    partner = pairs_study.compare_default(DEFAULT_MODEL)
    also = f", next to **{md_text(partner)}** (*Compare with*)" if partner else ""
    return f"Default model **{DEFAULT_MODEL}** is available; press *Score* to score the pairs{also}."


@friendly
def export(
    data: str, model: str, verbosity: str, other: str | None = None, formats: list[str] | None = None
) -> tuple[list[str], str]:
    """Download: I2T / T2I / Group tables, the per-edit-type table and chart, per-pair JSONL — the files
    ``eval pairs --export`` writes, from the same :func:`bindlab.studies.pairs.run_pairs` result — and, when a second
    model is chosen (*Compare with*), both models' table per edit type and their chart."""
    model = (model or "").strip()
    if not model:
        raise ValueError("give an image+text encoder id, e.g. toy:clip or hf:/path/to/clip")
    s = pairs_study.scored_pairs(_data(data), model, verbosity)
    view = pairs_export(s.result)
    if _other(other) and _other(other) != model:
        c = pairs_study.compare_pairs(_data(data), model, _other(other), verbosity)
        view.tables["two_models"] = c.table
        view.tables["two_models_long"] = c.rows
        view.figures["two_models"] = pairs_two_models_figure(c.rows, c.models)
    return deliver(view, s.result.provenance, formats)


def build_tab() -> dict[str, Any]:
    """Lay out the Pairs tab inside the current ``gr.Blocks``; returns what the page-load event needs."""
    gr.Markdown(
        "Same-scene pairs that differ by **one** edit (CompoSET-style). Each pair is scored Winoground-style: "
        "I2T passes when each image prefers its own caption, T2I when each caption prefers its own image, "
        "Group when both do (ties fail). Chance: 25 % / 25 % / 16.7 %."
    )
    with gr.Row():
        data = data_picker("pairs", "Pairs file (empty = embedded mini CompoSET set)", "bl-pairs-data")
        model = gr.Dropdown(
            [DEFAULT_MODEL, "toy:negclip", "toy:shared", "toy:lit-minilm"],
            value=DEFAULT_MODEL,
            label="Image+text encoder id",
            allow_custom_value=True,
            scale=2,
            elem_id="bl-pairs-model",
        )
        other = gr.Dropdown(
            COMPARE_CHOICES,
            value=pairs_study.compare_default(DEFAULT_MODEL) or NO_COMPARE,
            label="Compare with (scored in the same click; none = one model)",
            allow_custom_value=True,
            scale=2,
            elem_id="bl-pairs-compare",
        )
        verbosity = gr.Radio(["all", "short", "medium", "long"], value="all", label="Caption levels to score", scale=2)
        run = gr.Button("Score", variant="primary", scale=1, elem_id="bl-pairs-score-btn")
    summary = gr.Markdown(elem_id="bl-pairs-summary")
    cmp_summary = gr.Markdown(elem_id="bl-pairs-compare-summary")
    # one above the other: side by side, the table's seven columns had room only for headers broken mid-word
    # hidden until a second model is scored: empty, a table shows only a placeholder header ("1 2 3")
    cmp_table = gr.Dataframe(
        label="Both models: I2T / T2I / Group per edit type (chance 0.250 / 0.250 / 0.167; "
        "n = scored rows, pairs × caption levels)",
        interactive=False,
        wrap=True,
        elem_id="bl-pairs-compare-table",
        visible=False,
        **pinned("bl-pairs-compare-table"),
    )
    cmp_chart = gr.Plot(label="Both models by edit type", elem_id="bl-pairs-compare-chart")
    with gr.Row():
        edit_type = gr.Dropdown(["all"], value="all", label="Edit type", elem_id="bl-pairs-edit-type")
        category = gr.Dropdown(["all"], value="all", label="Category", elem_id="bl-pairs-category")
        scene = gr.Dropdown(["all"], value="all", label="Scene", elem_id="bl-pairs-scene")
        level = gr.Dropdown(
            ["short", "medium", "long"], value="short", label="Verbosity shown", elem_id="bl-pairs-level"
        )
        outcome = gr.Radio(list(pairs_study.OUTCOMES), value="all", label="Outcome", elem_id="bl-pairs-outcome")
    with gr.Row():
        with gr.Column(scale=3):
            pair = gr.Dropdown([], label="Pair", elem_id="bl-pairs-pair")
            count = gr.Markdown(elem_id="bl-pairs-count")
            with gr.Row():
                with gr.Column():
                    base_img = gr.Image(
                        label="Base image (i0)",
                        type="filepath",
                        interactive=False,
                        height=256,
                        elem_id="bl-pairs-base-img",
                    )
                    base_cap = gr.Textbox(label="Base caption (c0)", interactive=False, elem_id="bl-pairs-base-cap")
                with gr.Column():
                    foil_img = gr.Image(
                        label="Foil image (i1)",
                        type="filepath",
                        interactive=False,
                        height=256,
                        elem_id="bl-pairs-foil-img",
                    )
                    foil_cap = gr.Textbox(label="Foil caption (c1)", interactive=False, elem_id="bl-pairs-foil-cap")
            matrix = gr.HTML(elem_id="bl-pairs-matrix")
            card_btn = gr.Button("Card as PNG / SVG", size="sm", elem_id="bl-pairs-card-btn")
            card_out = gr.File(
                label="This pair as a picture",
                file_count="multiple",
                interactive=False,
                visible=False,
                elem_id="bl-pairs-card-files",
            )
        with gr.Column(scale=2):
            chart = gr.Plot(label="Scores by edit type", elem_id="bl-pairs-chart")
    edit_table = gr.Dataframe(
        label="Per edit type: pairs, n scored rows (pairs × caption levels), I2T / T2I / Group "
        "with 95% intervals (chance 0.250 / 0.250 / 0.167)",
        interactive=False,
        wrap=True,
        elem_id="bl-pairs-edit-table",
        visible=False,
    )

    view = [base_img, base_cap, foil_img, foil_cap, matrix]
    source = [data, model, verbosity]
    filters = [edit_type, category, scene, level, outcome]
    # results after an error (bindlab.ui.common): a failed Score clears the summary, chart and pair shown; a failed
    # filter or pick clears the pair list and the pair shown
    compared = [cmp_summary, cmp_chart, cmp_table]
    clear_on_error(
        run.click(
            score,
            [*source, other],
            [summary, chart, edit_table, *compared, *filters, pair, count, *view],
            api_name="pairs_score",
            **GPU_QUEUE,
        ),
        [summary, chart, edit_table, *compared, pair, count, *view],
        hide=[edit_table, cmp_table],
    )
    model.input(suggest_compare, [model, other], [other], api_name="pairs_suggest_compare", queue=False)
    for k, f in enumerate(filters):
        clear_on_error(
            f.input(refilter, source + filters, [pair, count, *view], api_name=f"pairs_filter_{k}"),
            [pair, count, *view],
        )
    clear_on_error(pair.input(show_pair, source + [level, pair], view, api_name="pairs_show"), view)
    wire(export_panel("bl-pairs", "scores"), export, [*source, other], api_name="pairs_export")
    clear_on_error(
        card_btn.click(card_files, [*source, level, pair], [card_out], api_name="pairs_card", **GPU_QUEUE).success(
            lambda: gr.update(visible=True), None, [card_out], api_name=False, queue=False
        ),
        [card_out],
    )
    return {"event_fn": check_default_model, "inputs": [], "outputs": [summary]}
