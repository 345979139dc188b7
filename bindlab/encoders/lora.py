"""``lora:`` — the output of a finetune job: its base encoder with the job's LoRA adapter on the text transformer.

``lora:<job_id>`` is the LiNeS-scaled model (the default product of a job), ``lora:<job_id>/unscaled`` the raw
trained adapter. ``<job_id>`` may also be the path of a job folder. The base encoder is loaded by the id recorded
in the job's ``config.json``; the adapter is injected in place with peft, so ``embed_texts``/``embed_images``
run the base backend's own code on the adapted weights. The fingerprint is the base fingerprint plus the
adapter file's hash: a new or resumed training run never serves stale cached embeddings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.encoders.base import EncoderError, EncoderId, hash_files, load_encoder, parse_encoder_id, register_backend

VARIANTS = {"lines": "adapter_lines.safetensors", "unscaled": "adapter_unscaled.safetensors"}


def job_folder(name: str) -> Path:
    """The job folder a ``lora:`` name points at (a job id under ``$BINDLAB_HOME/jobs``, or a folder path)."""
    from bindlab.config import jobs_root

    p = Path(name).expanduser()
    d = p if p.is_absolute() or name.startswith(".") else jobs_root() / name
    if not (d / "config.json").is_file():
        raise EncoderError(f"lora:{name}: no finetune job there ({d}); list jobs with 'python -m bindlab jobs list'")
    return d


class LoraEncoder:
    """A base encoder with a finetuned LoRA adapter; everything else is delegated to the base."""

    def __init__(self, eid: EncoderId, options: dict[str, Any]) -> None:
        name, variant = eid.name.rstrip("/"), "lines"
        head, _, last = name.rpartition("/")
        if head and last in VARIANTS:
            name, variant = head, last
        elif head and not Path(name).expanduser().is_absolute() and not name.startswith("."):
            raise EncoderError(
                f"lora:{eid.name}: unknown variant {last!r}; use lora:<job_id> (LiNeS-scaled) or lora:<job_id>/unscaled"
            )
        self.id = str(eid)
        self.dir = job_folder(name)
        self.variant = variant
        self.adapter_path = self.dir / VARIANTS[variant]
        if not self.adapter_path.is_file():
            state = (
                json.loads((self.dir / "status.json").read_text()).get("state", "?")
                if (self.dir / "status.json").is_file()
                else "?"
            )
            raise EncoderError(
                f"{self.id}: the job has no {VARIANTS[variant]} yet (job state: {state}); "
                "wait until it is done, or resume it"
            )
        self.config = json.loads((self.dir / "config.json").read_text())
        base_id = self.config["model"]
        if parse_encoder_id(base_id).backend == "lora":
            raise EncoderError(f"{self.id}: stacking adapters (base {base_id}) is not supported")
        self.base = load_encoder(base_id, **options)
        self.modalities = self.base.modalities
        self.fingerprint = f"{self.id}|base={self.base.fingerprint}|adapter={hash_files([str(self.adapter_path)])}"
        self._tower: Any = None

    def _ready(self) -> Any:
        if self._tower is None:
            from bindlab.encoders.adapter import LoraSettings, inject_lora, load_lora_state, read_adapter
            from bindlab.encoders.text_tower import text_tower

            tower = text_tower(self.base)
            inject_lora(
                tower,
                LoraSettings(int(self.config.get("lora_rank", 4)), float(self.config.get("lora_alpha", 4.0)), 0.0),
            )
            load_lora_state(tower, read_adapter(self.adapter_path))
            for p in tower.module.parameters():
                p.requires_grad_(False)
            tower.module.eval()
            self._tower = tower
        return self._tower

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Texts -> ``(n, d)`` L2-normalised, through the base backend with the adapter in place."""
        self._ready()
        return self.base.embed_texts(texts)

    def embed_images(self, images: list[Any]) -> np.ndarray:
        """Images -> ``(n, d)``; changed by the adapter only where the base shares blocks across modalities."""
        self._ready()
        return self.base.embed_images(images)

    def unknown_words(self, texts: list[str]) -> list[list[str]] | None:
        """The base's unknown words (an adapter does not change the tokenizer); None when the base cannot say."""
        from bindlab.encoders.base import unknown_words

        return unknown_words(self.base, texts)

    def text_tower(self) -> Any:
        """Not available: a finetuned model is not finetuned again (adapters do not stack).

        Raises:
            EncoderError: always, naming this id and its base.
        """
        from bindlab.encoders.text_tower import no_text_tower

        raise no_text_tower(self.id, f"stacking adapters is not supported; finetune its base {self.base.id} again")

    def attention_access(self) -> Any:
        """The base's attention access, read with the adapter in place (the maps come from the adapted weights)."""
        import dataclasses

        self._ready()
        get = getattr(self.base, "attention_access", None)
        if get is None:
            raise EncoderError(f"{self.id}: its base {self.base.id} has no text transformer to read attention from")
        return dataclasses.replace(get(), encoder_id=self.id)


def _load(eid: EncoderId, options: dict[str, Any]) -> LoraEncoder:
    return LoraEncoder(eid, options)


register_backend("lora", _load, "a finetune job's output: lora:<job_id> (LiNeS-scaled) or lora:<job_id>/unscaled")
