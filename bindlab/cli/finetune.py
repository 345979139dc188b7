"""``generate triplets``, ``finetune``, ``jobs``: text-only LoRA finetuning as background jobs (the Finetune tab's feature)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bindlab.cli.common import Groups, _write_export, _write_json, add_device, add_output_args, add_run_option


# --- triplets, finetune, jobs ------------------------------------------------------------------------------------
def _triplet_variants(a: argparse.Namespace):
    """Templates and held-out words of ``generate triplets`` (None when none was asked for)."""
    from bindlab.data.templates import parse_templates
    from bindlab.data.triplets import Variants
    from bindlab.data.triplets.holdout import select_holdout

    templates = parse_templates(a.templates) if a.templates else None
    held_templates = parse_templates(a.holdout_templates) if a.holdout_templates else ()
    holdout = select_holdout(a.holdout_words, a.seed) if a.holdout_words else None
    return Variants(templates, held_templates, holdout)


def cmd_generate_triplets(a: argparse.Namespace) -> None:
    from bindlab.data.triplets import generate_triplets, write_triplets

    variants = _triplet_variants(a)
    rows, stats = generate_triplets(
        a.n,
        seed=a.seed,
        engine=a.engine,
        progress=lambda i, n: print(f"  {i}/{n} examples", file=sys.stderr),
        variants=variants,
    )
    paths = write_triplets(a.out, rows, stats, variants.holdout)
    splits = ", ".join(f"{k} {v}" for k, v in stats["splits"].items())
    rejected = ", ".join(f"{k} {v}" for k, v in stats["rejected"].items()) or "none"
    print(
        f"generated {stats['n_rows']} triplet rows ({stats['n_examples']} examples, seed {a.seed}, "
        f"engine {stats['engine']}) in {stats['seconds']:.1f}s -> {paths['triplets']}"
    )
    print(f"splits: {splits}")
    print(f"rejected examples: {stats['n_rejected_examples']} of {stats['attempts']} attempts; by reason: {rejected}")
    if "templates" in stats:
        print("query templates (rows): " + ", ".join(f"{k} {v}" for k, v in stats["templates"].items()))
    for t, r in stats.get("holdout_templates", {}).items():
        print(
            f"held-out template {t}: {r['rows']} rows in test_template_{t} ({r['skipped_examples']} test examples "
            "skipped: attributes the template cannot express)"
        )
    if "holdout_words" in stats:
        h = stats["holdout_words"]
        print(
            f"held out {h['n_objects']} objects and {h['n_attributes']} attributes (fraction {h['fraction']}, "
            f"seed {h['seed']}) -> {paths['holdout_vocab']}"
        )


_FT_KEYS = (
    "model",
    "data",
    "epochs",
    "max_steps",
    "batch_size",
    "lr",
    "weight_decay",
    "margin",
    "lora_rank",
    "lora_alpha",
    "lines_a",
    "seed",
    "device",
    "eval_rows",
    "num_processes",
    "attention_loss",
    "attention_layers",
    "supervision",
)


DEBUG_KEYS = {"fail_at_step": 1e9, "sleep_per_step": 60.0}  # the test hooks a config may set, and their caps
MAX_LORA_ALPHA = 10_000.0  # alpha / r scales the update: past this the first step already overflows


def _check_file_settings(cfg: dict[str, Any], where: str) -> None:
    """Refuse the settings only a ``--config`` file can carry that would otherwise pass unchecked and be ignored or
    fail the job later: switches that are not JSON true/false (``"no"`` would read as true), unknown or non-numeric
    ``debug`` hooks, ``lora_alpha`` past :data:`MAX_LORA_ALPHA` and ``lora_dropout`` outside [0, 1)."""
    for name in ("heavy", "evaluate"):
        if name in cfg and not isinstance(cfg[name], bool):
            raise ValueError(f"{where}: {name} must be true or false, got {cfg[name]!r}")
    debug = cfg.get("debug", {})
    if not isinstance(debug, dict) or any(k not in DEBUG_KEYS for k in debug):
        raise ValueError(f"{where}: debug may hold only {', '.join(DEBUG_KEYS)} (test hooks), got {debug!r:.120}")
    for key, value in debug.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= DEBUG_KEYS[key]:
            raise ValueError(f"{where}: debug.{key} must be a number from 0 to {DEBUG_KEYS[key]:g}, got {value!r:.60}")
    alpha = cfg.get("lora_alpha")
    if isinstance(alpha, int | float) and not isinstance(alpha, bool) and alpha > MAX_LORA_ALPHA:
        raise ValueError(
            f"lora_alpha {alpha:g} is above {MAX_LORA_ALPHA:,.0f}: the update is scaled by alpha / rank and would "
            "overflow at the first step (the default is 4)"
        )
    dropout = cfg.get("lora_dropout")
    if isinstance(dropout, int | float) and not isinstance(dropout, bool) and not 0 <= dropout < 1:
        raise ValueError(f"{where}: lora_dropout must be at least 0 and below 1, got {dropout:g}")


def _finetune_config(a: argparse.Namespace) -> dict[str, Any]:
    cfg: dict[str, Any] = {}
    if a.config:
        try:
            cfg = json.loads(Path(a.config).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"--config {a.config}: cannot read it as JSON ({e})") from None
        if not isinstance(cfg, dict):
            raise ValueError(f"--config {a.config}: must hold a JSON object of finetune settings")
    cfg.update({k: getattr(a, k) for k in _FT_KEYS if getattr(a, k) is not None})  # flags override the file
    _check_file_settings(cfg, f"--config {a.config}")
    missing = [k for k in ("model", "data") if not cfg.get(k)]
    if missing:
        raise ValueError(f"finetune needs {' and '.join('--' + k for k in missing)} (or a --config file with them)")
    return cfg


def _print_progress(st: dict[str, Any], pr: dict[str, Any]) -> str:
    if not pr:
        return f"{st['state']}: {st.get('message', '')}"
    eta = f", ETA {pr['eta_s']:.0f}s" if pr.get("eta_s") is not None else ""
    loss = f", loss {pr['loss']:.4f}" if pr.get("loss") is not None else ""
    return f"{st['state']} [{pr.get('phase')}] step {pr.get('step')}/{pr.get('total_steps')}{loss}{eta}"


def cmd_finetune(a: argparse.Namespace) -> None:
    from bindlab.studies import finetune as fs

    job_id = fs.submit_finetune(_finetune_config(a))  # checked first: a bad setting never makes a job
    print(f"job {job_id} submitted; it will produce the model lora:{job_id} (and lora:{job_id}/unscaled)")
    if a.background:
        print(f"follow it with: python -m bindlab jobs show {job_id}")
        return
    last = ""
    try:
        while True:
            st = fs.job_info(job_id, log_lines=0)
            line = _print_progress(st["status"], st["progress"])
            if line != last:
                print(line, flush=True)
                last = line
            if st["status"]["state"] in ("done", "failed", "cancelled"):
                break
            time.sleep(1.0)
    except KeyboardInterrupt:
        fs.cancel_job(job_id)
        raise ValueError(
            f"interrupted: job {job_id} cancelled (resume it with 'python -m bindlab jobs resume {job_id}')"
        ) from None
    st = fs.job_info(job_id)
    if st["status"]["state"] != "done":
        raise ValueError(f"job {job_id} {st['status']['state']}: {st['status'].get('message')}\n{st['log_tail']}")
    _print_finetune_result(st["result"])
    # the job id first, so a script can pass it on: JOB=$(python -c "import json; print(json.load(open(OUT))['job_id'])")
    _write_json(a.out, {"job_id": job_id, "model_id": f"lora:{job_id}", **st["result"]})


def _print_finetune_result(res: dict[str, Any]) -> None:
    from bindlab.studies.finetune import result_rows

    print(
        f"LiNeS a = {res['lines']['a']} ({res['lines']['chosen_on']}); {res['steps']} steps, "
        f"{res['triplets_per_s']} triplets/s"
    )
    for row in result_rows(res):
        print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))


def cmd_jobs_run(a: argparse.Namespace) -> None:
    """``jobs _run DIR``: what a job's own process runs (:func:`bindlab.jobs.manager.launch_command`); in no help."""
    from bindlab.studies import finetune as fs

    raise SystemExit(fs.run_job_process(a.job))


def cmd_jobs_list(a: argparse.Namespace) -> None:
    from bindlab.studies import finetune as fs

    jobs = fs.list_jobs()
    if not jobs:
        print(f"no jobs under {fs.jobs_folder()}")
    for j in jobs:
        print(
            f"{j['id']}  {j['model_id']:<30}  {j['state']:<9}  {j['base_model']}  "
            f"{_print_progress(j, j['progress']) if j['state'] == 'running' else j.get('message', '')}"
        )
    _write_json(a.out, {"jobs": jobs})


def cmd_jobs_show(a: argparse.Namespace) -> None:
    from bindlab.studies import finetune as fs

    info = fs.job_info(a.job)
    st = info["status"]
    print(f"{st['id']}  {st['model_id']}  {st['state']}  base {st['base_model']}  created {st['created']}")
    print(_print_progress(st, info["progress"]))
    if info["result"]:
        _print_finetune_result(info["result"])
    if st["state"] == "failed" or a.log:
        print("--- log tail ---\n" + (st.get("log_tail") or info["log_tail"]))
    _write_json(a.out, info)


def cmd_jobs_cancel(a: argparse.Namespace) -> None:
    from bindlab.studies import finetune as fs

    st = fs.cancel_job(a.job)
    print(f"{st['id']}: {st['state']} ({st['message']})")


def cmd_jobs_resume(a: argparse.Namespace) -> None:
    from bindlab.studies import finetune as fs

    st = fs.resume_job(a.job)
    print(f"{st['id']}: {st['state']} ({st['message']})")


def cmd_jobs_compare(a: argparse.Namespace) -> None:
    from bindlab.present.exports import compare_export
    from bindlab.studies import finetune as fs

    request = fs.FinetuneCompareRequest(
        a.job,
        a.data or "",
        pairings=a.pairings,
        limit=a.limit,
        attention_limit=None if a.no_attention else a.attention_limit,
        report=not a.no_report,
    )
    res = fs.run_finetune_compare(request)
    print(fs.format_compare(res.summary))
    _write_json(a.out, {**res.summary, "provenance": res.provenance})
    _write_export(a, lambda: compare_export(res, res.figures_data["metrics"]), res.provenance)


# --- a job that runs elsewhere --------------------------------------------------------------------------------------
def job_scripts(job_dir: Path, job_id: str, nproc: int, nodes: int = 1, repo: Path | None = None) -> dict[str, str]:
    """``launch.sh`` (torchrun, or ``LAUNCHER=accelerate``, on one machine) and ``sbatch.sh`` (SLURM, ``nodes``
    machines x ``nproc`` GPUs) that run the job in ``job_dir``; the global batch is the job's whatever the count.

    Both resume from the job's last checkpoint when there is one (a requeued SLURM job continues).
    """
    from bindlab.config import repo_root

    repo = repo or repo_root()
    head = (
        f'JOB_DIR="${{JOB_DIR:-{job_dir}}}"\nexport PYTHONPATH="${{BINDLAB_REPO:-{repo}}}:${{PYTHONPATH:-}}"\n'
        "export BINDLAB_JOB_RESUME=1  # continue from checkpoints/last.pt when it exists\n"
    )
    launch = (
        f"#!/usr/bin/env bash\n# bindlab job {job_id}: data-parallel finetune on this machine's GPUs.\n"
        f"# Written by 'python -m bindlab jobs export-script {job_id}'. Result: lora:$JOB_DIR\n"
        f'set -euo pipefail\n{head}NPROC="${{NPROC:-{nproc}}}"\n'
        'if [ "${LAUNCHER:-torchrun}" = accelerate ]; then\n'
        '  exec accelerate launch --multi_gpu --num_processes "$NPROC" --num_machines 1 --mixed_precision no '
        '--dynamo_backend no -m bindlab jobs _run "$JOB_DIR"\n'
        "else\n"
        '  exec torchrun --standalone --nproc_per_node "$NPROC" -m bindlab jobs _run "$JOB_DIR"\n'
        "fi\n"
    )
    sbatch = (
        f"#!/usr/bin/env bash\n#SBATCH --job-name=bindlab-{job_id}\n#SBATCH --nodes={nodes}\n"
        f"#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node={nproc}\n#SBATCH --cpus-per-task={4 * nproc}\n"
        f"#SBATCH --time=04:00:00\n#SBATCH --requeue\n#SBATCH --output={job_dir}/slurm-%j.out\n"
        f"# bindlab job {job_id} on {nodes} node(s) x {nproc} GPU(s): submit with 'sbatch {job_dir}/sbatch.sh'.\n"
        f"# Result: lora:$JOB_DIR (copy the folder back, or load it in place).\n"
        f"set -euo pipefail\n{head}"
        'MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"\n'
        f'srun torchrun --nnodes "$SLURM_NNODES" --nproc_per_node {nproc} --rdzv_id "$SLURM_JOB_ID" '
        '--rdzv_backend c10d --rdzv_endpoint "$MASTER_ADDR:29500" -m bindlab jobs _run "$JOB_DIR"\n'
    )
    return {"launch.sh": launch, "sbatch.sh": sbatch}


def cmd_jobs_export_script(a: argparse.Namespace) -> None:
    from bindlab.studies import finetune as fs

    info = fs.job_info(a.job, log_lines=0)  # a missing job, or another owner's, is refused here
    d = fs.jobs_folder() / info["status"]["id"]
    nproc = a.nproc if a.nproc is not None else int((info.get("config") or {}).get("num_processes", 1) or 1)
    if nproc < 1 or a.nodes < 1:
        raise ValueError(f"--nproc and --nodes must be >= 1, got {nproc} and {a.nodes}")
    for name, text in job_scripts(d, info["status"]["id"], nproc, a.nodes).items():
        path = d / name
        path.write_text(text)
        path.chmod(0o755)
        print(f"# --- {path}\n{text}")
    print(
        f"run 'bash {d / 'launch.sh'}' here (LAUNCHER=accelerate for accelerate launch) or 'sbatch {d / 'sbatch.sh'}' "
        f"on a SLURM cluster; then load the result as lora:{d}"
    )


def add_commands(g: Groups) -> None:
    t = g.generate.add_parser("triplets", help="text finetuning triplets (SABER appendix B) -> DIR/triplets.jsonl")
    t.add_argument("--out", required=True, help="output folder")
    t.add_argument("--n", type=int, default=100_000, help="triplet rows (even; two per example)")
    t.add_argument("--seed", type=int, default=0, help="generator seed (also picks the --holdout-words)")
    t.add_argument("--engine", default="template", help="template (offline) or hf:ORG/NAME (a local instruct LM)")
    t.add_argument(
        "--templates",
        help="query sentence templates, comma-separated, one drawn per example: "
        "attributive, predicative, relative, with (default: attributive)",
    )
    t.add_argument(
        "--holdout-templates",
        help="templates held out of training: each test example re-written in "
        "them goes to the split test_template_<NAME>",
    )
    t.add_argument(
        "--holdout-words",
        type=float,
        help="hold out this fraction (0-0.5] of objects and attributes "
        "(seeded by --seed, listed in DIR/holdout_vocab.json); no "
        "train/val text uses them; split test_unseen_words does",
    )
    t.set_defaults(func=cmd_generate_triplets)

    _add_finetune(g)
    _add_jobs(g)


def _add_finetune(g: Groups) -> None:
    help_ = "LoRA-finetune an encoder on binding triplets, then LiNeS (a job)"
    f = g.top.add_parser(
        "finetune",
        help=help_,
        description=f"{help_}.\n\nEach setting comes from its flag, else "
        "from the --config file, else it is the default its help names.",
    )
    f.add_argument("--data", help="triplets folder from 'generate triplets'")
    f.add_argument("--model", help="base encoder id: minilm, st:/folder, toy:shared, hf:…, qwen3vl:…")
    f.add_argument("--config", help="job.json with the same keys (model, data, epochs, lora_rank, …); flags override")
    add_device(f, default=None)  # None: the --config file's, else auto
    f.add_argument("--epochs", type=int, help="passes over the train split (default 1)")
    f.add_argument("--max-steps", type=int, help="cap on optimizer steps (default: no cap)")
    f.add_argument("--batch-size", type=int, help="triplets per step, across all processes (default 16)")
    f.add_argument("--lr", type=float, help="AdamW learning rate, constant (default 5e-5)")
    f.add_argument("--weight-decay", type=float, help="AdamW weight decay (default 0.01)")
    f.add_argument("--margin", type=float, help="hinge margin (default 0.05)")
    f.add_argument("--lora-rank", type=int, help="LoRA r (default 4)")
    f.add_argument("--lora-alpha", type=float, help="LoRA alpha (default 4)")
    f.add_argument(
        "--lines-a",
        help="LiNeS a in [0, 1] (default 0.1, Wang et al.'s single-task setting; 1 = "
        "unscaled), or auto (searched on validation over their grid 1.0, 0.9, ..., 0.0)",
    )
    f.add_argument("--seed", type=int, help="seed of the batch order and the LoRA init (default 0)")
    f.add_argument("--eval-rows", type=int, help="rows per split used for evaluation (default 400, 0 = all)")
    f.add_argument(
        "--num-processes",
        type=int,
        help=">1: data parallel on N processes (torchrun; same global batch, rank 0 checkpoints; default 1)",
    )
    f.add_argument(
        "--attention-loss",
        type=float,
        metavar="WEIGHT",
        help="add WEIGHT x the attention binding-margin loss over --attention-layers (SABER App. C.3; "
        "default 0 = off; toy, st:/minilm, hf:, qwen3vl: models)",
    )
    f.add_argument(
        "--attention-layers",
        metavar="A-B",
        help="its layer band, 0-based inclusive (default: the last third of the layers)",
    )
    f.add_argument(
        "--supervision",
        choices=["text", "image"],
        help="text triplets (default) or image triplets rendered from them: anchor scene, the same "
        "scene re-rendered, the scene with one binding swapped (SABER appendix E; toy:shared)",
    )
    f.add_argument("--background", action="store_true", help="start the job and return at once")
    f.add_argument("--out", help="write the result JSON here, with its job_id and model_id (foreground only)")
    f.set_defaults(func=cmd_finetune)


def _add_jobs(g: Groups) -> None:
    j = g.top.add_parser("jobs", help="background finetune jobs: list, show, cancel, resume, compare, export-script")
    acts = j.add_subparsers(dest="action", required=True, metavar="ACTION", title="actions")

    def job_parser(name: str, help_: str, func: Callable[[argparse.Namespace], None]) -> argparse.ArgumentParser:
        p = acts.add_parser(name, help=help_)
        p.add_argument("job", metavar="ID", help="job id, as printed by finetune and 'jobs list'")
        p.set_defaults(func=func)
        return p

    ls = acts.add_parser("list", help="every job with its model id, state and progress")
    ls.add_argument("--out", help="also write the list as JSON here")
    ls.set_defaults(func=cmd_jobs_list)

    show = job_parser("show", "one job's state, progress and result (the log tail when it failed)", cmd_jobs_show)
    show.add_argument("--log", action="store_true", help="print the log tail whatever the state")
    show.add_argument("--out", help="also write the job's status, progress and result as JSON here")

    job_parser("cancel", "stop a queued or running job (its last checkpoint is kept for resume)", cmd_jobs_cancel)
    job_parser("resume", "queue a cancelled or failed job again from its last checkpoint", cmd_jobs_resume)

    c = job_parser(
        "compare",
        "base vs finetuned (unscaled and LiNeS) on MCQs, the separated in-format / general "
        "report and per-layer attention margins",
        cmd_jobs_compare,
    )
    c.add_argument(
        "--data",
        help="MCQ JSONL to score base vs finetuned on (default: the embedded mini benchmark, its "
        "image version for a toy: base); the other templates and the held-out words are "
        "generated on the fly",
    )
    c.add_argument("--pairings", default="auto", help="tt,ti,it,ii or auto (all the model and data allow)")
    add_run_option(c, "limit", metavar=None, help="first N questions only (0 = all)")
    c.add_argument(
        "--attention-limit",
        type=int,
        default=200,
        help="attention binding margins per layer on the first N query captions (0 = all)",
    )
    c.add_argument("--no-attention", action="store_true", help="skip the attention margins")
    c.add_argument(
        "--no-report",
        action="store_true",
        help="skip the separated in-format vs general report (its generated sets cost most of a compare)",
    )
    add_output_args(c, out="write the comparison JSON (summary + provenance) here")

    x = job_parser(
        "export-script",
        "write launch.sh (torchrun / accelerate launch) and sbatch.sh (SLURM) that run the job on other machines",
        cmd_jobs_export_script,
    )
    x.add_argument("--nproc", type=int, help="processes (GPUs) per node (default: the job's num_processes)")
    x.add_argument("--nodes", type=int, default=1, help="SLURM nodes")

    run = acts.add_parser("_run", hidden=True)  # what a job's own process runs: launch_command() in jobs/manager.py
    run.add_argument("job", metavar="DIR", help="the job's folder")
    run.set_defaults(func=cmd_jobs_run)
