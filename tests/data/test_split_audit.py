"""Held out means absent: the split audit reads the generated text (and a toy model's training streams) itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bindlab.cli import main
from bindlab.data.triplets import Variants, generate_triplets, write_triplets
from bindlab.data.triplets.audit import audit_rows, template_uses
from bindlab.data.triplets.holdout import select_holdout

HELD = select_holdout(0.2, seed=4)


@pytest.fixture(scope="module")
def held_out_run():
    rows, stats = generate_triplets(2000, seed=3, variants=Variants(None, ("predicative", "relative"), HELD))
    return rows, stats


def test_template_uses_reads_each_template():
    attrs, objs = {"red", "wooden"}, {"kite", "bench"}
    assert template_uses("A tiny red kite sat near a wooden bench.", attrs, objs) == [
        ("red", "attributive"),
        ("wooden", "attributive"),
    ]
    assert {t for _, t in template_uses("The kite, as usual, looked red and the bench was wooden.", attrs, objs)} == {
        "predicative"
    }
    assert {
        t for _, t in template_uses("The kite, which was red, sat by the bench, which looked wooden.", attrs, objs)
    } == {"relative"}
    assert {t for _, t in template_uses("A kite that is red and a bench that is wooden", attrs, objs)} == {"relative"}
    assert {t for _, t in template_uses("A kite with a red colour and a bench with a wooden finish", attrs, objs)} == {
        "with"
    }


def test_held_out_templates_and_words_are_absent_from_training(held_out_run):
    rows, stats = held_out_run
    report = audit_rows(rows, frozenset(HELD.words))
    assert report["clean"] and report["held_templates"] == ["predicative", "relative"]
    train_uses = report["template_uses"]["train"]
    assert set(train_uses) == {"attributive"} and train_uses["attributive"] == 3 * report["rows"]["train"]
    assert "predicative" not in stats["constructions"]  # both of its forms are held-out templates
    # the held-out splits themselves do use them: the audit sees the templates where they belong
    assert report["template_uses"]["test_template_predicative"]["predicative"] > 0
    assert report["template_uses"]["test_template_relative"]["relative"] > 0


@pytest.mark.parametrize("held, kept", [(("relative",), "predicative"), (("predicative",), "relative")])
def test_one_held_out_template_keeps_the_other_form(held, kept):
    rows, stats = generate_triplets(1200, seed=5, variants=Variants(None, held, None))
    report = audit_rows(rows)
    assert report["clean"] and stats["constructions"]["predicative"] > 0
    assert report["template_uses"]["train"].get(kept, 0) > 0 and held[0] not in report["template_uses"]["train"]


def test_a_generator_that_ignores_the_hold_out_is_caught(monkeypatch):
    """The audit does not trust the generator: with the old behaviour (both predicative forms in training) it finds
    the leak, as the reviewer's scan did."""
    monkeypatch.setattr(Variants, "predicative_forms", lambda self: ("conjoined", "relative"))
    monkeypatch.setattr(Variants, "excluded_constructions", lambda self: ())
    rows, _ = generate_triplets(1200, seed=5, variants=Variants(None, ("predicative", "relative"), None))
    report = audit_rows(rows)
    assert not report["clean"] and report["template_leaks"]["train"] > 0
    assert report["examples"] and report["examples"][0]["split"] in ("train", "val")


def test_a_held_out_word_in_a_training_row_is_caught(held_out_run):
    rows = [dict(r) for r in held_out_run[0]]
    word = sorted(HELD.objects)[0]
    i = next(i for i, r in enumerate(rows) if r["split"] == "train")
    rows[i]["positive"] = rows[i]["positive"].rstrip(".") + f", next to a {word}."
    report = audit_rows(rows, frozenset(HELD.words))
    assert not report["clean"] and report["word_leaks"] == {"train": 1}


def test_cli_exit_status_says_clean_or_not(tmp_path, held_out_run, capsys):
    rows, stats = held_out_run
    from bindlab.data.triplets.holdout import write_holdout

    write_triplets(tmp_path / "ok", rows, stats, HELD)
    assert main(["audit-splits", str(tmp_path / "ok"), "--out", str(tmp_path / "ok.json")]) == 0
    assert "clean: no train/val text" in capsys.readouterr().out
    assert json.loads((tmp_path / "ok.json").read_text())["triplets"]["clean"] is True
    bad = [dict(r) for r in rows]
    j = next(i for i, r in enumerate(bad) if r["split"] == "test_template_relative")
    k = next(i for i, r in enumerate(bad) if r["split"] == "train")
    bad[k] = {**bad[j], "split": "train", "id": bad[k]["id"]}  # a relative query in the training split
    write_triplets(tmp_path / "bad", bad, stats)
    write_holdout(tmp_path / "bad" / "holdout_vocab.json", HELD)
    with pytest.raises(SystemExit) as e:
        main(["audit-splits", str(tmp_path / "bad")])
    assert e.value.code == 1 and "NOT CLEAN" in capsys.readouterr().out


# --- toy models: held-out combinations in the recorded training streams ----------------------------------------
TOY_CFG = {"pool_size": 400, "seed": 0, "holdout_fraction": 0.15, "twin_share": 0.5}


def test_toy_streams_hold_no_held_out_pair_but_colour_slots_show_some():
    from bindlab.train.toy.audit import audit_streams

    r = audit_streams(TOY_CFG)
    assert r["clean"] and r["direct"] == 0 and r["heldout"] == 151 and r["objects"] > 800
    assert 0 < r["colour_slot"]["pairs"] < 151 and r["clean_pairs"] == 151 - r["colour_slot"]["pairs"]
    # every exposed pair is a held-out (shape, colour-word) pair shown by another attribute's form, pool or twin
    from bindlab.train.toy.data import heldout_combinations, pool_scenes, pool_twins

    held = frozenset(heldout_combinations(0.15, 0))
    scenes, _ = pool_scenes(400, 0, held)
    objects = [o for sc in scenes + [t for t in pool_twins(scenes, 0, held) if t] for o in sc]
    shown = {(s, w) for s, a, f in objects for w in f.replace("-", " ").split() if w != a}
    assert {tuple(p) for p in r["exposed_pairs"]} == shown & held
    from bindlab.data.vocab import PALETTE

    assert {a for _, a in map(tuple, r["exposed_pairs"])} <= set(PALETTE)  # colours, as the reviewer found


def test_toy_audit_catches_a_stream_that_ignores_the_hold_out(monkeypatch):
    import bindlab.train.toy.data as td
    from bindlab.train.toy.audit import audit_streams

    real = td.pool_scenes
    monkeypatch.setattr(td, "pool_scenes", lambda n, seed, heldout=frozenset(), **kw: real(n, seed, frozenset(), **kw))
    r = audit_streams(TOY_CFG)
    assert not r["clean"] and r["direct"] > 0


def test_toy_evaluation_splits_unseen_into_never_shown_and_colour_slot():
    from bindlab.train.toy.eval import by_combination

    items = [("cube", "red", "red"), ("cube", "striped", "x"), ("kite", "red", "red"), ("kite", "icy", "icy")]
    sim = np.eye(4)
    held = frozenset({("cube", "red"), ("kite", "icy")})
    out = by_combination(sim, items, held, exposed=frozenset({("cube", "red")}))
    assert out["unseen"]["n"] == 2 and out["unseen_clean"]["n"] == 1 and out["unseen_colour_slot"]["n"] == 1
    assert "unseen_clean" not in by_combination(sim, items, held)
