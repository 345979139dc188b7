"""Auxiliary attention loss on the per-layer binding margin (SABER appendix C.3, "Attention-Based Binding Analysis
and Direct Supervision").

SABER turns its attention analysis into a training signal: over the band of layers where the base model's binding
margin collapses, it adds a loss that rewards attention from each object to its own attribute words over the other
objects' attribute words. The body of that loss is not printed in the paper (only its ingredients: ``e_x^l(u, v)``,
the head-averaged, sub-token-aggregated attention from the later word to the earlier one), so bindlab uses the
plainest loss on exactly the quantity the Attention feature measures:

    L_att = − mean over captions x with a margin, mean over layers l in [A, B], of margin_l(x)

where ``margin_l(x)`` is :func:`bindlab.analysis.attention.binding_margin` of caption ``x`` at layer ``l``. Because
the margin is linear in the attention map, it is ``sum(W_x * mean_heads(attn_l))`` with a fixed token x token weight
matrix ``W_x = Mᵀ P Sᵀ`` built once per caption from the analysis module's pure maths
(:func:`~bindlab.analysis.attention.margin_weights`, :func:`~bindlab.analysis.attention.unit_pooling`); only the
attention maps carry gradients. The total loss of a step is ``triplet + weight * L_att``; a margin lies in [−1, 1],
so the term is bounded. Captions are the triplets' query and positive (the texts whose bindings the row records);
captions where fewer than two objects have attributes (no margin) add nothing.

Differentiable attention maps exist for the toy models (their explicit attention path) and for the transformers text
towers — MiniLM / ``st:``, ``hf:`` CLIP/SigLIP and ``qwen3vl:`` — whose maps come from the adapted model with ``output_attentions``
on the Attention feature's own encoding of each caption (so sub-word tokens are aggregated by the same word
alignment); other backends (open_clip, bow, lora:) are refused with a clear message before a job is queued.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bindlab.analysis.attention import (
    attention_access,
    deep_layers,
    locate_bindings,
    margin_weights,
    unit_pooling,
)
from bindlab.encoders.attention_access import align_words, eager_attention
from bindlab.encoders.base import parse_encoder_id

DIRECTION = "later_to_earlier"  # the only direction a causal model has (SABER C.3)


# --- settings -----------------------------------------------------------------------------------------------------
def check_weight(value: Any) -> float:
    """The attention-loss weight as a float: finite and ≥ 0 (0 = off).

    Raises:
        ValueError: naming the bad value.
    """
    try:
        w = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"--attention-loss must be a number >= 0 (0 = off), got {value!r}") from None
    if not math.isfinite(w) or w < 0:
        raise ValueError(f"--attention-loss must be a finite number >= 0 (0 = off), got {value!r}")
    return w


def parse_band(text: Any, n_layers: int | None = None) -> tuple[int, int] | None:
    """``"A-B"`` (0-based, inclusive; ``"A"`` = one layer) as ``(A, B)``; ``""`` -> None (the default band).

    Args:
        text: the band as written on the command line.
        n_layers: the model's layer count; when given, the band must lie inside ``0 .. n_layers − 1``.

    Raises:
        ValueError: a malformed band, A > B, or a band outside the model's layers.
    """
    s = str(text or "").strip()
    if not s:
        return None
    parts = s.split("-")
    try:
        lo, hi = (int(parts[0]), int(parts[-1])) if len(parts) in (1, 2) else (None, None)
    except ValueError:
        lo = hi = None
    if lo is None or hi is None or lo < 0 or lo > hi:
        raise ValueError(f"--attention-layers must be A-B with 0 <= A <= B (0-based layers, inclusive), got {s!r}")
    if n_layers is not None and hi >= n_layers:
        raise ValueError(f"--attention-layers {s}: this model has layers 0 to {n_layers - 1}; pick a band inside them")
    return lo, hi


def resolve_band(text: Any, n_layers: int) -> tuple[int, int]:
    """The band to train: the given one (checked against ``n_layers``), else the last third of the layers
    (:func:`bindlab.analysis.attention.deep_layers`, where SABER sees the base margin collapse)."""
    band = parse_band(text, n_layers)
    if band is None:
        deep = deep_layers(n_layers)
        band = (deep[0], deep[-1])
    return band


# --- the maths ----------------------------------------------------------------------------------------------------
def token_weights(access: Any, text: str, bindings: Sequence[Sequence[str]]) -> np.ndarray | None:
    """The ``(seq, seq)`` matrix ``W`` with ``binding_margin = sum(W * mean_heads(attn))`` for one caption, or None
    when the caption has no margin (fewer than two objects with attributes, or a binding word not in the caption).

    Args:
        access: the encoder's :class:`~bindlab.encoders.attention_access.TextAttentionAccess`.
        text: the caption.
        bindings: its ``(attribute, object)`` pairs.
    """
    enc = access.encode(text)
    words = align_words(text, enc.char_spans)
    try:
        layout = locate_bindings([w.word for w in words], [tuple(b) for b in bindings])
    except ValueError:
        return None
    token_sets = [sorted({t for w in words[start : start + n] for t in w.token_indices}) for start, n in layout.units]
    if any(not toks for toks in token_sets):  # a binding word cut off by truncation
        return None
    p = margin_weights(layout.positions, layout.objects, DIRECTION)
    if p is None:
        return None
    m, s = unit_pooling(token_sets, len(enc.tokens))
    return m.T @ p @ s.T  # (seq, seq): margin = sum(P * M a S) = sum((Mᵀ P Sᵀ) * a)


def band_margins(maps: Sequence[Any], weights: Any, band: tuple[int, int]) -> Any:
    """Binding margins of a batch of captions at the layers of ``band``.

    Args:
        maps: per layer, attention ``(b, heads, s, s)`` (torch, with gradients).
        weights: ``(b, s, s)`` token weights (:func:`token_weights`, zero-padded to ``s``).
        band: ``(A, B)`` inclusive.

    Returns:
        ``(B − A + 1, b)`` tensor of margins.
    """
    import torch

    heads_mean = torch.stack([maps[layer].mean(1) for layer in range(band[0], band[1] + 1)])  # (L, b, s, s)
    return (heads_mean * weights[None]).sum(dim=(-1, -2))  # (L, b)


def attention_loss_from_maps(maps: Sequence[Any], weights: Any, valid: Any, band: tuple[int, int]) -> Any:
    """``− mean`` of the band's margins over the ``valid`` captions (a bool ``(b,)`` tensor); 0 when none is valid."""
    margins = band_margins(maps, weights, band)  # (L, b)
    if not bool(valid.any()):
        return margins.sum() * 0.0  # keeps the graph (and the device) without a signal
    return -margins[:, valid].mean()


# --- the loss as a training term ----------------------------------------------------------------------------------
def differentiable_maps(encoder: Any) -> Callable[[list[str]], list[Any]]:
    """``texts -> [per layer (b, heads, s, s)]`` with gradients, in the positions ``attention_access().encode``
    gives: for the toy models, right-padded word ids through their explicit attention path; for ``st`` (MiniLM),
    ``hf`` (CLIP/SigLIP) and ``qwen3vl`` text towers, the Attention feature's own encoding (Qwen3-VL: the templated
    prompt) through the transformer, adapters and all, with ``output_attentions=True`` under eager attention
    (:func:`transformers_maps`).

    Raises:
        ValueError: the encoder has no differentiable attention maps (open_clip, bow, a lora: encoder).
    """
    model = getattr(encoder, "model", None)
    tok = getattr(encoder, "tokenizer", None)
    if callable(getattr(model, "text_attentions", None)) and callable(getattr(tok, "batch", None)):

        def run(texts: list[str]) -> list[Any]:
            import torch

            ids = torch.from_numpy(tok.batch(list(texts))).to(encoder.device)  # (b, s)
            return model.text_attentions(ids)

        return run
    family = parse_encoder_id(encoder.id).backend
    if family in TRANSFORMER_FAMILIES:
        return transformers_maps(encoder)
    raise ValueError(
        f"--attention-loss needs differentiable attention maps, which bindlab has for the toy models "
        f"(toy:shared, toy:clip, toy:/folder), minilm / st:…, hf:… (CLIP/SigLIP) and qwen3vl:… text towers; "
        f"{encoder.id} has none — use one of those or set --attention-loss 0"
    )


TRANSFORMER_FAMILIES = (
    "st",
    "hf",
    "qwen3vl",
)  # backends whose text transformer is a transformers model with attention outputs


def transformers_maps(encoder: Any) -> Callable[[list[str]], list[Any]]:
    """Differentiable maps of an ``st``/``hf``/``qwen3vl`` encoder's text transformer (the module its
    :class:`~bindlab.encoders.text_tower.TextTower` adapts; ``text_model`` of a CLIP/SigLIP dual encoder, the
    ``language_model`` of Qwen3-VL, whose right-padded positions are those of the unpadded prompt).

    Each caption is encoded by ``attention_access().encode`` (the same tokens, special tokens and templating the
    Attention feature and :func:`token_weights` use); the batch is right-padded (masked keys get no attention, so a
    caption's maps are its own) and run once with ``output_attentions=True`` under eager attention. Captions of
    different lengths without an attention mask (SigLIP pads to a fixed length, so this is rare) run one by one.
    Maps are zero-padded to the longest sequence; :class:`AttentionLoss` gives padding zero weight.
    """
    from bindlab.encoders.text_tower import text_tower

    tower = text_tower(encoder)  # the adapted module: LoRA is injected in place, so these maps carry its gradients
    module = {"hf": lambda m: m.text_model, "qwen3vl": lambda m: m.language_model}.get(tower.family, lambda m: m)(
        tower.module
    )
    access = attention_access(encoder)
    pad_id = getattr(access.tokenizer, "pad_token_id", None) or 0

    def forward(inputs: dict[str, Any]) -> list[Any]:
        with eager_attention(tower.module):
            out = module(**inputs, output_attentions=True)
        return [a.float() for a in out.attentions]  # per layer (b, heads, s, s); float32 also for bf16 models

    def run(texts: list[str]) -> list[Any]:
        encs = [access.encode(t) for t in texts]
        lengths = {int(e.inputs["input_ids"].shape[1]) for e in encs}
        if len(lengths) == 1 or all("attention_mask" in e.inputs for e in encs):
            return forward(pad_inputs([e.inputs for e in encs], pad_id))
        per_text = [forward(e.inputs) for e in encs]
        return [pad_maps([maps[layer] for maps in per_text]) for layer in range(len(per_text[0]))]

    return run


def pad_inputs(inputs: Sequence[dict[str, Any]], pad_id: int) -> dict[str, Any]:
    """One-caption model inputs ``{key: (1, s_i)}`` -> a right-padded batch ``{key: (b, max s_i)}`` (``input_ids``
    padded with ``pad_id``, every other key — attention mask, token types — with 0)."""
    import torch
    import torch.nn.functional as F

    n = max(int(x["input_ids"].shape[1]) for x in inputs)
    return {
        key: torch.cat(
            [F.pad(x[key], (0, n - x[key].shape[1]), value=pad_id if key == "input_ids" else 0) for x in inputs]
        )
        for key in inputs[0]
    }


def pad_maps(maps: Sequence[Any]) -> Any:
    """Per-caption maps ``(1, heads, s_i, s_i)`` -> ``(b, heads, s, s)``, zero-padded to the longest."""
    import torch
    import torch.nn.functional as F

    n = max(int(m.shape[-1]) for m in maps)
    return torch.cat([F.pad(m, (0, n - m.shape[-1], 0, n - m.shape[-1])) for m in maps])


@dataclass
class AttentionLoss:
    """``weight * L_att`` over a batch of triplet rows (their query and positive captions).

    Attributes:
        weight: the loss weight (> 0).
        band: ``(A, B)`` inclusive layers.
        access: the encoder's attention access (caption -> token positions).
        maps: :func:`differentiable_maps` of the encoder.
    """

    weight: float
    band: tuple[int, int]
    access: Any
    maps: Callable[[list[str]], list[Any]]

    def __post_init__(self) -> None:
        self._cache: dict[str, np.ndarray | None] = {}

    @classmethod
    def for_encoder(cls, encoder: Any, weight: float, layers: str = "") -> AttentionLoss:
        """Build for a loaded encoder; the band is checked against its layers (:func:`resolve_band`)."""
        access = attention_access(encoder)
        return cls(check_weight(weight), resolve_band(layers, access.num_layers), access, differentiable_maps(encoder))

    def _weights(self, text: str, bindings: Sequence[Sequence[str]]) -> np.ndarray | None:
        if text not in self._cache:
            self._cache[text] = token_weights(self.access, text, bindings)
        return self._cache[text]

    def __call__(self, rows: Sequence[dict]) -> Any:
        """The weighted loss of one batch (a scalar tensor)."""
        import torch

        texts = [r[role] for r in rows for role in ("query", "positive")]
        per = [self._weights(r[role], r.get("bindings") or []) for r in rows for role in ("query", "positive")]
        maps = self.maps(texts)
        s = maps[0].shape[-1]
        w = np.zeros((len(texts), s, s))
        for i, wi in enumerate(per):
            if wi is not None:
                n = min(len(wi), s)
                w[i, :n, :n] = wi[:n, :n]
        weights = torch.as_tensor(w, dtype=maps[0].dtype, device=maps[0].device)
        valid = torch.tensor([wi is not None for wi in per], device=maps[0].device)
        return self.weight * attention_loss_from_maps(maps, weights, valid, self.band)
