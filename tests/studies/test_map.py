"""The Map study: one request, one ``run_map``, the same points and coordinates from the ``map`` command and from
the Map tab's callbacks; a bad request is refused before anything is embedded."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bindlab.cli import main
from bindlab.studies import map as ms


def _noop_progress(*_args, **_kwargs):
    return None


def test_cli_and_tab_give_the_same_points_and_coordinates(small_benchmark, tmp_path):
    from bindlab.ui import embedding_map as tab

    path, _ = small_benchmark
    out = tmp_path / "map.html"
    assert (
        main(
            [
                "map",
                "--model",
                "bow",
                "--data",
                str(path),
                "--n-objects",
                "2,3",
                "--limit",
                "6",
                "--seed",
                "4",
                "--method",
                "pca",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    cli = json.loads(out.with_suffix(".json").read_text())

    _, state, status, *cleared = tab.make_map(
        str(path), "bow", ["2", "3"], 6.0, 4.0, "role", "pca", progress=_noop_progress
    )
    assert cleared == ["", "", ""]  # a new map clears the clicked point and the selection of the old one
    m = state["map"]
    assert [p["id"] for p in m.points] == [p["id"] for p in cli["points"]]
    np.testing.assert_array_equal(
        np.asarray(state["layouts"]["pca"], dtype=np.float64), [[p["x"], p["y"]] for p in cli["points"]]
    )
    assert [p["correct"] for p in m.points] == [p["correct"] for p in cli["points"]]
    assert "6 questions, 30 points" in status

    # and the study itself, called directly with the same inputs
    res = ms.run_map(ms.MapRequest(model="bow", data=str(path), n_objects="2,3", limit=6, seed=4, method="pca"))
    assert res.feature == "map" and res.rows == cli["points"]
    assert res.provenance["settings"] == cli["provenance"]["settings"]
    assert res.summary["n_points"] == 30 and res.summary["correct_share"] == {"text": 0.0}


def test_cli_and_tab_export_the_same_points_table(small_benchmark, tmp_path):
    import pandas as pd

    from bindlab.ui import embedding_map as tab

    path, _ = small_benchmark
    folder = tmp_path / "export"
    assert (
        main(
            [
                "map",
                "--model",
                "bow",
                "--data",
                str(path),
                "--limit",
                "4",
                "--method",
                "pca",
                "--out",
                str(tmp_path / "map.html"),
                "--export",
                str(folder),
                "--export-formats",
                "csv",
            ]
        )
        == 0
    )
    _, state, *_ = tab.make_map(str(path), "bow", [], 4, 0, "role", "pca", progress=_noop_progress)
    files, _ = tab.export(state, "role", formats=["csv"])
    from_tab = next(f for f in files if f.endswith("map_points.csv"))
    pd.testing.assert_frame_equal(pd.read_csv(from_tab), pd.read_csv(folder / "map_points.csv"))
    pd.testing.assert_frame_equal(
        pd.read_csv(next(f for f in files if f.endswith("map_summary.csv"))), pd.read_csv(folder / "map_summary.csv")
    )


def test_a_prepared_map_is_laid_out_again_without_re_embedding(small_benchmark, tmp_path, monkeypatch):
    path, _ = small_benchmark
    request = ms.MapRequest(model="bow", data=str(path), limit=5, method="pca")
    data = ms.prepare_map(request)
    monkeypatch.setattr(ms, "prepare_map", lambda *a, **k: pytest.fail("re-embedded a prepared map"))
    first = ms.run_map(request, prepared=data, cache_folder=tmp_path)
    again = ms.run_map(request, prepared=data, cache_folder=tmp_path)
    assert not first.summary["from_cache"] and again.summary["from_cache"]
    np.testing.assert_array_equal(first.figures_data["xy"], again.figures_data["xy"])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"limit": 0}, "limit"),
        ({"limit": ms.MAX_LIMIT + 1}, f"1 to {ms.MAX_LIMIT}"),
        ({"limit": 2.5}, "whole number"),
        ({"limit": math.nan}, "whole number"),
        ({"min_dist": math.nan}, "min.dist must be a finite number"),
        ({"min_dist": math.inf}, "min.dist must be a finite number"),
        ({"min_dist": 1.5}, "min_dist must be between 0 and 1"),
        ({"n_neighbors": 1}, "n.neighbors must be between 2 and"),
        ({"n_neighbors": 100_000}, "n.neighbors must be between 2 and"),
        ({"seed": 2**32}, "seed must be between 0 and"),
        ({"seed": -1}, "seed"),
        ({"method": "tsne"}, "choose from"),
        ({"color": "hue"}, "choose from"),
        ({"metric": "hamming"}, "unknown metric"),
        ({"n_objects": "two"}, "sizes"),
        ({"model": "nope:x"}, "unknown encoder backend 'nope'"),
    ],
)
def test_bad_requests_are_refused_before_any_work(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ms.MapRequest(**kwargs)


def test_request_defaults_and_coercion():
    r = ms.MapRequest(model="  ", n_objects=["3", "2"], limit=60.0, seed=3.0)
    assert r.model == "minilm" and r.n_objects == (2, 3) and r.limit == 60 and r.seed == 3
    assert ms.MapRequest(n_objects="all").n_objects is None
    assert r.settings()["n_objects"] == [2, 3] and r.params.seed == 3


def test_a_missing_file_is_one_clear_error(tmp_path, capsys):
    assert (
        main(
            [
                "map",
                "--model",
                "bow",
                "--data",
                str(tmp_path / "none.jsonl"),
                "--method",
                "pca",
                "--out",
                str(tmp_path / "m.html"),
            ]
        )
        == 2
    )
    assert "file not found" in capsys.readouterr().err
    assert main(["map", "--model", "bow", "--limit", "0", "--method", "pca", "--out", str(tmp_path / "m.html")]) == 2
    assert "limit" in capsys.readouterr().err


def test_neighbours_search_and_selection_in_the_tab(small_benchmark):
    from bindlab.analysis.embedding_map import nearest_neighbours
    from bindlab.ui import embedding_map as tab

    path, _ = small_benchmark
    _, state, *_ = tab.make_map(str(path), "minilm", [], 4, 0, "role", "pca", progress=_noop_progress)
    m = state["map"]
    point = m.points[7]["id"]
    rows = ms.point_neighbours(m, point, k=5)
    want = nearest_neighbours(ms.map_vectors(m), 7, k=5)
    assert [r["id"] for r in rows] == [m.points[j]["id"] for j, _ in want] and point not in [r["id"] for r in rows]
    assert all(a["cosine"] >= b["cosine"] for a, b in zip(rows, rows[1:], strict=False))
    _, _, near = tab.select_point(state, point)
    assert near.count("<tr>") == 1 + tab.NEIGHBOURS_K and "full embedding space" in near

    # search rings the matches and says how many; an unmatched search says so
    word = m.points[0]["caption"].split()[-1]
    fig, note = tab.recolor(state, "role", word)
    hits = ms.search_points(m.points, word)
    assert fig.data[-1].name.startswith("search") and len(fig.data[-1].x) == len(hits) and f"**{len(hits)}**" in note
    assert "no caption contains" in tab.recolor(state, "role", "qqqq")[1]
    # a search past the cap is one clear toast naming the cap, not a generic error
    import gradio as gr

    with pytest.raises(gr.Error, match="search: at most .* characters"):
        tab.recolor(state, "role", "red " * 5000)
    # joining the clicked point's question draws lines from its query to its 4 candidates
    fig, _ = tab.recolor(state, "role", "", True, point)
    assert next(t for t in fig.data if t.mode == "lines").x.count(None) == 4

    # a selection lists its points with the model's accuracy on their questions
    sel = tab.show_selection(state, "[0, 1, 2, 3, 4, 5]")
    summary, listed = ms.selected_points(m, range(6))
    assert "id='map-sel-count'>6<" in sel and sel.count("<tr>") == 1 + 6 and summary["n_questions"] == 2
    assert f"= <b>{summary['accuracy']:.0%}</b>" in sel and listed[0]["id"] == m.points[0]["id"]
    assert tab.show_selection(state, "[]") == ""
    import gradio as gr

    with pytest.raises(gr.Error, match="not one of the map's"):
        tab.show_selection(state, "[99999]")


# --- a session's map keeps no vectors; what they served is the same read back from the embedding cache ------------
def _same_neighbours_as_with_the_vectors(light, full, k):
    """Every point's neighbour rows from the map without vectors equal the old computation on the kept vectors."""
    assert light.vectors is None and full.vectors is not None
    np.testing.assert_array_equal(ms.map_vectors(light), full.vectors)  # the same float32 values, bit for bit
    for p in full.points:
        assert ms.point_neighbours(light, p["id"], k) == ms.point_neighbours(full, p["id"], k)


def test_the_sessions_map_keeps_no_vectors_and_gives_the_same_neighbours(small_benchmark, tmp_path):
    from bindlab.analysis.embedding_map import compute_layout
    from bindlab.ui import embedding_map as tab

    path, _ = small_benchmark
    full = ms.prepare_map(ms.MapRequest(model="bow", data=str(path), limit=40, seed=2, method="pca"))
    _, state, *_ = tab.make_map(str(path), "bow", [], 40, 2, "role", "pca", progress=_noop_progress)
    light = state["map"]
    assert state["result"].figures_data["map"] is light and [p["id"] for p in light.points] == [
        p["id"] for p in full.points
    ]
    _same_neighbours_as_with_the_vectors(light, full, tab.NEIGHBOURS_K)  # bow: many exact ties, broken the same
    xy, hit = ms.cached_layout(light, "pca", folder=tmp_path)  # a layout not cached yet reads the vectors back
    assert not hit
    np.testing.assert_array_equal(xy, compute_layout(full.vectors, "pca"))
    np.testing.assert_array_equal(xy, state["layouts"]["pca"])


def test_image_points_read_back_the_same_vectors(tmp_path):
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.data.saber_images import render_mcq_images

    qs = generate_saber(per_size=1, sizes=[2, 3], seed=4, vocab=RENDER_VOCAB)
    render_mcq_images(qs, tmp_path, size=48, workers=1)
    path = write_benchmark(tmp_path, qs, {"seed": 4})
    full = ms.prepare_map(ms.MapRequest(model="toy:clip", data=str(path), method="pca"))
    assert full.modalities == ["text", "image"]
    _same_neighbours_as_with_the_vectors(full.without_vectors(), full, 10)


def test_a_map_whose_vectors_left_the_cache_asks_to_be_made_again(small_benchmark, tmp_path, monkeypatch):
    path, _ = small_benchmark
    light = ms.prepare_map(ms.MapRequest(model="bow", data=str(path), limit=3, method="pca")).without_vectors()
    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "other-home"))  # an empty embedding cache
    with pytest.raises(ValueError, match="no longer all cached .*15 of 15 text embeddings.*make the map again"):
        ms.point_neighbours(light, light.points[0]["id"])
