"""``toy:`` — the toy vision–language models bindlab trains itself (``bindlab.train.toy.train``).

``toy:clip``, ``toy:shared``, ``toy:negclip`` and ``toy:lit-minilm`` load the shipped folders ``bindlab/assets/toy-clip/``,
``bindlab/assets/toy-shared/``, ``bindlab/assets/toy-negclip/`` (``toy:clip`` finetuned with binding hard negatives,
NegCLIP-style twins) and ``bindlab/assets/toy-lit-minilm/`` (LiT with the text tower locked: a toy image tower
trained into the space of the bundled MiniLM, whose embeddings it uses for texts, unchanged: they equal
``minilm``'s);
``toy:/path/to/folder`` loads any folder written by ``python -m bindlab train toy``. A folder holds
``model.safetensors``, ``config.json`` (:class:`bindlab.encoders.toy.models.ToyConfig`) and ``vocab.json`` (the
word-level tokenizer, :class:`bindlab.encoders.toy.tokenizer.WordTokenizer`). No hub, no network: these are the offline default for everything visual.

Images: converted by :func:`bindlab.encoders.images.load_images`, centre-cropped to a square, resized to the
model's side (area averaging when shrinking, bicubic when enlarging). Texts: lower-cased words, punctuation
dropped, unknown words -> ``[UNK]``, ``[BOS] words [EOS]``, pooled at ``[EOS]``. Both L2-normalised.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.encoders.base import EncoderError, EncoderId, check_texts, l2_normalize, register_backend
from bindlab.encoders.weights import fingerprint_for_folder

log = logging.getLogger(__name__)

SHIPPED = {
    "clip": "toy-clip",
    "shared": "toy-shared",
    "negclip": "toy-negclip",
    "lit-minilm": "toy-lit-minilm",
}  # name -> folder under bindlab/assets/
# name -> the arguments of 'python -m bindlab train toy' that make such a model (the cards give the full commands)
TRAIN_ARGS = {
    "clip": "--arch clip",
    "shared": "--arch shared",
    "negclip": "--arch clip --init-from bindlab/assets/toy-clip --twin-share SHARE",
    "lit-minilm": "--arch lit --text minilm",
}


def shipped_folder(name: str) -> Path:
    """``bindlab/assets/<folder>`` of a shipped toy model."""
    from bindlab.config import assets_root

    return assets_root() / SHIPPED[name]


class ToyEncoder:
    """A toy model behind the :class:`~bindlab.encoders.base.Encoder` protocol; weights load on first use."""

    modalities = frozenset({"text", "image"})

    def __init__(self, eid: EncoderId, folder: Path, device: str = "cpu", batch_size: int = 256) -> None:
        from bindlab.encoders.runtime import check_batch_size
        from bindlab.encoders.toy.tokenizer import WordTokenizer

        self.id = str(eid)
        self.folder = folder
        lit = _is_lit(folder)
        for f in ("model.safetensors", "config.json") + (() if lit else ("vocab.json",)):
            if not (folder / f).is_file():
                raise EncoderError(
                    f"{self.id}: {folder} has no {f}; a toy model folder needs model.safetensors, "
                    "config.json and vocab.json (train one with 'python -m bindlab train toy')"
                )
        self.batch_size = check_batch_size(batch_size)
        self.device_option = device
        self.config = json.loads((folder / "config.json").read_text())
        self.tokenizer: Any = None  # the word-level tokenizer (None for lit)
        self.text_encoder: Any = None  # lit: the frozen text model, which embeds every text
        if lit:
            from bindlab.encoders.base import load_encoder

            self.tokenizer = None
            try:
                self.text_encoder = load_encoder(self.config["text_model"], device=device)
            except EncoderError as e:
                raise EncoderError(
                    f"{self.id}: its frozen text tower {self.config['text_model']!r} does not load ({e})"
                ) from None
            self.fingerprint = f"{self.id}|{fingerprint_for_folder(folder)}|text={self.text_encoder.fingerprint}"
        else:
            self.tokenizer = WordTokenizer.load(folder / "vocab.json")
            self.fingerprint = f"{self.id}|{fingerprint_for_folder(folder)}"
        self._model: Any = None
        self.last_truncated = 0  # texts cut at the model's length in the last embed_texts call
        self.last_text_notes: list[str] = []  # what the last embed_texts call cut (one sentence), if anything
        self.last_image_notes: list[str] = []  # conversions (downscales) in the last embed_images call

    @property
    def model(self) -> Any:
        """The torch module (:class:`bindlab.encoders.toy.models.ToyModel`), in eval mode, loaded on first use."""
        if self._model is None:
            from safetensors.torch import load_file

            from bindlab.config import resolve_device
            from bindlab.encoders.toy.models import ToyConfig, build_model

            try:
                model = build_model(ToyConfig(**self.config))
                model.load_state_dict(load_file(str(self.folder / "model.safetensors")))
            except (RuntimeError, TypeError, ValueError, OSError) as e:
                raise EncoderError(f"{self.id}: could not load {self.folder} ({type(e).__name__}: {e})") from None
            self.device = resolve_device(self.device_option)
            self._model = model.to(self.device).eval()
        return self._model

    @property
    def image_size(self) -> int:
        return int(self.config["image_size"])

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Texts -> (n, embed_dim) float32, L2-normalised."""
        import torch

        texts = check_texts(texts, self.id)
        if self.text_encoder is not None:  # lit: the frozen text model's own embeddings, unchanged
            out = self.text_encoder.embed_texts(texts)
            self.last_truncated = int(getattr(self.text_encoder, "last_truncated", 0) or 0)
            self.last_text_notes = list(getattr(self.text_encoder, "last_text_notes", []) or [])
            return out
        model = self.model
        out = np.zeros((len(texts), model.cfg.embed_dim), dtype=np.float32)
        with torch.inference_mode():
            for s in range(0, len(texts), self.batch_size):
                ids = torch.from_numpy(self.tokenizer.batch(texts[s : s + self.batch_size])).to(self.device)
                out[s : s + len(ids)] = model.encode_text(ids).float().cpu().numpy()
        self.last_truncated = sum(self.truncated(texts))
        self.last_text_notes = []
        if self.last_truncated:
            from bindlab.encoders.truncation import truncation_text

            self.last_text_notes = [
                truncation_text(
                    {
                        "model": self.id,
                        "n_truncated": self.last_truncated,
                        "n_texts": len(texts),
                        "max_tokens": self.token_limit,
                        "max_words": self.tokenizer.max_words,
                    }
                )
            ]
            log.warning(
                "%s: %d text(s) were longer than %d words and were truncated",
                self.id,
                self.last_truncated,
                self.tokenizer.max_words,
            )
        return l2_normalize(out)

    @property
    def token_limit(self) -> int | None:
        """The most tokens a text keeps ([BOS] and [EOS] included); longer texts are cut. lit: its text model's
        limit (``max_seq_length``), None when it does not say."""
        if self.text_encoder is not None:
            limit = getattr(self.text_encoder, "token_limit", None) or getattr(
                self.text_encoder, "max_seq_length", None
            )
            return int(limit) if limit else None
        return int(self.tokenizer.max_len)

    def truncated(self, texts: list[str]) -> list[bool] | None:
        """Per text, whether it is longer than :attr:`token_limit` and so cut (the words past the limit are not
        read); lit: its text model's report, None when it cannot say. No model runs: the tokenizer decides."""
        if self.text_encoder is not None:
            from bindlab.encoders.truncation import truncated

            return truncated(self.text_encoder, texts)
        return [self.tokenizer.truncated(t) for t in check_texts(texts, self.id)]

    def unknown_words(self, texts: list[str]) -> list[list[str]]:
        """Per text, the words outside this model's vocabulary (about 100 words: the renderable shapes, colours
        and patterns), which it reads as ``[UNK]``; lit: the frozen text model's report."""
        if self.text_encoder is not None:
            from bindlab.encoders.base import unknown_words

            return unknown_words(self.text_encoder, texts)  # type: ignore[return-value]
        return [self.tokenizer.unknown(t) for t in check_texts(texts, self.id)]

    def pixels(self, images: list[Any]) -> np.ndarray:
        """Images (PIL, paths or uint8 arrays) -> (n, 3, s, s) float32 in [0, 1] at the model's side ``s``."""
        from bindlab.encoders.images import load_images

        rgb, self.last_image_notes = load_images(images, self.id)
        return np.stack([_square(img, self.image_size) for img in rgb]) if rgb else np.zeros((0, 3, 1, 1), np.float32)

    def embed_images(self, images: list[Any]) -> np.ndarray:
        """Images -> (n, embed_dim) float32, L2-normalised."""
        import torch

        px = self.pixels(images)
        model = self.model
        out = np.zeros((len(px), model.cfg.embed_dim), dtype=np.float32)
        with torch.inference_mode():
            for s in range(0, len(px), self.batch_size):
                batch = torch.from_numpy(px[s : s + self.batch_size]).to(self.device)
                out[s : s + len(batch)] = model.encode_image(batch).float().cpu().numpy()
        return l2_normalize(out)

    def text_tower(self) -> Any:
        """The causal text transformer (:class:`~bindlab.encoders.text_tower.TextTower`); for ``toy:shared`` its
        blocks are the ones images go through too, so a text-side LoRA update moves image embeddings."""
        if self.text_encoder is not None:  # lit: the frozen text model's tower (images do not go through it)
            return self.text_encoder.text_tower()
        import torch

        from bindlab.encoders.text_tower import TextTower

        model = self.model  # loaded on first use
        arch = model.cfg.arch

        def forward(texts: list[str]) -> Any:
            ids = torch.from_numpy(self.tokenizer.batch(list(texts))).to(self.device)
            return model.encode_text(ids)  # (b, embed_dim)

        layers = model.cfg.text_layers if arch == "clip" else model.cfg.layers
        return TextTower(
            f"toy-{arch}",
            model,
            forward,
            int(layers),
            str(self.device),
            r".*text_stack\..*\.attn\.(q_proj|k_proj|v_proj|o_proj)",
        )

    def attention_access(self) -> Any:
        """Per-layer attention of the causal text transformer (for toy:shared: the blocks images use too; for lit:
        the frozen text model's)."""
        if self.text_encoder is not None:
            return self.text_encoder.attention_access()
        import torch

        from bindlab.encoders.attention_access import EncodedText, TextAttentionAccess

        def encode(text: str) -> EncodedText:
            check_texts([text], self.id)
            ids, spans, truncated = self.tokenizer.encode(text)
            inputs = {"input_ids": torch.tensor([ids], device=self.device if self._model is not None else "cpu")}
            return EncodedText(text, inputs, self.tokenizer.tokens(ids), spans, 1, truncated)

        def layer_maps(enc: EncodedText):
            model = self.model
            with torch.inference_mode():
                maps = model.text_attentions(enc.inputs["input_ids"].to(self.device))
            for m in maps:  # per layer: (1, heads, seq, seq)
                yield m[0].float().cpu().numpy()

        cfg = self.config
        layers = cfg["text_layers"] if cfg["arch"] == "clip" else cfg["layers"]
        return TextAttentionAccess(
            self.id, self.tokenizer, int(layers), int(cfg["heads"]), causal=True, encode=encode, layer_maps=layer_maps
        )


def build_random(
    folder: str | Path, arch: str = "clip", width: int = 32, layers: int = 2, heads: int = 2, seed: int = 0
) -> str:
    """A randomly initialised toy model folder (for protocol tests, like :mod:`bindlab.encoders.tiny`).

    Returns:
        The id that loads it, ``toy:/abs/folder``.
    """
    import torch

    from bindlab.encoders.toy.models import ToyConfig, build_model
    from bindlab.encoders.toy.tokenizer import WordTokenizer

    folder = Path(folder).expanduser().resolve()
    tok = WordTokenizer.build()
    cfg = ToyConfig(
        arch=arch,
        width=width,
        layers=layers,
        text_layers=layers,
        heads=heads,
        embed_dim=width // 2,
        vocab_size=len(tok),
        image_size=32,
        patch_size=8,
        max_text_len=tok.max_len,
    )
    torch.manual_seed(seed)
    save_model(folder, build_model(cfg), tok, {"random": True, "seed": seed})
    return f"toy:{folder}"


def save_model(out: Path, model: Any, tokenizer: Any, extra: dict[str, Any]) -> None:
    """Write a folder that ``toy:/path/to/out`` loads: ``model.safetensors``, ``config.json``, ``vocab.json``,
    ``training.json``.

    Args:
        out: the folder (created if missing).
        model: a :class:`bindlab.encoders.toy.models.ToyModel`.
        tokenizer: its :class:`bindlab.encoders.toy.tokenizer.WordTokenizer`.
        extra: the training record written to ``training.json``.
    """
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    if model.cfg.arch == "lit":  # only the image tower: its texts are the frozen text model's
        save_file(
            {k: v.contiguous() for k, v in model.state_dict().items()},
            str(out / "model.safetensors"),
            metadata={"format": "pt", "bindlab": "toy-lit"},
        )
        (out / "config.json").write_text(json.dumps(model.cfg.to_json(), indent=2))
        (out / "training.json").write_text(json.dumps(extra, indent=2))
        return
    save_file(
        {k: v.contiguous() for k, v in model.state_dict().items()},
        str(out / "model.safetensors"),
        metadata={"format": "pt", "bindlab": "toy"},
    )
    (out / "config.json").write_text(json.dumps(model.cfg.to_json(), indent=2))
    tokenizer.save(out / "vocab.json")
    (out / "training.json").write_text(json.dumps(extra, indent=2))


def _is_lit(folder: Path) -> bool:
    try:
        return json.loads((folder / "config.json").read_text()).get("arch") == "lit"
    except (OSError, ValueError, AttributeError):
        return False


def _square(img: Any, side: int) -> np.ndarray:
    """Centre-crop to a square and resize to ``side``: (3, side, side) float32 in [0, 1]."""
    from PIL import Image

    w, h = img.size
    if w != h:
        m = min(w, h)
        left, top = (w - m) // 2, (h - m) // 2
        img = img.crop((left, top, left + m, top + m))
    if img.size[0] != side:
        shrink = img.size[0] > side
        img = img.resize((side, side), Image.Resampling.BOX if shrink else Image.Resampling.BICUBIC)
    return np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 255.0


def _load(eid: EncoderId, options: dict[str, Any]) -> ToyEncoder:
    name = eid.name
    if name in SHIPPED:
        folder = shipped_folder(name)
        if not folder.is_dir():
            raise EncoderError(
                f"toy:{name}: the shipped folder {folder} is missing; reinstall bindlab with its "
                f"assets or train one with 'python -m bindlab train toy {TRAIN_ARGS[name]} --out DIR'"
            )
    else:
        folder = Path(name).expanduser()
        if not folder.is_dir():
            raise EncoderError(
                f"toy:{name}: not a shipped toy model ({', '.join('toy:' + k for k in SHIPPED)}) "
                "and not an existing folder; give one of them or toy:/path/to/trained/folder"
            )
        folder = folder.resolve()
    device = options.get("device", "cpu") or "cpu"
    return ToyEncoder(eid, folder, device=device, batch_size=options.get("batch_size", 256) or 256)


register_backend(
    "toy",
    _load,
    "bindlab's own toy vision-language models (toy:clip, toy:shared, toy:negclip, toy:lit-minilm, toy:/folder)",
)
