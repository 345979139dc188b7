"""MCQ file validation: every bad line is named by line number; nothing is dropped silently."""

from __future__ import annotations

import json

import pytest

from bindlab.data.saber import generate_saber
from bindlab.data.schema import DataError, load_mcqs


def _write(tmp_path, lines):
    p = tmp_path / "mcq.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.fixture
def good_lines():
    return [json.dumps(q.to_json()) for q in generate_saber(per_size=2, sizes=[2, 3], seed=0)]


def _mutate(line, fn):
    obj = json.loads(line)
    fn(obj)
    return json.dumps(obj)


@pytest.mark.parametrize(
    "mutation,message",
    [
        (lambda o: o["candidates"].pop(), "exactly 4 candidates, got 3"),
        (lambda o: o.__setitem__("answer", 7), "answer index 7 is out of range"),
        (lambda o: o["query"].__setitem__("text", "  "), "'text' is missing or empty"),
        (lambda o: o.pop("query"), "missing field"),
        (lambda o: o["candidates"][1].__setitem__("role", "wild"), "role 'wild'"),
        (lambda o: o.__setitem__("subset", "other"), "subset 'other'"),
    ],
)
def test_bad_question_refuses_file_naming_the_line(tmp_path, good_lines, mutation, message):
    lines = list(good_lines)
    lines[2] = _mutate(lines[2], mutation)
    p = _write(tmp_path, lines)
    with pytest.raises(DataError, match=message) as e:
        load_mcqs(p)
    assert f"{p}:3" in str(e.value)


def test_malformed_json_is_named_and_can_be_skipped(tmp_path, good_lines):
    lines = list(good_lines)
    lines.insert(1, '{"id": "broken", ')
    p = _write(tmp_path, lines)
    with pytest.raises(DataError, match=r"mcq.jsonl:2: not valid JSON"):
        load_mcqs(p)
    qs, report = load_mcqs(p, strict=False)
    assert len(qs) == len(good_lines)
    assert report.skipped[0][0] == 2
    assert "skipped 1" in report.summary()


def test_duplicate_ids_and_empty_files(tmp_path, good_lines):
    p = _write(tmp_path, [good_lines[0], good_lines[0]])
    with pytest.raises(DataError, match="duplicate question id"):
        load_mcqs(p)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DataError, match="no valid questions"):
        load_mcqs(empty)
    with pytest.raises(DataError, match="file not found"):
        load_mcqs(tmp_path / "missing.jsonl")
    with pytest.raises(DataError, match="is a folder"):
        load_mcqs(tmp_path)


@pytest.mark.parametrize(
    "mutation,message",
    [
        (lambda o: o.__setitem__("answer", (o["answer"] + 1) % 4), "binding-preserving candidate is"),
        (lambda o: [c.__setitem__("role", "preserve") for c in o["candidates"]], "exactly one 'preserve'"),
        (lambda o: o.__setitem__("n_objects", 1_000_000_000), "above the cap"),
        (lambda o: o.__setitem__("n_objects", 7), "does not match the query's"),
        (lambda o: o.__setitem__("n_objects", True), "must be a positive integer"),
        (lambda o: o.__setitem__("chain_pos", -1), "chain_pos must be a non-negative"),
        (lambda o: o["query"].__setitem__("image", "../../etc/passwd"), "outside the data file's folder"),
        (lambda o: o["candidates"][0].__setitem__("image", "/etc/passwd"), "outside the data file's folder"),
    ],
)
def test_semantic_checks_name_file_and_line(tmp_path, good_lines, mutation, message):
    lines = list(good_lines)
    lines[1] = _mutate(lines[1], mutation)
    path = _write(tmp_path, lines)
    with pytest.raises(DataError, match=message) as e:
        load_mcqs(path)
    assert f"{path}:2" in str(e.value)


def test_non_finite_numbers_and_deep_nesting_are_messages(tmp_path, good_lines):
    for bad in [good_lines[0].replace('"answer": ', '"score": NaN, "answer": '), "[" * 50_000 + "]" * 50_000]:
        path = _write(tmp_path, [bad])
        with pytest.raises(DataError, match=f"{path}:1"):
            load_mcqs(path)


def test_sizes_inside_a_file_are_capped_where_they_enter(tmp_path, monkeypatch):
    """Caption length, bindings per item and questions per file are checked while the file is read, before any
    model sees it (a 4 MB upload once made one Browse question view take 20 minutes of CPU)."""
    import json

    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.data.schema import DataError, load_mcqs

    qs = generate_saber(per_size=2, sizes=[2, 3], seed=0)
    path = write_benchmark(tmp_path / "ok", qs, {"seed": 0})
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    monkeypatch.setenv("BINDLAB_MAX_QUESTIONS", "3")
    with pytest.raises(DataError, match="more than 3 questions"):
        load_mcqs(path)
    monkeypatch.delenv("BINDLAB_MAX_QUESTIONS")
    for mutate, says in [
        (lambda r: r["query"].update(text="red " * 5000), "characters"),
        (lambda r: r["candidates"][1].update(bindings=[["red", "cube"]] * 500), "bindings"),
        (lambda r: r["query"].update(bindings=[["x" * 20000, "cube"]]), "attribute"),
    ]:
        bad = json.loads(json.dumps(rows[0]))
        mutate(bad)
        f = tmp_path / f"bad-{says}.jsonl"
        f.write_text(json.dumps(bad) + "\n")
        with pytest.raises(DataError, match=says):
            load_mcqs(f)
