"""Finetuning maths (hinge loss, triplet accuracy, forgetting metrics, LiNeS) against their formulas, and LiNeS
applied to a real peft LoRA model on a tiny random encoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bindlab.train.finetune import (
    FinetuneConfig,
    batch_order,
    choose_lines_a,
    compute_loss_from_embeddings,
    paraphrase_r1,
    plan_steps,
    similarity_drift,
    triplet_accuracy,
)
from bindlab.train.lines import block_index, count_blocks, lines_factors, scale_factor, scale_lora_state


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# --- hinge loss --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("margin", [0.0, 0.05, 0.5])
def test_hinge_loss_matches_naive_formula(margin):
    rng = np.random.default_rng(0)
    q, p, n = (rng.normal(size=(7, 5)) * rng.uniform(0.1, 3, size=(7, 1)) for _ in range(3))  # not normalised
    expected = np.mean([max(0.0, margin - _unit(q[i]) @ _unit(p[i]) + _unit(q[i]) @ _unit(n[i])) for i in range(7)])
    got = compute_loss_from_embeddings(*(torch.tensor(x) for x in (q, p, n)), margin=margin)
    assert float(got) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_hinge_loss_is_zero_when_the_margin_is_met_and_has_gradients_otherwise():
    q = torch.tensor([[1.0, 0.0]])
    p = torch.tensor([[1.0, 0.1]])  # cos ~ 0.995
    n = torch.tensor([[0.0, 1.0]])  # cos 0
    assert float(compute_loss_from_embeddings(q, p, n, 0.05)) == 0.0
    q2 = torch.tensor([[1.0, 0.0]], requires_grad=True)
    loss = compute_loss_from_embeddings(q2, n, p, 0.05)  # swapped: violated
    assert float(loss.detach()) == pytest.approx(0.05 + 0.995037, abs=1e-5)
    loss.backward()
    assert q2.grad is not None and float(q2.grad.abs().sum()) > 0


def test_triplet_accuracy_counts_strict_wins_only():
    q = _unit(np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]))
    p = _unit(np.array([[1.0, 0.1], [0.0, 1.0], [1.0, 1.0]]))
    n = _unit(np.array([[0.0, 1.0], [1.0, 0.1], [1.0, 1.0]]))  # win, loss, tie
    assert triplet_accuracy(q, p, n) == pytest.approx(1 / 3)


def test_forgetting_metrics():
    rng = np.random.default_rng(1)
    base = _unit(rng.normal(size=(6, 8)))
    assert similarity_drift(base, base) == 0.0
    new = _unit(base + 0.3 * rng.normal(size=base.shape))
    sb, sn = base @ base.T, new @ new.T
    naive = np.mean([abs(sn[i, j] - sb[i, j]) for i in range(6) for j in range(6) if i != j])
    assert similarity_drift(base, new) == pytest.approx(naive)
    # pairs (0,1), (2,3), (4,5): each sentence's paraphrase is a small perturbation of it
    pairs = np.repeat(_unit(rng.normal(size=(3, 8))), 2, axis=0) + 0.01 * rng.normal(size=(6, 8))
    assert paraphrase_r1(_unit(pairs)) == 1.0
    assert paraphrase_r1(_unit(pairs[[0, 2, 1, 4, 3, 5]])) < 1.0


def test_forgetting_single_objects_are_the_model_cards_held_out_renders():
    """The finetune's single-object check draws its objects exactly as the toy cards' evaluation does (same captions,
    same pixels), so base figures agree: toy:shared finds nearly every one of the 40 (card: 0.84 over 1,008)."""
    from bindlab.studies.common import get_encoder
    from bindlab.train.finetune import forgetting_control, forgetting_reference, single_object_set
    from bindlab.train.toy.eval import render_single_objects

    items = single_object_set(n=6, seed=3)
    _, captions, pixels = render_single_objects(sample=6, seed=3, workers=1)
    assert [c for c, _ in items] == captions
    assert all(np.array_equal(im, px) for (_, im), px in zip(items, pixels, strict=True))
    enc = get_encoder("toy:shared")
    assert forgetting_control(enc, forgetting_reference(enc, with_images=True))["single_object_t2i_r1"] >= 0.8


# --- LiNeS --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_blocks,a", [(6, 0.1), (12, 0.0), (2, 0.5), (5, 1.0)])
def test_lines_factors_follow_the_formula(n_blocks, a):
    got = lines_factors(n_blocks, a)
    for layer in range(n_blocks):
        assert got[layer] == pytest.approx(a + (1 - a) * layer / (n_blocks - 1))
    assert got[0] == pytest.approx(a) and got[-1] == pytest.approx(1.0)
    assert np.all(np.diff(got) >= 0)


def test_lines_rejects_bad_a_and_handles_one_block():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        lines_factors(4, 1.5)
    with pytest.raises(ValueError, match="number"):
        lines_factors(4, "lots")
    assert lines_factors(1, 0.3).tolist() == [1.0]


@pytest.mark.parametrize(
    "name,idx",
    [
        ("encoder.layer.3.attention.self.query.lora_B.default.weight", 3),  # BERT / MiniLM
        ("text_model.encoder.layers.11.self_attn.q_proj.lora_B.default.weight", 11),  # CLIP
        ("model.language_model.layers.27.self_attn.o_proj.lora_A.default.weight", 27),  # Qwen3-VL
        ("stack.blocks.2.attn.v_proj.lora_B.default.weight", 2),  # toy
        ("transformer.h.0.attn.c_attn.weight", 0),
        ("embeddings.word_embeddings.weight", None),
        ("text_projection.weight", None),
        ("encoder.layernorm.weight", None),  # "layer" must be followed by .N.
    ],
)
def test_block_index_from_parameter_names(name, idx):
    assert block_index(name) == idx


def test_scale_lora_state_scales_the_effective_update_per_block():
    rng = np.random.default_rng(2)
    names = [f"encoder.layer.{i}.attention.self.query" for i in range(4)] + ["pooler.dense"]
    state = {}
    for n in names:
        state[f"{n}.lora_A.default.weight"] = torch.tensor(rng.normal(size=(2, 5)))
        state[f"{n}.lora_B.default.weight"] = torch.tensor(rng.normal(size=(5, 2)))
    assert count_blocks(list(state)) == 4
    a = 0.2
    scaled = scale_lora_state(state, 4, a)
    for n in names:
        A, B = state[f"{n}.lora_A.default.weight"], state[f"{n}.lora_B.default.weight"]
        sA, sB = scaled[f"{n}.lora_A.default.weight"], scaled[f"{n}.lora_B.default.weight"]
        i = block_index(n)
        lam = a if i is None else a + (1 - a) * i / 3
        assert torch.equal(sA, A)
        assert torch.allclose(sB @ sA, lam * (B @ A))
    original = {k: v.clone() for k, v in state.items()}
    scale_lora_state(state, 4, 0.0)
    assert all(torch.equal(state[k], original[k]) for k in state)  # inputs untouched
    with pytest.raises(ValueError, match="block 3"):
        scale_factor("encoder.layer.3.x.lora_B.weight", 3, 0.1)


def test_lines_on_a_real_peft_model_scales_each_layer_output_change(tmp_path):
    """Inject LoRA into a tiny BERT, give it a random update, apply LiNeS: at each layer the adapted query
    projection's output change equals lambda(layer) times the unscaled change."""
    from bindlab.encoders.adapter import LoraSettings, inject_lora, load_lora_state, lora_state
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.text_tower import text_tower
    from bindlab.encoders.tiny import build_tiny

    enc = load_encoder(build_tiny("st", tmp_path / "st"), device="cpu")
    tower = text_tower(enc)
    inject_lora(tower, LoraSettings(rank=2, alpha=4))
    torch.manual_seed(0)
    with torch.no_grad():
        for n, p in tower.module.named_parameters():
            if "lora_B" in n:
                p.normal_()
    unscaled = lora_state(tower)
    x = torch.randn(3, tower.module.config.hidden_size)
    layers = tower.module.encoder.layer

    def deltas() -> list[torch.Tensor]:
        with torch.no_grad():
            return [layer.attention.self.query(x) - layer.attention.self.query.base_layer(x) for layer in layers]

    before = deltas()
    assert all(float(d.abs().max()) > 0 for d in before)
    a = 0.25
    load_lora_state(tower, scale_lora_state(unscaled, tower.n_blocks, a))
    after = deltas()
    for i, (d0, d1) in enumerate(zip(before, after, strict=True)):
        lam = a + (1 - a) * i / (tower.n_blocks - 1)
        assert torch.allclose(d1, lam * d0, atol=1e-6)


def test_choose_lines_a_trades_gain_against_drift():
    grid = [
        {"a": 0.0, "val": 0.60, "drift": 0.00},
        {"a": 0.5, "val": 0.70, "drift": 0.02},
        {"a": 1.0, "val": 0.72, "drift": 0.10},
    ]
    assert choose_lines_a(grid, base_val=0.6, forget_weight=1.0) == 0.5  # 0.08 beats 0.0 and 0.02
    assert choose_lines_a(grid, base_val=0.6, forget_weight=0.0) == 1.0  # only gain counts
    assert choose_lines_a(grid, base_val=0.6, forget_weight=10.0) == 0.0  # drift dominates
    assert choose_lines_a([], 0.6, 1.0) == 0.1


# --- config and schedule -------------------------------------------------------------------------------------------
def test_config_validates_and_names_valid_keys(tmp_path):
    cfg = FinetuneConfig.from_dict({"model": "minilm", "data": str(tmp_path), "lora_rank": "8", "lines_a": "0.3"})
    assert cfg.lora_rank == 8 and cfg.lines_a == 0.3 and cfg.lr == 5e-5 and cfg.margin == 0.05
    with pytest.raises(ValueError, match="valid:.*lora_rank"):
        FinetuneConfig.from_dict({"model": "minilm", "data": "x", "lora_rnak": 4})
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        FinetuneConfig(model="minilm", data="x", batch_size=0)
    with pytest.raises(ValueError, match="LiNeS a"):
        FinetuneConfig(model="minilm", data="x", lines_a="sometimes")
    with pytest.raises(ValueError, match=r"lr must be in \(0, 1\], got 1e\+308: a larger rate makes the weights"):
        FinetuneConfig(model="minilm", data="x", lr=1e308)  # the job file's own check (--config), not only the CLI's
    with pytest.raises(ValueError, match="margin must be a finite number from 0 to 1000"):
        FinetuneConfig(model="minilm", data="x", margin=float("nan"))


def test_plan_steps_and_batch_order():
    cfg = FinetuneConfig(model="m", data="x", epochs=2, batch_size=16)
    assert plan_steps(100, cfg) == 2 * 7
    cfg.max_steps = 5
    assert plan_steps(100, cfg) == 5
    assert batch_order(10, 0, 1) == batch_order(10, 0, 1)
    assert sorted(batch_order(10, 1, 1)) == list(range(10)) and batch_order(10, 0, 1) != batch_order(10, 1, 1)


@pytest.mark.parametrize("arch,image_moves", [("shared", True), ("clip", False)])
def test_text_lora_moves_images_only_where_blocks_are_shared(tmp_path, arch, image_moves):
    """Random tiny toy models: a text-side LoRA update changes image embeddings of toy:shared, not of toy:clip."""
    from bindlab.encoders.adapter import LoraSettings, inject_lora
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.text_tower import text_tower
    from bindlab.encoders.toy.backend import save_model
    from bindlab.encoders.toy.models import ToyConfig, build_model
    from bindlab.encoders.toy.tokenizer import WordTokenizer

    tok = WordTokenizer.build()
    cfg = ToyConfig(
        arch=arch,
        width=32,
        heads=2,
        layers=2,
        text_layers=2,
        embed_dim=16,
        vocab_size=len(tok),
        max_text_len=tok.max_len,
    )
    torch.manual_seed(0)
    save_model(tmp_path / arch, build_model(cfg), tok, {})
    enc = load_encoder(f"toy:{tmp_path / arch}", device="cpu")
    image = [np.full((64, 64, 3), 120, dtype=np.uint8)]
    text = ["a red cube and a blue sphere"]
    i0, t0 = enc.embed_images(image), enc.embed_texts(text)
    tower = text_tower(enc)
    assert tower.n_blocks == 2 and tower.family == f"toy-{arch}"
    inject_lora(tower, LoraSettings())
    with torch.no_grad():
        for n, p in tower.module.named_parameters():
            if "lora_B" in n:
                p.normal_()
    assert not np.allclose(t0, enc.embed_texts(text), atol=1e-6)
    assert (not np.allclose(i0, enc.embed_images(image), atol=1e-6)) == image_moves


# --- the loop's callbacks -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A random tiny toy model and 80 triplet rows: a run of a few steps takes seconds."""
    from bindlab.data.triplets import generate_triplets, write_triplets
    from bindlab.encoders.toy.backend import build_random

    root = tmp_path_factory.mktemp("ft")
    rows, stats = generate_triplets(80, seed=0)
    write_triplets(root / "data", rows, stats)
    return build_random(root / "model", arch="shared", width=16, layers=2, heads=2), str(root / "data")


class _Recorder:
    """Records events (and the step each one saw); never touches the state."""

    def __init__(self, stop_at: int = 0, control=None):
        from bindlab.train.finetune import FinetuneCallback

        self.events: list[tuple[str, int]] = []
        self.stop_at, self.control = stop_at, control
        for name in (
            "on_phase",
            "on_train_start",
            "on_step_end",
            "on_eval",
            "on_step_complete",
            "on_checkpoint",
            "on_stop",
            "on_loop_end",
            "on_train_end",
        ):
            setattr(self, name, self._note(name))
        self.should_stop = FinetuneCallback().should_stop

    def _note(self, name):
        def hook(state, *args):
            self.events.append((name, state.step))
            if name == "on_step_end" and self.stop_at and state.step == self.stop_at:
                self.control.stop = True  # a SIGTERM arriving during this step

        return hook


def _cfg(tiny_run, **kw):
    from bindlab.train.finetune import FinetuneConfig

    model, data = tiny_run
    return FinetuneConfig(
        model=model,
        data=data,
        batch_size=8,
        max_steps=4,
        evaluate=False,
        checkpoint_every=2,
        threads=1,
        device="cpu",
        **kw,
    )


def test_events_come_in_order_and_checkpoints_are_callbacks(tiny_run, tmp_path):
    from bindlab.train.finetune import train

    rec = _Recorder()
    result = train(_cfg(tiny_run), tmp_path / "job", [rec])
    assert result["steps"] == 4
    names = [e for e in rec.events if e[0] not in ("on_phase",)]
    assert names == [
        ("on_train_start", 0),
        ("on_step_end", 1),
        ("on_step_complete", 1),
        ("on_step_end", 2),
        ("on_checkpoint", 2),
        ("on_step_complete", 2),
        ("on_step_end", 3),
        ("on_step_complete", 3),
        ("on_step_end", 4),
        ("on_step_complete", 4),
        ("on_checkpoint", 4),
        ("on_loop_end", 4),
        ("on_train_end", 4),
    ]
    assert (tmp_path / "job" / "checkpoints" / "last.pt").is_file()


def test_a_stopped_run_resumes_to_the_same_adapter(tiny_run, tmp_path):
    from safetensors.torch import load_file

    from bindlab.train.finetune import Control, Stopped, train

    train(_cfg(tiny_run), tmp_path / "straight")
    control = Control()
    rec = _Recorder(stop_at=3, control=control)
    with pytest.raises(Stopped, match="stopped at step 3"):
        train(_cfg(tiny_run), tmp_path / "cut", [rec], control)
    assert rec.events[-2:] == [("on_checkpoint", 3), ("on_stop", 3)]  # the checkpoint is written on the way out
    result = train(_cfg(tiny_run), tmp_path / "cut", resume=True)
    assert result["steps"] == 4 and result["triplets_seen"] == 32
    a = load_file(str(tmp_path / "straight" / "adapter_unscaled.safetensors"))
    b = load_file(str(tmp_path / "cut" / "adapter_unscaled.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_debug_hooks_inject_a_failure(tiny_run, tmp_path):
    from bindlab.train.finetune import train

    with pytest.raises(RuntimeError, match="injected failure at step 2"):
        train(_cfg(tiny_run, debug={"fail_at_step": 2}), tmp_path / "job")


def test_an_encoder_without_a_text_tower_is_named_in_the_error():
    from bindlab.encoders.base import EncoderError, load_encoder
    from bindlab.encoders.text_tower import text_tower

    with pytest.raises(EncoderError, match=r"bow:words: finetuning needs a transformer text encoder .*backend 'bow'"):
        text_tower(load_encoder("bow"))


@pytest.mark.parametrize("kind, family", [("st", "st"), ("hf-clip", "hf"), ("hf-siglip", "hf"), ("qwen3vl", "qwen3vl")])
def test_each_backend_builds_its_text_tower_with_embed_texts_numbers(tmp_path, kind, family):
    """A backend's text_tower(): the differentiable forward computes what embed_texts computes, and its LoRA
    targets exist in the module (injection finds them)."""
    from bindlab.encoders.adapter import LoraSettings, inject_lora
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.text_tower import text_tower
    from bindlab.encoders.tiny import build_tiny

    enc = load_encoder(build_tiny(kind, tmp_path / kind), device="cpu")
    tower = text_tower(enc)
    assert tower.family == family and tower.n_blocks >= 1
    texts = ["a red cube and a blue sphere", "a green cone"]
    with torch.no_grad():
        got = torch.nn.functional.normalize(tower.forward(texts).float(), dim=-1).numpy()
    np.testing.assert_allclose(got, enc.embed_texts(texts), atol=1e-5)
    assert inject_lora(tower, LoraSettings())


def test_open_clip_has_no_text_tower_and_says_so(tmp_path):
    from bindlab.encoders.base import EncoderError, load_encoder
    from bindlab.encoders.text_tower import text_tower
    from bindlab.encoders.tiny import build_tiny

    enc = load_encoder(build_tiny("open-clip", tmp_path / "oc"), device="cpu")
    with pytest.raises(EncoderError, match=r"open_clip:local-dir:.*finetuning needs a transformer text encoder"):
        text_tower(enc)
