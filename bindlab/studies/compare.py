"""Compare: several encoders on the same suite, one leaderboard (``compare``, the Compare tab).

:func:`run_compare` runs each model through the existing studies — SABER MCQ per pairing and N
(:func:`~bindlab.studies.browse.run_mcq`), pooled retrieval (:func:`~bindlab.studies.browse.run_retrieval`), 2x2
pairs per edit type (:func:`~bindlab.studies.pairs.run_pairs`) and any local published benchmark
(:func:`~bindlab.studies.benchmark.run_benchmark`) — and joins their results: a leaderboard with bootstrap 95 %
intervals, accuracy by N, scores by edit type, a per-question table (each model's credit and margin) for the
"A right, B wrong" diff, a cross-benchmark table ("above chance elsewhere, at chance here") and CompoSET's per-scene
agreement (:mod:`bindlab.analysis.agreement`).

Each model's result per task is cached on disk under ``$BINDLAB_HOME/compare/`` keyed by the encoder fingerprint,
the data's hash and the settings, so adding a model to a comparison scores only the new one. A model that cannot do
a task (a text-only encoder on image pairings or pairs) gets "n/a" there, with a note, instead of an error.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.analysis.agreement import scene_agreement
from bindlab.config import LIMIT_ENV, __version__, home, limits, public_mode
from bindlab.eval.mcq import PAIRINGS, parse_pairings
from bindlab.eval.metrics import bootstrap_ci, chance_label, task_chance
from bindlab.eval.pairs import parse_verbosity
from bindlab.provenance import provenance
from bindlab.studies.browse import get_encoder
from bindlab.studies.progress import Progress
from bindlab.studies.result import Result
from bindlab.studies.validate import check_device, data_input, input_path, nonneg_int, positive_int

TASKS = ("mcq", "retrieval", "pairs")  # plus "benchmark:NAME" or "benchmark:NAME=PATH"
PAIRS_CHANCE = {k: task_chance(f"pairs_{k}") for k in ("i2t", "t2i", "group")}


# --- the request ------------------------------------------------------------------------------------------------
def parse_models(spec: str | Sequence[str]) -> list[str]:
    """``"bow, minilm"`` or a list -> distinct stripped ids in order; at least two, at most
    ``limits().max_compare_models`` (``$BINDLAB_MAX_COMPARE_MODELS``; 8 locally, 4 in public mode)."""
    items = spec.split(",") if isinstance(spec, str) else list(spec or [])
    models = list(dict.fromkeys(str(m).strip() for m in items if str(m).strip()))
    if len(models) < 2:
        raise ValueError(f"models: give at least two encoder ids to compare, e.g. bow,minilm (got {str(spec)[:200]!r})")
    cap = limits().max_compare_models
    if cap and len(models) > cap:
        raise ValueError(
            f"models: {len(models)} encoders given; one comparison takes at most {cap} "
            f"({LIMIT_ENV['max_compare_models']}): compare fewer at once"
        )
    return models


def parse_suite(spec: str | Sequence[str]) -> list[str]:
    """``"mcq,pairs,benchmark:sugarcrepe_pp"`` or a list -> distinct task names; unknown ones refused."""
    items = spec.split(",") if isinstance(spec, str) else list(spec or [])
    suite = list(dict.fromkeys(str(t).strip() for t in items if str(t).strip()))
    if not suite:
        raise ValueError(f"suite: choose one or more of {', '.join(TASKS)}, benchmark:NAME[=PATH]")
    for t in suite:
        if t not in TASKS and not (t.startswith("benchmark:") and t.split(":", 1)[1].split("=", 1)[0].strip()):
            raise ValueError(
                f"suite: unknown task {t!r}; choose from {', '.join(TASKS)} or benchmark:NAME[=PATH] "
                "(NAME: winoground, colorswap, sugarcrepe, sugarcrepe_pp, aro_vg_attribution)"
            )
    return suite


@dataclass
class CompareRequest:
    """What ``compare`` and the Compare tab ask for; validated on construction.

    Raises:
        ValueError: fewer than two models, an unknown task, pairing or verbosity, ``limit`` < 0, ``batch_size`` < 1,
            a negative seed or an empty device, each named with the value given; in public mode, a benchmark that is
            not the name of a manifest or that comes with a path (one message, listing the names).
    """

    models: Sequence[str] | str  # encoder ids, e.g. "bow,minilm,toy:clip"; becomes a list
    suite: Sequence[str] | str = ("mcq",)  # mcq | retrieval | pairs | benchmark:NAME[=PATH]; becomes a list
    data: str | Path | None = (
        None  # MCQ JSONL; None = the embedded mini benchmark (with images if a pairing needs them)
    )
    pairs_data: str | Path | None = None  # Pairs JSONL; None = the embedded CompoSET-style mini set
    pairings: Sequence[str] | str = ("tt",)  # MCQ / retrieval pairings
    verbosity: str = "all"  # caption level of the pairs
    limit: int = 0  # first N questions / pairs / items per split; 0 = all
    seed: int = 0  # bootstrap seed
    batch_size: int | None = None
    device: str = "auto"
    use_cache: bool = True  # read and write the per-model results under $BINDLAB_HOME/compare

    def __post_init__(self) -> None:
        self.models = parse_models(self.models)
        self.suite = parse_suite(self.suite)
        self.pairings = parse_pairings(self.pairings)
        parse_verbosity(self.verbosity)
        self.limit = nonneg_int(self.limit, "limit")
        self.seed = nonneg_int(self.seed, "seed")
        if self.batch_size is not None:
            self.batch_size = positive_int(self.batch_size, "batch_size")
        self.device = check_device(self.device)
        self.data = str(self.data).strip() or None if self.data else None
        self.pairs_data = str(self.pairs_data).strip() or None if self.pairs_data else None
        for name, kind in (("data", "mcq"), ("pairs_data", "pairs")):  # inside the allowed roots; datasets read
            if getattr(self, name):
                setattr(self, name, str(data_input(getattr(self, name), name, kind)))
        for task in self.suite:  # a benchmark's name and local copy too, before any model loads
            if not task.startswith("benchmark:"):
                continue
            name, path = _benchmark_spec(task)
            if public_mode():  # a manifest's name only: no path to a manifest, no local copy by path
                from bindlab.data.adapters import benchmark_refused, check_benchmark_name

                if path:
                    raise ValueError(benchmark_refused())
                check_benchmark_name(name)
            elif path:
                input_path(path, "suite", must_exist=False)

    def settings(self) -> dict[str, Any]:
        return {
            "models": list(self.models),
            "suite": list(self.suite),
            "pairings": list(self.pairings),
            "verbosity": self.verbosity,
            "limit": self.limit,
            "seed": self.seed,
            "batch_size": self.batch_size,
        }


# --- the per-model cache ---------------------------------------------------------------------------------------
def cache_dir() -> Path:
    """``home()/compare``: one JSON file per (model fingerprint, data hash, task settings)."""
    return home() / "compare"


def _data_key(path: str | Path) -> str:
    from bindlab.data.schema import file_sha256

    p = Path(path)
    if p.is_file():
        return file_sha256(p)
    return f"{p.resolve()}@{p.stat().st_mtime if p.exists() else 'missing'}"  # a benchmark folder


# bumped when a cached result's contents change (2: per-question chance, unknown words; 3: benchmarks with splits
# headlined by their macro mean with per-split rows, Pairs scored by edit-type origin)
RESULT_FORMAT = 3


def cache_key(fingerprint: str, data: str | Path, settings: dict[str, Any]) -> str:
    """The cache file name of one model's result: sha256 of fingerprint, data hash, settings, bindlab version and
    :data:`RESULT_FORMAT`."""
    text = json.dumps(
        {
            "fingerprint": fingerprint,
            "data": _data_key(data),
            "settings": settings,
            "version": __version__,
            "format": RESULT_FORMAT,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _load_cached(path: Path) -> Result | None:
    """A cached result: a result file (:meth:`Result.load` also reads the entries written before that format)."""
    try:
        return Result.load(path)
    except (OSError, ValueError, TypeError):
        return None  # missing, partial, corrupt or of a newer format: recompute


def _store(path: Path, result: Result) -> None:
    try:
        result.save(path)  # atomic: temp file + rename
    except TypeError:
        pass  # a value a result file cannot hold: this run is not cached, never lost


def cached_run(
    encoder: Any, data: str | Path, settings: dict[str, Any], run: Callable[[], Result], use_cache: bool = True
) -> tuple[Result, bool]:
    """``run()`` through the disk cache; returns ``(result, from_cache)``."""
    path = cache_dir() / f"{cache_key(encoder.fingerprint, data, settings)}.json"
    if use_cache:
        hit = _load_cached(path)
        if hit is not None:
            return hit, True
    result = run()
    if use_cache:
        _store(path, result)
    return result, False


# --- running the suite -------------------------------------------------------------------------------------------
@dataclass
class _Job:
    task: str  # mcq | retrieval | pairs | benchmark:NAME[=PATH]
    model: str
    result: Result | None = None
    skipped: str = ""  # why the model cannot do this task
    from_cache: bool = False


def _benchmark_spec(task: str) -> tuple[str, str | None]:
    name, _, path = task.split(":", 1)[1].partition("=")
    return name.strip(), (path.strip() or None)


def _skip_reason(task: str, encoder: Any, pairings: Sequence[str]) -> str:
    mods = set(encoder.modalities)
    if task in ("mcq", "retrieval"):
        return "" if any(set(PAIRINGS[p]) <= mods for p in pairings) else "needs an image tower"
    if task == "pairs":
        return "" if {"text", "image"} <= mods else "text-only: pairs need an image+text encoder"
    if "image" in mods:
        return ""
    from bindlab.data.adapters import load_manifest

    adapter = load_manifest(_benchmark_spec(task)[0]).get("adapter")
    return "" if adapter == "sugarcrepe_pp" else "text-only: this benchmark needs an image+text encoder"


def _run_job(
    job: _Job, encoder: Any, request: CompareRequest, paths: dict[str, Path], progress: Progress | None
) -> None:
    from bindlab.studies import benchmark as bench_study
    from bindlab.studies import browse
    from bindlab.studies import pairs as pairs_study

    common = {"limit": request.limit, "batch_size": request.batch_size}
    if job.task in ("mcq", "retrieval"):
        pairings = [p for p in request.pairings if set(PAIRINGS[p]) <= set(encoder.modalities)]
        req = browse.McqRequest(data=paths["mcq"], model=job.model, pairings=pairings, device=request.device, **common)
        run = browse.run_mcq if job.task == "mcq" else browse.run_retrieval
        settings = {"task": job.task, "pairings": pairings, "limit": request.limit}
        job.result, job.from_cache = cached_run(
            encoder, paths["mcq"], settings, lambda: run(req, progress), request.use_cache
        )
    elif job.task == "pairs":
        req = pairs_study.PairsRequest(
            data=paths["pairs"],
            model=job.model,
            verbosity=request.verbosity,
            device=request.device,
            seed=request.seed,
            **common,
        )
        settings = {"task": "pairs", "verbosity": request.verbosity, "limit": request.limit, "seed": request.seed}
        job.result, job.from_cache = cached_run(
            encoder, paths["pairs"], settings, lambda: pairs_study.run_pairs(req, progress), request.use_cache
        )
    else:
        name, data = _benchmark_spec(job.task)
        task = "itt" if "image" in encoder.modalities else "tot"
        req = bench_study.BenchmarkRequest(
            name=name, model=job.model, data=data, task=task, device=request.device, seed=request.seed, **common
        )
        settings = {"task": job.task, "bench_task": task, "limit": request.limit, "seed": request.seed}
        if data:  # a local copy given: cached by its hash (a file) or its path and mtime (a folder)
            job.result, job.from_cache = cached_run(
                encoder, data, settings, lambda: bench_study.run_benchmark(req), request.use_cache
            )
        else:  # the manifest's copy: nothing to key the cache on without loading it, so always scored
            job.result = bench_study.run_benchmark(req)


def _resolve_paths(request: CompareRequest, encoders: dict[str, Any], progress: Progress | None) -> dict[str, Path]:
    """The MCQ and pairs files: the request's, else the embedded defaults; the MCQ default is one every model can
    read (:func:`~bindlab.studies.browse.default_dataset_for`: the renderable benchmark when a toy model is there)."""
    from bindlab.studies.browse import default_dataset_for
    from bindlab.studies.pairs import default_pairs_dataset

    paths: dict[str, Path] = {}
    if {"mcq", "retrieval"} & set(request.suite):
        images = any("image" in PAIRINGS[p] for p in request.pairings)
        paths["mcq"] = (
            Path(request.data)
            if request.data
            else default_dataset_for(list(encoders.values()), images=images, progress=progress)
        )
        if not paths["mcq"].exists():
            raise FileNotFoundError(
                f"{paths['mcq']}: file not found; generate one with 'python -m bindlab generate saber --out DIR'"
            )
    if "pairs" in request.suite:
        paths["pairs"] = Path(request.pairs_data) if request.pairs_data else default_pairs_dataset()
        if not paths["pairs"].exists():
            raise FileNotFoundError(
                f"{paths['pairs']}: file not found; generate one with 'python -m bindlab generate composet --out DIR'"
            )
    return paths


def run_compare(request: CompareRequest, progress: Progress | None = None) -> Result:
    """Score every model on every task of the suite and join the results.

    Returns:
        ``Result("compare")``: summary = ``{"models", "suite", "pairings", "data", "pairs_data", "leaderboard",
        "sort_by", "leader", "leader_text", "leader_rule", "set_used", "top_score", "cross_benchmark", "agreement",
        "diff_models", "question_diff", "by_n", "by_edit_type", "unknown_words", "from_cache"}`` (``leader``: the
        top model only where its 95 % interval in ``sort_by`` lies wholly above every other model's, else None —
        :func:`leader_verdict`, whose text ``leader_text`` says which intervals overlap; ``set_used``:
        :func:`set_used`, the items each task and pairing scored and what was left out and why; ``top_score`` is the
        primary metric: the top-ranked model's value in ``sort_by``; ``unknown_words``: :func:`unknown_word_rows`);
        rows = one per (question, pairing): ``{id, pairing, n_objects, subset, credit: {model: c}, margin:
        {model: m}}``; tables = ``leaderboard``, ``set_used``, ``scores`` (long form with CIs and chance), ``by_n``,
        ``by_edit_type``, ``question_diff`` (of ``diff_models``: the leader and the runner-up, in the direction with more questions), ``cross_benchmark``,
        ``per_scene_margin``, ``agreement``, ``unknown_words``. The leaderboard labels each score with a chance
        level above / at / below chance by its 95 % interval and gives each model's ``unknown words %``.
    """
    encoders = {m: get_encoder(m, request.device, request.batch_size) for m in request.models}  # unknown ids first
    paths = _resolve_paths(request, encoders, progress)
    jobs = [_Job(t, m) for m in request.models for t in request.suite]
    for k, job in enumerate(jobs):
        reason = _skip_reason(job.task, encoders[job.model], request.pairings)
        if reason:
            job.skipped = reason
            continue
        if progress:
            progress(k / len(jobs), f"{job.model}: {job.task} ({k + 1}/{len(jobs)})")
        _run_job(job, encoders[job.model], request, paths, None)
    if progress:
        progress(1.0, "joining results")
    return _assemble(request, jobs, encoders, paths)


# --- joining the per-model results -------------------------------------------------------------------------------
def _vs_chance(lo: float | None, hi: float | None, chance: float | None) -> str:
    """:func:`~bindlab.eval.metrics.chance_label`; an MCQ accuracy's chance is the mean of its questions' own chance
    (:func:`bindlab.eval.mcq.question_chance`), so ``bow`` is at chance."""
    return chance_label(lo, hi, chance)


def _score(
    model: str, task: str, column: str, value: Any, ci: Sequence[float] | None, n: int | None, chance: float | None
) -> dict[str, Any]:
    lo, hi = (ci or [None, None])[:2]
    return {
        "model": model,
        "task": task,
        "column": column,
        "value": value,
        "ci95_low": lo,
        "ci95_high": hi,
        "n": n,
        "chance": chance,
        "vs_chance": _vs_chance(lo, hi, chance),
    }


def score_rows(job: _Job, seed: int = 0) -> list[dict[str, Any]]:
    """Long-form scores of one (model, task): one row per leaderboard column, with its 95 % interval and chance."""
    r, m, out = job.result, job.model, []
    if r is None:
        return out
    s = r.summary
    if job.task == "mcq":
        for p, v in s["pairings"].items():
            out.append(_score(m, "mcq", f"MCQ {p}", v["accuracy"], v["ci95"], v["n"], v["chance"]))
    elif job.task == "retrieval":
        for p, v in s["pairings"].items():
            ap = [row["ap"] for row in r.rows if row["pairing"] == p]
            out.append(
                _score(
                    m,
                    "retrieval",
                    f"mAP {p}",
                    v["map"]["all"],
                    bootstrap_ci(np.array(ap), seed=seed),
                    v["n_queries"],
                    None,
                )
            )
    elif job.task == "pairs":
        o = s["overall"]
        for metric in ("group", "i2t", "t2i"):
            out.append(
                _score(
                    m,
                    "pairs",
                    f"Pairs {metric.upper() if metric != 'group' else 'Group'}",
                    o[metric],
                    o[f"{metric}_ci95"],
                    o["n"],
                    PAIRS_CHANCE[metric],
                )
            )
    else:
        name = s["benchmark"]
        if "overall" in s:  # a 2x2 benchmark: its Group score
            ci, chance = s["overall"]["group_ci95"], PAIRS_CHANCE["group"]
        else:  # per split first: a benchmark with splits is headlined by its macro mean over them
            ci, chance = s.get("native_ci95", s.get("accuracy_ci95")), s.get("chance")
        task = f"{s['task']}, macro over splits" if s.get("headline") == "macro" else s["task"]
        out.append(_score(m, job.task, f"{name} ({task})", s["native_value"], ci, s["n"], chance))
    return out


def _model_rows(
    scores: list[dict[str, Any]],
    models: Sequence[str],
    columns: list[str],
    extra: Callable[[str, dict[str, Any] | None], dict[str, Any]],
) -> list[dict[str, Any]]:
    """One row per model: ``{model, <column>: value, **extra(column, score)}`` (a missing score is None)."""
    by = {(s["model"], s["column"]): s for s in scores}
    rows = []
    for m in models:
        row: dict[str, Any] = {"model": m}
        for c in columns:
            s = by.get((m, c))
            row[c] = s["value"] if s else None
            row.update(extra(c, s))
        rows.append(row)
    return rows


UNKNOWN_COLUMN = "unknown words %"


def leaderboard(
    scores: list[dict[str, Any]], models: Sequence[str], unknown: dict[str, float | None] | None = None
) -> tuple[list[dict[str, Any]], str]:
    """One row per model: ``{rank, model, <column>: value, "<column> 95% CI": [lo, hi], "<column> vs chance":
    above/at/below chance}`` (the label only for columns with a chance level), best first by the first column
    (models without it last); with ``unknown`` (model -> share of MCQ caption words it does not know, None = it
    cannot say) also ``"unknown words %"``. Returns ``(rows, sort column)``."""
    columns = list(dict.fromkeys(s["column"] for s in scores))
    with_chance = {s["column"] for s in scores if s["chance"] is not None}

    def extra(c: str, s: dict[str, Any] | None) -> dict[str, Any]:
        out = {f"{c} 95% CI": [s["ci95_low"], s["ci95_high"]] if s and s["ci95_low"] is not None else None}
        if c in with_chance:
            out[f"{c} vs chance"] = s["vs_chance"] if s else "n/a"
        return out

    rows = _model_rows(scores, models, columns, extra)
    if unknown is not None:
        for r in rows:
            share = unknown.get(r["model"])
            r[UNKNOWN_COLUMN] = None if share is None else 100.0 * share
    sort_by = columns[0] if columns else ""
    rows.sort(key=lambda r: (r.get(sort_by) is None, -(r.get(sort_by) or 0.0)))
    return [{"rank": k + 1, **r} for k, r in enumerate(rows)], sort_by


LEADER_RULE = (
    "a leader is named only where the top model's 95 % interval lies wholly above every other scored "
    "model's interval (its lower end above their upper ends)"
)


def leader_verdict(board: Sequence[dict[str, Any]], column: str) -> dict[str, Any]:
    """Whether ``board``'s top model in ``column`` leads clearly: its 95 % interval lies wholly above every other
    scored model's interval (:data:`LEADER_RULE`). Pure; the rows need ``model``, ``column`` and
    ``"<column> 95% CI"``.

    Args:
        board: :func:`leaderboard` rows, best first (models without a score in ``column`` are ignored).
        column: the score the leaderboard is sorted by.

    Returns:
        ``{"leader": model or None, "overlaps": [models whose interval overlaps the top model's], "text"}``; the
        text names the leader and the rule, or says why there is none ("no clear leader: the intervals of A and B
        overlap").
    """
    scored = [r for r in board if r.get(column) is not None]
    if not scored:
        return {"leader": None, "overlaps": [], "text": f"no leader: no model has a {column} score"}
    top = max(scored, key=lambda r: r[column])
    rest = [r for r in scored if r is not top]
    if not rest:
        return {
            "leader": None,
            "overlaps": [],
            "text": f"no leader: only {top['model']} has a {column} score, nothing to compare it with",
        }
    ci = {r["model"]: r.get(f"{column} 95% CI") for r in scored}
    lacking = [m for m, c in ci.items() if not c or c[0] is None or c[1] is None]
    if lacking:
        return {
            "leader": None,
            "overlaps": [],
            "text": f"no clear leader: {', '.join(lacking)} {'has' if len(lacking) == 1 else 'have'} no 95 % "
            f"interval on {column}, so the ranking cannot be checked",
        }
    low = ci[top["model"]][0]
    overlaps = [r["model"] for r in rest if ci[r["model"]][1] >= low]
    if overlaps:
        return {
            "leader": None,
            "overlaps": overlaps,
            "text": f"no clear leader on {column}: the 95 % intervals of {top['model']} and {overlaps[0]} overlap"
            if len(overlaps) == 1
            else f"no clear leader on {column}: the 95 % interval of {top['model']} overlaps those of {_and(overlaps)}",
        }
    return {
        "leader": top["model"],
        "overlaps": [],
        "text": f"leader on {column}: {top['model']} (its 95 % interval lies wholly above every other model's)",
    }


def _and(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def unknown_shares(jobs: Sequence[_Job]) -> dict[str, float | None] | None:
    """model -> share of the MCQ captions' words it does not know (None: it cannot say), from the mcq results; None
    when no model was scored on MCQs."""
    found = {
        j.model: (j.result.summary.get("unknown_words") or {}).get("share")
        for j in jobs
        if j.task == "mcq" and j.result is not None
    }
    return found or None


def unknown_word_rows(jobs: Sequence[_Job]) -> list[dict[str, Any]]:
    """One row per model scored on MCQs that can say which words it does not know: the shares of unknown words (all
    captions, queries, candidates), counts, and its most frequent unknown words as ``word (count)`` text."""
    rows = []
    for j in jobs:
        u = j.result.summary.get("unknown_words") if j.task == "mcq" and j.result is not None else None
        if u:
            rows.append(
                {
                    "model": j.model,
                    "share": u["share"],
                    "query_share": u["query_share"],
                    "candidate_share": u["candidate_share"],
                    "n_unknown": u["n_unknown"],
                    "n_words": u["n_words"],
                    "questions_with_unknown": u["questions_with_unknown"],
                    "n_questions": u["n_questions"],
                    "top": ", ".join(f"{t['word']} ({t['count']})" for t in u["top"]) or None,
                }
            )
    return rows


def cross_benchmark(scores: list[dict[str, Any]], models: Sequence[str]) -> list[dict[str, Any]]:
    """Each model on every benchmark with a chance level, side by side: ``{model, <benchmark>: value,
    "<benchmark> vs chance": above/at/below chance}`` (MCQ accuracy, pairs Group, published benchmarks)."""
    keep = [s for s in scores if s["chance"] is not None and s["column"] not in ("Pairs I2T", "Pairs T2I")]
    columns = list(dict.fromkeys(s["column"] for s in keep))
    rows = _model_rows(keep, models, columns, lambda c, s: {f"{c} vs chance": s["vs_chance"] if s else "n/a"})
    return rows


def _margin(scores: Sequence[float], answer: int) -> float:
    s = np.asarray(scores, dtype=np.float64)
    return float(s[answer] - np.delete(s, answer).max())


def question_rows(jobs: Sequence[_Job], models: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (question, pairing) with every model's credit and margin (None where a model was not scored)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for job in jobs:
        if job.task != "mcq" or job.result is None:
            continue
        for r in job.result.rows:
            row = rows.setdefault(
                (r["id"], r["pairing"]),
                {
                    "id": r["id"],
                    "pairing": r["pairing"],
                    "n_objects": r["n_objects"],
                    "subset": r["subset"],
                    "credit": dict.fromkeys(models),
                    "margin": dict.fromkeys(models),
                },
            )
            row["credit"][job.model] = r["credit"]
            row["margin"][job.model] = _margin(r["scores"], r["answer"])
    return list(rows.values())


def question_diff(rows: Sequence[dict[str, Any]], a: str, b: str, pairing: str | None = None) -> list[dict[str, Any]]:
    """Questions model ``a`` gets right (full credit) and model ``b`` gets wrong (less than full credit, ties
    included), largest margin gap first.

    Args:
        rows: :func:`question_rows` (``Result.rows`` of :func:`run_compare`).
        a, b: model ids of the comparison.
        pairing: only this pairing (None = every pairing).

    Returns:
        ``[{id, pairing, n_objects, subset, model_a, credit_a, margin_a, model_b, credit_b, margin_b}]``.

    Raises:
        ValueError: ``a`` or ``b`` was not scored on these questions, or they are the same model.
    """
    scored = set(rows[0]["credit"]) if rows else set()
    for m in (a, b):
        if m not in scored:
            raise ValueError(f"model {m!r} is not in this comparison; choose from {sorted(scored)}")
    if a == b:
        raise ValueError(f"choose two different models to diff, got {a!r} twice")
    out = []
    for r in rows:
        ca, cb = r["credit"][a], r["credit"][b]
        if (pairing and r["pairing"] != pairing) or ca is None or cb is None or not (ca >= 1.0 > cb):
            continue
        out.append(
            {
                "id": r["id"],
                "pairing": r["pairing"],
                "n_objects": r["n_objects"],
                "subset": r["subset"],
                "model_a": a,
                "credit_a": ca,
                "margin_a": r["margin"][a],
                "model_b": b,
                "credit_b": cb,
                "margin_b": r["margin"][b],
            }
        )
    out.sort(key=lambda r: -(r["margin_a"] - r["margin_b"]))
    return out


def _by_n(jobs: Sequence[_Job]) -> list[dict[str, Any]]:
    return [
        {"model": j.model, **{k: r[k] for k in ("pairing", "n_objects", "accuracy", "n", "chance")}}
        for j in jobs
        if j.task == "mcq" and j.result is not None
        for r in j.result.tables["accuracy_by_n"]
        if r["subset"] == "all"
    ]


def _by_edit_type(jobs: Sequence[_Job]) -> list[dict[str, Any]]:
    return [
        {"model": j.model, **r}
        for j in jobs
        if j.task == "pairs" and j.result is not None
        for r in j.result.tables["by_edit_type"]
    ]


def _per_scene(jobs: Sequence[_Job]) -> dict[str, dict[str, float]]:
    return {j.model: j.result.summary["per_scene_margin"] for j in jobs if j.task == "pairs" and j.result is not None}


# --- the set each task scored: how many items, and what was left out and why ---------------------------------------
def _records(path: Path | None) -> int | None:
    """How many records the JSONL file holds (what a strict load reads), None when it cannot be read here."""
    from bindlab.data.files import DataError
    from bindlab.data.schema import read_jsonl

    try:
        return len(read_jsonl(path)) if path is not None else None
    except (OSError, DataError):
        return None


def mcq_source(request: CompareRequest, encoders: dict[str, Any], path: Path) -> str:
    """What the MCQ file is, in words: the visitor's file by name, or which embedded benchmark and why that one
    (:func:`~bindlab.studies.browse.default_dataset_for`): the full SABER vocabulary, or the renderable one (the words
    the image renderer can draw, with images) when a pairing needs images or a model does not know every word."""
    if request.data:
        return f"{path.parent.name}/{path.name}"
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import SABER_VOCAB
    from bindlab.studies.browse import reads_default_words

    full = f"{len(SABER_VOCAB.objects)} objects, {len(SABER_VOCAB.attributes)} attributes"
    if path.parent.name != "saber-mini-images":
        return f"the embedded mini benchmark (full SABER vocabulary: {full})"
    images = [p for p in request.pairings if "image" in PAIRINGS[p]]
    closed = [m for m, e in encoders.items() if not reads_default_words(e)]
    why = []
    if images:
        why.append(f"{', '.join(images)} need{'s' if len(images) == 1 else ''} images, drawn only for that vocabulary")
    if closed:
        why.append(f"{_and(closed)} {'does' if len(closed) == 1 else 'do'} not know every word of the full one")
    return (
        f"the embedded mini benchmark over the renderable vocabulary ({len(RENDER_VOCAB.objects)} objects, "
        f"{len(RENDER_VOCAB.attributes)} attributes, with images; the full one has {full}), because "
        f"{' and '.join(why)}"
    )


def _lacking(encoder: Any, pairing: str) -> str:
    """Why ``encoder`` cannot be scored on ``pairing``: the tower it lacks."""
    need = sorted(set(PAIRINGS[pairing]) - set(encoder.modalities))
    query, candidates = PAIRINGS[pairing]
    return f"no {' or '.join(need)} tower ({pairing}: {query} queries, {candidates} candidates)"


def _set_row(
    task: str,
    pairing: str | None,
    source: str,
    unit: str,
    n: int | None,
    total: int | None,
    dropped: list[str],
    not_scored: dict[str, str],
    scored: list[str],
    detail: str = "",
) -> dict[str, Any]:
    """One row of :func:`set_used` with its ``text``."""
    row = {
        "task": task,
        "pairing": pairing,
        "set": source,
        "detail": detail or None,
        "n_scored": n,
        "n_total": total,
        "n_dropped": (total - n) if (total is not None and n is not None) else None,
        "dropped_why": "; ".join(dropped) or None,
        "scored_models": ", ".join(scored) or None,
        "not_scored": "; ".join(f"{m}: {why}" for m, why in not_scored.items()) or None,
    }
    row["text"] = set_used_text(row, unit)
    return row


def set_used_text(row: dict[str, Any], unit: str = "items") -> str:
    """One line on what a task scored: ``"MCQ ti: 12 of 180 questions of SET — 168 left out: WHY; not scored: …"``."""
    name = {"mcq": "MCQ", "retrieval": "retrieval", "pairs": "Pairs"}.get(row["task"], row["task"])
    head = f"{name} {row['pairing']}" if row["pairing"] else name
    n, total = row["n_scored"], row["n_total"]
    if n is None:
        return f"{head}: scored by no model — {row['not_scored'] or 'no result'}"
    if total is None:
        text = f"{head}: {n} {unit} of {row['set']}"
    else:
        text = f"{head}: {n} of {total} {unit} of {row['set']}"
    if row.get("detail"):
        text += f" ({row['detail']})"
    text += (
        f" — {row['n_dropped']} left out: {row['dropped_why'] or 'reason not recorded'}"
        if row["n_dropped"]
        else " — none left out"
    )
    if row["not_scored"]:
        text += f"; not scored: {row['not_scored']}"
    return text


def set_used(
    request: CompareRequest, jobs: Sequence[_Job], encoders: dict[str, Any], paths: dict[str, Path]
) -> list[dict[str, Any]]:
    """What each task and pairing scored: the set (file, or which embedded benchmark and why), ``n_scored`` of
    ``n_total`` items, how many were left out and why (``limit``; for pairs, caption levels the file lacks), and the
    models not scored there and why (a text-only model on an image pairing).

    Returns:
        One row per (task, pairing): ``{task, pairing, set, n_scored, n_total, n_dropped, dropped_why,
        scored_models, not_scored, text}`` (``text``: :func:`set_used_text`; ``n_total`` None where the file is not
        counted here: a published benchmark).
    """
    rows = []
    limit = request.limit
    for task in request.suite:
        mine = [j for j in jobs if j.task == task]
        if task in ("mcq", "retrieval"):
            total, source = _records(paths["mcq"]), mcq_source(request, encoders, paths["mcq"])
            for p in request.pairings:
                done = [j for j in mine if j.result is not None and p in j.result.summary["pairings"]]
                not_scored = {j.model: j.skipped or _lacking(encoders[j.model], p) for j in mine if j not in done}
                v = done[0].result.summary["pairings"][p] if done else {}
                n = v.get("n") if task == "mcq" else v.get("n_queries")
                why = (
                    [f"limit {limit}: only the first {limit} questions are scored"]
                    if limit and total and n is not None and n < total
                    else []
                )
                rows.append(_set_row(task, p, source, "questions", n, total, why, not_scored, [j.model for j in done]))
        elif task == "pairs":
            total = _records(paths["pairs"])
            source = (
                f"{paths['pairs'].parent.name}/{paths['pairs'].name}"
                if request.pairs_data
                else "the embedded CompoSET-style mini set"
            )
            done = [j for j in mine if j.result is not None]
            not_scored = {j.model: j.skipped for j in mine if j.result is None}
            s = done[0].result.summary if done else {}
            levels = s.get("levels") or []
            n = s["overall"]["n"] // max(len(levels), 1) if done else None  # pooled over levels: per pair here
            why = (
                [f"limit {limit}: only the first {limit} pairs are scored"]
                if limit and total and n is not None and n < total
                else []
            )
            detail = (
                [f"each pair at {len(levels)} caption levels, {', '.join(levels)}: {n * len(levels)} items pooled"]
                if len(levels) > 1 and n is not None
                else []
            )
            if s.get("skipped_levels"):
                detail.append(f"caption level(s) {', '.join(s['skipped_levels'])} not scored: not every pair has them")
            rows.append(
                _set_row(
                    task, None, source, "pairs", n, total, why, not_scored, [j.model for j in done], "; ".join(detail)
                )
            )
        else:
            done = [j for j in mine if j.result is not None]
            not_scored = {j.model: j.skipped for j in mine if j.result is None}
            name, data = _benchmark_spec(task)
            n = done[0].result.summary["n"] if done else None
            why = [f"limit {limit}: at most {limit} items per split"] if limit else []
            rows.append(
                _set_row(
                    task,
                    None,
                    f"{name} ({'your copy' if data else 'its manifest'})",
                    "items",
                    n,
                    None,
                    why,
                    not_scored,
                    [j.model for j in done],
                )
            )
    return rows


def _assemble(request: CompareRequest, jobs: list[_Job], encoders: dict[str, Any], paths: dict[str, Path]) -> Result:
    models = list(request.models)
    scores = [s for j in jobs for s in score_rows(j, request.seed)]
    board, sort_by = leaderboard(scores, models, unknown_shares(jobs))
    qrows = question_rows(jobs, models)
    ranked = [r["model"] for r in board if qrows and qrows[0]["credit"][r["model"]] is not None]
    diff_models, diff = ranked[:2], []  # the default diff: leader and runner-up, the direction with more rows
    if len(diff_models) == 2:
        diff = question_diff(qrows, *diff_models)
        other = question_diff(qrows, *diff_models[::-1])
        if len(other) > len(diff):
            diff_models, diff = diff_models[::-1], other
    per_scene = _per_scene(jobs)
    agreement = scene_agreement(per_scene)
    cross = cross_benchmark(scores, models)
    by_n, by_edit = _by_n(jobs), _by_edit_type(jobs)
    unknown = unknown_word_rows(jobs)
    verdict = leader_verdict(board, sort_by)
    used = set_used(request, jobs, encoders, paths)
    notes = [f"{j.model}: {j.task} n/a ({j.skipped})" for j in jobs if j.skipped]
    notes += [f"{j.model}: {n}" for j in jobs if j.result is not None for n in j.result.notes]
    summary = {
        "models": models,
        "suite": list(request.suite),
        "pairings": list(request.pairings),
        "data": str(paths.get("mcq")) if "mcq" in paths else None,
        "pairs_data": str(paths.get("pairs")) if "pairs" in paths else None,
        "leaderboard": board,
        "sort_by": sort_by,
        "leader": verdict["leader"],
        "leader_text": verdict["text"],
        "leader_rule": LEADER_RULE,
        "set_used": used,
        "top_score": board[0].get(sort_by) if board else None,
        "cross_benchmark": cross,
        "agreement": agreement,
        "diff_models": diff_models,
        "question_diff": diff,
        "by_n": by_n,
        "by_edit_type": by_edit,
        "unknown_words": unknown,
        "from_cache": sorted(f"{j.model}:{j.task}" for j in jobs if j.from_cache),
    }
    prov = provenance(
        paths.get("mcq") or paths.get("pairs"), None, {**request.settings(), "kind": "compare"}, request.seed
    )
    prov["encoders"] = [{"id": e.id, "fingerprint": e.fingerprint} for e in encoders.values()]
    if "pairs" in paths:
        from bindlab.data.schema import file_sha256

        prov["pairs_dataset"] = {"path": str(paths["pairs"].resolve()), "sha256": file_sha256(paths["pairs"])}
    tables = {
        "leaderboard": board,
        "set_used": used,
        "scores": scores,
        "by_n": by_n,
        "by_edit_type": by_edit,
        "question_diff": diff,
        "cross_benchmark": cross,
        "unknown_words": unknown,
        "per_scene_margin": [{"model": m, "scene": s, "margin": v} for m, d in per_scene.items() for s, v in d.items()],
        "agreement": [
            {"model_a": p["model_a"], "model_b": p["model_b"], "rho": p["rho"]} for p in agreement["pairwise"]
        ],
    }
    return Result(
        "compare",
        summary,
        qrows,
        figures_data={"by_n": by_n, "by_edit_type": by_edit},
        provenance=prov,
        primary_metric="top_score",
        tables=tables,
        notes=notes,
    )


__all__ = [
    "CompareRequest",
    "LEADER_RULE",
    "TASKS",
    "UNKNOWN_COLUMN",
    "cache_dir",
    "cache_key",
    "cached_run",
    "cross_benchmark",
    "leader_verdict",
    "leaderboard",
    "mcq_source",
    "parse_models",
    "parse_suite",
    "question_diff",
    "question_rows",
    "run_compare",
    "score_rows",
    "set_used",
    "set_used_text",
]
