"""Compare names a leader only where the intervals separate, and says for each task and pairing which set it scored:
n of the file's items, what was left out and why, and which models were not scored there and why. The rule is a pure
function (tested on constructed rows); real models check it end to end, on the CLI's output too."""

from __future__ import annotations

from pathlib import Path

import pytest

from bindlab.cli import main
from bindlab.studies import compare as study


def _row(model, value, lo, hi, column="MCQ tt"):
    return {"model": model, column: value, f"{column} 95% CI": [lo, hi] if lo is not None else None}


# --- the leader rule: pure -------------------------------------------------------------------------------------------
def test_a_leader_only_where_its_interval_lies_above_every_other():
    board = [_row("a", 0.8, 0.70, 0.90), _row("b", 0.5, 0.40, 0.60), _row("c", 0.3, 0.20, 0.40)]
    got = study.leader_verdict(board, "MCQ tt")
    assert got["leader"] == "a" and got["overlaps"] == [] and got["text"].startswith("leader on MCQ tt: a")


def test_overlapping_intervals_name_no_leader_and_say_whose_overlap():
    board = [_row("a", 0.8, 0.55, 0.90), _row("b", 0.5, 0.40, 0.60), _row("c", 0.3, 0.20, 0.40)]
    got = study.leader_verdict(board, "MCQ tt")
    assert got["leader"] is None and got["overlaps"] == ["b"]
    assert got["text"] == "no clear leader on MCQ tt: the 95 % intervals of a and b overlap"
    board[2] = _row("c", 0.3, 0.20, 0.56)  # two of them overlap the top one
    got = study.leader_verdict(board, "MCQ tt")
    assert got["overlaps"] == ["b", "c"] and "the 95 % interval of a overlaps those of b and c" in got["text"]


def test_touching_intervals_overlap_and_ties_name_no_leader():
    assert study.leader_verdict([_row("a", 0.8, 0.6, 0.9), _row("b", 0.5, 0.4, 0.6)], "MCQ tt")["leader"] is None
    assert study.leader_verdict([_row("a", 0.5, 0.5, 0.5), _row("b", 0.5, 0.5, 0.5)], "MCQ tt")["leader"] is None


def test_no_leader_without_intervals_or_without_a_second_scored_model():
    one = study.leader_verdict([_row("a", 0.8, 0.7, 0.9), _row("b", None, None, None)], "MCQ tt")
    assert one["leader"] is None and "only a has a MCQ tt score" in one["text"]  # b (n/a) is not compared
    bare = study.leader_verdict([_row("a", 0.8, None, None), _row("b", 0.1, 0.0, 0.2)], "MCQ tt")
    assert bare["leader"] is None and "a has no 95 % interval" in bare["text"]
    assert study.leader_verdict([], "")["leader"] is None


# --- the set used: its text ------------------------------------------------------------------------------------------
def test_set_used_text_says_n_what_was_left_out_and_why():
    row = {
        "task": "mcq",
        "pairing": "ti",
        "set": "my/mcq.jsonl",
        "detail": None,
        "n_scored": 12,
        "n_total": 180,
        "n_dropped": 168,
        "dropped_why": "limit 12: only the first 12 questions are scored",
        "not_scored": "bow: no image tower (ti: text queries, image candidates)",
    }
    assert study.set_used_text(row, "questions") == (
        "MCQ ti: 12 of 180 questions of my/mcq.jsonl — 168 left out: limit 12: only the first 12 questions are "
        "scored; not scored: bow: no image tower (ti: text queries, image candidates)"
    )
    none = {**row, "n_scored": None, "n_dropped": None}
    assert (
        study.set_used_text(none) == "MCQ ti: scored by no model — bow: no image tower (ti: text queries, image "
        "candidates)"
    )


# --- end to end: real models -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def renderable_set(tmp_path_factory):
    """30 questions per N = 2, 3 over the renderable vocabulary (the words the toy models know), text only."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber, write_benchmark

    qs = generate_saber(per_size=30, sizes=[2, 3], seed=11, vocab=RENDER_VOCAB)
    return str(write_benchmark(tmp_path_factory.mktemp("cmp-lead"), qs, {"seed": 11}))


@pytest.fixture(scope="module")
def image_set(tmp_path_factory):
    """Four renderable questions (N = 2, 3) with their images drawn at 64 px."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.data.saber_images import render_mcq_images

    out = tmp_path_factory.mktemp("cmp-img")
    qs = generate_saber(per_size=2, sizes=[2, 3], seed=5, vocab=RENDER_VOCAB)
    render_mcq_images(qs, out, size=64, workers=1)
    return str(write_benchmark(out, qs, {"seed": 5}))


def _separated(board, column, leader):
    lo = board[leader][f"{column} 95% CI"][0]
    return all(r[f"{column} 95% CI"][1] < lo for m, r in board.items() if m != leader)


def test_real_models_a_leader_where_intervals_separate_none_where_they_overlap(renderable_set):
    res = study.run_compare(
        study.CompareRequest(models="bow,toy:negclip", suite="mcq", data=renderable_set, use_cache=False)
    )
    board = {r["model"]: r for r in res.summary["leaderboard"]}
    assert res.summary["leader"] == "toy:negclip" and _separated(board, "MCQ tt", "toy:negclip")
    assert res.summary["leader_text"].startswith("leader on MCQ tt: toy:negclip")

    near = study.run_compare(
        study.CompareRequest(models="bow,minilm", suite="mcq", data=renderable_set, use_cache=False)
    )  # MiniLM binds little better than bag-of-words
    board = {r["model"]: r for r in near.summary["leaderboard"]}
    top = near.summary["leaderboard"][0]["model"]
    assert near.summary["leader"] is None and not _separated(board, "MCQ tt", top)
    assert near.summary["leader_text"] == (
        f"no clear leader on MCQ tt: the 95 % intervals of {top} and {({'bow', 'minilm'} - {top}).pop()} overlap"
    )
    assert near.summary["top_score"] == board[top]["MCQ tt"]  # the top score is still given


def test_each_pairing_states_its_set_n_and_what_was_left_out(image_set):
    res = study.run_compare(
        study.CompareRequest(
            models="bow,toy:clip", suite="mcq,retrieval", data=image_set, pairings="tt,ti", limit=3, use_cache=False
        )
    )
    used = {(r["task"], r["pairing"]): r for r in res.summary["set_used"]}
    assert list(used) == [("mcq", "tt"), ("mcq", "ti"), ("retrieval", "tt"), ("retrieval", "ti")]
    assert res.tables["set_used"] == res.summary["set_used"]
    name = f"{Path(image_set).parent.name}/mcq.jsonl"
    tt, ti = used["mcq", "tt"], used["mcq", "ti"]
    assert (tt["n_scored"], tt["n_total"], tt["n_dropped"]) == (3, 4, 1)
    assert (
        tt["text"] == f"MCQ tt: 3 of 4 questions of {name} — 1 left out: limit 3: only the first 3 questions are scored"
    )
    assert tt["scored_models"] == "bow, toy:clip" and tt["not_scored"] is None
    assert ti["scored_models"] == "toy:clip"  # bow is text-only: it says so instead of a silent gap
    assert ti["text"].endswith("; not scored: bow: no image tower (ti: text queries, image candidates)")
    assert ti["n_scored"] == len([r for r in res.rows if r["pairing"] == "ti"]) == 3
    assert used["retrieval", "ti"]["n_scored"] == 3

    full = study.run_compare(study.CompareRequest(models="bow,toy:clip", suite="mcq", data=image_set, use_cache=False))
    assert full.summary["set_used"][0]["text"] == f"MCQ tt: 4 of 4 questions of {name} — none left out"


def test_the_embedded_default_says_which_vocabulary_and_why():
    from bindlab.studies.common import default_dataset, get_encoder

    enc = {m: get_encoder(m) for m in ("bow", "toy:clip")}
    images = Path(str(default_dataset()).replace("saber-mini", "saber-mini-images"))  # only its name is read
    text = study.mcq_source(study.CompareRequest(models="bow,toy:clip", pairings="tt,ti"), enc, images)
    assert "over the renderable vocabulary" in text and "ti needs images" in text
    assert "toy:clip does not know every word of the full one" in text
    bow_only = {"bow": enc["bow"], "b2": enc["bow"]}
    assert study.mcq_source(study.CompareRequest(models="bow,b2"), bow_only, default_dataset()).startswith(
        "the embedded mini benchmark (full SABER vocabulary"
    )


def test_the_cli_prints_the_leader_verdict_and_the_set_used(renderable_set, capsys):
    assert main(["compare", "--models", "bow,minilm", "--data", renderable_set, "--limit", "4"]) == 0
    out = capsys.readouterr().out
    assert "no clear leader on MCQ tt: the 95 % intervals of" in out
    assert "scored: MCQ tt: 4 of 60 questions of" in out and "56 left out: limit 4" in out
