"""Walkthrough tab: a seven-step teaching tour of binding failures, each step a paragraph, a live widget and a link
to the full tab.

The paragraphs say what to look for; every number on the page comes from :mod:`bindlab.studies.walkthrough`, computed when
the step's button is pressed. Callbacks validate, call the backend and format. The finetune step runs as a
background job: the page polls it with a ``gr.Timer`` (active only while the job runs) and never blocks a request
for it; the job id lives in per-session ``gr.State``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import gradio as gr
import pandas as pd

from bindlab.present import numbers
from bindlab.present import walkthrough_figures as wf
from bindlab.present.safe_text import html_text, md_text
from bindlab.present.walkthrough_figures import PAIRING_NAMES
from bindlab.studies import walkthrough as wt
from bindlab.studies.finetune import display_labels, page_manager
from bindlab.ui.browse import question_html
from bindlab.ui.common import USER_ERRORS, friendly, held_state, shown_image
from bindlab.ui.exports import deliver, export_panel
from bindlab.ui.exports import wire as wire_export
from bindlab.ui.gpu import GPU_QUEUE, gpu_task
from bindlab.ui.slider_js import payload_js

CSS = """
#wt-intro {font-size: 1.02em}
.wt-step {border-left: 4px solid #1f77b4; padding-left: 12px; margin-top: 18px}
.wt-num {font-family: monospace; font-weight: bold}
.wt-bar {background:#eee; border-radius:6px; height:16px; width:100%; overflow:hidden}
.wt-bar > div {background:#2ca02c; height:100%}
#wt-images-table th, #wt-images-table th *, #wt-ft-table th, #wt-ft-table th * {white-space: normal; word-break: keep-all; overflow-wrap: normal}
#wt-images-table td, #wt-ft-table td {white-space: normal; overflow-wrap: anywhere}
#wt-ft-report th, #wt-ft-report th * {white-space: normal; word-break: keep-all; overflow-wrap: normal}
#wt-ft-report td {white-space: normal; overflow-wrap: anywhere}
"""

INTRO = """## Walkthrough — binding failures in seven live steps
Each step is a short paragraph and a button that computes its result **now**, on the embedded default (a generated
mini benchmark, the bundled MiniLM text encoder, a bag-of-words baseline and bindlab's toy vision–language
models). Nothing here is pre-typed: the numbers you see are what this machine just measured. The first press of a
step may take a while (a model loads, the image benchmark or the factor grid is rendered once); later presses reuse
the cache. Start step 7's finetune early — it runs in the background while you go through the others. Each step has
a button to its full tab."""

PARAGRAPHS: dict[str, str] = {
    "bow": """Every question has a query ("a red cube and a blue sphere") and four candidates: the **preserve**
candidate keeps the query's bindings (pairs reordered), the **swaps** use exactly the same words with attributes or
objects exchanged. A pure bag of words only sees *which* words occur, so it must give every swap exactly the score of
the right answer: the best it can do is guess among the ties. **Look at** the share of exact ties and the accuracy
in the result line: it shows every swap scoring exactly like the right answer, and the accuracy landing on the chance
level of guessing. The example question (open it below) shows the tied scores card by card.""",
    "text": """A real sentence encoder reads word order, so the ties break — but by how much? Compare the gap
between the right answer and its best swap with the gap between the right answer and a caption about other things.
**Look at** the median gap to the best swap next to the two medians after it: it shows that word order moves the score
far less than other words do. The same example question as in step 1 shows it card by card.""",
    "images": """Binding is not only a text problem. The same kind of questions, rendered as images (each attribute
stays inside its own object), scored by bindlab's toy vision–language models trained on this renderer: a CLIP-style
dual encoder (`toy:clip`), an MLLM-style model whose image patches and words share one transformer (`toy:shared`),
and `toy:negclip`. A query and its candidates can each be text or image: four pairings. Chance is one in four for
N ≥ 3 and one in three at N = 2, where the fourth candidate has a word the query lacks.
**A failure and its fix.** Contrastive training only asks a model to match an image to its own caption rather than
to *other* scenes' captions, and other scenes almost never hold the same words, so knowing which words are present
is nearly enough: who has which attribute is barely trained. NegCLIP-style training (Yuksekgonul et al., ICLR 2023)
adds **hard negatives** that differ only in the bindings. `toy:negclip` is `toy:clip` trained further with such
negatives for about half of each batch's scenes: a scene's binding twin — the same scene, same layout and wording, with two objects' attributes
swapped (or one attribute replaced) — added to the batch as an extra negative image *and* an extra negative
caption, so the only way to tell them apart is who has which attribute. (It then also trained on the Pairs tab's kind
of scene — a scene and the same scene with one attribute edited — which is what lifts it there, on those edits
only.) The chart sets the two side by side where
images are involved (image → image, image → text, text → image); the change and its interval are what this
machine measures now. **Look at** the chart's grey and green bars in each pairing and the change line under the result:
it shows where the hard negatives lifted accuracy beyond the interval's noise. The table holds every model in all four
pairings, and the example's images are labelled with their role and score: look at whether the preserve image (✓)
scores above its swaps.""",
    "objects": """The SABER paper finds that accuracy falls as scenes hold more objects. The step opens on
`toy:clip` image → image, where this machine's benchmark shows the fall clearly; pick another model and pairing to
compare (a text encoder on text barely moves, a bag of words sits on chance by construction). **Look at** the chart's
line from small to large N and at the change from small to large scenes with its 95 % interval: it shows whether
accuracy falls as scenes hold more objects, beyond the noise of the few questions per N.""",
    "grounding": """Can the *image* embeddings tell patterns apart even when the text query cannot? The toy models
saw pattern words in only a quarter of their captions. Matched visual grounding builds, from calibration images, the
direction d that separates one pattern's images from the others' and adds α·d to the text query. At α = 0 you see
the words alone; sliding α up shows what the image embeddings already knew. Compare both with the image prototype
(the mean image of the pattern, no words at all). The step opens on *striped* with some grounding (α = 1).
**Look at** the test AP of the text query → grounded and the change's 95 % interval: it shows that the images hold
a distinction the words alone do not reach; the bars show it for every pattern, and the margin curve how it grows with
α.""",
    "attention": """Where do bindings get lost? For each object in a caption, the attention binding margin is the
attention from the object to its own attribute minus that to the other objects' attributes (read from the later word
to the earlier one), averaged over heads and objects, per layer. Zero means no preference. The paper sees it positive
in early layers and fading in the last third. **Look at** the layer where the chart's line peaks and what is left
at the last layer: it shows where in the model the bindings are read and where they fade.""",
    "finetune": """Can binding be taught with text alone? This starts a small background job: a LoRA on the text
attention projections of `toy:shared`, trained on triplets whose hard negative has the same words with other
bindings (only two or three objects each), then LiNeS rescales the update layer by layer. Because `toy:shared`
runs images through the same blocks, a text-only update can change image pairings too — a dual encoder's image tower
would not move at all. When the job is done, the page scores base, finetuned and LiNeS models on the image benchmark
in all four pairings. The learning rate is far above the paper's, so that a few minutes on a laptop move the toy.
**Read the labels.** The benchmark's questions are written in the same sentence template as every training query, so
a gain on them first of all shows that the training *format* was learnt. The separated report under the chart (the
Finetune tab's) adds the general tests — the same bindings in held-out sentence templates, words no training text
contains, held-out constructions — each with its n and 95 % interval, and says which rows moved beyond their
interval. **Look at** the chart's base and finetuned lines per pairing and the line listing the rows that moved: it
shows what a text-only update taught, and whether it reached the image pairings.""",
}

STEP_MODELS_N = [
    ("MiniLM · text → text", "minilm|tt"),
    ("bag of words · text → text", "bow|tt"),
    ("toy:clip · image → image", "toy:clip|ii"),
    ("toy:shared · image → image", "toy:shared|ii"),
    ("toy:clip · text → image", "toy:clip|ti"),
    ("toy:shared · text → image", "toy:shared|ti"),
    ("toy:negclip · image → image", "toy:negclip|ii"),
    ("toy:negclip · text → image", "toy:negclip|ti"),
]
ATTENTION_MODELS = ["minilm", "toy:shared", "toy:clip", "toy:negclip"]
TAB_LABELS = {s.tab: s.tab.capitalize() for s in wt.STEPS}


# --- messages: only what this page offers ---------------------------------------------------------------------
_FLAG = re.compile(r"(?<![\w-])--([a-z][\w-]*)")
_CLI = re.compile(r"python -m bindlab|(?<![\w-])--[a-z]")


def _clauses(text: str) -> list[str]:
    """``text`` split at the semicolons outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")" and depth > 0
        if ch == ";" and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    return [*out, text[start:].strip()]


def page_message(text: str) -> str:
    """A backend message as this page can act on it: the page has no command line, so hints that name CLI flags or
    commands (``--skip-bad``, ``(--data)``, ``'python -m bindlab …'``) are left out, and a flag that names the
    subject of the message becomes the setting's words (``--lora-rank 5000`` → ``lora rank 5000``)."""
    text = re.sub(r"\s+or\s+[^;()]*?--[a-z][\w-]*", "", str(text))  # "fix it or load with … --skip-bad"
    text = re.sub(r"\s*\([^()]*(?:python -m bindlab|--[a-z])[^()]*\)", "", text)  # "(--data)", "(see 'python -m …')"
    first, *rest = _clauses(text)
    text = "; ".join([first, *(c for c in rest if c and not _CLI.search(c))])
    return _FLAG.sub(lambda m: m.group(1).replace("-", " "), text).strip()


def on_page(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a callback (under :func:`~bindlab.ui.common.friendly`) so its user errors read as :func:`page_message`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as e:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            raise ValueError(page_message(str(msg))) from None

    return wrapper


def _manager(request: gr.Request | None) -> Any:
    """This visitor's job manager (their own jobs; outside public mode also the CLI's)."""
    return page_manager(getattr(request, "session_hash", None))


def _num(x: float, digits: int = 3, signed: bool = False, elem_id: str | None = None) -> str:
    """A number in the step's monospace style (``elem_id``: an id the page's slider script updates)."""
    at = f" id='{elem_id}'" if elem_id else ""
    return (
        f"<span class='wt-num'{at}>{x:+.{digits}f}</span>"
        if signed
        else f"<span class='wt-num'{at}>{x:.{digits}f}</span>"
    )


def _ci(ci: list[float]) -> str:
    return f"95 % CI {ci[0]:.3f}–{ci[1]:.3f}"


# --- formatting: backend dict -> Markdown / HTML / frames (pure) ------------------------------------------------
def bow_md(r: dict[str, Any]) -> str:
    by_n = r["by_n"]
    n2 = by_n.get("2")
    rest = [v for k, v in by_n.items() if k != "2"]
    parts = [
        f"<div id='wt-bow-line'><b>{html_text(r['model'])}</b> on {r['n_questions']} questions: "
        f"<span id='wt-bow-ties'>{100 * r['tie_share']:.1f}</span> % of the {r['n_swaps']} swap candidates score "
        f"exactly the same as the right answer · accuracy <span id='wt-bow-acc'>{r['accuracy']:.3f}</span> "
        f"(chance {r['chance']:.3f}: 1/3 at N = 2, 1/4 above)."
    ]
    if n2 is not None and rest:
        span = _num(min(rest)) if min(rest) == max(rest) else f"{_num(min(rest))}–{_num(max(rest))}"
        parts.append(
            f" At N = 2 accuracy is {_num(n2)}: the fourth candidate there replaces a word, which a bag of "
            f"words can see, leaving a three-way tie; for N ≥ 3 it is {span}."
        )
    return "".join(parts) + "</div>"


def text_md(r: dict[str, Any]) -> str:
    return (
        f"<div id='wt-text-line'><b>{html_text(r['model'])}</b> accuracy <span id='wt-text-acc'>{r['accuracy']:.3f}</span> "
        f"({_ci(r['ci95'])}; chance {r['chance']:.3f}) · right on {100 * r['share_correct']:.1f} % of questions. "
        f"The right answer and its best swap differ by a median of only "
        f"<span id='wt-text-gap'>{r['median_abs_gap']:.4f}</span> in cosine, while a query scores "
        f"{_num(r['median_preserve'])} with its answer and {_num(r['median_other'])} with another question's "
        f"answer (medians).</div>"
    )


def images_frame(r: dict[str, Any]) -> pd.DataFrame:
    rows = {}
    for x in r["rows"]:
        rows.setdefault(x["model"], {"model": x["model"]})[PAIRING_NAMES[x["pairing"]]] = round(x["accuracy"], 3)
    return pd.DataFrame(list(rows.values()))


def images_md(r: dict[str, Any]) -> str:
    best = max(r["rows"], key=lambda x: x["accuracy"])
    near = sum(abs(x["accuracy"] - r["chance"]) <= 0.05 for x in r["rows"])
    return (
        f"<div id='wt-images-line'>{r['n_questions']} image questions · {near} of {len(r['rows'])} "
        f"model–pairing combinations lie within 0.05 of chance ({r['chance']:.3f}); the best is "
        f"<b>{html_text(best['model'])} {PAIRING_NAMES[best['pairing']]}</b> at "
        f"<span id='wt-images-best'>{best['accuracy']:.3f}"
        f"</span> ({_ci(best['ci95'])}). Below: one question scored by {html_text(r['example_model'])} "
        f"{PAIRING_NAMES[r['example_pairing']]}.</div>" + fix_md(r["fix"])
    )


VERDICTS = {
    "better": "better (the interval excludes 0)",
    "worse": "worse (the interval excludes 0)",
    "unclear": "no clear change (the interval includes 0)",
}


def fix_md(fix: dict[str, Any]) -> str:
    """The failure and its fix, one line per pairing: before → after, the paired change, its interval, a verdict."""
    items = "".join(
        f"<li id='wt-images-fix-{x['pairing']}'>{PAIRING_NAMES[x['pairing']]}: "
        f"<span class='wt-fix-before'>{x['before']:.3f}</span> → <span class='wt-fix-after'>{x['after']:.3f}</span> "
        f"(change {_num(x['change'], signed=True)}, paired {_ci(x['change_ci95'])}): "
        f"<span class='wt-fix-verdict'>{VERDICTS[x['clear']]}</span></li>"
        for x in fix["rows"]
    )
    return (
        f"<div id='wt-images-fix'><b>{html_text(fix['before'])} → {html_text(fix['after'])}</b> (the same model "
        "before and after "
        f"binding hard negatives) on the same questions:<ul>{items}</ul></div>"
    )


OBJECT_VERDICTS = {
    "down": "accuracy falls with more objects (the interval excludes 0)",
    "up": "accuracy rises with more objects (the interval excludes 0)",
    "unclear": "the interval includes 0: on this small benchmark the difference is within the noise",
}


def _signed_ci(ci: list[float]) -> str:
    return f"95 % CI {ci[0]:+.3f} to {ci[1]:+.3f}"


def objects_md(r: dict[str, Any]) -> str:
    s, g = r["small"], r["large"]
    change = r.get("change") or {"value": g["accuracy"] - s["accuracy"], "ci95": None, "verdict": None}
    if change["ci95"] is None:  # a result without the change's interval: the groups' intervals
        overlap = s["ci95"][0] <= g["ci95"][1] and g["ci95"][0] <= s["ci95"][1]
        verdict = OBJECT_VERDICTS["unclear"] if overlap else "the intervals do not overlap"
    else:
        verdict = (
            f"<span id='wt-objects-change-ci'>{_signed_ci(change['ci95'])}</span>, bootstrap over the "
            f"questions: <span id='wt-objects-verdict'>{OBJECT_VERDICTS[change['verdict']]}</span>"
        )
    span = lambda x: f"N = {x['sizes'][0]}–{x['sizes'][-1]}"  # noqa: E731
    return (
        f"<div id='wt-objects-line'><b>{html_text(r['model'])}</b> {PAIRING_NAMES[r['pairing']]}: {span(s)} "
        f"<span id='wt-objects-small'>{s['accuracy']:.3f}</span> ({_ci(s['ci95'])}, {s['n']} questions) vs "
        f"{span(g)} <span id='wt-objects-large'>{g['accuracy']:.3f}</span> ({_ci(g['ci95'])}, {g['n']} "
        f"questions): change {_num(change['value'], signed=True, elem_id='wt-objects-change')} "
        f"({verdict}).</div>"
    )


def _crossing(r: dict[str, Any]) -> str:
    """Where the margin crosses zero: at α* = −c when −1 < c < 0, otherwise "no crossing" (docs/architecture.md, "Matched visual grounding (α and α*)")."""
    if r.get("alpha_star") is None:
        c = r.get("c")
        why = (
            f" (c = q·d = {_num(c, 2)} ≥ 0: the text query already leans towards the value)"
            if c is not None and c >= 0
            else ""
        )
        return f"it has no zero crossing{why}"
    return f"it crosses zero at <span id='wt-grounding-star'>α* = {_num(r['alpha_star'], 2)}</span>"


def _gain_ci(r: dict[str, Any]) -> str:
    """The AP change's interval, at the α it was computed for (the page's slider script redraws the numbers it
    knows while dragging; this one is the server's, so it names its α)."""
    ci = r.get("gain_ci95")
    if not ci:
        return ""
    where = "excludes 0" if ci[0] > 0 or ci[1] < 0 else "includes 0"
    return (
        f"; <span id='wt-grounding-gain-ci'>at α = {r['alpha']:.2f} {_signed_ci(ci)}, paired bootstrap over the "
        f"test images: it {where}</span>"
    )


def grounding_md(r: dict[str, Any]) -> str:
    gain = r["ap_grounded"] - r["ap_native"]
    return (
        f"<div id='wt-grounding-line'><b>{html_text(r['model'])}</b>, {html_text(r['factor'])} "
        f"<b>{html_text(r['value'])}</b> at "
        f"α = <span id='wt-grounding-alpha'>{r['alpha']:.2f}</span>: test AP of the text query "
        f"<span id='wt-grounding-native'>{r['ap_native']:.3f}</span> → grounded "
        f"<span id='wt-grounding-grounded'>{r['ap_grounded']:.3f}</span> ({_num(gain, signed=True, elem_id='wt-grounding-gain')}"
        f"{_gain_ci(r)}); "
        f"over all {len(r['values'])} {html_text(r['factor'])}s macro-mAP {_num(r['map_native'])} → "
        f"{_num(r['map_grounded'], elem_id='wt-grounding-map')}. "
        f"The image prototype alone, no words: AP {_num(r['ap_prototype'])}, macro-mAP "
        f"<span id='wt-grounding-proto'>{r['map_prototype']:.3f}</span>. Margin M(α) "
        f"{_num(r['margin_native'], 3, True)} at α = 0 → "
        f"{_num(r['margin_grounded'], 3, True, 'wt-grounding-margin')} now; "
        f"{_crossing(r)}. Validation would pick α = {_num(r['alpha_validation'], 2)}. "
        f"({r['n_images'].get('test', 0)} test images.)</div>"
    )


def attention_md(r: dict[str, Any]) -> str:
    if r["peak"] <= 0:
        kept = "; no layer prefers the own attributes"
    elif r["last"] <= 0:
        kept = "; by the last layer the preference is gone"
    else:
        kept = f"; the last layer keeps {100 * r['last'] / r['peak']:.0f} % of the peak"
    return (
        f"<div id='wt-attention-line'><b>{html_text(r['model'])}</b> on {r['n_captions']} captions: margin "
        f"<span class='wt-num'>{numbers.signed(r['first'])}</span> at layer 0, peak "
        f"<span id='wt-attention-peak'>{numbers.signed(r['peak'])}</span> at layer {r['peak_layer']}, "
        f"<span id='wt-attention-last'>{numbers.signed(r['last'])}</span> at the last layer "
        f"({len(r['layers']) - 1}){kept}.</div>"
    )


def progress_html(st: dict[str, Any]) -> str:
    frac = float(st.get("fraction") or 0.0)
    eta = st.get("eta_s")
    eta_txt = f" · ETA {eta:.0f} s" if eta is not None and st["state"] == "running" else ""
    loss = st.get("loss")
    loss_txt = f" · loss {loss:.4f}" if loss is not None else ""
    return (
        f'<div class="wt-bar"><div style="width:{100 * frac:.1f}%"></div></div>'
        f"<p>job <b>{html_text(st['id'])}</b> · <span id='wt-ft-state'>{html_text(st['state'])}</span> · step "
        f"{html_text(st['step'])}/{html_text(st.get('total_steps') or '?')} · phase "
        f"{html_text(st.get('phase') or '-')}{loss_txt}{eta_txt} · {html_text(st.get('message') or '')}</p>"
    )


def finetune_frame(r: dict[str, Any]) -> pd.DataFrame:
    """MCQ accuracy over all N per pairing, one column per model shown (:func:`wf.finetune_models`: no LiNeS column
    when a = 1)."""
    models = wf.finetune_models(r)
    return pd.DataFrame(
        [{"pairing": PAIRING_NAMES[x["pairing"]], **{name: x[k] for k, name in models}} for x in r["rows"]]
    )


def report_frame(r: dict[str, Any]) -> pd.DataFrame:
    """The separated report's rows as the Finetune tab shows them: evaluation, format, in training distribution, N,
    chance, then each model's value and 95 % CI."""
    return pd.DataFrame(r.get("report_rows") or [])


def _given_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's rows of the questions step 7 scores (split by whether their words were seen in training)."""
    return [e for e in r.get("report") or [] if e["kind"] == "mcq" and e.get("source") == "the questions given"]


def _in_template(r: dict[str, Any]) -> bool:
    """Whether the benchmark's questions are in a training template (the report's rows for them say; without a
    report, the walkthrough's triplets train on the attributive template only)."""
    given = _given_rows(r)
    if given:
        return given[0]["format"] in ("in-format", "unseen words")
    return r.get("template", "attributive") == "attributive"


def moves_md(r: dict[str, Any]) -> str:
    """In words: which rows of the separated report moved beyond their intervals (the paired 95 % interval of the
    job's model's change over the base excludes 0) and which stayed within the noise, in-format and general apart."""
    moves = r.get("report_moves") or []
    if not moves:
        return ""
    name = html_text(wf.finetune_models(r)[-1][1])  # the job's model, as step 7 names it

    def listed(rows: list[dict[str, Any]]) -> str:
        return (
            "; ".join(
                f"{html_text(x['evaluation'])} ({_num(x['base'])} → {_num(x['tuned'])}, n = {x['n']}"
                + (
                    f", change {x['change']:+.3f} [{x['change_ci95'][0]:+.3f}, {x['change_ci95'][1]:+.3f}]"
                    if "change_ci95" in x
                    else ""
                )
                + ")"
                for x in rows
            )
            or "none"
        )

    parts = []
    for title, sel in (
        (
            "In the training distribution (training template, only words seen in training)",
            [x for x in moves if x["in_format"]],
        ),
        (
            "General (held-out template, unseen words, held-out construction)",
            [x for x in moves if not x["in_format"] and x["kind"] != "control"],
        ),
        (
            "Controls (what finetuning may have cost; drift: lower is better)",
            [x for x in moves if x["kind"] == "control"],
        ),
    ):
        if not sel:
            continue
        up = [x for x in sel if x["moved"] == "up"]
        down = [x for x in sel if x["moved"] == "down"]
        within = [x for x in sel if x["moved"] == "within"]
        parts.append(
            f"<li><b>{title}</b>: moved up beyond the interval: {listed(up)} · moved down: {listed(down)} · "
            f"within the noise: {len(within)} of {len(sel)} rows</li>"
        )
    return (
        f"<div id='wt-ft-moves'>Separated report, base vs <b>{name}</b> (text → text; a row <i>moved beyond its "
        "interval</i> when the paired 95 % interval of its change — the same items scored by both models — "
        "excludes 0, else it is within the noise of its n "
        f"items):<ul>{''.join(parts)}</ul></div>"
    )


def finetune_md(r: dict[str, Any]) -> str:
    names = dict(wf.finetune_models(r))
    tuned = list(names)[-1]  # the job's model: LiNeS, or the unscaled model when a = 1
    rows = {x["pairing"]: x for x in r["rows"]}
    moves = ", ".join(f"{PAIRING_NAMES[p]} {_num(x['base'])} → {_num(x[tuned])}" for p, x in rows.items())
    trip = {t["model"]: t for t in r["triplets"]}  # rows named as the Finetune tab names them
    trip_key = display_labels(r["lines_a"])[tuned]
    trip_txt = ""
    if "base" in trip and trip_key in trip and "triplet_test" in trip["base"]:
        trip_txt = (
            " Triplet accuracy on the toy triplets' test split (training template, unseen rows; chance 0.5): "
            f"{_num(trip['base']['triplet_test'])} → "
            f"{_num(trip[trip_key]['triplet_test'])}."
        )
    given = _given_rows(r)
    n_in, n_all = sum(e["n"] for e in given if e["in_format"]), sum(e["n"] for e in given)
    words = (
        f"; {n_in} of {n_all} use only words seen in training (<b>in-format</b>), the other {n_all - n_in} "
        "contain words no training text contains"
        if given
        else ""
    )
    if _in_template(r):
        where = (
            f"questions in the <b>training template</b> ({html_text(r.get('template', 'attributive'))}, the "
            f"template of every training query{words}: a gain on in-format questions shows the training format "
            "was learnt, not binding in general; the report below separates the general tests)"
        )
    else:
        where = f"questions in a template the job did not train on ({html_text(r.get('template', ''))})"
    a = r["lines_a"]
    scaled = (
        f"LiNeS a = {a}"
        if tuned == "lines"
        else f"LiNeS a = {a}: a = 1 scales nothing, so the job's model is the <b>unscaled</b> one"
    )
    d = r["image_drift"]
    return (
        f"<div id='wt-ft-line'>Job <b>{html_text(r['job'])}</b>: {r['steps']} steps in {r['train_seconds']:.0f} s of training "
        f"(lr {r['lr']:g}); {scaled}. MCQ accuracy base → {html_text(names[tuned])} on {r['n_questions']} image "
        f"{where}: {moves}.{trip_txt} Image embeddings moved: mean 1 − cos(base, finetuned) = "
        f"<span id='wt-ft-drift'>{d['mean_1_minus_cos']:.4f}</span> over {d['n_images']} query images "
        f"(max {d['max_1_minus_cos']:.4f}).</div>" + moves_md(r)
    )


def example_gallery(view: dict[str, Any]) -> list[tuple[str, str]]:
    items = [(shown_image(view["query"]["image"]), "query")] if view["query"]["image"] else []
    for k, c in enumerate(view["candidates"]):
        if c["image"]:
            mark = " ✓" if c["is_answer"] else ""
            items.append((shown_image(c["image"]), f"{k + 1}. {c['role']}{mark} · {c['score']:.3f}"))
    return items


# --- callbacks: validate, call the backend, format ------------------------------------------------------------
def _report(progress: gr.Progress, first: str | None = None):
    """The backend's ``(fraction, message)`` callback on ``progress``; with ``first``, it reports ``(0, first)`` at
    once, so the page shows what the step is doing from the click on (before any model loads)."""
    if first:
        progress(0, desc=first)
    return lambda f, msg: progress(f, desc=msg)


def _keep(results: dict[str, Any] | None, key: str, r: dict[str, Any]) -> dict[str, Any]:
    """This session's step results with step ``key`` replaced (what the Download panel exports)."""
    return {**(results or {}), key: r}


def _remember(done: dict[str, Any] | None, key: str, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The browser's record of the steps run (``{step: settings}``, kept across reloads): what the Download panel
    rebuilds after a reload (:func:`bindlab.studies.walkthrough.rebuild_results`)."""
    return {**(done if isinstance(done, dict) else {}), key: wt.step_settings(key, settings)}


def _run_step(
    key: str, settings: dict[str, Any] | None, progress: gr.Progress, first: str, request: gr.Request | None = None
) -> dict[str, Any]:
    """Run (or recall: :func:`bindlab.studies.walkthrough.run_step`) one step, reporting ``first`` at once."""
    report = _report(progress, first)
    return wt.run_step(key, settings, progress=report, manager=_manager(request) if key == "finetune" else None)


@friendly
@on_page
def run_bow(
    results: dict[str, Any] | None, done: dict[str, Any] | None, progress: gr.Progress = gr.Progress()
) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    # outside the GPU queue: a bag of words is a word count, and step 1 should answer at once even while the
    # Browse tab's page-load scoring holds the queue
    r = _run_step("bow", None, progress, "counting the words of every question and candidate")
    return bow_md(r), question_html(r["example"]), _keep(results, "bow", r), _remember(done, "bow")


@gpu_task(duration=120)
@friendly
@on_page
def run_text(
    results: dict[str, Any] | None, done: dict[str, Any] | None, progress: gr.Progress = gr.Progress()
) -> tuple[str, str, dict, dict]:
    r = _run_step("text", None, progress, "loading MiniLM (the first time only) to embed the questions")
    return text_md(r), question_html(r["example"]), _keep(results, "text", r), _remember(done, "text")


@gpu_task(duration=300)
@friendly
@on_page
def run_images(
    results: dict[str, Any] | None, done: dict[str, Any] | None, progress: gr.Progress = gr.Progress()
) -> tuple[str, pd.DataFrame, Any, list, dict, dict]:
    r = _run_step("images", None, progress, "the image benchmark and the toy models (rendered and embedded once)")
    return (
        images_md(r),
        numbers.table(images_frame(r)),
        wf.fix_chart(r),
        example_gallery(r["example"]),
        _keep(results, "images", r),
        _remember(done, "images"),
    )


def objects_choice(choice: str | None) -> tuple[str, str]:
    """``(model, pairing)`` of the step-4 dropdown: one of its entries (label or value) or a typed
    ``model|pairing`` (pairing tt, ti, it or ii), e.g. ``toy:clip|it``.

    Raises:
        ValueError: anything else, naming the typed text and the entries.
    """
    text = (choice or "").strip()
    text = dict(STEP_MODELS_N).get(text, text)
    model, _, pairing = text.partition("|")
    if not model.strip() or pairing.strip() not in PAIRING_NAMES:
        raise ValueError(
            f"{text[:60]!r} is not a model and pairing; choose one from the list "
            f"({', '.join(label for label, _ in STEP_MODELS_N)}) or type MODEL|PAIRING with PAIRING "
            f"one of {', '.join(PAIRING_NAMES)}, e.g. toy:clip|it"
        )
    return model.strip(), pairing.strip()


@gpu_task(duration=120)
@friendly
@on_page
def run_objects(
    choice: str, results: dict[str, Any] | None, done: dict[str, Any] | None, progress: gr.Progress = gr.Progress()
) -> tuple[str, Any, dict, dict]:
    model, pairing = objects_choice(choice)
    settings = {"model": model, "pairing": pairing}
    r = _run_step("objects", settings, progress, f"scoring every question with {model} ({PAIRING_NAMES[pairing]})")
    return objects_md(r), wf.objects_figure(r), _keep(results, "objects", r), _remember(done, "objects", settings)


def _grounding_outputs(r: dict[str, Any]) -> tuple[Any, ...]:
    return grounding_md(r), wf.grounding_curve(r), wf.grounding_bars(r)


@gpu_task(duration=300)
@friendly
@on_page
def load_grounding(
    alpha: float, results: dict[str, Any] | None, done: dict[str, Any] | None, progress: gr.Progress = gr.Progress()
) -> tuple[Any, ...]:
    settings = {"alpha": float(alpha)}
    r = _run_step("grounding", settings, progress, "the default factor grid with toy:clip (rendered and embedded once)")
    return (
        True,
        wt.grounding_payload(),
        gr.update(choices=r["values"], value=r["value"]),
        *_grounding_outputs(r),
        _keep(results, "grounding", r),
        _remember(done, "grounding", {**settings, "value": r["value"]}),
    )


@friendly
@on_page
def move_grounding(
    loaded: bool, value: str, alpha: float, results: dict[str, Any] | None, done: dict[str, Any] | None
) -> tuple[Any, ...]:
    if not loaded:
        raise ValueError("press 'Load the grid' first (it renders and embeds the default grid once)")
    if not (value or "").strip():
        raise ValueError("choose a pattern from the list")
    settings = {"alpha": float(alpha), "value": value.strip()}
    r = wt.run_step("grounding", settings)  # a typed value not in the grid is refused
    return (*_grounding_outputs(r), _keep(results, "grounding", r), _remember(done, "grounding", settings))


@gpu_task(duration=300)
@friendly
@on_page
def run_attention(
    model: str, results: dict[str, Any] | None, done: dict[str, Any] | None, progress: gr.Progress = gr.Progress()
) -> tuple[str, Any, dict, dict]:
    model = (model or "").strip()
    if not model:  # a typed encoder id is accepted; an unknown one is refused by the encoder registry
        raise ValueError(f"choose a model ({', '.join(ATTENTION_MODELS)}) or type an encoder id")
    settings = {"model": model}
    r = _run_step("attention", settings, progress, f"loading {model} and reading its attention, caption by caption")
    return (
        attention_md(r),
        wf.attention_figure(r),
        _keep(results, "attention", r),
        _remember(done, "attention", settings),
    )


@friendly
@on_page
def start_finetune(job: str | None, request: gr.Request = None) -> tuple[str, str, Any, Any]:
    manager = _manager(request)
    if job:
        st = wt.finetune_status(job, manager)
        if st["state"] in ("queued", "running"):
            return (
                job,
                f"Job **{md_text(job)}** is still {st['state']}; it is followed below.",
                progress_html(st),
                gr.Timer(active=True),
            )
    job = wt.start_finetune(manager)
    st = wt.finetune_status(job, manager)
    return (
        job,
        f"Started job **{md_text(job)}** (<code>lora:{md_text(job)}</code>) in the background.",
        progress_html(st),
        gr.Timer(active=True),
    )


@friendly
@on_page
def reuse_finetune(request: gr.Request = None) -> tuple[str, str, Any, Any]:
    manager = _manager(request)
    job = wt.latest_finished(manager)
    if not job:
        raise ValueError("no finished walkthrough job yet; press 'Start the finetune'")
    st = wt.finetune_status(job, manager)
    return job, f"Showing the finished job **{md_text(job)}**.", progress_html(st), gr.Timer(active=True)


def failed_html(st: dict[str, Any]) -> str:
    """A failed job's one-line error (its traceback stays in the job's log on the server)."""
    return (
        f"<p id='wt-ft-error' class='wt-error'>The job failed: "
        f"{html_text(page_message(st.get('error') or st.get('message') or 'no reason recorded'))}</p>"
    )


def poll_finetune(job: str | None, request: gr.Request = None) -> tuple[Any, Any, Any]:
    """Timer tick: the job's progress; stops the timer and hands the job id on (``finished``) once it is final."""
    if not job:
        return gr.update(), gr.Timer(active=False), gr.update()
    try:
        st = wt.finetune_status(job, _manager(request))
    except (KeyError, ValueError, OSError) as e:
        msg = page_message(e.args[0] if isinstance(e, KeyError) and e.args else str(e))
        return f"<p>Cannot read job {html_text(job)}: {html_text(msg)}</p>", gr.Timer(active=False), gr.update()
    text = progress_html(st)
    if st["state"] == "failed":
        text += failed_html(st)
    final = st["state"] in ("done", "failed", "cancelled")
    return text, gr.Timer(active=not final), (job if st["done"] else gr.update())


@friendly
@on_page
def check_finished(job: str | None, request: gr.Request = None) -> None:
    """Outside the GPU queue, so a premature click is answered at once."""
    if not job:
        raise ValueError("start the finetune first (or show the last finished one)")
    st = wt.finetune_status(job, _manager(request))
    if not st["done"]:
        raise ValueError(f"job {job} is {st['state']}; the before/after needs it done")


@gpu_task(duration=300)
@friendly
@on_page
def show_finetune(
    job: str | None,
    results: dict[str, Any] | None,
    done: dict[str, Any] | None,
    request: gr.Request = None,
    progress: gr.Progress = gr.Progress(),
) -> tuple[str, pd.DataFrame, Any, pd.DataFrame, dict, dict]:
    check_finished(job, request)
    settings = {"job": job}
    r = _run_step(
        "finetune",
        settings,
        progress,
        f"scoring base and finetuned models of job {job} on the image benchmark",
        request,
    )
    return (
        finetune_md(r),
        numbers.table(finetune_frame(r)),
        wf.finetune_figure(r),
        numbers.table(report_frame(r)),
        _keep(results, "finetune", r),
        _remember(done, "finetune", settings),
    )


@friendly
def export(
    results: dict[str, Any] | None, done: dict[str, Any] | None, formats: list[str], request: gr.Request = None
) -> tuple[list[str], str]:
    """Download: the tables and charts of the steps run in this browser. ``done`` is the browser's record of the
    steps run (kept across reloads): a step run before a reload is rebuilt from the results this server remembers
    or from the caches behind them (:func:`bindlab.studies.walkthrough.rebuild_results`), not lost."""
    from bindlab.present.exports import walkthrough_export

    manager = _manager(request) if isinstance(done, dict) and "finetune" in done else None
    results, skipped = wt.rebuild_results(done if isinstance(done, dict) else {}, results, manager)
    view = walkthrough_export(results)
    paths, note = deliver(view, wt.walkthrough_provenance(results), formats)
    if skipped:
        note += " " + " ".join(f"**Not rebuilt:** {md_text(page_message(x))}." for x in skipped)
    return paths, note


# --- layout ------------------------------------------------------------------------------------------------------
@contextmanager
def _step(step: wt.Step, links: list[tuple[gr.Button, str]]) -> Iterator[None]:
    """A step's heading and paragraph, then a row for its controls that ends with the "Open the … tab" button."""
    gr.Markdown(f"### {step.number} · {step.title}", elem_classes=["wt-step"])
    gr.Markdown(PARAGRAPHS[step.key], elem_id=f"wt-{step.key}-text")
    with gr.Row():
        yield
        btn = gr.Button(f"Open the {TAB_LABELS[step.tab]} tab ›", size="sm", elem_id=f"wt-{step.key}-open", scale=0)
        links.append((btn, step.tab))


def _run_button(label: str, key: str) -> gr.Button:
    return gr.Button(label, variant="primary", elem_id=f"wt-{key}-run", scale=0, min_width=260)


def _score_text_steps(steps: dict[str, Any], links: list[tuple[gr.Button, str]], results: Any, done: Any) -> None:
    """Steps 1 and 2: the bag of words, then MiniLM, on the same text questions."""
    with _step(steps["bow"], links):
        bow_btn = _run_button("Score with the bag of words", "bow")
    bow_out = gr.HTML(elem_id="wt-bow-result")
    with gr.Accordion("Example question (bag of words)", open=False):
        bow_q = gr.HTML(elem_id="wt-bow-question")

    with _step(steps["text"], links):
        text_btn = _run_button("Score with MiniLM", "text")
    text_out = gr.HTML(elem_id="wt-text-result")
    with gr.Accordion("The same example question (MiniLM)", open=False):
        text_q = gr.HTML(elem_id="wt-text-question")

    bow_btn.click(run_bow, [results, done], [bow_out, bow_q, results, done], api_name="wt_bow")
    text_btn.click(run_text, [results, done], [text_out, text_q, results, done], api_name="wt_text", **GPU_QUEUE)


def _images_step(steps: dict[str, Any], links: list[tuple[gr.Button, str]], results: Any, done: Any) -> None:
    """Step 3: the toy models in all four pairings (a table, a chart with intervals, an example question)."""
    with _step(steps["images"], links):
        img_btn = _run_button("Score the toy models in all four pairings", "images")
    img_out = gr.HTML(elem_id="wt-images-result")
    # full width: every pairing's column (image → image holds the headline) stays in view
    img_table = gr.Dataframe(
        headers=["model", *PAIRING_NAMES.values()],
        label="Accuracy (chance 1/3 at N = 2, 1/4 above)",
        interactive=False,
        wrap=True,
        elem_id="wt-images-table",
    )
    img_fig = gr.Plot(label="A failure and its fix: accuracy with 95 % intervals", elem_id="wt-images-fig")
    # height "auto": each thumbnail whole, with its caption (role, ✓ for the right answer, score) under it; a fixed
    # height once cut the thumbnails' lower edge off, captions and all
    img_gallery = gr.Gallery(
        label="Example: query and candidates (role · score, ✓ = the right answer)",
        columns=5,
        height="auto",
        object_fit="contain",
        elem_id="wt-images-gallery",
    )

    img_btn.click(
        run_images,
        [results, done],
        [img_out, img_table, img_fig, img_gallery, results, done],
        api_name="wt_images",
        **GPU_QUEUE,
    )


def _objects_step(steps: dict[str, Any], links: list[tuple[gr.Button, str]], results: Any, done: Any) -> None:
    """Step 4: accuracy by the number of objects, for a chosen model and pairing."""
    with _step(steps["objects"], links):
        obj_choice = gr.Dropdown(
            STEP_MODELS_N,
            value=f"{wt.OBJECTS_MODEL}|{wt.OBJECTS_PAIRING}",
            label="Model and pairing (or type MODEL|PAIRING)",
            allow_custom_value=True,
            elem_id="wt-objects-model",
            scale=2,
        )
        obj_btn = _run_button("Chart accuracy by N", "objects")
    obj_out = gr.HTML(elem_id="wt-objects-result")
    obj_fig = gr.Plot(label="Accuracy by number of objects", elem_id="wt-objects-fig")

    obj_btn.click(
        run_objects, [obj_choice, results, done], [obj_out, obj_fig, results, done], api_name="wt_objects", **GPU_QUEUE
    )


def _grounding_step(steps: dict[str, Any], links: list[tuple[gr.Button, str]], results: Any, done: Any) -> None:
    """Step 5: the grounding grid and its α slider (moved in the page; the server's numbers kept on release)."""
    with _step(steps["grounding"], links):
        gr_btn = _run_button("Load the grid", "grounding")
        gr_value = gr.Dropdown([], label="Pattern", allow_custom_value=True, elem_id="wt-grounding-value", scale=1)
        gr_alpha = gr.Slider(
            0.0,
            8.0,
            value=wt.GROUNDING_ALPHA,
            step=0.05,
            label="α (grounding strength)",
            elem_id="wt-grounding-alpha-slider",
            scale=3,
        )
    gr_loaded = gr.State(False)
    gr_payload = gr.JSON(visible=False, elem_id="wt-grounding-payload")  # the slider's numbers, read in the page
    gr_out = gr.HTML(elem_id="wt-grounding-result")
    with gr.Row():
        gr_curve = gr.Plot(label="Margin M(α)", elem_id="wt-grounding-curve")
        gr_bars = gr.Plot(label="Test AP per value: text query vs grounded", elem_id="wt-grounding-bars")

    gr_view = [gr_out, gr_curve, gr_bars, results, done]
    gr_btn.click(
        load_grounding,
        [gr_alpha, results, done],
        [gr_loaded, gr_payload, gr_value, *gr_view],
        api_name="wt_grounding",
        **GPU_QUEUE,
    )
    # the slider moves in the page (no server call); when let go, the server's numbers are kept for the export
    gr_payload.change(None, [gr_payload], None, js=payload_js("walkthrough"), api_name=False)
    gr_alpha.release(
        move_grounding,
        [gr_loaded, gr_value, gr_alpha, results, done],
        gr_view,
        api_name="wt_grounding_alpha",
        trigger_mode="always_last",
        show_progress="hidden",
    )
    gr_value.input(
        move_grounding,
        [gr_loaded, gr_value, gr_alpha, results, done],
        gr_view,
        api_name=False,
        trigger_mode="always_last",
    )


def _attention_step(steps: dict[str, Any], links: list[tuple[gr.Button, str]], results: Any, done: Any) -> None:
    """Step 6: attention binding margins per layer."""
    with _step(steps["attention"], links):
        at_model = gr.Dropdown(
            ATTENTION_MODELS,
            value="minilm",
            label="Model (or type an encoder id)",
            allow_custom_value=True,
            elem_id="wt-attention-model",
            scale=1,
        )
        at_btn = _run_button("Compute margins per layer", "attention")
    at_out = gr.HTML(elem_id="wt-attention-result")
    at_fig = gr.Plot(label="Attention binding margin per layer", elem_id="wt-attention-fig")

    at_btn.click(
        run_attention, [at_model, results, done], [at_out, at_fig, results, done], api_name="wt_attention", **GPU_QUEUE
    )


def _finetune_step(steps: dict[str, Any], links: list[tuple[gr.Button, str]], results: Any, done: Any) -> None:
    """Step 7: a small finetune as a background job, polled by a timer, then before / after."""
    with _step(steps["finetune"], links):
        ft_btn = gr.Button("Start the finetune", variant="primary", elem_id="wt-ft-run", scale=0, min_width=260)
        ft_reuse = gr.Button("Show the last finished one", elem_id="wt-ft-reuse", scale=0)
        ft_show = gr.Button("Before / after", elem_id="wt-ft-show", scale=0)
    ft_msg = gr.Markdown(elem_id="wt-ft-message")
    ft_progress = gr.HTML(elem_id="wt-ft-progress")
    ft_out = gr.HTML(elem_id="wt-ft-result")
    ft_table = gr.Dataframe(
        headers=["pairing", "base", "finetuned (unscaled)", "finetuned + LiNeS (a=0.1)"],
        label="MCQ accuracy, all N (chance 1/3 at N = 2, 1/4 above)",
        interactive=False,
        wrap=True,
        elem_id="wt-ft-table",
    )
    ft_fig = gr.Plot(label="Accuracy by N: base vs finetuned, one chart per pairing", elem_id="wt-ft-fig")
    ft_report = gr.Dataframe(
        headers=["evaluation", "format", "in training distribution", "N", "chance", "base", "base 95% CI"],
        label="Separated report (text → text): each row named by its template and words, with "
        "its n, chance and 95 % CI",
        interactive=False,
        wrap=True,
        elem_id="wt-ft-report",
        max_height=2000,
    )
    ft_job = gr.State(None)  # this session's job id
    ft_done = gr.State(None)  # set to the job id by the timer once the job is done: triggers the before/after
    ft_timer = gr.Timer(2.0, active=False)

    ft_btn.click(start_finetune, [ft_job], [ft_job, ft_msg, ft_progress, ft_timer], api_name="wt_finetune")
    ft_reuse.click(reuse_finetune, None, [ft_job, ft_msg, ft_progress, ft_timer], api_name="wt_finetune_reuse")
    ft_timer.tick(
        poll_finetune, [ft_job], [ft_progress, ft_timer, ft_done], api_name="wt_finetune_poll", show_progress="hidden"
    )
    ft_view = [ft_out, ft_table, ft_fig, ft_report, results, done]
    ft_done.change(show_finetune, [ft_done, results, done], ft_view, api_name=False, **GPU_QUEUE)
    ft_show.click(check_finished, [ft_job], None, api_name=False).success(
        show_finetune, [ft_job, results, done], ft_view, api_name="wt_finetune_result", **GPU_QUEUE
    )


def _tab_links(links: list[tuple[gr.Button, str]]) -> Any:
    """The hook that wires the steps' "Open the … tab" buttons to the app's tabs."""

    def wire(tabs: gr.Tabs, hooks: dict[str, dict[str, Any]]) -> None:
        """Each "Open the … tab" button selects that tab (a button whose tab is not in the app is hidden)."""
        known = set(hooks)  # build_app lists every tab of the app there
        for btn, tab_id in links:
            if tab_id in known:
                event = btn.click(lambda t=tab_id: gr.Tabs(selected=t), None, tabs, api_name=False)
                show = hooks[tab_id].get("on_show")  # e.g. the Finetune tab starts polling when shown
                if show:
                    event.then(show["fn"], show["inputs"], show["outputs"], api_name=False)
            else:
                btn.visible = False

    return wire


def build_tab() -> dict[str, Any]:
    """Lay out the Walkthrough tab; returns the hook that wires its "open the full tab" buttons to the app's tabs."""
    steps = {s.key: s for s in wt.STEPS}
    links: list[tuple[gr.Button, str]] = []
    gr.Markdown(INTRO, elem_id="wt-intro")
    results = held_state({})  # this session's step results, for the Download panel
    done = gr.BrowserState({}, storage_key="bindlab-walkthrough-steps")  # the steps run here, kept across reloads
    for step in (_score_text_steps, _images_step, _objects_step, _grounding_step, _attention_step, _finetune_step):
        step(steps, links, results, done)
    gr.Markdown("### Take the results with you", elem_classes=["wt-step"])
    wire_export(export_panel("wt", "the steps run in this browser"), export, [results, done], api_name="wt_export")
    return {"wire": _tab_links(links)}
