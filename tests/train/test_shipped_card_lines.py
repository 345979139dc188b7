"""The shipped toy:lit-minilm card says what its generator says: the captions line (how many scenes' captions were
embedded, and for what) is rendered from the model's own training.json, not edited by hand."""

from __future__ import annotations

import json
from pathlib import Path

from bindlab.train.toy.card import card_text

ASSET = Path(__file__).resolve().parents[2] / "bindlab" / "assets" / "toy-lit-minilm"


def _line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("- captions in real English"))


def test_the_lit_cards_captions_line_is_the_rendered_one():
    training = json.loads((ASSET / "training.json").read_text())
    evaluation = json.loads((ASSET / "eval.json").read_text())
    rendered = _line(card_text("toy:lit-minilm", training, evaluation, "python -m bindlab train toy"))
    assert rendered == _line((ASSET / "README.md").read_text())
    ranked = training["train_config"].get("rank_scenes")
    if ranked:  # the ranked metric read the first rank_scenes scenes' captions, not the whole pool's
        assert f"the first {ranked:,} of the" in rendered
