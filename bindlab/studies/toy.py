"""The toy-model feature: train a toy vision–language model, evaluate one, write its model card.

:class:`ToyTrainRequest` and :class:`ToyEvalRequest` validate their inputs before any work starts;
:func:`run_toy_train` and :func:`run_toy_eval` are what ``train toy`` and ``eval toy`` call, and return a
:class:`~bindlab.result.Result`. The training loop is :mod:`bindlab.train.toy.train`, the evaluations
:mod:`bindlab.train.toy.eval`, the card :mod:`bindlab.train.toy.card`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from bindlab.result import Result
from bindlab.studies.validate import check_run_options, run_option
from bindlab.train.toy.config import ModelSize, TrainConfig

__all__ = [
    "ModelSize",
    "ToyEvalRequest",
    "ToyTrainRequest",
    "TrainConfig",
    "run_toy_eval",
    "run_toy_train",
    "summary_lines",
    "train_command",
]


@dataclass
class ToyTrainRequest(TrainConfig):
    """One training run into ``out`` (resumed when ``out`` holds a checkpoint of the same run): the training
    settings (:class:`~bindlab.train.toy.config.TrainConfig`, every one a keyword here, ``arch`` required) and where
    and how the run goes. The warm-up is a tenth of the steps, at most 60; ``model`` keeps the sizes that are set
    (:meth:`~bindlab.train.toy.config.ModelSize.overrides`)."""

    arch: str = field(kw_only=True, metadata=TrainConfig.__dataclass_fields__["arch"].metadata)
    out: str = field(
        default="",
        kw_only=True,
        metadata={"help": "output folder (checkpoints; the final model loads as toy:/path)", "required": True},
    )
    progress: bool = field(default=True, kw_only=True)  # show a progress bar

    def __post_init__(self) -> None:
        if not str(self.out or "").strip():
            raise ValueError("train toy needs an output folder (--out DIR)")
        self.model = {k: v for k, v in self.model.items() if v}
        self.warmup = min(60, max(1, self.steps // 10))
        super().__post_init__()  # checks arch, steps, batch size, ...

    def config(self) -> TrainConfig:
        """The :class:`~bindlab.train.toy.config.TrainConfig` of this request."""
        return TrainConfig(**{f.name: getattr(self, f.name) for f in fields(TrainConfig)})


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

    model: str = run_option("model", required=True)  # an encoder with text and images, e.g. toy:clip
    sample: int = 0  # held-out single-object renders (0 = every shape x attribute combination)
    per_size: int = 40  # MCQs per N = 2..10 (0 = no MCQs)
    seed: int = run_option("seed")
    card: bool = False  # also write README.md (the model card) into the toy model's folder
    card_notes: tuple[str, ...] = ()  # lines for the card's training section

    def __post_init__(self) -> None:
        from bindlab.studies.validate import encoder_id

        check_run_options(self)  # model, seed (RunOptions)
        encoder_id(self.model)
        for name in ("sample", "per_size"):
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
    rows = result["single_object"].pop("items")  # per render: what --per-item writes, not the summary
    settings = {"sample": request.sample, "per_size": request.per_size, "seconds": round(time.perf_counter() - t, 1)}
    notes = summary_lines(result)
    if request.card:
        notes.append(f"wrote {_write_card(Path(folder), request, result)}")
    return Result("toy", result, rows=rows, provenance=provenance(None, encoder, settings, request.seed), notes=notes)


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
    """The ``train toy`` command line of a recorded ``train_config`` (:func:`bindlab.train.toy.card.train_command`)."""
    from bindlab.train.toy.card import train_command as command

    return command(t, out, init)
