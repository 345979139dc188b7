"""Browse tab: pick a question, see the query and its four candidates with roles, scores, margin, bindings."""

from __future__ import annotations

import math
import re
from typing import Any

import gradio as gr
import pandas as pd

from bindlab.config import public_mode
from bindlab.present import numbers
from bindlab.present.cards import question_card, write_card
from bindlab.present.exports import mcq_export, question_tables
from bindlab.present.safe_text import html_text, md_text
from bindlab.present.svg_figures import accuracy_by_n_svg
from bindlab.studies import browse, common
from bindlab.studies.browse import TIE_TOL
from bindlab.ui import share
from bindlab.ui.common import clear_on_error, data_picker, friendly, shown_image
from bindlab.ui.exports import deliver, export_panel, new_export_dir, wire
from bindlab.ui.gpu import GPU_QUEUE, gpu_task
from bindlab.ui.layout import pinned

MODEL_CHOICES = ["minilm", "bow", "toy:clip", "toy:shared", "toy:negclip", "toy:lit-minilm"]
ROLE_LABELS = {
    "preserve": "preserve ✓",
    "attr_swap": "attribute swap",
    "obj_swap": "object swap",
    "joint_swap": "joint swap",
    "replace": "replace one",
}


def highlight(text: str, bindings: list[tuple[str, str]], kept: list[bool] | None = None) -> str:
    """HTML of a caption with each "attribute object" phrase marked: green when it is a query binding, red if not.

    Caption and bindings are text (escaped); each binding marks its first whole-word occurrence in the caption not
    marked already. The phrases are found in the caption itself, never in markup built here."""
    text = str(text)
    marks: list[tuple[int, int, str]] = []  # (start, end, class) in ``text``
    for k, (a, o) in enumerate(bindings):
        cls = "bl-kept" if kept is None or kept[k] else "bl-broken"
        for m in re.finditer(rf"(?<!\w){re.escape(f'{a} {o}')}(?!\w)", text):
            if all(m.end() <= s or m.start() >= e for s, e, _ in marks):
                marks.append((m.start(), m.end(), cls))
                break
    out, pos = [], 0
    for start, end, cls in sorted(marks):
        out += [html_text(text[pos:start]), f'<span class="{cls}">{html_text(text[start:end])}</span>']
        pos = end
    return "".join(out) + html_text(text[pos:])


CSS = """
.bl-kept {background:#d9f2d9; border-radius:4px; padding:0 3px}
.bl-broken {background:#f8d7da; border-radius:4px; padding:0 3px; text-decoration: underline wavy #c0392b}
.bl-card {border:1px solid #ddd; border-radius:8px; padding:8px 12px; margin:6px 0}
.bl-card.answer {border:2px solid #2ca02c}
.bl-score {font-family: monospace; float:right}
.bl-side {width:100%; border-collapse:collapse} .bl-side td, .bl-side th {padding:2px 6px; border-bottom:1px solid #eee}
.bl-side tr.bl-answer-row {background:#eef8ee}
#bl-candidates th, #bl-candidates th *, #bl-topk th, #bl-topk th * {white-space: normal; word-break: keep-all; overflow-wrap: normal}
"""


def verdict_text(view: dict[str, Any]) -> str:
    """The question's verdict as its credit counts it: correct, wrong, or tied for first among t candidates with
    the answer one of them (credit 1/t, :func:`bindlab.eval.metrics.mcq_credit`)."""
    credit = view["credit"]
    if credit >= 1:
        return "correct"
    if credit > 0:
        t = round(1 / credit)
        return f"tied for first with {t - 1} other{'s' if t > 2 else ''}: credit 1/{t} = {numbers.score(credit)}"
    return "wrong"


def margin_note(margin: float) -> str:
    """A word on a margin too small to print: not a tie (the credit ties only scores within TIE_TOL), yet decided by
    less than the rounding; "" otherwise."""
    if abs(margin) <= TIE_TOL or round(margin, numbers.DIGITS) != 0:
        return ""
    return (
        f" (by less than 0.001, not a tie: scores count as tied only within {TIE_TOL:.6f}, as the credit counts them)"
    )


def question_html(view: dict[str, Any]) -> str:
    """The question as HTML cards: query first, then candidates in their shuffled order.

    Tied scores (within :data:`~bindlab.eval.metrics.TIE_TOL`, the tie rule of MCQ credit) share one rank, "=1
    (tie)"; scores that are not tied are printed with as many decimals as tell them apart
    (:func:`bindlab.present.numbers.tie_digits`), so two ranks never stand beside the same printed score. The margin
    reads as :func:`bindlab.present.numbers.margin` writes it: 3 decimals, "0.000 (tie)", or "-<0.001"."""
    q = view["query"]
    scores = [c["score"] for c in view["candidates"]]
    ranks = numbers.shared_ranks(scores)
    digits = numbers.tie_digits(scores)
    parts = [
        f'<div class="bl-card"><b>Query</b> · {html_text(view["id"])} · N={html_text(view["n_objects"])} · '
        f'{html_text(view["subset"])}<div style="font-size:1.1em">{highlight(q["text"], q["bindings"])}</div></div>'
    ]
    for k, c in enumerate(view["candidates"]):
        cls = "bl-card answer" if c["is_answer"] else "bl-card"
        tie = " (tie)" if ranks[k].startswith("=") else ""
        parts.append(
            f'<div class="{cls}" data-role="{html_text(c["role"])}"><span class="bl-score" data-score="{c["score"]!r}" '
            f'data-rank="{html_text(ranks[k])}">score {numbers.score(c["score"], digits)} · rank {ranks[k]}{tie}</span>'
            f"<b>{k + 1}. {html_text(ROLE_LABELS.get(c['role'], c['role']))}</b>"
            f"<div>{highlight(c['text'], c['bindings'], c['kept'])}</div></div>"
        )
    parts.append(
        f'<p>Margin (preserve − best other): <b id="bl-margin" data-margin="{view["margin"]!r}">'
        f"{html_text(numbers.margin(view['margin']))}</b>{margin_note(view['margin'])} → {verdict_text(view)}</p>"
    )
    if any(r.startswith("=") for r in ranks):
        parts.append(
            f'<p class="bl-tie-note"><small>=k: tied scores (within {TIE_TOL:.6f}) share rank k; a question '
            "tied for first among t candidates, the answer one of them, earns credit 1/t.</small></p>"
        )
    return "\n".join(parts)


def candidates_frame(view: dict[str, Any]) -> pd.DataFrame:
    """One row per candidate: role, caption, score, rank (tied scores share one, "=1"), bindings kept."""
    ranks = numbers.shared_ranks([c["score"] for c in view["candidates"]])
    return pd.DataFrame(
        [
            {
                "#": k + 1,
                "role": c["role"],
                "caption": c["text"],
                "score": c["score"],
                "rank": ranks[k],
                "bindings kept": f"{sum(c['kept'])}/{len(c['kept'])}",
            }
            for k, c in enumerate(view["candidates"])
        ]
    )


def summary_md(s: browse.ScoredSet) -> str:
    """The scored set in one line: accuracy with its interval against its chance level (the mean of the questions'
    own chance: 1/3 at N = 2, 1/4 above), by subset; then the words the model does not know."""
    acc = s.summary
    by_sub = ", ".join(f"{md_text(k)} {v:.3f}" for k, v in acc["by_subset"].items())
    line = (
        f"**{md_text(s.model)}** · pairing **{md_text(s.pairing)}** · {acc['n']} questions · "
        f"accuracy **{acc['accuracy']:.3f}** "
        f"(95% CI {acc['ci95'][0]:.3f}–{acc['ci95'][1]:.3f}; chance {acc['chance']:.3f}: {acc['vs_chance']}) · "
        f"{by_sub}"
    )
    cut = browse.truncation_text(s.result.summary.get("truncated"))  # texts cut at the model's token limit
    line = f"{line}<br>{md_text(cut)}" if cut else line
    unknown = browse.unknown_words_text(s.result.summary.get("unknown_words"))
    return f"{line}<br>Unknown words: {md_text(unknown)}" if unknown else line


def gallery_items(view: dict[str, Any]) -> list[tuple[str, str]]:
    """(image path, caption) for the query and candidates that have images, for a gr.Gallery."""
    items = []
    if view["query"]["image"]:
        items.append((shown_image(view["query"]["image"]), "query"))
    for k, c in enumerate(view["candidates"]):
        if c["image"]:
            mark = " ✓" if c["is_answer"] else ""
            items.append((shown_image(c["image"]), f"{k + 1}. {c['role']}{mark} · {c['score']:.3f}"))
    return items


def topk_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per top-k gallery item, best first; tied scores share a rank ("=1")."""
    ranks = numbers.shared_ranks([r["score"] for r in rows])
    return pd.DataFrame(
        [
            {
                "rank": rank,
                "question": r["question"],
                "role": r["role"],
                "caption": r["text"],
                "score": r["score"],
                "positive": "✓" if r["positive"] else "",
                "exact match": "✓" if r["exact"] else "",
            }
            for rank, r in zip(ranks, rows, strict=True)
        ]
    )


# --- callbacks: validate, call the backend, format ------------------------------------------------------------
TOP_K_DEFAULT = 8  # the top-k slider's starting value: what an empty slider means


def _pairing(pairing: Any) -> str:
    """The pairing radio's value, checked before anything reads it (an API call may send none)."""
    if not isinstance(pairing, str) or pairing.strip().lower() not in browse.PAIRINGS:
        raise ValueError(f"choose a pairing: one of {', '.join(browse.PAIRINGS)} (got {pairing!r})")
    return pairing.strip().lower()


def _top_k(k: Any) -> int:
    """The top-k slider's value as a whole number ≥ 1; an empty slider means :data:`TOP_K_DEFAULT`.

    Raises:
        ValueError: a value that is not a finite number.
    """
    if k is None:
        return TOP_K_DEFAULT
    try:
        value = float(k)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"top-k must be a whole number from 1 to 20, got {str(k)[:40]!r}")
    return max(1, int(value))


def _scored(data: str, model: str, pairing: str, progress: Any = None) -> browse.ScoredSet:
    pairing = _pairing(pairing)
    data, model = browse.resolve_inputs(data, model, pairing, progress)
    return browse.scored_set(data, model, pairing, progress=progress)


@gpu_task(duration=120)
@friendly
def score(
    data: str,
    model: str,
    pairing: str,
    n_objects: str,
    subset: str,
    outcome: str,
    k: int,
    progress: gr.Progress = gr.Progress(),
) -> tuple[Any, ...]:
    return _score_view(data, model, pairing, n_objects, subset, outcome, k, lambda f, m: progress(f, desc=m))


def _score_view(
    data: str,
    model: str,
    pairing: str,
    n_objects: str,
    subset: str,
    outcome: str,
    k: int,
    report: Any = None,
    qid: str | None = None,
) -> tuple[Any, ...]:
    """Score's outputs: the set scored, the questions the filters keep, ``qid`` shown if it is one of them (else the
    first)."""
    s = _scored(data, model, pairing, report)
    ids = browse.filter_ids(s, n_objects, subset, outcome)
    first = qid if qid and qid in ids else (ids[0] if ids else None)
    fig = accuracy_by_n_svg(browse.accuracy_table(s), title=f"{s.model} · {s.pairing}: accuracy by N")
    return (summary_md(s), fig, gr.update(choices=ids, value=first), f"{len(ids)} questions match", *_show(s, first, k))


@gpu_task(duration=120)
@friendly
def load_view(
    data: str,
    model: str,
    pairing: str,
    n_objects: str,
    subset: str,
    outcome: str,
    k: int,
    request: gr.Request,
    progress: gr.Progress = gr.Progress(),
) -> tuple[Any, ...]:
    """The page-load view: a shared Browse link's (``?tab=browse&model=…``, :mod:`bindlab.ui.share`) with its
    question, or the inputs' default. A link that fails a check, or whose scoring fails, gives the default view and
    one sentence on why (never an error toast); returns score's outputs, then the data, model and pairing inputs and
    the note."""
    report = lambda f, m: progress(f, desc=m)  # noqa: E731
    link, note = share.page_link(request)
    if link is not None and link.tab == "browse":
        try:
            out = _score_view(
                share.data_path(link), link.model, link.pairing, "all", "all", "all", k, report, link.question
            )
            if link.question and out[2]["value"] != link.question:
                note = (
                    f"Question **{md_text(link.question[:80])}** is not in this set; showing its first question "
                    "instead."
                )
            data_in = share.data_input(link, public_mode(), getattr(request, "session_hash", None))
            return (*out, data_in, link.model, link.pairing, note)
        except (ValueError, KeyError, OSError) as e:
            note = share.refused(e)
    out = _score_view(data, model, pairing, n_objects, subset, outcome, k, report)
    return (*out, gr.update(), gr.update(), gr.update(), note)


@friendly
def share_view(data: str, model: str, pairing: str, qid: str | None, base: str) -> tuple[str, str]:
    """The link to the question on screen (its model, set and pairing) and a line on what it carries."""
    link = share.Link(
        "browse",
        str(model or "").strip() or browse.default_model(_pairing(pairing)),
        share.link_data("browse", data),
        pairing=_pairing(pairing),
        question=str(qid or ""),
    )
    url = share.build_url(base, link)
    return url, share.share_note(url)


@gpu_task(duration=120)
@friendly
def card_files(data: str, model: str, pairing: str, qid: str | None) -> list[str]:
    """The question on screen as a picture: ``<question>_card.png`` and ``.svg`` (:mod:`bindlab.present.cards`)."""
    if not qid:
        raise ValueError("pick a question first (press Score, then choose one in the Question list)")
    s = _scored(data, model, pairing)
    view = browse.question_view(s, qid)
    return [
        str(p)
        for p in write_card(
            question_card(view, s.model, s.pairing, verdict_text(view)), new_export_dir(), f"{qid}_card"
        )
    ]


@friendly
def refilter(data: str, model: str, pairing: str, n_objects: str, subset: str, outcome: str, k: int) -> tuple[Any, ...]:
    s = _scored(data, model, pairing)
    ids = browse.filter_ids(s, n_objects, subset, outcome)
    first = ids[0] if ids else None
    return (gr.update(choices=ids, value=first), f"{len(ids)} questions match", *_show(s, first, k))


@friendly
def show_question(data: str, model: str, pairing: str, qid: str, k: int) -> tuple[Any, ...]:
    if not qid:  # the list was emptied (no match, or cleared after an error): nothing to score or show
        return ("", pd.DataFrame(), gr.update(value=[]), pd.DataFrame(), gr.update(value=[]))
    return _show(_scored(data, model, pairing), qid, k)


@gpu_task(duration=120)
@friendly
def open_question(data: str, model: str, pairing: str, qid: str, k: int) -> tuple[Any, ...]:
    """Score (memoised) and show one question chosen in another tab (Map); every question listed, no filters."""
    s = _scored(data, model, pairing)
    s.index(qid)  # KeyError naming the file when the question is not in it
    ids = browse.filter_ids(s)
    fig = accuracy_by_n_svg(browse.accuracy_table(s), title=f"{s.model} · {pairing}: accuracy by N")
    return (summary_md(s), fig, gr.update(choices=ids, value=qid), f"{len(ids)} questions match", *_show(s, qid, k))


def _show(s: browse.ScoredSet, qid: str | None, k: int) -> tuple[Any, ...]:
    # image boxes only where the pairing has images (none for text–text); the top-k images where the gallery does
    k = _top_k(k)
    with_images = common.needs_images(s.pairing)
    gallery_images = s.pairing.endswith("i")
    if not qid:
        return (
            "<p>No question matches these filters.</p>",
            pd.DataFrame(),
            gr.update(value=[], visible=with_images),
            pd.DataFrame(),
            gr.update(value=[], visible=gallery_images),
        )
    view = browse.question_view(s, qid)
    top = browse.retrieval_topk(s, qid, k)
    top_ranks = numbers.shared_ranks([r["score"] for r in top])
    top_images = [
        (shown_image(r["image"]), f"#{rank} {r['role']} · {r['score']:.3f}{' ✓' if r['positive'] else ''}")
        for rank, r in zip(top_ranks, top, strict=True)
        if r["image"]
    ]
    digits = numbers.tie_digits([c["score"] for c in view["candidates"]])
    return (
        question_html(view),
        numbers.table(candidates_frame(view), digits),
        gr.update(value=gallery_items(view), visible=with_images),
        numbers.table(topk_frame(top)),
        gr.update(value=top_images, visible=gallery_images or bool(top_images)),
    )


@friendly
def export(
    data: str,
    model: str,
    pairing: str,
    qid: str | None = None,
    k: float | None = None,
    model_b: str | None = None,
    formats: list[str] | None = None,
) -> tuple[list[str], str]:
    """Download: the scores (summary, accuracy by N and subset, per-question), per-item JSONL and the chart —
    the files ``eval mcq --export`` writes, from the same :func:`bindlab.studies.browse.run_mcq` result — plus the
    question on screen: its candidates with their scores (model B's beside them when chosen) and its top-k."""
    s = _scored(data, model, pairing)
    view = mcq_export(s.result)
    if qid and qid in {q.id for q in s.questions}:
        other = None
        if (model_b or "").strip():
            path, _ = browse.resolve_inputs(data, model, s.pairing)
            sb = browse.scored_set(path, model_b.strip(), s.pairing)
            other = (sb.model, browse.question_view(sb, qid))
        view.tables.update(
            question_tables(browse.question_view(s, qid), s.model, browse.retrieval_topk(s, qid, _top_k(k)), other)
        )
    return deliver(view, s.result.provenance, formats)


def side_by_side_html(view_a: dict[str, Any], view_b: dict[str, Any], model_a: str, model_b: str) -> str:
    """One question's candidates with two models' scores and ranks side by side (the Compare tab's diff opens here)."""
    a, b = html_text(model_a), html_text(model_b)
    rank_a = numbers.shared_ranks([c["score"] for c in view_a["candidates"]])
    rank_b = numbers.shared_ranks([c["score"] for c in view_b["candidates"]])
    digits_a = numbers.tie_digits([c["score"] for c in view_a["candidates"]])
    digits_b = numbers.tie_digits([c["score"] for c in view_b["candidates"]])
    head = (
        f"<tr><th>#</th><th>role</th><th>caption</th><th>{a} score</th><th>{a} rank</th>"
        f"<th>{b} score</th><th>{b} rank</th></tr>"
    )
    rows = [
        f"<tr{' class=bl-answer-row' if ca['is_answer'] else ''}><td>{k + 1}</td>"
        f"<td>{html_text(ROLE_LABELS.get(ca['role'], ca['role']))}</td><td>{html_text(ca['text'])}</td>"
        f"<td>{numbers.score(ca['score'], digits_a)}</td><td>{rank_a[k]}</td><td>{numbers.score(cb['score'], digits_b)}</td>"
        f"<td>{rank_b[k]}</td></tr>"
        for k, (ca, cb) in enumerate(zip(view_a["candidates"], view_b["candidates"], strict=True))
    ]
    foot = (
        f"<p>Margin: <b>{a}</b> {html_text(numbers.margin(view_a['margin']))} ({verdict_text(view_a)}) · <b>{b}</b> "
        f"{html_text(numbers.margin(view_b['margin']))} ({verdict_text(view_b)})</p>"
    )
    return (
        f'<div class="bl-card"><b>{html_text(view_a["id"])}</b>: {a} vs {b}'
        f'<table class="bl-side">{head}{"".join(rows)}</table>{foot}</div>'
    )


@gpu_task(duration=120)
@friendly
def compare_view(data: str, model: str, pairing: str, qid: str, model_b: str) -> str:
    """The shown question scored by a second model beside the first (empty when no second model is chosen)."""
    model_b = (model_b or "").strip()
    if not model_b or not qid:
        return ""
    pairing = _pairing(pairing)
    s = _scored(data, model, pairing)
    data, _ = browse.resolve_inputs(data, model, pairing)
    sb = browse.scored_set(data, model_b, pairing)
    if qid not in {q.id for q in s.questions}:
        return ""  # the question list is changing under it (a new file is being scored)
    return side_by_side_html(browse.question_view(s, qid), browse.question_view(sb, qid), s.model, sb.model)


def build_tab() -> dict[str, Any]:
    """Lay out the Browse tab inside the current ``gr.Blocks``; returns what the page-load event needs."""
    gr.Markdown(
        "Browse SABER-style binding questions: one query, four candidates — only **preserve** keeps every "
        "attribute on its own object. Green phrases are query bindings, red ones are broken. Pairings put "
        "the query in one modality and the candidates in another (t = text, i = image)."
    )
    with gr.Row():
        data = data_picker("mcq", "MCQ file (empty = embedded mini benchmark)", "bl-data")
        model = gr.Dropdown(
            MODEL_CHOICES,
            value="minilm",
            label="Encoder id (empty = default for the pairing)",
            allow_custom_value=True,
            scale=2,
            elem_id="bl-model",
        )
        pairing = gr.Radio(
            ["tt", "ti", "it", "ii"], value="tt", label="Pairing (query→candidates)", scale=2, elem_id="bl-pairing"
        )
        run = gr.Button("Score", variant="primary", scale=1, elem_id="bl-score-btn")
    opened = gr.Markdown(elem_id="bl-link-note")  # a shared link that could not be opened says so here
    summary = gr.Markdown(elem_id="bl-summary")
    with gr.Row():
        n_objects = gr.Dropdown(["all"] + [str(n) for n in range(2, 11)], value="all", label="Number of objects")
        subset = gr.Radio(["all", "independent", "nested"], value="all", label="Subset")
        outcome = gr.Radio(["all", "correct", "incorrect"], value="all", label="Outcome")
    with gr.Row():
        with gr.Column(scale=3):
            question = gr.Dropdown([], label="Question", elem_id="bl-question")
            count = gr.Markdown()
            q_html = gr.HTML(elem_id="bl-question-html")
            with gr.Row():
                share_btn = gr.Button("Share this view", size="sm", scale=1, elem_id="bl-share-btn")
                card_btn = gr.Button("Card as PNG / SVG", size="sm", scale=1, elem_id="bl-card-btn")
            base = gr.Textbox(visible=False)  # the page's address, filled in the browser when Share is pressed
            link = gr.Textbox(
                label="Link to this view (copy it; opening it reopens this question)",
                interactive=False,
                buttons=["copy"],
                visible=False,
                elem_id="bl-share-link",
            )
            link_note = gr.Markdown(elem_id="bl-share-note")
            card_out = gr.File(
                label="This question as a picture",
                file_count="multiple",
                interactive=False,
                visible=False,
                elem_id="bl-card-files",
            )
            images = gr.Gallery(
                label="Query and candidates (images)",
                columns=5,
                height=260,
                object_fit="contain",
                visible=False,
                elem_id="bl-images",
            )  # shown for pairings with images
            table = gr.Dataframe(
                label="Candidates", interactive=False, wrap=True, elem_id="bl-candidates", **pinned("bl-candidates")
            )
            compare_model = gr.Dropdown(
                MODEL_CHOICES,
                value=None,
                allow_custom_value=True,
                label="Compare with model B (optional: its scores beside these)",
                elem_id="bl-compare-model",
            )
            compare_out = gr.HTML(elem_id="bl-compare")
        with gr.Column(scale=2):
            # SVG, not Plotly: this chart is on the app's first view (bindlab.present.svg_figures says why)
            chart = gr.HTML(label="Accuracy by number of objects", elem_id="bl-chart")
            k = gr.Slider(
                1, 20, value=TOP_K_DEFAULT, step=1, label="Retrieval: top-k of the pooled gallery for this query"
            )
            top_table = gr.Dataframe(
                label="Top-k gallery items (✓ = holds every query binding)",
                interactive=False,
                wrap=True,
                elem_id="bl-topk",
                **pinned("bl-topk"),
            )
            top_images = gr.Gallery(
                label="Top-k images",
                columns=4,
                height=220,
                object_fit="contain",
                visible=False,
                elem_id="bl-topk-images",
            )  # shown when the gallery has images

    source = [data, model, pairing]
    filters = [n_objects, subset, outcome]
    shown = [q_html, table, images, top_table, top_images]
    score_outputs = [summary, chart, question, count, *shown]
    # results after an error (bindlab.ui.common): a failed score clears everything it draws; a failed filter or
    # question pick clears the question shown
    listed = [summary, chart, question, count, *shown]
    clear_on_error(
        run.click(score, source + filters + [k], score_outputs, api_name="browse_score", **GPU_QUEUE), listed
    )
    clear_on_error(
        pairing.input(_pairing_model, [model, pairing], [model], api_name=False).then(
            score, source + filters + [k], score_outputs, api_name=False, **GPU_QUEUE
        ),
        listed,
    )
    for f in filters:
        clear_on_error(
            f.input(refilter, source + filters + [k], [question, count, *shown], api_name=False),
            [question, count, *shown],
        )
    # a question the visitor picks (.input, not .change): every event that sets the list itself (score, filters,
    # Map's Open in Browse) draws the question it chose, and a second draw from .change could arrive late, from an
    # earlier score (the page load's), and put that question's card over the new one
    clear_on_error(question.input(show_question, source + [question, k], shown, api_name="browse_question"), shown)
    question.change(compare_view, source + [question, compare_model], [compare_out], api_name=False)
    compare_model.input(compare_view, source + [question, compare_model], [compare_out], api_name="browse_compare")
    clear_on_error(k.release(show_question, source + [question, k], shown, api_name=False), shown)
    wire(export_panel("bl", "scores"), export, [*source, question, k, compare_model], api_name="browse_export")
    clear_on_error(
        share_btn.click(
            share_view, [*source, question, base], [link, link_note], js=share.BASE_JS, api_name="browse_share"
        ).success(lambda: gr.update(visible=True), None, [link], api_name=False, queue=False),
        [link, link_note],
    )
    clear_on_error(
        card_btn.click(card_files, [*source, question], [card_out], api_name="browse_card", **GPU_QUEUE).success(
            lambda: gr.update(visible=True), None, [card_out], api_name=False, queue=False
        ),
        [card_out],
    )
    # Score the embedded default as soon as a visitor opens the page.
    # handles: what other tabs wire to (Map's "Open in Browse"); user edits above fire .input, so setting these
    # from another tab does not re-score or re-filter behind its back.
    # a shared link (?tab=browse&…) opens here instead: its inputs, scored, its question (bindlab.ui.share)
    return {
        "event_fn": load_view,
        "inputs": source + filters + [k],
        "outputs": [*score_outputs, *source, opened],
        "gpu": True,
        "handles": {
            "source": source,
            "filters": filters,
            "k": k,
            "outputs": score_outputs,
            "compare_model": compare_model,
            "compare_out": compare_out,
        },
    }


def _pairing_model(model: str, pairing: str) -> Any:
    """Switching to an image pairing with a text-only model selected picks the default image model instead."""
    if pairing in browse.PAIRINGS and common.needs_images(pairing) and (model or "").strip() in ("minilm", "bow", ""):
        try:
            return browse.default_model(pairing)
        except ValueError:
            return model
    return model
