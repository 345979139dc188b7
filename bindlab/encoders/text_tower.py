"""The trainable text transformer of an encoder: what finetuning and LoRA need beyond the Encoder protocol.

Finetuning needs three things :class:`~bindlab.encoders.base.Encoder` does not give: the torch module that holds
the text blocks, a differentiable ``texts -> (b, d)`` forward that computes exactly what ``embed_texts`` computes
(same tokenisation, pooling, projection), and the attention projections to adapt. Each backend that has such a
tower builds its :class:`TextTower` in its own ``text_tower()`` method (like ``attention_access()``), so the
forward, the block count and the LoRA targets of a model family live in one place, next to its loader. LoRA is
injected *in place* (:mod:`bindlab.encoders.adapter`), so the encoder's own ``embed_texts`` then runs the adapted
model: evaluation uses the production code path.

Only attention projections of the text side are targeted; every other weight (the vision tower included) stays
frozen. For ``toy:shared`` and Qwen3-VL the text blocks are shared with images, so the adapters change image
embeddings too — that is the point of the SABER recipe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bindlab.encoders.base import EncoderError, parse_encoder_id

TRAINABLE = "minilm, st:/folder, toy:clip, toy:shared, hf:… (CLIP/SigLIP) or qwen3vl:…"


@dataclass
class TextTower:
    """A differentiable view of an encoder's text side.

    Attributes:
        family: the model family (``st``, ``hf``, ``qwen3vl``, ``toy-clip``, ``toy-shared``), recorded with a run.
        module: the ``torch.nn.Module`` that LoRA is injected into (whole model; targets select the text side).
        forward: ``list[str] -> Tensor (b, d)``, unnormalised embeddings with autograd, as ``embed_texts`` computes.
        n_blocks: number of text blocks ``L`` (for LiNeS).
        device: torch device of the module.
        target_modules: peft regex over module names of ``module``: the text side's attention projections.
    """

    family: str
    module: Any
    forward: Callable[[list[str]], Any]
    n_blocks: int
    device: str
    target_modules: str


def no_text_tower(encoder_id: str, why: str = "") -> EncoderError:
    """The error for an encoder without a trainable text transformer, naming it and those that have one."""
    reason = f" ({why})" if why else ""
    return EncoderError(f"{encoder_id}: finetuning needs a transformer text encoder{reason}; use {TRAINABLE}")


def text_tower(encoder: Any) -> TextTower:
    """The :class:`TextTower` of a loaded encoder, from its ``text_tower()`` method (weights load if needed).

    Raises:
        EncoderError: (a ValueError) for an encoder without a trainable text transformer (e.g. ``bow``).
    """
    build = getattr(encoder, "text_tower", None)
    if build is None:
        backend = parse_encoder_id(encoder.id).backend
        raise no_text_tower(encoder.id, f"backend {backend!r} has no trainable text tower")
    return build()
