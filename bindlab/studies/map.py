"""The Map feature: embed a seeded SABER subset with one encoder and lay its points out in 2-D (PCA / UMAP).

A :class:`MapRequest` validates every input before work starts (the subset size is capped, the UMAP settings must
be finite). :func:`run_map` is the one function the ``map`` command and the Map tab call: it embeds the subset
(:func:`prepare_map`, through the embedding cache), reads the layout from the disk cache or computes it
(:func:`cached_layout`) and returns a :class:`~bindlab.result.Result`. The tab embeds once and asks for
PCA, then UMAP, on the same :class:`~bindlab.analysis.embedding_map.MapData` (``prepared``), so the second layout
never re-embeds. A result's map, and so a session's, keeps no vectors (164 MB for 10,000 ``bow`` points): a layout
or a point's neighbours read them back from the embedding cache (:func:`map_vectors`), the same float32 values, so
the same numbers. The maths (subset choice, points, layouts) lives in :mod:`bindlab.analysis.embedding_map`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.analysis.embedding_map import (
    COLOR_BY,
    DEFAULT_LIMIT,
    DEFAULT_N_NEIGHBORS,
    MAX_N_NEIGHBORS,
    MAX_SEARCH_CHARS,
    METHODS,
    METRICS,
    LayoutParams,
    MapData,
    Progress,
    compute_layout,
    data_fingerprint,
    full_credit,
    item_points,
    layout_key,
    layout_records,
    nearest_neighbours,
    parse_n_objects,
    search_points,
    select_questions,
    selection_summary,
    summary_line,
)
from bindlab.result import Result
from bindlab.studies.validate import (
    check_options,  # allowed data roots and size caps, as the CLI entry
    check_run_options,
    encoder_id,
    run_option,
)

MAX_LIMIT = 2000  # questions per map: 2000 x 5 items x 2 modalities = 20,000 points, about what a browser can draw
DEFAULT_MODEL = "minilm"

__all__ = [
    "COLOR_BY",
    "DEFAULT_LIMIT",
    "DEFAULT_N_NEIGHBORS",
    "MAX_LIMIT",
    "MAX_N_NEIGHBORS",
    "MAX_SEARCH_CHARS",
    "METHODS",
    "METRICS",
    "LayoutParams",
    "MapData",
    "MapRequest",
    "cached_layout",
    "map_provenance",
    "map_title",
    "map_vectors",
    "point_neighbours",
    "prepare_map",
    "run_map",
    "search_points",
    "selected_points",
    "summary_line",
]


@dataclass(frozen=True)
class MapRequest:
    """One map: which points (model, file, subset) and how to lay them out. Validated on construction."""

    model: str = run_option(
        "model", default=DEFAULT_MODEL
    )  # encoder id (minilm, bow, toy:clip, ...); image points when it embeds images
    data: str = ""  # MCQ JSONL; empty = the embedded mini benchmark (with images for image models)
    n_objects: tuple[int, ...] | None = None  # N values to keep (None = every N); "2,3", "2-4", [2, 3] are parsed
    limit: int = run_option("limit", default=DEFAULT_LIMIT)  # at most this many questions (seeded sample), 1..MAX_LIMIT
    method: str = "umap"  # layout, one of METHODS
    color: str = "role"  # colour points by, one of COLOR_BY
    n_neighbors: int = DEFAULT_N_NEIGHBORS  # UMAP neighbourhood size (2..MAX_N_NEIGHBORS, below the points)
    min_dist: float = 0.1  # UMAP minimum distance, in [0, 1]
    metric: str = "cosine"  # UMAP distance, one of METRICS
    seed: int = run_option("seed")  # subset sampling and UMAP seed

    def __post_init__(self) -> None:
        check_run_options(self)  # model, limit, seed (RunOptions; the caps and the map's own range below)
        model = encoder_id(self.model, DEFAULT_MODEL)  # a malformed id is refused before anything loads
        sizes = parse_n_objects(self.n_objects if not isinstance(self.n_objects, tuple) else list(self.n_objects))
        if self.method not in METHODS:
            raise ValueError(f"unknown map method {self.method!r}; choose from {list(METHODS)}")
        if self.color not in COLOR_BY:
            raise ValueError(f"unknown colour {self.color!r}; choose from {list(COLOR_BY)}")
        data = str(self.data or "").strip()
        ok = check_options(
            {
                "data": data or None,
                "limit": self.limit,
                "n_neighbors": self.n_neighbors,
                "min_dist": self.min_dist,
                "seed": self.seed,
            }
        )
        if not 1 <= ok["limit"] <= MAX_LIMIT:
            raise ValueError(f"--limit {ok['limit']} questions: a map takes 1 to {MAX_LIMIT} (a seeded sample)")
        if ok["seed"] >= 2**32:
            raise ValueError(f"--seed must be below 2**32 (UMAP's random state), got {ok['seed']}")
        for name, value in (
            ("model", model),
            ("data", data),
            ("n_objects", tuple(sizes) if sizes else None),
            ("limit", ok["limit"]),
            ("n_neighbors", ok["n_neighbors"]),
            ("min_dist", ok["min_dist"]),
            ("seed", ok["seed"]),
        ):
            object.__setattr__(self, name, value)
        self.params  # noqa: B018 - LayoutParams checks the metric and the ranges once more

    @property
    def params(self) -> LayoutParams:
        """The UMAP settings (part of every layout cache key, PCA's included)."""
        return LayoutParams(n_neighbors=self.n_neighbors, min_dist=self.min_dist, metric=self.metric, seed=self.seed)

    def settings(self) -> dict[str, Any]:
        """What the provenance records about the subset and the layout."""
        return {
            "method": self.method,
            "params": asdict(self.params),
            "n_objects": list(self.n_objects) if self.n_objects else "all",
            "limit": self.limit,
            "color": self.color,
        }


# --- embedding the subset ------------------------------------------------------------------------------------------
def resolve_data(data: str | Path | None, encoder: Any, progress: Progress | None = None) -> Path:
    """The MCQ file to map: ``data`` when given, else the embedded default (with images when the model has them)."""
    text = str(data or "").strip()
    if text:
        from bindlab.studies.validate import data_input

        p = data_input(text, "data", "mcq")  # a datasets folder becomes its mcq.jsonl
        if not p.is_file():
            raise FileNotFoundError(
                f"{p}: MCQ file not found; generate one with 'python -m bindlab generate saber --out DIR [--images]'"
            )
        return p
    from bindlab.studies.common import default_dataset

    return default_dataset(images="image" in encoder.modalities, progress=progress)


def prepare_map(request: MapRequest, progress: Progress | None = None) -> MapData:
    """Embed the request's seeded subset with its model (through the embedding cache) into map points.

    Returns:
        :class:`MapData` with text points, and image points when the model embeds images and every chosen item
        has an image file (otherwise a note says why they are left out).
    """
    from bindlab.data.saber_images import check_images
    from bindlab.data.schema import file_sha256, load_mcqs
    from bindlab.eval.mcq import embed_questions, score_mcq
    from bindlab.studies.common import get_encoder

    encoder = get_encoder(request.model)
    path = resolve_data(request.data, encoder, progress)
    questions, _ = load_mcqs(path)
    chosen = select_questions(questions, request.n_objects, request.limit, request.seed)
    modalities, notes = ["text"], []
    problems = check_images(chosen, path.parent)  # refuses a FIFO, device or folder as an image (thumbnails read them)
    if "image" in encoder.modalities:
        if problems:
            notes.append(f"image points left out: {len(problems)} image problem(s), e.g. {problems[0]}")
        else:
            modalities.append("image")
    else:
        notes.append(f"{encoder.id} has no image tower: text points only")
    answers = np.array([q.answer for q in chosen])
    points, vectors, accuracy = [], [], {}
    for i, m in enumerate(modalities):
        if progress:
            progress(i / (len(modalities) + 1), f"embedding {m}s of {len(chosen)} questions with {encoder.id}")
        queries, cands = embed_questions(chosen, path.parent, encoder, m)  # (q, d), (q, 4, d)
        correct = full_credit(score_mcq(queries, cands), answers)
        accuracy[m] = float(np.mean(correct))
        points += item_points(chosen, path.parent, m, correct)
        vectors.append(np.concatenate([queries[:, None], cands], axis=1).reshape(-1, queries.shape[-1]))
    data_hash = data_fingerprint(file_sha256(path), [q.id for q in chosen], modalities)
    return MapData(
        path,
        encoder.id,
        encoder.fingerprint,
        data_hash,
        modalities,
        points,
        np.concatenate(vectors).astype(np.float32),
        accuracy,
        notes,
    )


def map_vectors(data: MapData) -> np.ndarray:
    """The ``(p, d)`` float32 vectors of the map's points: the kept ones, else those :func:`prepare_map` embedded,
    read back from the embedding cache by the map's model fingerprint, captions and image files (no model is loaded
    or run, so the point panel may ask outside the GPU queue).

    Raises:
        ValueError: when some are no longer there (the cache was cleared, an image file changed): make the map again.
    """
    if data.vectors is not None:
        return data.vectors
    from bindlab.encoders.service import cached_vectors

    parts = []
    for m in data.modalities:  # the points are in this order: every text point, then every image point
        items = [p["caption"] if m == "text" else p["image"] for p in data.points if p["modality"] == m]
        try:
            parts.append(cached_vectors(data.fingerprint, m, items))
        except LookupError as e:
            raise ValueError(f"this map's embeddings are no longer all cached ({e}); make the map again") from None
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


# --- the layout cache ----------------------------------------------------------------------------------------------
def cache_dir() -> Path:
    """``home()/maps``: one ``.npy`` file per cached layout."""
    from bindlab.config import home

    d = home() / "maps"
    d.mkdir(parents=True, exist_ok=True)
    return d


def cached_layout(
    data: MapData, method: str, params: LayoutParams = LayoutParams(), folder: str | Path | None = None
) -> tuple[np.ndarray, bool]:
    """The ``(p, 2)`` layout of ``data`` by ``method``, from the disk cache when there.

    The key is model fingerprint + data fingerprint + method + params
    (:func:`~bindlab.analysis.embedding_map.layout_key`).

    Returns:
        ``(layout, from_cache)``. A cached file that is unreadable or of the wrong shape is recomputed.
    """
    if method not in METHODS:
        raise ValueError(f"unknown map method {method!r}; choose from {list(METHODS)}")
    path = Path(folder or cache_dir()) / f"{layout_key(data.fingerprint, data.data_hash, method, params)}.npy"
    try:
        xy = np.load(path, allow_pickle=False)
        if xy.shape == (len(data.points), 2) and np.isfinite(xy).all():
            return xy, True
    except (OSError, ValueError):
        pass
    xy = compute_layout(map_vectors(data), method, params)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npy.tmp")
    with os.fdopen(fd, "wb") as f:
        np.save(f, xy)
    os.replace(tmp, path)  # atomic: a reader never sees a partial file
    return xy, False


# --- the study -----------------------------------------------------------------------------------------------------
def map_provenance(data: MapData, settings: dict[str, Any] | None = None, seed: int | None = None) -> dict[str, Any]:
    """The provenance record of a map: its MCQ file, the encoder that embedded it, the subset and the layout settings."""
    from types import SimpleNamespace

    from bindlab.provenance import provenance

    encoder = SimpleNamespace(id=data.model, fingerprint=data.fingerprint)
    return provenance(
        data.path,
        encoder,
        {
            "kind": "map",
            "modalities": data.modalities,
            "data_hash": data.data_hash,
            "accuracy": data.accuracy,
            **(settings or {}),
        },
        seed,
    )


def map_title(data: MapData, method: str) -> str:
    """The figure title both faces show."""
    return f"{data.model} · {method.upper()} of {len(data.points)} points (circle = text, square = image)"


def run_map(
    request: MapRequest,
    prepared: MapData | None = None,
    progress: Progress | None = None,
    cache_folder: str | Path | None = None,
) -> Result:
    """Embed the subset (unless ``prepared`` holds it already) and lay it out by ``request.method``.

    Args:
        request: the validated request.
        prepared: the :func:`prepare_map` of this request, to lay out again without re-embedding (the tab's UMAP
            step after its PCA); it must come from the same request's subset.
        progress: optional ``(fraction, message)`` callback.
        cache_folder: layout cache folder (default ``home()/maps``).

    Returns:
        ``Result("map")``: ``summary`` = model, fingerprint, counts, modalities, correct share per modality, method,
        ``from_cache``; ``rows`` = every point with its ``x``, ``y``; ``figures_data`` = ``{"map": MapData (without its
        vectors: map_vectors reads them back), "method", "xy": (p, 2) array, "color", "title"}``; ``notes`` = why
        points were left out.
    """
    data = prepared if prepared is not None else prepare_map(request, progress)
    xy, hit = cached_layout(data, request.method, request.params, cache_folder)
    summary = {
        "model": data.model,
        "fingerprint": data.fingerprint,
        "data": str(data.path),
        "n_questions": len(data.question_ids()),
        "n_points": len(data.points),
        "modalities": data.modalities,
        "correct_share": dict(data.accuracy),
        "method": request.method,
        "from_cache": hit,
        "line": summary_line(data),
    }
    return Result(
        "map",
        summary,
        rows=layout_records(data, xy),
        figures_data={
            "map": data.without_vectors(),
            "method": request.method,
            "xy": xy,
            "color": request.color,
            "title": map_title(data, request.method),
        },
        provenance=map_provenance(data, request.settings(), request.seed),
        notes=list(data.notes),
    )


# --- looking into a map (the tab's point panel, search and selection) ---------------------------------------------
def point_index(data: MapData, point_id: str) -> int:
    """The index of the point with id ``point_id``; ValueError naming an example id when there is none."""
    for i, p in enumerate(data.points):
        if p["id"] == point_id:
            return i
    raise ValueError(f"no point {point_id!r} in this map (a point id looks like {data.points[0]['id']!r})")


def point_neighbours(data: MapData, point_id: str, k: int = 10) -> list[dict[str, Any]]:
    """The ``k`` nearest points to ``point_id`` by cosine in the full embedding space (not the 2-D layout); a map
    without its vectors reads them back from the embedding cache (:func:`map_vectors`), so the rows are the same.

    Returns:
        rows ``{rank, cosine, id, role, modality, same_question, correct, caption}``, most similar first.
    """
    index = point_index(data, point_id)
    me = data.points[index]
    rows = []
    for rank, (j, cos) in enumerate(nearest_neighbours(map_vectors(data), index, k), 1):
        p = data.points[j]
        rows.append(
            {
                "rank": rank,
                "cosine": round(cos, 4),
                "id": p["id"],
                "role": p["role"],
                "modality": p["modality"],
                "same_question": p["question"] == me["question"],
                "correct": p["correct"],
                "caption": p["caption"],
            }
        )
    return rows


def selected_points(data: MapData, indices: Sequence[int]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A box or lasso selection: its summary (:func:`~bindlab.analysis.embedding_map.selection_summary`) and one
    row per selected point ``{id, question, role, modality, n_objects, correct, caption}``."""
    bad = [i for i in indices if not 0 <= int(i) < len(data.points)]
    if bad:
        raise ValueError(
            f"selected point {bad[0]} is not one of the map's {len(data.points)} points; make the map again"
        )
    keep = list(dict.fromkeys(int(i) for i in indices))
    rows = [
        {k: data.points[i][k] for k in ("id", "question", "role", "modality", "n_objects", "correct", "caption")}
        for i in keep
    ]
    return selection_summary(data.points, keep), rows
