"""Finetune tab: launch a LoRA + LiNeS binding finetune as a background job, follow it live, cancel or resume it,
and compare base vs finetuned on the same MCQs once it is done.

Jobs are subprocesses with their state on disk; this tab reads it through :mod:`bindlab.studies.finetune` (the
``finetune`` and ``jobs`` commands' backend too) on a ``gr.Timer``, so the page never blocks and a restarted app finds
its jobs again. A launch shows its job at once (its own outputs refresh the list and the status), then Gradio's
progress bar follows it to the end (phase, step of total, time left); Compare's progress names each part with the
time left. The accuracy-by-N chart draws only the models and pairings picked under it.
"""

from __future__ import annotations

import re
from typing import Any

import gradio as gr
import pandas as pd

from bindlab.present import figures, numbers
from bindlab.present.exports import finetune_by_n_figure
from bindlab.present.safe_text import html_text, md_code, md_text, plot_text
from bindlab.studies import finetune as fs
from bindlab.ui.common import clear_on_error, data_picker, friendly, held_state
from bindlab.ui.exports import deliver, export_panel, wire
from bindlab.ui.gpu import GPU_QUEUE, gpu_task
from bindlab.ui.layout import pinned

CSS = """
#ft-status table {display: block; max-width: 100%; overflow-x: auto}
#ft-status table th {white-space: normal; word-break: keep-all; overflow-wrap: normal; hyphens: none}
#ft-jobs td, #ft-jobs td * {overflow-wrap: anywhere}
#ft-jobs th, #ft-compare th, #ft-compare-triplets th, #ft-compare-attention th {white-space: normal; word-break: keep-all; overflow-wrap: normal}
#ft-jobs th *, #ft-compare th *, #ft-compare-triplets th *, #ft-compare-attention th * {white-space: normal; word-break: keep-all; overflow-wrap: normal}
.ft-bar {background:#eee; border-radius:6px; height:18px; width:100%; overflow:hidden}
.ft-bar > div {background:#2ca02c; height:100%}
.ft-state-failed {color:#c0392b; font-weight:bold}
.ft-state-done {color:#2ca02c; font-weight:bold}
"""

JOB_COLUMNS = ["id", "model id", "base", "state", "step", "message"]
SHOWN_JOB_COLUMNS = ["id", "base", "state", "step", "message"]  # on the page: the model id is lora:<id>


def queue_place(job: dict[str, Any]) -> str:
    """A waiting job's place, as the jobs table shows it in the step column (``queue 2/5``); "" for any other."""
    if job.get("state") != "queued" or not job.get("queue_position"):
        return ""
    return f"queue {job['queue_position']}/{job.get('queue_length', '?')}"


def jobs_frame(jobs: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per job, newest first."""
    rows = [
        {
            "id": j["id"],
            "model id": j["model_id"],
            "base": j["base_model"],
            "state": j["state"],
            "step": queue_place(j)
            or (f"{j['progress'].get('step', 0)}/{j['progress'].get('total_steps', '?')}" if j["progress"] else ""),
            "message": j.get("message", ""),
        }
        for j in reversed(jobs)
    ]
    return pd.DataFrame(rows, columns=JOB_COLUMNS)


def progress_html(status: dict[str, Any], progress: dict[str, Any]) -> str:
    """A progress bar with step, phase, loss and ETA."""
    frac = float(progress.get("fraction") or 0.0)
    if status.get("state") == "done":
        frac = 1.0
    eta = progress.get("eta_s")
    eta_txt = f" · ETA {eta:.0f} s" if eta is not None and status.get("state") == "running" else ""
    loss = progress.get("loss")
    loss_txt = f" · loss {loss:.4f}" if loss is not None else ""
    return (
        f'<div class="ft-bar"><div style="width:{100 * frac:.1f}%"></div></div>'
        f'<p id="ft-progress-text">step {html_text(progress.get("step", 0))}/'
        f"{html_text(progress.get('total_steps', '?'))} · "
        f"{100 * frac:.0f}% · phase {html_text(progress.get('phase', '-'))}{loss_txt}{eta_txt}</p>"
    )


def md_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of dict rows (same keys)."""
    if not rows:
        return ""
    keys = list(rows[0])
    # "triplet_heldout:deferred_bind_anaphoric" may break after its colon; headers never break inside a word (CSS)
    out = ["| " + " | ".join(k.replace(":", ": ") for k in keys) + " |", "|" + "---|" * len(keys)]
    out += ["| " + " | ".join(md_text(numbers.cell(r.get(k, ""))) for k in keys) + " |" for r in rows]
    return "\n".join(out)


def status_md(info: dict[str, Any]) -> str:
    """The selected job: its state and message, its result table once done, its one-line error when failed (never a
    log tail or traceback: those stay on the server)."""
    st = info["status"]
    state = md_text(st["state"])
    lines = [
        f"**{md_text(st['id'])}** → model {md_code(st['model_id'])} (base {md_code(st['base_model'])}): "
        f"<span class='ft-state-{re.sub(r'[^a-z]', '', str(st['state']))}' id='ft-state'>{state}</span> — "
        f"{md_text(st.get('message', ''))}"
    ]
    res = info.get("result")
    if res and res.get("eval"):
        a = res["lines"]["a"]
        what = (
            "the job's model is **unscaled** (a = 1 scales nothing; not LiNeS)"
            if fs.display_labels(a)["lines"] == "unscaled"
            else f"the job's model is **{fs.display_labels(a)['lines']}**"
        )
        lines.append(
            f"LiNeS a = {md_text(a)} ({md_text(res['lines']['chosen_on'])}): {what}; "
            f"{md_text(res['triplets_per_s'])} triplets/s"
        )
        lines.append(md_table(fs.result_rows(res)))
    if st["state"] == "failed":
        lines.append(
            f"<span id='ft-error'>**Error:** {md_text(st.get('error') or st.get('message') or 'unknown')}</span>"
        )
    return "\n\n".join(lines)


def _manager(request: gr.Request | None) -> Any:
    """This visitor's job manager (their own jobs; outside public mode also the CLI's)."""
    return fs.page_manager(getattr(request, "session_hash", None))


def default_job(jobs: list[dict[str, Any]]) -> str | None:
    """The job to show when none is selected: the newest running (or queued) one, else the newest one, else None.

    Args:
        jobs: statuses oldest first, as :func:`bindlab.studies.finetune.list_jobs` returns them.
    """
    for states in (("running",), ("queued",)):
        live = [j for j in jobs if j["state"] in states]
        if live:
            return live[-1]["id"]
    return jobs[-1]["id"] if jobs else None


def job_view(job_id: str | None, jobs: list[dict[str, Any]], manager: Any) -> tuple[Any, ...]:
    """What the tab shows of one job (its status, progress bar and curves) and of all jobs (the table); with no
    job, "No jobs yet"."""
    table = jobs_frame(jobs)[SHOWN_JOB_COLUMNS]
    if not job_id:
        return "No jobs yet: launch one above.", progress_html({}, {}), figures.message_figure("no job yet"), table
    info = fs.job_info(job_id, log_lines=0, manager=manager)
    return (
        status_md(info),
        progress_html(info["status"], info["progress"]),
        figures.training_curves(
            info["metrics"], title=f"{plot_text(info['status']['id'])}: loss and validation triplet accuracy"
        ),
        table,
    )


def job_ids(jobs: list[dict[str, Any]]) -> list[str]:
    """The picker's choices: job ids, newest first."""
    return [j["id"] for j in reversed(jobs)]


# --- callbacks -----------------------------------------------------------------------------------------------
@friendly
def launch(
    model: str,
    data: str,
    epochs: float,
    max_steps: float,
    batch_size: float,
    lr: float,
    rank: float,
    lines_a: str,
    attention_loss: float | None = 0.0,
    attention_layers: str = "",
    supervision: str = "text",
    request: gr.Request = None,
    progress: gr.Progress = gr.Progress(),
) -> tuple[Any, ...]:
    """Check the settings and queue the job; its own outputs show it at once: selected in the picker, in the jobs
    table, with its status (the timer only follows it from there)."""
    progress(0.0, desc="checking the settings")
    if not (model or "").strip():
        raise ValueError("give a base model id, e.g. minilm or toy:shared")
    cfg = {
        "model": model.strip(),
        "data": (data or "").strip(),
        "epochs": epochs,
        "max_steps": max_steps or 0,
        "batch_size": batch_size,
        "lr": lr,
        "lora_rank": rank,
        "lines_a": (lines_a or str(DEFAULT_JOB["lines_a"])).strip(),
        # the objective: SABER App. C.3's attention loss (0 = off) and App. E's supervision (checked against the model)
        "attention_loss": 0.0 if attention_loss is None else attention_loss,
        "attention_layers": (attention_layers or "").strip(),
        "supervision": supervision or "text",
    }
    if not cfg["data"]:
        cfg.update(default_data(cfg["model"]))
    manager = _manager(request)
    job_id = fs.submit_finetune(cfg, manager)  # checked before the job exists: a bad number is refused, nothing queued
    progress(0.1, desc=f"job {job_id} queued")
    jobs = fs.list_jobs(manager)
    waiting = next((j for j in jobs if j["id"] == job_id and j["state"] == "queued"), None)
    return (
        gr.update(choices=job_ids(jobs), value=job_id),
        f"Started job **{md_text(job_id)}**; it will produce {md_code(f'lora:{job_id}')}."
        + (f" It is {md_text(waiting['message'])}." if waiting else ""),
        *job_view(job_id, jobs, manager),
    )


FOLLOW_MAX_S = 1800.0  # a launch follows its job this long at most; the tab's timer follows it on after that


@friendly
def follow(job_id: str, request: gr.Request = None, progress: gr.Progress = gr.Progress()) -> str:
    """After a launch: Gradio's progress bar follows the job (phase, step of total, loss, time left from its
    ``progress.json``) until it is done, cancelled or failed; then one line says how it ended."""
    if not job_id:
        return ""
    progress(0.0, desc=f"job {job_id}: queued")

    def report(fraction: float, line: str) -> None:
        progress(fraction, desc=f"job {job_id} · {line}")

    st = fs.follow_job(job_id, report, _manager(request), max_s=FOLLOW_MAX_S)
    tail = " — compare it below." if st["state"] == "done" else ""
    return f"Job {md_text(st['id'])}: **{md_text(st['state'])}** ({md_text(st.get('message') or '')}){tail}"


@friendly
def poll(job_id: str, request: gr.Request = None) -> tuple[Any, ...]:
    """Timer tick: the selected job's status, progress and curves, and the jobs table. With no job selected, the
    running (or newest) job is selected, so the tab never opens on "No job selected" while a job runs."""
    manager = _manager(request)
    jobs = fs.list_jobs(manager)
    chosen = (job_id or "").strip()
    job_id = chosen or default_job(jobs)
    # the value only when chosen here: a visitor's pick made while this tick ran is never undone
    picker = (
        gr.update(choices=job_ids(jobs)) if chosen or not job_id else gr.update(choices=job_ids(jobs), value=job_id)
    )
    return (*job_view(job_id, jobs, manager), picker)


def show(job_id: str, request: gr.Request = None) -> tuple[Any, ...]:
    """The tab comes into view: poll once (selecting the running or newest job) and start the timer."""
    return (*poll(job_id, request), gr.Timer(active=True))


@friendly
def cancel(job_id: str, request: gr.Request = None) -> str:
    if not job_id:
        raise ValueError("select a job to cancel")
    st = fs.cancel_job(job_id, _manager(request))
    return f"{md_text(st['id'])}: {md_text(st['state'])} ({md_text(st['message'])})"


@friendly
def resume(job_id: str, request: gr.Request = None) -> str:
    if not job_id:
        raise ValueError("select a cancelled or failed job to resume")
    st = fs.resume_job(job_id, _manager(request))
    return f"{md_text(st['id'])}: {md_text(st['state'])} ({md_text(st['message'])})"


@gpu_task(duration=180)
@friendly
def compare(
    job_id: str, mcq: str, request: gr.Request = None, progress: gr.Progress = gr.Progress()
) -> tuple[Any, ...]:
    """Base vs finetuned: Gradio's progress says each part (part k of n, what is being scored) and the time left."""
    progress(0.0, desc="starting the comparison")
    if not job_id:
        raise ValueError("select a finished job to compare")
    res = fs.run_finetune_compare(
        fs.FinetuneCompareRequest(job_id, mcq),
        progress=fs.with_estimate(lambda f, msg: progress(f, desc=msg)),
        manager=_manager(request),
    )
    models, a = res.summary["models"], (res.summary.get("lines") or {}).get("a")
    base, unscaled, lines, data = (
        md_code(models["base"]),
        md_code(models["unscaled"]),
        md_code(models["lines"]),
        md_text(res.summary["data"]),
    )
    if fs.display_labels(a)["lines"] == "unscaled":
        head = (
            f"Base {base} vs {unscaled} (unscaled) on {data}; LiNeS a = 1 scales nothing, so {lines} is the "
            "unscaled model too"
        )
    else:
        head = f"Base {base} vs {unscaled} (unscaled) vs {lines} ({md_text(fs.display_labels(a)['lines'])}) on {data}"
    report = report_view(res.tables.get("report") or [], a)
    att_fig, att_rows = attention_view(res.figures_data["attention"], fs.display_labels(a))
    shown_models, shown_pairings = by_n_choices(res)
    return (
        head,
        numbers.table(pd.DataFrame(fs.labelled(res.rows, a))),
        numbers.table(triplets_view(res.tables["triplets"])),
        by_n_view(res, shown_models["value"], shown_pairings["value"]),
        att_fig,
        numbers.table(att_rows),
        numbers.table(report),
        "\n\n".join(md_text(n) for n in res.notes),
        res,
        shown_models,
        shown_pairings,
    )


def triplets_view(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The job's triplet accuracies and forgetting controls with headers that wrap between words
    (``triplet_heldout:deferred_bind_anaphoric`` -> ``heldout: deferred bind anaphoric``), so the table fits."""

    def header(key: str) -> str:
        return key.removeprefix("triplet_").replace(":", ": ").replace("_", " ")

    return pd.DataFrame([{header(k): v for k, v in r.items()} for r in rows])


def by_n_choices(result: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The accuracy-by-N chart's two pickers after a compare: the models (base vs the job's model shown at first:
    LiNeS, or the unscaled model when a = 1) and the pairings (the first one shown at first)."""
    a = (result.summary.get("lines") or {}).get("a")
    names, keys = fs.display_labels(a), fs.report_models(a)
    pairings = list(result.summary.get("pairings") or ["tt"])
    return (
        gr.update(choices=[(names[k], k) for k in keys], value=[keys[0], keys[-1]]),
        gr.update(choices=pairings, value=pairings[:1]),
    )


def by_n_view(result: Any, models: list[str] | None, pairings: list[str] | None) -> Any:
    """The accuracy-by-N chart of the last compare, only the picked models and pairings (one line each)."""
    if result is None:
        return figures.message_figure("press Compare first")
    if not models or not pairings:
        return figures.message_figure("pick at least one model and one pairing to draw")
    return finetune_by_n_figure(result, models=models, pairings=pairings)


def report_view(rows: list[dict[str, Any]], a: float | None) -> pd.DataFrame:
    """The separated report as the page shows it, narrow enough not to scroll sideways: each model's value and its
    95 % interval in one cell (``0.812 [0.700, 0.900]``); the "in training distribution" mark is the format
    *in-format* (the label says so). The download keeps every column (:func:`bindlab.present.exports.compare_export`)."""
    names = [fs.display_labels(a)[k] for k in fs.report_models(a)]
    out = []
    for r in rows:
        row = {"evaluation": r["evaluation"], "format": r["format"], "N": r["N"], "chance": r["chance"]}
        for name in names:
            if name in r:
                row[f"{name} (95% CI)"] = f"{numbers.cell(r[name])} {r.get(f'{name} 95% CI', '')}".strip()
        out.append(row)
    return pd.DataFrame(out, columns=REPORT_COLUMNS[:4] + [f"{n} (95% CI)" for n in names])


REPORT_COLUMNS = ["evaluation", "format", "N", "chance", "base (95% CI)", "unscaled (95% CI)", "LiNeS (95% CI)"]

# The tab's default job: the walkthrough's toy:shared job (toy-world triplets, 300 steps at lr 2e-3, one torch
# thread), measured at 2 min 41 s submit -> done on the shared 2-core machine at load 4; validation triplet
# accuracy 0.50 -> 0.945 unscaled, 0.90 with LiNeS (docs/finetune_results.md has the command and the full report).
DEFAULT_JOB: dict[str, Any] = {
    "model": "toy:shared",
    "epochs": 3,
    "max_steps": 300,
    "batch_size": 16,
    "lr": 2e-3,
    "lines_a": 0.1,
}
EXPECT = (
    "**What to expect.** The default job (`toy:shared`, 300 steps) takes **about 2–5 minutes on 2 CPU cores** "
    "(measured: 2 min 41 s beside a model training; longer on a busier machine). Watch the curve: validation triplet accuracy "
    "climbs from about 0.5 to about 0.9. Then *Compare*: the report names each row by what it holds — the "
    "sentence template (trained or held out) and the words (seen in training or not), with its n, chance and "
    "95 % interval — and marks the rows **in the training distribution** (training template, only words seen "
    "in training; format *in-format*): a gain there shows the training format was learnt; the other rows are "
    "the general test. `minilm` with the paper's settings (lr 5e-5, one epoch of the 4,000 generated "
    "rows) needs about 13 minutes on a quiet 2-core machine (much longer on a busy one) and moves little."
)


OBJECTIVE_HINT = (
    "**Attention loss** (SABER App. C.3): adds *weight* × (− the Attention tab's binding margin) averaged over the "
    "layer band, so training also rewards each object's attention to its own attribute words in those layers; "
    "0 = off (the plain recipe, bit for bit). Toy models, minilm/st:, hf: CLIP/SigLIP and qwen3vl: (not open_clip); the "
    "band is 0-based and inclusive, empty = the last third of the layers (toy:shared: `2-3` is where its margin "
    "collapses). Keep the weight near the hinge's scale (0.1): 1.0 swamps the triplet loss. A second attention pass "
    "makes each step about 1.4× as long (the default job: roughly 5–8 minutes on 2 busy cores). "
    "**Supervision** (SABER App. E): *text* trains on the sentence triplets (the paper's recipe); *image* renders "
    "each row as three scenes — the query's scene, the same scene re-rendered (another layout), and the scene with "
    "one binding swapped — and trains on those; toy:shared only (its images pass through the adapted blocks), over "
    "renderable triplets (the default for toy:*). Rendering makes it much slower: about 9× the text job's training "
    "time (150 steps took 14 minutes on 2 busy cores; lower Max steps to try it). docs/reproductions.md has the "
    "measurements."
)


TRANSFER_HINT = (
    "**SABER's transfer question.** SABER finetunes the text side only and finds binding improves in all four "
    "pairings — in an MLLM whose parameters both modalities share. `toy:lit-minilm` asks it of a dual encoder: its "
    "text tower is the real, pretrained MiniLM, its image tower a toy trained into MiniLM's space. The button "
    "above puts it in *Base model id*; launch the default job (about 4 minutes), then *Compare*: tt, ti, it and ii "
    "for base, unscaled and LiNeS, and the single-object text→image control (does the moved text space still find "
    "the right image?). docs/reproductions.md has the same job over three seeds."
)


def default_data(model: str) -> dict[str, Any]:
    """Triplets (and CPU settings) for a job launched without a triplets folder: the toy models' own world for a
    ``toy:`` model (the walkthrough's triplets, one torch thread, not a GPU-heavy job), else 4,000 generated rows."""
    from bindlab.studies.walkthrough import FINETUNE_SETTINGS, toy_triplets

    if model.startswith("toy:"):
        return {
            "data": str(toy_triplets()),
            "threads": FINETUNE_SETTINGS["threads"],
            "heavy": FINETUNE_SETTINGS["heavy"],
            "eval_rows": FINETUNE_SETTINGS["eval_rows"],
        }
    return {"data": str(fs.default_triplets())}


ATTENTION_COLUMNS = ["model", "captions", "last layer", "deep layers", "Δ last vs base", "Δ deep vs base"]


def attention_view(section: dict[str, Any] | None, names: dict[str, str] | None = None) -> tuple[Any, pd.DataFrame]:
    """The attention part of a compare: margin curves with bands (one per model) and one table row per model, the
    models named as ``names`` says (:func:`bindlab.studies.finetune.display_labels`)."""
    from bindlab.present.attention_figures import compare_margin_figure

    if not section:
        return compare_margin_figure(None, []), pd.DataFrame(columns=ATTENTION_COLUMNS)
    rows = pd.DataFrame(fs.attention_rows(section, names), columns=ATTENTION_COLUMNS)
    curves = fs.attention_curves(section, names) if section["available"] else []
    return compare_margin_figure(section, curves), rows


@friendly
def export_compare(job_id: str, result: Any, formats: list[str], request: gr.Request = None) -> tuple[list[str], str]:
    """Download everything the tab shows for the selected job: its training curves, its triplet rows and the job
    list at any time; after *Compare*, the comparison from the study's result (not the frames on screen): MCQ accuracy
    per pairing and N and its chart, the separated in-format / general report, triplets, the attention tables and
    chart."""
    from bindlab.present.exports import compare_export

    if not job_id:
        raise ValueError(
            "select a job first (its training curves download at any time; the before/after tables after Compare)"
        )
    manager = _manager(request)
    info = fs.job_info(job_id, log_lines=0, manager=manager)
    st = info["status"]
    other = None
    if result is not None and result.summary.get("job") != st["id"]:  # the comparison shown is of another job
        other, result = result.summary.get("job"), None
    jobs = jobs_frame(fs.list_jobs(manager)).to_dict(orient="records")
    view = compare_export(result, info["metrics"], fs.result_rows(info.get("result") or {}), jobs)
    if not (set(view.tables) - {"jobs"}):
        raise ValueError(f"nothing to download yet for job {st['id']}: no training steps and no comparison")
    dataset = result.summary.get("data") if result is not None else None
    paths, note = deliver(view, fs.compare_provenance(st["id"], dataset, manager), formats)
    if other:
        note += (
            f" The comparison on screen is of job {md_text(other)}, not the selected {md_text(st['id'])}: "
            "select that job to download it, or press Compare for this one."
        )
    return paths, note


def build_tab() -> dict[str, Any]:
    """Lay out the Finetune tab inside the current ``gr.Tab``; returns the hooks that start its polling when the tab
    comes into view and stop it when another tab is selected (nothing polls while a visitor is elsewhere, e.g. while
    the first tab is being drawn)."""
    from gradio.context import Context

    tab = Context.block  # the gr.Tab this tab is built in (build_app opens it)
    gr.Markdown(
        "Text-only binding finetune (SABER §4): LoRA on the text attention projections, hinge loss on "
        "triplets whose hard negative differs only in its bindings, then LiNeS rescales the update layer by "
        "layer (a = 0.1, Wang et al.'s single-task setting; a = 1 would be the unscaled model). Jobs run in "
        "the background; this page polls them."
    )
    gr.Markdown(EXPECT, elem_id="ft-expect")
    with gr.Row():
        model = gr.Textbox(value=DEFAULT_JOB["model"], label="Base model id", elem_id="ft-model", scale=2)
        use_lit = gr.Button("Ask SABER's transfer question: toy:lit-minilm", size="sm", elem_id="ft-use-lit", scale=1)
        data = data_picker(
            "triplets", "Triplets folder (empty = toy-world triplets for toy:*, else 4,000 generated rows)", "ft-data"
        )
        lines_a = gr.Textbox(
            value=str(DEFAULT_JOB["lines_a"]),
            label="LiNeS a (0.1 = Wang et al.; 1 = unscaled; auto = chosen on validation)",
            elem_id="ft-lines-a",
        )
    with gr.Row():
        epochs = gr.Number(value=DEFAULT_JOB["epochs"], precision=0, minimum=1, label="Epochs", elem_id="ft-epochs")
        max_steps = gr.Number(
            value=DEFAULT_JOB["max_steps"],
            precision=0,
            minimum=0,
            label="Max steps (0 = no cap)",
            elem_id="ft-max-steps",
        )
        batch = gr.Number(
            value=DEFAULT_JOB["batch_size"], precision=0, minimum=1, label="Batch (triplets)", elem_id="ft-batch"
        )
        lr = gr.Number(value=DEFAULT_JOB["lr"], label="Learning rate", elem_id="ft-lr")
        rank = gr.Number(value=4, precision=0, minimum=1, label="LoRA rank", elem_id="ft-rank")
        start = gr.Button("Launch finetune", variant="primary", elem_id="ft-launch")
    with gr.Row():
        attention_loss = gr.Number(
            value=0, minimum=0, label="Attention loss weight (0 = off)", elem_id="ft-attention-loss"
        )
        attention_layers = gr.Textbox(
            value="",
            label="Attention layers A-B (0-based; empty = last third)",
            placeholder="e.g. 2-3",
            elem_id="ft-attention-layers",
        )
        supervision = gr.Radio(["text", "image"], value="text", label="Supervision", elem_id="ft-supervision")
    gr.Markdown(OBJECTIVE_HINT, elem_id="ft-objective-hint")
    gr.Markdown(TRANSFER_HINT, elem_id="ft-transfer-hint")
    message = gr.Markdown(elem_id="ft-message")
    followed = gr.Markdown(elem_id="ft-follow", min_height=40)  # Gradio's progress bar follows a launched job here
    with gr.Row():
        job = gr.Dropdown([], label="Job", allow_custom_value=True, elem_id="ft-job", scale=3)
        stop = gr.Button("Cancel", elem_id="ft-cancel")
        again = gr.Button("Resume", elem_id="ft-resume")
    status = gr.Markdown(elem_id="ft-status")
    bar = gr.HTML(elem_id="ft-progress")
    curves = gr.Plot(label="Loss and validation triplet accuracy", elem_id="ft-curves")
    # columns sized by their content: a fixed share let one unbroken value widen its column past the table's box
    jobs = gr.Dataframe(
        headers=SHOWN_JOB_COLUMNS,
        label="All jobs",
        interactive=False,
        wrap=True,
        elem_id="ft-jobs",
    )
    gr.Markdown("### Before vs after")
    with gr.Row():
        mcq = data_picker(
            "mcq", "MCQ file (empty = embedded mini benchmark; for a toy:* job its renderable, image version)", "ft-mcq"
        )
        cmp_btn = gr.Button("Compare base vs finetuned", elem_id="ft-compare-btn")
    cmp_head = gr.Markdown(elem_id="ft-compare-head", min_height=40)  # Gradio's progress shows here while it runs
    with gr.Row():
        cmp_table = gr.Dataframe(
            headers=["pairing", "N", "base", "unscaled", "LiNeS"],
            label="MCQ accuracy per pairing and N",
            interactive=False,
            wrap=True,
            elem_id="ft-compare",
        )
        with gr.Column():
            cmp_fig = gr.Plot(label="Accuracy by N", elem_id="ft-compare-fig")
            with gr.Row():  # one line per picked model and pairing (all of them at once is 12 lines)
                by_n_models = gr.CheckboxGroup([], label="Models shown", elem_id="ft-by-n-models")
                by_n_pairings = gr.CheckboxGroup([], label="Pairings shown", elem_id="ft-by-n-pairings")
    trip_table = gr.Dataframe(
        headers=["model", "test", "heldout", "drift", "paraphrase r1"],
        label="Triplet accuracy per split and forgetting control",
        interactive=False,
        wrap=True,
        elem_id="ft-compare-triplets",
    )
    report_note = gr.Markdown(elem_id="ft-report-note")
    report = gr.Dataframe(
        headers=REPORT_COLUMNS,
        interactive=False,
        wrap=True,
        elem_id="ft-report",
        label="Template × words: every evaluation with its n, chance and each model's value [95 % "
        "CI]; format in-format = in the training distribution (the training template and "
        "only words seen in training)",
        max_height=2000,
        **pinned("ft-report"),
    )  # all ~20 rows on the page, none scrolled away
    # the figure above its table: side by side, the table's six columns with intervals would scroll sideways
    att_fig = gr.Plot(label="Attention binding margin per layer (MCQ queries)", elem_id="ft-compare-attention-fig")
    att_table = gr.Dataframe(
        headers=ATTENTION_COLUMNS,
        interactive=False,
        wrap=True,
        elem_id="ft-compare-attention",
        label="Attention margin: last layer, deep layers, difference to base (95 % CI)",
    )
    cmp_result = held_state()  # the study's Result of the last Compare: what the Download panel writes
    wire(export_panel("ft", "comparison and curves"), export_compare, [job, cmp_result], api_name="ft_export")
    timer = gr.Timer(2.0, active=False)  # started by show(), when the tab is selected

    polled = [status, bar, curves, jobs, job]
    # the transfer-question button only fills the model box, in the page (no server call)
    use_lit.click(None, None, [model], js="() => 'toy:lit-minilm'", api_name=False)
    # results after an error (bindlab.ui.common): a failed action clears what it drew, which no longer matches the
    # inputs — a refused launch its "Started job" line, a failed cancel/resume its message, a failed poll the job's
    # status, bar and curves (the job list stays: it is the picker), a failed compare every before/after result
    # the launch's own outputs show the new job at once (picked, in the table, its status); then Gradio's progress
    # bar follows it to the end (at most 4 visitors' follows at a time; the timer goes on for everyone)
    launched = start.click(
        launch,
        [model, data, epochs, max_steps, batch, lr, rank, lines_a, attention_loss, attention_layers, supervision],
        [job, message, status, bar, curves, jobs],
        api_name="ft_launch",
        show_progress_on=[message],
    )
    launched.success(
        follow,
        [job],
        [followed],
        api_name=False,
        concurrency_id="ft-follow",
        concurrency_limit=4,
        show_progress_on=[followed],
    ).then(poll, [job], polled, api_name=False, show_progress="hidden")
    clear_on_error(launched, [message, followed])
    shown = [status, bar, curves]
    clear_on_error(timer.tick(poll, [job], polled, api_name="ft_poll", show_progress="hidden"), shown)
    clear_on_error(job.change(poll, [job], polled, api_name=False), shown)
    for button, fn, name in ((stop, cancel, "ft_cancel"), (again, resume, "ft_resume")):
        acted = button.click(fn, [job], [message], api_name=name)
        acted.then(poll, [job], polled, api_name=False)
        clear_on_error(acted, [message])
    compared = [
        cmp_head,
        cmp_table,
        trip_table,
        cmp_fig,
        att_fig,
        att_table,
        report,
        report_note,
        cmp_result,
        by_n_models,
        by_n_pairings,
    ]
    clear_on_error(
        cmp_btn.click(compare, [job, mcq], compared, api_name="ft_compare", show_progress_on=[cmp_head], **GPU_QUEUE),
        compared,
    )
    for picker in (by_n_models, by_n_pairings):  # redrawn from the held result: nothing is scored again
        picker.input(
            by_n_view, [cmp_result, by_n_models, by_n_pairings], [cmp_fig], api_name=False, show_progress="hidden"
        )
    on_show = {"fn": show, "inputs": [job], "outputs": [*polled, timer]}
    names = {getattr(tab, "label", None), getattr(tab, "id", None)} - {None}  # what Tabs.select may report
    if isinstance(tab, gr.Tab):
        tab.select(show, [job], [*polled, timer], api_name=False)

    def wire_tabs(tabs: gr.Tabs, hooks: dict[str, dict[str, Any]]) -> None:
        """Stop polling when the visitor selects another tab."""

        def leave(evt: gr.SelectData) -> Any:
            return gr.Timer(active=evt.value in names) if isinstance(evt.value, str) and names else gr.update()

        tabs.select(leave, None, [timer], api_name=False)

    return {"wire": wire_tabs, "on_show": on_show}
