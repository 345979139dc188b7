"""Published benchmarks (``eval benchmark``): Winoground, ColorSwap, SugarCrepe, SugarCrepe++, ARO-VG-Attribution.

:func:`run_benchmark` loads a benchmark through its manifest (``bindlab/data_manifests/``), scores it with its native metric
and the bag-of-words validity check (``bindlab.eval.benchmarks``) and returns a
:class:`~bindlab.result.Result` with provenance (manifest license, citation and URL included).
"""

from __future__ import annotations

from dataclasses import dataclass

from bindlab.result import Result
from bindlab.studies.common import get_encoder
from bindlab.studies.validate import check_run_options, input_path, run_option

SOURCES = ("auto", "local", "hub")
TASKS = ("itt", "tot")


@dataclass
class BenchmarkRequest:
    """What ``eval benchmark`` asks for; validated on construction.

    Raises:
        ValueError: an empty name or model id, an unknown source or task, ``limit`` < 0, ``batch_size`` < 1, a
            negative seed or an empty device, each named with the value given.
    """

    name: str  # manifest name (winoground, colorswap, sugarcrepe, sugarcrepe_pp, aro_vg_attribution) or .json path
    model: str = run_option(  # image+text, or text-only for task "tot"
        "model",
        required=True,
        empty="model: give an encoder id, e.g. toy:clip, hf:/path/to/clip (or minilm for --task tot)",
    )
    data: str | None = None  # local copy in the published format (overrides the manifest's path)
    images: str | None = None  # image folder (COCO val2017 for SugarCrepe/SugarCrepe++, VG images for ARO)
    split: str | None = None  # split name(s), comma-separated; None = all
    task: str | None = None  # "itt" (image-to-text, the default) or "tot" (SugarCrepe++ text-only)
    source: str = "auto"  # auto | local | hub
    limit: int = run_option("limit")  # at most N items per split; 0 = all
    batch_size: int | None = run_option("batch_size")  # None = the backend's default
    device: str = run_option("device")
    seed: int = run_option("seed")  # bootstrap seed of the 95 % intervals
    dtype: str = run_option("dtype")  # the precision a hub model runs in

    def __post_init__(self) -> None:
        self.name = (self.name or "").strip()
        if not self.name:
            raise ValueError(
                "name: give a benchmark name (winoground, colorswap, sugarcrepe, sugarcrepe_pp, "
                "aro_vg_attribution) or a manifest .json path"
            )
        check_run_options(self)  # model, limit, batch size, device, seed (RunOptions)
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {list(SOURCES)}, got {self.source!r}")
        if self.task is not None and self.task.lower() not in TASKS:
            raise ValueError(f"task must be one of {list(TASKS)}, got {self.task!r}")
        from bindlab.data.adapters import check_benchmark_name

        self.name = check_benchmark_name(self.name)  # public mode: a manifest's name only, one message otherwise
        paths = {"data": self.data, "images": self.images}
        if self.name.endswith(".json") or "/" in self.name:  # a manifest given by path
            paths["name"] = self.name
        for name, value in paths.items():  # inside the allowed data roots
            if value and str(value).strip():
                input_path(str(value).strip(), name, must_exist=False)


def run_benchmark(request: BenchmarkRequest) -> Result:
    """Score a published benchmark with its native metric and the bag-of-words validity check: the benchmark's task
    (:class:`bindlab.tasks.published.PublishedTask`, the one Compare runs too).

    Returns:
        ``Result("benchmark")``: summary = :func:`bindlab.eval.benchmarks.evaluate_benchmark`'s summary
        (``benchmark``, ``task``, ``n``, ``native_metric``, ``validity``, ``bow_text_only`` …) plus
        ``"native_value"`` (the primary metric); rows = per-item pass/fail; provenance settings carry the source
        and the manifest's license, citation and URL.
    """
    from bindlab.tasks import TaskOptions
    from bindlab.tasks.published import for_manifest

    encoder = get_encoder(request.model, request.device, request.batch_size, request.dtype)
    options = TaskOptions(
        limit=request.limit,
        seed=request.seed,
        batch_size=request.batch_size,
        variant=request.task,
        split=request.split,
        images=request.images,
        source=request.source,
    )
    return for_manifest(request.name).run(encoder, request.data, options)
