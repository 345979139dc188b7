"""The Python API: ``import bindlab``, then call these (documented with examples in docs/python.md).

Every function is a thin call of a study in :mod:`bindlab.studies` — the same ``run_*`` the CLI and the app call — so a
number from Python equals the CLI's and the tab's for the same inputs. Wherever a function takes a model it takes an
encoder id (any id the CLI takes: ``minilm``, ``bow``, ``toy:clip``, ``hf:…``, ``open_clip:…``, ``qwen3vl:…``,
``lora:…``), an encoder from :func:`load_encoder`, or a model object of your own (:func:`adopt`: an object with
``encode_text``/``encode_image``, a sentence-transformers model, or :func:`wrap_open_clip` /
:func:`wrap_transformers`). A model object is registered as ``py:<name>`` and the studies load it by that id, so there
is one pipeline whatever the model is.

``data=None`` means the embedded mini benchmark, as in the CLI and the app. ``data`` may be a bindlab JSONL file, its
folder, or a Hugging Face ``datasets`` folder written by :func:`export_dataset` (or ``hf:ORG/NAME`` on the Hub).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindlab.result import Result
from bindlab.studies.progress import progress_for

__all__ = [
    "Result",
    "adopt",
    "attention_margins",
    "compare",
    "evaluate_benchmark",
    "evaluate_mcq",
    "evaluate_pairs",
    "evaluate_retrieval",
    "export_dataset",
    "generate_factors",
    "generate_pairs",
    "generate_saber",
    "get_task",
    "ground",
    "list_tasks",
    "load_encoder",
    "load_result",
    "plot",
    "run_task",
    "wrap_open_clip",
    "wrap_transformers",
]


# --- models ------------------------------------------------------------------------------------------------------
def load_encoder(model: str, device: str = "auto", batch_size: int | None = None, dtype: str = "auto") -> Any:
    """Load an encoder by id, once per process (the instance the CLI and the app share). ``dtype`` (``auto``,
    ``float32``, ``bfloat16``, ``float16``) is the precision a hub model runs in; ``auto`` is bfloat16 on a recent GPU
    and float32 on CPU; the bundled models always run in float32.

    Example:
        >>> enc = bindlab.load_encoder("minilm")
        >>> enc.embed_texts(["a red cube"]).shape
        (1, 384)

    Raises:
        bindlab.encoders.base.EncoderError: an unknown id or a model that cannot load, with what to do.
        ValueError: a device this machine does not have (e.g. ``"cuda"`` without a GPU), or an unknown dtype, saying
            what to use.
    """
    from bindlab.encoders import service
    from bindlab.studies.access import check_model_access
    from bindlab.studies.validate import RunOptions

    run = RunOptions(device=device, dtype=dtype)  # device and dtype checked before any load
    options = service.loader_options(run.device, batch_size, run.dtype)
    return service.get_encoder(check_model_access(str(model)), **options)


def adopt(model: Any, name: str | None = None, batch_size: int = 64) -> Any:
    """A model object of your own as a bindlab encoder, registered in this process as ``py:<name>``.

    ``model`` is any object with ``encode_text(list[str]) -> array (n, d)`` (and ``encode_image(list[PIL.Image]) ->
    array (n, d)`` for image pairings), or a ``sentence_transformers.SentenceTransformer``. ``name`` (default: the
    object's ``name`` attribute) labels the results; the embedding cache keys its vectors by a hash of the model
    (its torch weights, or its vectors for fixed probe inputs), so another model under the same name never reads them.
    You rarely call this yourself: every function here adopts a model object it is given.

    Example:
        >>> class Mine:
        ...     name = "mine"
        ...     def encode_text(self, texts): return np.random.default_rng(0).normal(size=(len(texts), 8))
        >>> bindlab.adopt(Mine()).id
        'py:mine'
    """
    from bindlab.encoders.adopted import adopt as _adopt

    return _adopt(model, name=name, batch_size=batch_size)


def wrap_open_clip(model: Any, preprocess: Any, tokenizer: Any, name: str, batch_size: int = 32) -> Any:
    """An open_clip model held in memory, embedding exactly as the ``open_clip:`` backend does (same code).

    Example:
        >>> model, _, preprocess = open_clip.create_model_and_transforms("ViT-B-32", pretrained="laion2b_s34b_b79k")
        >>> enc = bindlab.wrap_open_clip(model, preprocess, open_clip.get_tokenizer("ViT-B-32"), name="vitb32-mine")
    """
    from bindlab.encoders.adopted import register
    from bindlab.encoders.open_clip_backend import OpenClipEncoder

    return register(OpenClipEncoder.from_objects(model, preprocess, tokenizer, name, batch_size=batch_size))


def wrap_transformers(model: Any, processor: Any, name: str, batch_size: int = 32) -> Any:
    """A transformers CLIP / SigLIP / SigLIP2 model and its processor, embedding exactly as ``hf:`` does.

    Example:
        >>> model = CLIPModel.from_pretrained("openai/clip-vit-base-patch32")
        >>> enc = bindlab.wrap_transformers(model, AutoProcessor.from_pretrained(...), name="clip-b32-ft")
    """
    from bindlab.encoders.adopted import register
    from bindlab.encoders.hf import HFDualEncoder

    return register(HFDualEncoder.from_objects(model, processor, name, batch_size=batch_size))


def _ref(model: Any, name: str | None = None) -> tuple[str, str, int | None, str]:
    """``(encoder id, device, batch size, dtype)`` that load exactly this model through the studies' own loader."""
    from bindlab.encoders import service
    from bindlab.encoders.adopted import adopt as _adopt
    from bindlab.encoders.adopted import is_encoder

    if isinstance(model, str):
        return model, "auto", None, "auto"
    if is_encoder(model):
        recipe = service.recipe(model)
        if recipe is not None:  # loaded by id (load_encoder): the same options reach the same instance
            model_id, options = recipe
            return (
                model_id,
                str(options.get("device", "auto")),
                options.get("batch_size"),
                str(options.get("dtype", "auto")),
            )
        if not model.id.startswith("py:"):
            service.keep(model)  # an encoder built another way: the studies use this instance for its id
        return model.id, "auto", None, "auto"
    return _adopt(model, name=name).id, "auto", None, "auto"


def _data(data: Any) -> str | None:
    """A data argument as the studies take it (None = the embedded default); each study's request resolves it —
    inside the allowed roots, a datasets folder or ``hf:`` id read as bindlab's own files (studies.validate.data_input)."""
    return None if data is None or str(data).strip() == "" else str(data)


# --- evaluation ----------------------------------------------------------------------------------------------------
def evaluate_mcq(
    model: Any,
    data: Any = None,
    pairings: Sequence[str] | str = ("tt",),
    limit: int = 0,
    name: str | None = None,
    skip_bad: bool = False,
    progress: Any = True,
) -> Result:
    """SABER-style 4-way MCQ accuracy (tie-aware), per pairing, by N and subset — what ``eval mcq`` prints.

    Args:
        model: an encoder id, an encoder, or a model object (see the module docstring).
        data: MCQ JSONL, or a datasets folder; None = the embedded mini benchmark (with images when a pairing needs
            them; over the renderable words for a model that does not know the full vocabulary).
        pairings: subset of ``tt, ti, it, ii`` (query → candidates).
        limit: score only the first N questions (0 = all).
        name: the name of a model object (default: its ``name`` attribute).

    Returns:
        :class:`Result`: ``res.primary`` is the first pairing's accuracy, ``res.summary["pairings"]`` has every
        pairing's accuracy, 95 % interval, chance and by-N table, ``res.to_pandas()`` one row per question.

    Example:
        >>> res = bindlab.evaluate_mcq("minilm")
        >>> round(res.primary, 3), res.to_pandas().shape[0]
    """
    from bindlab.studies.browse import McqRequest, parse_pairings, run_mcq
    from bindlab.studies.common import embedded_data_for

    model_id, device, batch, dtype = _ref(model, name)
    pairings = parse_pairings(pairings)
    with progress_for(progress, "evaluate_mcq") as report:  # the embedded set's first rendering is on the bar too
        path = _data(data) or embedded_data_for(model_id, pairings, device=device, batch_size=batch, progress=report)
        request = McqRequest(
            data=path,
            model=model_id,
            pairings=pairings,
            limit=limit,
            batch_size=batch,
            device=device,
            dtype=dtype,
            skip_bad=skip_bad,
        )
        return run_mcq(request, report)


def evaluate_retrieval(
    model: Any,
    data: Any = None,
    pairings: Sequence[str] | str = ("tt",),
    limit: int = 0,
    name: str | None = None,
    skip_bad: bool = False,
    progress: Any = True,
) -> Result:
    """Pooled-gallery retrieval of the MCQ captions (mAP with multiple positives, R@1, R@5, by N) — ``eval
    retrieval``. Arguments as :func:`evaluate_mcq`; ``res.primary`` is the first pairing's mAP.

    Example:
        >>> bindlab.evaluate_retrieval("bow").summary["map"]
    """
    from bindlab.studies.browse import McqRequest, parse_pairings, run_retrieval
    from bindlab.studies.common import embedded_data_for

    model_id, device, batch, dtype = _ref(model, name)
    pairings = parse_pairings(pairings)
    with progress_for(progress, "evaluate_retrieval") as report:  # the embedded set's first rendering is on the bar too
        path = _data(data) or embedded_data_for(model_id, pairings, device=device, batch_size=batch, progress=report)
        request = McqRequest(
            data=path,
            model=model_id,
            pairings=pairings,
            limit=limit,
            batch_size=batch,
            device=device,
            dtype=dtype,
            skip_bad=skip_bad,
        )
        return run_retrieval(request, report)


def evaluate_pairs(
    model: Any,
    data: Any = None,
    verbosity: str = "all",
    limit: int = 0,
    seed: int = 0,
    name: str | None = None,
    skip_bad: bool = False,
    progress: Any = True,
) -> Result:
    """Winoground-style 2x2 scores (I2T, T2I, Group) of CompoSET-style single-edit pairs — ``eval pairs``.

    Args:
        model: an image+text model (id, encoder, or object with ``encode_text`` and ``encode_image``).
        data: Pairs JSONL or a datasets folder; None = the embedded mini set (6 scenes x 15 foils).
        verbosity: caption level, ``short|medium|long|all``.
        seed: bootstrap seed of the 95 % intervals.

    Returns:
        :class:`Result`: ``res.primary`` is Group; ``res.summary`` has I2T/T2I/Group overall and by edit type.

    Example:
        >>> bindlab.evaluate_pairs("toy:clip").summary["group"]
    """
    from bindlab.studies.pairs import PairsRequest, default_pairs_dataset, run_pairs

    model_id, device, batch, dtype = _ref(model, name)
    path = _data(data) or default_pairs_dataset()
    request = PairsRequest(
        data=path,
        model=model_id,
        verbosity=verbosity,
        limit=limit,
        batch_size=batch,
        device=device,
        dtype=dtype,
        seed=seed,
        skip_bad=skip_bad,
    )
    with progress_for(progress, "evaluate_pairs") as report:
        return run_pairs(request, report)


def evaluate_benchmark(
    model: Any,
    benchmark: str,
    data: str | None = None,
    images: str | None = None,
    split: str | None = None,
    task: str | None = None,
    source: str = "auto",
    limit: int = 0,
    seed: int = 0,
    name: str | None = None,
) -> Result:
    """A published benchmark through its manifest (winoground, colorswap, sugarcrepe, sugarcrepe_pp,
    aro_vg_attribution) — ``eval benchmark``. ``data``/``images`` name a local copy; ``source="hub"`` downloads
    through ``datasets`` when the hub is reachable; ``task="tot"`` is SugarCrepe++'s text-only task.

    Example:
        >>> bindlab.evaluate_benchmark("minilm", "sugarcrepe_pp", data="scpp/", task="tot")
    """
    from bindlab.studies.benchmark import BenchmarkRequest, run_benchmark

    model_id, device, batch, dtype = _ref(model, name)
    return run_benchmark(
        BenchmarkRequest(
            name=benchmark,
            model=model_id,
            data=data,
            images=images,
            split=split,
            task=task,
            source=source,
            limit=limit,
            batch_size=batch,
            device=device,
            dtype=dtype,
            seed=seed,
        )
    )


def compare(
    models: Sequence[Any],
    suite: Sequence[str] | str = ("mcq",),
    data: Any = None,
    pairs_data: Any = None,
    pairings: Sequence[str] | str = ("tt",),
    verbosity: str = "all",
    limit: int = 0,
    seed: int = 0,
    use_cache: bool = True,
    progress: Any = True,
) -> Result:
    """Several models on one suite, on the same questions — ``compare``: a leaderboard with 95 % intervals and
    chance, per-task tables and the per-question diff.

    Args:
        models: two or more of: encoder ids, encoders, model objects (each object needs a name).
        suite: tasks among ``mcq, retrieval, pairs, benchmark:NAME[=PATH]``.
        data, pairs_data: the MCQ and Pairs files (None = the embedded ones).

    Returns:
        :class:`Result`: ``res.tables["leaderboard"]``, ``res.tables["questions"]`` (one row per question and
        model), …; ``res.frames()`` gives them as DataFrames.

    Example:
        >>> bindlab.compare(["bow", "minilm"], suite=("mcq",)).to_pandas("leaderboard")
    """
    from bindlab.studies.compare import CompareRequest, run_compare

    ids = [_ref(m)[0] for m in models]
    request = CompareRequest(
        models=ids,
        suite=suite,
        data=_data(data),
        pairs_data=_data(pairs_data),
        pairings=pairings,
        verbosity=verbosity,
        limit=limit,
        seed=seed,
        use_cache=use_cache,
    )
    with progress_for(progress, "compare") as report:
        return run_compare(request, report)


# --- tasks: the registry of benchmarks ------------------------------------------------------------------------
def list_tasks() -> list[Any]:
    """Every benchmark bindlab runs (:mod:`bindlab.tasks`): ``mcq``, ``retrieval``, ``pairs``, one per published
    benchmark, and any added by a module of its own; ``t.metadata`` has name, modalities, main score, chance, source.

    Example:
        >>> [t.metadata.name for t in bindlab.list_tasks()][:3]
        ['mcq', 'retrieval', 'pairs']
    """
    from bindlab.tasks import list_tasks as registered

    return registered()


def get_task(name: str) -> Any:
    """The task registered as ``name`` (ValueError naming the tasks there are)."""
    from bindlab.tasks import get_task as registered

    return registered(name)


def run_task(
    task: str,
    model: Any,
    data: Any = None,
    pairings: Sequence[str] | str = ("tt",),
    verbosity: str = "all",
    limit: int = 0,
    seed: int = 0,
    batch_size: int | None = None,
    device: str = "auto",
    progress: Any = True,
    dtype: str = "auto",
) -> Result:
    """One model on one task of the registry — the run Compare makes for each model and task.

    Args:
        task: a task name (``bindlab.list_tasks()``), or ``benchmark:NAME[=PATH]`` as in Compare's suite.
        model: an encoder id, an encoder or a model object.
        data: the task's data file (None = the embedded one for mcq, retrieval and pairs; a published benchmark's
            manifest copy).

    Returns:
        :class:`Result`: ``res.primary`` is the task's main score (``metadata.main_score``).

    Example:
        >>> bindlab.run_task("mcq", "bow", limit=20).primary
    """
    from bindlab.studies.compare import run_task as run
    from bindlab.studies.validate import RunOptions
    from bindlab.tasks import TaskOptions

    model_id, own_device, own_batch, own_dtype = _ref(model)
    checked = RunOptions(  # before any load, as the requests do; an encoder loaded by id keeps its own options
        device=own_device if device == "auto" else device, dtype=own_dtype if dtype == "auto" else dtype
    )
    batch = own_batch if batch_size is None else batch_size
    options = TaskOptions(pairings=pairings, verbosity=verbosity, limit=limit, seed=seed, batch_size=batch)
    with progress_for(progress, task) as report:
        return run(task, model_id, _data(data), options, checked.device, report, checked.dtype)


def ground(
    model: Any,
    data: Any = None,
    factors: str | Sequence[str] = "all",
    alpha: str | float = "auto",
    controls: bool = True,
    n_boot: int = 2000,
    seed: int = 0,
    protocol: str = "context",
    align: str = "none",
    progress: Any = True,
) -> Result:
    """Matched visual grounding of a factor grid: native versus grounded text-to-image retrieval per factor, α chosen
    on validation — ``ground``. ``data`` is a grid folder with ``index.csv`` (None = the default grid, rendered once).

    Example:
        >>> bindlab.ground("toy:clip", factors="pattern").summary["grounded_macro_map"]
    """
    from bindlab.studies.grounding import GroundingRequest, run_grounding

    model_id, device, batch, dtype = _ref(model)
    request = GroundingRequest(
        data=str(data or ""),
        model=model_id,
        factors=factors,
        alpha=alpha,
        controls=controls,
        n_boot=n_boot,
        seed=seed,
        device=device,
        dtype=dtype,
        batch_size=batch or 64,
        protocol=protocol,
        align=align,
    )
    with progress_for(progress, "ground") as report:
        return run_grounding(request, report)


def attention_margins(
    model: str,
    data: Any = None,
    limit: int = 0,
    compare: str = "",
    direction: str = "later_to_earlier",
    seed: int = 0,
    n_boot: int = 1000,
    progress: Any = True,
) -> Result:
    """Per-layer attention binding margins of a text transformer — ``attention``. Needs the model's internals, so
    ``model`` is an encoder id (``minilm``, ``toy:clip``, ``hf:…``, ``qwen3vl:…``, ``lora:…``).

    Example:
        >>> bindlab.attention_margins("minilm", limit=20).summary
    """
    from bindlab.studies.attention import AttentionRequest, run_attention

    if not isinstance(model, str):
        raise TypeError(
            "attention_margins reads a text transformer's attention maps, so it takes an encoder id "
            "(minilm, toy:clip, hf:..., lora:...), not a model object"
        )
    request = AttentionRequest(
        model=model, data=_data(data) or "", limit=limit, compare=compare, direction=direction, seed=seed, n_boot=n_boot
    )
    with progress_for(progress, "attention_margins") as report:
        return run_attention(request, report)


# --- results -------------------------------------------------------------------------------------------------------
def load_result(path: str | Path) -> Result:
    """A :class:`Result` from a file :meth:`Result.save` wrote (every field, NaN kept), or from an ``--out`` file of
    the CLI (the summary only: the result says so in its notes).

    Example:
        >>> res.save("runs/minilm-mcq.json")
        >>> bindlab.load_result("runs/minilm-mcq.json").summary == res.summary
        True

    Raises:
        ValueError: not a result file, or one written by a newer bindlab (its format number is named).
    """
    return Result.load(path)


def plot(result: Result, kind: str | None = None) -> Any:
    """A plotly figure of a result — the figure the CLI's ``--export`` and the app draw: MCQ accuracy by N with chance,
    retrieval mAP by N, Pairs scores by edit type, a comparison's leaderboard (``kind="by_n"``, ``"by_edit_type"``),
    attention margins per layer, grounding AP bars per factor.

    Args:
        result: a :class:`Result` of this API (or :func:`load_result`).
        kind: the figure's name; None = the headline one. A wrong name lists the result's figures.

    Example:
        >>> bindlab.plot(bindlab.evaluate_mcq("minilm")).show()

    Raises:
        ValueError: a study without figures, a result without the tables they draw (from an ``--out`` file), or an
            unknown ``kind``.
    """
    from bindlab.present.result_figures import plot_result

    return plot_result(result, kind)


# --- data ------------------------------------------------------------------------------------------------------------
def generate_saber(
    out: str | Path,
    per_size: int = 200,
    sizes: str | Sequence[int] = "2-10",
    seed: int = 0,
    images: bool = False,
    template: str = "attributive",
    size: int = 256,
    workers: int = 2,
) -> Path:
    """Write a SABER-style MCQ benchmark to ``out/mcq.jsonl`` — ``generate saber``; returns that path.

    Example:
        >>> path = bindlab.generate_saber("runs/saber", per_size=20, sizes="2-4")
    """
    from bindlab.studies.generate import generate_saber_set

    return generate_saber_set(
        out, per_size=per_size, sizes=sizes, seed=seed, images=images, template=template, size=size, workers=workers
    )[0]


def generate_pairs(
    out: str | Path, scenes: int = 80, foils_per_scene: int = 22, seed: int = 0, size: int = 256, workers: int = 2
) -> Path:
    """Write CompoSET-style single-edit pairs (+ images) to ``out/pairs.jsonl`` — ``generate composet``.

    Example:
        >>> path = bindlab.generate_pairs("runs/pairs", scenes=4, foils_per_scene=15, size=128)
    """
    from bindlab.data.composet import generate_composet

    return generate_composet(out, scenes=scenes, foils_per_scene=foils_per_scene, seed=seed, size=size, workers=workers)


def generate_factors(
    out: str | Path,
    shapes: str | int | None = None,
    hues: str | int | None = None,
    patterns: str | int | None = None,
    contexts: int = 12,
    replicas: int = 2,
    size: int = 96,
    seed: int = 0,
    workers: int = 2,
) -> Path:
    """Render a factor grid (shape x hue x pattern x context x replica) for :func:`ground` — ``generate factors``;
    returns the folder. Each factor: None = all its defaults, N = the first N, or a comma list.

    Example:
        >>> grid = bindlab.generate_factors("runs/grid", shapes=3, hues=4, patterns=4, contexts=6, replicas=1)
    """
    from bindlab.data.factors import generate_grid, spec_from_args

    spec = spec_from_args(
        *(None if v is None else str(v) for v in (shapes, hues, patterns)), contexts, replicas, size, seed
    )
    index, _ = generate_grid(out, spec, workers=workers)
    return index.root


def export_dataset(data: str | Path, out: str | Path, name: str | None = None) -> Path:
    """Write a bindlab benchmark (MCQs with or without images, Pairs, triplets, a factor grid) as a Hugging Face
    ``datasets`` folder: parquet with images as the ``Image`` feature and a README.md dataset card — ``bindlab
    export-dataset``. ``datasets.load_dataset(out)`` opens it; every ``data=`` here reads it back.

    Example:
        >>> bindlab.export_dataset("runs/saber/mcq.jsonl", "runs/saber-hf")
    """
    from bindlab.data.hf_datasets import export_dataset as _export

    return _export(data, out, name=name)
