"""Nothing a user supplies is ever markup (docs/architecture.md, "Rules every view follows"; issue 32 item 1): hostile ids, captions, bindings, grid
values, model ids and error messages fed into every HTML / Markdown / plotly builder of the tabs come out as text.

Fast: the builders are pure functions of plain dicts; no model loads, no browser (tests/ui/test_xss_ui.py drives the
real page)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import gradio as gr
import pytest

from bindlab.present.safe_text import html_text, md_code, md_text, message_text, plot_text

PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "\\074img src=x onerror=alert(1)\\076",
    "javascript:alert(1)",
    "[click](javascript:alert(1))",
    "![x](javascript:alert(1))",
    '"><script>alert(1)</script>',
    "</div><b onmouseover=alert(1)>x</b>",
    "**bold** `code` _em_ | a | $$x$$",
]


def inert(out: str, markdown: bool = False) -> None:
    """``out`` holds no element, event handler, link or image made from a payload (the builders' own markup is a
    few fixed tags; a payload's tags all start with one of these)."""
    text = str(out)
    assert not re.search(r"<\s*(img|svg|script|iframe)\b", text, re.IGNORECASE), text
    assert not re.search(r"<\s*b\s+on", text, re.IGNORECASE), text  # the payload's <b onmouseover=…>
    if markdown:
        assert "](" not in text, text  # no Markdown link or image: its brackets are escaped
        assert "**bold**" not in text and "`code`" not in text, text


def rendered(md: str) -> str:
    """``md`` through a CommonMark renderer (Gradio's Markdown is CommonMark + GFM, raw HTML allowed)."""
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").render(md)


# --- the helper ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("payload", PAYLOADS)
def test_each_escape_leaves_no_live_markup(payload):
    for fn in (html_text, md_text, md_code, message_text, plot_text):
        inert(fn(payload), markdown=fn in (md_text, md_code))
    assert "'" not in html_text("it's") and '"' not in html_text('say "x"')  # safe inside attribute values too


@pytest.mark.parametrize(
    "payload",
    PAYLOADS + ["a_b c*d e-f 1. x", "# not a heading", "- not a list", "12. no", "back\\slash \\[x\\]", "line\nbreak"],
)
def test_markdown_escape_renders_back_to_the_typed_text(payload):
    import html

    out = rendered(md_text(payload))
    assert out.startswith("<p>") and out.count("<p>") == 1, out  # one paragraph: no heading, list, code block
    inner = out.strip()[3:-4]
    assert "<" not in inner.replace("&lt;", ""), out  # no element at all, only text
    assert html.unescape(inner) == payload.replace("\n", " ")


def test_md_code_renders_the_text_in_a_code_span():
    out = rendered(md_code("toy:clip@<img src=x>`[x](y)`"))
    assert "<code>toy:clip@&lt;img src=x&gt;`[x](y)`</code>" in out


# --- Browse ----------------------------------------------------------------------------------------------------
def _mcq_view(p: str) -> dict:
    bindings = [(p, "cube"), ("\\074img src=x onerror=alert(1)\\076", "sphere")]
    text = f"a {p} cube and a \\074img src=x onerror=alert(1)\\076 sphere"
    cand = {
        "text": text,
        "bindings": bindings,
        "kept": [True, False],
        "role": p,
        "score": 0.5,
        "rank": 1,
        "is_answer": True,
        "image": None,
    }
    return {
        "id": p,
        "n_objects": p,
        "subset": p,
        "credit": 1.0,
        "margin": 0.1,
        "query": {"text": text, "bindings": bindings, "image": None},
        "candidates": [cand, {**cand, "role": "attr_swap"}],
    }


@pytest.mark.parametrize("payload", PAYLOADS)
def test_browse_question_card_and_side_by_side(payload):
    from bindlab.ui import browse

    view = _mcq_view(payload)
    out = browse.question_html(view)
    inert(out)
    assert out.count('<span class="bl-kept">') == 4 and out.count('<span class="bl-broken">') == 2
    assert html_text(payload) in out
    inert(browse.side_by_side_html(view, view, payload, "toy:clip@" + payload))
    unknown = {
        "n_unknown": 1,
        "n_words": 9,
        "share": 0.1,
        "query_share": 0.1,
        "questions_with_unknown": 1,
        "n_questions": 4,
        "top": [{"word": payload, "count": 1}],
    }
    s = SimpleNamespace(
        model="toy:clip@" + payload,
        pairing="tt",
        result=SimpleNamespace(summary={"unknown_words": unknown}),
        summary={
            "n": 4,
            "accuracy": 0.5,
            "ci95": [0.1, 0.9],
            "chance": 0.25,
            "vs_chance": "above",
            "by_subset": {payload: 0.5},
        },
    )
    inert(browse.summary_md(s), markdown=True)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_browse_chart_keeps_a_hostile_model_id_as_text(payload):
    """Browse's accuracy-by-N chart is SVG markup of our own; a model id in its title stays one text node."""
    import xml.etree.ElementTree as ET

    from bindlab.present.svg_figures import accuracy_by_n_svg

    rows = [{"n_objects": 2, "subset": "all", "accuracy": 0.5, "n": 4, "chance": 1 / 3}]
    out = accuracy_by_n_svg(rows, title=f"toy:clip@{payload} · tt: accuracy by N")
    root = ET.fromstring(out)  # well-formed: nothing the payload holds closed or opened an element
    tags = {el.tag.split("}")[-1] for el in root.iter()}
    assert tags <= {"svg", "text", "line", "polyline", "circle", "title"}, tags
    assert not any(a.lower().startswith("on") for el in root.iter() for a in el.attrib)
    assert any(el.text == f"toy:clip@{payload} · tt: accuracy by N" for el in root.iter())


def test_highlight_never_turns_a_binding_into_markup():
    from bindlab.ui.browse import highlight

    octal = "\\074img src=x onerror=alert(1)\\076"
    out = highlight(f"a {octal} cube", [(octal, "cube")])
    assert out == f'a <span class="bl-kept">{octal} cube</span>'  # backslashes stay backslashes
    # a binding that spells the markup built for an earlier one does not land inside it
    out = highlight("span class red cube", [("red", "cube"), ("span", "class")])
    assert out == '<span class="bl-kept">span class</span> <span class="bl-kept">red cube</span>'
    assert (
        highlight("<b>red cube</b>", [("red", "cube")], [False])
        == '&lt;b&gt;<span class="bl-broken">red cube</span>&lt;/b&gt;'
    )


# --- Grounding -------------------------------------------------------------------------------------------------
def _grounding_view(value: str) -> dict:
    return {
        "value_index": 0,
        "c": [0.2],
        "alpha": 1.0,
        "map_native": 0.5,
        "map_grounded": 0.6,
        "top1_native": 0.5,
        "top1_grounded": 0.6,
        "value": value,
        "ap_native": [0.4],
        "ap_grounded": [0.5],
        "alpha_star": [None],
        "top_precision": 0.5,
    }


@pytest.mark.parametrize("payload", PAYLOADS)
def test_grounding_summary_and_figures(payload):
    from bindlab.present import grounding_figures as gf
    from bindlab.ui import grounding

    inert(grounding.summary_html(_grounding_view(payload), payload, "toy:clip@" + payload, 0.5))
    fig = gf.margin_curve([0.0, 1.0], [-0.1, 0.1], 0.5, 0.4, 0.5, payload)
    inert(fig.layout.title.text)
    bars = gf.ap_bars([payload, "plain"], [0.1, 0.2], [0.3, 0.4], 1.0, payload)
    for t in bars.data:
        inert(" ".join(map(str, t.x)))
    plane = gf.grounding_plane(
        {
            "x": [0.1, 0.2],
            "y": [0.1, 0.3],
            "positive": [True, False],
            "q": [1, 0],
            "q_alpha": [1, 1],
            "d": [0, 1],
            "labels": [payload, "x" + payload],
        },
        payload,
        1.0,
    )
    inert(" ".join(str(t.name) for t in plane.data) + plane.layout.title.text + plane.layout.xaxis.title.text)


# --- Walkthrough -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("payload", PAYLOADS)
def test_walkthrough_step_texts(payload):
    from bindlab.ui import walkthrough as w

    model = "toy:clip@" + payload
    part = {"sizes": [2, 3], "accuracy": 0.5, "ci95": [0.2, 0.8], "n": 10}
    objects = {"model": model, "pairing": "tt", "small": part, "large": part, "rows": [], "chance": 0.25}
    inert(w.objects_md(objects))
    attention = {
        "model": model,
        "peak": 0.1,
        "last": 0.05,
        "first": 0.0,
        "n_captions": 3,
        "peak_layer": 1,
        "layers": [0, 1, 2],
    }
    inert(w.attention_md(attention))
    inert(
        w.progress_html(
            {
                "id": payload,
                "state": payload,
                "step": payload,
                "total_steps": payload,
                "phase": payload,
                "message": payload,
            }
        )
    )
    inert(w.failed_html({"error": payload}))
    inert(
        w.bow_md(
            {
                "model": model,
                "by_n": {},
                "n_questions": 1,
                "tie_share": 0.5,
                "n_swaps": 2,
                "accuracy": 0.3,
                "chance": 0.25,
            }
        )
    )
    r = {
        "model": model,
        "factor": payload,
        "value": payload,
        "alpha": 1.0,
        "ap_native": 0.4,
        "ap_grounded": 0.5,
        "values": [payload],
        "map_native": 0.4,
        "map_grounded": 0.5,
        "ap_prototype": 0.6,
        "map_prototype": 0.6,
        "margin_native": -0.1,
        "margin_grounded": 0.1,
        "alpha_star": None,
        "c": 0.2,
        "alpha_validation": 1.0,
        "n_images": {"test": 3},
    }
    inert(w.grounding_md(r))


def test_walkthrough_step_figures_escape_the_model_id():
    from bindlab.present import walkthrough_figures as wf

    model = "toy:clip@<img src=x onerror=alert(1)>"
    rows = [{"n_objects": 2, "subset": "all", "accuracy": 0.5, "n": 3}]
    inert(wf.objects_figure({"model": model, "pairing": "tt", "rows": rows, "chance": 0.25}).layout.title.text)
    curve = {"layers": [0, 1], "margin_mean": [0.1, 0.0], "ci_low": [0.0, -0.1], "ci_high": [0.2, 0.1]}
    res = {"model": model, "sets": {"<svg onload=alert(1)>": curve}, "n_captions": 2}
    fig = wf.attention_figure(res)
    inert(fig.layout.title.text + " ".join(str(t.name) for t in fig.data))


# --- Pairs, Compare, Attention, Map, Finetune --------------------------------------------------------------------
@pytest.mark.parametrize("payload", PAYLOADS)
def test_pairs_matrix_and_summary(payload):
    from bindlab.ui import pairs

    view = {
        "scores": {"c0_i0": 0.3, "c0_i1": 0.2, "c1_i0": 0.1, "c1_i1": 0.4},
        "base": {"caption": payload},
        "foil": {"caption": payload},
        "pixels_changed": 0.1,
        "image_cosine": 0.9,
        "id": payload,
        "scene_id": payload,
        "edit_type": payload,
        "edit_category": payload,
        "verbosity": payload,
        "edit": {"from": payload},
        "i2t": True,
        "t2i": False,
        "group": False,
        "margin": 0.1,
    }
    inert(pairs.matrix_html(view))
    summary = {
        "overall": {
            "i2t": 0.5,
            "t2i": 0.5,
            "group": 0.3,
            "i2t_ci95": [0.3, 0.7],
            "t2i_ci95": [0.3, 0.7],
            "group_ci95": [0.1, 0.5],
        },
        "scene_edit_split": {"counts": {"scene_hard_only": 1, "edit_hard_only": 1, "both": 1, "scenes": 3}},
        "controls": {"within_pair_image_cosine": {"mean": 0.9}, "across_scene_image_cosine": 0.5},
        "levels": [payload],
    }
    inert(
        pairs.summary_md(SimpleNamespace(model="toy:clip@" + payload, pairs=[1], rows=[{}], summary=summary)),
        markdown=True,
    )


@pytest.mark.parametrize("payload", PAYLOADS)
def test_compare_status_and_figures(payload):
    from bindlab.present import compare_figures as cf
    from bindlab.ui import compare

    summary = {
        "models": [payload],
        "suite": ["mcq", f"benchmark:{payload}"],
        "sort_by": payload,
        "leader": payload,
        "agreement": {"mean_spearman": None},
        "from_cache": [payload],
    }
    inert(compare.status_markdown(SimpleNamespace(summary=summary, notes=[payload])), markdown=True)
    fig = cf.by_n_figure([{"model": payload, "pairing": "tt", "n_objects": 2, "accuracy": 0.5, "n": 3}])
    inert(" ".join(f"{t.name} {t.hovertemplate}" for t in fig.data))
    fig = cf.by_edit_type_figure(
        [{"model": payload, "edit_type": payload, "n": 2, "i2t": 0.5, "t2i": 0.5, "group": 0.5}]
    )
    inert(" ".join(f"{t.name} {t.hovertemplate} {' '.join(t.x)}" for t in fig.data))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_attention_summary_and_heatmap(payload):
    from bindlab.present import attention_figures as af
    from bindlab.ui import attention

    res = {
        "model": "toy:clip@" + payload,
        "sets": {payload: {"margin_mean": [0.1, 0.2], "n_captions": 2, "n_skipped": 0, "layers": [0, 1]}},
        "compare": {"model": payload, "ratio": {payload: {"note": payload}}},
        "depth_note": payload,
        "direction": payload,
    }
    inert(attention._summary(res), markdown=True)
    fig = af.attention_heatmap([payload, "cube"], [[0.5, 0.5], [0.5, 0.5]], [])
    inert(" ".join(fig.data[0].x))
    curves = [
        {"label": payload, "layers": [0, 1], "margin_mean": [0.1, 0.2], "ci_low": [0, 0.1], "ci_high": [0.2, 0.3]}
    ]
    fig = af.margin_curves(curves)
    inert(" ".join(f"{t.name} {t.hovertemplate}" for t in fig.data))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_map_point_tables_status_and_figure(payload, monkeypatch):
    import numpy as np

    from bindlab.present.map_figure import map_figure
    from bindlab.studies import map as ms
    from bindlab.ui import embedding_map as em

    p = {
        "id": payload,
        "question": payload,
        "caption": payload,
        "role": payload,
        "modality": "text",
        "n_objects": 2,
        "subset": payload,
        "correct": True,
        "image": None,
    }
    inert(em.point_markdown(p))
    inert(
        em.neighbours_html(
            [
                {
                    "rank": 1,
                    "cosine": 0.9,
                    "role": payload,
                    "modality": payload,
                    "same_question": True,
                    "caption": payload,
                }
            ]
        )
    )
    inert(
        em.selection_html(
            {"accuracy": 0.5, "roles": {payload: 1}, "n_points": 1, "n_questions": 1, "n_correct": 1, "n_answers": 2},
            [{**p, "n_objects": 2}],
        )
    )
    monkeypatch.setattr(ms, "summary_line", lambda m: f"{m.model}: 1 point")
    state = {"map": SimpleNamespace(model="toy:clip@" + payload, notes=[payload], points=[p]), "shown": "pca"}
    inert(em._status(state), markdown=True)
    inert(em._search_note(state, payload), markdown=True)
    fig = map_figure([p], np.zeros((1, 2)), "role", highlight=[0], highlight_label=payload, joined=payload)
    inert(" ".join(f"{t.name} {t.text}" for t in fig.data))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_finetune_status_and_table(payload):
    from bindlab.ui import finetune

    info = {
        "status": {
            "id": payload,
            "model_id": "lora:" + payload,
            "base_model": "toy:clip@" + payload,
            "state": payload,
            "message": payload,
            "error": payload,
        },
        "result": None,
    }
    inert(finetune.status_md(info), markdown=True)
    inert(finetune.md_table([{"model": payload, "acc": 0.5}]), markdown=True)
    inert(finetune.progress_html({"state": "running"}, {"phase": payload, "step": payload, "total_steps": payload}))


# --- error messages, exports -----------------------------------------------------------------------------------
@pytest.mark.parametrize("payload", PAYLOADS)
def test_error_messages_quote_the_input_as_text(payload):
    from bindlab.ui.common import friendly

    @friendly
    def refuse(x: str) -> None:
        raise ValueError(f"model {x!r} is not known")

    with pytest.raises(gr.Error) as e:
        refuse(payload)
    inert(str(e.value.message))


def test_an_exported_figure_holds_no_markup_from_a_model_id(tmp_path):
    from bindlab.present.exports import write_figures
    from bindlab.present.walkthrough_figures import objects_figure

    model = "toy:clip@<img src=x onerror=alert(1)>"
    fig = objects_figure(
        {
            "model": model,
            "pairing": "tt",
            "chance": 0.25,
            "rows": [{"n_objects": 2, "subset": "all", "accuracy": 0.5, "n": 3}],
        }
    )
    written = write_figures({tmp_path / "step4": fig}, ["html"])
    page = written.paths[0].read_text(encoding="utf-8")
    assert "<img src=x" not in page and "onerror=alert(1)>" not in page
