"""LoRA adapters on an encoder's text tower: inject, read and write them (peft does the injection).

The adapters go *in place* into :attr:`TextTower.module` (``peft.inject_adapter_in_model``) on the projections
that :attr:`TextTower.target_modules` selects, so the encoder's own ``embed_texts`` then runs the adapted model.
Used by finetuning (``bindlab.train.finetune``) and by the ``lora:`` backend that serves a job's output.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindlab import heavy
from bindlab.encoders.text_tower import TextTower


@dataclass(frozen=True)
class LoraSettings:
    """LoRA hyper-parameters (docs/architecture.md, "Text-only finetune and LiNeS": r = 4, alpha = 4, dropout 0 on q/k/v/o)."""

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
    peft = heavy.module("peft")
    LoraConfig, inject_adapter_in_model = peft.LoraConfig, peft.inject_adapter_in_model

    cfg = LoraConfig(
        r=int(settings.rank),
        lora_alpha=float(settings.alpha),
        lora_dropout=float(settings.dropout),
        target_modules=tower.target_modules,
    )
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
        raise ValueError(
            f"adapter does not fit this model: {len(missing)} missing, {len(extra)} unexpected "
            f"tensors (first: {(missing or extra)[0]})"
        )
    import torch

    with torch.no_grad():
        for n, p in own.items():
            if tuple(state[n].shape) != tuple(p.shape):
                raise ValueError(
                    f"adapter tensor {n} has shape {tuple(state[n].shape)}, model expects {tuple(p.shape)}"
                )
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
