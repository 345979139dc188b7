"""The trainable text transformer of an encoder, per backend family, and LoRA on its attention projections.

Finetuning needs three things the :class:`~bindlab.encoders.base.Encoder` protocol does not give: the torch module
that holds the text blocks, a differentiable ``texts -> (b, d)`` forward that computes exactly what
``embed_texts`` computes (same tokenisation, pooling, projection), and the attention projections to adapt. A
:class:`TextTower` bundles them; :func:`text_tower` builds one for the ``st``, ``hf``, ``qwen3vl`` and ``toy``
backends. LoRA is injected *in place* (``peft.inject_adapter_in_model``), so the encoder's own ``embed_texts``
then runs the adapted model: evaluation uses the production code path.

Only attention projections of the text side get adapters; every other weight (the vision tower included) stays
frozen. For ``toy:shared`` and Qwen3-VL the text blocks are shared with images, so the adapters change image
embeddings too — that is the point of the SABER recipe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# LoRA targets per family, as peft regexes over module names of ``TextTower.module``.
TARGETS: dict[str, str] = {
    "st": r".*\.attention\.(self\.(query|key|value)|output\.dense)",  # BERT-style
    "hf": r".*text_model\..*\.self_attn\.(q_proj|k_proj|v_proj|out_proj)",  # CLIP / SigLIP text tower
    "qwen3vl": r".*language_model\..*\.self_attn\.(q_proj|k_proj|v_proj|o_proj)",  # decoder, not the ViT
    "toy-clip": r".*text_stack\..*\.attn\.(q_proj|k_proj|v_proj|o_proj)",  # the text tower only
    "toy-shared": r".*text_stack\..*\.attn\.(q_proj|k_proj|v_proj|o_proj)",  # the blocks images share
}


@dataclass
class TextTower:
    """A differentiable view of an encoder's text side.

    Attributes:
        family: key of :data:`TARGETS`.
        module: the ``torch.nn.Module`` that LoRA is injected into (whole model; targets select the text side).
        forward: ``list[str] -> Tensor (b, d)``, unnormalised embeddings with autograd, as ``embed_texts`` computes.
        n_blocks: number of text blocks ``L`` (for LiNeS).
        device: torch device of the module.
    """

    family: str
    module: Any
    forward: Callable[[list[str]], Any]
    n_blocks: int
    device: str

    @property
    def target_modules(self) -> str:
        return TARGETS[self.family]


def text_tower(encoder: Any) -> TextTower:
    """Build the :class:`TextTower` of a loaded encoder (weights are loaded if they were not yet).

    Raises:
        ValueError: for a backend without a trainable text transformer (e.g. ``bow``), naming those that have one.
    """
    backend = encoder.id.split(":", 1)[0]
    if backend == "st":
        return _st_tower(encoder)
    if backend == "hf":
        return _hf_tower(encoder)
    if backend == "qwen3vl":
        return _qwen_tower(encoder)
    if backend == "toy":
        return _toy_tower(encoder)
    raise ValueError(f"{encoder.id}: finetuning needs a transformer text encoder; use minilm, st:/folder, toy:clip, "
                     f"toy:shared, hf:… (CLIP/SigLIP) or qwen3vl:… (backend {backend!r} has no trainable text tower)")


def _st_tower(enc: Any) -> TextTower:
    model = enc.model  # loads the weights

    def forward(texts: list[str]) -> Any:
        batch = enc.tokenizer(texts, padding=True, truncation=True, max_length=enc.max_seq_length, return_tensors="pt")
        batch = {k: v.to(enc.device) for k, v in batch.items()}
        return enc.pool(model(**batch).last_hidden_state, batch["attention_mask"])  # (b, hidden)

    return TextTower("st", model, forward, int(model.config.num_hidden_layers), str(enc.device))


def _hf_tower(enc: Any) -> TextTower:
    from bindlab.encoders.runtime import features

    def forward(texts: list[str]) -> Any:
        return features(enc.model.get_text_features(**enc._text_inputs(enc._tokenize(texts))))  # (b, d)

    n = int(enc.model.config.text_config.num_hidden_layers)
    return TextTower("hf", enc.model, forward, n, str(enc.device))


def _qwen_tower(enc: Any) -> TextTower:
    from bindlab.encoders.qwen3vl import last_token_pool
    from bindlab.encoders.runtime import to_device

    def forward(texts: list[str]) -> Any:
        prompts = enc._prompts(list(texts), [None] * len(texts), enc.instruction)
        inputs = enc.processor(text=prompts, padding=True, truncation=True, max_length=enc.max_length,
                               return_tensors="pt")
        inputs = to_device(dict(inputs), enc.device, enc.dtype)
        return last_token_pool(enc.model(**inputs).last_hidden_state, inputs["attention_mask"])  # (b, hidden)

    n = int(enc.model.config.text_config.num_hidden_layers)
    return TextTower("qwen3vl", enc.model, forward, n, str(enc.device))


def _toy_tower(enc: Any) -> TextTower:
    import torch

    model = enc.model  # bindlab.train.toy_models.ToyModel, loaded on first use
    arch = model.cfg.arch

    def forward(texts: list[str]) -> Any:
        ids = torch.from_numpy(enc.tokenizer.batch(list(texts))).to(enc.device)
        return model.encode_text(ids)  # (b, embed_dim)

    layers = model.cfg.text_layers if arch == "clip" else model.cfg.layers
    return TextTower(f"toy-{arch}", model, forward, int(layers), str(enc.device))


# --------------------------------------------------------------------------------------------------------------
# LoRA
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoraSettings:
    """LoRA hyper-parameters (DESIGN.md: r = 4, alpha = 4, dropout 0 on q/k/v/o)."""

    rank: int = 4  # r, the rank of B @ A
    alpha: float = 4.0  # scaling alpha / r
    dropout: float = 0.0  # dropout on the LoRA input

    def __post_init__(self) -> None:
        if int(self.rank) < 1:
            raise ValueError(f"LoRA rank must be >= 1, got {self.rank}")
        if float(self.alpha) <= 0:
            raise ValueError(f"LoRA alpha must be > 0, got {self.alpha}")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"LoRA dropout must be in [0, 1), got {self.dropout}")


def inject_lora(tower: TextTower, settings: LoraSettings) -> list[Any]:
    """Inject LoRA adapters into ``tower.module`` in place, freeze everything else; return the trainable params."""
    from peft import LoraConfig, inject_adapter_in_model

    cfg = LoraConfig(r=int(settings.rank), lora_alpha=float(settings.alpha), lora_dropout=float(settings.dropout),
                     target_modules=tower.target_modules)
    for p in tower.module.parameters():
        p.requires_grad_(False)
    try:
        inject_adapter_in_model(cfg, tower.module)
    except ValueError as e:
        raise ValueError(f"LoRA found no attention projections to adapt in this model ({e})") from None
    params = [p for n, p in tower.module.named_parameters() if "lora_" in n]
    for p in params:
        p.requires_grad_(True)
    if not params:
        raise ValueError(f"LoRA found no attention projections matching {tower.target_modules!r}")
    return params


def lora_state(tower: TextTower) -> dict[str, Any]:
    """The adapter weights ``{name: tensor (cpu, detached)}`` of an injected tower."""
    return {n: p.detach().cpu().clone() for n, p in tower.module.named_parameters() if "lora_" in n}


def load_lora_state(tower: TextTower, state: dict[str, Any]) -> None:
    """Copy adapter weights into an injected tower; refuses a state that does not fit it."""
    own = {n: p for n, p in tower.module.named_parameters() if "lora_" in n}
    missing, extra = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    if missing or extra:
        raise ValueError(f"adapter does not fit this model: {len(missing)} missing, {len(extra)} unexpected "
                         f"tensors (first: {(missing or extra)[0]})")
    import torch

    with torch.no_grad():
        for n, p in own.items():
            if tuple(state[n].shape) != tuple(p.shape):
                raise ValueError(f"adapter tensor {n} has shape {tuple(state[n].shape)}, model expects {tuple(p.shape)}")
            p.copy_(state[n].to(p.device, p.dtype))


def save_adapter(path: str | Path, state: dict[str, Any]) -> None:
    """Write an adapter state as safetensors, atomically (a reader never sees half a file)."""
    from safetensors.torch import save_file

    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp))
    tmp.replace(path)


def read_adapter(path: str | Path) -> dict[str, Any]:
    """Read an adapter state written by :func:`save_adapter`."""
    from safetensors.torch import load_file

    return load_file(str(path))
