"""Compare tab: several encoders on the same suite — a sortable leaderboard with 95 % intervals, accuracy by N and
scores by edit type, the cross-benchmark table and per-scene agreement, and a per-question diff ("A right, B wrong")
whose rows open in Browse with both models' scores side by side.

The backend is :func:`bindlab.studies.compare.run_compare` (the ``compare`` command's too), so the table here is the
one ``compare --out`` writes; each visitor's result lives in a ``gr.State``.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from bindlab.config import limits, public_mode
from bindlab.present import compare_figures as cf
from bindlab.present import numbers
from bindlab.present.exports import models_compare_export
from bindlab.present.safe_text import md_text
from bindlab.studies import compare as cs
from bindlab.ui.common import clear_on_error, data_picker, friendly, held_state, offer_data
from bindlab.ui.exports import deliver, export_panel
from bindlab.ui.exports import wire as wire_export
from bindlab.ui.gpu import GPU_QUEUE, gpu_task
from bindlab.ui.layout import pinned

MODEL_CHOICES = ["bow", "minilm", "toy:clip", "toy:shared", "toy:negclip", "toy:lit-minilm"]
DEFAULT_MODELS = MODEL_CHOICES[:4]  # four: public mode's per-request cap (limits().max_compare_models)
SUITE_CHOICES = cs.suite_choices()  # (label, name) of the registry's tasks over bindlab's generated data
DIFF_COLUMNS = {
    "id": "question",
    "pairing": "pairing",
    "n_objects": "N",
    "subset": "subset",
    "credit_a": "A credit",
    "margin_a": "A margin",
    "credit_b": "B credit",
    "margin_b": "B margin",
}
CSS = """
#cmp-leaderboard th, #cmp-cross th {white-space: nowrap}
"""


# --- formatting (no maths) ------------------------------------------------------------------------------------------
# Every table shows its numbers with 3 decimals (bindlab.present.numbers.table) and keeps them as numbers underneath,
# so columns sort as numbers.
def leaderboard_frame(rows: list[dict[str, Any]]) -> Any:
    """The leaderboard for display: numbers with 3 decimals, each CI as ``lo–hi`` text."""
    return numbers.table(
        pd.DataFrame([{k: numbers.interval(v) if k.endswith(" 95% CI") else v for k, v in r.items()} for r in rows])
    )


def cross_frame(rows: list[dict[str, Any]]) -> Any:
    return numbers.table(pd.DataFrame(rows))


def diff_frame(rows: list[dict[str, Any]]) -> Any:
    if not rows:
        return pd.DataFrame(columns=list(DIFF_COLUMNS.values()))
    return numbers.table(pd.DataFrame([{label: r[k] for k, label in DIFF_COLUMNS.items()} for r in rows]))


def status_markdown(result: Any) -> str:
    """The comparison in words: models and suite, the sort column and the leader verdict (a leader only where its
    95 % interval lies above every other model's), per-scene agreement, the set each task and pairing scored (n, and
    what was left out and why), the cache and the notes; every value from the result is escaped text."""
    s = result.summary
    leader = s.get("leader_text") or (f"leader {s['leader']}" if s.get("leader") else "no leader")
    parts = [
        f"**{len(s['models'])} models** on **{md_text(', '.join(s['suite']))}** · sorted by "
        f"**{md_text(s['sort_by'])}** (click a column header to sort by it) · **{md_text(leader)}**"
    ]
    parts += [f"scored: {md_text(row['text'])}" for row in s.get("set_used") or []]
    ag = s["agreement"]
    if ag["mean_spearman"] is not None:
        v = ag["variance_share"]
        parts.append(
            f"Per-scene agreement over {ag['n_models']} models × {ag['n_scenes']} scenes: mean Spearman ρ "
            f"**{ag['mean_spearman']:.3f}** (CompoSET: 0.56) · variance explained by scene "
            f"**{v['scene']:.1%}**, by model **{v['model']:.1%}**"
        )
    elif s.get("pairs_data"):  # a Pairs task in the suite
        parts.append("Per-scene agreement needs two or more image+text models scored on pairs.")
    if s["from_cache"]:
        parts.append(f"From cache: {md_text(', '.join(s['from_cache']))}")
    parts += [f"note: {md_text(n)}" for n in result.notes]
    return "<br>".join(parts)


def _suite(suite: list[str] | None, benchmark: str) -> list[str]:
    tasks = list(suite or [])
    bench = (benchmark or "").strip()
    if bench:
        tasks.append(cs.benchmark_entry(bench))
    return tasks


def _diff(result: Any, a: str, b: str) -> tuple[Any, Any]:
    rows = cs.question_diff(result.rows, a, b) if result.rows else []
    ids = [r["id"] + (f" ({r['pairing']})" if len(result.summary["pairings"]) > 1 else "") for r in rows]
    return diff_frame(rows), gr.update(choices=ids, value=ids[0] if ids else None)


# --- callbacks: validate, call the backend, format ------------------------------------------------------------------
@gpu_task(duration=300)
@friendly
def run(
    models: list[str] | str,
    suite: list[str],
    pairing: str,
    data: str,
    pairs_data: str,
    benchmark: str,
    progress: gr.Progress = gr.Progress(),
) -> tuple[Any, ...]:
    """Score every model on the suite and show the leaderboard, charts, cross-benchmark table and the default diff."""
    progress(0, desc="checking the models and the suite")  # at once: loading models can take a while before step 1
    request = cs.CompareRequest(
        models=models,
        suite=_suite(suite, benchmark),
        data=data or None,
        pairs_data=pairs_data or None,
        pairings=[pairing or "tt"],
    )
    result = cs.run_compare(request, progress=lambda f, m: progress(f, desc=m))
    s = result.summary
    scored = [r["model"] for r in s["leaderboard"] if result.rows and result.rows[0]["credit"][r["model"]] is not None]
    a, b = (s["diff_models"] + [None, None])[:2]
    frame, question = _diff(result, a, b) if a and b else (diff_frame([]), gr.update(choices=[], value=None))
    return (
        status_markdown(result),
        leaderboard_frame(s["leaderboard"]),
        cf.by_n_figure(s["by_n"]),
        cf.by_edit_type_figure(s["by_edit_type"]),
        cross_frame(s["cross_benchmark"]),
        gr.update(choices=scored, value=a),
        gr.update(choices=scored, value=b),
        frame,
        question,
        result,
    )


@friendly
def rediff(result: Any, a: str, b: str) -> tuple[Any, Any]:
    """The diff for another (A, B): questions A gets right and B gets wrong."""
    if result is None:
        raise ValueError("run a comparison first, then choose models A and B")
    if not a or not b:
        return diff_frame([]), gr.update(choices=[], value=None)
    return _diff(result, a, b)


def pick_row(evt: gr.SelectData) -> Any:
    """A click on a diff-table row selects its question (the row's first cell) in the Question dropdown."""
    values = getattr(evt, "row_value", None)
    return gr.update(value=values[0]) if values else gr.update()


@friendly
def open_target(result: Any, question: str, a: str, b: str, request: gr.Request | None = None) -> tuple[Any, ...]:
    """Switch to Browse with the comparison's MCQ file, model A (and B beside it), the question's pairing, no filters."""
    if result is None:
        raise ValueError("run a comparison first, then pick a question from the diff")
    if not question:
        raise ValueError("pick a question from the diff table first")
    qid, _, rest = question.partition(" (")
    pairing = rest.rstrip(")") or result.summary["pairings"][0]
    data = offer_data("mcq", result.summary["data"], request)  # public mode: Browse's dropdown offers it
    return (gr.Tabs(selected="browse"), qid, data, a, pairing, "all", "all", "all", b)


@friendly
def export(
    result: Any, a: str | None = None, b: str | None = None, formats: list[str] | None = None
) -> tuple[list[str], str]:
    """Download: the leaderboard, scores, by-N / by-edit-type tables and figures, cross-benchmark table, diff and
    agreement (as the CLI); the per-question diff is the one on screen, of the models A and B chosen."""
    if result is None:
        raise ValueError("run a comparison first, then download it")
    view = models_compare_export(result)
    if a and b and [a, b] != list(result.summary.get("diff_models") or []):
        diff = cs.question_diff(result.rows, a, b) if result.rows and a != b else []
        view.tables.pop("question_diff", None)
        if diff:
            view.tables["question_diff"] = diff
    return deliver(view, result.provenance, formats)


def build_tab() -> dict[str, Any]:
    """Lay out the Compare tab; returns a ``wire`` hook that ``build_app`` calls with the Tabs and the Browse handles."""
    gr.Markdown(
        "Run several encoders on the same suite: SABER MCQ accuracy per N, pooled retrieval mAP, Pairs "
        "I2T / T2I / Group per edit type, and optionally a published benchmark you have locally. Text-only "
        "models show n/a where a task needs images. Pick two models to list the questions A gets right and "
        "B gets wrong, then open one in Browse with both models' scores side by side."
    )
    with gr.Row():
        cap = limits().max_compare_models  # the page takes no more; CompareRequest refuses more from the API too
        typed = "a listed hub id or lora:<your job>" if public_mode() else "type any id, e.g. hf:/path/to/clip"
        models = gr.Dropdown(
            MODEL_CHOICES,
            value=list(DEFAULT_MODELS)[:cap],
            multiselect=True,
            allow_custom_value=True,
            max_choices=cap,
            label=f"Encoder ids (at most {cap}; {typed})",
            scale=3,
            elem_id="cmp-models",
        )
        suite = gr.CheckboxGroup(
            SUITE_CHOICES, value=[name for _, name in SUITE_CHOICES], label="Suite", scale=2, elem_id="cmp-suite"
        )
        pairing = gr.Radio(["tt", "ti", "it", "ii"], value="tt", label="MCQ pairing", scale=1, elem_id="cmp-pairing")
    with gr.Row():
        data = data_picker("mcq", "MCQ file (empty = embedded mini benchmark)", "cmp-data", scale=2)
        pairs_data = data_picker("pairs", "Pairs file (empty = embedded CompoSET-style set)", "cmp-pairs-data", scale=2)
        named = "NAME, e.g. winoground" if public_mode() else "NAME or NAME=PATH"  # public mode: no path
        benchmark = gr.Textbox(label=f"Published benchmark (optional): {named}", scale=2, elem_id="cmp-benchmark")
        go = gr.Button("Run", variant="primary", scale=1, elem_id="cmp-run")
    status = gr.Markdown(elem_id="cmp-status")
    board = gr.Dataframe(
        label="Leaderboard (95% bootstrap intervals)",
        interactive=False,
        wrap=True,
        elem_id="cmp-leaderboard",
        **pinned("cmp-leaderboard"),
    )
    with gr.Row():
        by_n = gr.Plot(label="Accuracy by number of objects", elem_id="cmp-by-n")
        by_edit = gr.Plot(label="Group score by edit type", elem_id="cmp-by-edit")
    cross = gr.Dataframe(
        label="Cross-benchmark: each score against its chance level",
        interactive=False,
        wrap=True,
        elem_id="cmp-cross",
        **pinned("cmp-cross"),
    )
    gr.Markdown("### Per-question diff")
    with gr.Row():
        a = gr.Dropdown([], label="Model A (right)", elem_id="cmp-a")
        b = gr.Dropdown([], label="Model B (wrong)", elem_id="cmp-b")
        question = gr.Dropdown([], label="Question (or click a row)", elem_id="cmp-question")
        open_btn = gr.Button("Open in Browse", elem_id="cmp-open")
    diff = gr.Dataframe(
        label="Questions A gets right (full credit) and B gets wrong",
        interactive=False,
        wrap=True,
        elem_id="cmp-diff",
        **pinned("cmp-diff"),
    )
    state = held_state()
    wire_export(export_panel("cmp", "the comparison"), export, [state, a, b], api_name="compare_export")

    # results after an error (bindlab.ui.common): a failed run clears the whole comparison (the Download panel then
    # says to run one); a failed diff clears the diff
    results = [status, board, by_n, by_edit, cross, a, b, diff, question, state]
    clear_on_error(
        go.click(
            run, [models, suite, pairing, data, pairs_data, benchmark], results, api_name="compare_run", **GPU_QUEUE
        ),
        results,
    )
    clear_on_error(a.input(rediff, [state, a, b], [diff, question], api_name="compare_diff"), [diff, question])
    clear_on_error(b.input(rediff, [state, a, b], [diff, question], api_name=False), [diff, question])
    diff.select(pick_row, None, [question], api_name=False)
    target = gr.State(None)  # the question id that Open in Browse hands over

    def wire(tabs: gr.Tabs, hooks: dict[str, dict[str, Any]]) -> None:
        """Open in Browse: set Browse's inputs and its compare-with model, switch tab, select the question there."""
        from bindlab.ui import browse as browse_tab

        h = hooks["browse"]["handles"]
        open_btn.click(
            open_target,
            [state, question, a, b],
            [tabs, target, *h["source"], *h["filters"], h["compare_model"]],
            api_name="compare_open",
        ).success(
            browse_tab.open_question, [*h["source"], target, h["k"]], h["outputs"], api_name=False, **GPU_QUEUE
        ).success(
            browse_tab.compare_view,
            [*h["source"], target, h["compare_model"]],
            [h["compare_out"]],
            api_name=False,
            **GPU_QUEUE,
        )

    return {"wire": wire}
