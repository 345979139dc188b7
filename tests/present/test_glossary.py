"""The glossary defines every term the app shows, with the numbers the code uses, and the page carries it as one
closed "Glossary" accordion above the tabs (a browser check: tests/ui/test_compare_ui.py)."""

from __future__ import annotations

import inspect

import pytest

from bindlab.present.glossary import GLOSSARY, glossary_text

REQUIRED = [
    "margin",
    "Group",
    "I2T",
    "T2I",
    "α",
    "α*",
    "LiNeS",
    "unscaled",
    "tt",
    "ti",
    "it",
    "ii",
    "chance",
    "n",
    "N",
    "95 % interval",
    "preserve",
    "attr swap",
    "obj swap",
    "joint swap",
    "mAP",
    "AP",
    "R@1",
    "leader",
]


def _terms() -> dict[str, str]:
    """Each single term -> its definition (an entry "a / b" defines a and b)."""
    return {t.strip(): text for term, text in GLOSSARY for t in term.split(" / ")}


@pytest.mark.parametrize("term", REQUIRED)
def test_every_term_the_app_shows_is_defined(term):
    terms = _terms()
    assert term in terms and len(terms[term]) > 20, f"{term!r} is not in the glossary"


def test_terms_are_unique_and_the_text_lists_them_all():
    names = [term for term, _ in GLOSSARY]
    assert len(names) == len(set(names))
    text = glossary_text()
    assert text.count("\n") == len(GLOSSARY) - 1 and all(f"{term}: " in text for term in names)


def test_the_numbers_in_the_definitions_are_the_codes():
    from bindlab.analysis.grounding import ALPHA_GRID
    from bindlab.eval.metrics import bootstrap_ci
    from bindlab.eval.pairs import CHANCE
    from bindlab.studies.compare import LEADER_RULE
    from bindlab.train.lines import PAPER_DEFAULT_A, lines_factors

    t = _terms()
    assert CHANCE == {"i2t": 0.25, "t2i": 0.25, "group": 1 / 6}
    assert "Chance 1/4" in t["I2T"] and "Chance 1/4" in t["T2I"] and "Chance 1/6" in t["Group"]
    assert "1/4 for I2T and T2I, 1/6 for Group" in t["chance"] and "1/3 at N = 2, 1/4 at N >= 3" in t["chance"]
    assert inspect.signature(bootstrap_ci).parameters["n_boot"].default == 1000 and "1,000 times" in t["95 % interval"]
    assert ALPHA_GRID[0] == 0 and ALPHA_GRID[-1] == 8 and ALPHA_GRID[1] == pytest.approx(0.05)
    assert "grid 0 to 8, step 0.05" in t["α"] and "α* = -c with c = q · d, only when -1 < c < 0" in t["α*"]
    assert PAPER_DEFAULT_A == 0.1 and "default a = 0.1" in t["LiNeS"]
    assert "λ(ℓ) = a + (1 - a) ℓ / (L - 1)" in t["LiNeS"]
    lam = lines_factors(12, 0.1)  # the first block keeps a, the last all of it
    assert (
        lam[0] == pytest.approx(0.1) and lam[-1] == pytest.approx(1.0) and lam[5] == pytest.approx(0.1 + 0.9 * 5 / 11)
    )
    assert "wholly above every other model's interval" in t["leader"] and "wholly above every other" in LEADER_RULE


def test_the_app_has_one_closed_glossary_panel_above_the_tabs_in_escaped_text():
    import gradio as gr

    from bindlab.ui.app import build_app
    from bindlab.ui.glossary import glossary_markdown

    demo = build_app()
    blocks = list(demo.blocks.values())
    panels = [b for b in blocks if isinstance(b, gr.Accordion) and b.label == "Glossary"]
    assert len(panels) == 1 and panels[0].open is False and panels[0].elem_id == "bl-glossary"
    ids = list(demo.blocks)
    tabs = next(k for k, b in demo.blocks.items() if isinstance(b, gr.Tabs))
    assert ids.index(panels[0]._id) < ids.index(tabs)  # near the top: before the tabs
    md = glossary_markdown()
    assert "α\\*" in md and "<" not in md.replace("&lt;", "")  # Markdown and HTML escaped: shown as text
