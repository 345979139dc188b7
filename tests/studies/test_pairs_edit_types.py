"""The per-edit-type table of the Pairs tab: every CompoSET edit type has a row; a missing one has n = 0, no scores."""

from __future__ import annotations

from types import SimpleNamespace

from bindlab.data.composet import EDIT_TYPES
from bindlab.studies.pairs import edit_type_table


def _scored(rows):
    """A scored file as edit_type_table reads it: its table, its summary's intervals, its pairs (n // 3 per type)."""
    by = {r["edit_type"]: {f"{k}_ci95": [0.0, 1.0] for k in ("i2t", "t2i", "group")} for r in rows}
    pairs = [SimpleNamespace(edit_type=r["edit_type"]) for r in rows for _ in range(r["n"] // 3)]
    return SimpleNamespace(
        result=SimpleNamespace(tables={"by_edit_type": rows}), summary={"by_edit_type": by}, pairs=pairs
    )


def _with_counts(row):
    return {**row, "pairs": row["n"] // 3, **{f"{k}_ci95": [0.0, 1.0] for k in ("i2t", "t2i", "group")}}


def test_composet_sets_list_every_edit_type_in_taxonomy_order():
    rows = [
        {"edit_type": "swap_color", "category": "attribute", "n": 3, "i2t": 0.0, "t2i": 0.0, "group": 0.0},
        {"edit_type": "add_object", "category": "state_presence", "n": 6, "i2t": 1.0, "t2i": 0.5, "group": 0.5},
    ]
    table = edit_type_table(_scored(rows))
    assert [r["edit_type"] for r in table] == list(EDIT_TYPES)
    by = {r["edit_type"]: r for r in table}
    # zero stays zero; each row says how many pairs stand behind its n rows, and its scores' intervals
    assert by["swap_color"] == _with_counts(rows[0]) and by["add_object"] == _with_counts(rows[1])
    assert by["add_object"]["pairs"] == 2 and by["add_object"]["n"] == 6
    assert by["move_vertical"] == {
        "edit_type": "move_vertical",
        "category": "spatial",
        "origin": "bindlab",
        "n": 0,
        "pairs": 0,
        "i2t": None,
        "t2i": None,
        "group": None,
        "i2t_ci95": None,
        "t2i_ci95": None,
        "group_ci95": None,
    }  # missing says missing


def test_other_sets_keep_their_own_edit_types():
    rows = [{"edit_type": "winoground_relation", "category": "", "n": 5, "i2t": 0.2, "t2i": 0.2, "group": 0.0}]
    assert edit_type_table(_scored(rows)) == [_with_counts(r) for r in rows]
