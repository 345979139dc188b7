"""The per-edit-type table of the Pairs tab: every CompoSET edit type has a row; a missing one has n = 0, no scores."""

from __future__ import annotations

from types import SimpleNamespace

from bindlab.data.composet import EDIT_TYPES
from bindlab.studies.pairs import edit_type_table


def _scored(rows):
    return SimpleNamespace(result=SimpleNamespace(tables={"by_edit_type": rows}))


def test_composet_sets_list_every_edit_type_in_taxonomy_order():
    rows = [{"edit_type": "swap_color", "category": "attribute", "n": 3, "i2t": 0.0, "t2i": 0.0, "group": 0.0},
            {"edit_type": "add_object", "category": "state_presence", "n": 2, "i2t": 1.0, "t2i": 0.5, "group": 0.5}]
    table = edit_type_table(_scored(rows))
    assert [r["edit_type"] for r in table] == list(EDIT_TYPES)
    by = {r["edit_type"]: r for r in table}
    assert by["swap_color"] == rows[0] and by["add_object"] == rows[1]  # zero stays zero
    assert by["move_vertical"] == {"edit_type": "move_vertical", "category": "spatial", "origin": "bindlab", "n": 0,
                                   "i2t": None, "t2i": None, "group": None}  # missing says missing


def test_other_sets_keep_their_own_edit_types():
    rows = [{"edit_type": "winoground_relation", "category": "", "n": 5, "i2t": 0.2, "t2i": 0.2, "group": 0.0}]
    assert edit_type_table(_scored(rows)) == rows
