"""LiNeS (Wang et al., 2025): post-hoc, layer-increasing scaling of a finetuning update.

The update of block ``l`` (0-based, ``L`` blocks) is multiplied by ``lambda(l) = a + (1 - a) * l / (L - 1)``:
shallow blocks keep only a fraction ``a`` of their change, the deepest block keeps all of it. Parameters that
belong to no block (embeddings, projections) are scaled by ``a``. For a LoRA update ``dW = (alpha / r) * B @ A``
scaling ``B`` alone scales ``dW`` exactly, so :func:`scale_lora_state` multiplies only the ``lora_B`` tensors.

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
