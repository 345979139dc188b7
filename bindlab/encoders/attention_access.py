"""Access to an encoder's text transformer for attention analysis, the same shape for every backend.

A backend with a text transformer returns a :class:`TextAttentionAccess` from ``encoder.attention_access()``.
It gives, per caption, the attention maps of every layer **one text and one layer at a time** (numpy
``(heads, seq, seq)``), and the alignment of the caption's words to token positions of the *same* sequence the
maps index — for chat-templated models (Qwen3-VL) that sequence is the full templated prompt, and the caption's
words are located inside it (``token_offset`` is where the caption starts).

Row ``i`` of a map is the attention *from* token ``i`` to every token ``j`` (rows sum to 1). Causal models
(``causal=True``) only attend backwards, so analyses take attention from the later word to the earlier word.

Memory: one forward pass per text; maps are converted to numpy layer by layer and a per-layer ``reduce``
callback can replace each map by something small, so a whole batch's layers x heads x tokens^2 is never held.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bindlab.encoders.base import EncoderError

WORD = re.compile(r"\w+(?:[-']\w+)*")  # caption words: letters/digits, inner hyphens and apostrophes kept


@dataclass
class EncodedText:
    """One caption as the text transformer sees it.

    Attributes:
        text: the caption.
        inputs: model inputs for this one text (a batch of one), already on the model's device.
        tokens: the token strings of the full sequence (template and special tokens included).
        char_spans: per sequence position, the ``(start, end)`` character span *in the caption* that the token
            covers, or ``None`` for template/special/padding tokens.
        token_offset: index of the first caption token in the sequence.
        truncated: True when the caption did not fit and was cut.
    """

    text: str
    inputs: dict[str, Any]
    tokens: list[str]
    char_spans: list[tuple[int, int] | None]
    token_offset: int
    truncated: bool = False


@dataclass(frozen=True)
class WordSpan:
    """A caption word and the sequence positions of its sub-tokens."""

    word: str
    char_start: int
    char_end: int
    token_indices: tuple[int, ...]


@dataclass
class TextAttentionAccess:
    """Attention maps and word alignment of one encoder's text transformer.

    Attributes:
        encoder_id: the encoder this belongs to (for messages).
        tokenizer: the backend's tokenizer object.
        num_layers: transformer layers in the text tower.
        num_heads: attention heads per layer.
        causal: True for left-to-right models (CLIP text, Qwen3-VL); False for bidirectional (BERT/MiniLM, SigLIP).
        encode: caption -> :class:`EncodedText` (backend-specific tokenization/templating).
        layer_maps: :class:`EncodedText` -> iterator over layers of ``(heads, seq, seq)`` float32 arrays.
    """

    encoder_id: str
    tokenizer: Any
    num_layers: int
    num_heads: int
    causal: bool
    encode: Callable[[str], EncodedText]
    layer_maps: Callable[[EncodedText], Iterator[np.ndarray]] = field(repr=False)

    def attentions(
        self, texts: list[str], reduce: Callable[[int, int, np.ndarray], Any] | None = None
    ) -> Iterator[tuple[int, int, Any]]:
        """Yield ``(text_index, layer, attn)`` with ``attn`` of shape ``(heads, seq, seq)``, one text at a time.

        Args:
            texts: captions.
            reduce: optional ``(text_index, layer, attn) -> value``; when given, its value is yielded instead of the
                map, so only reduced results need be kept.
        """
        if isinstance(texts, str):
            raise EncoderError(f"{self.encoder_id}: attentions expects a list of captions, got one string")
        for ti, text in enumerate(texts):
            enc = self.encode(text)
            for layer, attn in enumerate(self.layer_maps(enc)):
                yield ti, layer, (reduce(ti, layer, attn) if reduce else attn)

    def word_alignment(self, text: str) -> list[WordSpan]:
        """Caption words with their character spans and the sequence positions of their sub-tokens.

        Words cut off by truncation have empty ``token_indices``.
        """
        return align_words(text, self.encode(text).char_spans)

    def token_offset(self, text: str) -> int:
        """Sequence index of the caption's first token (0 or 1 for plain encoders; later for chat templates)."""
        return self.encode(text).token_offset


def align_words(text: str, char_spans: list[tuple[int, int] | None]) -> list[WordSpan]:
    """Match :data:`WORD` matches of ``text`` to the token positions whose spans overlap them."""
    words = []
    for m in WORD.finditer(text):
        s, e = m.span()
        idx = tuple(i for i, sp in enumerate(char_spans) if sp is not None and sp[0] < e and sp[1] > s)
        words.append(WordSpan(m.group(), s, e, idx))
    return words


def spans_from_offsets(
    offsets: list[tuple[int, int]], special: list[int] | None, text_start: int, text_len: int
) -> list[tuple[int, int] | None]:
    """Per-token caption spans from a fast tokenizer's offset mapping.

    Args:
        offsets: ``(start, end)`` per token in the string that was tokenized.
        special: special-tokens mask (1 = special) or None.
        text_start: where the caption starts in that string (0 unless it was templated).
        text_len: caption length in characters.
    """
    out: list[tuple[int, int] | None] = []
    for i, (s, e) in enumerate(offsets):
        s, e = int(s) - text_start, int(e) - text_start
        if (special is not None and special[i]) or e <= s or e <= 0 or s >= text_len:
            out.append(None)
        else:
            out.append((max(s, 0), min(e, text_len)))
    return out


def spans_by_word_encoding(
    encode_word: Callable[[str], list[int]], full_ids: list[int], text: str, prefix: int
) -> list[tuple[int, int] | None]:
    """Caption spans for tokenizers without offsets that tokenize whitespace-separated chunks independently.

    ``full_ids`` is the token sequence of the whole caption (with ``prefix`` special tokens in front); each chunk
    is encoded alone and the concatenation must reproduce the caption's tokens, otherwise alignment is refused.
    """
    spans: list[tuple[int, int] | None] = [None] * len(full_ids)
    pos, ids = prefix, []
    for m in re.finditer(r"\S+", text):
        piece = encode_word(m.group())
        for k in range(len(piece)):
            if pos + k < len(spans):
                spans[pos + k] = m.span()
        ids.extend(piece)
        pos += len(piece)
    body = full_ids[prefix : prefix + len(ids)]
    if body != ids[: len(body)]:
        raise EncoderError("this tokenizer does not tokenize words independently; word alignment is not available")
    return spans


@contextlib.contextmanager
def eager_attention(model: Any) -> Iterator[None]:
    """Temporarily switch a transformers model to eager attention (the only kind that returns weights)."""
    before = getattr(model.config, "_attn_implementation", None)
    switch = before not in (None, "eager") and hasattr(model, "set_attn_implementation")
    if switch:
        model.set_attn_implementation("eager")
    try:
        yield
    finally:
        if switch:
            model.set_attn_implementation(before)


def hf_layer_maps(model: Any, forward: Callable[[EncodedText], Any]) -> Callable[[EncodedText], Iterator[np.ndarray]]:
    """``layer_maps`` for a transformers model: ``forward(enc)`` runs its text transformer with
    ``output_attentions=True`` on one text, under eager attention (switched on for the call only)."""

    def run(enc: EncodedText) -> Iterator[np.ndarray]:
        import torch

        with torch.inference_mode(), eager_attention(model):
            out = forward(enc)
        for a in out.attentions:  # per layer: (1, heads, seq, seq)
            yield a[0].float().cpu().numpy()

    return run
