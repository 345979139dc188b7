"""The model cards' headline tables over training seeds are rendered from the shipped seed studies
(docs/seed-studies/*.json) by ``scripts/seed_study.py --claims``: regenerate each block and diff it with the card."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[1]
CARDS = {
    "bindlab/assets/toy-shared/README.md": "docs/seed-studies/toy-shared-finetune.json",
    "bindlab/assets/toy-lit-minilm/README.md": "docs/seed-studies/toy-lit-minilm-finetune.json",
}
START, END = "<!-- seed-study:card-finetune -->", "<!-- /seed-study:card-finetune -->"


def _block(text: str) -> str:
    return text.split(START, 1)[1].split(END, 1)[0].strip()


@pytest.mark.parametrize("card", sorted(CARDS))
def test_card_claims_regenerate_from_the_shipped_study(card):
    mod = load_script("seed_study")
    shown = _block((ROOT / card).read_text())
    rows = []
    for line in shown.splitlines()[2:]:
        name = re.sub(r" \(n = \d+\)$", "", line.split(" | ")[0].lstrip("| "))
        if name not in rows:
            rows.append(name)
    assert rows, f"{card}: the block has no rows"
    study = json.loads((ROOT / CARDS[card]).read_text())
    assert mod.claims_markdown(study, rows) == shown
    assert study["seeds"] == [0, 1, 2, 3, 4]  # a procedure's claims: five seeds


def test_an_unknown_row_is_refused():
    mod = load_script("seed_study")
    study = json.loads((ROOT / CARDS["bindlab/assets/toy-shared/README.md"]).read_text())
    with pytest.raises(SystemExit, match="no row"):
        mod.claims_markdown(study, ["no such row"])


def test_the_negclip_card_table_regenerates_from_its_per_item_files():
    """toy:negclip's finetune stage over five seeds: the card's table is paired_items --family on the shipped
    per-item files (each seed's model and both bases scored on the same items)."""
    mod = load_script("paired_items")
    folder = ROOT / "docs/seed-studies/toy-negclip-stage2"
    rows = json.loads((folder / "rows.json").read_text())
    assert all(len(r["runs"]) >= 5 for r in rows)  # the minimum for a procedure
    card = (ROOT / "bindlab/assets/toy-negclip/README.md").read_text()
    shown = card.split("<!-- seed-study:card-stage2 -->", 1)[1].split("<!-- /seed-study:card-stage2 -->", 1)[0]
    assert mod.family_table(rows, root=folder) == shown.strip()


def test_the_clip_card_gap_table_regenerates_from_its_per_item_files():
    """The toy:clip recipe's seen-vs-never-shown gap over five training seeds (short runs): the card's table and
    reproductions.md's are combination_gap over the shipped per-item files (eval toy --per-item)."""
    mod = load_script("combination_gap")
    folder = ROOT / "docs/seed-studies/toy-clip-short-gap"
    runs = [str(folder / f"item-seed-{s}.jsonl") for s in range(5)]
    table = mod.gap_table(runs, ["t2i", "i2t"], "unseen_clean")
    for doc, tag in (
        ("bindlab/assets/toy-clip/README.md", "card-gap"),
        ("docs/reproductions.md", "toy-clip-short-gap"),
    ):
        text = (ROOT / doc).read_text()
        shown = text.split(f"<!-- seed-study:{tag} -->", 1)[1].split(f"<!-- /seed-study:{tag} -->", 1)[0]
        assert shown.strip() == table, doc
    assert all(line.rstrip().endswith("| holds |") for line in table.splitlines()[2:])
