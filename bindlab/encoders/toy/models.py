"""The two toy vision–language models bindlab trains itself, in plain torch (read it top to bottom).

- :class:`ToyCLIP` (``toy:clip``) — a CLIP-style dual encoder: a small ViT over the image and a separate small
  causal text transformer over word tokens; each tower has its own blocks and projection into a shared space.
- :class:`ToyShared` (``toy:shared``) — an MLLM-style embedder: modality-specific *input* embeddings (a patch
  projection for images, a word table for text), then the **same** transformer blocks, final norm and projection
  for both. Text attends causally and is pooled at its last token (``[EOS]``); image patches attend to each
  other fully and are mean-pooled. A text-only LoRA update of ``q_proj``/``k_proj``/``v_proj``/``o_proj`` therefore
  changes the modules every image goes through too.
- :class:`ToyLiT` (``toy:lit-minilm``) — LiT with the *text* tower locked (Zhai et al., CVPR 2022): only the
  toy:clip image tower (conv stem, ViT blocks, mean pooling, projection) lives here, projecting to the frozen text
  model's space (MiniLM's 384 dimensions); texts are embedded by that model itself (``cfg.text_model``), so the
  module has no text side (:meth:`ToyLiT.encode_text` refuses).

Attention projections are ``nn.Linear`` modules named ``q_proj``, ``k_proj``, ``v_proj``, ``o_proj`` (peft can target
them), and every :class:`Attention` can return its per-head weights for analysis.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

ARCHS = ("clip", "shared", "lit")


@dataclass
class ToyConfig:
    """Architecture of a toy model (saved as ``config.json`` next to the weights)."""

    arch: str = "clip"  # "clip" (two towers) or "shared" (one set of blocks for both modalities)
    image_size: int = 64  # input side in pixels (images are resized to this)
    patch_size: int = 8  # ViT patch side; image_size // patch_size patches per side
    width: int = 128  # hidden size of every block
    heads: int = 4  # attention heads
    layers: int = 4  # blocks per tower (clip) or shared blocks (shared)
    text_layers: int = 4  # text-tower blocks (clip only; the shared model has one stack)
    mlp_ratio: int = 4  # MLP hidden = mlp_ratio * width
    embed_dim: int = 128  # joint embedding size
    vocab_size: int = 128  # word-level vocabulary size (set from the tokenizer)
    max_text_len: int = 48  # text positions, [BOS] and [EOS] included
    stem: str = "light"  # convolutional stem of the patch embedding: "deep" or "light" (see PatchEmbed)
    text_model: str = ""  # lit only: the frozen text encoder's id (e.g. "minilm"); embed_dim is its dimension
    head_hidden: int = 0  # image head: 0 = linear projection of the mean patch; H > 0 = per-patch MLP (see ImageHead)
    head_slots: int = 0  # image head: K > 0 = K object slots over a fixed phrase grid (see SlotPhraseHead)
    head_shapes: int = 0  # slot head: rows of its phrase grid (shapes)
    head_attributes: int = 0  # slot head: columns of its phrase grid (attributes)

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise ValueError(f"unknown toy arch {self.arch!r}; choose one of {ARCHS}")
        if self.image_size % self.patch_size:
            raise ValueError(f"image_size {self.image_size} must be a multiple of patch_size {self.patch_size}")
        if self.patch_size % 4 or self.patch_size < 4:
            raise ValueError(f"patch_size {self.patch_size} must be a multiple of 4 (the conv stem halves twice)")
        if self.stem not in ("deep", "light"):
            raise ValueError(f"unknown stem {self.stem!r}; choose 'deep' or 'light'")
        if self.stem == "deep" and self.patch_size & (self.patch_size - 1):
            raise ValueError(f"the deep stem needs a power-of-two patch_size, got {self.patch_size}")
        if self.arch == "lit" and not self.text_model:
            raise ValueError("the lit arch needs text_model, the id of its frozen text encoder (e.g. 'minilm')")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} must be divisible by heads {self.heads}")
        if self.head_hidden < 0:
            raise ValueError(f"head_hidden must be 0 (a linear head) or a positive MLP width, got {self.head_hidden}")
        if self.head_slots < 0:
            raise ValueError(
                f"head_slots must be 0 (no slot head) or a positive number of slots, got {self.head_slots}"
            )
        if self.head_slots and self.head_hidden:
            raise ValueError("choose one image head: head_slots (slots over a phrase grid) or head_hidden (an MLP)")
        if self.head_slots and (self.head_shapes <= 0 or self.head_attributes <= 0):
            raise ValueError("the slot head needs its phrase grid's size: head_shapes and head_attributes > 0")

    @property
    def num_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2

    def to_json(self) -> dict:
        return asdict(self)


class Attention(nn.Module):
    """Multi-head self-attention with named q/k/v/o projections."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(width, width)
        self.k_proj = nn.Linear(width, width)
        self.v_proj = nn.Linear(width, width)
        self.o_proj = nn.Linear(width, width)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: (b, s, w); mask: bool (b or 1, 1, s, s), True = may attend. Returns (out (b, s, w), weights | None)."""
        b, s, w = x.shape
        h = self.heads

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, h, w // h).transpose(1, 2)  # (b, h, s, w/h)

        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        if need_weights:  # the explicit path, so the weights can be returned
            att = (q @ k.transpose(-2, -1)) / math.sqrt(w // h)  # (b, h, s, s)
            if mask is not None:
                att = att.masked_fill(~mask, float("-inf"))
            weights = att.softmax(-1)
            y = weights @ v
        else:
            weights = None
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        y = y.transpose(1, 2).reshape(b, s, w)  # (b, s, w)
        return self.o_proj(y), weights


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)); x + mlp(ln(x))."""

    def __init__(self, width: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, mlp_ratio * width), nn.GELU(), nn.Linear(mlp_ratio * width, width))

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        a, weights = self.attn(self.ln_1(x), mask, need_weights)
        x = x + a
        return x + self.mlp(self.ln_2(x)), weights


def text_mask(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Causal mask that also hides padding keys: ids (b, s) -> bool (b, 1, s, s); True = may attend.

    Padding sits on the right, so every real token still sees itself and the earlier real tokens.
    """
    s = ids.shape[1]
    causal = torch.ones(s, s, dtype=torch.bool, device=ids.device).tril()  # (s, s)
    keys = (ids != pad_id)[:, None, None, :]  # (b, 1, 1, s)
    return causal[None, None] & keys


def last_token_index(ids: torch.Tensor, pad_id: int = 0) -> torch.Tensor:
    """Index of the last non-padding token ([EOS]) per row: (b, s) -> (b,)."""
    return (ids != pad_id).sum(1) - 1


class PatchEmbed(nn.Module):
    """Image (b, 3, H, W) in [0, 1] -> patch tokens (b, P, w) with learned positions.

    A convolutional stem makes each token a patch_size x patch_size cell (a "hybrid ViT": cheap on a CPU).
    ``cfg.stem``:

    - ``"deep"``: log2(patch_size) stages of [3x3 stride-2 conv, 3x3 conv], channels 16, 32, 64, … up to the width,
      then a 1x1 conv to the width. Each token sees about 3 patches across, so a whole object (renders are
      ~20 px at 64 px) lands in one token's receptive field and its silhouette can be read locally.
    - ``"light"``: two stride-2 3x3 convs, then a stride-(patch/4) conv (receptive field about one patch).
    """

    def __init__(self, cfg: ToyConfig) -> None:
        super().__init__()
        if cfg.stem == "deep":
            layers: list[nn.Module] = []
            c_in = 3
            for i in range(int(math.log2(cfg.patch_size))):
                c_out = min(cfg.width, 16 * 2**i)
                layers += [
                    nn.Conv2d(c_in, c_out, 3, stride=2, padding=1),
                    nn.GELU(),
                    nn.Conv2d(c_out, c_out, 3, padding=1),
                    nn.GELU(),
                ]  # (b, c_out, H/2^(i+1), W/2^(i+1))
                c_in = c_out
            layers.append(nn.Conv2d(c_in, cfg.width, 1))  # (b, w, H/p, W/p)
            self.stem = nn.Sequential(*layers)
            self.norm: nn.Module = nn.LayerNorm(cfg.width)  # tokens of a deep plain conv stack start tiny
        else:
            c = cfg.width // 4
            k = cfg.patch_size // 4
            self.stem = nn.Sequential(
                nn.Conv2d(3, c, 3, stride=2, padding=1),
                nn.GELU(),  # (b, c, H/2, W/2)
                nn.Conv2d(c, 2 * c, 3, stride=2, padding=1),
                nn.GELU(),  # (b, 2c, H/4, W/4)
                nn.Conv2d(2 * c, cfg.width, k, stride=k),  # (b, w, H/p, W/p)
            )
            self.norm = nn.Identity()
        self.pos = nn.Parameter(torch.randn(cfg.num_patches, cfg.width) * 0.02)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        x = self.stem((pixels - 0.5) / 0.25)  # (b, w, H/p, W/p)
        return self.norm(x.flatten(2).transpose(1, 2)) + self.pos  # (b, P, w)


class WordEmbed(nn.Module):
    """Word ids (b, s) -> token vectors (b, s, w) with learned positions."""

    def __init__(self, cfg: ToyConfig) -> None:
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.width)
        self.pos = nn.Parameter(torch.randn(cfg.max_text_len, cfg.width) * 0.02)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.tok(ids) + self.pos[: ids.shape[1]]


class Stack(nn.Module):
    """A stack of blocks with a final norm; can return per-layer attention weights."""

    def __init__(self, cfg: ToyConfig, layers: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(cfg.width, cfg.heads, cfg.mlp_ratio) for _ in range(layers))
        self.ln_f = nn.LayerNorm(cfg.width)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool = False
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x (b, s, w) -> (normed states (b, s, w), [per-layer weights (b, h, s, s)] if need_weights)."""
        maps = []
        for block in self.blocks:
            x, w = block(x, mask, need_weights)
            if need_weights:
                maps.append(w)
        return self.ln_f(x), maps


class ImageHead(nn.Module):
    """The image tower's last step, patch states (b, P, width) -> image embedding (b, embed_dim), when
    ``cfg.head_hidden`` H > 0: each patch through an MLP (width -> H -> embed_dim, GELU), then the mean.

    Without it (H = 0) the towers project the mean patch linearly (``image_proj``), so every image embedding lies in
    a ``width``-dimensional subspace of the joint space. No limit when that space is the model's own; but a frozen
    text tower's space is wider (MiniLM: 384 against width 64), and its binding directions are low-variance ones that
    a 64-dimensional span leaves out. With the MLP the embedding is a mean of per-patch points anywhere in the space:
    the shape of a phrase target, one phrase embedding per object (:mod:`bindlab.train.toy.lit`).
    """

    def __init__(self, cfg: "ToyConfig") -> None:
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(cfg.width, cfg.head_hidden), nn.GELU(), nn.Linear(cfg.head_hidden, cfg.embed_dim)
        )

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.mlp(states).mean(1)


class SlotPhraseHead(nn.Module):
    """An image head whose every output is a sum of object phrases: patch states (b, P, width) -> (b, embed_dim).

    ``cfg.head_slots`` K slots read the patches with slot attention (each patch's weight shared out among the slots
    by a softmax over slots, then a weighted mean per slot; two rounds). Each slot then gives a distribution over
    shapes, one over attributes and a presence in [0, 1], and the embedding is
    ``sum_k presence_k * p_shape_k^T G p_attribute_k`` with ``G`` (shapes, attributes, embed_dim) a fixed *phrase
    grid*: the frozen text model's embedding of every "a/an <attribute> <shape>" in the targets' metric
    (``bindlab.train.toy.lit.phrase_grid``; a buffer, saved with the weights).

    Why: a lit tower with a free head (:class:`ImageHead`) learns the binding part of its phrase targets but its
    image of a scene and of the scene's attribute swap also match the scene's words *at all* by different amounts
    (the image bias of ``scripts/lit_twin_terms.py``), several times the binding part. Here an image can only be a
    mixture of phrase hypotheses. Measured (docs/reproductions.md, "A head that sums phrases"): that alone does not
    lower the bias — trained only through the summed embedding the slots stay diffuse, and uneven mixture weights
    recreate it. With the counts (:meth:`counts`) supervised by the scenes' objects (``train toy
    --slot-count-weight``; "Sure slots" in the same file) the slots commit, and exact counts over the grid clear the
    image MCQs' ti and it targets by a wide margin.
    """

    rounds = 2

    def __init__(self, cfg: "ToyConfig") -> None:
        super().__init__()
        w = cfg.width
        self.slots = nn.Parameter(torch.randn(cfg.head_slots, w) * w**-0.5)
        self.norm = nn.LayerNorm(w)
        self.q, self.k, self.v = (nn.Linear(w, w, bias=False) for _ in range(3))
        self.mlp = nn.Sequential(
            nn.LayerNorm(w), nn.Linear(w, 4 * w), nn.GELU(), nn.Linear(4 * w, cfg.head_shapes + cfg.head_attributes + 1)
        )
        self.register_buffer("phrases", torch.zeros(cfg.head_shapes, cfg.head_attributes, cfg.embed_dim))

    def slot_outputs(self, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(shape probabilities (b, K, S), attribute probabilities (b, K, A), presence (b, K))."""
        s = self.norm(states)
        keys, values = self.k(s), self.v(s)
        z = self.slots.expand(states.shape[0], -1, -1)
        for _ in range(self.rounds):
            attn = (self.q(z) @ keys.transpose(1, 2) / math.sqrt(keys.shape[-1])).softmax(dim=1)  # (b, K, P)
            z = z + (attn / attn.sum(-1, keepdim=True).clamp_min(1e-6)) @ values
        out = self.mlp(z)
        n_shapes = self.phrases.shape[0]
        return (out[..., :n_shapes].softmax(-1), out[..., n_shapes:-1].softmax(-1), torch.sigmoid(out[..., -1]))

    def counts(self, states: torch.Tensor) -> torch.Tensor:
        """(b, shapes, attributes): how many objects of each (shape, attribute) the slots see,
        ``sum_k presence_k * p_shape_k p_attribute_k^T`` (what ``train toy --slot-count-weight`` supervises)."""
        shape, attribute, presence = self.slot_outputs(states)
        return torch.einsum("bks,bka->bsa", shape * presence[..., None], attribute)

    def embed(self, counts: torch.Tensor) -> torch.Tensor:
        """(b, shapes, attributes) counts -> (b, embed_dim): the count-weighted sum of the phrase grid."""
        return torch.einsum("bsa,sad->bd", counts, self.phrases)

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.embed(self.counts(states))


def make_image_head(cfg: "ToyConfig") -> tuple[str, nn.Module]:
    """(attribute name, module) of an image tower's head: ``image_head`` (:class:`ImageHead` with
    ``cfg.head_hidden``, :class:`SlotPhraseHead` with ``cfg.head_slots``), else the linear ``image_proj`` (the name
    the shipped weights use)."""
    if cfg.head_slots:
        return "image_head", SlotPhraseHead(cfg)
    if cfg.head_hidden:
        return "image_head", ImageHead(cfg)
    return "image_proj", nn.Linear(cfg.width, cfg.embed_dim, bias=False)


class ToyModel(nn.Module):
    """Shared API of both toy models: ``encode_image``, ``encode_text``, ``text_attentions``, ``logit_scale``."""

    cfg: ToyConfig
    text_stack: Stack

    def __init__(self, cfg: ToyConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))  # learnable temperature, CLIP init

    def _text_states(self, ids: torch.Tensor, need_weights: bool = False) -> tuple[torch.Tensor, list[torch.Tensor]]:
        raise NotImplementedError

    def encode_text(self, ids: torch.Tensor, normalize: bool = False) -> torch.Tensor:
        """ids (b, s), right-padded with 0, each ending in [EOS] -> (b, embed_dim), pooled at [EOS]."""
        states, _ = self._text_states(ids)
        pooled = states[torch.arange(ids.shape[0], device=ids.device), last_token_index(ids)]  # (b, w)
        out = self.text_proj(pooled)
        return F.normalize(out, dim=-1) if normalize else out

    def text_attentions(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """Per-layer attention weights of the text transformer: ids (b, s) -> [ (b, heads, s, s) ] x layers."""
        return self._text_states(ids, need_weights=True)[1]


class ToyCLIP(ToyModel):
    """Two towers: ViT (mean-pooled patches) and causal text transformer (pooled at [EOS])."""

    def __init__(self, cfg: ToyConfig) -> None:
        super().__init__(cfg)
        self.patch_embed = PatchEmbed(cfg)
        self.vision = Stack(cfg, cfg.layers)
        setattr(self, *make_image_head(cfg))
        self.word_embed = WordEmbed(cfg)
        self.text_stack = Stack(cfg, cfg.text_layers)
        self.text_proj = nn.Linear(cfg.width, cfg.embed_dim, bias=False)

    def _image_states(self, pixels: torch.Tensor) -> torch.Tensor:
        """pixels (b, 3, H, W) in [0, 1] -> the vision stack's patch states (b, P, w), full attention."""
        return self.vision(self.patch_embed(pixels), None)[0]

    def encode_image(self, pixels: torch.Tensor, normalize: bool = False) -> torch.Tensor:
        """pixels (b, 3, H, W) in [0, 1] -> (b, embed_dim)."""
        states = self._image_states(pixels)
        out = self.image_head(states) if hasattr(self, "image_head") else self.image_proj(states.mean(1))
        return F.normalize(out, dim=-1) if normalize else out

    def _text_states(self, ids: torch.Tensor, need_weights: bool = False) -> tuple[torch.Tensor, list[torch.Tensor]]:
        return self.text_stack(self.word_embed(ids), text_mask(ids), need_weights)


class ToyShared(ToyModel):
    """One stack for both modalities: only the input embeddings differ (patches vs words)."""

    def __init__(self, cfg: ToyConfig) -> None:
        super().__init__(cfg)
        self.patch_embed = PatchEmbed(cfg)
        self.word_embed = WordEmbed(cfg)
        self.text_stack = Stack(cfg, cfg.layers)  # the shared blocks: images go through them too
        self.proj = nn.Linear(cfg.width, cfg.embed_dim, bias=False)  # shared projection

    @property
    def text_proj(self) -> nn.Linear:  # the one projection serves both modalities
        return self.proj

    def encode_image(self, pixels: torch.Tensor, normalize: bool = False) -> torch.Tensor:
        """pixels (b, 3, H, W) in [0, 1] -> (b, embed_dim), through the shared blocks with full attention."""
        states, _ = self.text_stack(self.patch_embed(pixels), None)  # (b, P, w)
        out = self.proj(states.mean(1))
        return F.normalize(out, dim=-1) if normalize else out

    def _text_states(self, ids: torch.Tensor, need_weights: bool = False) -> tuple[torch.Tensor, list[torch.Tensor]]:
        return self.text_stack(self.word_embed(ids), text_mask(ids), need_weights)


class ToyLiT(ToyModel):
    """LiT with a locked text tower: the image tower of :class:`ToyCLIP`, projecting to the frozen text model's
    ``embed_dim``. Texts are embedded outside this module by ``cfg.text_model`` (bindlab.encoders.toy.backend)."""

    def __init__(self, cfg: ToyConfig) -> None:
        super().__init__(cfg)
        self.patch_embed = PatchEmbed(cfg)
        self.vision = Stack(cfg, cfg.layers)
        setattr(self, *make_image_head(cfg))

    _image_states = ToyCLIP._image_states
    encode_image = ToyCLIP.encode_image

    def encode_image_counts(self, pixels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """pixels -> (embedding (b, embed_dim), the slot head's counts (b, shapes, attributes)) in one pass; only
        for a slot head (:class:`SlotPhraseHead`)."""
        if not isinstance(getattr(self, "image_head", None), SlotPhraseHead):
            raise ValueError("encode_image_counts needs a slot head (head_slots > 0)")
        counts = self.image_head.counts(self._image_states(pixels))
        return self.image_head.embed(counts), counts

    def _text_states(self, ids: torch.Tensor, need_weights: bool = False) -> tuple[torch.Tensor, list[torch.Tensor]]:
        raise NotImplementedError(
            f"the lit model has no text tower of its own; its texts are embedded by {self.cfg.text_model!r} (frozen)"
        )


def build_model(cfg: ToyConfig) -> ToyModel:
    """The model class for ``cfg.arch``, randomly initialised (seed torch before calling for reproducibility)."""
    return {"clip": ToyCLIP, "shared": ToyShared, "lit": ToyLiT}[cfg.arch](cfg)
