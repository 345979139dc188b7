"""Train a toy vision–language model (``toy:clip``, ``toy:shared`` or ``toy:lit-minilm``) on the renderer's world,
resumably.

``--arch lit`` (LiT with the text tower locked) trains only an image tower into the space of a frozen text model
(``text``, default ``minilm``) against cached caption embeddings (:mod:`bindlab.train.toy.lit`); its held-out
combinations are *clean* (no held-out pair through another attribute's colour slot either). With ``lit_target
"discriminant"`` the image is pulled towards a fixed point computed from its scene's and its binding twin's cached
captions instead (:func:`bindlab.train.toy.lit.discriminant_targets`; :func:`cosine_loss`, optionally plus
:func:`twin_difference_loss`); with ``"phrases"`` towards a point built from the scene's object phrases
(:func:`bindlab.train.toy.lit.phrase_targets`), with the same optional terms; both may add a contrastive term
between the batch's images and targets (``target_contrastive``).

The loop is short; everything around it (progress bar, checkpoints, cancellation) is a :class:`Callback` with
named, no-op-by-default events. Callbacks read the training state and never change it.

Output folder ``out``:

- ``checkpoint/`` — ``model.safetensors``, ``optim.pt`` (optimizer state, tensors only) and ``state.json`` (step,
  losses, wall time so far), rewritten atomically every ``checkpoint_every`` steps. A run started again on the same
  folder resumes from it (the data order is a function of the step, so it continues exactly where it stopped).
  Resuming with a larger ``steps`` extends the run: the cosine schedule is stretched from that step on (recorded
  in ``schedule``). ``touch out/STOP`` stops a run cleanly after a checkpoint.
- at the end: ``model.safetensors``, ``config.json``, ``vocab.json``, ``training.json`` — a folder that
  ``toy:/path/to/out`` loads (lit: no ``vocab.json``; its texts go through the frozen text model). A lit run also
  keeps ``captions.npz``, the caption cache (:func:`bindlab.train.toy.lit.caption_cache`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.encoders.toy.backend import save_model
from bindlab.encoders.toy.tokenizer import WordTokenizer
from bindlab.train.phrase_metric import RANK_SCALE
from bindlab.train.toy.config import ModelSize, TrainConfig  # noqa: F401 - the settings, where callers import them
from bindlab.train.toy.data import load_pool, make_batch
from bindlab.train.toy.pairs import load_pair_twins


@dataclass
class TrainState:
    """What callbacks see. ``losses`` holds (step, loss) every 10 steps."""

    step: int = 0
    total_steps: int = 0
    loss: float = float("nan")
    lr: float = 0.0
    temperature: float = 0.0
    seconds: float = 0.0  # training wall time so far (resumed runs add up)
    render_seconds: float = 0.0  # time spent rendering the pool (0 when it came from the cache)
    caption_seconds: float = 0.0  # lit: time spent embedding the captions once (0 when they came from the cache)
    losses: list[tuple[int, float]] = field(default_factory=list)
    resumed_from: int | None = None
    stop_requested: bool = False
    schedule: list[tuple[int, int]] = field(default_factory=list)  # (from step, total steps of the cosine schedule)


class Callback:
    """Named training events; every method is a no-op. Return True from ``should_stop`` to end early."""

    def on_train_start(self, state: TrainState) -> None: ...
    def on_step_end(self, state: TrainState) -> None: ...
    def on_checkpoint(self, state: TrainState, path: Path) -> None: ...
    def on_train_end(self, state: TrainState) -> None: ...
    def should_stop(self, state: TrainState) -> bool:
        return False


class TqdmProgress(Callback):
    """A tqdm progress bar with loss, temperature and learning rate."""

    def __init__(self, disable: bool = False) -> None:
        self.bar: Any = None
        self.disable = disable

    def on_train_start(self, state: TrainState) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
            total=state.total_steps, initial=state.step, desc="train toy", disable=self.disable, dynamic_ncols=True
        )

    def on_step_end(self, state: TrainState) -> None:
        self.bar.update(1)
        if state.step % 10 == 0:
            self.bar.set_postfix(loss=f"{state.loss:.3f}", T=f"{state.temperature:.3f}", lr=f"{state.lr:.1e}")

    def on_train_end(self, state: TrainState) -> None:
        self.bar.close()


class StopFile(Callback):
    """Stops (after a checkpoint) when the file ``path`` appears: ``touch OUT/STOP`` cancels a run cleanly."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def should_stop(self, state: TrainState) -> bool:
        return self.path.exists()


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up then cosine decay to zero; ``step`` is 0-based."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * min(t, 1.0)))


_NO_EFFECT = ("threads", "render_workers", "checkpoint_every")  # settings a resumed run may change


def _first_scenes(cache: Any, n: int) -> Any:
    """``cache`` (a :class:`bindlab.train.toy.lit.CaptionCache`) cut to its first ``n`` scenes (a scene's captions
    do not depend on the pool around it, so the phrase targets' metric is the same with a whole pool's cache)."""
    from bindlab.train.toy.lit import CaptionCache

    return CaptionCache(cache.texts, cache.embeddings, cache.index[:n], cache.seconds, cache.text_model)


def read_training(folder: str | Path | None) -> dict[str, Any]:
    """The ``training.json`` record of a toy model folder ({} when there is none, it is unreadable or not a JSON
    object)."""
    path = Path(folder) / "training.json" if folder is not None else None
    if path is None or not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def stage_record(record: dict[str, Any]) -> dict[str, Any]:
    """What a staged model keeps of one stage's training record: its settings, steps, time and final loss."""
    return {k: record.get(k) for k in ("train_config", "steps", "train_seconds", "final_loss")}


def earlier_stages(init_from: str | Path) -> list[dict[str, Any]]:
    """The training stages behind the ``--init-from`` folder ``init_from``, oldest first: its own ``earlier_stages``
    and then itself (:func:`stage_record` of its ``training.json``), so a model trained in stages records how to
    rebuild it from scratch. Empty when the folder has no training record (weights from elsewhere).
    """
    record = read_training(init_from)
    if "train_config" not in record:
        return []
    return [*record.get("earlier_stages", []), stage_record(record)]


def _save_checkpoint(out: Path, model: Any, opt: Any, state: TrainState, cfg: TrainConfig) -> Path:
    import torch
    from safetensors.torch import save_file

    tmp = out / f".checkpoint.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp / "model.safetensors"))
    torch.save(opt.state_dict(), tmp / "optim.pt")
    saved = {
        "step": state.step,
        "seconds": state.seconds,
        "losses": state.losses,
        "render_seconds": state.render_seconds,
        "schedule": state.schedule,
        "train_config": asdict(cfg),
        "caption_seconds": state.caption_seconds,
    }
    (tmp / "state.json").write_text(json.dumps(saved))
    final = out / "checkpoint"
    old = out / f".checkpoint.{os.getpid()}.old"
    if final.exists():
        final.rename(old)
    tmp.rename(final)  # the checkpoint is replaced whole: an interrupted save leaves the previous one
    shutil.rmtree(old, ignore_errors=True)
    return final


def _load_checkpoint(out: Path, model: Any, opt: Any, cfg: TrainConfig) -> TrainState | None:
    import torch
    from safetensors.torch import load_file

    ck = out / "checkpoint"
    if not (ck / "state.json").is_file():
        return None
    saved = json.loads((ck / "state.json").read_text())
    now = asdict(cfg)
    diff = {
        k: (v, now.get(k))
        for k, v in saved["train_config"].items()
        if k not in (*_NO_EFFECT, "steps") and now.get(k) != v
    }
    if cfg.steps < saved["step"]:
        diff["steps"] = (saved["step"], cfg.steps)
    if diff:
        raise ValueError(
            f"{out} holds a checkpoint of a different run (saved vs asked: {diff}); "
            "use a new --out folder or the same settings"
        )
    model.load_state_dict(load_file(str(ck / "model.safetensors")))
    opt.load_state_dict(torch.load(ck / "optim.pt", weights_only=True))
    schedule = [tuple(x) for x in saved.get("schedule", [(0, saved["train_config"]["steps"])])]
    if schedule[-1][1] != cfg.steps:  # a longer (or shorter) run: the cosine schedule is stretched from here on
        schedule.append((saved["step"], cfg.steps))
    return TrainState(
        step=saved["step"],
        seconds=saved["seconds"],
        losses=[tuple(x) for x in saved["losses"]],
        resumed_from=saved["step"],
        schedule=schedule,
        render_seconds=saved.get("render_seconds", 0.0),
        caption_seconds=saved.get("caption_seconds", 0.0),
    )


def _saved_caption_seconds(out: Path) -> float:
    """The embedding time recorded in a run's caption caches (a resumed run loads them instead of embedding)."""
    total = 0.0
    for name in ("captions.npz", "twin_captions.npz"):
        try:
            with np.load(out / name, allow_pickle=False) as z:
                total += float(z["seconds"])
        except (OSError, ValueError, KeyError):
            pass
    return total


@dataclass
class _LitData:
    """What a lit run trains against: the pool's cached captions (and its twins'), the targets built from them (the
    scene's and the twin's), the phrase table, the ranked metric, and the twin scenes."""

    captions: Any = None
    twin_captions: Any = None
    targets: Any = None
    table: Any = None
    ranking: Any = None
    twins: Any = None


def _lit_data(cfg: TrainConfig, mcfg: Any, model: Any, pool: Any, out: Path, state: TrainState) -> _LitData:
    """The captions a lit run embeds once (cached in ``out``) and the targets it pulls images towards; a slot head's
    phrase grid is set in ``model``, the embedding time in ``state``."""
    import torch

    from bindlab.train.toy.lit import WHITENER_SCENES, caption_cache, discriminant_targets

    discriminant = cfg.lit_target == "discriminant"
    phrases = cfg.lit_target == "phrases"
    ranked = phrases and bool(
        cfg.target_rank_steps or cfg.image_rank_weight or cfg.image_margin_weight or cfg.image_bias_weight
    )
    captions = twin_captions = targets = table = ranking = None
    blend = phrases and cfg.target_caption_weight > 0  # phrase targets with a share of the caption mean
    # the scenes whose captions are embedded: the whitener's, the ranked metric's (--rank-scenes), or all
    first = WHITENER_SCENES if phrases and not (blend or ranked) else (cfg.rank_scenes or None)
    captions = caption_cache(pool.scenes[:first], cfg.seed, cfg.text, out / "captions.npz", cfg.captions_per_scene)
    twins = pool.twin_scenes()
    if (cfg.twin_share > 0 and (blend or not phrases)) or discriminant or ranked:
        twin_captions = caption_cache(
            pool.scenes[:first],
            cfg.seed,
            cfg.text,
            out / "twin_captions.npz",
            cfg.captions_per_scene,
            twins=twins[:first],
        )
    if phrases:
        targets, table, ranking, metric = lit_phrase_targets(cfg, pool, captions, twin_captions)
        if mcfg.head_slots:  # the slot head's fixed phrase grid, in the targets' metric
            from bindlab.train.toy.lit import phrase_grid, phrase_table

            grid = phrase_grid(phrase_table(cfg.text), table, metric)
            model.image_head.phrases.copy_(torch.from_numpy(grid))
    if discriminant:
        targets = discriminant_targets(captions, twin_captions, cfg.target_shrink, cfg.target_twin_weight)
    fresh = captions.seconds + (twin_captions.seconds if twin_captions is not None else 0.0)
    if fresh:
        state.caption_seconds = fresh
    else:
        state.caption_seconds = state.caption_seconds or _saved_caption_seconds(out)
    return _LitData(captions, twin_captions, targets, table, ranking, twins)


def _step_loss(cfg: TrainConfig, model: Any, step: int, pool: Any, tokenizer: Any, pairs: Any, data: _LitData) -> Any:
    """The loss of training step ``step``: its batch (a lit batch against cached captions or targets, else scenes and
    their captions through the text tower), then the contrastive or target loss and the optional terms."""
    import torch

    if data.captions is not None:
        from bindlab.train.toy.lit import lit_batch

        phrases = cfg.lit_target == "phrases"
        batch = lit_batch(
            pool,
            None if phrases else data.captions,
            step,
            cfg.batch_size,
            cfg.seed,
            cfg.hard_share,
            None if phrases else data.twin_captions,
            cfg.twin_share,
        )
        pixels = batch.pixels
        if data.targets is not None:  # the scene's (or its twin's) discriminant or phrase point
            own = data.targets[0][batch.scenes]
            txt = torch.from_numpy(
                own if data.targets[1] is None else np.where(batch.twin[:, None], data.targets[1][batch.scenes], own)
            )
        else:
            txt = torch.from_numpy(batch.embeddings)  # frozen: cached embeddings, no gradient
    else:
        pixels, ids = make_batch(
            pool,
            tokenizer,
            step,
            cfg.batch_size,
            cfg.seed,
            cfg.hard_share,
            cfg.twin_share,
            pairs,
            cfg.pair_share,
        )
        txt = model.encode_text(torch.from_numpy(ids))
    if cfg.slot_count_weight:  # the slot head's counts, from the same pass as the embeddings
        img, counts = model.encode_image_counts(torch.from_numpy(pixels))
        shown = [data.twins[i] if t else pool.scenes[i] for i, t in zip(batch.scenes, batch.twin, strict=True)]
    else:
        img = model.encode_image(torch.from_numpy(pixels))
    if data.targets is not None:
        loss = cosine_loss(img, txt)
        if cfg.target_pair_weight and batch.twin.any():
            loss = loss + cfg.target_pair_weight * twin_difference_loss(img, txt, batch.scenes, batch.twin)
        if cfg.target_contrastive:
            loss = loss + cfg.target_contrastive * contrastive_loss(img, txt, model.logit_scale)
        if cfg.image_rank_weight and batch.twin.any():
            loss = loss + cfg.image_rank_weight * image_rank_loss(
                img, batch.scenes, batch.twin, data.captions, data.twin_captions, step, cfg.image_rank_scale
            )
        if cfg.image_margin_weight and batch.twin.any():
            loss = loss + cfg.image_margin_weight * image_margin_loss(
                img, txt, batch.scenes, batch.twin, data.captions, data.twin_captions, step
            )
        if cfg.image_bias_weight and batch.twin.any():
            loss = loss + cfg.image_bias_weight * image_bias_loss(
                img, txt, batch.scenes, batch.twin, data.captions, data.twin_captions, step
            )
    else:
        loss = contrastive_loss(img, txt, model.logit_scale)
    if cfg.slot_count_weight:
        loss = loss + cfg.slot_count_weight * slot_count_loss(counts, shown)
    return loss


def _training_record(
    cfg: TrainConfig, state: TrainState, model: Any, mcfg: Any, heldout: Any, earlier: list, data: _LitData
) -> dict[str, Any]:
    """The run's ``training.json`` record: steps, times, losses, its settings and model config, the held-out pairs,
    the earlier stages, and for a lit run what its captions and targets were."""
    n_params = sum(p.numel() for p in model.parameters())
    record = {
        "finished": state.step >= cfg.steps,
        "steps": state.step,
        "train_seconds": round(state.seconds, 1),
        "render_seconds": round(state.render_seconds, 1),
        "parameters": n_params,
        "final_loss": state.loss,
        "temperature": state.temperature,
        "losses": state.losses,
        "resumed_from": state.resumed_from,
        "schedule": state.schedule,
        "train_config": asdict(cfg),
        "model_config": mcfg.to_json(),
        "threads": cfg.threads,
        "heldout_combinations": sorted(map(list, heldout)),
    }
    if earlier:
        record["earlier_stages"] = earlier
    if data.captions is not None:
        captions, twin_captions, table, ranking = data.captions, data.twin_captions, data.table, data.ranking
        from bindlab.train.toy.lit import WHITENER_SCENES

        phrases, discriminant = cfg.lit_target == "phrases", cfg.lit_target == "discriminant"
        record["captions"] = {
            "text_model": cfg.text,
            "per_scene": cfg.captions_per_scene,
            "captions": captions.n_captions,
            "distinct": len(captions.texts),
            "embed_seconds": round(state.caption_seconds, 1),
            "cache": "captions.npz",
            "clean_holdout": True,
            "target": cfg.lit_target,
        }
        if cfg.target_contrastive or cfg.target_pair_weight:
            record["captions"].update(
                target_contrastive=cfg.target_contrastive, target_pair_weight=cfg.target_pair_weight
            )
        if cfg.image_rank_weight:
            record["captions"].update(image_rank_weight=cfg.image_rank_weight, image_rank_scale=cfg.image_rank_scale)
        if cfg.image_margin_weight:
            record["captions"]["image_margin_weight"] = cfg.image_margin_weight
        if cfg.image_bias_weight:
            record["captions"]["image_bias_weight"] = cfg.image_bias_weight
        if cfg.slot_count_weight:
            record["captions"]["slot_count_weight"] = cfg.slot_count_weight
        if phrases:
            record["captions"].update(
                target_shrink=cfg.target_shrink,
                target_bag_weight=cfg.target_bag_weight,
                whitener_scenes=min(WHITENER_SCENES, len(captions.index)),
                phrases=len(table.pairs),
                phrase_seconds=round(table.seconds, 1),
            )
            if cfg.target_caption_weight:
                record["captions"].update(target_caption_weight=cfg.target_caption_weight)
            if ranking is not None:
                record["captions"]["ranked_metric"] = ranking.record()
        if discriminant:
            record["captions"].update(
                target_shrink=cfg.target_shrink,
                target_twin_weight=cfg.target_twin_weight,
                target_pair_weight=cfg.target_pair_weight,
            )
        if twin_captions is not None:
            record["captions"].update(
                twin_captions=int((twin_captions.index >= 0).sum()),
                twin_distinct=len(twin_captions.texts),
                twin_cache="twin_captions.npz",
            )
    return record


def train_toy(
    cfg: TrainConfig, out: str | Path, callbacks: list[Callback] | None = None, pool_cache: str | Path | None = None
) -> dict[str, Any]:
    """Train (or resume) a toy model into ``out``.

    Args:
        cfg: the run's settings.
        out: output folder (checkpoints, then the final model folder).
        callbacks: progress/checkpoint/cancel hooks; a :class:`StopFile` on ``out/STOP`` is always added.
        pool_cache: where the rendered pool is cached (default ``$BINDLAB_HOME/toy-data``).

    Returns:
        The training record (also written to ``out/training.json``); ``finished`` is False when stopped early.
    """
    import torch

    from bindlab.encoders.toy.models import build_model

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg.threads)
    callbacks = [*(callbacks or []), StopFile(out / "STOP")]
    lit = cfg.arch == "lit"
    tokenizer = None if lit else WordTokenizer.build()
    mcfg = cfg.model_config(0 if tokenizer is None else len(tokenizer))
    if tokenizer is not None:
        tokenizer.max_len = mcfg.max_text_len
    torch.manual_seed(cfg.seed)
    model = build_model(mcfg)
    if cfg.init_from:
        from safetensors.torch import load_file

        try:
            model.load_state_dict(load_file(str(Path(cfg.init_from) / "model.safetensors")))
        except RuntimeError as e:
            raise ValueError(
                f"init_from {cfg.init_from}: its weights do not fit the {cfg.arch} architecture asked "
                f"for ({str(e).splitlines()[0]}); use the same --arch and model sizes"
            ) from None
    earlier = earlier_stages(cfg.init_from) if cfg.init_from else []
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "pos" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "pos" not in n)]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.98),
    )
    state = _load_checkpoint(out, model, opt, cfg) or TrainState(schedule=[(0, cfg.steps)])
    state.total_steps = cfg.steps
    t_render = time.perf_counter()
    heldout = cfg.heldout()
    discriminant = lit and cfg.lit_target == "discriminant"
    phrases = lit and cfg.lit_target == "phrases"
    # the whole pool's captions and its twins': the phrase metric learnt from them, or the images' twin margins
    ranked = phrases and bool(
        cfg.target_rank_steps or cfg.image_rank_weight or cfg.image_margin_weight or cfg.image_bias_weight
    )
    pool = load_pool(
        cfg.pool_size,
        mcfg.image_size,
        cfg.seed,
        pool_cache,
        cfg.render_workers,
        heldout=heldout,
        twins=cfg.twin_share > 0 or discriminant or ranked,
        clean=cfg.clean_holdout,
        twin_layout=cfg.twin_layout,
        max_objects=cfg.max_objects,
        render_size=cfg.render_size,
        render_share=cfg.render_share,
    )
    pairs = (
        load_pair_twins(cfg.pair_scenes, mcfg.image_size, cfg.seed, pool_cache, cfg.render_workers, heldout)
        if cfg.pair_share > 0
        else None
    )
    state.render_seconds += time.perf_counter() - t_render
    data = _lit_data(cfg, mcfg, model, pool, out, state) if lit else _LitData()
    for cb in callbacks:
        cb.on_train_start(state)
    model.train()
    t0, base = time.perf_counter(), state.seconds
    while state.step < cfg.steps:
        lr = lr_at(state.step, cfg)
        for g in opt.param_groups:
            g["lr"] = lr
        loss = _step_loss(cfg, model, state.step, pool, tokenizer, pairs, data)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        state.step += 1
        state.loss, state.lr = float(loss.detach()), lr
        state.temperature = float(1 / model.logit_scale.detach().clamp(max=math.log(100)).exp())
        state.seconds = base + time.perf_counter() - t0
        if state.step % 10 == 0 or state.step == 1:
            state.losses.append((state.step, round(state.loss, 4)))
        for cb in callbacks:
            cb.on_step_end(state)
        stop = any(cb.should_stop(state) for cb in callbacks)
        if state.step % cfg.checkpoint_every == 0 or state.step == cfg.steps or stop:
            path = _save_checkpoint(out, model, opt, state, cfg)
            for cb in callbacks:
                cb.on_checkpoint(state, path)
        if stop:
            state.stop_requested = True
            break
    for cb in callbacks:
        cb.on_train_end(state)
    record = _training_record(cfg, state, model, mcfg, heldout, earlier, data)
    if record["finished"]:
        model.eval()
        save_model(out, model, tokenizer, record)
    return record


def lit_phrase_targets(cfg: TrainConfig, pool: Any, captions: Any, twin_captions: Any) -> tuple[Any, Any, Any, Any]:
    """The phrase targets of a ``--lit-target phrases`` run: ((scene targets, twin targets or None), the phrase
    table, the ranked metric or None, the metric matrix the targets are in). The metric comes from the first scenes' captions (learnt by ranking with
    ``target_rank_steps``); the targets from the scenes' object phrases, blended with their caption mean when
    ``target_caption_weight`` is set. ``pool`` a :class:`bindlab.train.toy.data.ScenePool`; ``captions`` and
    ``twin_captions`` its :class:`bindlab.train.toy.lit.CaptionCache` s (twins' may be None when not needed)."""
    from bindlab.train.toy.lit import (
        WHITENER_SCENES,
        blend_targets,
        phrase_table,
        phrase_targets,
        scene_means,
        within_scene_whitener,
    )

    twins = pool.twin_scenes()
    table = phrase_table(cfg.text, cfg.heldout())
    w = within_scene_whitener(_first_scenes(captions, WHITENER_SCENES), cfg.target_shrink)
    ranking = None
    if cfg.target_rank_steps:
        n = len(captions.index)  # the whole pool, or its first --rank-scenes
        ranking = _ranked_metric(pool.scenes[:n], twins[:n], table, captions, twin_captions, w, cfg)
        w = ranking.metric
    targets = (
        phrase_targets(pool.scenes, table, w, cfg.target_bag_weight),
        phrase_targets(twins, table, w, cfg.target_bag_weight) if pool.twins else None,
    )
    if cfg.target_caption_weight:
        a = cfg.target_caption_weight
        targets = (
            blend_targets(targets[0], scene_means(captions), a),
            None
            if targets[1] is None or twin_captions is None
            else blend_targets(targets[1], scene_means(twin_captions), a),
        )
    return targets, table, ranking, w


def _ranked_metric(
    scenes: list, twins: list, table: Any, captions: Any, twin_captions: Any, init: np.ndarray, cfg: TrainConfig
) -> Any:
    """The phrase metric learnt on the pool's scenes, twins and cached captions
    (:func:`bindlab.train.phrase_metric.ranked_metric`), started from ``init``."""
    from bindlab.train.phrase_metric import ranked_metric
    from bindlab.train.toy.lit import phrase_vectors

    vectors = phrase_vectors(scenes, table, cfg.target_bag_weight)
    twin_vectors = phrase_vectors(twins, table, cfg.target_bag_weight)
    twin_vectors[(twin_captions.index < 0).any(axis=1)] = np.nan
    return ranked_metric(
        vectors,
        twin_vectors,
        captions.embeddings[captions.index],
        twin_captions.embeddings[np.maximum(twin_captions.index, 0)],
        init,
        int(cfg.target_rank_steps),
        cfg.seed,
    )


def slot_count_loss(counts: Any, scenes: list) -> Any:
    """How far a slot head's counts (b, shapes, attributes) are from the objects the batch's ``scenes`` show
    (:func:`bindlab.train.toy.lit.count_grid`), mean over the batch of ``n KL(t / n || c / m) + (m - n)^2`` with
    ``t`` the true grid of ``n`` objects and ``c`` the counts of total mass ``m``: which objects (a log loss on the
    counts' shares, so a slot that hedges over shapes pays for it; a squared error let the slots stay diffuse) and
    how many. Zero only for the exact counts."""
    import torch

    from bindlab.train.toy.lit import count_grid

    target = torch.from_numpy(count_grid(scenes)).flatten(1)
    counts = counts.flatten(1)
    n, mass = target.sum(1), counts.sum(1)
    p = target / n[:, None]
    q = counts / mass.clamp_min(1e-6)[:, None]
    kl = torch.where(p > 0, p * (p.clamp_min(1e-12).log() - q.clamp_min(1e-12).log()), torch.zeros_like(p)).sum(1)
    return (n * kl + (mass - n) ** 2).mean()


def cosine_loss(img: Any, target: Any) -> Any:
    """Mean ``1 - cos(img_i, target_i)`` over a batch: the image embeddings pulled towards fixed points (a lit
    run's discriminant targets, :func:`bindlab.train.toy.lit.discriminant_targets`)."""
    import torch.nn.functional as F

    return (1 - F.cosine_similarity(img, target, dim=-1)).mean()


def twin_rows(scenes: np.ndarray, twin: np.ndarray) -> tuple[Any, Any]:
    """(rows, partners) as torch index tensors: the batch's twin rows and, for each, the row of its own scene (the
    first row of that pool scene that is not a twin). ``scenes``/``twin`` as in :class:`bindlab.train.toy.lit.LitBatch`."""
    import torch

    own = {int(sc): r for r, sc in reversed(list(enumerate(scenes))) if not twin[r]}
    rows = np.flatnonzero(twin)
    return torch.as_tensor(rows), torch.as_tensor([own[int(scenes[r])] for r in rows], dtype=torch.long)


def twin_difference_loss(img: Any, target: Any, scenes: np.ndarray, twin: np.ndarray) -> Any:
    """Mean ``1 - cos(x_s - x_t, target_s - target_t)`` over the batch's (scene, twin) pairs, ``x`` the normalised
    image embeddings: the part of the discriminant targets that tells a scene from its binding twin, which the
    plain cosine loss leaves to a small share of each target's direction. ``scenes``/``twin`` as in
    :class:`bindlab.train.toy.lit.LitBatch` (each twin row's scene also has a row of its own)."""
    import torch.nn.functional as F

    rows, partner = twin_rows(scenes, twin)
    x = F.normalize(img, dim=-1)
    return cosine_loss(x[partner] - x[rows], target[partner] - target[rows])


def image_rank_loss(
    img: Any,
    scenes: np.ndarray,
    twin: np.ndarray,
    captions: Any,
    twin_captions: Any,
    step: int,
    scale: float = RANK_SCALE,
) -> Any:
    """:func:`bindlab.train.phrase_metric.twin_rank_loss` on the batch's normalised image embeddings: each (scene,
    twin) pair of the batch with caption k of the scene and of the twin (the same wording; k walks the cached
    captions with the row and the step), so the images themselves rank their own captions above the twin's and
    are ranked so by them. ``scenes``/``twin`` as in :func:`twin_difference_loss`."""
    import torch.nn.functional as F

    from bindlab.train.phrase_metric import twin_rank_loss

    rows, partner = twin_rows(scenes, twin)
    ts, tt = twin_caption_rows(scenes[rows.numpy()], captions, twin_captions, step)
    x = F.normalize(img, dim=-1)
    return twin_rank_loss(x[partner], x[rows], ts, tt, scale)


MARGIN_UNIT = 0.01  # image_margin_loss: margins are cosine differences of ~0.001-0.05; errors counted in these units


def image_margin_loss(
    img: Any, target: Any, scenes: np.ndarray, twin: np.ndarray, captions: Any, twin_captions: Any, step: int
) -> Any:
    """Mean squared difference, in units of :data:`MARGIN_UNIT`, between the four twin margins
    (:func:`bindlab.train.phrase_metric.twin_margins`) of the batch's normalised image embeddings and those of their
    normalised targets, with each pair's caption k (as :func:`image_rank_loss`).

    Why: a text->image decision between a scene and its swap twin is ``t . (x_s - x_t) > 0``; the image difference's
    component along the captions' common part (how well each image matches the scene's words at all) is several
    times the binding part on which the decision turns, and the targets, right more often, say what it should be.
    The cosine and twin-difference losses weigh that one direction like any other."""
    import torch.nn.functional as F

    from bindlab.train.phrase_metric import twin_margins

    rows, partner = twin_rows(scenes, twin)
    ts, tt = twin_caption_rows(scenes[rows.numpy()], captions, twin_captions, step)
    x, y = F.normalize(img, dim=-1), F.normalize(target, dim=-1)
    error = twin_margins(x[partner], x[rows], ts, tt) - twin_margins(y[partner], y[rows], ts, tt)
    return ((error / MARGIN_UNIT) ** 2).mean()


def image_bias_loss(
    img: Any, target: Any, scenes: np.ndarray, twin: np.ndarray, captions: Any, twin_captions: Any, step: int
) -> Any:
    """Mean squared difference, in units of :data:`MARGIN_UNIT`, between ``c . u`` for the batch's (scene, twin)
    pairs, ``u`` the unit image difference ``x_s - x_t`` and ``c`` the mean of the pair's caption k (as
    :func:`image_rank_loss`), and the same for their targets' unit difference.

    ``c . (x_s - x_t)`` is the *bias* of a text->image decision between a scene and its twin: how much better one image
    matches the pair's common words, whatever the binding; the decision is right both ways round only when it is
    smaller than the binding part ``(t_s - t_t) . (x_s - x_t) / 2``. On unit differences, so shrinking a difference
    does not lower the term by itself (measured: at weight 1 the tower collapsed its twin differences all the same;
    docs/reproductions.md)."""
    import torch.nn.functional as F

    rows, partner = twin_rows(scenes, twin)
    ts, tt = twin_caption_rows(scenes[rows.numpy()], captions, twin_captions, step)
    common = (ts + tt) / 2
    x, y = F.normalize(img, dim=-1), F.normalize(target, dim=-1)
    u, v = F.normalize(x[partner] - x[rows], dim=-1), F.normalize(y[partner] - y[rows], dim=-1)
    return ((((common * (u - v)).sum(-1)) / MARGIN_UNIT) ** 2).mean()


def twin_caption_rows(pool_rows: np.ndarray, captions: Any, twin_captions: Any, step: int) -> tuple[Any, Any]:
    """Caption k of each pair's scene and of its twin (the same wording), k walking the cached captions with the
    row and the step: (ts, tt) torch tensors (pairs, d)."""
    import torch

    ks = (np.arange(len(pool_rows)) + step) % captions.index.shape[1]
    return (
        torch.from_numpy(captions.embeddings[captions.index[pool_rows, ks]]),
        torch.from_numpy(twin_captions.embeddings[twin_captions.index[pool_rows, ks]]),
    )


def contrastive_loss(img: Any, txt: Any, logit_scale: Any) -> Any:
    """Symmetric InfoNCE over a batch of matched pairs.

    Args:
        img: (b, d) image embeddings (any norm; normalised here).
        txt: (b, d) text embeddings; row i matches image i.
        logit_scale: log inverse temperature (clamped to at most log 100).
    """
    import torch
    import torch.nn.functional as F

    img, txt = F.normalize(img, dim=-1), F.normalize(txt, dim=-1)
    logits = logit_scale.clamp(max=math.log(100)).exp() * img @ txt.t()  # (b, b)
    target = torch.arange(img.shape[0], device=img.device)
    return 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target))
