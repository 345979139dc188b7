"""Text-only binding finetuning (SABER section 4, appendix B): LoRA + hinge triplet loss, then LiNeS.

Read top to bottom: :class:`FinetuneConfig` (what a job asks for), the loss maths
(:func:`compute_loss_from_embeddings`, pure), evaluation (:func:`triplet_accuracy`, :func:`forgetting_control`),
the :class:`FinetuneCallback` events, and :func:`train`, the loop. The loop knows nothing about jobs, files of progress or
cancellation: those are callbacks (``bindlab/jobs/runner.py``) and a :class:`Control` flag that a signal handler
sets. Callbacks observe; they never change the training state.

Outputs written to ``out_dir``: ``adapter_unscaled.safetensors`` (the trained LoRA), ``adapter_lines.safetensors``
(the LiNeS-scaled one, the default ``lora:<job_id>``), ``lines.json`` (a, factors, the validation grid),
``result.json`` (before/after metrics with provenance), ``checkpoints/last.pt`` (resumable).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.encoders import distributed
from bindlab.train.attention_loss import check_weight, parse_band
from bindlab.train.lines import PAPER_DEFAULT_A, PAPER_GRID, check_a, lines_factors, model_label, scale_lora_state

LINES_GRID: tuple[float, ...] = PAPER_GRID  # the --lines-a auto search: Wang et al.'s single-task grid 1.0..0.0
DEFAULT_LINES_A = PAPER_DEFAULT_A  # Wang et al.'s single-task default (bindlab.train.lines cites where)
SUPERVISION = ("text", "image")  # what the triplet loss compares: texts, or rendered scenes (toy:shared)


# ----------------------------------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------------------------------


MAX_LR = 1.0  # AdamW steps of this size already leave any pretrained weights behind


@dataclass
class FinetuneConfig:
    """One finetuning run. The same keys work on the command line (``--lora-rank``) and in ``--config job.json``."""

    model: str  # base encoder id (minilm, st:/folder, toy:shared, hf:…, qwen3vl:…)
    data: str  # triplets folder (holding triplets.jsonl) or file
    epochs: int = 1  # passes over the train split
    max_steps: int = 0  # stop after this many optimizer steps (0 = no cap)
    batch_size: int = 16  # triplets per step (across all processes)
    lr: float = 5e-5  # AdamW learning rate (constant)
    weight_decay: float = 0.01  # AdamW weight decay
    margin: float = 0.05  # hinge margin gamma
    lora_rank: int = 4  # LoRA r
    lora_alpha: float = 4.0  # LoRA alpha (update scale alpha / r)
    lora_dropout: float = 0.0  # LoRA dropout
    lines_a: str | float = DEFAULT_LINES_A  # LiNeS a in [0, 1] (default: Wang et al.'s 0.1), or "auto" (validation)
    forget_weight: float = 1.0  # auto a maximises val gain - forget_weight * drift
    seed: int = 0  # shuffling (and LoRA init through torch's seed)
    device: str = "auto"  # auto | cpu | cuda | cuda:N | mps
    eval_every: int = 0  # steps between validation evaluations for the live curve (0 = about 10 per run, -1 = never)
    eval_rows: int = 400  # rows per split used by evaluations (0 = all)
    checkpoint_every: int = 0  # steps between checkpoints (0 = at every evaluation and at the end)
    evaluate: bool = True  # baseline + final evaluation and the LiNeS grid (off only for throughput benches)
    num_processes: int = 1  # >1: data parallel on N processes (torchrun here; `jobs export-script` for clusters)
    threads: int = 0  # torch CPU threads (0 = torch's default); 1 is far faster for small models on a busy CPU
    heavy: bool = True  # counts against the one-GPU-heavy-job-at-a-time limit of the job manager
    attention_loss: float = 0.0  # weight of the auxiliary attention binding-margin loss (SABER App. C.3); 0 = off
    attention_layers: str = ""  # its layer band "A-B" (0-based, inclusive); "" = the last third of the layers
    supervision: str = "text"  # text triplets, or image: rendered image triplets (toy:shared; SABER appendix E)
    debug: dict = field(default_factory=dict)  # tests only: {"fail_at_step": k, "sleep_per_step": s}

    def __post_init__(self) -> None:
        if not str(self.model).strip():
            raise ValueError("finetune needs a base model id (--model), e.g. minilm or toy:shared")
        if not str(self.data).strip():
            raise ValueError(
                "finetune needs a triplets folder (--data); make one with "
                "'python -m bindlab generate triplets --out DIR'"
            )
        for name, lo in (("epochs", 1), ("batch_size", 1), ("lora_rank", 1), ("num_processes", 1)):
            if int(getattr(self, name)) < lo:
                raise ValueError(f"{name} must be >= {lo}, got {getattr(self, name)}")
        for name in ("max_steps", "eval_rows", "checkpoint_every", "threads"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if int(self.eval_every) < -1:
            raise ValueError(f"eval_every must be -1 (never), 0 (auto) or a number of steps, got {self.eval_every}")
        if not 0 < float(self.lr) <= MAX_LR:
            raise ValueError(
                f"lr must be in (0, {MAX_LR:g}], got {self.lr}: a larger rate makes the weights "
                "non-finite within the first steps (the default is 5e-5)"
            )
        for name in ("weight_decay", "margin", "forget_weight"):
            value = float(getattr(self, name))
            if not 0 <= value <= 1e3:  # also refuses NaN and inf
                raise ValueError(f"{name} must be a finite number from 0 to 1000, got {getattr(self, name)}")
        if str(self.lines_a).strip().lower() != "auto":
            self.lines_a = check_a(self.lines_a)
        if not isinstance(self.debug, dict):
            raise ValueError("debug must be a JSON object")
        self.attention_loss = check_weight(self.attention_loss)
        parse_band(self.attention_layers)  # the syntax here; the band against the model's layers in train()
        self.attention_layers = str(self.attention_layers or "").strip()
        if self.supervision not in SUPERVISION:
            raise ValueError(f"supervision must be one of {', '.join(SUPERVISION)}, got {self.supervision!r}")
        self.data = str(Path(self.data).expanduser().resolve())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FinetuneConfig":
        """Build from a dict (``job.json``); unknown keys are refused with the list of valid ones."""
        if not isinstance(d, dict):
            raise ValueError("a finetune config must be a JSON object")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown finetune setting(s) {unknown}; valid: {sorted(names)}")
        missing = [k for k in ("model", "data") if k not in d]
        if missing:
            raise ValueError(f"finetune config lacks {missing}")
        types = {f.name: f.type for f in fields(cls)}
        clean: dict[str, Any] = {}
        for k, v in d.items():
            t = str(types[k])
            try:
                if t == "int":
                    clean[k] = int(v)
                elif t == "float":
                    clean[k] = float(v)
                elif t == "bool":
                    clean[k] = v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes")
                else:
                    clean[k] = v
            except (TypeError, ValueError):
                raise ValueError(f"finetune setting {k}={v!r} is not a valid {t}") from None
        return cls(**clean)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ----------------------------------------------------------------------------------------------------------------
# Loss and metrics (pure)
# ----------------------------------------------------------------------------------------------------------------


def compute_loss_from_embeddings(q: Any, p: Any, n: Any, margin: float = 0.05) -> Any:
    """Hinge triplet loss on cosine: ``mean_i max(0, margin - cos(q_i, p_i) + cos(q_i, n_i))``.

    Args:
        q, p, n: query, positive and negative embeddings, torch tensors ``(b, d)`` (need not be normalised).
        margin: the hinge margin gamma.

    Returns:
        Scalar tensor.
    """
    import torch.nn.functional as F

    cos_p = F.cosine_similarity(q, p, dim=-1)  # (b,)
    cos_n = F.cosine_similarity(q, n, dim=-1)  # (b,)
    return (margin - cos_p + cos_n).clamp(min=0).mean()


def triplet_accuracy(q: np.ndarray, p: np.ndarray, n: np.ndarray) -> float:
    """Share of triplets with ``cos(q, p) > cos(q, n)`` (chance 0.5). Inputs ``(m, d)`` unit rows."""
    if len(q) == 0:
        return float("nan")
    return float(np.mean(np.einsum("md,md->m", q, p) > np.einsum("md,md->m", q, n)))


def similarity_drift(base: np.ndarray, new: np.ndarray) -> float:
    """Mean absolute change of the pairwise cosine similarities of the same sentences (off-diagonal).

    Args:
        base, new: ``(m, d)`` unit rows from the base and the finetuned model (same sentences, same order).
    """
    sb, sn = base @ base.T, new @ new.T  # (m, m)
    off = ~np.eye(len(base), dtype=bool)
    return float(np.mean(np.abs(sn - sb)[off]))


def paraphrase_r1(emb: np.ndarray) -> float:
    """Paraphrase retrieval R@1 over sentences stored as adjacent pairs ``[s0, p0, s1, p1, ...]`` ``(2k, d)``."""
    s = emb @ emb.T
    np.fill_diagonal(s, -np.inf)
    partner = np.arange(len(emb)) ^ 1
    return float(np.mean(np.argmax(s, axis=1) == partner))


# ----------------------------------------------------------------------------------------------------------------
# Evaluation
# ----------------------------------------------------------------------------------------------------------------


def _texts_accuracy(embed: Any, rows: Sequence[dict]) -> float:
    if not rows:
        return float("nan")
    m = len(rows)
    vecs = embed([r["query"] for r in rows] + [r["positive"] for r in rows] + [r["negative"] for r in rows])
    return triplet_accuracy(vecs[:m], vecs[m : 2 * m], vecs[2 * m :])


def evaluate_triplets(embed: Any, splits: dict[str, list[dict]]) -> dict[str, float]:
    """Triplet accuracy per split, and per construction in the held-out split. ``embed``: ``list[str] -> (n, d)``."""
    out: dict[str, float] = {}
    for name, rows in splits.items():
        if name == "train" or not rows:
            continue
        out[name] = _texts_accuracy(embed, rows)
        if name == "heldout":
            for c in sorted({r["construction"] for r in rows}):
                out[f"heldout:{c}"] = _texts_accuracy(embed, [r for r in rows if r["construction"] == c])
    return out


def single_object_set(n: int = 40, seed: int = 0) -> list[tuple[str, Any]]:
    """``n`` held-out single objects as ``(caption, image)``, with distinct (shape, attribute) pairs, drawn exactly
    as the toy models' cards evaluate them (:func:`bindlab.train.toy.eval.render_single_objects`)."""
    from bindlab.train.toy.eval import render_single_objects

    _, captions, pixels = render_single_objects(sample=n, seed=seed, workers=1)
    return list(zip(captions, list(pixels), strict=True))


def forgetting_reference(encoder: Any, with_images: bool) -> dict[str, np.ndarray]:
    """Base-model embeddings the forgetting control compares against (general sentences; single objects)."""
    from bindlab.train.general_sentences import general_sentences

    ref = {"general": encoder.embed_texts(general_sentences())}
    if with_images:
        items = single_object_set()
        ref["single_text"] = encoder.embed_texts([t for t, _ in items])
        ref["single_image"] = encoder.embed_images([im for _, im in items])
    return ref


def forgetting_control(encoder: Any, ref: dict[str, np.ndarray]) -> dict[str, float]:
    """Drift of the general-sentence similarity structure from the base model, paraphrase R@1, and (image models)
    single-object text->image R@1 over a rendered gallery."""
    from bindlab.train.general_sentences import general_sentences

    now = encoder.embed_texts(general_sentences())
    out = {"drift": similarity_drift(ref["general"], now), "paraphrase_r1": paraphrase_r1(now)}
    if "single_image" in ref:
        items = single_object_set()
        t = encoder.embed_texts([c for c, _ in items])
        i = encoder.embed_images([im for _, im in items])
        out["single_object_t2i_r1"] = float(np.mean(np.argmax(t @ i.T, axis=1) == np.arange(len(items))))
    return out


def choose_lines_a(grid: list[dict[str, Any]], base_val: float, forget_weight: float) -> float:
    """Pick LiNeS ``a`` from evaluated grid points ``{"a", "val", "drift"}``: maximise
    ``(val - base_val) - forget_weight * drift``; ties go to the smaller drift, then the smaller a."""
    if not grid:
        return DEFAULT_LINES_A
    best = max(grid, key=lambda g: ((g["val"] - base_val) - forget_weight * g["drift"], -g["drift"], -g["a"]))
    return float(best["a"])


# ----------------------------------------------------------------------------------------------------------------
# The objective beyond text triplets: attention loss (SABER App. C.3), image supervision (SABER appendix E)
# ----------------------------------------------------------------------------------------------------------------


def check_image_supervision(encoder: Any) -> None:
    """Image supervision trains the LoRA of the text blocks on rendered scenes, which only moves a model whose images
    pass through those same blocks: ``toy:shared`` (one stack for words and patches).

    Raises:
        ValueError: any other model, naming it and what to use.
    """
    config = getattr(encoder, "config", None)
    if (
        "image" not in encoder.modalities
        or not isinstance(config, dict)
        or config.get("arch") != "shared"
        or not callable(getattr(encoder, "pixels", None))
    ):
        raise ValueError(
            f"--supervision image needs a model whose images go through the blocks the LoRA adapts, "
            f"with a trainable image path: toy:shared (or a toy:/folder of that architecture); "
            f"{encoder.id} has none — use --supervision text"
        )


class ImageRoles:
    """Rows -> (anchor, positive, negative) *image* embeddings ``(b, d)`` with gradients (:mod:`bindlab.data.
    image_triplets` renders them; each row's three images are rendered once and kept)."""

    def __init__(self, encoder: Any, seed: int = 0) -> None:
        check_image_supervision(encoder)
        # rendered at the model's side (the toy models' training renders), never under 64 px: some textures need
        # the room (``encoder.pixels`` downsizes for a smaller model)
        self.encoder, self.seed, self.size = encoder, seed, max(64, int(encoder.image_size))
        self._images: dict[str, tuple[Any, Any, Any]] = {}
        self._scenes: dict[tuple[Any, ...], Any] = {}  # (objects, size, seed) -> image: a question's rows share two

    def _render(self, objects: list[Any], size: int, seed: int) -> Any:
        from bindlab.data.render import render_scene

        key = (tuple(objects), size, seed)
        if key not in self._scenes:
            self._scenes[key] = render_scene(objects, size=size, seed=seed)
        return self._scenes[key]

    def images(self, row: dict[str, Any]) -> tuple[Any, Any, Any]:
        """The row's (anchor, positive, negative) PIL images."""
        from bindlab.data.image_triplets import image_triplet

        key = str(row["id"])
        if key not in self._images:
            t = image_triplet(row, size=self.size, seed=self.seed, render=self._render)
            self._images[key] = (t.anchor, t.positive, t.negative)
        return self._images[key]

    def __call__(self, rows: list[dict]) -> tuple[Any, Any, Any]:
        import torch

        trip = [self.images(r) for r in rows]
        images = [t[k] for k in range(3) for t in trip]  # anchors, positives, negatives
        px = torch.from_numpy(self.encoder.pixels(images)).to(self.encoder.device)  # (3b, 3, s, s)
        emb = self.encoder.model.encode_image(px)  # (3b, d), through the adapted shared blocks
        b = len(rows)
        return emb[:b], emb[b : 2 * b], emb[2 * b :]


def objective_terms(cfg: FinetuneConfig, encoder: Any) -> tuple[ImageRoles | None, Any]:
    """What :func:`train_step` adds to plain text triplets: image roles (``supervision`` image) and the weighted
    attention loss (``attention_loss`` > 0); ``(None, None)`` for the plain recipe."""
    from bindlab.train.attention_loss import AttentionLoss

    roles = ImageRoles(encoder, cfg.seed) if cfg.supervision == "image" else None
    aux = (
        AttentionLoss.for_encoder(encoder, cfg.attention_loss, cfg.attention_layers) if cfg.attention_loss > 0 else None
    )
    return roles, aux


def objective_record(cfg: FinetuneConfig, aux: Any) -> dict[str, Any]:
    """The objective as ``result.json`` records it (the band resolved to layer numbers)."""
    return {
        "supervision": cfg.supervision,
        "attention_loss": cfg.attention_loss,
        "attention_layers": list(aux.band) if aux is not None else None,
        "loss": "triplet" + (f" + {cfg.attention_loss} x attention" if aux is not None else ""),
    }


def check_objective(config: dict[str, Any]) -> dict[str, Any]:
    """Check the objective settings of a job config against its model before a job is queued: the attention-loss
    weight finite and ≥ 0, its band inside the model's layers on a model with differentiable attention (toy,
    st:/minilm, hf: CLIP/SigLIP; others are refused), image supervision on ``toy:shared`` over renderable triplets.

    Returns:
        The settings, cleaned (weight as float, band as written, supervision).

    Raises:
        ValueError: one line naming the bad setting.
    """
    from bindlab.encoders.base import load_encoder
    from bindlab.train.attention_loss import AttentionLoss

    weight = check_weight(config.get("attention_loss") or 0.0)
    layers = str(config.get("attention_layers") or "").strip()
    parse_band(layers)
    supervision = str(config.get("supervision") or "text").strip().lower()
    if supervision not in SUPERVISION:
        raise ValueError(f"--supervision must be one of {', '.join(SUPERVISION)}, got {supervision!r}")
    if layers and weight == 0:
        raise ValueError(f"--attention-layers {layers} has no effect without --attention-loss WEIGHT > 0")
    if weight > 0 or supervision == "image":
        encoder = load_encoder(str(config["model"]))
        if weight > 0:
            AttentionLoss.for_encoder(encoder, weight, layers)
        if supervision == "image":
            from bindlab.data.image_triplets import check_renderable
            from bindlab.data.triplets import load_triplets

            check_image_supervision(encoder)
            check_renderable(r for r in load_triplets(str(config["data"])) if r["split"] == "train")
    return {"attention_loss": weight, "attention_layers": layers, "supervision": supervision}


# ----------------------------------------------------------------------------------------------------------------
# Callbacks and control
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class FinetuneState:
    """What callbacks see. Read-only for them."""

    config: FinetuneConfig
    out_dir: Path
    phase: str = "loading"  # loading | baseline | training | lines | final | done
    step: int = 0
    total_steps: int = 0
    epoch: int = 0
    loss: float = float("nan")
    triplets_seen: int = 0
    train_seconds: float = 0.0  # time inside training steps (no evaluation)
    started: float = field(default_factory=time.time)
    history: list[dict[str, Any]] = field(default_factory=list)  # eval events


class FinetuneCallback:
    """No-op event hooks (composer / minGPT style); subclass and override what you need.

    Events of one run, in order: ``on_phase`` (loading, baseline), ``on_train_start``, then per step
    ``on_step_end``, ``on_eval`` (on evaluation steps), ``on_step_complete`` (the step and its evaluation are done:
    where checkpoints are taken), ``on_checkpoint`` (one was written); ``should_stop`` is asked before every step
    and ``on_stop`` follows a yes; ``on_loop_end`` after the last step, then ``on_phase`` (lines, final) and
    ``on_train_end``. Callbacks read the state; they never change it.
    """

    def on_phase(self, state: FinetuneState) -> None: ...
    def on_train_start(self, state: FinetuneState) -> None: ...
    def on_step_end(self, state: FinetuneState) -> None: ...
    def on_eval(self, state: FinetuneState, metrics: dict[str, Any]) -> None: ...
    def on_step_complete(self, state: FinetuneState) -> None: ...
    def on_checkpoint(self, state: FinetuneState, path: Path) -> None: ...
    def on_stop(self, state: FinetuneState) -> None: ...
    def on_loop_end(self, state: FinetuneState) -> None: ...
    def on_train_end(self, state: FinetuneState, result: dict[str, Any]) -> None: ...

    def should_stop(self, state: FinetuneState) -> bool:
        """True ends training before the next step (after ``on_stop``, e.g. a checkpoint)."""
        return False


class Control:
    """Set ``stop`` (e.g. from a SIGTERM handler) to end training at the next step boundary, with a checkpoint."""

    stop: bool = False


class StopOnControl(FinetuneCallback):
    """Cancellation: asks to stop once :attr:`Control.stop` is set."""

    def __init__(self, control: Control) -> None:
        self.control = control

    def should_stop(self, state: FinetuneState) -> bool:
        return bool(self.control.stop)


class Checkpointer(FinetuneCallback):
    """Writes ``checkpoints/last.pt`` every ``every`` steps, when stopped early, and after the last step.

    Args:
        path: the checkpoint file (written atomically).
        every: steps between periodic checkpoints.
        snapshot: returns what to save (step, adapter, optimizer, history, ...), read from the run.
        written: called with the path after each write (tells the other callbacks).
    """

    def __init__(
        self, path: Path, every: int, snapshot: Callable[[], dict[str, Any]], written: Callable[[Path], None]
    ) -> None:
        self.path, self.every, self.snapshot, self.written = path, every, snapshot, written

    def save(self) -> None:
        import torch

        tmp = self.path.with_suffix(".tmp")
        torch.save(self.snapshot(), tmp)
        tmp.replace(self.path)
        self.written(self.path)

    def on_step_complete(self, state: FinetuneState) -> None:
        if state.step % self.every == 0 and state.step < state.total_steps:
            self.save()

    def on_stop(self, state: FinetuneState) -> None:
        self.save()

    def on_loop_end(self, state: FinetuneState) -> None:
        self.save()


class DebugHooks(FinetuneCallback):
    """Test-only hooks from ``FinetuneConfig.debug``: ``sleep_per_step`` seconds after each step (a slow job to
    cancel) and ``fail_at_step`` (an injected failure)."""

    def __init__(self, debug: dict[str, Any]) -> None:
        self.fail_at = int(debug.get("fail_at_step", 0) or 0)
        self.sleep = float(debug.get("sleep_per_step", 0) or 0)

    def on_step_end(self, state: FinetuneState) -> None:
        if self.sleep:
            time.sleep(self.sleep)
        if self.fail_at and state.step >= self.fail_at:
            raise RuntimeError(f"injected failure at step {state.step} (debug.fail_at_step)")


class Stopped(Exception):
    """Training ended early because :class:`Control` asked it to (the last checkpoint is on disk)."""


# ----------------------------------------------------------------------------------------------------------------
# The loop
# ----------------------------------------------------------------------------------------------------------------


def load_splits(data: str, eval_rows: int, seed: int) -> dict[str, list[dict]]:
    """Triplet rows by split; evaluation splits capped at ``eval_rows`` (a fixed, seeded sample).

    Besides train/val/test/heldout, the extra test splits a triplets file may hold (``test_template_<name>`` for a
    held-out sentence template, ``test_unseen_words``) are kept and evaluated like the others.
    """
    from bindlab.data.triplets import SPLITS, load_triplets

    rows = load_triplets(data)
    extra = sorted({r["split"] for r in rows} - set(SPLITS))  # test_template_<name>, test_unseen_words
    splits = {s: [r for r in rows if r["split"] == s] for s in (*SPLITS, *extra)}
    if not splits["train"]:
        raise ValueError(
            f"{data}: no rows in the train split; generate triplets with "
            "'python -m bindlab generate triplets --out DIR --n 4000'"
        )
    if eval_rows:
        rng = random.Random(f"eval-{seed}")
        for s in [s for s in splits if s != "train"]:
            if len(splits[s]) > eval_rows:
                splits[s] = rng.sample(splits[s], eval_rows)
    return splits


def batch_order(n_rows: int, epoch: int, seed: int) -> list[int]:
    """The row order of an epoch: a permutation fixed by (seed, epoch), so a resumed run sees the same batches."""
    order = list(range(n_rows))
    random.Random(f"bindlab-ft-{seed}-{epoch}").shuffle(order)
    return order


def plan_steps(n_train: int, cfg: FinetuneConfig) -> int:
    """Total optimizer steps: ``epochs * ceil(n_train / batch_size)``, capped by ``max_steps``."""
    total = cfg.epochs * math.ceil(n_train / cfg.batch_size)
    return min(total, cfg.max_steps) if cfg.max_steps else total


class _Dist:
    """Data parallelism under ``torchrun``/``accelerate launch`` (:mod:`bindlab.encoders.distributed`): rank,
    world size, the rank's share of a batch, gradient averaging; trivial in one process.

    Each rank takes every ``world``-th row of the global batch (``batch_size`` stays the global batch, so a run
    on N processes takes the same steps as one process) and its loss is weighted by its share, so the averaged
    gradient is the gradient of the global batch's mean loss, also when the rows do not split evenly.
    """

    def __init__(self) -> None:
        self.world_info = distributed.init()
        self.world, self.rank = self.world_info.size, self.world_info.rank

    @property
    def main(self) -> bool:
        return self.rank == 0

    def device(self, asked: str) -> str:
        """One process per GPU: ``cuda``/``cuda:N`` means this rank's own GPU (selected by ``init``)."""
        return "cuda" if self.world > 1 and str(asked).startswith("cuda") else asked

    def shard(self, items: list[Any]) -> list[Any]:
        return items[self.rank :: self.world]

    def weight(self, n_shard: int, n_batch: int) -> float:
        """Factor on this rank's mean loss so that averaging gradients gives the global batch's mean gradient."""
        return n_shard * self.world / n_batch if n_batch else 0.0

    def average_grads(self, params: list[Any]) -> None:
        distributed.average_grads(params)

    def mean(self, value: float) -> float:
        return distributed.mean(value)

    def any(self, flag: bool) -> bool:
        return distributed.any_rank(flag)

    def barrier(self) -> None:
        distributed.barrier()


def train(
    cfg: FinetuneConfig,
    out_dir: str | Path,
    callbacks: Sequence[FinetuneCallback] = (),
    control: Control | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Finetune ``cfg.model`` on ``cfg.data``; write adapters, LiNeS choice and results into ``out_dir``.

    Args:
        cfg: the run's settings.
        out_dir: the job folder (``checkpoints/`` and outputs go here).
        callbacks: event observers (progress, logging).
        control: cancellation flag, checked after every step.
        resume: continue from ``checkpoints/last.pt`` when it exists.

    Returns:
        The result dict also written to ``result.json``.

    Raises:
        Stopped: when ``control.stop`` was set (a checkpoint was saved first).
    """
    import torch

    from bindlab.encoders.adapter import LoraSettings, inject_lora, lora_state
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.text_tower import text_tower

    out = Path(out_dir)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    dist = _Dist()
    state = FinetuneState(cfg, out)
    hooks: list[FinetuneCallback] = [DebugHooks(cfg.debug), StopOnControl(control or Control())]
    cbs = list(callbacks) if dist.main else []

    def emit(event: str, *args: Any) -> None:
        for cb in (*hooks, *cbs):
            getattr(cb, event)(state, *args)

    def phase(name: str) -> None:
        state.phase = name
        emit("on_phase")

    phase("loading")
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(int(cfg.threads))
    splits = load_splits(cfg.data, cfg.eval_rows, cfg.seed)
    encoder = load_encoder(cfg.model, device=dist.device(cfg.device))
    tower = text_tower(encoder)
    params = inject_lora(tower, LoraSettings(cfg.lora_rank, cfg.lora_alpha, cfg.lora_dropout))  # B = 0: the base
    tower.module.eval()  # no dropout anywhere but LoRA's own (0 by default)
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    roles, aux = objective_terms(cfg, encoder)
    train_rows = splits["train"]
    state.total_steps = plan_steps(len(train_rows), cfg)
    eval_every = cfg.eval_every if cfg.eval_every else max(1, state.total_steps // 10)
    ckpt = out / "checkpoints" / "last.pt"
    curve_rows = splits["val"][:200]

    def embed(texts: list[str]) -> np.ndarray:
        # In-process and uncached on purpose: the weights change under the same base fingerprint.
        return encoder.embed_texts(texts)

    baseline: dict[str, Any] = _resume(ckpt, tower, optimizer, state) if resume and ckpt.exists() else {}
    ref = None
    if cfg.evaluate and dist.main:
        ref_path = out / "checkpoints" / "reference.npz"
        if not baseline:
            phase("baseline")
            baseline, ref = _baseline(encoder, embed, splits, curve_rows, ref_path)
            state.history.append({"step": 0, "val_acc": baseline["curve_val"]})
            emit("on_eval", {"step": 0, "val_acc": baseline["curve_val"]})
        else:
            ref = dict(np.load(ref_path))
    dist.barrier()
    if dist.main:

        def snapshot() -> dict[str, Any]:
            return {
                "step": state.step,
                "triplets_seen": state.triplets_seen,
                "lora": lora_state(tower),
                "optimizer": optimizer.state_dict(),
                "history": state.history,
                "baseline": baseline,
                "train_seconds": state.train_seconds,
                "config": cfg.to_dict(),
            }

        every = cfg.checkpoint_every or (eval_every if eval_every > 0 else state.total_steps)
        hooks.append(Checkpointer(ckpt, every, snapshot, lambda path: emit("on_checkpoint", path)))

    phase("training")
    emit("on_train_start")
    steps_per_epoch = math.ceil(len(train_rows) / cfg.batch_size)
    while state.step < state.total_steps:
        if dist.any(any(cb.should_stop(state) for cb in (*hooks, *cbs))):  # every rank stops at the same step
            emit("on_stop")
            raise Stopped(f"stopped at step {state.step}")
        state.epoch, pos = divmod(state.step, steps_per_epoch)
        order = batch_order(len(train_rows), state.epoch, cfg.seed)
        batch = [train_rows[i] for i in order[pos * cfg.batch_size : (pos + 1) * cfg.batch_size]]
        t0 = time.perf_counter()
        state.loss = train_step(tower, optimizer, params, batch, cfg.margin, dist, roles=roles, aux=aux)
        state.train_seconds += time.perf_counter() - t0
        state.step += 1
        state.triplets_seen += len(batch)
        emit("on_step_end")
        evaluating = eval_every > 0 and state.step % eval_every == 0
        if cfg.evaluate and evaluating and state.step < state.total_steps and dist.main:
            m = {"step": state.step, "val_acc": _texts_accuracy(embed, curve_rows)}
            state.history.append(m)
            emit("on_eval", m)
        emit("on_step_complete")
        if evaluating:
            dist.barrier()
    emit("on_loop_end")
    if not dist.main:
        return {}
    return _finish(cfg, out, state, encoder, tower, splits, baseline, ref, emit, phase, objective_record(cfg, aux))


def _resume(ckpt: Path, tower: Any, optimizer: Any, state: FinetuneState) -> dict[str, Any]:
    """Load ``checkpoints/last.pt`` into the adapter, the optimizer and the state; return the saved baseline."""
    import torch

    from bindlab.encoders.adapter import load_lora_state

    saved = torch.load(ckpt, map_location="cpu", weights_only=False)
    load_lora_state(tower, saved["lora"])
    optimizer.load_state_dict(saved["optimizer"])
    state.step, state.triplets_seen = saved["step"], saved["triplets_seen"]
    state.history = saved["history"]
    state.train_seconds = saved.get("train_seconds", 0.0)
    return saved["baseline"]


def _baseline(
    encoder: Any, embed: Any, splits: dict[str, list[dict]], curve_rows: list[dict], ref_path: Path
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The base model's numbers (triplets, curve start, forgetting) and the forgetting reference (saved)."""
    baseline = {"triplets": evaluate_triplets(embed, splits), "curve_val": _texts_accuracy(embed, curve_rows)}
    ref = forgetting_reference(encoder, "image" in encoder.modalities)
    np.savez(ref_path, **ref)
    baseline["forgetting"] = forgetting_control(encoder, ref)
    return baseline, ref


def train_step(
    tower: Any,
    optimizer: Any,
    params: list[Any],
    batch: list[dict],
    margin: float,
    dist: Any = None,
    roles: Callable[[list[dict]], tuple[Any, Any, Any]] | None = None,
    aux: Callable[[list[dict]], Any] | None = None,
) -> float:
    """One optimizer step on a (global) batch of triplet rows; returns the batch's mean loss. (b, d) per role.

    With ``dist`` (data parallel) this rank embeds only its share of ``batch``; gradients and the loss are
    averaged over ranks, so every rank takes the step one process would take on the whole batch.

    Args:
        roles: rows -> (anchor, positive, negative) embeddings ``(b, d)`` each, with gradients; None = the rows'
            three texts through ``tower.forward`` (text supervision). :class:`ImageRoles` renders scenes instead.
        aux: rows -> an extra scalar loss added to the triplet loss (:class:`~bindlab.train.attention_loss.
            AttentionLoss`, already weighted); None = the triplet loss alone (nothing else is computed).
    """
    rows = dist.shard(batch) if dist is not None else batch
    optimizer.zero_grad(set_to_none=True)
    if rows:
        b = len(rows)
        if roles is None:
            texts = [r["query"] for r in rows] + [r["positive"] for r in rows] + [r["negative"] for r in rows]
            emb = tower.forward(texts)  # (3b, d), one forward for all three roles
            q, p, n = emb[:b], emb[b : 2 * b], emb[2 * b :]
        else:
            q, p, n = roles(rows)
        loss = compute_loss_from_embeddings(q, p, n, margin)
        if aux is not None:
            loss = loss + aux(rows)
        weight = dist.weight(b, len(batch)) if dist is not None else 1.0
        (loss * weight).backward()
        value = float(loss.detach()) * weight
    else:  # fewer rows than ranks: this rank adds nothing, but still takes part in the averaging
        for p in params:
            p.grad = p.detach().new_zeros(p.shape)
        value = 0.0
    if dist is not None:
        dist.average_grads(params)
        value = dist.mean(value)
    optimizer.step()
    return value


def _finish(
    cfg: FinetuneConfig,
    out: Path,
    state: FinetuneState,
    encoder: Any,
    tower: Any,
    splits: dict[str, list[dict]],
    baseline: dict[str, Any],
    ref: dict[str, np.ndarray] | None,
    emit: Any,
    phase: Any,
    objective: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """After training: save the unscaled adapter, choose and apply LiNeS, evaluate, write result.json."""
    from bindlab.encoders.adapter import load_lora_state, lora_state, save_adapter
    from bindlab.provenance import provenance

    unscaled = lora_state(tower)
    save_adapter(out / "adapter_unscaled.safetensors", unscaled)

    def embed(texts: list[str]) -> np.ndarray:
        return encoder.embed_texts(texts)

    grid: list[dict[str, Any]] = []
    if cfg.evaluate and str(cfg.lines_a) == "auto" and splits["val"]:
        phase("lines")
        for a in LINES_GRID:
            load_lora_state(tower, scale_lora_state(unscaled, tower.n_blocks, a))
            grid.append(
                {
                    "a": a,
                    "val": _texts_accuracy(embed, splits["val"]),
                    "drift": forgetting_control(encoder, ref)["drift"],
                }
            )
        a = choose_lines_a(grid, baseline["triplets"]["val"], cfg.forget_weight)
    else:
        a = DEFAULT_LINES_A if str(cfg.lines_a) == "auto" else float(cfg.lines_a)
    scaled = scale_lora_state(unscaled, tower.n_blocks, a)
    save_adapter(out / "adapter_lines.safetensors", scaled)
    lines = {
        "a": a,
        "n_blocks": tower.n_blocks,
        "factors": [round(float(f), 6) for f in lines_factors(tower.n_blocks, a)],
        "chosen_on": "validation" if grid else ("given" if str(cfg.lines_a) != "auto" else "default"),
        "grid": grid,
        "forget_weight": cfg.forget_weight,
        "label": model_label(a),
    }
    (out / "lines.json").write_text(json.dumps(lines, indent=2))

    result: dict[str, Any] = {
        "steps": state.step,
        "triplets_seen": state.triplets_seen,
        "train_seconds": round(state.train_seconds, 3),
        "triplets_per_s": round(state.triplets_seen / max(state.train_seconds, 1e-9), 2),
        "lines": lines,
        "family": tower.family,
        "objective": objective or {},
    }
    if cfg.evaluate:
        phase("final")
        after: dict[str, Any] = {"base": baseline}
        for name, st in (("unscaled", unscaled), ("lines", scaled)):
            load_lora_state(tower, st)
            after[name] = {"triplets": evaluate_triplets(embed, splits), "forgetting": forgetting_control(encoder, ref)}
        result["eval"] = after
        result["eval_rows"] = {s: len(r) for s, r in splits.items()}
    load_lora_state(tower, scaled)
    result["provenance"] = provenance(
        Path(cfg.data) / "triplets.jsonl" if Path(cfg.data).is_dir() else cfg.data,
        encoder,
        {**cfg.to_dict(), "kind": "finetune"},
        cfg.seed,
    )
    (out / "result.json").write_text(json.dumps(result, indent=2))
    state.phase = "done"
    emit("on_train_end", result)
    return result


def default_triplets(n: int = 4000, seed: int = 0) -> Path:
    """A generated triplets folder under ``$BINDLAB_HOME/data`` (made on first use, a few seconds)."""
    from bindlab.config import home
    from bindlab.data.triplets import generate_triplets, write_triplets

    out = home() / "data" / f"triplets-{n}-s{seed}"
    if not (out / "triplets.jsonl").is_file():
        rows, stats = generate_triplets(n, seed=seed)
        write_triplets(out, rows, stats)
    return out
