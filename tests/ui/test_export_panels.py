"""Every Download panel (issue 30, item 3): wired so that the ticked formats reach its callback, and each tab's
download holds every table and chart its page shows, plus ``<prefix>_all.zip`` holding the same files, byte for byte.

The callbacks are called as the app calls them (``tab.export(*inputs, formats)``), on tiny data; the Finetune tab's
download after *Compare* is in tests/studies/test_finetune.py (it needs a finished job), the Walkthrough's in
tests/test_walkthrough.py, and the browser side in tests/ui/test_exports_ui.py.
"""

from __future__ import annotations

import inspect
import json
import zipfile
from pathlib import Path

import pytest

from bindlab.cli import main

FORMATS = ["csv", "json", "jsonl", "html"]  # no PNG/SVG: kaleido takes seconds per figure


def _noop(*_a, **_k):
    return None


def _files(paths: list[str]) -> dict[str, Path]:
    """The download's files by name; checks that the last one is the zip and that it holds every other file."""
    files = [Path(p) for p in paths]
    assert files[-1].name.endswith("_all.zip"), [f.name for f in files]
    with zipfile.ZipFile(files[-1]) as z:
        assert z.namelist() == [f.name for f in files[:-1]]
        assert all(z.read(f.name) == f.read_bytes() for f in files[:-1])
    return {f.name: f for f in files}


def test_every_panel_hands_its_inputs_and_then_the_formats_to_its_callback():
    """``wire`` calls ``fn(*inputs, formats)``: the formats box must land on the parameter named ``formats`` (the
    Attention panel once passed the Head box there, so its download always failed)."""
    from bindlab.ui.app import build_app

    demo = build_app()
    panels = {f.api_name: f for f in demo.fns.values() if (f.api_name or "").endswith("_export")}
    assert set(panels) == {
        "browse_export",
        "pairs_export",
        "grounding_export",
        "attention_export",
        "ft_export",
        "map_export",
        "compare_export",
        "wt_export",
    }
    for name, f in panels.items():
        params = [p for p, v in inspect.signature(f.fn).parameters.items() if p not in ("request", "progress")]
        assert params.index("formats") == len(f.inputs) - 1, name
        assert f.inputs[-1].elem_id.endswith("-export-formats"), name
        assert [o.elem_id for o in f.outputs][0].endswith("-export-files"), name


def test_browse_download_holds_the_question_on_screen_and_model_b(small_benchmark):
    from bindlab.ui import browse as tab

    path, qs = small_benchmark
    qid = qs[5].id
    files = _files(tab.export(str(path), "minilm", "tt", qid, 4, "bow", FORMATS)[0])
    assert {
        "mcq_summary.csv",
        "mcq_accuracy_by_n.csv",
        "mcq_scores.csv",
        "mcq_items.jsonl",
        "mcq_accuracy_by_n.html",
        "mcq_question.csv",
        "mcq_topk.csv",
        "mcq_all.zip",
    } <= set(files)
    import pandas as pd

    question = pd.read_csv(files["mcq_question.csv"])
    assert set(question["question"]) == {qid} and len(question) == 10  # query + 4 candidates, for each model
    assert len(set(question["model"])) == 2  # model A's rows, then model B's
    assert len(pd.read_csv(files["mcq_topk.csv"])) == 4
    # no question shown: the set's files only
    plain = _files(tab.export(str(path), "minilm", "tt", None, 4, "", FORMATS)[0])
    assert "mcq_question.csv" not in plain


@pytest.fixture(scope="module")
def pairs_setup(tmp_path_factory):
    from bindlab.data.composet import generate_composet
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("pairs-panel")
    data = generate_composet(root / "cs", scenes=2, foils_per_scene=15, seed=1, size=64, workers=1)
    return str(data), build_tiny("hf-clip", root / "a"), build_tiny("hf-clip", root / "b")


def test_pairs_download_holds_the_two_model_table_and_chart(pairs_setup):
    from bindlab.ui import pairs as tab

    data, model, other = pairs_setup
    files = _files(tab.export(data, model, "short", other, FORMATS)[0])
    assert {
        "pairs_scores.csv",
        "pairs_by_edit_type.csv",
        "pairs_by_edit_type.html",
        "pairs_items.jsonl",
        "pairs_two_models.csv",
        "pairs_two_models_long.csv",
        "pairs_two_models.html",
    } <= set(files)
    alone = _files(tab.export(data, model, "short", "none", FORMATS)[0])
    assert not any("two_models" in n for n in alone)


def test_attention_download_works_with_the_head_box_and_holds_the_caption_on_screen(small_benchmark):
    from bindlab.ui import attention as tab

    path, _ = small_benchmark
    out = tab.compute("minilm", "", str(path), 3, "later_to_earlier", progress=_noop)
    result, stored = out[-1], out[3]
    current = stored[0]
    for head in ("", "1"):  # empty = the mean over heads
        files = _files(tab.export(result, "minilm", "later_to_earlier", current, 2, head, FORMATS)[0])
        assert {
            "attention_margins.csv",
            "attention_captions.csv",
            "attention_margins.html",
            "attention_heatmap.html",
            "attention_heads.html",
            "attention_caption_heads.csv",
            "attention_caption_layers.csv",
        } <= set(files)
    files = _files(tab.export(result, "minilm", "later_to_earlier", None, 2, "", ["csv"])[0])
    assert "attention_heatmap.html" not in files and "attention_margins.csv" in files


def test_map_download_holds_neighbours_selection_and_the_marks_on_screen(small_benchmark):
    from bindlab.ui import embedding_map as tab

    path, _ = small_benchmark
    _, state, *_ = tab.make_map(str(path), "bow", [], 4, 0, "role", "pca", progress=_noop)
    point = state["map"].points[0]["id"]
    files = _files(tab.export(state, "role", "red", True, point, json.dumps([0, 1, 2]), FORMATS)[0])
    assert {"map_points.csv", "map_summary.csv", "map_pca.html", "map_neighbours.csv", "map_selection.csv"} <= set(
        files
    )
    import pandas as pd

    assert len(pd.read_csv(files["map_selection.csv"])) == 3
    assert len(pd.read_csv(files["map_neighbours.csv"])) == tab.NEIGHBOURS_K


def test_compare_download_holds_the_diff_of_the_models_chosen(small_benchmark):
    from bindlab.studies import compare as cs
    from bindlab.ui import compare as tab

    path, _ = small_benchmark
    out = tab.run(["minilm", "bow"], ["mcq"], "tt", str(path), "", "", progress=_noop)
    result = out[-1]
    a, b = result.summary["diff_models"]
    files = _files(tab.export(result, b, a, FORMATS)[0])  # the other direction than the default diff
    assert {"compare_models_leaderboard.csv", "compare_models_by_n.csv", "compare_models_by_n.html"} <= set(files)
    want = cs.question_diff(result.rows, b, a)
    if want:
        import pandas as pd

        got = pd.read_csv(files["compare_models_question_diff.csv"])
        assert list(got["id"]) == [r["id"] for r in want] and set(got["model_a"]) == {b}
    else:
        assert "compare_models_question_diff.csv" not in files


@pytest.fixture(scope="module")
def grounding_setup(tmp_path_factory):
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("ground-panel")
    model = build_tiny("hf-clip", root / "tiny-clip")
    assert (
        main(
            [
                "generate",
                "factors",
                "--out",
                str(root / "grid"),
                "--shapes",
                "3",
                "--hues",
                "4",
                "--patterns",
                "3",
                "--contexts",
                "3",
                "--replicas",
                "2",
                "--size",
                "32",
                "--workers",
                "1",
            ]
        )
        == 0
    )
    return str(root / "grid"), model


def test_grounding_download_holds_top_images_and_the_experiments_run(grounding_setup):
    from bindlab.ui import grounding as tab

    grid, model = grounding_setup
    key, _payload, value, *_ = tab.load(grid, model, "hue", 1.0, progress=_noop)
    value = value["value"]
    sweep = {
        "rows": [
            {
                "gamma": g,
                "image_prototype": 0.9,
                "native": 0.5,
                "matched": 0.6 + g / 10,
                "gain": 0.1,
                "alpha": 1.0,
                "cosine": 1.0,
            }
            for g in (0.0, 0.5, 1.0)
        ]
    }
    alignment = {
        **{k: key[k] for k in ("data", "model", "factor")},
        "rows": [{"map": "factor", "readout": "native q", "macro-mAP": 0.5, "top-1": 0.4}],
    }
    files = _files(tab.export(key, value, 1.0, None, sweep, alignment, FORMATS)[0])
    assert {
        "grounding_summary.csv",
        "grounding_per_value.csv",
        "grounding_margin_curves.csv",
        "grounding_margin_curve.html",
        "grounding_plane.html",
        "grounding_ap_hue.html",
        "grounding_top_images.csv",
        "grounding_sweep.csv",
        "grounding_sweep.html",
        "grounding_alignment.csv",
    } <= set(files)
    # an alignment of another factor is not what the page's loaded factor shows: left out
    stale = {**alignment, "factor": "shape"}
    assert "grounding_alignment.csv" not in _files(tab.export(key, value, 1.0, None, None, stale, ["csv"])[0])


def test_walkthrough_download_is_one_zip_too(small_benchmark):
    from bindlab.studies import walkthrough as wt
    from bindlab.ui import walkthrough as tab

    path, _ = small_benchmark
    files = _files(tab.export({"bow": wt.step_bag_of_words(path)}, {}, FORMATS)[0])
    assert {"walkthrough_step1_bow.csv", "walkthrough_step1_example.csv", "walkthrough_all.zip"} <= set(files)


def test_walkthrough_download_after_a_reload_rebuilds_the_steps_the_browser_remembers():
    """A reload empties the page's results; the browser's record of the steps run (``done``) still holds step 1, so
    the download rebuilds it (remembered by the server or from its caches) instead of refusing; a record that can no
    longer be run is named in the note, and the rest is still delivered."""
    from bindlab.studies import walkthrough as wt
    from bindlab.ui import walkthrough as tab

    paths, note = tab.export({}, {"bow": {}, "grounding": {"alpha": "not a number"}}, FORMATS)
    files = _files(paths)
    bow = wt.run_step("bow")  # the same embedded default; remembered, so not computed again
    assert wt.run_step("bow") is bow
    import pandas as pd

    assert pd.read_csv(files["walkthrough_step1_bow.csv"]).loc[0, "accuracy"] == pytest.approx(bow["accuracy"])
    assert not any("step5" in n for n in files)
    assert "Not rebuilt" in note and "step grounding" in note and "not a float" in note
