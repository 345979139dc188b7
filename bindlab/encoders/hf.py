"""``hf:`` — CLIP, SigLIP and SigLIP2 dual encoders through transformers (``AutoModel`` + ``AutoProcessor``).

``hf:ORG/NAME[@revision]`` loads from the hub (when reachable), ``hf:/path/to/folder`` a local
``save_pretrained`` folder. Weights load as safetensors only; ``trust_remote_code`` stays off unless the option
``trust_remote_code=True`` is given. Per family, the text side follows the model card:

- CLIP: pad to the longest text in the batch, truncate at 77 tokens, causal text tower, EOS-token pooling.
- SigLIP / SigLIP2: ``padding="max_length"`` (64 tokens) on the **right** and **no attention mask**, as the
  models were trained (big_vision's text tower has no mask and pools the last position, a pad token); pinned
  whatever the folder's tokenizer config says (transformers 5 pads a ``Siglip2Tokenizer`` on the left and
  returns an attention mask by default), with a one-line notice when the folder disagrees.
- Text normalisation (:data:`TEXT_NORMALISATION`): SigLIP v1's ``SiglipTokenizer`` lowercases and strips
  punctuation itself (``canonicalize_text``); SigLIP2 was trained on lowercased text, so bindlab lowercases
  every SigLIP-family caption (as ``Siglip2Tokenizer`` does; idempotent for v1). This matters for the FixRes
  SigLIP2 checkpoints (``google/siglip2-base-patch16-224``, ...): their config says ``model_type: siglip`` but
  their tokenizer is Gemma's, which does not lowercase. CLIP's tokenizer lowercases.
- Images go to the checkpoint's image processor in their own mode: its ``convert_to_rgb`` composites
  transparency on white. SigLIP2's processor has no conversion (it fails on greyscale/RGBA/palette), so
  bindlab asks it for the same ``do_convert_rgb`` step the CLIP/SigLIP processors apply, and says so once.
- SigLIP2 images carry ``pixel_attention_mask`` and ``spatial_shapes`` (NaFlex), passed through as produced.

In transformers 5, ``get_text_features``/``get_image_features`` return an output object whose ``pooler_output``
holds the projected features (:func:`bindlab.encoders.runtime.features` takes it). Options: ``device``,
``dtype``, ``batch_size``, ``trust_remote_code``, ``max_image_side``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.encoders.attention_access import (
    EncodedText,
    TextAttentionAccess,
    hf_layer_maps,
    spans_by_word_encoding,
    spans_from_offsets,
)
from bindlab.encoders.base import EncoderError, EncoderId, check_texts, l2_normalize, register_backend
from bindlab.encoders.images import MAX_SIDE, image_list, load_images, notice_once
from bindlab.encoders.runtime import BatchRunner, features, resolve_dtype, to_device
from bindlab.encoders.weights import fingerprint_for_folder, hub_commit, hub_load_error

log = logging.getLogger(__name__)

FAMILIES = ("clip", "siglip", "siglip2")  # supported config.model_type values
TEXT_NORMALISATION = {
    "clip": "lowercase, whitespace cleaned (CLIP's BPE tokenizer does it)",
    "siglip": "lowercase (bindlab) + punctuation stripped by a SiglipTokenizer (SigLIP v1's canonicalize_text); "
    "a Gemma tokenizer (FixRes SigLIP2) keeps punctuation",
    "siglip2": "lowercase (applied by bindlab, as SigLIP2 was trained and as Siglip2Tokenizer does)",
}


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
            raise EncoderError(
                f"{eid}: {p} has no .safetensors weights{found}; bindlab loads safetensors only — "
                "convert the checkpoint with safetensors' save_file or "
                "save_pretrained(safe_serialization=True)"
            )
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
    return getattr(config, "_commit_hash", None) or hub_commit(src, revision) or revision or "main"


def count_truncated(tokenizer: Any, texts: list[str], max_len: int) -> int:
    """How many texts have more than ``max_len`` tokens (special tokens included)."""
    ids = tokenizer(texts, truncation=False, verbose=False)["input_ids"]
    return sum(len(x) > max_len for x in ids)


def pin_siglip_text(encoder_id: str, tokenizer: Any) -> None:
    """Right padding and no attention mask, as SigLIP/SigLIP2 were trained; one notice when the folder disagrees.

    big_vision's text tower takes max_length-padded ids with no mask and pools the last position. transformers 5
    pads a ``Siglip2Tokenizer`` on the left and lists ``attention_mask`` among the inputs of both tokenizers by
    default, so a folder saved with those defaults would embed differently (by up to 0.2 in cosine) in a plain
    ``model(**processor(...))`` script; bindlab keeps the trained setup and says so.
    """
    disagree = []
    if tokenizer.padding_side != "right":
        disagree.append(f"padding_side={tokenizer.padding_side!r}")
    if "attention_mask" in tokenizer.model_input_names:
        disagree.append("an attention mask")
    if disagree:
        log.warning(
            "%s: the tokenizer config asks for %s; SigLIP models were trained with right padding to "
            "max_length and no attention mask, so bindlab uses that",
            encoder_id,
            " and ".join(disagree),
        )
    tokenizer.padding_side = "right"


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


def load_checkpoint(
    eid: EncoderId, options: dict[str, Any], check_config: Callable[[Any, str], None], **processor_kwargs: Any
) -> Checkpoint:
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
        model = AutoModel.from_pretrained(
            src, revision=eid.revision, use_safetensors=True, dtype=dtype, trust_remote_code=trust
        )
        processor = AutoProcessor.from_pretrained(
            src, revision=eid.revision, trust_remote_code=trust, **processor_kwargs
        )
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
                raise EncoderError(
                    f"{self.id}: hf: loads {', '.join(FAMILIES)} models; {src} is a {config.model_type!r} model{hint}"
                )

        ck = load_checkpoint(eid, options, check_family)
        self._setup(ck, options, weights_fingerprint(ck.src, ck.local, eid.revision, ck.config))

    @classmethod
    def from_objects(cls, model: Any, processor: Any, name: str, batch_size: int = 32) -> HFDualEncoder:
        """A CLIP / SigLIP / SigLIP2 model and processor held in memory, embedding exactly as ``hf:`` does.

        The id is ``py:<name>``; the fingerprint hashes the model's weights with its processor's settings
        (:class:`~bindlab.encoders.adopted.WeightsWatch`, taken again when the weights change in place), so cached
        vectors follow the model, not the name. The model stays on its device and dtype.

        Raises:
            EncoderError: a model that is not one of the families ``hf:`` loads, or a processor without a tokenizer
                and an image processor.
        """
        from bindlab.encoders.adopted import WRAPPED_NOTE, WeightsWatch, check_name, class_name

        self = cls.__new__(cls)
        self.id = f"py:{check_name(name)}"
        self.fingerprint_note = WRAPPED_NOTE
        config = getattr(model, "config", None)
        family = getattr(config, "model_type", None)
        if family not in FAMILIES:
            raise EncoderError(
                f"{self.id}: wrap_transformers takes a {', '.join(FAMILIES)} model (transformers' "
                f"CLIPModel, SiglipModel, Siglip2Model); got {type(model).__name__} "
                f"(model_type {family!r})"
            )
        if not (hasattr(processor, "tokenizer") and hasattr(processor, "image_processor")):
            raise EncoderError(
                f"{self.id}: wrap_transformers needs the model's processor (AutoProcessor), with a "
                f"tokenizer and an image processor; got {type(processor).__name__}"
            )
        param = next(model.parameters())
        ck = Checkpoint(f"<{name}>", True, config, model.eval(), processor, str(param.device), param.dtype)
        image_settings = getattr(processor.image_processor, "to_json_string", lambda: "")()
        tok = processor.tokenizer  # its full definition (vocabulary, normaliser), not its folder's name
        vocab = (
            tok.backend_tokenizer.to_str()
            if hasattr(tok, "backend_tokenizer")
            else repr(sorted(tok.get_vocab().items()))
        )
        settings = f"{class_name(tok)}|{vocab}|{image_settings}"
        self._setup(ck, {"batch_size": batch_size}, WeightsWatch(model, settings).label)
        return self

    def _setup(self, ck: Checkpoint, options: dict[str, Any], weights: str | Callable[[], str]) -> None:
        config = ck.config
        self.family = config.model_type
        self.model, self.processor, self.device, self.dtype = ck.model, ck.processor, ck.device, ck.dtype
        self.tokenizer = self.processor.tokenizer
        if self.family != "clip":
            pin_siglip_text(self.id, self.tokenizer)
        tcfg = self.model.config.text_config
        self.max_text_len = int(options.get("max_text_len") or tcfg.max_position_embeddings)
        # SigLIP models were trained on max_length-padded text and pool the last position.
        self.padding: bool | str = True if self.family == "clip" else "max_length"
        self.max_image_side = int(options.get("max_image_side", MAX_SIDE))
        self.converts_rgb = bool(getattr(self.processor.image_processor, "do_convert_rgb", False))
        self.runner = BatchRunner(self.id, options.get("batch_size"), device=str(self.device))
        self._weights = weights  # the files' hash, or a wrapped model's (re-taken when its weights change)
        self.last_truncated = 0
        self.last_image_notes: list[str] = []

    @property
    def fingerprint(self) -> str:
        """``<id>|<weights hash>|<dtype>|pad=…|max=…``: keys this model's vectors in the embedding cache."""
        weights = self._weights() if callable(self._weights) else self._weights
        return (
            f"{self.id}|{weights}|{str(self.dtype).removeprefix('torch.')}|pad={self.padding}|max={self.max_text_len}"
        )

    # -- text -------------------------------------------------------------------------------------------------
    def _tokenize(self, texts: list[str], **extra: Any) -> Any:
        if self.family != "clip":  # SigLIP/SigLIP2 were trained on lowercased text (see TEXT_NORMALISATION)
            texts = [t.lower() for t in texts]
        return self.tokenizer(
            texts, padding=self.padding, truncation=True, max_length=self.max_text_len, return_tensors="pt", **extra
        )

    def _word_ids(self, word: str) -> list[int]:
        word = word.lower() if self.family != "clip" else word
        return self.tokenizer(word, add_special_tokens=False)["input_ids"]

    def _text_inputs(self, enc: Any) -> dict[str, Any]:
        # CLIP masks its padding; SigLIP/SigLIP2 were trained without an attention mask (see pin_siglip_text)
        keys = ["input_ids"] if self.family != "clip" else [k for k in ("input_ids", "attention_mask") if k in enc]
        return to_device({k: enc[k] for k in keys}, self.device)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Texts -> ``(n, d)`` L2-normalised float32. Texts over the token limit are truncated, counted and logged."""
        texts = check_texts(texts, self.id)
        if not texts:
            return np.zeros(
                (
                    0,
                    self.model.config.projection_dim
                    if hasattr(self.model.config, "projection_dim")
                    else self.model.config.text_config.hidden_size,
                ),
                dtype=np.float32,
            )
        self.last_truncated = count_truncated(self.tokenizer, texts, self.max_text_len)
        if self.last_truncated:
            log.warning(
                "%s: %d text(s) exceed the %d-token limit and were truncated",
                self.id,
                self.last_truncated,
                self.max_text_len,
            )
        order = np.argsort([-len(t) for t in texts], kind="stable")

        def run(batch: list[str]) -> np.ndarray:
            out = self.model.get_text_features(**self._text_inputs(self._tokenize(batch)))
            return features(out).float().cpu().numpy()  # (batch, d)

        return l2_normalize(self.runner.run(run, texts, order))

    # -- images -----------------------------------------------------------------------------------------------
    def embed_images(self, images: list[Any]) -> np.ndarray:
        """Images (PIL, paths or uint8 arrays) -> ``(n, d)`` L2-normalised float32, through the model's processor.

        Each image is opened in a worker thread, a batch ahead of the forward pass
        (:meth:`~bindlab.encoders.runtime.BatchRunner.run_prepared`); the processor runs per batch, as before."""
        items = image_list(images, self.id)
        notes: list[list[str]] = [[] for _ in items]

        def prepare(i: int) -> Any:
            (im,), notes[i] = load_images([items[i]], self.id, self.max_image_side, rgb=False, first=i)
            return im

        def forward(batch: list[Any]) -> np.ndarray:
            extra: dict[str, Any] = {}
            if not self.converts_rgb and any(im.mode != "RGB" for im in batch):
                # e.g. SigLIP2's processor fails on L/RGBA/P input; transformers' own convert_to_rgb is the fix
                extra["do_convert_rgb"] = True
                notice_once(
                    self.id,
                    "this image processor takes RGB only; non-RGB images are converted with "
                    "transformers' convert_to_rgb (transparency on white), as CLIP/SigLIP processors do",
                )
            inputs = self.processor.image_processor(images=batch, return_tensors="pt", **extra)
            out = self.model.get_image_features(**to_device(dict(inputs), self.device, self.dtype))
            return features(out).float().cpu().numpy()  # (batch, d)

        vecs = self.runner.run_prepared(prepare, forward, len(items))
        self.last_image_notes = [n for per_image in notes for n in per_image]
        return l2_normalize(vecs)

    def text_tower(self) -> Any:
        """The trainable text tower (:class:`~bindlab.encoders.text_tower.TextTower`); LoRA targets its attention."""
        from bindlab.encoders.text_tower import TextTower

        def forward(texts: list[str]) -> Any:
            return features(self.model.get_text_features(**self._text_inputs(self._tokenize(texts))))  # (b, d)

        n = int(self.model.config.text_config.num_hidden_layers)
        return TextTower(
            "hf",
            self.model,
            forward,
            n,
            str(self.device),
            r".*text_model\..*\.self_attn\.(q_proj|k_proj|v_proj|out_proj)",
        )

    # -- attention --------------------------------------------------------------------------------------------
    def attention_access(self) -> TextAttentionAccess:
        """Eager attention maps of the text tower, one caption at a time (CLIP causal, SigLIP bidirectional)."""
        tcfg = self.model.config.text_config
        text_model = self.model.text_model

        def encode(text: str) -> EncodedText:
            check_texts([text], self.id)
            enc = self._tokenize([text], return_offsets_mapping=True, return_special_tokens_mask=True)
            ids = enc["input_ids"][0].tolist()
            if "offset_mapping" in enc:
                spans = spans_from_offsets(
                    enc["offset_mapping"][0].tolist(), enc["special_tokens_mask"][0].tolist(), 0, len(text)
                )
            else:  # sentencepiece SiglipTokenizer: no offsets; its words tokenize independently
                spans = spans_by_word_encoding(self._word_ids, ids, text, prefix=0)
            first = next((i for i, s in enumerate(spans) if s is not None), 0)
            truncated = count_truncated(self.tokenizer, [text], self.max_text_len) > 0
            return EncodedText(
                text, self._text_inputs(enc), self.tokenizer.convert_ids_to_tokens(ids), spans, first, truncated
            )

        return TextAttentionAccess(
            self.id,
            self.tokenizer,
            tcfg.num_hidden_layers,
            tcfg.num_attention_heads,
            causal=self.family == "clip",
            encode=encode,
            layer_maps=hf_layer_maps(self.model, lambda e: text_model(**e.inputs, output_attentions=True)),
        )


def _load(eid: EncoderId, options: dict[str, Any]) -> HFDualEncoder:
    return HFDualEncoder(eid, options)


register_backend("hf", _load, "CLIP / SigLIP / SigLIP2 through transformers (hub id or local folder)")
