"""Pairs with two models in one call (``compare_pairs``, the Pairs tab's *Compare with*): each model's numbers are
exactly its own ``run_pairs`` numbers, side by side per edit type; a bad second model is refused with a message."""

from __future__ import annotations

import pytest

from bindlab.studies import pairs as study


def _noop_progress(*_args, **_kwargs):
    return None


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    """A small CompoSET-style file and two different tiny random image+text encoders."""
    from bindlab.data.composet import generate_composet
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("pairs-compare")
    data = generate_composet(root / "cs", scenes=2, foils_per_scene=15, seed=1, size=64, workers=1)
    return str(data), build_tiny("hf-clip", root / "clip"), build_tiny("hf-siglip", root / "siglip")


def test_compare_sets_each_models_own_scores_side_by_side(two_models):
    data, a, b = two_models
    seen = []
    c = study.compare_pairs(data, a, b, "short", progress=lambda f, m: seen.append(f))
    assert c.models == (study.scored_pairs(data, a, "short").model, study.scored_pairs(data, b, "short").model)
    assert seen and min(seen) >= 0 and max(seen) <= 1
    for s in (c.first, c.second):
        own = study.run_pairs(study.PairsRequest(data=data, model=s.model, verbosity="short"))
        assert s.summary["overall"] == own.summary["overall"]
        by_type = {r["edit_type"]: r for r in study.edit_type_table(s)}
        mine = [r for r in c.rows if r["model"] == s.model]
        assert [r["edit_type"] for r in mine] == list(by_type)  # every edit type, in the taxonomy's order
        for r in mine:
            assert (r["n"], r["i2t"], r["t2i"], r["group"]) == tuple(
                by_type[r["edit_type"]][k] for k in ("n", "i2t", "t2i", "group")
            )
    # the wide table: overall first, then one row per edit type, a column per (score, model)
    top = c.table[0]
    assert top["edit_type"] == "overall" and top["n"] == 30
    for s in (c.first, c.second):
        for k in ("i2t", "t2i", "group"):
            assert top[f"{k} {s.model}"] == s.summary["overall"][k]
    assert [r["edit_type"] for r in c.table[1:]] == [r["edit_type"] for r in study.edit_type_table(c.first)]


def test_compare_refuses_an_empty_or_repeated_second_model(two_models):
    data, a, _ = two_models
    with pytest.raises(ValueError, match="compare with: give a second"):
        study.compare_pairs(data, a, "  ")
    with pytest.raises(ValueError, match="is the model already scored"):
        study.compare_pairs(data, a, a)


def test_default_partner_is_the_fix_of_toy_clip():
    assert study.compare_default("toy:clip") == "toy:negclip"
    assert study.compare_default("toy:negclip") == "toy:clip"
    assert study.compare_default("toy:shared") is None


def test_the_tabs_score_returns_both_models_when_asked(two_models):
    from bindlab.ui import pairs as tab

    data, a, b = two_models
    out = tab.score(data, a, "short", b, progress=_noop_progress)
    summary, _chart, edit_table, cmp_md, cmp_fig, cmp_table = out[:6]
    from pandas.io.formats.style import Styler

    assert cmp_table["visible"] is True and edit_table["visible"] is True
    cmp_table = cmp_table["value"]
    cmp_table = cmp_table.data if isinstance(cmp_table, Styler) else cmp_table  # 3 decimals shown, numbers kept
    assert "Group" in summary and "Compared with" in cmp_md and "Group" in cmp_md
    assert cmp_fig is not None and len(cmp_fig.data) == 6  # two models x three panels
    assert cmp_table.iloc[0]["edit type"] == "overall" and any(b in col for col in cmp_table.columns)
    # one model: no comparison, and its table hidden (empty, it would show a placeholder header "1 2 3")
    none = tab.score(data, a, "short", tab.NO_COMPARE, progress=_noop_progress)
    assert none[3] == "" and none[4] is None and none[5]["value"].empty and none[5]["visible"] is False
    assert tab.suggest_compare("toy:clip", "none")["value"] == "toy:negclip"
    assert tab.suggest_compare(a, a)["value"] == tab.NO_COMPARE
    assert "value" not in tab.suggest_compare(a, b)
