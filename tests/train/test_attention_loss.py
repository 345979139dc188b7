"""The auxiliary attention loss and image supervision of the finetune, on a random tiny toy:shared model and on
tiny random transformers text towers (BERT as st:, CLIP and SigLIP as hf:, Qwen3-VL).

Zero weight trains exactly like the plain recipe; a nonzero weight sends gradients into the band's layers (and no
later ones); the loss's margins are the Attention feature's margins; image supervision trains through the shared
blocks; bad settings are refused before a job exists.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch


@pytest.fixture(scope="module")
def toy_world(tmp_path_factory):
    """A random tiny toy:shared model (2 layers) and toy-world triplets (renderable words, N = 2 and 3)."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber
    from bindlab.data.triplets import write_triplets
    from bindlab.encoders.toy.backend import build_random

    root = tmp_path_factory.mktemp("att")
    rows = []
    for i, q in enumerate(generate_saber(per_size=12, sizes=(2, 3), seed=5, vocab=RENDER_VOCAB)):
        c = next(c for c in q.candidates if c.role == "attr_swap")
        rows.append(
            {
                "id": f"{q.id}-a",
                "construction": "pair_swap",
                "query": q.query.text,
                "positive": q.candidates[q.answer].text,
                "negative": c.text,
                "negative_kind": "attribute",
                "bindings": [list(b) for b in q.query.bindings],
                "split": "train" if i % 4 else "val",
            }
        )
    write_triplets(root / "data", rows, {"n_rows": len(rows)})
    return build_random(root / "model", arch="shared", width=16, layers=2, heads=2), str(root / "data"), rows


def _cfg(world, **kw):
    from bindlab.train.finetune import FinetuneConfig

    model, data, _ = world
    settings = {"batch_size": 6, "max_steps": 3, "evaluate": False, "threads": 1, "device": "cpu", "lr": 1e-2, **kw}
    return FinetuneConfig(**{"model": model, "data": data, **settings})


def _adapter(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter_unscaled.safetensors"))


def test_zero_weight_trains_exactly_like_plain_and_a_weight_changes_the_update(toy_world, tmp_path):
    from bindlab.train.finetune import train

    train(_cfg(toy_world), tmp_path / "plain")
    train(_cfg(toy_world, attention_loss=0.0, attention_layers="0-1"), tmp_path / "zero")
    res = train(_cfg(toy_world, attention_loss=2.0, attention_layers="0-1"), tmp_path / "att")
    plain, zero, att = _adapter(tmp_path / "plain"), _adapter(tmp_path / "zero"), _adapter(tmp_path / "att")
    assert all(torch.equal(plain[k], zero[k]) for k in plain)  # same seed, same weights, bit for bit
    assert any(not torch.equal(plain[k], att[k]) for k in plain)
    assert res["objective"] == {
        "supervision": "text",
        "attention_loss": 2.0,
        "attention_layers": [0, 1],
        "loss": "triplet + 2.0 x attention",
    }
    saved = json.loads((tmp_path / "att" / "result.json").read_text())
    assert saved["provenance"]["settings"]["attention_loss"] == 2.0


def test_zero_weight_loss_term_leaves_the_steps_unchanged(toy_world):
    """train_step with the attention term at weight 0 computes it and still takes the plain steps exactly."""
    from bindlab.encoders.adapter import LoraSettings, inject_lora
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.text_tower import text_tower
    from bindlab.train.attention_loss import AttentionLoss
    from bindlab.train.finetune import train_step

    model, _, rows = toy_world
    finals = []
    for weight in (None, 0.0):
        torch.manual_seed(0)
        enc = load_encoder(model, device="cpu")
        tower = text_tower(enc)
        params = inject_lora(tower, LoraSettings())
        opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)
        aux = None if weight is None else AttentionLoss.for_encoder(enc, weight, "0-1")
        for s in range(4):
            train_step(tower, opt, params, rows[s * 4 : s * 4 + 4], 0.05, aux=aux)
        finals.append([p.detach().clone() for p in params])
    assert all(torch.equal(a, b) for a, b in zip(*finals, strict=True))


def _lora_grads(model: str, rows: list[dict], band: str) -> dict[str, float]:
    from bindlab.encoders.adapter import LoraSettings, inject_lora
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.text_tower import text_tower
    from bindlab.train.attention_loss import AttentionLoss

    torch.manual_seed(0)
    enc = load_encoder(model, device="cpu")
    tower = text_tower(enc)
    inject_lora(tower, LoraSettings())
    loss = AttentionLoss.for_encoder(enc, 1.0, band)(rows)
    loss.backward()
    return {
        n: float(p.grad.abs().sum()) if p.grad is not None else 0.0
        for n, p in tower.module.named_parameters()
        if "lora_B" in n
    }


def test_the_attention_loss_sends_gradients_into_the_band_and_not_beyond(toy_world):
    model, _, rows = toy_world
    grads = _lora_grads(model, rows[:6], "0-0")
    by_block = {b: sum(v for n, v in grads.items() if f"blocks.{b}." in n) for b in (0, 1)}
    assert by_block[0] > 0  # the band's q/k adapters move the band's attention maps
    assert by_block[1] == 0  # a later layer cannot change layer 0's attention
    grads = _lora_grads(model, rows[:6], "1-1")
    assert sum(v for n, v in grads.items() if "blocks.1." in n and ("q_proj" in n or "k_proj" in n)) > 0


def test_the_loss_margins_are_the_attention_features_margins(toy_world):
    """band_margins over the differentiable maps equals bindlab.analysis.attention.analyse_caption per layer."""
    from bindlab.analysis.attention import Caption, analyse_caption, attention_access
    from bindlab.encoders.base import load_encoder
    from bindlab.train.attention_loss import band_margins, differentiable_maps, token_weights

    model, _, rows = toy_world
    enc = load_encoder(model, device="cpu")
    access = attention_access(enc)
    texts = [r["query"] for r in rows[:5]]
    maps = differentiable_maps(enc)(texts)
    s = maps[0].shape[-1]
    w = np.zeros((len(texts), s, s))
    for i, r in enumerate(rows[:5]):
        wi = token_weights(access, r["query"], r["bindings"])
        w[i, : len(wi), : len(wi)] = wi
    ours = band_margins(maps, torch.as_tensor(w, dtype=maps[0].dtype), (0, 1)).detach().numpy()  # (2, 5)
    for i, r in enumerate(rows[:5]):
        ref = analyse_caption(access, Caption(r["query"], [tuple(b) for b in r["bindings"]])).margins
        np.testing.assert_allclose(ours[:, i], ref, atol=1e-5)


def test_image_supervision_trains_through_the_shared_blocks(toy_world, tmp_path):
    from bindlab.train.finetune import train

    res = train(_cfg(toy_world, supervision="image", max_steps=2), tmp_path / "img")
    train(_cfg(toy_world, max_steps=2), tmp_path / "txt")
    img, txt = _adapter(tmp_path / "img"), _adapter(tmp_path / "txt")
    assert any(float(v.abs().sum()) > 0 for k, v in img.items() if "lora_B" in k)  # images moved the adapters
    assert any(not torch.equal(img[k], txt[k]) for k in img)
    assert res["objective"]["supervision"] == "image" and res["objective"]["attention_layers"] is None


@pytest.mark.parametrize(
    "settings,match",
    [
        ({"attention_loss": "nan"}, "finite number >= 0"),
        ({"attention_loss": -1}, "finite number >= 0"),
        ({"attention_loss": 1, "attention_layers": "1-5"}, "has layers 0 to 1"),
        ({"attention_loss": 1, "attention_layers": "2-1"}, "A-B with 0 <= A <= B"),
        ({"attention_layers": "0-1"}, "no effect without --attention-loss"),
        ({"supervision": "audio"}, "text, image"),
    ],
)
def test_bad_objective_settings_are_refused_before_a_job(toy_world, settings, match):
    from bindlab.studies.finetune import check_config

    model, data, _ = toy_world
    with pytest.raises(ValueError, match=match):
        check_config({"model": model, "data": data, **settings})


def test_image_supervision_needs_toy_shared_and_renderable_triplets(toy_world, tmp_path):
    from bindlab.data.triplets import generate_triplets, write_triplets
    from bindlab.encoders.toy.backend import build_random
    from bindlab.studies.finetune import check_config

    model, data, _ = toy_world
    clip = build_random(tmp_path / "clip", arch="clip", width=16, layers=2, heads=2)
    with pytest.raises(ValueError, match="toy:shared"):
        check_config({"model": clip, "data": data, "supervision": "image"})
    with pytest.raises(ValueError, match="toy:shared"):
        check_config({"model": "minilm", "data": data, "supervision": "image"})
    rows, stats = generate_triplets(20, seed=0)  # the general vocabulary: words the renderer cannot draw
    write_triplets(tmp_path / "general", rows, stats)
    with pytest.raises(ValueError, match="cannot be rendered"):
        check_config({"model": model, "data": str(tmp_path / "general"), "supervision": "image"})
    ok = check_config(
        {"model": model, "data": data, "supervision": "image", "attention_loss": 0.5, "attention_layers": "1-1"}
    )
    assert (ok["supervision"], ok["attention_loss"], ok["attention_layers"]) == ("image", 0.5, "1-1")


# --- transformers text towers: MiniLM-style BERT (st:), CLIP and SigLIP (hf:) -----------------------------------
@pytest.fixture(scope="module")
def tiny_towers(tmp_path_factory):
    """Tiny random transformers encoders (2 layers, BPE tokenizers that split words into sub-tokens) by kind."""
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("towers")
    return {kind: build_tiny(kind, root / kind) for kind in ("st", "hf-clip", "hf-siglip", "qwen3vl")}


def _layer_of(name: str) -> int:
    import re

    return int(re.search(r"\.layers?\.(\d+)\.", name).group(1))


def _tower_steps(model: str, rows: list[dict], weight: float | None) -> list[torch.Tensor]:
    from bindlab.encoders.adapter import LoraSettings, inject_lora
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.text_tower import text_tower
    from bindlab.train.attention_loss import AttentionLoss
    from bindlab.train.finetune import train_step

    torch.manual_seed(0)
    enc = load_encoder(model, device="cpu")
    tower = text_tower(enc)
    params = inject_lora(tower, LoraSettings())
    tower.module.eval()  # as train() does
    opt = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)
    aux = None if weight is None else AttentionLoss.for_encoder(enc, weight, "0-1")
    for s in range(3):
        train_step(tower, opt, params, rows[s * 4 : s * 4 + 4], 0.05, aux=aux)
    return [p.detach().clone() for p in params]


@pytest.mark.parametrize("kind", ["st", "hf-clip", "qwen3vl"])
def test_transformer_towers_zero_weight_is_plain_and_a_weight_changes_the_update(toy_world, tiny_towers, kind):
    _, _, rows = toy_world
    plain, zero, att = (_tower_steps(tiny_towers[kind], rows, w) for w in (None, 0.0, 5.0))
    assert all(torch.equal(a, b) for a, b in zip(plain, zero, strict=True))  # the extra forward changes nothing
    assert any(not torch.equal(a, b) for a, b in zip(plain, att, strict=True))


@pytest.mark.parametrize("kind", ["st", "hf-clip", "hf-siglip", "qwen3vl"])
def test_transformer_towers_send_gradients_into_the_band_and_not_beyond(toy_world, tiny_towers, kind):
    _, _, rows = toy_world
    grads = _lora_grads(tiny_towers[kind], rows[:6], "0-0")
    side = {"st": "", "qwen3vl": "language_model"}.get(kind, "text_model")
    assert grads and all(side in n for n in grads)  # the text side only
    by_layer = {b: sum(v for n, v in grads.items() if _layer_of(n) == b) for b in (0, 1)}
    assert by_layer[0] > 0  # the band's query/key adapters move the band's attention maps
    assert by_layer[1] == 0  # a later layer cannot change layer 0's attention
    grads = _lora_grads(tiny_towers[kind], rows[:6], "1-1")
    assert sum(v for n, v in grads.items() if _layer_of(n) == 1) > 0


@pytest.mark.parametrize("kind", ["st", "hf-clip", "hf-siglip", "qwen3vl"])
def test_transformer_tower_margins_are_the_attention_features_margins(toy_world, tiny_towers, kind):
    """Batched, padded, differentiable maps give the Attention feature's per-layer margins (sub-words aggregated)."""
    from bindlab.analysis.attention import Caption, analyse_caption, attention_access
    from bindlab.encoders.base import load_encoder
    from bindlab.train.attention_loss import band_margins, differentiable_maps, token_weights

    _, _, rows = toy_world
    enc = load_encoder(tiny_towers[kind], device="cpu")
    access = attention_access(enc)
    rows = sorted(rows, key=lambda r: len(r["query"]))[::7][:5]  # captions of different lengths: padding matters
    assert len({len(access.encode(r["query"]).tokens) for r in rows}) > 1 or kind == "hf-siglip"
    assert any(len(w.token_indices) > 1 for r in rows for w in access.word_alignment(r["query"]))  # sub-words
    maps = differentiable_maps(enc)([r["query"] for r in rows])
    assert maps[0].requires_grad and len(maps) == access.num_layers
    s = maps[0].shape[-1]
    w = np.zeros((len(rows), s, s))
    for i, r in enumerate(rows):
        wi = token_weights(access, r["query"], r["bindings"])
        w[i, : len(wi), : len(wi)] = wi
    ours = band_margins(maps, torch.as_tensor(w, dtype=maps[0].dtype), (0, 1)).detach().numpy()
    for i, r in enumerate(rows):
        ref = analyse_caption(access, Caption(r["query"], [tuple(b) for b in r["bindings"]])).margins
        np.testing.assert_allclose(ours[:, i], ref, atol=1e-5)


def test_transformer_towers_pass_the_objective_check_and_others_are_refused(toy_world, tiny_towers):
    from types import SimpleNamespace

    from bindlab.studies.finetune import check_config
    from bindlab.train.attention_loss import differentiable_maps

    _, data, _ = toy_world
    ok = check_config({"model": tiny_towers["st"], "data": data, "attention_loss": 0.5, "attention_layers": "1-1"})
    assert (ok["attention_loss"], ok["attention_layers"]) == (0.5, "1-1")
    with pytest.raises(ValueError, match="has layers 0 to 1"):
        check_config({"model": tiny_towers["hf-clip"], "data": data, "attention_loss": 1, "attention_layers": "0-2"})
    with pytest.raises(ValueError, match=r"open_clip:ViT-B-32 has none .* --attention-loss 0"):
        differentiable_maps(SimpleNamespace(id="open_clip:ViT-B-32", model=object(), tokenizer=object()))


def test_a_minilm_style_finetune_job_trains_with_the_attention_loss(toy_world, tiny_towers, tmp_path):
    """End to end through train(): the objective is recorded and the adapters differ from the plain recipe's."""
    from bindlab.train.finetune import train

    model = tiny_towers["st"]
    train(_cfg(toy_world, model=model, max_steps=2), tmp_path / "plain")
    res = train(_cfg(toy_world, model=model, max_steps=2, attention_loss=1.0), tmp_path / "att")
    assert res["family"] == "st"
    assert res["objective"] == {
        "supervision": "text",
        "attention_loss": 1.0,
        "attention_layers": [1, 1],
        "loss": "triplet + 1.0 x attention",
    }
    plain, att = _adapter(tmp_path / "plain"), _adapter(tmp_path / "att")
    assert any(not torch.equal(plain[k], att[k]) for k in plain)
