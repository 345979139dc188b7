"""scripts/lit_reference.py: the references' subspace confinement (--span-dims, --span-of)."""

from __future__ import annotations

import numpy as np

from tests.script_module import load_script


def _script():
    return load_script("lit_reference")


def test_confined_points_keep_their_top_directions_and_lose_the_rest():
    """Points that vary strongly along e0, e1 and weakly along e2: confined to their top 2 principal directions they
    lose exactly the e2 part (about their mean), and come back unit-norm; a full basis changes nothing."""
    mod = _script()
    rng = np.random.default_rng(0)
    pts = np.zeros((50, 4, 5))
    pts[..., 0] = 3 * rng.normal(size=(50, 4))
    pts[..., 1] = 2 * rng.normal(size=(50, 4))
    pts[..., 2] = 0.1 * rng.normal(size=(50, 4))
    pts[..., 3] = 1.0  # a common offset, kept by the centre
    basis = mod.principal_basis(pts, 2)
    assert basis.shape == (5, 2)
    np.testing.assert_allclose(np.abs(basis[2:, :]).max(), 0, atol=1e-2)  # e2 (weak), e3 (constant), e4 (none) out
    center = pts.reshape(-1, 5).mean(0)
    out = mod.confined(pts, basis, center)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1, atol=1e-12)
    raw = center + (pts - center) @ basis @ basis.T
    np.testing.assert_allclose(out, raw / np.linalg.norm(raw, axis=-1, keepdims=True))
    assert np.abs(raw[..., 2] - center[2]).max() < 0.05 and np.allclose(raw[..., 3], 1.0)
    unit = pts / np.linalg.norm(pts, axis=-1, keepdims=True)
    np.testing.assert_allclose(mod.confined(pts, np.eye(5)), unit, atol=1e-12)


def test_grid_of_scores_a_slot_heads_grid_with_exact_counts(tmp_path, monkeypatch):
    """--grid-of FOLDER: each MCQ image is the normalised sum of the slot head's grid over its own objects (built here
    by hand from the saved grid), scored in every pairing; the model's own counts come with their top-n recall and
    exact share, each a share in [0, 1]; a model without a slot head is refused."""
    import json
    from pathlib import Path

    import pytest

    from bindlab.cli import main as cli
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.data.saber_images import render_mcq_images
    from bindlab.data.schema import load_mcqs

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    run = tmp_path / "slots"
    assert cli(
        [
            "train",
            "toy",
            "--arch",
            "lit",
            "--text",
            "minilm",
            "--out",
            str(run),
            "--steps",
            "2",
            "--batch-size",
            "8",
            "--pool-size",
            "24",
            "--captions-per-scene",
            "2",
            "--holdout-combos",
            "0.15",
            "--eval-sample",
            "0",
            "--no-progress",
            "--width",
            "16",
            "--layers",
            "1",
            "--heads",
            "2",
            "--image-size",
            "32",
            "--patch-size",
            "8",
            "--lit-target",
            "phrases",
            "--target-bag-weight",
            "0",
            "--head-slots",
            "3",
            "--slot-count-weight",
            "1",
        ]
    ) in (0, None)
    qs = generate_saber(per_size=2, sizes=[2, 3], seed=2, vocab=RENDER_VOCAB)
    render_mcq_images(qs, tmp_path / "mcq", size=32, workers=1)
    write_benchmark(tmp_path / "mcq", qs, {"seed": 2})
    questions, _ = load_mcqs(tmp_path / "mcq" / "mcq.jsonl")
    mod = _script()
    points, recall = mod.grid_points(questions, tmp_path / "mcq", run)
    from safetensors.numpy import load_file

    grid = load_file(str(run / "model.safetensors"))["image_head.phrases"]
    shapes, attrs = list(RENDER_VOCAB.objects), [a.name for a in RENDER_VOCAB.attributes]
    first = sum(grid[shapes.index(o), attrs.index(a)] for a, o in questions[0].query.bindings)
    np.testing.assert_allclose(points[0, 0], first / np.linalg.norm(first), atol=1e-5)
    assert points.shape == (4, 5, 384) and 0 <= recall["top_n_recall"] <= 1 and 0 <= recall["exact"] <= 1
    out = tmp_path / "ref.json"
    assert (
        mod.main(
            [
                "--data",
                str(tmp_path / "mcq" / "mcq.jsonl"),
                "--models",
                "",
                "--no-discriminant",
                "--no-phrases",
                "--k",
                "2",
                "--grid-of",
                str(run),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    res = json.loads(out.read_text())
    assert res["rows"]["exact counts over slots's phrase grid (reference)"]["ti"]["n"] == 4
    assert set(res["grid_counts"]) == {"top_n_recall", "exact"}
    with pytest.raises(SystemExit, match="not a slot-head lit model"):
        mod.grid_points(questions, tmp_path / "mcq", Path(__file__).resolve().parents[1] / "bindlab/assets/toy-clip")
