"""The README's figures are measured, not remembered (issue 30, item 9): its compare example is what the command
prints today, and the figures quoted around it (chance, the toys' two text→text numbers, the share of unknown words)
are what a fresh run of the same study gives. When a model is retrained and a figure moves, this test fails until the
README says the new figure.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bindlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _squeeze(text: str) -> list[str]:
    """Non-empty lines with runs of spaces made one (the table's padding depends on the widest cell)."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def _block_after(marker: str) -> str:
    """The first fenced code block after the sentence that contains ``marker``."""
    start = README.index(marker)
    m = re.search(r"```[a-z]*\n(.*?)```", README[start:], flags=re.S)
    assert m, f"no code block after {marker!r} in README.md"
    return m.group(1)


def _readme_says(*fragments: str) -> None:
    """Each fragment occurs in the README once line breaks are read as spaces."""
    flat = " ".join(README.split())
    missing = [f for f in fragments if f not in flat]
    assert not missing, f"README.md does not say {missing} (a fresh run gives these figures)"


@pytest.mark.slow  # a minute: four models on the MCQ and pairs sets (``python -m pytest -m slow tests/test_readme_figures.py``)
def test_the_compare_example_is_what_the_command_prints(tmp_path, capsys):
    command = "python -m bindlab compare --models bow,minilm,toy:clip,toy:shared --suite mcq,pairs --out cmp.json"
    assert command in README
    shown = _squeeze(_block_after("The first command above"))
    assert main(command.split()[3:-1] + [str(tmp_path / "cmp.json")]) == 0
    printed = _squeeze(capsys.readouterr().out)
    missing = [line for line in shown if line not in printed]
    assert not missing, "the README's compare example is not what the command prints now:\n" + "\n".join(printed)


def _leaderboard(data: str, models: list[str]) -> tuple[dict[str, dict], dict[str, float]]:
    """The compare study (what ``compare`` and the Compare tab run): leaderboard rows by model, chance by column."""
    from bindlab.studies.compare import CompareRequest, run_compare

    result = run_compare(CompareRequest(models=models, suite=["mcq"], data=data))
    chance = {sc["column"]: sc["chance"] for sc in result.tables["scores"] if sc["chance"] is not None}
    return {r["model"]: r for r in result.summary["leaderboard"]}, chance


def _ci(row: dict, key: str = "MCQ tt") -> str:
    lo, hi = row[f"{key} 95% CI"]
    return f"{row[key]:.3f} [{lo:.3f}, {hi:.3f}]"


def test_the_text_benchmark_figures_are_a_fresh_run():
    """README: on the embedded text benchmark MiniLM 0.300 [0.239, 0.372], toy:clip 0.177 [0.133, 0.225], toy:shared
    0.191 [0.143, 0.246], 36.5 % of the words unknown to the toys; chance 0.259 = bow."""
    from bindlab.studies.common import default_dataset

    text = str(default_dataset(images=False))
    rows, chance = _leaderboard(text, ["minilm", "toy:clip", "toy:shared", "bow"])
    clip, shared, minilm = rows["toy:clip"], rows["toy:shared"], rows["minilm"]
    _readme_says(f"MiniLM's {_ci(minilm)} is at chance", f"toy:clip {_ci(clip)}", f"toy:shared {_ci(shared)}")
    lo, hi = clip["MCQ tt 95% CI"]
    _readme_says(f"{clip['MCQ tt']:.3f} (95 % CI {lo:.3f}–{hi:.3f}, below chance)")
    unknown = {r["unknown words %"] for r in (clip, shared)}
    assert len(unknown) == 1, unknown  # the two toys share one vocabulary
    _readme_says(f"{unknown.pop():.1f} % of the words")
    assert rows["bow"]["MCQ tt"] == pytest.approx(chance["MCQ tt"], abs=5e-4)
    _readme_says(f"{rows['bow']['MCQ tt']:.3f} on the embedded benchmark, exactly what `bow` scores")
