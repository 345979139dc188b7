"""Embedding map: subset choice, points (roles, correctness), PCA against a naive reference, the layout cache,
the figure, and the ``map`` command writing an offline HTML page with its layout JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bindlab.analysis import embedding_map as em
from bindlab.cli import main
from bindlab.data.saber import write_benchmark
from bindlab.data.schema import MCQ, Item
from bindlab.present.map_figure import map_figure, map_html, thumbnails
from bindlab.studies import map as ms


def build_map(path, model, n_objects=None, limit=em.DEFAULT_LIMIT, seed=0):
    """The map's points and embeddings, as the Map study makes them (bindlab.studies.map)."""
    return ms.prepare_map(ms.MapRequest(model=model, data=str(path), n_objects=n_objects, limit=limit, seed=seed))


def _item(text, bindings, role=None):
    return Item(text=text, bindings=[tuple(b) for b in bindings], role=role)


@pytest.fixture(scope="module")
def hand_made(tmp_path_factory):
    """Two hand-written N = 2 questions with the preserve candidate in different positions."""
    q1 = MCQ(
        "hand-1",
        2,
        "independent",
        _item("a red cube and a blue sphere", [("red", "cube"), ("blue", "sphere")]),
        [
            _item("a blue cube and a red sphere", [("blue", "cube"), ("red", "sphere")], "attr_swap"),
            _item("a blue sphere and a red cube", [("blue", "sphere"), ("red", "cube")], "preserve"),
            _item("a red sphere and a blue cube", [("red", "sphere"), ("blue", "cube")], "obj_swap"),
            _item("a red cube and a green sphere", [("red", "cube"), ("green", "sphere")], "replace"),
        ],
        answer=1,
    )
    q2 = MCQ(
        "hand-2",
        2,
        "independent",
        _item("a wooden chair and a glass table", [("wooden", "chair"), ("glass", "table")]),
        [
            _item("a glass table and a wooden chair", [("glass", "table"), ("wooden", "chair")], "preserve"),
            _item("a glass chair and a wooden table", [("glass", "chair"), ("wooden", "table")], "attr_swap"),
            _item("a wooden table and a glass chair", [("wooden", "table"), ("glass", "chair")], "obj_swap"),
            _item("a wooden chair and a metal table", [("wooden", "chair"), ("metal", "table")], "replace"),
        ],
        answer=0,
    )
    path = write_benchmark(tmp_path_factory.mktemp("hand"), [q1, q2], {"seed": 0})
    return path, [q1, q2]


# --- pure parts ----------------------------------------------------------------------------------------------------
def test_parse_n_objects():
    assert em.parse_n_objects(None) is None and em.parse_n_objects("all") is None and em.parse_n_objects([]) is None
    assert em.parse_n_objects("2,3") == [2, 3] and em.parse_n_objects("2-4") == [2, 3, 4]
    assert em.parse_n_objects(["3", 2]) == [2, 3]
    with pytest.raises(ValueError, match="integers"):
        em.parse_n_objects(["two"])


def test_select_questions_filters_samples_and_keeps_order(small_benchmark):
    _, qs = small_benchmark  # 6 per N, N = 2..10
    sel = em.select_questions(qs, [2, 3], limit=5, seed=1)
    assert len(sel) == 5 and {q.n_objects for q in sel} <= {2, 3}
    assert [qs.index(q) for q in sel] == sorted(qs.index(q) for q in sel)  # file order
    assert [q.id for q in em.select_questions(qs, [2, 3], 5, seed=1)] == [q.id for q in sel]  # seeded
    assert len(em.select_questions(qs, [4], limit=100)) == 6  # fewer than the limit: all of them
    with pytest.raises(ValueError, match=r"no question has N in \[11\]; this file has N = \[2, 3"):
        em.select_questions(qs, [11])
    with pytest.raises(ValueError, match="at least 1"):
        em.select_questions(qs, None, limit=0)


def test_full_credit_counts_ties_as_wrong():
    scores = np.array([[0.9, 0.1, 0.2, 0.3], [0.5, 0.5, 0.1, 0.1], [0.1, 0.9, 0.2, 0.3], [0.2, 0.1, 0.3, 0.8]])
    assert em.full_credit(scores, np.array([0, 0, 0, 3])).tolist() == [True, False, False, True]


def test_item_points_roles_ids_and_images(hand_made):
    path, qs = hand_made
    pts = em.item_points(qs, path.parent, "image", [True, False])
    assert len(pts) == 10 and len({p["id"] for p in pts}) == 10
    assert [p["role"] for p in pts[:5]] == ["query", "attr_swap", "preserve", "obj_swap", "replace"]
    assert pts[0]["id"] == "hand-1/image/query" and pts[2]["id"] == "hand-1/image/preserve"
    assert [p["correct"] for p in pts] == [True] * 5 + [False] * 5
    assert pts[5]["caption"] == "a wooden chair and a glass table" and pts[5]["image"] is None


def test_pca_matches_the_covariance_eigenvectors():
    x = np.random.default_rng(0).normal(size=(40, 6)) * np.array([5, 3, 1, 0.5, 0.2, 0.1])
    xy = em.pca_2d(x)
    c = x - x.mean(0)
    w, v = np.linalg.eigh(c.T @ c)
    ref = c @ v[:, ::-1][:, :2]  # naive: top-2 eigenvectors of the scatter matrix
    assert xy.shape == (40, 2)
    np.testing.assert_allclose(np.abs(xy), np.abs(ref), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(em.pca_2d(x), xy)  # deterministic signs
    assert not em.pca_2d(np.ones((3, 4))).any()  # no spread: all points at the origin, no crash
    assert em.pca_2d(np.eye(1, 5)).shape == (1, 2)


def test_bad_layout_requests_say_what_to_do():
    with pytest.raises(ValueError, match="at least 4 points"):
        em.umap_2d(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="choose from"):
        em.compute_layout(np.zeros((5, 3)), "tsne")
    with pytest.raises(ValueError, match="unknown metric"):
        em.LayoutParams(metric="hamming")
    with pytest.raises(ValueError, match="n_neighbors"):
        em.LayoutParams(n_neighbors=1)
    with pytest.raises(ValueError, match=f"between 2 and {em.MAX_N_NEIGHBORS}"):
        em.LayoutParams(n_neighbors=100_000)
    # checked against the points before umap-learn sees it (a chosen value; the default is lowered on a small map)
    with pytest.raises(ValueError, match="not below the map's 6 points; choose 2 to 5"):
        em.umap_2d(np.random.default_rng(0).normal(size=(6, 4)), em.LayoutParams(n_neighbors=6))


# --- with real encoders --------------------------------------------------------------------------------------------
def test_correctness_matches_the_models_own_scores(hand_made, minilm):
    path, qs = hand_made
    m = build_map(path, "minilm", limit=10)
    assert m.modalities == ["text"] and "no image tower" in m.notes[0]
    assert len(m.points) == 10 and m.vectors.shape == (10, 384)
    for q in qs:
        e = minilm.embed_texts([q.query.text] + [c.text for c in q.candidates])
        s = e[1:] @ e[0]
        expected = bool(s[q.answer] > np.delete(s, q.answer).max())
        assert {p["correct"] for p in m.points if p["question"] == q.id} == {expected}
        np.testing.assert_allclose(
            m.vectors[[i for i, p in enumerate(m.points) if p["question"] == q.id]], e, atol=1e-5
        )
    assert m.accuracy["text"] == pytest.approx(np.mean([p["correct"] for p in m.points[::5]]))


def test_bag_of_words_is_never_fully_correct(small_benchmark):
    path, _ = small_benchmark
    m = build_map(path, "bow", "2,3", limit=8)
    assert len(m.question_ids()) == 8 and not any(p["correct"] for p in m.points)  # swaps tie exactly


def test_layout_cache_hits_on_the_second_call_and_survives_corruption(small_benchmark, tmp_path):
    path, _ = small_benchmark
    m = build_map(path, "bow", None, limit=10, seed=2)
    xy, hit = ms.cached_layout(m, "pca", folder=tmp_path)
    assert xy.shape == (50, 2) and not hit
    xy2, hit2 = ms.cached_layout(m, "pca", folder=tmp_path)
    assert hit2 and np.array_equal(xy, xy2)
    # another subset or other params is another key
    other = build_map(path, "bow", None, limit=10, seed=3)
    assert other.data_hash != m.data_hash and not ms.cached_layout(other, "pca", folder=tmp_path)[1]
    assert not ms.cached_layout(m, "pca", em.LayoutParams(n_neighbors=5), folder=tmp_path)[1]
    # a corrupt file is recomputed, never served
    for f in tmp_path.glob("*.npy"):
        f.write_bytes(b"garbage")
    xy3, hit3 = ms.cached_layout(m, "pca", folder=tmp_path)
    assert not hit3 and np.array_equal(xy, xy3)


@pytest.mark.slow  # umap-learn compiles with numba on its first run in a process: about a minute on 2 busy cores
def test_umap_layout_shape_and_cache(small_benchmark, tmp_path):
    path, _ = small_benchmark
    m = build_map(path, "bow", "2,3", limit=6)
    xy, hit = ms.cached_layout(m, "umap", em.LayoutParams(n_neighbors=5), folder=tmp_path)
    assert xy.shape == (30, 2) and np.isfinite(xy).all() and not hit
    xy2, hit2 = ms.cached_layout(m, "umap", em.LayoutParams(n_neighbors=5), folder=tmp_path)
    assert hit2 and np.array_equal(xy, xy2)


def test_figure_groups_points_by_the_chosen_colour(hand_made):
    path, qs = hand_made
    pts = em.item_points(qs, path.parent, "text", [True, False])
    xy = np.arange(20, dtype=float).reshape(10, 2)
    fig = map_figure(pts, xy, "role")
    # queries are drawn first, as larger open rings, the candidates over them (none hidden); the legend keeps the
    # role order
    assert [t.name for t in fig.data] == ["query", "preserve", "attr_swap", "obj_swap", "replace"]
    assert [t.name for t in sorted(fig.data, key=lambda t: t.legendrank)][0] == "query"
    assert fig.data[0].marker.size > fig.data[-1].marker.size
    assert all(s.endswith("-open") for s in fig.data[0].marker.symbol)
    assert not any(s.endswith("-open") for t in fig.data[1:] for s in t.marker.symbol)
    assert sum(len(t.x) for t in fig.data) == 10
    assert {cd[0] for t in fig.data for cd in t.customdata} == {p["id"] for p in pts}
    # other colourings: each group's queries are a second trace of the same legend group, drawn before every group
    # (the legend entry is the candidates' trace)
    by_correct = map_figure(pts, xy, "correct").data
    assert [(t.name, t.showlegend is not False) for t in by_correct] == [
        ("correct", False),
        ("wrong", False),
        ("correct", True),
        ("wrong", True),
    ]
    assert {t.legendgroup for t in by_correct} == {"correct", "wrong"}
    assert all(pts[cd[2]]["role"] == "query" for t in by_correct[:2] for cd in t.customdata)
    assert [t.name for t in map_figure(pts, xy, "n").data] == ["N=2", "N=2"]
    with pytest.raises(ValueError, match="unknown colour"):
        map_figure(pts, xy, "size")


def test_figure_with_thumbnails_carries_the_hover_data_instead_of_plotlys_label(hand_made):
    """With thumbnails the figure hides plotly's label and holds, in layout.meta, what the hover box shows; each
    marker's customdata index points at its own entry."""
    path, qs = hand_made
    pts = em.item_points(qs, path.parent, "text", [True, False])
    xy = np.arange(20, dtype=float).reshape(10, 2)
    assert map_figure(pts, xy).layout.meta is None and fig_hoverinfo(map_figure(pts, xy)) == {"text"}
    thumbs = {"images": [], "of_point": [-1] * len(pts)}
    fig = map_figure(pts, xy, "role", thumbs=thumbs)
    meta = fig.layout.meta["bindlab_map"]
    assert fig_hoverinfo(fig) == {"none"} and meta["thumbs"] == thumbs
    for t in fig.data:
        for point_id, _, k in t.customdata:
            assert meta["points"][k]["id"] == point_id and meta["points"][k]["caption"] == pts[k]["caption"]


def fig_hoverinfo(fig):
    return {t.hoverinfo for t in fig.data}


def figure_json(text: str) -> str:
    """``text`` as plotly writes it inside a page's figure JSON (its own escaping: "/" becomes "\\u002f", …)."""
    from plotly.io.json import to_json_plotly

    return to_json_plotly(text)[1:-1]


def in_figure_json(text: str, page: str) -> bool:
    return figure_json(text) in page


def test_cli_writes_an_offline_html_page_and_the_layout_json(small_benchmark, tmp_path, capsys):
    path, _ = small_benchmark
    out = tmp_path / "maps" / "map.html"
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
                "5",
                "--method",
                "pca",
                "--color",
                "correct",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    page = out.read_text()
    lay = json.loads(out.with_suffix(".json").read_text())
    assert len(lay["points"]) == 25 and all({"x", "y", "id", "role", "caption"} <= set(p) for p in lay["points"])
    assert lay["provenance"]["encoder"]["id"] == "bow:words" and lay["provenance"]["settings"]["method"] == "pca"
    assert "plotly.js v" in page and '<script src="http' not in page  # plotly.js inlined: opens offline
    assert in_figure_json(lay["points"][0]["id"], page) and in_figure_json(lay["points"][0]["caption"], page)
    assert "plotly_hover" in page and "bl-hover-box" in page
    assert "bow:words: 5 questions, 25 points" in capsys.readouterr().out


def test_cli_errors_are_one_line(small_benchmark, tmp_path, capsys):
    path, _ = small_benchmark
    assert (
        main(["map", "--model", "nope:x", "--data", str(path), "--method", "pca", "--out", str(tmp_path / "m.html")])
        == 2
    )
    assert (
        main(
            [
                "map",
                "--model",
                "bow",
                "--data",
                str(path),
                "--n-objects",
                "12",
                "--method",
                "pca",
                "--out",
                str(tmp_path / "m.html"),
            ]
        )
        == 2
    )
    assert main(["map", "--model", "bow", "--data", str(path), "--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "unknown encoder backend 'nope'" in err and "no question has N in [12]" in err and ".html" in err


def test_image_model_maps_both_modalities_with_thumbnails(tmp_path):
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber
    from bindlab.data.saber_images import render_mcq_images

    qs = generate_saber(per_size=1, sizes=[2, 3], seed=4, vocab=RENDER_VOCAB)
    render_mcq_images(qs, tmp_path, size=48, workers=1)
    path = write_benchmark(tmp_path, qs, {"seed": 4})
    m = build_map(path, "toy:clip")
    assert m.modalities == ["text", "image"] and len(m.points) == 20 and m.vectors.shape[0] == 20
    assert [p["modality"] for p in m.points] == ["text"] * 10 + ["image"] * 10
    assert m.points[0]["image"] == m.points[10]["image"] == str(tmp_path / qs[0].query.image)
    th = thumbnails(m.points, 32)
    assert len(th["images"]) == 10 and th["of_point"][:10] == th["of_point"][10:]  # one thumbnail per image file
    page = map_html(m.points, em.pca_2d(m.vectors), "modality")
    assert page.count(figure_json("data:image/jpeg;base64,")) == 10


def test_cli_export_writes_the_points_table_and_the_figure(small_benchmark, tmp_path):
    """``map --export DIR``: the points as CSV that pandas reads (coordinates equal to the layout JSON's) and JSON
    with provenance, the map figure as standalone HTML."""
    import pandas as pd

    path, _ = small_benchmark
    out, folder = tmp_path / "map.html", tmp_path / "export"
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
                str(out),
                "--export",
                str(folder),
                "--export-formats",
                "csv,json,html",
            ]
        )
        == 0
    )
    lay = json.loads(out.with_suffix(".json").read_text())
    table = pd.read_csv(folder / "map_points.csv")
    assert len(table) == len(lay["points"]) == 20
    assert list(table["id"]) == [p["id"] for p in lay["points"]]
    np.testing.assert_allclose(
        table[["pca_x", "pca_y"]].to_numpy(), [[p["x"], p["y"]] for p in lay["points"]], rtol=1e-6
    )
    doc = json.loads((folder / "map_summary.json").read_text())
    assert doc["provenance"]["settings"]["kind"] == "map" and doc["provenance"]["encoder"]["id"] == "bow:words"
    assert doc["rows"] == [{"model": "bow:words", "modality": "text", "correct_share": 0.0, "n_points": 20}]
    assert "plotly.js v" in (folder / "map_pca.html").read_text()


# --- neighbours, search, selections ----------------------------------------------------------------------------
def test_nearest_neighbours_match_a_naive_loop():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 7)) * rng.uniform(0.5, 3, size=(40, 1))  # not unit: cosine must normalise
    x[5] = x[9] * 2  # an exact tie in direction with another point
    for index in (0, 9, 39):
        naive = []
        for j in range(len(x)):
            if j != index:
                cos = float(x[index] @ x[j] / np.linalg.norm(x[index]) / np.linalg.norm(x[j]))
                naive.append((-cos, j))
        want = [(j, -c) for c, j in sorted(naive)[:6]]
        got = em.nearest_neighbours(x, index, k=6)
        assert [j for j, _ in got] == [j for j, _ in want]
        np.testing.assert_allclose([c for _, c in got], [c for _, c in want], rtol=1e-12)
    assert em.nearest_neighbours(x, 9, k=1)[0][0] == 5  # same direction, cosine 1
    assert len(em.nearest_neighbours(x[:3], 0, k=10)) == 2
    with pytest.raises(ValueError, match="not one of the map's 40 points"):
        em.nearest_neighbours(x, 40)
    with pytest.raises(ValueError, match="k must be at least 1"):
        em.nearest_neighbours(x, 0, k=0)


def test_search_and_selection_summary(hand_made):
    path, qs = hand_made
    pts = em.item_points(qs, path.parent, "text", [True, False])
    word = pts[0]["caption"].split()[-1]
    hits = em.search_points(pts, word.upper())
    assert 0 in hits and all(word.lower() in pts[i]["caption"].lower() for i in hits)
    assert em.search_points(pts, "  ") == [] and em.search_points(pts, "zzz-nothing") == []
    # one whole question (correct) and one point of the other (wrong): 2 answers, 1 correct
    first = [i for i, p in enumerate(pts) if p["question"] == pts[0]["question"]]
    other = next(i for i, p in enumerate(pts) if p["question"] != pts[0]["question"])
    s = em.selection_summary(pts, first + [other, other])
    assert (s["n_points"], s["n_questions"], s["n_correct"], s["n_answers"], s["accuracy"]) == (6, 2, 1, 2, 0.5)
    assert s["roles"]["query"] == 1 + (pts[other]["role"] == "query")
    assert em.selection_summary(pts, [])["accuracy"] is None


def test_search_text_is_capped_before_any_caption_is_read(hand_made):
    """A visitor's 100 KB of search text once cost 120 s of CPU per redraw: it is refused at once, in one sentence."""
    path, qs = hand_made
    pts = em.item_points(qs, path.parent, "text", [True, False])
    with pytest.raises(ValueError, match=r"search: at most 200 characters, got 100,000"):
        em.search_points(pts * 1000, "red " * 25_000)
    with pytest.raises(ValueError, match=r"at most 20 different words, got 21"):
        em.search_points(pts, " ".join(f"w{i}" for i in range(21)))
    repeated = " ".join(["cube"] * 40)  # 40 words, one different: fine
    assert em.search_points(pts, repeated) == em.search_points(pts, "cube")


def test_figure_rings_search_matches_and_joins_a_question(hand_made):
    path, qs = hand_made
    pts = em.item_points(qs, path.parent, "text", [True, False])
    xy = np.arange(20, dtype=float).reshape(10, 2)
    fig = map_figure(pts, xy, "role", highlight=[1, 3], highlight_label="search (2)", joined=pts[0]["question"])
    ring = fig.data[-1]
    assert ring.name == "search (2)" and list(ring.x) == [xy[1, 0], xy[3, 0]] and ring.hoverinfo == "skip"
    lines = next(t for t in fig.data if t.mode == "lines")
    assert lines.x.count(None) == 4 and lines.x[0] == xy[0, 0]  # query -> each of its 4 candidates
    labels = next(t for t in fig.data if t.mode == "text")
    assert list(labels.text) == [p["role"] for p in pts[1:5]]
