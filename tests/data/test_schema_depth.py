"""The JSON depth check read from a line's brackets agrees with the walk over the parsed value, and the caps of a
file are still enforced on the fast paths."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bindlab.data.files import DataError, _depth, _text_depth, iter_jsonl_bounded

_TEXT = st.text(alphabet=st.sampled_from(list('ab "\\[]{}\n\tü☃')), max_size=6)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_JSON, st.booleans())
def test_the_bracket_depth_is_the_walked_depth(value, ascii_only):
    raw = json.dumps(value, ensure_ascii=ascii_only).encode()
    depth = _text_depth(raw, cap=100)
    assert depth is None or depth == _depth(value)
    if (
        not any(c in raw.decode() for c in "\\")
        and "[" not in json.dumps(_strings(value))
        and "{" not in json.dumps(_strings(value))
    ):
        assert depth is not None  # strings without brackets or escapes never need the walk


def _strings(value):
    if isinstance(value, dict):
        return [*value, *(s for v in value.values() for s in _strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


@pytest.mark.parametrize(
    "line",
    [
        "[" * 70 + "]" * 70,  # plain
        '{"a": ' * 70 + '"[[["' + "}" * 70,  # a string with brackets: the walk decides
        "[" * 70 + '"\\"]"' + "]" * 70,  # an escaped quote
    ],
)
def test_too_deep_lines_are_refused_on_every_path(tmp_path, line):
    path = tmp_path / "d.jsonl"
    path.write_text('{"ok": [[1]]}\n' + line + "\n")
    rows = list(iter_jsonl_bounded(path))
    assert rows[0] == (1, {"ok": [[1]]})
    assert isinstance(rows[1][1], DataError) and "nested too deeply (more than 64 levels)" in str(rows[1][1])


def test_deep_but_allowed_lines_pass(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("[" * 64 + '"x[y"' + "]" * 64 + "\n" + "[" * 64 + "]" * 64 + "\n")
    assert all(not isinstance(obj, DataError) for _, obj in iter_jsonl_bounded(path))


def test_the_line_cap_is_checked_before_parsing(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(["not json"] * 5) + "\n")
    with pytest.raises(DataError, match="more than 4 lines"):
        next(iter_jsonl_bounded(path, max_lines=4))
