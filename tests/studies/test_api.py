"""``import bindlab``: the Python API gives the CLI's numbers (one pipeline), for ids, loaded encoders and model
objects of one's own."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import bindlab
from tests.cli_run import run


class WrappedMiniLM:
    """A user's own class: encode_text only, returning MiniLM's vectors un-normalised (scaled)."""

    name = "api-minilm-class"

    def __init__(self, encoder):
        self.encoder = encoder

    def encode_text(self, texts):
        return 3.0 * self.encoder.embed_texts(list(texts))


def test_import_bindlab_is_cheap_and_lists_the_api():
    code = "import bindlab, sys; print('torch' in sys.modules, 'gradio' in sys.modules, sorted(bindlab.__all__))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("False False")
    for name in (
        "load_encoder",
        "evaluate_mcq",
        "evaluate_retrieval",
        "evaluate_pairs",
        "evaluate_benchmark",
        "compare",
        "ground",
        "attention_margins",
        "generate_saber",
        "generate_pairs",
        "export_dataset",
        "adopt",
        "wrap_open_clip",
        "wrap_transformers",
    ):
        assert name in out and callable(getattr(bindlab, name))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        bindlab.nope  # noqa: B018


def test_the_issue_snippet_runs_as_written(default_scores_cached):
    enc = bindlab.load_encoder("minilm")
    res = bindlab.evaluate_mcq(enc, data=None, pairings=("tt",))
    res.primary, res.summary, res.to_pandas()
    assert res.primary == res.summary["pairings"]["tt"]["accuracy"]
    table = res.to_pandas()
    assert len(table) == res.summary["pairings"]["tt"]["n"] and {"id", "credit", "n_objects"} <= set(table.columns)
    by_n = res.to_pandas("accuracy_by_n")
    assert set(by_n["n_objects"]) == set(range(2, 11)) and set(res.frames()) == set(res.tables)
    with pytest.raises(KeyError, match="has no table 'nope'; it has"):
        res.to_pandas("nope")


def test_ids_loaded_encoders_and_own_objects_give_the_cli_numbers(small_benchmark, tmp_path):
    path, _ = small_benchmark
    run(
        "eval",
        "mcq",
        "--data",
        path,
        "--model",
        "minilm",
        "--out",
        tmp_path / "cli.json",
        "--per-item",
        tmp_path / "cli.jsonl",
    )
    cli = json.loads((tmp_path / "cli.json").read_text())
    cli_rows = [json.loads(line) for line in (tmp_path / "cli.jsonl").read_text().splitlines()]
    enc = bindlab.load_encoder("minilm")
    for model in ("minilm", enc, WrappedMiniLM(enc)):
        res = bindlab.evaluate_mcq(model, data=path)
        assert res.summary["pairings"]["tt"]["accuracy"] == cli["pairings"]["tt"]["accuracy"]
        assert res.summary["pairings"]["tt"]["by_n"] == cli["pairings"]["tt"]["by_n"]
        assert [r["predicted"] for r in res.rows] == [r["predicted"] for r in cli_rows]
    own = bindlab.evaluate_mcq(WrappedMiniLM(enc), data=path)
    assert own.provenance["encoder"]["id"] == "py:api-minilm-class"
    assert own.provenance["encoder"]["fingerprint"].startswith("py:api-minilm-class|probe:")
    assert own.provenance["encoder"]["fingerprint_is"].startswith("probe of 4 texts")
    retrieval = bindlab.evaluate_retrieval(WrappedMiniLM(enc), data=path)
    assert retrieval.primary == bindlab.evaluate_retrieval("minilm", data=path).primary

    board = bindlab.compare([enc, "bow", WrappedMiniLM(enc)], suite=("mcq",), data=path, use_cache=False)
    scores = {r["model"]: r for r in board.tables["leaderboard"]}
    assert set(scores) == {"minilm", "bow", "py:api-minilm-class"}
    assert scores["minilm"]["MCQ tt"] == scores["py:api-minilm-class"]["MCQ tt"]
    with pytest.raises(TypeError, match="takes an encoder id"):
        bindlab.attention_margins(WrappedMiniLM(enc))


def test_generate_and_pairs_equal_the_commands(tmp_path):
    run("generate", "saber", "--out", tmp_path / "cli-s", "--per-size", "4", "--sizes", "2-4", "--seed", "5")
    api = bindlab.generate_saber(tmp_path / "api-s", per_size=4, sizes="2-4", seed=5)
    assert api == tmp_path / "api-s" / "mcq.jsonl"
    assert api.read_bytes() == (tmp_path / "cli-s" / "mcq.jsonl").read_bytes()

    run(
        "generate",
        "composet",
        "--out",
        tmp_path / "cli-p",
        "--scenes",
        "1",
        "--foils-per-scene",
        "15",
        "--size",
        "64",
        "--workers",
        "1",
    )
    pairs = bindlab.generate_pairs(tmp_path / "api-p", scenes=1, foils_per_scene=15, size=64, workers=1)
    assert pairs.read_bytes() == (tmp_path / "cli-p" / "pairs.jsonl").read_bytes()
    run(
        "eval",
        "pairs",
        "--data",
        tmp_path / "cli-p" / "pairs.jsonl",
        "--model",
        "toy:clip",
        "--out",
        tmp_path / "p.json",
    )
    cli = json.loads((tmp_path / "p.json").read_text())
    res = bindlab.evaluate_pairs("toy:clip", data=pairs)
    assert res.primary == cli["group"] and res.summary["overall"] == cli["overall"]

    class ToyObject:  # a model object with both towers: toy:clip's own vectors, handed over as lists
        name = "api-toy-object"

        def __init__(self):
            self.enc = bindlab.load_encoder("toy:clip")

        def encode_text(self, texts):
            return self.enc.embed_texts(texts).tolist()

        def encode_image(self, images):
            return self.enc.embed_images(images)

    own = bindlab.evaluate_pairs(ToyObject(), data=pairs)
    assert np.isclose(own.primary, res.primary)
    for key in ("i2t", "t2i", "group", "n"):
        assert np.isclose(own.summary["overall"][key], res.summary["overall"][key]), key
