"""The toy triplets' held-out splits (issue 16): unseen words never in a training text, held-out templates that
re-write the test questions, and everything still in the renderable vocabulary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bindlab.data.render import RENDER_VOCAB
from bindlab.data.triplets import load_triplets, words_of
from bindlab.data.triplets.holdout import read_holdout, saber_vocab_from
from bindlab.studies import walkthrough as wt

IN_FORMAT = ("train", "val", "test")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    path = wt.toy_triplets(per_size=20, seed=5)
    return path, load_triplets(path)  # load_triplets validates every row (known split, word permutation, ...)


def _content_words(row: dict) -> set[str]:
    return {w for b in row["bindings"] for w in b}


def test_splits_and_templates(toy):
    _, rows = toy
    splits = {r["split"] for r in rows}
    assert splits == {*IN_FORMAT, "test_unseen_words", *(f"test_template_{t}" for t in wt.TOY_HOLDOUT_TEMPLATES)}
    for r in rows:
        want = r["split"].removeprefix("test_template_") if r["split"].startswith("test_template_") else "attributive"
        assert r["template"] == want, r["id"]
    assert len({r["id"] for r in rows}) == len(rows)


def test_held_out_words_never_in_training_text(toy):
    path, rows = toy
    held = read_holdout(path)
    assert held.words and held.words == wt.toy_holdout(seed=5).words
    for r in rows:
        words = {w.lower() for t in (r["query"], r["positive"], r["negative"]) for w in words_of(t)}
        if r["split"] == "test_unseen_words":
            assert _content_words(r) <= held.words, r["id"]
        else:
            assert not (words & held.words), (r["id"], sorted(words & held.words))
    n_test = sum(r["split"] == "test" for r in rows)
    assert sum(r["split"] == "test_unseen_words" for r in rows) >= n_test > 0


def test_holdout_is_a_stratified_part_of_the_renderable_vocabulary():
    held = wt.toy_holdout(0.2, seed=3)
    assert set(held.objects) <= set(RENDER_VOCAB.objects)
    assert len(held.objects) == round(0.2 * len(RENDER_VOCAB.objects))
    by_cat = {}
    for a in RENDER_VOCAB.attributes:
        by_cat.setdefault(a.category, []).append(a.name)
    for cat, names in by_cat.items():
        assert len(set(held.attributes) & set(names)) == round(0.2 * len(names)), cat
    assert held == wt.toy_holdout(0.2, seed=3) and held != wt.toy_holdout(0.2, seed=4)


def test_report_can_build_unseen_word_questions_up_to_n5(toy):
    from bindlab.data.saber import max_size

    vocab = saber_vocab_from(toy[0] / "holdout_vocab.json", RENDER_VOCAB)  # what jobs compare does
    assert max_size(vocab) >= 5


def test_held_out_templates_rewrite_the_test_questions(toy):
    _, rows = toy

    def by_question(split: str, tag: str) -> dict[str, list]:
        return {
            r["id"].removesuffix(f"-{tag}-attr_swap"): r["bindings"]
            for r in rows
            if r["split"] == split and r["id"].endswith("attr_swap")
        }

    test = {
        r["id"].removesuffix("-attr_swap"): r["bindings"]
        for r in rows
        if r["split"] == "test" and r["id"].endswith("attr_swap")
    }
    for t in ("predicative", "relative"):  # same seed and vocabulary: the same bindings, other words
        assert by_question(f"test_template_{t}", t) == test
    assert by_question("test_template_with", "with")  # "with" draws only the attributes it can express


def test_every_content_word_is_renderable_and_known_to_the_toy_model(toy):
    from bindlab.config import assets_root

    _, rows = toy
    renderable = set(RENDER_VOCAB.objects) | {a.name for a in RENDER_VOCAB.attributes}
    assert all(_content_words(r) <= renderable for r in rows)
    vocab = set(json.loads((assets_root() / "toy-shared" / "vocab.json").read_text())["vocab"])
    for r in rows:
        if r["split"] in ("test_template_relative", "test_template_with"):
            continue  # "that" and the attribute-type nouns ("colour", ...) are [UNK] to the toy models
        unknown = {w.lower() for t in (r["query"], r["positive"], r["negative"]) for w in words_of(t)} - vocab
        assert not unknown, (r["id"], sorted(unknown))


def test_without_holdouts_the_old_three_splits(tmp_path):
    rows = load_triplets(wt.toy_triplets(per_size=10, seed=5, holdout_fraction=0, holdout_templates=()))
    assert {r["split"] for r in rows} == set(IN_FORMAT)
    with pytest.raises(ValueError, match="training template"):
        wt.toy_triplets(per_size=10, seed=5, holdout_templates=("attributive",))
    with pytest.raises(ValueError, match="holdout-words"):
        wt.toy_triplets(per_size=10, seed=5, holdout_fraction=0.9)


def test_two_processes_making_them_at_once_get_one_whole_set(tmp_path):
    """Two first jobs at once (two visitors, or a CLI beside the app) on an empty home: one process writes the folder
    while the other waits, and both get the same complete set (before, the second could read a half-written one)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "BINDLAB_HOME": str(tmp_path / "home")}
    code = "from bindlab.studies.walkthrough import toy_triplets; print(toy_triplets(per_size=20, seed=9))"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    folders = {out.strip().splitlines()[-1] for out, _ in outs}
    assert len(folders) == 1
    folder = folders.pop()
    assert folder.startswith(str(tmp_path / "home"))
    stats = json.loads((Path(folder) / "stats.json").read_text())
    assert stats["n_rows"] == len(load_triplets(folder)) > 0
