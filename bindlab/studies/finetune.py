"""The Finetune feature: submit a LoRA + LiNeS binding finetune as a background job, follow it, and compare base vs
finetuned on the same MCQs.

Both faces — ``python -m bindlab finetune`` / ``jobs …`` and the Finetune tab — call this module and nothing below
it. :func:`check_config` refuses a bad config (unknown encoder, missing triplets, non-finite or out-of-range
numbers) before any job folder is made; :func:`submit_finetune` then queues it through
:class:`bindlab.jobs.manager.JobManager`. The job passthroughs (:func:`list_jobs`, :func:`job_info`,
:func:`cancel_job`, :func:`resume_job`) read the jobs' state from disk; :func:`follow_job` reports a job's progress
(:func:`job_progress`: phase, step of total, loss, time left) to a ``(fraction, message)`` callback until it ends.
:func:`run_finetune_compare` scores the three models of a finished job (base, ``lora:<job>/unscaled``,
``lora:<job>``) on one MCQ file — through the cached MCQ pipeline, with the attention binding margins of each per
layer — and returns a :class:`~bindlab.result.Result` (its progress names each part, k of n; its notes say
how many captions the model truncated); the tables' shaping is :mod:`bindlab.train.compare` and
:mod:`bindlab.train.compare_attention`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindlab.config import LIMIT_ENV, limits
from bindlab.result import Result
from bindlab.studies.access import check_model_access
from bindlab.studies.validate import (
    check_options,
    check_run_options,
    data_input,
    encoder_id,
    finite_float,
    input_path,
    nonneg_int,
    run_option,
)
from bindlab.train.compare import (
    LABELS,
    display_labels,
    format_compare,
    job_models,
    labelled,
    mcq_table,
    report_models,
    report_rows,
    report_text,
    result_rows,
)
from bindlab.train.compare_attention import CAPTION_SET, attention_curves, attention_rows, per_layer_rows

Progress = Callable[[float, str], None]

__all__ = [
    "LABELS",
    "FinetuneCompareRequest",
    "attention_compare",
    "attention_curves",
    "attention_rows",
    "cancel_job",
    "check_config",
    "compare_job",
    "compare_provenance",
    "default_compare_data",
    "default_triplets",
    "display_labels",
    "format_compare",
    "job_info",
    "labelled",
    "report_rows",
    "report_text",
    "job_metrics",
    "job_models",
    "jobs_folder",
    "list_jobs",
    "mcq_table",
    "page_manager",
    "per_layer_rows",
    "result_rows",
    "resume_job",
    "run_finetune_compare",
    "run_job_process",
    "submit_finetune",
    "report_models",
    "about",
    "job_progress",
    "follow_job",
    "with_estimate",
]


# --- the job manager -----------------------------------------------------------------------------------------------
def _manager(manager: Any = None) -> Any:
    from bindlab.jobs.manager import JobManager

    return manager or JobManager()


def page_manager(session: str | None) -> Any:
    """The job manager of one page visitor: jobs owned by the session's owner token (``owner:<hash>``, see
    :func:`bindlab.studies.access.claim_owner`; ``session:<session>`` before a claim) and shown without server
    details (a failed job carries its one-line ``error``, never a log tail or traceback). New jobs also count
    against the visitor's client address (:func:`bindlab.studies.access.current_address`).

    Outside public mode (:func:`bindlab.config.public_mode`) the page is the local user's own, so it also sees and
    can follow the jobs started from this machine's CLI (as an admin); in public mode a visitor sees only their own.

    Raises:
        ValueError: no session id (a page event always has one).
    """
    from bindlab.config import public_mode
    from bindlab.jobs.manager import JobManager
    from bindlab.studies.access import current_address, job_owner

    if not str(session or "").strip():
        raise ValueError("this page has no session id; reload the page")
    return JobManager(owner=job_owner(session), admin=not public_mode(), show_logs=False, address=current_address())


def default_triplets() -> Path:
    """The generated default triplets folder (4,000 rows under ``$BINDLAB_HOME/data``; made on first use)."""
    from bindlab.train.finetune import default_triplets as make

    return make()


# --- submitting a job ----------------------------------------------------------------------------------------------
# Settings whose rule differs from the CLI-wide one in bindlab.studies.validate.OPTION_RULES: 0 is meaningful here.
_ZERO_OK = ("threads", "checkpoint_every")  # 0 = torch's default / checkpoint at every evaluation
MAX_LORA_RANK = 1024  # far above any useful LoRA rank; a typo such as 40000 is refused before a job starts


def _triplets_path(data: Any) -> tuple[str, int]:
    text = str(data or "").strip()
    if not text:
        raise ValueError(
            "finetune needs a triplets folder (--data); make one with 'python -m bindlab generate triplets --out DIR'"
        )
    p = data_input(Path(text).expanduser(), "data", "triplets")  # a datasets folder becomes its triplets.jsonl
    text = str(p) if p != Path(text).expanduser() else text
    if not (p.is_file() or (p / "triplets.jsonl").is_file()):
        raise FileNotFoundError(f"no triplets at {p}; make them with 'python -m bindlab generate triplets --out {p}'")
    return text, _check_triplets(p)


def _check_triplets(path: Path) -> int:
    """Read the triplets as the job will, before it is queued: every row parses and has its fields (a
    ``DataError`` names the file and line), and the train split has rows. Returns the number of train rows."""
    from bindlab.data.triplets import load_triplets

    rows = load_triplets(path)
    n_train = sum(r["split"] == "train" for r in rows)
    if not n_train:
        splits = sorted({r["split"] for r in rows})
        raise ValueError(
            f"{path}: no rows in the train split (it has {splits}); a finetune trains on 'train' rows — "
            "generate triplets with 'python -m bindlab generate triplets --out DIR'"
        )
    return n_train


def _check_steps(cfg: dict[str, Any], n_train: int) -> None:
    """The caps on the steps the job will run (:func:`bindlab.jobs.manager.check_training_caps`): with
    ``max_steps`` = 0 that is epochs × steps per epoch, so "no cap" cannot step past ``BINDLAB_MAX_STEPS``."""
    from dataclasses import fields

    from bindlab.jobs.manager import check_training_caps
    from bindlab.train.finetune import FinetuneConfig

    default = {f.name: f.default for f in fields(FinetuneConfig)}
    value = {k: default[k] if cfg.get(k) is None else cfg[k] for k in ("epochs", "max_steps", "batch_size")}
    check_training_caps(value["epochs"], value["max_steps"], n_train=n_train, batch_size=value["batch_size"])


# backends with no text transformer LoRA can adapt, and why: refused before a job exists (not when it loads the model)
NO_TEXT_TOWER = {
    "bow": "a bag of words has no transformer layers to adapt",
    "open_clip": "open_clip's fused attention projections cannot take LoRA adapters",
    "lora": "it is a finetuned model already and adapters do not stack; finetune its base model again",
}


def check_finetunable(model: str) -> str:
    """``model`` when its backend has a trainable text tower; refused at once (no weights loaded) for one that has
    none, such as ``bow`` — a job would otherwise be queued only to fail when it loads the model.

    Raises:
        EncoderError: (a ValueError) naming the model, why, and the models that can be finetuned.
    """
    from bindlab.encoders.base import parse_encoder_id
    from bindlab.encoders.text_tower import no_text_tower

    why = NO_TEXT_TOWER.get(parse_encoder_id(model).backend)
    if why:
        raise no_text_tower(model, why)
    return model


def check_config(config: dict[str, Any]) -> dict[str, Any]:
    """A finetune config checked before any job exists: the same dict with its numbers as ints / floats.

    Checks: the model id parses and names a known backend (a ``lora:`` one only if the visitor owns its job, see
    :mod:`bindlab.studies.access`); the triplets folder exists (inside the allowed data roots) and holds
    ``triplets.jsonl``, whose rows all parse and whose train split has rows; epochs, batch size and LoRA rank ≥ 1
    and max steps ≥ 0, each capped (epochs, steps and batch by :func:`bindlab.config.limits`; the step cap holds
    for the steps the job will run, epochs × steps per epoch when max steps is 0); lr, lora_alpha and margin finite
    and > 0; weight decay, dropout and the forgetting weight finite and ≥ 0; LiNeS ``a`` = ``auto`` or a number in [0, 1] — the rules of
    :func:`bindlab.studies.validate.check_options`, which the CLI entry runs too. Unknown keys are left to
    :class:`bindlab.train.finetune.FinetuneConfig`, which refuses them with the list of valid ones.

    Raises:
        ValueError: one line naming the bad setting and what is allowed (FileNotFoundError for missing triplets).
    """
    if not isinstance(config, dict):
        raise ValueError("a finetune config must be a JSON object of settings (model, data, epochs, …)")
    cfg = dict(config)
    if not str(cfg.get("model") or "").strip():
        raise ValueError("finetune needs a base model id (--model), e.g. minilm or toy:shared")
    cfg["model"] = check_finetunable(check_model_access(encoder_id(cfg["model"])))
    if str(cfg.get("data") or "").strip():
        input_path(str(cfg["data"]).strip(), "data", must_exist=False)  # inside the allowed data roots
    cfg["data"], n_train = _triplets_path(cfg.get("data"))
    cfg.update(check_options({k: v for k, v in cfg.items() if k not in _ZERO_OK and k != "data"}))
    _check_steps(cfg, n_train)
    for name in _ZERO_OK:
        if cfg.get(name) is not None:
            cfg[name] = nonneg_int(cfg[name], name)
    if cfg.get("threads") and cfg["threads"] > limits().max_workers:  # 0 = torch's default
        raise ValueError(
            f"--threads {cfg['threads']:,} is above the cap of {limits().max_workers} "
            f"({LIMIT_ENV['max_workers']}); use 0 for torch's default or at most the cores you have"
        )
    for name in ("lora_dropout", "forget_weight"):
        if cfg.get(name) is not None:
            cfg[name] = finite_float(cfg[name], name, 0.0)
    if cfg.get("margin") is not None:
        cfg["margin"] = finite_float(cfg["margin"], "margin", 0.0, lo_open=True)
    if cfg.get("eval_every") is not None and int(cfg["eval_every"]) < -1:
        raise ValueError(f"--eval-every must be -1 (never), 0 (auto) or a number of steps, got {cfg['eval_every']}")
    if cfg.get("lora_rank") is not None and cfg["lora_rank"] > MAX_LORA_RANK:
        raise ValueError(f"--lora-rank {cfg['lora_rank']} is above {MAX_LORA_RANK}; LoRA ranks are small (default 4)")
    from bindlab.train.finetune import check_objective  # attention loss and supervision, against the model

    cfg.update({k: v for k, v in check_objective(cfg).items() if k in cfg})
    return cfg


def submit_finetune(config: dict[str, Any], manager: Any = None) -> str:
    """Check ``config`` (:func:`check_config`), then queue the job. Returns the job id (the model is ``lora:<id>``)."""
    return _manager(manager).submit(check_config(config))


# --- following jobs (passthroughs to the job manager) --------------------------------------------------------------
def list_jobs(manager: Any = None) -> list[dict[str, Any]]:
    """Every job's status (oldest first), each with its ``progress``."""
    return _manager(manager).list()


def job_info(job_id: str, log_lines: int = 30, manager: Any = None) -> dict[str, Any]:
    """``{"status", "progress", "config", "result", "metrics", "lines", "log_tail"}`` of one job."""
    return _manager(manager).show(job_id, log_lines=log_lines)


def job_metrics(job_id: str, manager: Any = None) -> list[dict[str, Any]]:
    """The job's training curve rows (loss, validation triplet accuracy per step)."""
    return _manager(manager).metrics(job_id)


def jobs_folder(manager: Any = None) -> Path:
    """Where the jobs live (``$BINDLAB_HOME/jobs``)."""
    return Path(_manager(manager).root)


def cancel_job(job_id: str, manager: Any = None) -> dict[str, Any]:
    """Stop a queued or running job (it checkpoints); returns its status."""
    return _manager(manager).cancel(job_id)


def resume_job(job_id: str, manager: Any = None) -> dict[str, Any]:
    """Queue a cancelled or failed job again from its last checkpoint; returns its status."""
    return _manager(manager).resume(job_id)


def about(seconds: float | None) -> str:
    """A time left in words: ``about 40 s``, ``about 4 min``, ``about 1 h 5 min``; "" when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return ""
    s = round(seconds)
    if s < 90:
        return f"about {max(s, 1)} s"
    hours, minutes = divmod(round(s / 60), 60)
    return f"about {hours} h {minutes} min" if hours else f"about {minutes} min"


def job_progress(status: dict[str, Any], progress: dict[str, Any]) -> tuple[float, str]:
    """What a progress bar says about a job: the fraction of its steps done (0 before its first step, 1 once done)
    and one line, e.g. ``training: step 12/300 · loss 0.3127 · about 2 min left``.

    Args:
        status: the job's status (``state``, ``message``), as :func:`job_info` gives it.
        progress: its ``progress.json`` (``phase``, ``step``, ``total_steps``, ``loss``, ``eta_s``).
    """
    state = status.get("state") or "queued"
    if state in ("queued", "done", "failed", "cancelled"):
        done = 1.0 if state == "done" else 0.0
        return done, f"{state}: {status.get('message') or ''}".rstrip(": ")
    step, total = int(progress.get("step") or 0), progress.get("total_steps")
    if not step or not total:  # loading the model, the baseline evaluation
        return 0.0, f"{progress.get('phase') or 'starting'}: {status.get('message') or 'starting'}"
    loss = progress.get("loss")
    left = about(progress.get("eta_s"))
    return min(step / float(total), 1.0), " · ".join(
        x
        for x in (
            f"{progress.get('phase') or 'training'}: step {step}/{total}",
            f"loss {loss:.4f}" if isinstance(loss, (int, float)) else "",
            f"{left} left" if left else "",
        )
        if x
    )


def follow_job(
    job_id: str, progress: Progress, manager: Any = None, poll_s: float = 1.0, max_s: float = 3600.0
) -> dict[str, Any]:
    """Report a job's progress (:func:`job_progress`) through ``progress`` until it finishes, is cancelled or fails,
    or ``max_s`` seconds have passed (then the page's timer goes on following it). Returns its last status."""
    import time

    end = time.monotonic() + max_s
    while True:
        info = job_info(job_id, log_lines=0, manager=manager)
        fraction, line = job_progress(info["status"], info["progress"] or {})
        progress(fraction, line)
        if info["status"]["state"] in ("done", "failed", "cancelled") or time.monotonic() >= end:
            return info["status"]
        time.sleep(poll_s)


def with_estimate(progress: Progress, clock: Callable[[], float] | None = None) -> Progress:
    """``progress`` with the time left appended to each message (``… · about 4 min left``), estimated from the time
    so far and the fraction done once 5 % is done and 3 s have passed (before that the message goes as it is)."""
    import time

    now = clock or time.monotonic
    t0 = now()

    def report(fraction: float, message: str) -> None:
        elapsed = now() - t0
        if fraction >= 0.05 and elapsed >= 3.0 and fraction < 1.0:
            message = f"{message} · {about(elapsed * (1 - fraction) / fraction)} left (estimate)"
        progress(fraction, message)

    return report


def run_job_process(job_dir: str) -> int:
    """What a job's own process runs (``python -m bindlab jobs _run DIR``); returns its exit code."""
    from bindlab.jobs.runner import run_job

    return run_job(job_dir)


# --- base vs finetuned -----------------------------------------------------------------------------------------------
def attention_compare(
    encoders: dict[str, Any],
    captions: Sequence[Any],
    direction: str = "later_to_earlier",
    n_boot: int = 1000,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Margins of every model on the same captions, and each later model's difference to the first (the base).

    Args:
        encoders: ``{label: encoder}``, the base first.
        captions: the captions with their bindings (:class:`bindlab.analysis.attention.Caption`, e.g. MCQ queries).
        direction: ``later_to_earlier`` (any model) or ``earlier_to_later`` (bidirectional models only).
        progress: optional ``(fraction, message)`` callback.

    Returns:
        ``{"available", "note", "direction", "caption_set", "n_captions", "base", "models": {label: summary with
        "model" (id), or {"model", "note"} when that model has no margins}, "diff": {label: margin_difference, or
        {"note"}}}``; ``available`` is False (and ``note`` says why) when the base has no margins. A model without a
        text transformer to read attention from does not break the compare: its entry says why.
    """
    from bindlab.analysis import attention as att
    from bindlab.encoders.base import EncoderError

    att.check_direction(direction)
    labels = list(encoders)
    out: dict[str, Any] = {
        "available": False,
        "note": "",
        "direction": direction,
        "caption_set": CAPTION_SET,
        "n_captions": len(captions),
        "base": labels[0] if labels else None,
        "models": {},
        "diff": {},
    }
    if not labels or not captions:
        out["note"] = "no models or no captions to analyse"
        return out
    runs: dict[str, Any] = {}
    for i, (label, enc) in enumerate(encoders.items()):

        def step(f: float, msg: str, i: int = i) -> None:
            if progress:
                progress((i + f) / len(encoders), f"attention margins: {msg}")

        try:
            runs[label] = att.set_margins(att.attention_access(enc), CAPTION_SET, captions, direction, step)
        except (EncoderError, ValueError, NotImplementedError) as e:
            why = str(e) if enc.id in str(e) else f"{enc.id}: {e}"  # most messages already name the model
            out["models"][label] = {"model": enc.id, "note": f"attention margins are not available — {why}"}
            continue
        out["models"][label] = {"model": enc.id, **runs[label].summary(n_boot, seed)}
    base = labels[0]
    if base not in runs:
        out["note"] = out["models"][base]["note"]
        return out
    if out["models"][base]["n_captions"] == 0:
        out["note"] = (
            f"no caption could be analysed for {encoders[base].id} "
            f"(e.g. {next(iter(runs[base].skipped.values()), 'none given')})"
        )
        return out
    out["available"] = True
    for label in labels[1:]:
        if label not in runs:
            out["diff"][label] = {"note": out["models"][label]["note"]}
            continue
        try:
            out["diff"][label] = att.margin_difference(runs[base].margins, runs[label].margins, n_boot, seed)
        except ValueError as e:
            out["diff"][label] = {"note": str(e)}
    return out


def compare_job(
    job_id: str,
    mcq_path: str | Path,
    pairings: str = "auto",
    limit: int = 0,
    progress: Progress | None = None,
    manager: Any = None,
    attention_limit: int | None = 200,
    report: bool = False,
) -> dict[str, Any]:
    """Score base, unscaled and LiNeS models of a finished job on the same MCQs.

    Args:
        job_id: a job in state ``done``.
        mcq_path: SABER-style MCQ JSONL.
        pairings: ``"auto"`` (tt, plus ti/it/ii when the model embeds images and the questions have images) or
            a comma-separated list.
        limit: first N questions only (0 = all).
        progress: optional ``(fraction, message)`` callback.
        manager: the job manager (default: the one on ``$BINDLAB_HOME/jobs``).
        attention_limit: attention margins on the first N of those questions' query captions (0 = all of them,
            None = skip the attention part).
        report: also build the separated report (:func:`bindlab.studies.finetune_report.separated_report`:
            in-format vs out-of-template vs unseen-word MCQs and triplets, held-out constructions, controls).

    Returns:
        ``{"job", "models", "labels", "pairings", "mcq": {label: {pairing: summary}}, "attention": section or None,
        "triplets": rows, "lines", "report": entries or None, "provenance"}``; the attention section is
        :func:`attention_compare`'s; ``labels`` names the models for a reader (``a = 1`` is "unscaled").
    """
    from bindlab.data.schema import load_mcqs
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.mcq import evaluate_mcq, parse_pairings
    from bindlab.provenance import provenance

    info = job_info(job_id, log_lines=0, manager=manager)
    st = info["status"]
    if st["state"] != "done":
        raise ValueError(f"job {st['id']} is {st['state']}, not done; compare needs a finished job")
    if attention_limit is not None and attention_limit < 0:
        raise ValueError(
            f"attention_limit must be 0 (all captions), a positive number or None (skip); got {attention_limit}"
        )
    questions, _ = load_mcqs(mcq_path)
    if limit:
        questions = questions[:limit]
    models = job_models(st["id"], st["base_model"])
    encoders = {label: load_encoder(mid) for label, mid in models.items()}
    if pairings == "auto":
        has_images = all(q.query.image for q in questions)
        pairings = "tt,ti,it,ii" if has_images and "image" in encoders["base"].modalities else "tt"
    plist = parse_pairings(pairings)
    part = _parts(
        progress,
        {"MCQs": 1.0, "attention margins": 0.0 if attention_limit is None else 1.0, "report": 3.0 if report else 0.0},
    )
    mcq: dict[str, Any] = {}
    for i, (label, enc) in enumerate(encoders.items()):
        part("MCQs")(i / len(encoders), f"scoring {models[label]} on {len(questions)} questions")
        mcq[label], _ = evaluate_mcq(questions, Path(mcq_path).parent, enc, plist)
    attention = None
    if attention_limit is not None:
        from bindlab.analysis.attention import Caption

        qs = questions[:attention_limit] if attention_limit else questions
        captions = [Caption(q.query.text, tuple(q.query.bindings), q.id) for q in qs]
        attention = attention_compare(encoders, captions, progress=part("attention margins"))
    entries = None
    if report:
        from bindlab.studies.finetune_report import separated_report

        entries = separated_report(
            encoders, questions, info.get("config") or {}, progress=part("report"), mcq_path=mcq_path
        )
    if progress:
        progress(1.0, "done")
    return {
        "job": st["id"],
        "models": models,
        "labels": display_labels((info["lines"] or {}).get("a")),
        "pairings": plist,
        "mcq": mcq,
        "attention": attention,
        "report": entries,
        "truncated": _truncation(encoders["base"], questions) if "text" in _modalities(plist) else None,
        "triplets": result_rows(info["result"] or {}),
        "lines": info["lines"],
        "provenance": provenance(
            mcq_path,
            encoders["lines"],
            {
                "kind": "finetune-compare",
                "pairings": plist,
                "limit": limit,
                "models": models,
                "attention_limit": attention_limit,
            },
        ),
    }


def _parts(progress: Progress | None, weights: dict[str, float]) -> Callable[[str], Progress]:
    """One progress callback per part of a long task: ``part(name)(f, msg)`` reports ``f`` of that part as its
    share of the whole (parts weighted by ``weights``, one of 0 skipped), its message headed ``part k/n (name)``."""
    parts = [k for k, w in weights.items() if w > 0]
    total = sum(weights[k] for k in parts)

    def part(name: str) -> Progress:
        i = parts.index(name)
        start = sum(weights[k] for k in parts[:i])

        def report(f: float, msg: str) -> None:
            if progress:
                progress(
                    (start + weights[name] * min(max(f, 0.0), 1.0)) / total,
                    f"part {i + 1}/{len(parts)} ({name}): {msg.removeprefix(f'{name}: ')}",
                )

        return report

    return part


def _modalities(pairings: Sequence[str]) -> set[str]:
    """The modalities the pairings read (``tt`` -> text; ``ti`` -> text and image)."""
    from bindlab.eval.mcq import PAIRINGS

    return {m for p in pairings for m in PAIRINGS[p]}


def _truncation(encoder: Any, questions: Sequence[Any]) -> dict[str, Any] | None:
    """How many of the questions' captions the base model cuts at its token limit (the finetuned models share its
    tokenizer): :func:`bindlab.encoders.truncation.truncation`."""
    from bindlab.encoders.truncation import truncation

    return truncation(encoder, [it.text for q in questions for it in (q.query, *q.candidates)])


@dataclass(frozen=True)
class FinetuneCompareRequest:
    """Base vs finetuned for one finished job. Validated on construction (the job's state is checked on run)."""

    job: str  # job id, as `finetune` / `jobs list` print it
    data: str = ""  # MCQ JSONL; empty = the embedded mini benchmark
    pairings: str = "auto"  # tt,ti,it,ii or auto (every pairing the model and the data allow)
    limit: int = run_option("limit")  # first N questions only (0 = all)
    attention_limit: int | None = 200  # attention margins on the first N query captions (0 = all, None = skip)
    report: bool = True  # the separated report: in-format vs out-of-template / unseen-word / held-out, with CIs

    def __post_init__(self) -> None:
        job = str(self.job or "").strip()
        if not job:
            raise ValueError("select a finished job to compare (ids as 'python -m bindlab jobs list' prints them)")
        object.__setattr__(self, "job", job)
        object.__setattr__(self, "data", str(self.data or "").strip())
        if self.data:  # inside the allowed data roots; a datasets folder becomes its mcq.jsonl
            object.__setattr__(self, "data", str(data_input(self.data, "data", "mcq")))
        check_run_options(self)  # limit (RunOptions)
        if self.attention_limit is not None:
            object.__setattr__(self, "attention_limit", nonneg_int(self.attention_limit, "attention_limit"))


def default_compare_data(job_id: str, manager: Any = None) -> Path:
    """The MCQs a compare uses when none is given: the embedded mini benchmark the base model can read
    (:func:`~bindlab.studies.common.default_dataset_for`: the renderable vocabulary, with images, for the toy models,
    which know only those words; the Walkthrough compares on the same), with images when the base embeds them."""
    from bindlab.studies.common import default_dataset_for, get_encoder

    base = str(job_info(job_id, log_lines=0, manager=manager)["status"].get("base_model") or "")
    if not base:  # a job written before its status named the base
        return default_dataset_for([])
    encoder = get_encoder(base)
    return default_dataset_for([encoder], images="image" in encoder.modalities)


def run_finetune_compare(
    request: FinetuneCompareRequest, progress: Progress | None = None, manager: Any = None
) -> Result:
    """Base vs ``lora:<job>/unscaled`` vs ``lora:<job>`` on the request's MCQs: the study both faces call.

    Returns:
        ``Result("finetune")``: ``summary`` = :func:`compare_job`'s record without its provenance (what
        ``jobs compare --out`` writes), plus ``data``; ``rows`` = the MCQ table (:func:`mcq_table`: pairing, N, one
        column per model); ``tables`` = ``mcq``, ``triplets`` (from the job), ``attention`` and
        ``attention_per_layer``; ``figures_data`` = ``{"mcq_rows", "attention": section or None,
        "attention_curves", "metrics": the job's training curve}``.
    """
    if progress:
        progress(0.0, "reading the job and its MCQs")
    path = request.data or str(default_compare_data(request.job, manager))
    res = compare_job(
        request.job,
        path,
        pairings=request.pairings,
        limit=request.limit,
        progress=progress,
        manager=manager,
        attention_limit=request.attention_limit,
        report=request.report,
    )
    table = mcq_table(res)
    section = res.get("attention")
    a = (res.get("lines") or {}).get("a")
    tables: dict[str, list[dict[str, Any]]] = {"mcq": table, "triplets": res["triplets"]}
    notes: list[str] = []
    from bindlab.encoders.truncation import truncation_text

    if truncation_text(res.get("truncated")):  # shown where the scores are, not only in the server log
        notes.append(truncation_text(res["truncated"]))
    if res.get("report"):
        tables["report"] = report_rows(res["report"], a)
        notes.append(report_text(res["report"], a))
    if section:
        tables["attention"] = attention_rows(section, display_labels(a))
        tables["attention_per_layer"] = per_layer_rows(section) if section.get("available") else []
    summary = {k: v for k, v in res.items() if k != "provenance"}
    summary["data"] = path
    return Result(
        "finetune",
        summary,
        rows=table,
        tables=tables,
        provenance=res["provenance"],
        notes=notes,
        figures_data={
            "mcq_rows": table,
            "attention": section,
            "attention_curves": attention_curves(section, display_labels(a)) if section else [],
            "metrics": job_metrics(res["job"], manager),
        },
    )


def compare_provenance(job_id: str, dataset: str | None, manager: Any = None) -> dict[str, Any]:
    """The provenance of a Finetune tab download: the job (its models and config) and, when a comparison is in it,
    the MCQ file it was scored on."""
    from bindlab.provenance import provenance
    from bindlab.studies.common import get_encoder

    info = job_info(job_id, log_lines=0, manager=manager)
    st = info["status"]
    encoder = get_encoder(st["model_id"]) if st["state"] == "done" else None
    settings = {
        "kind": "finetune-compare",
        "job": st["id"],
        "models": job_models(st["id"], st["base_model"]),
        "config": info.get("config"),
    }
    return provenance(dataset, encoder, settings)
