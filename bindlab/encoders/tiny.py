"""Tiny random encoders, one per backend, built offline from configs and saved as safetensors folders.

They exist so that tests, the GPU check and ``eval mcq`` can exercise every backend end to end with no hub:
2 transformer layers, width 32, a BPE tokenizer trained on a small word list, small image processors. The
weights are random (seeded), so the embeddings mean nothing — only shapes, plumbing and invariances do.

    python -c "from bindlab.encoders.tiny import build_tiny; print(build_tiny('hf-clip', '/tmp/tiny-clip'))"
    python -m bindlab eval mcq --model hf:/tmp/tiny-clip ...

:func:`build_tiny` returns the encoder id that loads the folder (``hf:/…``, ``open_clip:local-dir:/…``, …).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bindlab import heavy

WIDTH = 32  # hidden size of every tiny tower
LAYERS = 2  # transformer layers per tower
HEADS = 2  # attention heads
TEXT_LEN = 64  # max text positions (so a 2,000-word caption is truncated)
IMAGE_SIZE = 32  # input side of the fixed-size image towers (CLIP, SigLIP, open_clip)
PATCH_SIZE = 8  # ViT patch side of those towers
SEED = 0

# Words the tiny BPE tokenizer is trained on: enough for sub-word splits of SABER-like captions.
_CORPUS_WORDS = (
    "a an the and of with red orange yellow green blue purple pink white black striped dotted wooden metal "
    "glass glowing furry shiny matte checkered camouflage iridescent cube sphere cone cylinder dog cat car "
    "house tree chair table lamp bottle cup book ball hat shoe bird fish boat plane train apple banana "
    "represent user input photo picture image of light dark brown"
).split()
_ALPHABET = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'-()\"/&")


def _bpe_tokenizer(specials: list[str], vocab_size: int = 300, lowercase: bool = True) -> Any:
    """A byte-free BPE tokenizer (``tokenizers``) trained on :data:`_CORPUS_WORDS`; offsets are exact."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<unk>", *specials], initial_alphabet=_ALPHABET, show_progress=False
    )
    tok.train_from_iterator([" ".join(_CORPUS_WORDS)] * 3, trainer=trainer)
    return tok


def _fast_tokenizer(tok: Any, bos: str | None, eos: str | None, pad: str, max_len: int, **extra: Any) -> Any:
    """Wrap a ``tokenizers.Tokenizer`` with bos/eos post-processing as a transformers fast tokenizer."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    single = " ".join([t for t in (bos,) if t] + ["$A"] + [t for t in (eos,) if t])
    special = [(t, tok.token_to_id(t)) for t in (bos, eos) if t]
    tok.post_processor = processors.TemplateProcessing(single=single, special_tokens=special)
    kw = {k: v for k, v in {"bos_token": bos, "eos_token": eos}.items() if v}
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token=pad, model_max_length=max_len, **kw, **extra
    )


def _seed() -> None:
    import torch

    torch.manual_seed(SEED)


def _tower(**over: Any) -> dict[str, Any]:
    cfg = dict(hidden_size=WIDTH, intermediate_size=2 * WIDTH, num_hidden_layers=LAYERS, num_attention_heads=HEADS)
    cfg.update(over)
    return cfg


def build_st(folder: Path) -> str:
    """Tiny BERT sentence-transformers folder (mean pooling) for the ``st`` backend."""
    from transformers import BertConfig, BertModel

    tok = _fast_tokenizer(
        _bpe_tokenizer(["[CLS]", "[SEP]", "[PAD]"]),
        "[CLS]",
        "[SEP]",
        "[PAD]",
        TEXT_LEN,
        cls_token="[CLS]",
        sep_token="[SEP]",
    )
    _seed()
    model = BertModel(BertConfig(vocab_size=len(tok), max_position_embeddings=TEXT_LEN, **_tower()))
    model.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": TEXT_LEN}))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    return f"st:{folder}"


def build_hf_clip(folder: Path) -> str:
    """Tiny transformers CLIP (causal text tower, eos pooling) with a CLIP image processor."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    tok = _fast_tokenizer(
        _bpe_tokenizer(["<|startoftext|>", "<|endoftext|>", "<pad>"]),
        "<|startoftext|>",
        "<|endoftext|>",
        "<pad>",
        TEXT_LEN,
    )
    cfg = CLIPConfig(
        text_config=_tower(
            vocab_size=len(tok),
            max_position_embeddings=TEXT_LEN,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        ),
        vision_config=_tower(image_size=IMAGE_SIZE, patch_size=PATCH_SIZE),
        projection_dim=16,
    )
    _seed()
    CLIPModel(cfg).save_pretrained(folder, safe_serialization=True)
    ip = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    CLIPProcessor(image_processor=ip, tokenizer=tok).save_pretrained(folder)
    return f"hf:{folder}"


def _save_siglip(folder: Path, tok: Any) -> str:
    """A tiny random SigLIP around ``tok`` (a fast BPE or a sentencepiece SiglipTokenizer), saved with its processor."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    cfg = SiglipConfig(
        text_config=_tower(
            vocab_size=len(tok),
            max_position_embeddings=TEXT_LEN,
            projection_size=WIDTH,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            bos_token_id=None,
        ),
        vision_config=_tower(image_size=IMAGE_SIZE, patch_size=PATCH_SIZE),
    )
    _seed()
    SiglipModel(cfg).save_pretrained(folder, safe_serialization=True)
    ip = SiglipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    SiglipProcessor(image_processor=ip, tokenizer=tok).save_pretrained(folder)
    return f"hf:{folder}"


def build_hf_siglip(folder: Path) -> str:
    """Tiny transformers SigLIP (bidirectional text tower, last-token pooling, max_length padding)."""
    tok = _fast_tokenizer(_bpe_tokenizer(["</s>", "<pad>"]), None, "</s>", "<pad>", TEXT_LEN)
    return _save_siglip(folder, tok)


def build_hf_siglip2(folder: Path) -> str:
    """Tiny transformers SigLIP2 (NaFlex image inputs: pixel_attention_mask + spatial_shapes)."""
    from transformers import Siglip2Config, Siglip2ImageProcessor, Siglip2Model, Siglip2Processor

    tok = _fast_tokenizer(_bpe_tokenizer(["<eos>", "<pad>", "<bos>"]), "<bos>", "<eos>", "<pad>", TEXT_LEN)
    cfg = Siglip2Config(
        text_config=_tower(
            vocab_size=len(tok),
            max_position_embeddings=TEXT_LEN,
            projection_size=WIDTH,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.bos_token_id,
        ),
        vision_config=_tower(num_patches=16, patch_size=8),
    )
    _seed()
    Siglip2Model(cfg).save_pretrained(folder, safe_serialization=True)
    ip = Siglip2ImageProcessor(patch_size=8, max_num_patches=16)
    Siglip2Processor(image_processor=ip, tokenizer=tok).save_pretrained(folder)
    return f"hf:{folder}"


def sentencepiece_model(vocab_size: int = 100) -> bytes:
    """A T5-style unigram ``spiece.model`` (pad 0, ``</s>`` 1, ``<unk>`` 2) trained on :data:`_CORPUS_WORDS`."""
    import io

    import sentencepiece as spm

    words = list(_CORPUS_WORDS)
    sentences = [" ".join(words[i:] + words[:i]) for i in range(0, len(words), 3)] + [" ".join(_ALPHABET)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=buf,
        vocab_size=vocab_size,
        model_type="unigram",
        hard_vocab_limit=False,
        character_coverage=1.0,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        pad_piece="<pad>",
        eos_piece="</s>",
        unk_piece="<unk>",
        minloglevel=2,
    )
    return buf.getvalue()


def build_hf_siglip_spm(folder: Path) -> str:
    """Tiny SigLIP v1 laid out like ``google/siglip-*``: a ``SiglipTokenizer`` over a real ``spiece.model``.

    The tokenizer config lists ``model_input_names: ["input_ids"]`` as the hub checkpoints do (no attention mask).
    """
    from transformers import SiglipTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    spiece = folder / "spiece.model"
    spiece.write_bytes(sentencepiece_model())
    tok = SiglipTokenizer(str(spiece), model_max_length=TEXT_LEN, model_input_names=["input_ids"])
    return _save_siglip(folder, tok)


def build_open_clip(folder: Path) -> str:
    """Tiny open_clip CLIP (ViT + causal text transformer) as an ``open_clip_config.json`` + safetensors folder."""
    from safetensors.torch import save_file

    open_clip = heavy.module("open_clip")

    model_cfg = {
        "embed_dim": 16,
        "vision_cfg": {
            "image_size": IMAGE_SIZE,
            "layers": LAYERS,
            "width": WIDTH,
            "head_width": WIDTH // HEADS,
            "patch_size": PATCH_SIZE,
        },
        "text_cfg": {"context_length": TEXT_LEN, "vocab_size": 49408, "width": WIDTH, "heads": HEADS, "layers": LAYERS},
    }
    _seed()
    model = open_clip.CLIP(**model_cfg)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "open_clip_model.safetensors"))
    (folder / "open_clip_config.json").write_text(
        json.dumps(
            {
                "model_cfg": model_cfg,
                "preprocess_cfg": {
                    "mean": [0.48145466, 0.4578275, 0.40821073],
                    "std": [0.26862954, 0.26130258, 0.27577711],
                },
            }
        )
    )
    return f"open_clip:local-dir:{folder}"


QWEN_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
# The Qwen3-VL chat template, reduced to what embedding uses (system/user/assistant turns; images as
# <|vision_start|><|image_pad|><|vision_end|> before their text). Real checkpoints bring their own template.
QWEN_CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif item['type'] == 'text' -%}{{- item['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


def build_qwen3vl(folder: Path) -> str:
    """Tiny Qwen3-VL (2-layer vision + 2-layer text) saved like the embedding checkpoints (``model.*`` keys)."""
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    tok = _fast_tokenizer(
        _bpe_tokenizer(QWEN_SPECIALS, vocab_size=320, lowercase=False),
        None,
        None,
        "<|endoftext|>",
        8192,
        additional_special_tokens=QWEN_SPECIALS[1:],
    )
    tok.padding_side = "right"
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIALS}
    cfg = Qwen3VLConfig(
        text_config=dict(
            vocab_size=len(tok),
            hidden_size=WIDTH,
            intermediate_size=2 * WIDTH,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            num_key_value_heads=1,
            head_dim=16,
            max_position_embeddings=8192,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [4, 2, 2],
                "mrope_interleaved": True,
            },
        ),
        vision_config=dict(
            depth=LAYERS,
            hidden_size=WIDTH,
            intermediate_size=2 * WIDTH,
            num_heads=HEADS,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            out_hidden_size=WIDTH,
            num_position_embeddings=64,
            deepstack_visual_indexes=[0],
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    _seed()
    Qwen3VLForConditionalGeneration(cfg).save_pretrained(folder, safe_serialization=True)
    ip = Qwen2VLImageProcessor(
        patch_size=16, merge_size=2, temporal_patch_size=2, size={"shortest_edge": 64 * 64, "longest_edge": 256 * 256}
    )
    vp = Qwen3VLVideoProcessor(patch_size=16, merge_size=2, temporal_patch_size=2)
    Qwen3VLProcessor(
        image_processor=ip, tokenizer=tok, video_processor=vp, chat_template=QWEN_CHAT_TEMPLATE
    ).save_pretrained(folder)
    return f"qwen3vl:{folder}"


BUILDERS: dict[str, Callable[[Path], str]] = {
    "st": build_st,
    "hf-clip": build_hf_clip,
    "hf-siglip": build_hf_siglip,
    "hf-siglip-spm": build_hf_siglip_spm,
    "hf-siglip2": build_hf_siglip2,
    "open-clip": build_open_clip,
    "qwen3vl": build_qwen3vl,
}


def build_tiny(kind: str, folder: str | Path) -> str:
    """Build the tiny random encoder ``kind`` into ``folder`` (created) and return the id that loads it.

    Args:
        kind: one of :data:`BUILDERS` (``st``, ``hf-clip``, ``hf-siglip``, ``hf-siglip-spm`` (SigLIP v1 with a
            ``spiece.model``), ``hf-siglip2``, ``open-clip``, ``qwen3vl``).
        folder: where to save; an existing build there is reused.

    Raises:
        ValueError: for an unknown kind, listing the choices.
    """
    if kind not in BUILDERS:
        raise ValueError(f"unknown tiny encoder kind {kind!r}; choose one of {sorted(BUILDERS)}")
    folder = Path(folder).expanduser().resolve()
    done = folder / ".bindlab-tiny"
    if done.is_file() and done.read_text() == kind:
        return _id_for(kind, folder)
    folder.mkdir(parents=True, exist_ok=True)
    eid = BUILDERS[kind](folder)
    done.write_text(kind)
    return eid


def _id_for(kind: str, folder: Path) -> str:
    prefix = {"st": "st:", "open-clip": "open_clip:local-dir:", "qwen3vl": "qwen3vl:"}.get(kind, "hf:")
    return f"{prefix}{folder}"
