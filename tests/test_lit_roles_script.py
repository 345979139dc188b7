"""scripts/lit_roles.py: pairwise wins of the right candidate over each distractor role (docs/reproductions.md)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from tests.script_module import load_script


def _script():
    return load_script("lit_roles")


def test_role_wins_counts_one_decision_per_distractor_in_each_direction():
    """One decision per (question, distractor): the right candidate must score strictly above it (a tie is a loss);
    each role's share over the questions, per direction."""
    mod = _script()
    e = np.eye(3)
    mixed = (e[0] + e[1]) / np.sqrt(2)
    q0 = SimpleNamespace(
        answer=1, candidates=[SimpleNamespace(role=r) for r in ("attr_swap", "preserve", "obj_swap", "replace")]
    )
    q1 = SimpleNamespace(
        answer=2, candidates=[SimpleNamespace(role=r) for r in ("attr_swap", "obj_swap", "preserve", "replace")]
    )
    # rows: query, then the four candidates in the question's order
    img = np.stack(
        [
            [e[0], e[1], e[0], e[1], e[2]],  # ti q0: the right image alone matches the text query
            [e[1], e[0], e[1], mixed, e[2]],
        ]
    )  # ti q1: the attr_swap image matches it better than the right one
    txt = np.stack(
        [
            [e[0], e[1], e[0], e[1], e[0]],  # it q0: the replacement text ties with the right one
            [e[0], e[1], e[0], e[1], e[2]],
        ]
    )  # it q1: the attr_swap text ties with the right one
    assert mod.role_wins([q0, q1], txt, img, "ti") == {"attr_swap": 0.5, "obj_swap": 1.0, "replace": 1.0}
    assert mod.role_wins([q0, q1], txt, img, "it") == {"attr_swap": 0.5, "obj_swap": 1.0, "replace": 0.5}
