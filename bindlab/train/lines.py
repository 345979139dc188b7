"""LiNeS (Wang et al., 2025): post-hoc, layer-increasing scaling of a finetuning update.

The update of block ``l`` (0-based, ``L`` blocks) is multiplied by ``lambda(l) = a + (1 - a) * l / (L - 1)``:
shallow blocks keep only a fraction ``a`` of their change, the deepest block keeps all of it. Parameters that
belong to no block (embeddings, projections) are scaled by ``a``. For a LoRA update ``dW = (alpha / r) * B @ A``
scaling ``B`` alone scales ``dW`` exactly, so :func:`scale_lora_state` multiplies only the ``lora_B`` tensors.

**As published.** Wang, Dimitriadis, Favero, Ortiz-Jimenez, Fleuret, Frossard, "LiNeS: Post-training Layer Scaling
Prevents Forgetting and Enhances Model Merging", ICLR 2025 (arXiv 2410.17146), write
``lambda(l) = alpha + beta * (l - 1) / (L - 1)`` for 1-based ``l``. Their official code (github.com/wang-kee/LiNeS,
commit 43a7bdd564a16195b164abc2c64ec1856c59c211) is where the single-task setting is pinned down:

- ``src/eval/eval.py`` lines 56-97, ``LiNeS_scaling``: factor ``alpha + beta * (layer / (num_blocks - 1))`` for
  0-based ``layer`` (line 85); parameters outside the residual blocks get ``alpha`` (line 93).
- ``src/eval/eval.py`` lines 111-116: for ``method.name == "single_task"`` they call it with
  ``alpha=scaling_coef, beta=1 - scaling_coef`` — so the deepest block is never scaled.
- ``LiNeS_example.ipynb``, cell "Apply LiNeS" (the authors' worked single-task example):
  ``alpha = 0.1`` and ``line_scaling(task_vector, alpha=alpha, beta=1-alpha, num_blocks=12)``; the only fixed
  single-task value the authors publish. That is :data:`PAPER_DEFAULT_A`, bindlab's default.
- ``src/eval/eval.py`` line 202: their optional search grid ``np.arange(0.0, 1.1, 0.1)[::-1]`` (1.0, 0.9, ..., 0.0),
  scored on validation by ``find_optimal_coef_tradeoff`` (``src/utils/utils.py`` line 171) with
  ``tradeoff_target_weight = 2`` (``config/method/single_task.yaml``). :data:`PAPER_GRID` is that grid; bindlab's
  ``--lines-a auto`` searches it on validation triplets against the forgetting control.

Mapping onto bindlab exactly: ``a = alpha``, ``1 - a = beta``, and bindlab's 0-based ``l`` is their ``layer``
(their paper's ``l - 1``): ``a + (1 - a) * l / (L - 1) == alpha + beta * layer / (num_blocks - 1)`` term by term,
with the same ``alpha`` for parameters outside the blocks (:func:`from_alpha_beta` refuses an ``(alpha, beta)`` pair
that is not single-task, i.e. ``alpha + beta != 1``). ``a = 1`` is no scaling at all: such a model is "unscaled",
never "LiNeS" (:func:`model_label`).

Everything here is pure: names and numbers in, numbers out; tensors may be numpy arrays or torch tensors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

# Block containers across the backbones bindlab trains: BERT ``encoder.layer.3``, CLIP/Qwen ``layers.3``,
# GPT ``h.3``, ViT/toy ``blocks.3``, open_clip ``resblocks.3``.
_BLOCK_RE = re.compile(r"(?:^|\.)(?:layer|layers|h|blocks|resblocks)\.(\d+)(?:\.|$)")


PAPER_DEFAULT_A = 0.1  # Wang et al.'s single-task example: alpha = 0.1, beta = 1 - alpha (see the module docstring)
PAPER_GRID: tuple[float, ...] = tuple(round(1.0 - 0.1 * i, 1) for i in range(11))  # 1.0, 0.9, ..., 0.0 (eval.py:202)
UNSCALED_LABEL = "unscaled"


def from_alpha_beta(alpha: float, beta: float) -> float:
    """Wang et al.'s single-task ``(alpha, beta)`` as bindlab's ``a`` (``a = alpha``; requires ``beta = 1 - alpha``).

    Raises:
        ValueError: ``alpha + beta != 1`` (their multi-task merging setting, which bindlab does not implement).
    """
    if abs(float(alpha) + float(beta) - 1.0) > 1e-9:
        raise ValueError(
            f"LiNeS alpha={alpha}, beta={beta} is not the single-task setting (alpha + beta = 1, so the "
            "deepest block keeps its whole update); bindlab's a is alpha with beta = 1 - a"
        )
    return check_a(alpha)


def is_scaled(a: float) -> bool:
    """Whether ``a`` scales anything (``a < 1``); ``a = 1`` leaves every block's update as it is."""
    return check_a(a) < 1.0


def model_label(a: float | None) -> str:
    """What a model with LiNeS ``a`` is called in results, tables, the tab and the CLI.

    ``"unscaled"`` when ``a = 1`` (nothing is scaled, so it must never be called LiNeS), else ``"LiNeS (a=0.1)"``.
    ``None`` (no LiNeS record) is also ``"unscaled"``.
    """
    if a is None or not is_scaled(a):
        return UNSCALED_LABEL
    return f"LiNeS (a={check_a(a):g})"


def lines_factors(n_blocks: int, a: float) -> np.ndarray:
    """Scale factor per block: ``lambda(l) = a + (1 - a) * l / (L - 1)``, ``l = 0..L-1``.

    Args:
        n_blocks: number of blocks ``L`` (>= 1). With one block there is no depth to ramp over; it keeps the whole
            update (factor 1), as the deepest block always does.
        a: the factor of the shallowest block, in ``[0, 1]``.

    Returns:
        ``(L,)`` float64 factors, increasing from ``a`` to 1.
    """
    if n_blocks < 1:
        raise ValueError(f"n_blocks must be >= 1, got {n_blocks}")
    a = check_a(a)
    if n_blocks == 1:
        return np.ones(1)
    depth = np.arange(n_blocks) / (n_blocks - 1)
    return a + (1.0 - a) * depth


def check_a(a: Any) -> float:
    """Validate a LiNeS ``a`` (a number in [0, 1]); raises ValueError saying what is allowed."""
    try:
        v = float(a)
    except (TypeError, ValueError):
        raise ValueError(f"LiNeS a must be a number in [0, 1] or 'auto', got {a!r}") from None
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"LiNeS a must be in [0, 1] (0 = shallowest block unchanged, 1 = no scaling), got {v}")
    return v


def block_index(name: str) -> int | None:
    """Block number in a parameter name (``"encoder.layer.3.attention..."`` -> 3), ``None`` outside any block.

    When a name holds several block indices (a block inside a block), the last one is the one that counts.
    """
    found = _BLOCK_RE.findall(name)
    return int(found[-1]) if found else None


def count_blocks(names: list[str]) -> int:
    """Number of blocks implied by parameter names (largest block index + 1; 0 when none)."""
    idx = [i for i in (block_index(n) for n in names) if i is not None]
    return max(idx) + 1 if idx else 0


def scale_factor(name: str, n_blocks: int, a: float) -> float:
    """The LiNeS factor that applies to parameter ``name``: per block, or ``a`` outside blocks."""
    i = block_index(name)
    if i is None:
        return check_a(a)
    if i >= n_blocks:
        raise ValueError(f"parameter {name!r} is in block {i} but the model has {n_blocks} blocks")
    return float(lines_factors(n_blocks, a)[i])


def scale_lora_state(state: Mapping[str, Any], n_blocks: int, a: float) -> dict[str, Any]:
    """LiNeS-scale a LoRA adapter state dict: every ``lora_B`` tensor times its block's factor; others unchanged.

    Args:
        state: ``{name: tensor}`` as peft's ``get_peft_model_state_dict`` returns it.
        n_blocks: ``L``, the number of blocks of the adapted transformer.
        a: LiNeS ``a``.

    Returns:
        A new dict (inputs untouched) whose effective updates ``B @ A`` are scaled by ``lambda(block)``.
    """
    out: dict[str, Any] = {}
    for name, t in state.items():
        out[name] = t * scale_factor(name, n_blocks, a) if "lora_B" in name else t
    return out


def scale_delta_state(delta: Mapping[str, Any], n_blocks: int, a: float) -> dict[str, Any]:
    """LiNeS-scale a full-weight update ``{name: W_finetuned - W_base}``: every tensor times its factor."""
    return {name: t * scale_factor(name, n_blocks, a) for name, t in delta.items()}
