"""Compare: several encoders on the same suite, one leaderboard (``compare``, the Compare tab).

:func:`run_compare` runs each model on each task of the suite — a task of the registry (:mod:`bindlab.tasks`): SABER
MCQ per pairing and N, pooled retrieval, 2x2 pairs per edit type, a published benchmark, or any task a module
registers — through the task's own ``run`` (the scoring ``eval mcq``, ``eval pairs`` and ``eval benchmark`` use too),
and joins their results: a leaderboard with bootstrap 95 % intervals (each task's ``scores``), accuracy by N, scores
by edit type, a per-question table (each model's credit and margin) for the "A right, B wrong" diff, a
cross-benchmark table ("above chance elsewhere, at chance here") and CompoSET's per-scene
agreement (:mod:`bindlab.analysis.agreement`).

Each model's result per task is cached on disk under ``$BINDLAB_HOME/compare/`` as a result file
(:meth:`Result.save` / :meth:`Result.load`) keyed by the encoder fingerprint, the data's hash, the settings and the
task's version, so adding a model to a comparison scores only the new one. A model that cannot do
a task (``task.unable``: a text-only encoder on image pairings or pairs) gets "n/a" there, with a note, instead of an
error.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from bindlab.analysis.agreement import scene_agreement
from bindlab.config import LIMIT_ENV, __version__, home, limits, public_mode
from bindlab.eval.mcq import PAIRINGS, parse_pairings
from bindlab.eval.metrics import chance_label
from bindlab.eval.pairs import parse_verbosity
from bindlab.provenance import provenance
from bindlab.result import Result
from bindlab.studies.common import get_encoder
from bindlab.studies.progress import Progress
from bindlab.studies.validate import check_run_options, data_input, input_path, run_option
from bindlab.tasks import BENCHMARK_PREFIX, Task, TaskOptions, list_tasks, parse_spec, with_options


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


def _generated() -> list[str]:
    """The names of the tasks over bindlab's generated data (mcq, retrieval, pairs …), in the registry's order."""
    return [t.metadata.name for t in list_tasks() if t.metadata.data_kind != "published"]


def suite_choices() -> list[tuple[str, str]]:
    """``(label, name)`` of every registered task that needs no data path of its own (the tab's suite boxes)."""
    return [(t.metadata.label, t.metadata.name) for t in list_tasks() if t.metadata.data_kind != "published"]


def benchmark_entry(text: str) -> str:
    """A published benchmark as a suite entry: ``NAME[=PATH]`` -> ``benchmark:NAME[=PATH]`` (kept if prefixed)."""
    text = text.strip()
    return text if text.startswith(BENCHMARK_PREFIX) else f"{BENCHMARK_PREFIX}{text}"


def parse_suite(spec: str | Sequence[str]) -> list[str]:
    """``"mcq,pairs,benchmark:sugarcrepe_pp"`` or a list -> distinct suite entries (registered tasks, see
    :func:`bindlab.tasks.parse_spec`); unknown ones refused."""
    items = spec.split(",") if isinstance(spec, str) else list(spec or [])
    suite = list(dict.fromkeys(str(t).strip() for t in items if str(t).strip()))
    if not suite:
        raise ValueError(f"suite: choose one or more of {', '.join(_generated())}, benchmark:NAME[=PATH]")
    for t in suite:
        try:
            parse_spec(t)
        except ValueError:
            names = ", ".join(x.metadata.name for x in list_tasks() if x.metadata.data_kind == "published")
            raise ValueError(
                f"suite: unknown task {t!r}; choose from {', '.join(_generated())} or benchmark:NAME[=PATH] "
                f"(NAME: {names})"
            ) from None
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
    limit: int = run_option("limit")  # first N questions / pairs / items per split; 0 = all
    seed: int = run_option("seed")  # bootstrap seed
    batch_size: int | None = run_option("batch_size")
    device: str = run_option("device")
    use_cache: bool = True  # read and write the per-model results under $BINDLAB_HOME/compare
    dtype: str = run_option("dtype")  # the precision a hub model runs in

    def __post_init__(self) -> None:
        self.models = parse_models(self.models)
        self.suite = parse_suite(self.suite)
        self.pairings = parse_pairings(self.pairings)
        parse_verbosity(self.verbosity)
        check_run_options(self)  # limit, seed, batch size, device (RunOptions; the models are parse_models')
        self.data = str(self.data).strip() or None if self.data else None
        self.pairs_data = str(self.pairs_data).strip() or None if self.pairs_data else None
        for name, kind in (("data", "mcq"), ("pairs_data", "pairs")):  # inside the allowed roots; datasets read
            if getattr(self, name):
                setattr(self, name, str(data_input(getattr(self, name), name, kind)))
        for entry in self.suite:  # a task's name and local copy too, before any model loads
            task, path = parse_spec(entry)
            if public_mode():  # a registered task or a manifest's name only: no local copy or manifest by path
                from bindlab.data.adapters import benchmark_refused, check_benchmark_name

                if path:
                    raise ValueError(benchmark_refused())
                if task.metadata.data_kind == "published":  # the manifest's name as given, never a path
                    check_benchmark_name(entry.removeprefix(BENCHMARK_PREFIX).partition("=")[0])
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


def cache_key(fingerprint: str, data: str | Path, settings: dict[str, Any], version: int = 1) -> str:
    """The cache file name of one model's result: sha256 of fingerprint, data hash, settings, bindlab version and the
    task's ``metadata.version`` (bumped when its result's contents change; the file itself is a result file,
    :meth:`Result.save`)."""
    text = json.dumps(
        {
            "fingerprint": fingerprint,
            "data": _data_key(data),
            "settings": settings,
            "version": __version__,
            "format": version,
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
    encoder: Any,
    data: str | Path,
    settings: dict[str, Any],
    run: Callable[[], Result],
    use_cache: bool = True,
    version: int = 1,
) -> tuple[Result, bool]:
    """``run()`` through the disk cache (result files: :meth:`Result.save` / :meth:`Result.load`); returns
    ``(result, from_cache)``."""
    path = cache_dir() / f"{cache_key(encoder.fingerprint, data, settings, version)}.json"
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
    spec: str  # the suite entry: a task name, NAME=PATH or benchmark:NAME[=PATH]
    model: str
    result: Result | None = None
    skipped: str = ""  # why the model cannot do this task
    from_cache: bool = False

    @property
    def task(self) -> Task:
        return parse_spec(self.spec)[0]


def _options(request: CompareRequest) -> TaskOptions:
    return TaskOptions(
        pairings=list(request.pairings),
        verbosity=request.verbosity,
        limit=request.limit,
        seed=request.seed,
        batch_size=request.batch_size,
    )


def _run_job(job: _Job, encoder: Any, request: CompareRequest, data: Path | None) -> None:
    """One model on one task, through the cache where the data can key it (a file: its hash; a folder: its path and
    mtime); a task's own default data (a manifest's copy) is always scored."""
    task = job.task
    options = task.options_for(encoder, _options(request))
    run = lambda: task.run(encoder, data, options)  # noqa: E731
    if data is None:
        job.result = run()
        return
    settings = task.cache_settings(job.spec, options)
    job.result, job.from_cache = cached_run(encoder, data, settings, run, request.use_cache, task.metadata.version)


def _saber_data(request: CompareRequest, encoders: dict[str, Any], progress: Progress | None) -> Path:
    """The MCQ file: the request's, else the embedded default one every model can read
    (:func:`~bindlab.studies.common.default_dataset_for`: the renderable benchmark when a toy model is there)."""
    from bindlab.studies.common import default_dataset_for

    images = any("image" in PAIRINGS[p] for p in request.pairings)
    path = (
        Path(request.data)
        if request.data
        else default_dataset_for(list(encoders.values()), images=images, progress=progress)
    )
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: file not found; generate one with 'python -m bindlab generate saber --out DIR'"
        )
    return path


def _composet_data(request: CompareRequest, encoders: dict[str, Any], progress: Progress | None) -> Path:
    """The Pairs file: the request's, else the embedded CompoSET-style mini set."""
    from bindlab.studies.pairs import default_pairs_dataset

    path = Path(request.pairs_data) if request.pairs_data else default_pairs_dataset()
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: file not found; generate one with 'python -m bindlab generate composet --out DIR'"
        )
    return path


# The data a comparison gives the tasks of each data kind (the request's file or the embedded default); a task of
# another kind is given the path of its suite entry (NAME=PATH), or None for its own default.
DATA_FOR_KIND = {"saber": _saber_data, "composet": _composet_data}


def _resolve_paths(request: CompareRequest, encoders: dict[str, Any], progress: Progress | None) -> dict[str, Path]:
    """The data files of the suite: by data kind where the comparison provides them (``"saber"``, ``"composet"``),
    else by suite entry where the entry names a path of its own."""
    paths: dict[str, Path] = {}
    for entry in request.suite:
        task, path = parse_spec(entry)
        kind = task.metadata.data_kind
        if kind in DATA_FOR_KIND and kind not in paths:
            paths[kind] = DATA_FOR_KIND[kind](request, encoders, progress)
        elif path:
            paths[entry] = Path(path)
    return paths


def _data_of(job: _Job, paths: dict[str, Path]) -> Path | None:
    kind = job.task.metadata.data_kind
    return paths.get(kind if kind in DATA_FOR_KIND else job.spec)


def run_task(
    entry: str,
    model: str,
    data: str | Path | None = None,
    options: TaskOptions | None = None,
    device: str = "auto",
    progress: Progress | None = None,
    dtype: str = "auto",
) -> Result:
    """One model on one suite entry, as :func:`run_compare` runs it (not cached): the data given, else the entry's
    path, else the comparison's default for the task's data kind, else the task's own.

    Raises:
        ValueError: an unknown task, or a model that cannot do it (saying why).
    """
    task, path = parse_spec(entry)
    options = options or TaskOptions()
    options = with_options(options, pairings=parse_pairings(options.pairings))
    encoder = get_encoder(
        model, device, options.batch_size, dtype
    )  # device and dtype checked by the caller (bindlab.run_task)
    reason = task.unable(encoder, options)
    if reason:
        raise ValueError(f"{model} cannot be scored on {task.metadata.name}: {reason}")
    options = task.options_for(encoder, options)
    data = data or path
    kind = task.metadata.data_kind
    if data is None and kind in DATA_FOR_KIND:
        defaults = SimpleNamespace(data=None, pairs_data=None, pairings=options.pairings)
        data = DATA_FOR_KIND[kind](defaults, {model: encoder}, progress)
    return task.run(encoder, data, options, progress)


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
    encoders = {
        m: get_encoder(m, request.device, request.batch_size, request.dtype) for m in request.models
    }  # unknown ids first
    paths = _resolve_paths(request, encoders, progress)
    jobs = [_Job(t, m) for m in request.models for t in request.suite]
    for k, job in enumerate(jobs):
        reason = job.task.unable(encoders[job.model], _options(request))
        if reason:
            job.skipped = reason
            continue
        if progress:
            progress(k / len(jobs), f"{job.model}: {job.spec} ({k + 1}/{len(jobs)})")
        _run_job(job, encoders[job.model], request, _data_of(job, paths))
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
    """Long-form scores of one (model, task): one row per leaderboard column (the task's ``scores``), with its 95 %
    interval and chance."""
    if job.result is None:
        return []
    return [
        _score(job.model, job.spec, c["column"], c["value"], c["ci95"], c["n"], c["chance"])
        for c in job.task.scores(job.result, seed)
    ]


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


def _scored(jobs: Sequence[_Job], feature: str) -> list[_Job]:
    """The jobs with a result of ``feature`` (``Result.feature``: the joins below read one kind of result each)."""
    return [j for j in jobs if j.result is not None and j.result.feature == feature]


def unknown_shares(jobs: Sequence[_Job]) -> dict[str, float | None] | None:
    """model -> share of the MCQ captions' words it does not know (None: it cannot say), from the mcq results; None
    when no model was scored on MCQs."""
    found = {j.model: (j.result.summary.get("unknown_words") or {}).get("share") for j in _scored(jobs, "mcq")}
    return found or None


def unknown_word_rows(jobs: Sequence[_Job]) -> list[dict[str, Any]]:
    """One row per model scored on MCQs that can say which words it does not know: the shares of unknown words (all
    captions, queries, candidates), counts, and its most frequent unknown words as ``word (count)`` text."""
    rows = []
    for j in _scored(jobs, "mcq"):
        u = j.result.summary.get("unknown_words")
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
    for job in _scored(jobs, "mcq"):
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
        for j in _scored(jobs, "mcq")
        for r in j.result.tables["accuracy_by_n"]
        if r["subset"] == "all"
    ]


def _by_edit_type(jobs: Sequence[_Job]) -> list[dict[str, Any]]:
    return [{"model": j.model, **r} for j in _scored(jobs, "pairs") for r in j.result.tables["by_edit_type"]]


def _per_scene(jobs: Sequence[_Job]) -> dict[str, dict[str, float]]:
    return {j.model: j.result.summary["per_scene_margin"] for j in _scored(jobs, "pairs")}


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
    (:func:`~bindlab.studies.common.default_dataset_for`): the full SABER vocabulary, or the renderable one (the words
    the image renderer can draw, with images) when a pairing needs images or a model does not know every word."""
    if request.data:
        return f"{path.parent.name}/{path.name}"
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import SABER_VOCAB
    from bindlab.studies.common import reads_default_words

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
    rows: list[dict[str, Any]] = []
    for entry in request.suite:
        mine = [j for j in jobs if j.spec == entry]
        rows += _SET_ROWS.get(parse_spec(entry)[0].metadata.data_kind, _set_rows_own)(
            request, entry, mine, encoders, paths
        )
    return rows


def _set_rows_saber(
    request: CompareRequest, entry: str, mine: list[_Job], encoders: dict[str, Any], paths: dict[str, Path]
) -> list[dict[str, Any]]:
    """An MCQ-file task: one row per pairing."""
    rows, limit = [], request.limit
    total, source = _records(paths["saber"]), mcq_source(request, encoders, paths["saber"])
    for p in request.pairings:
        done = [j for j in mine if j.result is not None and p in j.result.summary["pairings"]]
        not_scored = {j.model: j.skipped or _lacking(encoders[j.model], p) for j in mine if j not in done}
        v = done[0].result.summary["pairings"][p] if done else {}
        n = v.get("n", v.get("n_queries"))  # questions (MCQ) or queries (retrieval)
        why = (
            [f"limit {limit}: only the first {limit} questions are scored"]
            if limit and total and n is not None and n < total
            else []
        )
        rows.append(_set_row(entry, p, source, "questions", n, total, why, not_scored, [j.model for j in done]))
    return rows


def _set_rows_composet(
    request: CompareRequest, entry: str, mine: list[_Job], encoders: dict[str, Any], paths: dict[str, Path]
) -> list[dict[str, Any]]:
    """A Pairs-file task: one row, its pairs counted once however many caption levels were pooled."""
    limit, path = request.limit, paths["composet"]
    total = _records(path)
    source = f"{path.parent.name}/{path.name}" if request.pairs_data else "the embedded CompoSET-style mini set"
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
    return [
        _set_row(entry, None, source, "pairs", n, total, why, not_scored, [j.model for j in done], "; ".join(detail))
    ]


def _set_rows_own(
    request: CompareRequest, entry: str, mine: list[_Job], encoders: dict[str, Any], paths: dict[str, Path]
) -> list[dict[str, Any]]:
    """A task with data of its own (a published benchmark): one row, its items counted by the result."""
    done = [j for j in mine if j.result is not None]
    not_scored = {j.model: j.skipped for j in mine if j.result is None}
    name, _, data = entry.removeprefix(BENCHMARK_PREFIX).partition("=")
    n = done[0].result.summary.get("n") if done else None
    why = [f"limit {request.limit}: at most {request.limit} items per split"] if request.limit else []
    source = f"{name.strip()} ({'your copy' if data.strip() else 'its manifest'})"
    return [_set_row(entry, None, source, "items", n, None, why, not_scored, [j.model for j in done])]


_SET_ROWS = {"saber": _set_rows_saber, "composet": _set_rows_composet}  # by data kind; other kinds: _set_rows_own


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
    notes = [f"{j.model}: {j.spec} n/a ({j.skipped})" for j in jobs if j.skipped]
    notes += [f"{j.model}: {n}" for j in jobs if j.result is not None for n in j.result.notes]
    summary = {
        "models": models,
        "suite": list(request.suite),
        "pairings": list(request.pairings),
        "data": str(paths["saber"]) if paths.get("saber") else None,
        "pairs_data": str(paths["composet"]) if paths.get("composet") else None,
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
        "from_cache": sorted(f"{j.model}:{j.spec}" for j in jobs if j.from_cache),
    }
    prov = provenance(
        paths.get("saber") or paths.get("composet"), None, {**request.settings(), "kind": "compare"}, request.seed
    )
    prov["encoders"] = [{"id": e.id, "fingerprint": e.fingerprint} for e in encoders.values()]
    pairs_path = paths.get("composet")
    if pairs_path is not None:
        from bindlab.data.schema import file_sha256

        prov["pairs_dataset"] = {"path": str(pairs_path.resolve()), "sha256": file_sha256(pairs_path)}
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
    "run_task",
    "suite_choices",
    "benchmark_entry",
]
