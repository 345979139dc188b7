"""LiNeS as published (Wang et al., 2025): bindlab's default profile is their single-task formula and default,
term by term from their code, and a model with a = 1 is called "unscaled", never "LiNeS"."""

from __future__ import annotations

import numpy as np
import pytest

from bindlab.train import lines as L


def _their_lines_scaling(names: list[str], alpha: float, beta: float, num_blocks: int) -> dict[str, float]:
    """The factor per parameter name, written as their ``LiNeS_scaling`` computes it (src/eval/eval.py, commit
    43a7bdd): ``alpha + beta * layer / (num_blocks - 1)`` for a name in block ``layer``, ``alpha`` outside blocks."""
    out = {}
    for k in names:
        for layer in range(num_blocks):
            if f".{layer}." in k:
                out[k] = alpha + beta * (layer / (num_blocks - 1))
                break
    return {k: out.get(k, alpha) for k in names}


@pytest.mark.parametrize("n_blocks", [2, 6, 12, 36])
def test_default_profile_is_their_single_task_formula_at_their_default(n_blocks):
    names = [f"encoder.layer.{i}.attention.self.query.lora_B.weight" for i in range(n_blocks)] + ["embeddings.w"]
    theirs = _their_lines_scaling(names, alpha=0.1, beta=1 - 0.1, num_blocks=n_blocks)  # LiNeS_example.ipynb
    ours = {k: L.scale_factor(k, n_blocks, L.PAPER_DEFAULT_A) for k in names}
    assert ours == pytest.approx(theirs, abs=1e-12)
    f = L.lines_factors(n_blocks, L.PAPER_DEFAULT_A)
    assert f[0] == pytest.approx(0.1) and f[-1] == pytest.approx(1.0)  # shallowest keeps 10 %, deepest all of it
    assert np.all(np.diff(f) > 0)


def test_finetune_uses_the_published_default_and_grid():
    from bindlab.train.finetune import DEFAULT_LINES_A, LINES_GRID, FinetuneConfig

    assert DEFAULT_LINES_A == L.PAPER_DEFAULT_A == 0.1
    assert FinetuneConfig(model="minilm", data="x").lines_a == 0.1  # applied by default, no search
    assert LINES_GRID == pytest.approx(np.arange(0.0, 1.1, 0.1)[::-1])  # their eval.py line 202
    assert FinetuneConfig(model="minilm", data="x", lines_a="auto").lines_a == "auto"  # the search stays an option


def test_alpha_beta_map_onto_a_exactly_and_refuse_the_multi_task_setting():
    assert L.from_alpha_beta(0.3, 0.7) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="not the single-task setting"):
        L.from_alpha_beta(0.2, 0.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        L.from_alpha_beta(1.5, -0.5)


@pytest.mark.parametrize(
    "a, label",
    [
        (1.0, "unscaled"),
        (1, "unscaled"),
        (None, "unscaled"),
        (0.1, "LiNeS (a=0.1)"),
        (0.0, "LiNeS (a=0)"),
        (0.9, "LiNeS (a=0.9)"),
    ],
)
def test_a_of_one_is_labelled_unscaled_never_lines(a, label):
    assert L.model_label(a) == label
    if a in (1, 1.0, None):
        assert "lines" not in L.model_label(a).lower()


def test_a_of_one_scales_nothing():
    state = {"layer.0.q.lora_B.weight": np.ones(3), "layer.1.q.lora_B.weight": np.ones(3), "x.lora_A": np.ones(2)}
    out = L.scale_lora_state(state, 2, 1.0)
    assert all(np.array_equal(out[k], state[k]) for k in state)
    assert not L.is_scaled(1.0) and L.is_scaled(0.99)
