"""``qwen3vl:`` — Qwen3-VL-Embedding (an MLLM used as an embedder), following the official recipe.

``qwen3vl:Qwen/Qwen3-VL-Embedding-2B`` (or ``-8B``, or a local checkpoint folder). Per input (text or image):

1. a conversation: a *system* message holding the instruction (default ``"Represent the user's input."``; a
   custom one gets a final full stop if it ends without punctuation), then a *user* message with the image
   (if any) before the text (if any);
2. the checkpoint's chat template with the generation prompt (``<|im_start|>assistant``);
3. images converted and resized as the official ``qwen_vl_utils.fetch_image`` does — ``RGBA`` pasted on white,
   every other mode ``convert("RGB")`` (:func:`qwen_rgb`), then sides rounded to multiples of 32 (patch 16 x
   merge 2), area kept within ``[min_pixels, max_pixels]`` = ``[4·32², 1800·32²]``, bicubic — then the processor
   with ``do_resize=False``;
4. right padding, truncation at ``max_length`` (8192) tokens, the model's final hidden state at the **last
   non-padding token**, L2 normalisation.

The base ``Qwen3VLModel`` (no LM head) is loaded from the checkpoint's ``model.*`` weights; safetensors only;
``trust_remote_code`` off unless asked for. Options: ``device``, ``dtype``, ``batch_size`` (default 8),
``instruction``, ``max_length``, ``min_pixels``, ``max_pixels``, ``trust_remote_code``, ``max_image_side``.
``embed_texts``/``embed_images`` also take ``instruction=`` per call.
"""

from __future__ import annotations

import logging
import math
import unicodedata
from typing import Any

import numpy as np

from bindlab.encoders.attention_access import EncodedText, TextAttentionAccess, hf_layer_maps, spans_from_offsets
from bindlab.encoders.base import EncoderError, EncoderId, check_texts, l2_normalize, register_backend
from bindlab.encoders.hf import load_checkpoint, weights_fingerprint
from bindlab.encoders.images import MAX_SIDE, load_images
from bindlab.encoders.runtime import BatchRunner, to_device

log = logging.getLogger(__name__)

DEFAULT_INSTRUCTION = "Represent the user's input."
MAX_LENGTH = 8192
IMAGE_FACTOR = 32  # patch size 16 x spatial merge 2
MIN_PIXELS = 4 * IMAGE_FACTOR * IMAGE_FACTOR
MAX_PIXELS = 1800 * IMAGE_FACTOR * IMAGE_FACTOR
MAX_RATIO = 200


def smart_resize(
    height: int, width: int, factor: int = IMAGE_FACTOR, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS
) -> tuple[int, int]:
    """Target (height, width): multiples of ``factor``, area in ``[min_pixels, max_pixels]``, aspect kept.

    Same rule as ``qwen_vl_utils.smart_resize``. Raises :class:`EncoderError` past a 200:1 aspect ratio.
    """
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise EncoderError(
            f"image aspect ratio {max(height, width) / min(height, width):.0f}:1 is over {MAX_RATIO}:1; "
            "Qwen3-VL cannot take it — crop the image"
        )
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def format_instruction(instruction: str | None) -> str:
    """The system instruction, with a full stop added when it ends without punctuation (official behaviour)."""
    text = (instruction or "").strip() or DEFAULT_INSTRUCTION
    if not unicodedata.category(text[-1]).startswith("P"):
        text += "."
    return text


def qwen_rgb(image: Any) -> Any:
    """RGB as ``qwen_vl_utils.to_rgb``: an ``RGBA`` image pasted on white through its alpha, others ``convert("RGB")``."""
    from PIL import Image

    if image.mode == "RGBA":
        white = Image.new("RGB", image.size, (255, 255, 255))
        white.paste(image, mask=image.split()[3])
        return white
    return image.convert("RGB")


def conversation(text: str | None, image: Any | None, instruction: str) -> list[dict[str, Any]]:
    """System + user messages; the image (if any) comes before the text (if any)."""
    content: list[dict[str, Any]] = []
    if image is not None:
        content.append({"type": "image", "image": image})
    if text is not None:
        content.append({"type": "text", "text": text})
    if not content:
        content.append({"type": "text", "text": "NULL"})
    return [
        {"role": "system", "content": [{"type": "text", "text": instruction}]},
        {"role": "user", "content": content},
    ]


class Qwen3VLEmbedder:
    """Qwen3-VL-Embedding: chat-templated inputs, last-token pooling, L2 norm."""

    modalities = frozenset({"text", "image"})

    def __init__(self, eid: EncoderId, options: dict[str, Any]) -> None:
        self.id = str(eid)

        def check_qwen(config: Any, src: str) -> None:
            if config.model_type != "qwen3_vl":
                raise EncoderError(
                    f"{self.id}: qwen3vl: loads Qwen3-VL(-Embedding) checkpoints (model_type "
                    f"'qwen3_vl'); {src} is {config.model_type!r}"
                )

        ck = load_checkpoint(eid, options, check_qwen, padding_side="right")
        src, local, config = ck.src, ck.local, ck.config
        self.model, self.processor, self.device, self.dtype = ck.model, ck.processor, ck.device, ck.dtype
        self.tokenizer = self.processor.tokenizer
        self.tokenizer.padding_side = "right"
        self.instruction = format_instruction(options.get("instruction"))
        self.max_length = int(options.get("max_length", MAX_LENGTH))
        self.min_pixels = int(options.get("min_pixels", MIN_PIXELS))
        self.max_pixels = int(options.get("max_pixels", MAX_PIXELS))
        self.max_image_side = int(options.get("max_image_side", MAX_SIDE))
        self.runner = BatchRunner(self.id, options.get("batch_size", 8))
        self.fingerprint = (
            f"{self.id}|{weights_fingerprint(src, local, eid.revision, config)}"
            f"|{str(self.dtype).removeprefix('torch.')}|max={self.max_length}"
            f"|px={self.min_pixels}-{self.max_pixels}"
        )
        self.last_truncated = 0
        self.last_image_notes: list[str] = []

    # -- inputs -----------------------------------------------------------------------------------------------
    def _prompts(self, texts: list[str | None], images: list[Any | None], instruction: str) -> list[str]:
        convs = [conversation(t, im, instruction) for t, im in zip(texts, images, strict=True)]
        return [self.processor.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in convs]

    def _resize(self, image: Any) -> Any:
        from PIL import Image

        h, w = smart_resize(image.height, image.width, IMAGE_FACTOR, self.min_pixels, self.max_pixels)
        return qwen_rgb(image).resize((w, h), Image.Resampling.BICUBIC)

    def _embed(self, texts: list[str | None], images: list[Any | None], instruction: str | None) -> np.ndarray:
        instr = format_instruction(instruction) if instruction is not None else self.instruction
        prompts = self._prompts(texts, images, instr)
        lengths = [len(x) for x in self.tokenizer(prompts, add_special_tokens=False)["input_ids"]]
        self.last_truncated = sum(n > self.max_length for n in lengths if images[0] is None)
        if self.last_truncated:
            log.warning(
                "%s: %d input(s) exceed %d tokens and were truncated", self.id, self.last_truncated, self.max_length
            )
        order = np.argsort([-n for n in lengths], kind="stable")

        def run(idx: list[int]) -> np.ndarray:
            ims = [self._resize(images[i]) for i in idx if images[i] is not None]
            # text-only prompts are truncated at max_length; image prompts are not (that would cut image tokens)
            limit = {} if ims else {"truncation": True, "max_length": self.max_length}
            inputs = self.processor(
                text=[prompts[i] for i in idx],
                images=ims or None,
                padding=True,
                do_resize=False,
                return_tensors="pt",
                **limit,
            )
            inputs = to_device(dict(inputs), self.device, self.dtype)
            hidden = self.model(**inputs).last_hidden_state  # (batch, seq, hidden)
            return last_token_pool(hidden, inputs["attention_mask"]).float().cpu().numpy()

        return l2_normalize(self.runner.run(run, list(range(len(prompts))), order))

    def embed_texts(self, texts: list[str], instruction: str | None = None) -> np.ndarray:
        """Texts -> ``(n, d)`` L2-normalised; ``instruction`` overrides the system instruction for this call."""
        texts = check_texts(texts, self.id)
        if not texts:
            return np.zeros((0, self.model.config.text_config.hidden_size), dtype=np.float32)
        return self._embed(list(texts), [None] * len(texts), instruction)

    def embed_images(self, images: list[Any], instruction: str | None = None) -> np.ndarray:
        """Images (PIL, paths, uint8 arrays) -> ``(n, d)`` L2-normalised."""
        ims, self.last_image_notes = load_images(images, self.id, self.max_image_side, rgb=False)
        if not ims:
            return np.zeros((0, self.model.config.text_config.hidden_size), dtype=np.float32)
        return self._embed([None] * len(ims), ims, instruction)

    def text_tower(self) -> Any:
        """The language model as a trainable text tower (:class:`~bindlab.encoders.text_tower.TextTower`).

        LoRA targets the decoder's attention (not the ViT's); images go through the same decoder, so a text-side
        update moves image embeddings too.
        """
        from bindlab.encoders.text_tower import TextTower

        def forward(texts: list[str]) -> Any:
            prompts = self._prompts(list(texts), [None] * len(texts), self.instruction)
            inputs = self.processor(
                text=prompts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
            )
            inputs = to_device(dict(inputs), self.device, self.dtype)
            return last_token_pool(self.model(**inputs).last_hidden_state, inputs["attention_mask"])  # (b, hidden)

        n = int(self.model.config.text_config.num_hidden_layers)
        return TextTower(
            "qwen3vl",
            self.model,
            forward,
            n,
            str(self.device),
            r".*language_model\..*\.self_attn\.(q_proj|k_proj|v_proj|o_proj)",
        )

    # -- attention --------------------------------------------------------------------------------------------
    def attention_access(self, instruction: str | None = None) -> TextAttentionAccess:
        """Causal attention of the language model over the *templated* caption prompt, one caption at a time.

        Word alignment locates the caption inside the template; ``token_offset`` is the caption's first token.
        """
        instr = format_instruction(instruction) if instruction is not None else self.instruction
        tcfg = self.model.config.text_config
        lm = self.model.language_model

        def encode(text: str) -> EncodedText:
            check_texts([text], self.id)
            prompt = self._prompts([text], [None], instr)[0]
            start = prompt.rfind(text)  # the user turn comes after the system instruction
            enc = self.tokenizer(
                [prompt],
                truncation=True,
                max_length=self.max_length,
                return_offsets_mapping=True,
                return_special_tokens_mask=True,
                add_special_tokens=False,
                return_tensors="pt",
            )
            spans = spans_from_offsets(
                enc["offset_mapping"][0].tolist(), enc["special_tokens_mask"][0].tolist(), start, len(text)
            )
            first = next((i for i, s in enumerate(spans) if s is not None), 0)
            ids = enc["input_ids"][0].tolist()
            inputs = to_device({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}, self.device)
            return EncodedText(
                text,
                inputs,
                self.tokenizer.convert_ids_to_tokens(ids),
                spans,
                first,
                len(self.tokenizer(prompt, add_special_tokens=False)["input_ids"]) > self.max_length,
            )

        return TextAttentionAccess(
            self.id,
            self.tokenizer,
            tcfg.num_hidden_layers,
            tcfg.num_attention_heads,
            causal=True,
            encode=encode,
            layer_maps=hf_layer_maps(self.model, lambda e: lm(**e.inputs, output_attentions=True)),
        )


def last_token_pool(hidden: Any, mask: Any) -> Any:
    """Hidden state ``(b, s, h)`` at each row's last non-padding position (right padding) -> ``(b, h)``."""
    import torch

    last = mask.shape[1] - 1 - mask.flip(dims=[1]).argmax(dim=1)  # (b,)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def _load(eid: EncoderId, options: dict[str, Any]) -> Qwen3VLEmbedder:
    return Qwen3VLEmbedder(eid, options)


register_backend("qwen3vl", _load, "Qwen3-VL-Embedding (chat template, last-token pooling); hub id or local folder")
