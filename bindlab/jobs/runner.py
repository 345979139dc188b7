"""The process side of a job: ``python -m bindlab jobs _run DIR`` runs the job's config and reports on disk.

Progress goes to ``progress.json`` (phase, step, total, loss, rate, ETA; rewritten atomically, at most a few times
a second) and ``metrics.jsonl`` (one line per step and per evaluation); in a data-parallel job (``torchrun``,
``accelerate launch``) rank 0 reports and checkpoints, and every rank stops at the same step. SIGTERM sets the training
:class:`~bindlab.train.finetune.Control` flag: the loop saves a checkpoint and stops at the next step boundary.
On exit the runner records the final state and promotes the queue, so the next queued job starts without any
daemon. A failure's traceback goes to the job's log only; its status gets one line. A job without ``max_steps``
(or with more) runs at most ``BINDLAB_MAX_STEPS`` steps.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bindlab.config import limits
from bindlab.encoders.distributed import world_from_env
from bindlab.jobs.manager import JobManager, one_line, read_json, tail, write_json_atomic
from bindlab.train.finetune import Control, FinetuneCallback, FinetuneConfig, FinetuneState, Stopped, train


class JobReporter(FinetuneCallback):
    """Writes progress.json and metrics.jsonl, and a line to the log every ``log_every`` steps."""

    def __init__(self, job_dir: Path, min_interval_s: float = 0.25, log_every: int = 10) -> None:
        self.dir = job_dir
        self.min_interval_s = min_interval_s
        self.log_every = log_every
        self._last = 0.0
        self._metrics = open(job_dir / "metrics.jsonl", "a", buffering=1)
        self._t0 = time.time()
        self._step0 = 0
        self._t_step0 = time.time()

    def _progress(self, s: FinetuneState, force: bool = False) -> None:
        now = time.time()
        if not force and now - self._last < self.min_interval_s:
            return
        self._last = now
        done = s.step - self._step0
        rate = done / max(now - self._t_step0, 1e-9) if done else 0.0  # steps/s since training (re)started
        eta = (s.total_steps - s.step) / rate if rate else None
        write_json_atomic(
            self.dir / "progress.json",
            {
                "phase": s.phase,
                "step": s.step,
                "total_steps": s.total_steps,
                "epoch": s.epoch,
                "loss": None if s.loss != s.loss else round(s.loss, 6),
                "triplets_seen": s.triplets_seen,
                "fraction": round(s.step / s.total_steps, 4) if s.total_steps else 0.0,
                "steps_per_s": round(rate, 4),
                "eta_s": None if eta is None else round(eta, 1),
                "elapsed_s": round(now - self._t0, 1),
                "updated": now,
            },
        )

    def on_phase(self, s: FinetuneState) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] phase {s.phase}", flush=True)
        self._progress(s, force=True)

    def on_train_start(self, s: FinetuneState) -> None:
        self._step0, self._t_step0 = s.step, time.time()
        print(f"training {s.total_steps} steps (from step {s.step}), batch {s.config.batch_size}", flush=True)
        self._progress(s, force=True)

    def on_step_end(self, s: FinetuneState) -> None:
        self._metrics.write(json.dumps({"step": s.step, "loss": round(s.loss, 6), "t": round(time.time(), 3)}) + "\n")
        if s.step % self.log_every == 0 or s.step == s.total_steps:
            print(f"step {s.step}/{s.total_steps} loss {s.loss:.4f}", flush=True)
        self._progress(s, force=s.step == s.total_steps)

    def on_eval(self, s: FinetuneState, metrics: dict[str, Any]) -> None:
        self._metrics.write(json.dumps(metrics) + "\n")
        print(f"eval step {metrics['step']}: val triplet accuracy {metrics['val_acc']:.3f}", flush=True)

    def on_checkpoint(self, s: FinetuneState, path: Path) -> None:
        self._progress(s, force=True)

    def on_train_end(self, s: FinetuneState, result: dict[str, Any]) -> None:
        self._progress(s, force=True)
        print(
            f"done: {lines_label(result['lines']['a'])} ({result['lines']['chosen_on']}), "
            f"{result['triplets_per_s']} triplets/s",
            flush=True,
        )
        self._metrics.close()


def lines_label(a: float) -> str:
    """How a job's scaling is named in its status and log: ``LiNeS a = 0.1``, or ``unscaled (LiNeS a = 1 scales
    nothing)`` — a = 1 leaves the finetuned weights as they are, so calling that model "LiNeS" would claim a scaling."""
    from bindlab.train.lines import is_scaled

    return f"LiNeS a = {a}" if is_scaled(a) else "unscaled (LiNeS a = 1 scales nothing)"


def run_job(job_dir: str | Path) -> int:
    """Run the job in ``job_dir`` in this process; returns the process exit code (0 done or cancelled, 1 failed).

    Raises:
        ValueError: ``job_dir`` is not a job folder (one :meth:`JobManager.submit` made: ``config.json`` and
            ``status.json`` in it); nothing is written then (the folder may be anything, ``/etc`` included).
    """
    d = Path(job_dir).resolve()
    if not (d.is_dir() and (d / "config.json").is_file() and (d / "status.json").is_file()):
        raise ValueError(
            f"{job_dir}: not a job folder (a job's folder holds config.json and status.json; jobs are "
            "started with `python -m bindlab finetune`)"
        )
    manager = JobManager(d.parent)
    status = read_json(d / "status.json", {}) or {}
    control = Control()

    def on_term(signum: int, frame: Any) -> None:  # noqa: ARG001
        print("SIGTERM received: stopping at the next step boundary", flush=True)
        control.stop = True

    signal.signal(signal.SIGTERM, on_term)
    try:
        cfg = capped(FinetuneConfig.from_dict(read_json(d / "config.json", {})))
        exported = os.environ.get("BINDLAB_JOB_RESUME", "") == "1"  # started by `jobs export-script`'s scripts
        if exported and _rank() == 0:
            manager.mark_running(d, "running from an exported launch script")
        result = train(cfg, d, [JobReporter(d)], control, resume=bool(status.get("resume")) or exported)
    except Stopped as e:
        if _rank() == 0:  # one job, one report, however many processes it has
            manager.finish(d, "cancelled", f"{e}; last checkpoint kept")
        return 0
    except BaseException as e:  # noqa: BLE001 - every failure must reach status.json
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        where = f"rank {_rank()}: " if _rank() else ""
        manager.finish(d, "failed", one_line(f"{where}{type(e).__name__}: {e}"), log_tail=tail(d / "log.txt", 20))
        return 1
    if result:  # rank 0 only
        manager.finish(d, "done", f"finished {result['steps']} steps; {lines_label(result['lines']['a'])}")
    return 0


def _rank() -> int:
    """This process's rank in a data-parallel job (0 in one process)."""
    try:
        return world_from_env().rank
    except ValueError:
        return 0


def capped(cfg: FinetuneConfig) -> FinetuneConfig:
    """The config with ``max_steps`` at most ``BINDLAB_MAX_STEPS`` (0 = no cap); says so in the log when it cuts."""
    cap = limits().max_steps
    if cap and (not cfg.max_steps or cfg.max_steps > cap):
        print(f"at most {cap} steps (BINDLAB_MAX_STEPS caps a job without max_steps or with more)", flush=True)
        return dataclasses.replace(cfg, max_steps=cap)
    return cfg
