"""Labels computed from the data (issue 55 item 5): what each set was used for lives in bindlab/data/set_uses.json;
the sentences the docs and the cards print about those sets are regenerated from it here and diffed against them,
and no text calls a selection set fresh."""

from __future__ import annotations

import re

import pytest

from bindlab.config import repo_root
from bindlab.data.set_uses import USES, seed_label, seeds_with, set_uses, sets_sentence

DOCS = ("docs/reproductions.md", "docs/finetune_results.md", "bindlab/assets/toy-lit-minilm/README.md")
CARDS = tuple(f"bindlab/assets/{m}/README.md" for m in ("toy-clip", "toy-shared", "toy-negclip", "toy-lit-minilm"))


def _text(rel: str) -> str:
    return (repo_root() / rel).read_text()


def test_the_record_says_only_seed_16_is_fresh():
    assert {s["use"] for s in set_uses()} <= set(USES)
    assert seeds_with("fresh") == [16] and seeds_with("selection") == [11, 12, 13, 14, 15]
    assert seed_label(16) == "seed 16 (fresh: chosen on none)" and seed_label(11) == "seed 11 (selection set)"
    with pytest.raises(ValueError, match="not in set_uses.json"):
        seed_label(99)


@pytest.mark.parametrize("rel", ["docs/reproductions.md", "bindlab/assets/toy-lit-minilm/README.md"])
def test_the_sets_sentence_is_the_rendered_one(rel):
    assert sets_sentence() in _text(rel)


@pytest.mark.parametrize("rel", sorted(set(DOCS) | set(CARDS)))
def test_no_text_calls_a_selection_set_fresh(rel):
    text = " ".join(_text(rel).split())
    bad = [
        m.group(0)
        for m in re.finditer(r"(all )?(six|6) fresh( image)? (MCQ )?sets|fresh[^.;]{0,80}seeds 11[-–]1[56]", text)
    ]
    assert not bad, f"{rel} calls selection sets fresh: {bad}"


def test_readme_calls_the_mixed_subset_what_it_is():
    text = " ".join(_text("README.md").split())
    assert ".452 → .351 unscaled on fresh questions" not in text
