"""The attention study: validated requests, and the ``attention`` command and the Attention tab giving the same
numbers (bootstrap seed included) because both call :func:`bindlab.studies.attention.run_attention`."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bindlab.cli import main
from bindlab.present import numbers
from bindlab.studies import attention as study


def _noop(*args, **kwargs):
    return None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"limit": -1}, r"--limit must be 0 or more, got -1 \(0 means all\)"),  # the run options' one message
        ({"limit": 2.5}, "--limit must be a whole number, got 2.5"),
        ({"direction": "sideways"}, "sideways"),
        ({"seed": -3}, "--seed must be between 0 and .*, got -3"),
        ({"n_boot": 0}, "n_boot must be at least 1, got 0"),
        ({"model": " "}, "model is empty"),
    ],
)
def test_request_names_the_bad_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        study.AttentionRequest(**{"model": "minilm", **kwargs})


def test_caption_length_is_checked_before_any_model_loads():
    long = " ".join(["red cube"] * 300)  # 600 words
    with pytest.raises(ValueError, match="600 words .* the limit is 512 words"):
        study.CaptionRequest("no-such-backend:x", long, "red:cube, blue:ball")  # the bad id is never reached
    with pytest.raises(ValueError, match="characters; the limit"):
        study.CaptionRequest("minilm", "x" * (study.MAX_CAPTION_CHARS + 1), "red:cube, blue:ball")
    with pytest.raises(ValueError, match="is not attribute:object"):
        study.CaptionRequest("minilm", "a red cube", "red cube")
    with pytest.raises(ValueError, match="type a caption"):
        study.CaptionRequest("minilm", "  ", "red:cube")
    ok = study.CaptionRequest("", " a red cube and a blue ball ", "red:cube; blue:ball", layer=2.0)
    assert (ok.model, ok.text, ok.bindings, ok.layer) == (
        "minilm",
        "a red cube and a blue ball",
        [["red", "cube"], ["blue", "ball"]],
        2,
    )


def test_cli_and_tab_give_the_same_margins(tmp_path, small_benchmark):
    from bindlab.ui import attention as tab

    path = str(small_benchmark[0])
    out, items = tmp_path / "cli.json", tmp_path / "items.jsonl"
    assert (
        main(
            [
                "attention",
                "--model",
                "minilm",
                "--data",
                path,
                "--limit",
                "6",
                "--seed",
                "7",
                "--out",
                str(out),
                "--per-item",
                str(items),
            ]
        )
        == 0
    )
    cli = json.loads(out.read_text())
    summary, _, _, stored, _, result = tab.compute("minilm", "", path, 6, "later_to_earlier", 7, progress=_noop)
    assert result.summary == {k: v for k, v in cli.items() if k not in ("provenance", "primary_metric", "notes")}
    assert result.provenance["seed"] == cli["provenance"]["seed"] == 7
    assert cli["primary_metric"] == "peak_margin" and cli["peak_margin"] == max(cli["margin_mean"])
    assert f"peak margin {numbers.signed(cli['peak_margin'])}" in summary  # 3 decimals, like every margin shown
    assert [json.loads(line) for line in items.read_text().splitlines()] == result.rows
    assert [s["text"] for s in stored] == [r["text"] for r in result.rows]
    # another seed moves the bootstrap interval, never the mean: the seed really reaches the bootstrap
    other = tab.compute("minilm", "", path, 6, "later_to_earlier", 8, progress=_noop)[-1]
    assert other.summary["margin_mean"] == cli["margin_mean"] and other.summary["ci_low"] != cli["ci_low"]


def test_tab_caption_view_is_the_study_view(small_benchmark):
    from bindlab.ui import attention as tab

    text, bindings = (
        "a polka-dot teddy-bear, a red cube, and a striped yo-yo",
        "polka-dot:teddy-bear, red:cube, striped:yo-yo",
    )
    fig, info, grid, item = tab.analyse_text("minilm", "later_to_earlier", text, bindings, 3)
    view = study.caption_view(study.CaptionRequest("minilm", text, bindings, layer=3))
    shown = re.search(r"id='at-caption-margin'>([^<]+)<", info).group(1)
    assert shown == numbers.signed(view["margins"][3]) and view["layer"] == 3
    assert len(fig.layout.shapes) == len(view["cells"]) == 9 and item["bindings"][1] == ["red", "cube"]
    assert grid.data[0].z.shape == (6, 12) == np.asarray(view["head_margins"]).shape  # MiniLM: 6 layers x 12 heads
    np.testing.assert_allclose(np.asarray(view["head_margins"]).mean(axis=1), view["margins"], atol=1e-9)
    _, info, _ = tab.redraw("minilm", "later_to_earlier", item, 40)  # MiniLM has 6 layers: the last one is shown
    assert "layer 40 does not exist; showing 5" in info


def test_a_grid_cell_shows_that_heads_word_map():
    from bindlab.ui import attention as tab

    item = {"text": "a red cube and a blue ball", "bindings": [["red", "cube"], ["blue", "ball"]], "id": "x"}
    fig, info, grid, layer, head = tab.pick_cell("minilm", "later_to_earlier", item, "2,7")
    view = study.caption_view(study.CaptionRequest("minilm", item["text"], item["bindings"], layer=2, head=7))
    mean = study.caption_view(study.CaptionRequest("minilm", item["text"], item["bindings"], layer=2))
    np.testing.assert_allclose(np.asarray(fig.data[0].z), view["matrix"])
    assert not np.allclose(view["matrix"], mean["matrix"]) and layer["value"] == 2 and head == "7"
    assert "head 7" in fig.layout.title.text and "id='at-head-shown'>7<" in info
    assert [s.x0 for s in grid.layout.shapes] == [6.5]  # the clicked cell is outlined
    import gradio as gr

    with pytest.raises(gr.Error, match="heads 0 to 11"):
        tab.pick_cell("minilm", "later_to_earlier", item, "2,12")
    with pytest.raises(gr.Error, match="is not 'layer,head'"):
        tab.pick_cell("minilm", "later_to_earlier", item, "two")


def test_curves_of_models_with_different_layer_counts_share_a_depth_axis():
    from bindlab.present.attention_figures import margin_curves

    a = {"label": "six", "layers": list(range(6)), "margin_mean": [0.1] * 6, "ci_low": [0.0] * 6, "ci_high": [0.2] * 6}
    b = {"label": "three", "layers": [0, 1, 2], "margin_mean": [0.3] * 3, "ci_low": [0.2] * 3, "ci_high": [0.4] * 3}
    fig = margin_curves([a, b])
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert list(lines[0].x) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0]) and list(lines[1].x) == [0, 0.5, 1.0]
    assert "relative depth" in fig.layout.xaxis.title.text and "layer counts differ" in fig.layout.title.text
    same = margin_curves(
        [
            a,
            {
                **b,
                "label": "six too",
                "layers": list(range(6)),
                "margin_mean": [0.3] * 6,
                "ci_low": [0.2] * 6,
                "ci_high": [0.4] * 6,
            },
        ]
    )
    assert list(same.data[1].x) == list(range(6)) and "layer (0 = first" in same.layout.xaxis.title.text


def test_tab_errors_are_messages():
    import gradio as gr

    from bindlab.ui import attention as tab

    with pytest.raises(gr.Error, match="0 or more, got -2"):
        tab.compute("minilm", "", "", -2, "later_to_earlier", 0, progress=_noop)
    with pytest.raises(gr.Error, match="the limit is 512 words"):
        tab.analyse_text("minilm", "later_to_earlier", "word " * 600, "red:cube, blue:ball", 0)
    with pytest.raises(gr.Error, match="at least two objects"):
        tab.analyse_text("minilm", "later_to_earlier", "a red cube", "red:cube", 0)


def test_compare_with_a_model_of_fewer_layers_uses_relative_depth(small_benchmark):
    """MiniLM (6 layers) against toy:clip (3 layers): both curves on a [0, 1] depth axis, and the tab says so."""
    from bindlab.ui import attention as tab

    summary, fig, *_, result = tab.compute(
        "minilm", "toy:clip", str(small_benchmark[0]), 4, "later_to_earlier", 0, progress=_noop
    )
    curves = result.figures_data["curves"]
    assert [len(c["layers"]) for c in curves] == [6, 3] and curves[1]["depth"] == [0.0, 0.5, 1.0]
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [list(t.x) for t in lines] == [pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1]), [0.0, 0.5, 1.0]]
    assert "layer counts differ" in fig.layout.title.text and "relative depth" in fig.layout.xaxis.title.text
    assert "layer counts differ" in summary and "toy" in summary


def test_typed_bindings_are_capped_and_many_outlines_draw_at_once():
    """A typed bindings box holds at most the objects-per-scene cap; the heatmap outlines its cells in one layout
    assignment (per-cell add_shape was quadratic: 20 bindings took minutes)."""
    import numpy as np

    from bindlab.config import limits
    from bindlab.present.attention_figures import attention_heatmap
    from bindlab.studies.attention import CaptionRequest

    cap = limits().max_n_objects
    many = ", ".join(f"red:cube{i}" for i in range(cap + 1))
    with pytest.raises(ValueError, match="above the cap"):
        CaptionRequest(model="minilm", text="a red cube", bindings=many)
    pairs = [(i, j, i == j) for i in range(20) for j in range(20)]
    fig = attention_heatmap([f"w{i}" for i in range(40)], np.zeros((40, 40)), pairs)
    assert len(fig.layout.shapes) == 400
