"""``open_clip:`` — OpenCLIP models (CLIP, EVA02, SigLIP ports, ...) through ``open_clip``.

Three name forms, parsed once here (``open_clip``'s own ``hf-hub:``/``local-dir:`` schemas):

- ``open_clip:ARCH/PRETRAINED_TAG`` — a built-in architecture with a pretrained tag, e.g.
  ``open_clip:ViT-B-32/laion2b_s34b_b79k``. The tag's preprocessing (mean/std, interpolation, resize mode,
  QuickGELU) is applied as ``open_clip`` would.
- ``open_clip:hf-hub:ORG/NAME[@revision]`` — a hub repo with ``open_clip_config.json``.
- ``open_clip:local-dir:/path`` — a folder with ``open_clip_config.json`` and safetensors weights.

Safety: only ``.safetensors`` weights are loaded. Tags and repos whose weights exist only as pickles
(``.bin``/``.pt``/``.pth``) are refused with a message saying so, *before* anything is unpickled; the hub is
asked for safetensors files only. Embeddings are ``encode_image``/``encode_text`` outputs, L2-normalised.

Images go through the model's own eval transform in their own mode, so the order of operations is open_clip's:
resize (a palette image nearest-neighbour, as PIL does for ``P``), centre crop, *then* ``convert("RGB")`` (alpha
dropped, not composited). Only high-bit-depth greyscale is scaled to 8-bit first (PIL would clip it to white).
Text goes through the model's own tokenizer, so its normalisation is open_clip's (the SigLIP ports'
``HFTokenizer(clean="canonicalize")`` lowercases and strips punctuation; CLIP's tokenizer lowercases).
Options: ``device``, ``dtype``, ``batch_size``, ``max_image_side``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bindlab import heavy
from bindlab.encoders.attention_access import EncodedText, TextAttentionAccess, spans_by_word_encoding
from bindlab.encoders.base import EncoderError, EncoderId, check_texts, l2_normalize, register_backend
from bindlab.encoders.hf import common_setup
from bindlab.encoders.images import MAX_SIDE, image_list, load_images
from bindlab.encoders.runtime import BatchRunner
from bindlab.encoders.weights import fingerprint_for_folder, hub_load_error

log = logging.getLogger(__name__)

PICKLE_SUFFIXES = (".bin", ".pt", ".pth")
HUB_PATTERNS = ["*.json", "*.safetensors", "*.txt", "*.model", "*.gz"]  # configs, weights, tokenizer files


def _refuse_pickles(eid: EncoderId, where: str, found: list[str]) -> EncoderError:
    what = f" (only {', '.join(found)})" if found else ""
    return EncoderError(
        f"{eid}: {where} has no .safetensors weights{what}; bindlab loads safetensors only and will "
        "not unpickle .bin/.pt files — use a safetensors copy (open_clip_model.safetensors)"
    )


def _local_dir(eid: EncoderId, path: str) -> Path:
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise EncoderError(f"{eid}: folder {folder} not found; give an existing folder with open_clip_config.json")
    if not (folder / "open_clip_config.json").is_file():
        raise EncoderError(f"{eid}: {folder} has no open_clip_config.json; it is not an open_clip model folder")
    if not any(folder.glob("*.safetensors")):
        raise _refuse_pickles(eid, str(folder), sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES))
    return folder.resolve()


def _hub_dir(eid: EncoderId, repo: str) -> Path:
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(repo, revision=eid.revision, allow_patterns=HUB_PATTERNS))
    except Exception as e:  # offline, unknown repo, bad revision: one sentence from hub_load_error
        raise hub_load_error(str(eid), f"hf-hub:{repo}", e) from None
    return _local_dir(eid, str(folder))


def _tag_weights(eid: EncoderId, arch: str, tag: str) -> tuple[str, dict[str, Any]]:
    """(safetensors path, pretrained cfg) for a built-in ARCH/TAG, refusing pickle-only tags."""
    open_clip = heavy.module("open_clip")
    HF_WEIGHTS_NAME = heavy.module("open_clip.constants").HF_WEIGHTS_NAME
    _get_safe_alternatives = heavy.module("open_clip.pretrained")._get_safe_alternatives

    cfg = open_clip.get_pretrained_cfg(arch, tag)
    if not cfg:
        tags = open_clip.list_pretrained_tags_by_model(arch)
        raise EncoderError(f"{eid}: unknown pretrained tag {tag!r} for {arch}; known tags: {tags}")
    if cfg.get("file"):
        if not str(cfg["file"]).endswith(".safetensors"):
            raise _refuse_pickles(eid, f"tag {tag}", [cfg["file"]])
        return cfg["file"], cfg
    if not cfg.get("hf_hub"):
        raise _refuse_pickles(eid, f"tag {tag} (a download URL)", [os.path.basename(cfg.get("url", "")) or "pickle"])
    from huggingface_hub import hf_hub_download

    repo, filename = os.path.split(cfg["hf_hub"])  # 'org/repo/' (default file) or 'org/repo/file.bin'
    filename = filename or HF_WEIGHTS_NAME
    candidates = [filename] if filename.endswith(".safetensors") else list(_get_safe_alternatives(filename))
    last: Exception | None = None
    for name in candidates:
        try:
            return hf_hub_download(repo, name, revision=eid.revision), cfg
        except Exception as e:  # noqa: BLE001 — try the next name, report the last failure
            last = e
    from bindlab.config import hub_offline

    if hub_offline() or last is None:
        raise hub_load_error(str(eid), f"{repo}/{candidates[0] if candidates else filename}", last or OSError())
    raise _refuse_pickles(eid, f"hub repo {repo}", [filename])


class OpenClipEncoder:
    """An open_clip model, its eval preprocess and tokenizer."""

    modalities = frozenset({"text", "image"})

    def __init__(self, eid: EncoderId, options: dict[str, Any]) -> None:
        open_clip = heavy.module("open_clip")

        self.id = str(eid)
        self.device, self.dtype, _ = common_setup(eid, options)
        name = eid.name
        kw: dict[str, Any] = {}
        if name.startswith("local-dir:"):
            folder = _local_dir(eid, name.removeprefix("local-dir:"))
            model_name, weights = f"local-dir:{folder}", fingerprint_for_folder(folder)
        elif name.startswith("hf-hub:"):
            folder = _hub_dir(eid, name.removeprefix("hf-hub:"))
            model_name, weights = f"local-dir:{folder}", fingerprint_for_folder(folder)
        else:
            arch, _, tag = name.partition("/")
            if arch not in open_clip.list_models():
                raise EncoderError(
                    f"{eid}: unknown open_clip architecture {arch!r}; see open_clip.list_models() "
                    "(e.g. ViT-B-32, ViT-B-16, EVA02-B-16, ViT-B-16-SigLIP)"
                )
            if not tag:
                raise EncoderError(
                    f"{eid}: give a pretrained tag, open_clip:{arch}/TAG with TAG one of "
                    f"{open_clip.list_pretrained_tags_by_model(arch)}"
                )
            path, cfg = _tag_weights(eid, arch, tag)
            model_name, weights = arch, f"{tag}:{Path(path).parent.name}"
            kw = dict(
                pretrained=path,
                force_quick_gelu=bool(cfg.get("quick_gelu", False)),
                image_mean=cfg.get("mean"),
                image_std=cfg.get("std"),
                image_interpolation=cfg.get("interpolation"),
                image_resize_mode=cfg.get("resize_mode"),
            )
        try:
            model, _, self.preprocess = open_clip.create_model_and_transforms(model_name, weights_only=True, **kw)
            self.tokenizer = open_clip.get_tokenizer(model_name)
        except (OSError, RuntimeError, ValueError) as e:
            raise hub_load_error(self.id, model_name, e) from None
        self.model = model.eval().to(self.device, self.dtype)
        self._setup(options, weights)

    @classmethod
    def from_objects(
        cls, model: Any, preprocess: Any, tokenizer: Any, name: str, batch_size: int = 32
    ) -> OpenClipEncoder:
        """An open_clip model with its eval preprocess and tokenizer held in memory, embedding exactly as
        ``open_clip:`` does. The id is ``py:<name>``; the fingerprint hashes the model's weights with its preprocess
        and tokenizer settings (:class:`~bindlab.encoders.adopted.WeightsWatch`, taken again when the weights change
        in place), so cached vectors follow the model, not the name. The model is put in eval mode and stays on its
        device and dtype.

        Raises:
            EncoderError: a model without ``encode_text``/``encode_image``, or a preprocess or tokenizer that is not
                callable.
        """
        from bindlab.encoders.adopted import WRAPPED_NOTE, WeightsWatch, check_name, class_name

        self = cls.__new__(cls)
        self.id = f"py:{check_name(name)}"
        self.fingerprint_note = WRAPPED_NOTE
        if not (callable(getattr(model, "encode_text", None)) and callable(getattr(model, "encode_image", None))):
            raise EncoderError(
                f"{self.id}: wrap_open_clip takes an open_clip model (with encode_text and "
                f"encode_image); got {type(model).__name__}"
            )
        for what, obj in (("preprocess", preprocess), ("tokenizer", tokenizer)):
            if not callable(obj):
                raise EncoderError(
                    f"{self.id}: wrap_open_clip needs the model's {what} "
                    "(open_clip.create_model_and_transforms / open_clip.get_tokenizer); got "
                    f"{type(obj).__name__}"
                )
        param = next(model.parameters())
        self.device, self.dtype = str(param.device), param.dtype
        self.preprocess, self.tokenizer, self.model = preprocess, tokenizer, model.eval()
        settings = re.sub(
            r" at 0x[0-9a-fA-F]+",
            "",
            f"{preprocess!r}|{class_name(tokenizer)}|ctx={getattr(tokenizer, 'context_length', None)}",
        )  # no addresses: same in every process
        self._setup({"batch_size": batch_size}, WeightsWatch(model, settings).label)
        return self

    def _setup(self, options: dict[str, Any], weights: str | Callable[[], str]) -> None:
        self.context_length = int(getattr(self.tokenizer, "context_length", 77))
        self.max_image_side = int(options.get("max_image_side", MAX_SIDE))
        self.runner = BatchRunner(self.id, options.get("batch_size"), device=str(self.device))
        self._weights = weights  # the files' hash, or a wrapped model's (re-taken when its weights change)
        self.last_truncated = 0
        self.last_image_notes: list[str] = []

    @property
    def fingerprint(self) -> str:
        """``<id>|<weights hash>|<dtype>``: keys this model's vectors in the embedding cache."""
        weights = self._weights() if callable(self._weights) else self._weights
        return f"{self.id}|{weights}|{str(self.dtype).removeprefix('torch.')}"

    def _token_len(self, text: str) -> int:
        tok = self.tokenizer
        if hasattr(tok, "encoder") and hasattr(tok, "encode"):  # SimpleTokenizer: + start/end tokens
            return len(tok.encode(text)) + 2
        return len(tok.tokenizer(text)["input_ids"])  # HFTokenizer wraps a transformers tokenizer

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Texts -> ``(n, d)`` L2-normalised ``encode_text`` features; over-long texts are counted and logged."""
        texts = check_texts(texts, self.id)
        self.last_truncated = sum(self._token_len(t) > self.context_length for t in texts)
        if self.last_truncated:
            log.warning(
                "%s: %d text(s) exceed the %d-token context and were truncated",
                self.id,
                self.last_truncated,
                self.context_length,
            )

        def run(batch: list[str]) -> np.ndarray:
            ids = self.tokenizer(batch).to(self.device)  # (batch, context_length)
            return self.model.encode_text(ids).float().cpu().numpy()

        return l2_normalize(self.runner.run(run, texts))

    def embed_images(self, images: list[Any]) -> np.ndarray:
        """Images -> ``(n, d)`` L2-normalised ``encode_image`` features through the model's eval preprocess.

        Each image is opened and preprocessed in a worker thread, a batch ahead of the forward pass
        (:meth:`~bindlab.encoders.runtime.BatchRunner.run_prepared`); the vectors are the serial path's."""
        import torch

        from bindlab.encoders.runtime import to_device_batch

        items = image_list(images, self.id)
        notes: list[list[str]] = [[] for _ in items]

        def prepare(i: int) -> Any:
            # the transform converts to RGB itself, after resize and crop (open_clip's order)
            (im,), notes[i] = load_images([items[i]], self.id, self.max_image_side, rgb=False, first=i)
            return self.preprocess(im)  # (3, H, W) float32 on CPU

        def forward(batch: list[Any]) -> np.ndarray:
            x = to_device_batch(torch.stack(batch), self.device, self.dtype)  # (b, 3, H, W)
            return self.model.encode_image(x).float().cpu().numpy()

        vecs = self.runner.run_prepared(prepare, forward, len(items))
        self.last_image_notes = [n for per_image in notes for n in per_image]
        return l2_normalize(vecs)

    def text_tower(self) -> Any:
        """No trainable text tower yet: open_clip fuses q/k/v in ``nn.MultiheadAttention``, which LoRA cannot target.

        Raises:
            EncoderError: always, naming this model and the encoders that can be finetuned.
        """
        from bindlab.encoders.text_tower import no_text_tower

        raise no_text_tower(self.id, "open_clip's fused attention projections cannot take LoRA adapters")

    def attention_access(self) -> TextAttentionAccess:
        """Per-layer attention of the text transformer, read from its ``nn.MultiheadAttention`` modules.

        Works for towers built from open_clip's ``ResidualAttentionBlock`` (CLIP, EVA02 text, SigLIP ports); other
        text towers (HF text encoders inside open_clip, custom attention) raise :class:`EncoderError`.
        """
        import torch

        text = getattr(self.model, "text", self.model)
        blocks = getattr(getattr(text, "transformer", None), "resblocks", None)
        if blocks is None or not all(isinstance(getattr(b, "attn", None), torch.nn.MultiheadAttention) for b in blocks):
            raise EncoderError(
                f"{self.id}: attention access needs open_clip's standard text transformer "
                "(nn.MultiheadAttention blocks); this model's text tower is different"
            )
        causal = getattr(text, "attn_mask", None) is not None
        return TextAttentionAccess(
            self.id,
            self.tokenizer,
            len(blocks),
            blocks[0].attn.num_heads,
            causal,
            encode=self._encode_one,
            layer_maps=lambda enc: _mha_maps(blocks, self.model, enc),
        )

    def _encode_one(self, text: str) -> EncodedText:
        check_texts([text], self.id)
        tok = self.tokenizer
        ids = tok([text])[0].tolist()  # (context_length,)
        if hasattr(tok, "encoder") and hasattr(tok, "encode"):
            spans = spans_by_word_encoding(tok.encode, ids, text, prefix=1)
            tokens = [tok.decoder.get(i, "?") for i in ids]
        else:
            hf_tok = tok.tokenizer
            spans = spans_by_word_encoding(
                lambda w: hf_tok(w, add_special_tokens=False)["input_ids"], ids, text, prefix=0
            )
            tokens = hf_tok.convert_ids_to_tokens(ids)
        first = next((i for i, s in enumerate(spans) if s is not None), 0)
        inputs = {"text": torch_long([ids], self.device)}
        return EncodedText(text, inputs, tokens, spans, first, self._token_len(text) > self.context_length)


def torch_long(rows: list[list[int]], device: str) -> Any:
    import torch

    return torch.tensor(rows, dtype=torch.long, device=device)


def _mha_maps(blocks: Any, model: Any, enc: EncodedText) -> Any:
    """Run ``encode_text`` once with every block's attention returning per-head weights; yield them per layer."""
    import torch

    maps: list[np.ndarray] = []

    def pre(_mod: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        return args, {**kwargs, "need_weights": True, "average_attn_weights": False}

    def post(_mod: Any, _args: Any, out: Any) -> None:
        maps.append(out[1][0].float().cpu().numpy())  # (heads, seq, seq) for the one text

    handles = []
    for b in blocks:
        handles.append(b.attn.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(b.attn.register_forward_hook(post))
    try:
        with torch.inference_mode():
            model.encode_text(enc.inputs["text"])
    finally:
        for h in handles:
            h.remove()
    yield from maps


def _load(eid: EncoderId, options: dict[str, Any]) -> OpenClipEncoder:
    return OpenClipEncoder(eid, options)


register_backend("open_clip", _load, "OpenCLIP models: ARCH/TAG, hf-hub:ORG/NAME or local-dir:/path (safetensors only)")
