"""``hf:`` — CLIP, SigLIP and SigLIP2 dual encoders through transformers (``AutoModel`` + ``AutoProcessor``).

``hf:ORG/NAME[@revision]`` loads from the hub (when reachable), ``hf:/path/to/folder`` a local
``save_pretrained`` folder. Weights load as safetensors only; ``trust_remote_code`` stays off unless the option
``trust_remote_code=True`` is given. Per family, the text side follows the model card:

- CLIP: pad to the longest text in the batch, truncate at 77 tokens, causal text tower, EOS-token pooling.
- SigLIP / SigLIP2: ``padding="max_length"`` (64 tokens) on the right, as the models were trained (big_vision);
  last-token pooling.
- SigLIP2 images carry ``pixel_attention_mask`` and ``spatial_shapes`` (NaFlex), passed through as produced.

In transformers 5, ``get_text_features``/``get_image_features`` return an output object whose ``pooler_output``
holds the projected features (:func:`bindlab.encoders.runtime.features` takes it). Options: ``device``,
``dtype``, ``batch_size``, ``trust_remote_code``, ``max_image_side``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from bindlab.encoders.attention_access import EncodedText, TextAttentionAccess, hf_layer_maps, spans_from_offsets
from bindlab.encoders.base import EncoderError, EncoderId, check_texts, l2_normalize, register_backend
from bindlab.encoders.images import MAX_SIDE, load_images
from bindlab.encoders.runtime import BatchRunner, features, resolve_dtype, to_device
from bindlab.encoders.weights import fingerprint_for_folder, hub_load_error

log = logging.getLogger(__name__)

FAMILIES = ("clip", "siglip", "siglip2")  # supported config.model_type values


def resolve_source(eid: EncoderId) -> tuple[str, bool]:
    """(what to pass to ``from_pretrained``, is it a local folder?). A local folder must hold safetensors.

    Raises:
        EncoderError: a path that does not exist, or a folder with only pickle weights (.bin/.pt/.pth).
    """
    name = eid.name
    p = Path(name).expanduser()
    if p.is_dir():
        p = p.resolve()
        if not any(p.glob("*.safetensors")):
            pickles = sorted(x.name for x in p.iterdir() if x.suffix in (".bin", ".pt", ".pth"))
            found = f" (found {', '.join(pickles)})" if pickles else ""
            raise EncoderError(f"{eid}: {p} has no .safetensors weights{found}; bindlab loads safetensors only — "
                               "convert the checkpoint with safetensors' save_file or "
                               "save_pretrained(safe_serialization=True)")
        return str(p), True
    if name.startswith(("/", ".", "~")) or name.count("/") > 1:
        raise EncoderError(f"{eid}: folder {name} not found; give an existing local model folder or a hub id ORG/NAME")
    return name, False


def common_setup(eid: EncoderId, options: dict[str, Any], half_ok: bool = True) -> tuple[str, Any, bool]:
    """(device, torch dtype, trust_remote_code) from the options, with errors that name the encoder."""
    from transformers.utils import logging as hf_logging

    from bindlab.config import resolve_device

    hf_logging.disable_progress_bar()  # one "Loading weights" bar per load is noise in CLI output and logs

    try:
        device = resolve_device(options.get("device", "auto"))
    except ValueError as e:
        raise EncoderError(f"{eid}: {e}") from None
    dtype = resolve_dtype(options.get("dtype", "auto"), device, half_ok=half_ok)
    return device, dtype, bool(options.get("trust_remote_code", False))


def weights_fingerprint(src: str, local: bool, revision: str | None, config: Any) -> str:
    """Folder hash for local weights; the resolved hub commit (or the revision asked for) otherwise."""
    if local:
        return fingerprint_for_folder(src)
    return getattr(config, "_commit_hash", None) or revision or "main"


def count_truncated(tokenizer: Any, texts: list[str], max_len: int) -> int:
    """How many texts have more than ``max_len`` tokens (special tokens included)."""
    ids = tokenizer(texts, truncation=False, verbose=False)["input_ids"]
    return sum(len(x) > max_len for x in ids)


@dataclass
class Checkpoint:
    """A loaded transformers checkpoint: where it came from, its config, the model (eval, on device), its processor."""

    src: str
    local: bool
    config: Any
    model: Any
    processor: Any
    device: str
    dtype: Any


def load_checkpoint(eid: EncoderId, options: dict[str, Any], check_config: Callable[[Any, str], None],
                    **processor_kwargs: Any) -> Checkpoint:
    """Load config, model (safetensors only) and processor of an ``hf:``/``qwen3vl:`` id with clear errors.

    Args:
        check_config: ``(config, src)``; raises :class:`EncoderError` when the checkpoint is not of the kind the
            backend loads (checked before the weights are read).
        processor_kwargs: extra arguments for ``AutoProcessor.from_pretrained``.
    """
    from transformers import AutoConfig, AutoModel, AutoProcessor

    src, local = resolve_source(eid)
    device, dtype, trust = common_setup(eid, options)
    try:
        config = AutoConfig.from_pretrained(src, revision=eid.revision, trust_remote_code=trust)
    except (OSError, ValueError) as e:
        raise hub_load_error(str(eid), src, e) from None
    check_config(config, src)
    try:
        model = AutoModel.from_pretrained(src, revision=eid.revision, use_safetensors=True, dtype=dtype,
                                          trust_remote_code=trust)
        processor = AutoProcessor.from_pretrained(src, revision=eid.revision, trust_remote_code=trust,
                                                  **processor_kwargs)
    except (OSError, ValueError, ImportError) as e:
        raise hub_load_error(str(eid), src, e) from None
    return Checkpoint(src, local, config, model.eval().to(device), processor, device, dtype)


class HFDualEncoder:
    """A transformers CLIP / SigLIP / SigLIP2 model with its processor."""

    modalities = frozenset({"text", "image"})

    def __init__(self, eid: EncoderId, options: dict[str, Any]) -> None:
        self.id = str(eid)

        def check_family(config: Any, src: str) -> None:
            if config.model_type not in FAMILIES:
                hint = " — use qwen3vl:" + eid.name if config.model_type.startswith("qwen3_vl") else ""
                raise EncoderError(f"{self.id}: hf: loads {', '.join(FAMILIES)} models; {src} is a "
                                   f"{config.model_type!r} model{hint}")

        ck = load_checkpoint(eid, options, check_family)
        src, local, config = ck.src, ck.local, ck.config
        self.family = config.model_type
        self.model, self.processor, self.device, self.dtype = ck.model, ck.processor, ck.device, ck.dtype
        self.tokenizer = self.processor.tokenizer
        if self.family != "clip":
            # SigLIP/SigLIP2 were trained on right-padded text pooled at the last position (big_vision); the
            # transformers Siglip2Tokenizer defaults to left padding, which would put EOS at every last position.
            self.tokenizer.padding_side = "right"
        tcfg = self.model.config.text_config
        self.max_text_len = int(options.get("max_text_len") or tcfg.max_position_embeddings)
        # SigLIP models were trained on max_length-padded text and pool the last position.
        self.padding: bool | str = True if self.family == "clip" else "max_length"
        self.max_image_side = int(options.get("max_image_side", MAX_SIDE))
        self.runner = BatchRunner(self.id, options.get("batch_size", 32))
        self.fingerprint = (f"{self.id}|{weights_fingerprint(src, local, eid.revision, config)}"
                            f"|{str(self.dtype).removeprefix('torch.')}|pad={self.padding}|max={self.max_text_len}")
        self.last_truncated = 0
        self.last_image_notes: list[str] = []

    # -- text -------------------------------------------------------------------------------------------------
    def _tokenize(self, texts: list[str], **extra: Any) -> Any:
        return self.tokenizer(texts, padding=self.padding, truncation=True, max_length=self.max_text_len,
                              return_tensors="pt", **extra)

    def _text_inputs(self, enc: Any) -> dict[str, Any]:
        keys = [k for k in ("input_ids", "attention_mask") if k in enc and k in self.tokenizer.model_input_names]
        return to_device({k: enc[k] for k in keys}, self.device)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Texts -> ``(n, d)`` L2-normalised float32. Texts over the token limit are truncated, counted and logged."""
        texts = check_texts(texts, self.id)
        if not texts:
            return np.zeros((0, self.model.config.projection_dim if hasattr(self.model.config, "projection_dim")
                             else self.model.config.text_config.hidden_size), dtype=np.float32)
        self.last_truncated = count_truncated(self.tokenizer, texts, self.max_text_len)
        if self.last_truncated:
            log.warning("%s: %d text(s) exceed the %d-token limit and were truncated", self.id, self.last_truncated,
                        self.max_text_len)
        order = np.argsort([-len(t) for t in texts], kind="stable")

        def run(batch: list[str]) -> np.ndarray:
            out = self.model.get_text_features(**self._text_inputs(self._tokenize(batch)))
            return features(out).float().cpu().numpy()  # (batch, d)

        return l2_normalize(self.runner.run(run, texts, order))

    # -- images -----------------------------------------------------------------------------------------------
    def embed_images(self, images: list[Any]) -> np.ndarray:
        """Images (PIL, paths or uint8 arrays) -> ``(n, d)`` L2-normalised float32, through the model's processor."""
        rgb, self.last_image_notes = load_images(images, self.id, self.max_image_side)

        def run(batch: list[Any]) -> np.ndarray:
            inputs = self.processor.image_processor(images=batch, return_tensors="pt")
            out = self.model.get_image_features(**to_device(dict(inputs), self.device, self.dtype))
            return features(out).float().cpu().numpy()  # (batch, d)

        return l2_normalize(self.runner.run(run, rgb))

    def text_tower(self) -> Any:
        """The trainable text tower (:class:`~bindlab.encoders.text_tower.TextTower`); LoRA targets its attention."""
        from bindlab.encoders.text_tower import TextTower

        def forward(texts: list[str]) -> Any:
            return features(self.model.get_text_features(**self._text_inputs(self._tokenize(texts))))  # (b, d)

        n = int(self.model.config.text_config.num_hidden_layers)
        return TextTower("hf", self.model, forward, n, str(self.device),
                         r".*text_model\..*\.self_attn\.(q_proj|k_proj|v_proj|out_proj)")

    # -- attention --------------------------------------------------------------------------------------------
    def attention_access(self) -> TextAttentionAccess:
        """Eager attention maps of the text tower, one caption at a time (CLIP causal, SigLIP bidirectional)."""
        tcfg = self.model.config.text_config
        text_model = self.model.text_model

        def encode(text: str) -> EncodedText:
            check_texts([text], self.id)
            enc = self._tokenize([text], return_offsets_mapping=True, return_special_tokens_mask=True)
            ids = enc["input_ids"][0].tolist()
            spans = spans_from_offsets(enc["offset_mapping"][0].tolist(), enc["special_tokens_mask"][0].tolist(),
                                       0, len(text))
            first = next((i for i, s in enumerate(spans) if s is not None), 0)
            truncated = count_truncated(self.tokenizer, [text], self.max_text_len) > 0
            return EncodedText(text, self._text_inputs(enc), self.tokenizer.convert_ids_to_tokens(ids), spans, first,
                               truncated)

        return TextAttentionAccess(self.id, self.tokenizer, tcfg.num_hidden_layers, tcfg.num_attention_heads,
                                   causal=self.family == "clip", encode=encode,
                                   layer_maps=hf_layer_maps(self.model, lambda e: text_model(**e.inputs,
                                                                                             output_attentions=True)))


def _load(eid: EncoderId, options: dict[str, Any]) -> HFDualEncoder:
    return HFDualEncoder(eid, options)


register_backend("hf", _load, "CLIP / SigLIP / SigLIP2 through transformers (hub id or local folder)")
