"""Browse tab: pick a question, see the query and its four candidates with roles, scores, margin, bindings."""

from __future__ import annotations

import html
import re
from typing import Any

import gradio as gr
import pandas as pd

from bindlab import figures
from bindlab.eval import browse
from bindlab.ui.common import friendly

MODEL_CHOICES = ["minilm", "bow"]
ROLE_LABELS = {"preserve": "preserve ✓", "attr_swap": "attribute swap", "obj_swap": "object swap",
               "joint_swap": "joint swap", "replace": "replace one"}


def highlight(text: str, bindings: list[tuple[str, str]], kept: list[bool] | None = None) -> str:
    """HTML of a caption with each "attribute object" phrase marked: green when it is a query binding, red if not."""
    out = html.escape(text)
    for k, (a, o) in enumerate(bindings):
        cls = "bl-kept" if kept is None or kept[k] else "bl-broken"
        phrase = html.escape(f"{a} {o}")
        out = re.sub(rf"\b{re.escape(phrase)}\b", f'<span class="{cls}">{phrase}</span>', out, count=1)
    return out


CSS = """
.bl-kept {background:#d9f2d9; border-radius:4px; padding:0 3px}
.bl-broken {background:#f8d7da; border-radius:4px; padding:0 3px; text-decoration: underline wavy #c0392b}
.bl-card {border:1px solid #ddd; border-radius:8px; padding:8px 12px; margin:6px 0}
.bl-card.answer {border:2px solid #2ca02c}
.bl-score {font-family: monospace; float:right}
"""


def question_html(view: dict[str, Any]) -> str:
    """The question as HTML cards: query first, then candidates in their shuffled order."""
    q = view["query"]
    verdict = "correct" if view["credit"] >= 1 else ("tied" if view["credit"] > 0 else "wrong")
    parts = [
        f'<div class="bl-card"><b>Query</b> · {view["id"]} · N={view["n_objects"]} · {view["subset"]}'
        f'<div style="font-size:1.1em">{highlight(q["text"], q["bindings"])}</div></div>'
    ]
    for k, c in enumerate(view["candidates"]):
        cls = "bl-card answer" if c["is_answer"] else "bl-card"
        parts.append(
            f'<div class="{cls}" data-role="{c["role"]}"><span class="bl-score">score {c["score"]:.4f} · rank {c["rank"]}</span>'
            f'<b>{k + 1}. {ROLE_LABELS.get(c["role"], c["role"])}</b><div>{highlight(c["text"], c["bindings"], c["kept"])}</div></div>'
        )
    parts.append(f'<p>Margin (preserve − best other): <b id="bl-margin">{view["margin"]:+.4f}</b> → {verdict}</p>')
    return "\n".join(parts)


def candidates_frame(view: dict[str, Any]) -> pd.DataFrame:
    """One row per candidate: role, caption, score, rank, bindings kept."""
    return pd.DataFrame([
        {"#": k + 1, "role": c["role"], "caption": c["text"], "score": round(c["score"], 4), "rank": c["rank"],
         "bindings kept": f"{sum(c['kept'])}/{len(c['kept'])}"}
        for k, c in enumerate(view["candidates"])
    ])


def summary_md(s: browse.ScoredSet) -> str:
    acc = s.summary
    by_sub = ", ".join(f"{k} {v:.3f}" for k, v in acc["by_subset"].items())
    return (f"**{s.model}** · pairing **{s.pairing}** · {acc['n']} questions · accuracy **{acc['accuracy']:.3f}** "
            f"(95% CI {acc['ci95'][0]:.3f}–{acc['ci95'][1]:.3f}; chance 0.25) · {by_sub}")


# --- callbacks: validate, call the backend, format ------------------------------------------------------------
@friendly
def score(data: str, model: str, pairing: str, n_objects: str, subset: str, outcome: str,
          progress: gr.Progress = gr.Progress()) -> tuple[Any, ...]:
    data = (data or "").strip() or str(browse.default_dataset())
    s = browse.scored_set(data, (model or "").strip(), pairing, progress=lambda f, m: progress(f, desc=m))
    ids = browse.filter_ids(s, n_objects, subset, outcome)
    first = ids[0] if ids else None
    fig = figures.accuracy_by_n(browse.accuracy_table(s), title=f"{s.model} · {pairing}: accuracy by N")
    q_html, frame = _show(s, first)
    return (summary_md(s), fig, gr.update(choices=ids, value=first), f"{len(ids)} questions match", q_html, frame)


@friendly
def refilter(data: str, model: str, pairing: str, n_objects: str, subset: str, outcome: str) -> tuple[Any, ...]:
    s = browse.scored_set((data or "").strip() or str(browse.default_dataset()), model, pairing)
    ids = browse.filter_ids(s, n_objects, subset, outcome)
    first = ids[0] if ids else None
    q_html, frame = _show(s, first)
    return gr.update(choices=ids, value=first), f"{len(ids)} questions match", q_html, frame


@friendly
def show_question(data: str, model: str, pairing: str, qid: str) -> tuple[str, pd.DataFrame]:
    s = browse.scored_set((data or "").strip() or str(browse.default_dataset()), model, pairing)
    return _show(s, qid)


def _show(s: browse.ScoredSet, qid: str | None) -> tuple[str, pd.DataFrame]:
    if not qid:
        return "<p>No question matches these filters.</p>", pd.DataFrame()
    view = browse.question_view(s, qid)
    return question_html(view), candidates_frame(view)


def build_tab() -> dict[str, Any]:
    """Lay out the Browse tab inside the current ``gr.Blocks``; returns what the page-load event needs."""
    gr.Markdown("Browse SABER-style binding questions: one query, four candidates — only **preserve** keeps every "
                "attribute on its own object. Green phrases are query bindings, red ones are broken.")
    with gr.Row():
        data = gr.Textbox(label="MCQ file (empty = embedded mini benchmark)", value="", scale=3, elem_id="bl-data")
        model = gr.Dropdown(MODEL_CHOICES, value="minilm", label="Encoder id", allow_custom_value=True, scale=2,
                            elem_id="bl-model")
        pairing = gr.Radio(["tt", "ti", "it", "ii"], value="tt", label="Pairing (query→candidates)", scale=2)
        run = gr.Button("Score", variant="primary", scale=1, elem_id="bl-score-btn")
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
            table = gr.Dataframe(label="Candidates", interactive=False, elem_id="bl-candidates")
        with gr.Column(scale=2):
            chart = gr.Plot(label="Accuracy by number of objects", elem_id="bl-chart")

    source = [data, model, pairing]
    filters = [n_objects, subset, outcome]
    run.click(score, source + filters, [summary, chart, question, count, q_html, table], api_name="browse_score")
    for f in filters:
        f.change(refilter, source + filters, [question, count, q_html, table], api_name=False)
    question.change(show_question, source + [question], [q_html, table], api_name="browse_question")
    # Score the embedded default as soon as a visitor opens the page.
    return {"event_fn": score, "inputs": source + filters, "outputs": [summary, chart, question, count, q_html, table]}
