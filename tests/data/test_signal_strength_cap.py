"""``--signal-strengths`` is capped: each value writes and scores a whole grid."""

from __future__ import annotations

import pytest

from bindlab.data import factors as F


def test_signal_strengths_are_capped_with_a_clear_message():
    most = ",".join(str(round(i / (F.MAX_STRENGTHS - 1), 3)) for i in range(F.MAX_STRENGTHS))
    assert len(F.parse_strengths(most)) == F.MAX_STRENGTHS
    with pytest.raises(ValueError, match=f"lists {F.MAX_STRENGTHS + 1} values; at most {F.MAX_STRENGTHS}"):
        F.parse_strengths(",".join(str(i / 100) for i in range(F.MAX_STRENGTHS + 1)))


def test_the_cli_refuses_a_long_list_before_any_work(tmp_path, capsys):
    from bindlab.cli import main

    values = ",".join(str(i / 100) for i in range(40))
    assert main(["generate", "factors", "--out", str(tmp_path / "g"), "--signal-strengths", values]) == 2
    err = capsys.readouterr().err
    assert "at most 12" in err and "Traceback" not in err
    assert not (tmp_path / "g").exists()
