"""docs/notebook.py, the researcher's starting notebook, runs cell by cell in a real Jupyter kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebook.py"


def test_the_notebook_runs_in_a_kernel_and_shows_its_results(tmp_path, default_scores_cached):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    nb = jupytext.read(NOTEBOOK)
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()  # raises on a failing cell
    texts, mimes = [], set()
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts.append(out.get("text", ""))
            data = out.get("data", {})
            mimes.update(data)
            texts.append(data.get("text/plain", ""))
    joined = "\n".join(texts)
    assert "MiniLM: accuracy" in joined and "py:bigram-hash-512: accuracy" in joined
    assert "questions where" in joined and "text/html" in mimes  # the leaderboard and the diff as tables
    assert "image/svg+xml" in mimes  # the accuracy-by-N plots, inline
