"""The scored-set memo forgets a session's uploads when the session ends (bindlab.studies.memo.forget_under)."""

from __future__ import annotations

from pathlib import Path

from bindlab.studies.memo import forget_under


def test_forget_under_drops_only_files_inside_the_folder(tmp_path: Path) -> None:
    mine, other = tmp_path / "uploads" / "s1", tmp_path / "uploads" / "s10"
    memo = {
        (str(mine / "mcq.jsonl"), 1.0, "bow", "tt"): "a",
        (str(other / "mcq.jsonl"), 1.0, "bow", "tt"): "b",
        (str(tmp_path / "default" / "mcq.jsonl"), 1.0, "bow", "tt"): "c",
    }
    gone = forget_under(memo, mine)
    assert [k[0] for k in gone] == [str(mine / "mcq.jsonl")]
    assert sorted(memo.values()) == ["b", "c"]  # a sibling folder sharing the prefix stays
