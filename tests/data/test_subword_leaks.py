"""Held out below the word (issue 55): the split audit flags a held-out word that training text holds inside a
longer word (WordPiece: cup / cup ##cake) or beside its stem (snowy / snow), and the hold-out selection avoids such
words from now on."""

from __future__ import annotations

import json

import pytest

from bindlab.cli import main
from bindlab.data.triplets import Variants, generate_triplets, write_triplets
from bindlab.data.triplets.audit import audit_rows
from bindlab.data.triplets.holdout import HeldOutWords, near_leaks, related, select_holdout, word_stem

LEAKS = {("cup", "cupcake"), ("boat", "boathouse"), ("tree", "treehouse"), ("snowy", "snow")}


def _row(split, text, bindings=(("red", "kite"),)):
    return {"split": split, "query": text, "positive": text, "negative": text, "bindings": [list(b) for b in bindings]}


def test_stems_and_prefixes():
    assert word_stem("snowy") == "snow" and word_stem("red") == "red" and word_stem("striped") == "strip"
    assert related("snowy", "snow") == "stem" and related("cup", "cupcake") == "prefix"
    assert related("red", "blue") == "" and related("red", "red") == ""


def test_the_audit_flags_the_four_leaks_with_the_minilm_wordpiece():
    from bindlab.studies.audit import tokenizers_of

    rows = [
        _row("train", "A red cupcake in the boathouse."),
        _row("train", "A red kite in the treehouse, in falling snow."),
        _row("test_unseen_words", "A snowy cup, a boat and a tree.", (("snowy", "cup"),)),
    ]
    held = frozenset({"cup", "boat", "tree", "snowy"})
    assert audit_rows(rows, held)["word_leaks"] == {}  # whole words: none of them is in training text
    tok = tokenizers_of(["minilm"])
    report = audit_rows(rows, held, tokenizers=tok)
    assert not report["clean"]
    found = {(n["held"], n["trained"]) for n in report["near_leaks"]}
    assert found == LEAKS
    pieces = {(n["held"], n["trained"]) for n in report["near_leaks"] if n["why"] == "pieces"}
    assert pieces == {("cup", "cupcake"), ("boat", "boathouse"), ("tree", "treehouse")}  # cup ##cake, ...
    assert {n["tokenizer"] for n in report["near_leaks"] if n["why"] == "pieces"} == {"minilm"}


def test_generated_set_with_the_old_choice_is_flagged_and_todays_choice_is_clean(tmp_path):
    now = select_holdout(0.2, seed=0)
    assert not {"cup", "boat", "tree", "snowy"} & now.words  # seed 0 held these out before the fix
    assert near_leaks(now.words, ["cupcake", "boathouse", "treehouse", "snow"]) == []
    old = HeldOutWords(
        tuple(sorted({*now.objects, "cup", "boat", "tree"})), tuple(sorted({*now.attributes, "snowy"})), 0.2, 0
    )
    for held, clean in ((old, False), (now, True)):
        out = tmp_path / ("old" if held is old else "now")
        rows, stats = generate_triplets(1500, seed=3, variants=Variants(None, (), held))
        write_triplets(out, rows, stats, held)
        code = 0
        try:
            main(["audit-splits", str(out), "--out", str(out / "audit.json")])
        except SystemExit as e:
            code = e.code
        report = json.loads((out / "audit.json").read_text())["triplets"]
        assert report["clean"] is clean and (code == 0) is clean
        if not clean:
            assert {(n["held"], n["trained"]) for n in report["near_leaks"]} & LEAKS


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_selection_avoids_related_pairs(seed):
    from bindlab.data.triplets.holdout import _generator_words

    held = select_holdout(0.2, seed)
    assert near_leaks(held.words, _generator_words() - held.words) == []
