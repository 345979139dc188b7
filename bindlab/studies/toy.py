"""The toy-model feature: train a toy vision–language model, evaluate one, write its model card.

:class:`ToyTrainRequest` and :class:`ToyEvalRequest` validate their inputs before any work starts;
:func:`run_toy_train` and :func:`run_toy_eval` are what ``train toy`` and ``eval toy`` call, and return a
:class:`~bindlab.studies.result.Result`. The training loop is :mod:`bindlab.train.toy.train`, the evaluations
:mod:`bindlab.train.toy.eval`, the card :mod:`bindlab.train.toy.card`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bindlab.studies.result import Result
from bindlab.studies.validate import encoder_id
from bindlab.train.phrase_metric import RANK_SCALE

__all__ = ["ToyEvalRequest", "ToyTrainRequest", "run_toy_eval", "run_toy_train", "summary_lines"]


@dataclass(frozen=True)
class ToyTrainRequest:
    """One training run into ``out`` (resumed when ``out`` holds a checkpoint of the same run)."""

    arch: str  # "clip", "shared" or "lit"
    out: str  # output folder; the final model loads as toy:/abs/out
    steps: int = 6000
    batch_size: int = 128
    lr: float = 1.5e-3
    seed: int = 0
    pool_size: int = 10000
    hard_share: float = 0.5
    checkpoint_every: int = 100
    threads: int = 1
    model: dict[str, Any] = field(default_factory=dict)  # ToyConfig overrides (width, layers, ...); 0/None = default
    progress: bool = True  # show a progress bar
    holdout_fraction: float = 0.0  # shape x attribute pairs kept out of every training scene
    twin_share: float = 0.0  # binding twins (hard negatives with images) per batch, as a share of batch_size
    init_from: str = ""  # continue from this toy model folder (e.g. bindlab/assets/toy-clip) instead of a fresh init
    pair_share: float = 0.0  # CompoSET-style pair twins per batch, as a share of batch_size (train.toy_pairs)
    pair_scenes: int = 3000  # pair twins rendered for the run
    text: str = ""  # lit: the frozen text model (default minilm)
    captions_per_scene: int = 4  # lit: cached captions per pool scene
    lit_target: str = "captions"  # lit: "captions", "discriminant" or "phrases" (train.toy_lit)
    target_twin_weight: float = 0.5  # lit discriminant: weight of the binding twin's caption mean
    target_shrink: float = 0.03  # lit discriminant: covariance shrinkage
    target_pair_weight: float = 0.0  # lit discriminant: weight of the scene-twin difference term
    target_bag_weight: float = 0.5  # lit phrases: weight of the scene's bag of pairings
    target_contrastive: float = 0.0  # lit discriminant/phrases: weight of InfoNCE against the batch's targets
    target_caption_weight: float = 0.0  # lit phrases: share of the scene's caption mean in its target
    target_rank_steps: int = 0  # lit phrases: steps of the ranked phrase metric (0 = the whitener)
    image_rank_weight: float = 0.0  # lit phrases with twins: weight of the twin ranking loss on the images
    rank_scenes: int = 0  # lit phrases: the ranked metric's scenes (the pool's first N; 0 = all)
    twin_layout: str = "same"  # binding twins' objects in their scene's slots, or "shuffled"
    image_rank_scale: float = RANK_SCALE  # lit phrases: the image ranking margins' scale in its logistic loss
    image_margin_weight: float = 0.0  # lit phrases with twins: the images' twin margins regressed onto the targets'
    image_bias_weight: float = 0.0  # lit phrases with twins: the twin difference's caption component, as the targets'
    slot_count_weight: float = 0.0  # lit slot head: its counts regressed onto the objects each scene shows
    max_objects: int = 4  # pool scenes of 1..max_objects objects
    render_size: int = 0  # draw the pool at this side and shrink it to the model's (0: the model's side)
    render_share: float = 1.0  # share of the pool drawn at render_size, the rest at the model's side

    def __post_init__(self) -> None:
        if not str(self.out or "").strip():
            raise ValueError("train toy needs an output folder (--out DIR)")
        self.config()  # TrainConfig checks arch, steps, batch size, ...

    def config(self) -> Any:
        """The :class:`bindlab.train.toy.train.TrainConfig` of this request (raises ValueError when invalid)."""
        from bindlab.train.toy.train import TrainConfig

        return TrainConfig(
            arch=self.arch,
            steps=self.steps,
            batch_size=self.batch_size,
            seed=self.seed,
            pool_size=self.pool_size,
            hard_share=self.hard_share,
            checkpoint_every=self.checkpoint_every,
            threads=self.threads,
            lr=self.lr,
            model={k: v for k, v in self.model.items() if v},
            warmup=min(60, max(1, self.steps // 10)),
            holdout_fraction=self.holdout_fraction,
            twin_share=self.twin_share,
            init_from=self.init_from,
            pair_share=self.pair_share,
            pair_scenes=self.pair_scenes,
            text=self.text,
            captions_per_scene=self.captions_per_scene,
            lit_target=self.lit_target,
            target_twin_weight=self.target_twin_weight,
            target_shrink=self.target_shrink,
            target_pair_weight=self.target_pair_weight,
            target_bag_weight=self.target_bag_weight,
            target_contrastive=self.target_contrastive,
            target_caption_weight=self.target_caption_weight,
            target_rank_steps=self.target_rank_steps,
            image_rank_weight=self.image_rank_weight,
            rank_scenes=self.rank_scenes,
            twin_layout=self.twin_layout,
            image_rank_scale=self.image_rank_scale,
            image_margin_weight=self.image_margin_weight,
            image_bias_weight=self.image_bias_weight,
            slot_count_weight=self.slot_count_weight,
            max_objects=self.max_objects,
            render_size=self.render_size,
            render_share=self.render_share,
        )


def run_toy_train(request: ToyTrainRequest) -> Result:
    """Train (or resume) the model; ``summary`` is the training record (``finished`` False when stopped early)."""
    from bindlab.train.toy.train import TqdmProgress, train_toy

    cfg = request.config()
    out = Path(request.out)
    record = train_toy(cfg, out, [TqdmProgress(disable=not request.progress)])
    notes = (
        []
        if record["finished"]
        else [
            f"stopped at step {record['steps']}/{cfg.steps}; run the same command again to resume from {out}/checkpoint"
        ]
    )
    return Result(
        "toy-train",
        record,
        provenance={"settings": asdict(cfg), "seed": cfg.seed},
        primary_metric="final_loss",
        notes=notes,
    )


@dataclass(frozen=True)
class ToyEvalRequest:
    """Single-object retrieval and image MCQs on rendered scenes, optionally written up as the model's card."""

    model: str  # an encoder with text and images, e.g. toy:clip
    sample: int = 0  # held-out single-object renders (0 = every shape x attribute combination)
    per_size: int = 40  # MCQs per N = 2..10 (0 = no MCQs)
    seed: int = 0
    card: bool = False  # also write README.md (the model card) into the toy model's folder
    card_notes: tuple[str, ...] = ()  # lines for the card's training section

    def __post_init__(self) -> None:
        encoder_id(self.model)
        for name in ("sample", "per_size", "seed"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


def run_toy_eval(request: ToyEvalRequest) -> Result:
    """Evaluate ``request.model``; ``summary`` is the evaluation (``single_object``, ``mcq``), ``notes`` its summary
    lines (and the card written, if asked).

    Raises:
        ValueError: ``card`` asked for a model that is not a trained toy folder (checked before evaluating).
    """
    from bindlab.encoders.base import load_encoder
    from bindlab.provenance import provenance
    from bindlab.train.toy.eval import evaluate_toy

    encoder = load_encoder(request.model)
    folder = getattr(encoder, "folder", None)
    record = _training(folder)
    if request.card and "train_config" not in record:
        raise ValueError(
            f"--card needs a toy model folder trained by 'train toy' (its training.json); {request.model} has none"
        )
    t = time.perf_counter()
    heldout = frozenset(tuple(c) for c in record.get("heldout_combinations") or [])
    exposed = frozenset()
    if heldout and "train_config" in record:  # held-out pairs its training showed through a colour slot
        from bindlab.train.toy.audit import exposed_pairs

        exposed = exposed_pairs(record["train_config"])
    result = evaluate_toy(
        encoder,
        sample=request.sample,
        per_size=request.per_size,
        seed=request.seed,
        heldout=heldout,
        exposed=exposed,
        text_reference=getattr(encoder, "text_encoder", None),
    )
    settings = {"sample": request.sample, "per_size": request.per_size, "seconds": round(time.perf_counter() - t, 1)}
    notes = summary_lines(result)
    if request.card:
        notes.append(f"wrote {_write_card(Path(folder), request, result)}")
    return Result("toy", result, provenance=provenance(None, encoder, settings, request.seed), notes=notes)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Human summary of an evaluation (:func:`bindlab.train.toy.eval.summary_lines`)."""
    from bindlab.train.toy.eval import summary_lines as lines

    return lines(result)


def _training(folder: Any) -> dict[str, Any]:
    """The ``training.json`` record of a toy model folder (:func:`bindlab.train.toy.train.read_training`)."""
    from bindlab.train.toy.train import read_training

    return read_training(folder)


def _write_card(folder: Path, request: ToyEvalRequest, result: dict[str, Any]) -> Path:
    """Write the card; its reproduce command is the whole sequence for a model trained in stages (``--init-from``
    with the earlier stages recorded in ``training.json``): ``DIR1``, ``DIR2``, ... each from the previous one."""
    from bindlab.train.toy.card import write_card

    record = _training(folder)
    stages = [s["train_config"] for s in record.get("earlier_stages", [])] + [record["train_config"]]
    if len(stages) == 1:
        command = train_command(stages[0])
    else:
        command = " && ".join(
            train_command(t, out=f"DIR{i + 1}", init=f"DIR{i}" if i else None) for i, t in enumerate(stages)
        )
    return write_card(folder, request.model, result, command, list(request.card_notes))


def train_command(t: dict[str, Any], out: str = "DIR", init: str | None = None) -> str:
    """The ``train toy`` command line of one recorded ``train_config`` ``t`` (model size overrides included), writing
    to ``out``; ``init`` replaces its ``--init-from`` folder (a stage's predecessor in a sequence)."""
    from bindlab.train.toy.card import shown_path

    command = (
        f"python -m bindlab train toy --arch {t['arch']} --out {out} --steps {t['steps']} --seed {t['seed']}"
        f" --batch-size {t['batch_size']} --lr {t['lr']} --pool-size {t['pool_size']}"
    )
    if t.get("holdout_fraction"):
        command += f" --holdout-combos {t['holdout_fraction']}"
    if t.get("twin_share"):
        command += f" --twin-share {t['twin_share']}"
        if t.get("twin_layout", "same") != "same":
            command += f" --twin-layout {t['twin_layout']}"
    if t.get("pair_share"):
        command += f" --pair-twins {t['pair_share']} --pair-scenes {t['pair_scenes']}"
    if int(t.get("max_objects") or 4) != 4:
        command += f" --max-objects {t['max_objects']}"
    if t.get("render_size"):
        command += f" --render-size {t['render_size']}"
        if float(t.get("render_share", 1.0)) < 1:
            command += f" --render-share {t['render_share']}"
    if t.get("arch") == "lit":
        command = command.replace("--arch lit", f"--arch lit --text {t.get('text') or 'minilm'}")
        if int(t.get("captions_per_scene") or 4) != 4:
            command += f" --captions-per-scene {t['captions_per_scene']}"
        if t.get("lit_target") == "phrases":
            command += (
                f" --lit-target phrases --target-bag-weight {t['target_bag_weight']}"
                f" --target-shrink {t['target_shrink']}"
            )
        elif t.get("lit_target", "captions") != "captions":
            command += (
                f" --lit-target {t['lit_target']} --target-twin-weight {t['target_twin_weight']}"
                f" --target-shrink {t['target_shrink']}"
            )
        if t.get("target_pair_weight"):
            command += f" --target-pair-weight {t['target_pair_weight']}"
        if t.get("target_contrastive"):
            command += f" --target-contrastive {t['target_contrastive']}"
        if t.get("target_caption_weight"):
            command += f" --target-caption-weight {t['target_caption_weight']}"
        if t.get("target_rank_steps"):
            command += f" --target-rank-steps {t['target_rank_steps']}"
            if t.get("rank_scenes"):
                command += f" --rank-scenes {t['rank_scenes']}"
        if t.get("image_rank_weight"):
            command += f" --image-rank-weight {t['image_rank_weight']}"
            if float(t.get("image_rank_scale", RANK_SCALE)) != RANK_SCALE:
                command += f" --image-rank-scale {t['image_rank_scale']}"
        if t.get("image_margin_weight"):
            command += f" --image-margin-weight {t['image_margin_weight']}"
        if t.get("image_bias_weight"):
            command += f" --image-bias-weight {t['image_bias_weight']}"
        if t.get("slot_count_weight"):
            command += f" --slot-count-weight {t['slot_count_weight']}"
    sizes = t.get("model") or {}
    for key in ("width", "layers", "heads", "image_size", "patch_size", "stem", "head_hidden", "head_slots"):
        if sizes.get(key):
            command += f" --{key.replace('_', '-')} {sizes[key]}"
    if init or t.get("init_from"):
        command += f" --init-from {init or shown_path(t['init_from'])}"
    return command
