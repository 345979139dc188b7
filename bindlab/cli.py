"""``python -m bindlab <command>``: the command-line face of the backend.

Every command prints a short human summary; ``--out FILE`` writes the full result as JSON with provenance.
User errors (bad ids, bad files) print one clear line to stderr and exit with status 2 — no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from bindlab.config import __version__


def _write_json(path: str | None, obj: Any) -> None:
    if path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(obj, indent=2))
        print(f"wrote {p}")


def _write_per_item(path: str | None, rows: list[dict[str, Any]]) -> None:
    if path:
        from bindlab.data.schema import write_jsonl

        write_jsonl(path, rows)
        print(f"wrote {len(rows)} per-item rows to {path}")


def _export_formats(spec: str) -> list[str]:
    from bindlab.exports import parse_formats

    try:
        return parse_formats(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--export", metavar="DIR", help="also write the results as files into DIR: tables as CSV + JSON "
                                                   "(with provenance), figures as PNG + SVG + HTML, per-item JSONL")
    p.add_argument("--export-formats", type=_export_formats, default="all",
                   help="with --export: comma-separated subset of csv,json,jsonl,png,svg,html (default all)")


def _write_export(a: argparse.Namespace, build: Callable[[], Any], prov: dict[str, Any]) -> None:
    """``--export DIR``: write ``build()`` (a :class:`bindlab.exports.ResultView`) through :mod:`bindlab.exports`."""
    if getattr(a, "export", None):
        from bindlab.exports import write_view

        w = write_view(build(), a.export, prov, a.export_formats)
        print(f"exported {len(w.paths)} files to {a.export}")
        for note in w.notes:
            print(f"note: {note}", file=sys.stderr)


# --- generate ----------------------------------------------------------------------------------------------------
def cmd_generate_saber(a: argparse.Namespace) -> None:
    from bindlab.data.saber import generate_saber, parse_sizes, write_benchmark

    sizes = parse_sizes(a.sizes)
    t = time.perf_counter()
    settings = {"seed": a.seed, "per_size": a.per_size, "sizes": sizes, "images": a.images}
    if a.images:
        from tqdm import tqdm

        from bindlab.data.render import RENDER_VOCAB
        from bindlab.data.saber_images import render_mcq_images

        questions = generate_saber(per_size=a.per_size, sizes=sizes, seed=a.seed, vocab=RENDER_VOCAB)
        with tqdm(total=5 * len(questions), desc="rendering", unit="img") as bar:
            n = render_mcq_images(questions, a.out, size=a.size, workers=a.workers, seed=a.seed,
                                  progress=lambda done, total: bar.update(done - bar.n))
        settings.update(image_size=a.size, vocab="renderable")
        print(f"rendered {n} new images ({5 * len(questions) - n} already there) at {a.size}px")
    else:
        questions = generate_saber(per_size=a.per_size, sizes=sizes, seed=a.seed)
    path = write_benchmark(a.out, questions, settings)
    print(f"generated {len(questions)} questions (sizes {sizes[0]}-{sizes[-1]}, {a.per_size} per size, seed {a.seed}) "
          f"in {time.perf_counter() - t:.1f}s -> {path}")


# --- eval --------------------------------------------------------------------------------------------------------
def _load_questions(a: argparse.Namespace):
    from bindlab.data.schema import load_mcqs

    questions, report = load_mcqs(a.data, strict=not a.skip_bad)
    if report.skipped:
        print(f"warning: {report.summary()}", file=sys.stderr)
    if a.limit:
        questions = questions[: a.limit]
    return questions, report


def _eval(a: argparse.Namespace, evaluate: Callable, kind: str) -> None:
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.mcq import parse_pairings
    from bindlab.provenance import provenance

    pairings = parse_pairings(a.pairings)
    encoder = load_encoder(a.model, device=a.device, batch_size=a.batch_size)  # cheap: weights load on first use
    questions, report = _load_questions(a)
    t = time.perf_counter()
    results, rows = evaluate(questions, Path(a.data).parent, encoder, pairings)
    elapsed = time.perf_counter() - t
    settings = {"kind": kind, "pairings": pairings, "limit": a.limit, "batch_size": a.batch_size,
                "skipped_lines": len(report.skipped), "seconds": round(elapsed, 3)}
    out = {"pairings": results, "provenance": provenance(a.data, encoder, settings)}
    for p, r in results.items():
        if kind == "mcq":
            by_n = " ".join(f"{n}:{v:.3f}" for n, v in r["by_n"].items())
            print(f"{encoder.id} {p}: accuracy {r['accuracy']:.3f} (n={r['n']}, chance 0.25) | by N {by_n}")
        else:
            m = r["map"]
            print(f"{encoder.id} {p}: mAP {m['all']:.3f} (independent {m['independent']}, nested {m['nested']}) "
                  f"R@1 {r['r@1']:.3f} R@5 {r['r@5']:.3f}")
    _write_json(a.out, out)
    _write_per_item(a.per_item, rows)
    from bindlab import exports

    build = exports.mcq_export if kind == "mcq" else exports.retrieval_export
    _write_export(a, lambda: build(results, rows), out["provenance"])


def cmd_eval_mcq(a: argparse.Namespace) -> None:
    from bindlab.eval.mcq import evaluate_mcq

    _eval(a, evaluate_mcq, "mcq")


def cmd_eval_retrieval(a: argparse.Namespace) -> None:
    from bindlab.eval.retrieval import evaluate_retrieval

    _eval(a, evaluate_retrieval, "retrieval")


# --- models / bench ----------------------------------------------------------------------------------------------
def cmd_models(a: argparse.Namespace) -> None:
    from bindlab.encoders.base import backends
    from bindlab.encoders.presets import list_models

    rows = list_models()
    width = max(len(r["id"]) for r in rows)
    for r in rows:
        mark = "yes" if r["loadable"] else "no "
        print(f"{r['id']:<{width}}  {mark}  {r['description']} — {r['reason']}")
    print("\nbackends: " + "; ".join(f"{k} ({v})" for k, v in backends().items()))
    _write_json(a.out, {"models": rows, "backends": backends()})


def cmd_bench(a: argparse.Namespace) -> None:
    from bindlab.bench import run_bench

    result = run_bench(quick=a.quick, model=a.model, only=a.only.split(",") if a.only else None)
    print(json.dumps(result, indent=2))
    _write_json(a.out, result)


# --- parser ------------------------------------------------------------------------------------------------------
@dataclass
class Groups:
    """Where commands attach: top-level commands, ``generate <kind>`` and ``eval <kind>``."""

    top: Any
    generate: Any
    eval: Any


def _eval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, help="MCQ JSONL file (e.g. DIR/mcq.jsonl)")
    p.add_argument("--model", required=True, help="encoder id, e.g. minilm, bow, hf:openai/clip-vit-base-patch32")
    p.add_argument("--pairings", default="tt", help="comma-separated subset of tt,ti,it,ii (query→candidates)")
    p.add_argument("--out", help="write results JSON here")
    p.add_argument("--per-item", help="write every question's scores as JSONL here")
    p.add_argument("--device", default="auto", help="auto|cpu|cuda|cuda:N|mps")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--limit", type=int, default=0, help="evaluate only the first N questions")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed lines (reported) instead of refusing the file")
    _export_args(p)


def _add_saber(g: Groups) -> None:
    p = g.generate.add_parser("saber", help="SABER-style 4-way binding MCQs -> DIR/mcq.jsonl")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--per-size", type=int, default=200, help="questions per scene size (half independent, half nested)")
    p.add_argument("--sizes", default="2-10", help="scene sizes, e.g. 2-10 or 2,3,5")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--images", action="store_true",
                   help="also render the query and candidate images (renderable vocabulary; resumable)")
    p.add_argument("--size", type=int, default=256, help="image side in pixels (with --images)")
    p.add_argument("--workers", type=int, default=2, help="rendering processes (with --images)")
    p.set_defaults(func=cmd_generate_saber)

    m = g.eval.add_parser("mcq", help="4-way MCQ accuracy (tie-aware) by N and subset")
    _eval_args(m)
    m.set_defaults(func=cmd_eval_mcq)
    r = g.eval.add_parser("retrieval", help="pooled-gallery retrieval: mAP, R@1, R@5, containment diagnostics")
    _eval_args(r)
    r.set_defaults(func=cmd_eval_retrieval)


def _add_models_and_bench(g: Groups) -> None:
    mo = g.top.add_parser("models", help="list known encoder ids and whether they load here")
    mo.add_argument("--out")
    mo.set_defaults(func=cmd_models)

    b = g.top.add_parser("bench", help="measure pipeline overhead, cache speedup and throughput (JSON)")
    b.add_argument("--quick", action="store_true", help="smaller workloads (seconds instead of minutes)")
    b.add_argument("--model", default="minilm", help="text encoder to benchmark")
    b.add_argument("--only", help="comma-separated section names (default: all)")
    b.add_argument("--out")
    b.set_defaults(func=cmd_bench)


def cmd_attention(a: argparse.Namespace) -> None:
    from bindlab.analysis.attention import load_caption_sets, per_item_rows, results_json, run_attention
    from bindlab.encoders.base import load_encoder
    from bindlab.provenance import provenance

    sets = load_caption_sets(a.data, limit=a.limit)
    t = time.perf_counter()
    encoder = load_encoder(a.model, device=a.device)
    runs = run_attention(encoder, sets, a.direction)
    compare = None
    if a.compare:
        enc2 = load_encoder(a.compare, device=a.device)
        compare = (enc2, run_attention(enc2, sets, a.direction))
    res = results_json(encoder, runs, a.direction, compare, seed=a.seed)
    elapsed = time.perf_counter() - t
    for name, s in res["sets"].items():
        ratio = res["compare"]["ratio"][name].get("ratio") if compare else None
        print(f"{encoder.id} · {name}: binding margin per layer ({a.direction}, {s['n_captions']} captions, "
              f"{s['n_skipped']} skipped; 95% bootstrap CI)" + (f"; ratio = {compare[0].id} / {encoder.id}" if compare else ""))
        for i, layer in enumerate(s["layers"]):
            line = f"  layer {layer:>2}: {_fmt(s['margin_mean'][i])}  [{_fmt(s['ci_low'][i])}, {_fmt(s['ci_high'][i])}]"
            if compare:
                line += f"  {compare[0].id}: {_fmt(res['compare']['sets'][name]['margin_mean'][i])}"
                line += f"  ratio {_fmt(ratio[i], '.2f') if ratio else 'n/a'}"
            print(line)
    settings = {"direction": a.direction, "limit": a.limit, "compare": a.compare, "n_boot": 1000,
                "seconds": round(elapsed, 3)}
    res["provenance"] = provenance(a.data, encoder, settings, a.seed)
    _write_json(a.out, res)
    _write_per_item(a.per_item, per_item_rows(runs))
    from bindlab.exports import attention_export

    _write_export(a, lambda: attention_export(res, per_item_rows(runs)), res["provenance"])


def _fmt(x: float | None, spec: str = "+.4f") -> str:
    return "nan" if x is None else format(x, spec)


def _add_attention(g: Groups) -> None:
    p = g.top.add_parser("attention", help="attention binding margin per layer (own minus other attributes)")
    p.add_argument("--model", required=True, help="encoder with a text transformer: minilm, toy:clip, hf:…, qwen3vl:…")
    p.add_argument("--data", required=True, help="MCQ JSONL (query texts), triplets JSONL (queries + positives) or "
                                                 "captions JSONL ({\"text\", \"bindings\"} per line)")
    p.add_argument("--limit", type=int, default=0, help="first N captions of each caption set (0 = all)")
    p.add_argument("--compare", help="a second encoder id; prints and writes the per-layer ratio second / first")
    p.add_argument("--direction", default="later_to_earlier", choices=["later_to_earlier", "earlier_to_later"],
                   help="later_to_earlier (any model) or earlier_to_later (bidirectional models only)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--device", default="auto", help="auto|cpu|cuda|cuda:N|mps")
    p.add_argument("--out", help="write results JSON here")
    p.add_argument("--per-item", help="write every caption's per-layer margins as JSONL here")
    _export_args(p)
    p.set_defaults(func=cmd_attention)


# --- triplets, finetune, jobs ------------------------------------------------------------------------------------
def cmd_generate_triplets(a: argparse.Namespace) -> None:
    from bindlab.data.triplets import generate_triplets, write_triplets

    rows, stats = generate_triplets(a.n, seed=a.seed, engine=a.engine,
                                    progress=lambda i, n: print(f"  {i}/{n} examples", file=sys.stderr))
    paths = write_triplets(a.out, rows, stats)
    splits = ", ".join(f"{k} {v}" for k, v in stats["splits"].items())
    rejected = ", ".join(f"{k} {v}" for k, v in stats["rejected"].items()) or "none"
    print(f"generated {stats['n_rows']} triplet rows ({stats['n_examples']} examples, seed {a.seed}, "
          f"engine {stats['engine']}) in {stats['seconds']:.1f}s -> {paths['triplets']}")
    print(f"splits: {splits}")
    print(f"rejected examples: {stats['n_rejected_examples']} of {stats['attempts']} attempts; by reason: {rejected}")


_FT_KEYS = ("model", "data", "epochs", "max_steps", "batch_size", "lr", "weight_decay", "margin", "lora_rank",
            "lora_alpha", "lines_a", "seed", "device", "eval_rows", "num_processes")


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
    from bindlab.jobs.manager import JobManager

    manager = JobManager()
    job_id = manager.submit(_finetune_config(a))
    print(f"job {job_id} submitted; it will produce the model lora:{job_id} (and lora:{job_id}/unscaled)")
    if a.background:
        print(f"follow it with: python -m bindlab jobs show {job_id}")
        return
    last = ""
    try:
        while True:
            st = manager.show(job_id, log_lines=0)
            line = _print_progress(st["status"], st["progress"])
            if line != last:
                print(line, flush=True)
                last = line
            if st["status"]["state"] in ("done", "failed", "cancelled"):
                break
            time.sleep(1.0)
    except KeyboardInterrupt:
        manager.cancel(job_id)
        raise ValueError(f"interrupted: job {job_id} cancelled (resume it with 'python -m bindlab jobs resume {job_id}')")
    st = manager.show(job_id)
    if st["status"]["state"] != "done":
        raise ValueError(f"job {job_id} {st['status']['state']}: {st['status'].get('message')}\n{st['log_tail']}")
    _print_finetune_result(st["result"])
    _write_json(a.out, st["result"])


def _print_finetune_result(res: dict[str, Any]) -> None:
    from bindlab.train.compare import result_rows

    print(f"LiNeS a = {res['lines']['a']} ({res['lines']['chosen_on']}); {res['steps']} steps, "
          f"{res['triplets_per_s']} triplets/s")
    for row in result_rows(res):
        print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))


def cmd_jobs(a: argparse.Namespace) -> None:
    from bindlab.jobs.manager import JobManager

    if a.action == "_run":
        from bindlab.jobs.runner import run_job

        raise SystemExit(run_job(a.job))
    manager = JobManager()
    if a.action == "list":
        jobs = manager.list()
        if not jobs:
            print(f"no jobs under {manager.root}")
        for j in jobs:
            print(f"{j['id']}  {j['model_id']:<30}  {j['state']:<9}  {j['base_model']}  "
                  f"{_print_progress(j, j['progress']) if j['state'] == 'running' else j.get('message', '')}")
        _write_json(a.out, {"jobs": jobs})
        return
    if not a.job:
        raise ValueError(f"'jobs {a.action}' needs a job id; see 'python -m bindlab jobs list'")
    if a.action == "show":
        info = manager.show(a.job)
        st = info["status"]
        print(f"{st['id']}  {st['model_id']}  {st['state']}  base {st['base_model']}  created {st['created']}")
        print(_print_progress(st, info["progress"]))
        if info["result"]:
            _print_finetune_result(info["result"])
        if st["state"] == "failed" or a.log:
            print("--- log tail ---\n" + (st.get("log_tail") or info["log_tail"]))
        _write_json(a.out, info)
    elif a.action == "cancel":
        st = manager.cancel(a.job)
        print(f"{st['id']}: {st['state']} ({st['message']})")
    elif a.action == "resume":
        st = manager.resume(a.job)
        print(f"{st['id']}: {st['state']} ({st['message']})")
    elif a.action == "compare":
        from bindlab.train.compare import compare_job, format_compare

        if not a.data:
            raise ValueError("'jobs compare' needs --data MCQ.jsonl (e.g. from 'python -m bindlab generate saber')")
        res = compare_job(a.job, a.data, pairings=a.pairings, limit=a.limit,
                          attention_limit=None if a.no_attention else a.attention_limit)
        print(format_compare(res))
        _write_json(a.out, res)
        from bindlab.exports import compare_export
        from bindlab.train.compare import mcq_table

        _write_export(a, lambda: compare_export(mcq_table(res), res["triplets"], manager.metrics(a.job),
                                                res.get("attention")), res["provenance"])


def _add_finetune(g: Groups) -> None:
    t = g.generate.add_parser("triplets", help="text finetuning triplets (SABER appendix B) -> DIR/triplets.jsonl")
    t.add_argument("--out", required=True, help="output folder")
    t.add_argument("--n", type=int, default=100_000, help="triplet rows (even; two per example)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--engine", default="template", help="template (offline) or hf:ORG/NAME (a local instruct LM)")
    t.set_defaults(func=cmd_generate_triplets)

    f = g.top.add_parser("finetune", help="LoRA-finetune an encoder on binding triplets, then LiNeS (a job)")
    f.add_argument("--model", help="base encoder id: minilm, st:/folder, toy:shared, hf:…, qwen3vl:…")
    f.add_argument("--data", help="triplets folder from 'generate triplets'")
    f.add_argument("--config", help="job.json with the same keys (model, data, epochs, lora_rank, …); flags override")
    f.add_argument("--epochs", type=int)
    f.add_argument("--max-steps", type=int, help="cap on optimizer steps (default: no cap)")
    f.add_argument("--batch-size", type=int, help="triplets per step (default 16)")
    f.add_argument("--lr", type=float, help="AdamW learning rate (default 5e-5)")
    f.add_argument("--weight-decay", type=float, help="AdamW weight decay (default 0.01)")
    f.add_argument("--margin", type=float, help="hinge margin (default 0.05)")
    f.add_argument("--lora-rank", type=int, help="LoRA r (default 4)")
    f.add_argument("--lora-alpha", type=float, help="LoRA alpha (default 4)")
    f.add_argument("--lines-a", help="LiNeS a in [0, 1], or auto (chosen on validation; default)")
    f.add_argument("--seed", type=int)
    f.add_argument("--device", help="auto|cpu|cuda|cuda:N|mps")
    f.add_argument("--eval-rows", type=int, help="rows per split used for evaluation (default 400, 0 = all)")
    f.add_argument("--num-processes", type=int, help=">1: data parallel under 'accelerate launch'")
    f.add_argument("--background", action="store_true", help="start the job and return at once")
    f.add_argument("--out", help="write the result JSON here (foreground only)")
    f.set_defaults(func=cmd_finetune)

    j = g.top.add_parser("jobs", help="background jobs: list | show ID | cancel ID | resume ID | compare ID --data F")
    j.add_argument("action", choices=["list", "show", "cancel", "resume", "compare", "_run"], metavar="ACTION",
                   help="list | show | cancel | resume | compare (_run DIR is what a job process executes)")
    j.add_argument("job", nargs="?", help="job id (as printed by finetune / jobs list)")
    j.add_argument("--data", help="compare: MCQ JSONL to score base vs finetuned on")
    j.add_argument("--pairings", default="auto", help="compare: tt,ti,it,ii or auto (all the model and data allow)")
    j.add_argument("--limit", type=int, default=0, help="compare: first N questions only")
    j.add_argument("--attention-limit", type=int, default=200,
                   help="compare: attention binding margins per layer on the first N query captions (0 = all)")
    j.add_argument("--no-attention", action="store_true", help="compare: skip the attention margins")
    j.add_argument("--log", action="store_true", help="show: print the log tail")
    j.add_argument("--out", help="write JSON here")
    _export_args(j)  # used by compare
    j.set_defaults(func=cmd_jobs)


# --- factor grids and matched visual grounding ----------------------------------------------------------------
def cmd_generate_factors(a: argparse.Namespace) -> None:
    from tqdm import tqdm

    from bindlab.data.factors import generate_grid, spec_from_args

    spec = spec_from_args(a.shapes, a.hues, a.patterns, a.contexts, a.replicas, a.size, a.seed)
    t = time.perf_counter()
    with tqdm(total=spec.n_images, desc="rendering", unit="img") as bar:
        index, n = generate_grid(a.out, spec, workers=a.workers, progress=lambda done, total: bar.update(1))
    print(f"factor grid {len(spec.shapes)} shapes x {len(spec.hues)} hues x {len(spec.patterns)} patterns x "
          f"{spec.n_contexts} contexts x {spec.replicas} replicas = {len(index)} images ({n} rendered now, "
          f"{len(index) - n} already there) at {spec.size}px in {time.perf_counter() - t:.1f}s -> "
          f"{index.root / 'index.csv'}; splits {index.splits}")


def cmd_ground(a: argparse.Namespace) -> None:
    from bindlab.analysis.grounding_session import factor_report, open_session
    from bindlab.data.factors import FACTORS
    from bindlab.provenance import provenance

    factors = list(FACTORS) if a.factor == "all" else [f.strip() for f in a.factor.split(",") if f.strip()]
    bad = [f for f in factors if f not in FACTORS]
    if bad or not factors:
        raise ValueError(f"--factor {a.factor!r}: choose from {', '.join(FACTORS)}, a comma list or 'all'")
    alpha: str | float = a.alpha
    if a.alpha != "auto":
        try:
            alpha = float(a.alpha)
        except ValueError:
            raise ValueError(f"--alpha must be 'auto' or a number in [0, 8], got {a.alpha!r}") from None
    t = time.perf_counter()
    session = open_session(a.data, a.model, device=a.device, batch_size=a.batch_size)
    results = {}
    for f in factors:
        r = factor_report(session, f, alpha, controls=not a.no_controls, n_boot=a.n_boot, seed=a.seed)
        results[f] = r
        nat, gr = r["test"]["native"], r["test"]["grounded"]
        print(f"{session.encoder.id} {f} ({len(r['values'])} values, test {r['n_images']['test']} images): "
              f"macro-mAP {nat['macro_map']:.3f} -> {gr['macro_map']:.3f}, top-1 {nat['top1']:.3f} -> "
              f"{gr['top1']:.3f} at alpha {r['alpha']:.2f} ({r['alpha_source']}; validation picks "
              f"{r['validation']['alpha']:.2f})")
        if "controls" in r:
            c = r["controls"]["test"]
            print("  controls (macro-mAP): " + ", ".join(
                f"{k} {v['macro_map']:.3f}" for k, v in c.items() if v is not None))
    settings = {"factors": factors, "alpha": a.alpha, "controls": not a.no_controls, "n_boot": a.n_boot,
                "splits": session.index.splits, "seconds": round(time.perf_counter() - t, 3)}
    prov = provenance(Path(a.data) / "index.csv" if Path(a.data).is_dir() else a.data, session.encoder, settings,
                      a.seed)
    _write_json(a.out, {"factors": results, "provenance": prov})
    from bindlab.analysis.grounding_session import ALPHA_GRID
    from bindlab.exports import grounding_export

    _write_export(a, lambda: grounding_export(results, {f: session.state(f).margin_curve(ALPHA_GRID) for f in factors}),
                  prov)


def _add_grounding(g: Groups) -> None:
    p = g.generate.add_parser("factors", help="FactorAtlas-style grid shape x hue x pattern x context x replica "
                                              "-> DIR/index.csv (resumable)")
    p.add_argument("--out", required=True, help="output folder")
    for name, n in (("shapes", 8), ("hues", 12), ("patterns", 10)):
        p.add_argument(f"--{name}", help=f"N = the first N of the {n} defaults, or a comma-separated list")
    p.add_argument("--contexts", type=int, default=12, help="nuisance contexts (splits: 1/3 calibration, "
                                                             "1/6 validation, rest test; 12 -> 0-3 / 4-5 / 6-11)")
    p.add_argument("--replicas", type=int, default=2, help="renderer seeds per context")
    p.add_argument("--size", type=int, default=96, help="image side in pixels")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2, help="rendering processes")
    p.set_defaults(func=cmd_generate_factors)

    q = g.top.add_parser("ground", help="matched visual grounding on a factor grid: native vs grounded AP per value")
    q.add_argument("--data", required=True, help="factor grid folder (with index.csv)")
    q.add_argument("--model", required=True, help="image+text encoder id, e.g. toy:clip or hf:/path/to/clip")
    q.add_argument("--factor", default="all", help="pattern, hue, shape, a comma list, or all")
    q.add_argument("--alpha", default="auto", help="auto (chosen on validation) or a fixed number in [0, 8]")
    q.add_argument("--no-controls", action="store_true", help="skip the controls (attraction, mismatched, ...)")
    q.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples of the selective-grounding gate")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--out", help="write results JSON here")
    _export_args(q)
    q.add_argument("--device", default="auto", help="auto|cpu|cuda|cuda:N|mps")
    q.add_argument("--batch-size", type=int, default=64)
    q.set_defaults(func=cmd_ground)


# --- pairs: CompoSET-style single-edit pairs and the published pairwise benchmarks ---------------------------------
def cmd_generate_composet(a: argparse.Namespace) -> None:
    from bindlab.data.composet import generate_composet

    t = time.perf_counter()
    path = generate_composet(a.out, scenes=a.scenes, foils_per_scene=a.foils_per_scene, seed=a.seed, size=a.size,
                             workers=a.workers)
    meta = json.loads((path.parent / "meta.json").read_text())
    px = meta["pixels_changed"]
    print(f"generated {meta['pairs']} pairs over {a.scenes} scenes ({meta['discarded_foils']} foils discarded) in "
          f"{time.perf_counter() - t:.1f}s -> {path}; pixels changed per pair: mean {px['mean']:.3f}, "
          f"median {px['median']:.3f}")


def cmd_eval_pairs(a: argparse.Namespace) -> None:
    from bindlab.data.pairs_schema import load_pairs
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.pairs import by_edit_type_rows, evaluate_pairs, format_table
    from bindlab.provenance import provenance

    encoder = load_encoder(a.model, device=a.device, batch_size=a.batch_size)
    pairs, report = load_pairs(a.data, strict=not a.skip_bad)
    if report.skipped:
        print(f"warning: {report.summary()}", file=sys.stderr)
    pairs = pairs[: a.limit] if a.limit else pairs
    t = time.perf_counter()
    summary, rows = evaluate_pairs(pairs, Path(a.data).parent, encoder, a.verbosity, seed=a.seed)
    settings = {"kind": "pairs", "verbosity": a.verbosity, "limit": a.limit, "batch_size": a.batch_size,
                "skipped_lines": len(report.skipped), "seconds": round(time.perf_counter() - t, 3)}
    o, c = summary["overall"], summary["controls"]
    print(f"{encoder.id} on {len(pairs)} pairs ({'/'.join(summary['levels'])}): I2T {o['i2t']:.3f} T2I {o['t2i']:.3f} "
          f"Group {o['group']:.3f} (95% CI {o['group_ci95'][0]:.3f}-{o['group_ci95'][1]:.3f}; chance .25/.25/.167)")
    print(format_table(by_edit_type_rows(summary)))
    sp = summary["scene_edit_split"]
    print(f"scene-hard / edit-hard split over {sp['counts']['scenes']} scenes: {sp['counts']} "
          f"(both expected under independence {sp['both_expected_under_independence']:.4f} of scenes); "
          f"within-scene share of margin variance {sp['within_scene_variance_share']:.3f}")
    print(f"within-pair image cosine {c['within_pair_image_cosine']['mean']:.4f} vs across scenes "
          f"{c['across_scene_image_cosine']:.4f}" + (f"; pixels changed {c['pixels_changed']['mean']:.3f}"
                                                    if c["pixels_changed"] else ""))
    prov = provenance(a.data, encoder, settings, a.seed)
    _write_json(a.out, {**summary, "provenance": prov})
    _write_per_item(a.per_item, rows)
    from bindlab.exports import pairs_export

    _write_export(a, lambda: pairs_export(summary, rows, encoder.id), prov)


def cmd_eval_benchmark(a: argparse.Namespace) -> None:
    from bindlab.data.adapters import load_benchmark
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.benchmarks import evaluate_benchmark
    from bindlab.provenance import provenance

    encoder = load_encoder(a.model, device=a.device, batch_size=a.batch_size)
    bench = load_benchmark(a.name, data=a.data, split=a.split, limit=a.limit, images=a.images, source=a.source)
    t = time.perf_counter()
    summary, rows = evaluate_benchmark(bench, encoder, task=a.task, seed=a.seed)
    nm, v = summary["native_metric"], summary["validity"]
    shown = {k: (round(x, 4) if isinstance(x, float) else x) for k, x in nm.items() if k != "name"}
    print(f"{encoder.id} on {bench.name} ({summary['n']} items from {bench.source}): {nm['name']} {shown}")
    print(f"validity: {v['same_bag_items']} items ({v['same_bag_share']:.1%}) have positive and negative captions "
          f"with the same bag of words; text-only bag-of-words score {summary['bow_text_only']}")
    settings = {"kind": "benchmark", "benchmark": bench.name, "source": bench.source, "split": a.split,
                "task": summary["task"], "limit": a.limit, "seconds": round(time.perf_counter() - t, 3),
                "manifest": {k: bench.manifest.get(k) for k in ("license", "citation", "url")}}
    dataset = bench.source if Path(bench.source).is_file() else None
    _write_json(a.out, {**summary, "provenance": provenance(dataset, encoder, settings, a.seed)})
    _write_per_item(a.per_item, rows)


def _add_pairs(g: Groups) -> None:
    p = g.generate.add_parser("composet", help="CompoSET-style same-scene single-edit pairs -> DIR/pairs.jsonl + images")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--scenes", type=int, default=80, help="base scenes (4-10 objects each)")
    p.add_argument("--foils-per-scene", type=int, default=22, help="foils per scene, each one edit (>= 15)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", type=int, default=256, help="image side in pixels")
    p.add_argument("--workers", type=int, default=2, help="rendering processes")
    p.set_defaults(func=cmd_generate_composet)

    e = g.eval.add_parser("pairs", help="Winoground-style 2x2 scoring of a Pairs file: I2T, T2I, Group by edit type")
    e.add_argument("--data", required=True, help="Pairs JSONL file (e.g. DIR/pairs.jsonl)")
    e.add_argument("--model", required=True, help="image+text encoder id, e.g. toy:clip, hf:/path/to/clip")
    e.add_argument("--verbosity", default="all", help="caption level: short|medium|long|all")
    e.add_argument("--out", help="write results JSON here")
    e.add_argument("--per-item", help="write every pair's 2x2 scores as JSONL here")
    _export_args(e)
    e.add_argument("--device", default="auto", help="auto|cpu|cuda|cuda:N|mps")
    e.add_argument("--batch-size", type=int, default=64)
    e.add_argument("--limit", type=int, default=0, help="score only the first N pairs")
    e.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    e.add_argument("--skip-bad", action="store_true", help="skip malformed lines (reported) instead of refusing the file")
    e.set_defaults(func=cmd_eval_pairs)

    b = g.eval.add_parser("benchmark", help="a published benchmark (data_manifests/) with its native metric + "
                                            "bag-of-words validity check")
    b.add_argument("--name", required=True, help="winoground | colorswap | sugarcrepe | sugarcrepe_pp | "
                                                 "aro_vg_attribution, or a manifest .json path")
    b.add_argument("--model", required=True, help="encoder id (image+text, or text-only for --task tot)")
    b.add_argument("--data", help="local copy in the published format (overrides the manifest's path)")
    b.add_argument("--images", help="image folder (COCO val2017 for SugarCrepe/SugarCrepe++, VG images for ARO)")
    b.add_argument("--split", help="split name(s), comma-separated (default: all)")
    b.add_argument("--task", help="itt (image-to-text, default) or tot (SugarCrepe++ text-only)")
    b.add_argument("--source", default="auto", help="auto|local|hub")
    b.add_argument("--limit", type=int, default=0, help="at most N items (per split)")
    b.add_argument("--out", help="write results JSON here")
    b.add_argument("--per-item", help="write per-item pass/fail as JSONL here")
    b.add_argument("--device", default="auto")
    b.add_argument("--batch-size", type=int, default=64)
    b.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    b.set_defaults(func=cmd_eval_benchmark)


def cmd_train_toy(a: argparse.Namespace) -> None:
    from bindlab.train.toy_train import TqdmProgress, TrainConfig, train_toy

    model = {k: v for k, v in {"width": a.width, "layers": a.layers, "text_layers": a.layers, "heads": a.heads,
                               "image_size": a.image_size, "patch_size": a.patch_size, "stem": a.stem,
                               "embed_dim": a.width}.items() if v}
    cfg = TrainConfig(arch=a.arch, steps=a.steps, batch_size=a.batch_size, seed=a.seed, pool_size=a.pool_size,
                      hard_share=a.hard_share,
                      checkpoint_every=a.checkpoint_every, threads=a.threads, lr=a.lr, model=model,
                      warmup=min(60, max(1, a.steps // 10)))
    out = Path(a.out)
    record = train_toy(cfg, out, [TqdmProgress(disable=a.no_progress)])
    if not record["finished"]:
        print(f"stopped at step {record['steps']}/{cfg.steps}; run the same command again to resume from {out}/checkpoint")
        return
    print(f"trained toy:{a.arch} ({record['parameters']:,} parameters) for {record['steps']} steps in "
          f"{record['train_seconds']:.0f}s (+{record['render_seconds']:.0f}s rendering); final loss "
          f"{record['final_loss']:.3f} -> toy:{out.resolve()}")
    if a.eval_sample:
        cmd_eval_toy(argparse.Namespace(model=f"toy:{out.resolve()}", sample=a.eval_sample, per_size=a.eval_per_size,
                                        out=str(out / "eval.json"), seed=a.seed))


def cmd_eval_toy(a: argparse.Namespace) -> None:
    from bindlab.encoders.base import load_encoder
    from bindlab.provenance import provenance
    from bindlab.train.toy_eval import evaluate_toy, summary_lines

    encoder = load_encoder(a.model)
    t = time.perf_counter()
    result = evaluate_toy(encoder, sample=a.sample, per_size=a.per_size, seed=a.seed)
    settings = {"sample": a.sample, "per_size": a.per_size, "seconds": round(time.perf_counter() - t, 1)}
    for line in summary_lines(result):
        print(line)
    _write_json(a.out, {**result, "provenance": provenance(None, encoder, settings, a.seed)})
    if getattr(a, "card", False):
        from bindlab.train.toy_card import write_card

        folder = getattr(encoder, "folder", None)
        if folder is None or not (Path(folder) / "training.json").is_file():
            raise ValueError(f"--card needs a toy model folder with training.json; {a.model} has none")
        t = json.loads((Path(folder) / "training.json").read_text())["train_config"]
        command = (f"python -m bindlab train toy --arch {t['arch']} --out DIR --steps {t['steps']} --seed {t['seed']}"
                   f" --batch-size {t['batch_size']} --lr {t['lr']} --pool-size {t['pool_size']}")
        print(f"wrote {write_card(folder, a.model, result, command, a.note or [])}")


def _add_toy(g: Groups) -> None:
    tr = g.top.add_parser("train", help="train a model").add_subparsers(dest="what", required=True, metavar="KIND")
    p = tr.add_parser("toy", help="train a toy vision-language model (toy:clip / toy:shared) on rendered scenes")
    p.add_argument("--arch", choices=["clip", "shared"], required=True, help="clip = two towers; shared = one stack")
    p.add_argument("--out", required=True, help="output folder (checkpoints; the final model loads as toy:/path)")
    p.add_argument("--steps", type=int, default=6000, help="optimizer steps (6000 = the shipped models)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1.5e-3)
    p.add_argument("--pool-size", type=int, default=10000, help="pre-rendered training scenes (cached)")
    p.add_argument("--checkpoint-every", type=int, default=100)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a busy 2-core machine)")
    p.add_argument("--width", type=int, default=0, help="override the hidden width (tests use tiny models)")
    p.add_argument("--layers", type=int, default=0, help="override the number of blocks")
    p.add_argument("--heads", type=int, default=0, help="override the number of attention heads")
    p.add_argument("--image-size", type=int, default=0, help="override the image side in pixels")
    p.add_argument("--patch-size", type=int, default=0, help="override the ViT patch side in pixels (multiple of 4)")
    p.add_argument("--stem", choices=["deep", "light"], help="override the convolutional stem")
    p.add_argument("--hard-share", type=float, default=0.5, help="share of each batch in shape-hard groups "
                                                                  "(single objects sharing an attribute)")
    p.add_argument("--eval-sample", type=int, default=300, help="held-out single-object renders for the final "
                                                                 "evaluation (0 = skip it)")
    p.add_argument("--eval-per-size", type=int, default=10, help="MCQs per N = 2..10 in the final evaluation")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_train_toy)

    e = g.eval.add_parser("toy", help="single-object retrieval and image MCQs on rendered scenes (toy model card)")
    e.add_argument("--model", required=True, help="encoder id with text and images, e.g. toy:clip")
    e.add_argument("--sample", type=int, default=0, help="held-out single-object renders (0 = all 1008 shape x "
                                                         "attribute combinations)")
    e.add_argument("--per-size", type=int, default=40, help="MCQs per N = 2..10")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--out", help="write results JSON here")
    e.add_argument("--card", action="store_true", help="also write the model card README.md into the toy model's folder")
    e.add_argument("--note", action="append", help="a line for the card's training section (repeatable), e.g. the "
                                                   "machine's load during training")
    e.set_defaults(func=cmd_eval_toy)


# --- map ---------------------------------------------------------------------------------------------------------
def cmd_map(a: argparse.Namespace) -> None:
    from bindlab import exports
    from bindlab.analysis.embedding_map import (
        LayoutParams,
        build_map,
        cached_layout,
        layout_records,
        map_provenance,
        summary_line,
    )
    from bindlab.analysis.map_figure import map_html

    out = Path(a.out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--out {a.out!r} must be an .html file (the layout JSON is written next to it)")
    params = LayoutParams(n_neighbors=a.n_neighbors, min_dist=a.min_dist, metric=a.metric, seed=a.seed)
    t = time.perf_counter()
    data = build_map(a.data, a.model, a.n_objects, a.limit, a.seed)
    xy, hit = cached_layout(data, a.method, params)
    print(summary_line(data) + f" | {a.method} layout {'from cache' if hit else 'computed'} "
          f"in {time.perf_counter() - t:.1f}s")
    for note in data.notes:
        print(f"note: {note}")
    title = f"{data.model} · {a.method.upper()} of {len(data.points)} points (circle = text, square = image)"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(map_html(data.points, xy, a.color, title, thumb_size=a.thumb_size), encoding="utf-8")
    print(f"wrote {out}")
    prov = map_provenance(data, {"method": a.method, "params": vars(params), "n_objects": a.n_objects,
                                 "limit": a.limit, "color": a.color}, a.seed)
    _write_json(str(out.with_suffix(".json")), {"points": layout_records(data, xy), "notes": data.notes,
                                                 "provenance": prov})
    _write_export(a, lambda: exports.map_export(data, {a.method: xy}, a.color), prov)


def _add_map(g: Groups) -> None:
    from bindlab.analysis.embedding_map import COLOR_BY, DEFAULT_LIMIT, METHODS, METRICS

    p = g.top.add_parser("map", help="UMAP/PCA map of the query and candidate embeddings of a SABER subset "
                                     "-> standalone HTML (+ layout JSON)")
    p.add_argument("--model", required=True, help="encoder id, e.g. minilm, bow, toy:clip (image points when it has images)")
    p.add_argument("--data", default="", help="MCQ JSONL file (default: the embedded mini benchmark, with images "
                                              "for image+text models)")
    p.add_argument("--n-objects", default="all", help="numbers of objects to keep, e.g. 2,3 or 2-4 (default all)")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="at most this many questions (seeded sample)")
    p.add_argument("--method", choices=METHODS, default="umap", help="layout (UMAP layouts are cached on disk)")
    p.add_argument("--color", choices=COLOR_BY, default="role", help="colour points by")
    p.add_argument("--n-neighbors", type=int, default=15, help="UMAP neighbourhood size")
    p.add_argument("--min-dist", type=float, default=0.1, help="UMAP minimum distance")
    p.add_argument("--metric", choices=METRICS, default="cosine", help="UMAP distance")
    p.add_argument("--seed", type=int, default=0, help="subset sampling and UMAP seed")
    p.add_argument("--thumb-size", type=int, default=64, help="hover thumbnail side in pixels (0 = none)")
    p.add_argument("--out", required=True, help="HTML file to write (map.html); the layout JSON goes next to it")
    _export_args(p)
    p.set_defaults(func=cmd_map)


# Each feature adds its commands with one function here; the order is the order of --help.
COMMAND_GROUPS: list[Callable[[Groups], None]] = [
    _add_saber,
    _add_models_and_bench,
    _add_attention,
    _add_finetune,
    _add_grounding,
    _add_pairs,
    _add_toy,
    _add_map,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bindlab", description="bindlab: attribute–object binding lab bench")
    parser.add_argument("--version", action="version", version=f"bindlab {__version__}")
    top = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    gen = top.add_parser("generate", help="generate a benchmark or dataset").add_subparsers(
        dest="what", required=True, metavar="KIND")
    ev = top.add_parser("eval", help="score an encoder on a benchmark").add_subparsers(
        dest="what", required=True, metavar="KIND")
    groups = Groups(top, gen, ev)
    for add in COMMAND_GROUPS:
        add(groups)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    from bindlab.data.schema import DataError
    from bindlab.encoders.base import EncoderError

    try:
        a.func(a)
    except (DataError, EncoderError, ValueError, FileNotFoundError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"error: {msg}", file=sys.stderr)
        return 2
    return 0
