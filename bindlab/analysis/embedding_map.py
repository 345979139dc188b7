"""Embedding map: a 2-D layout of the queries and candidates of a SABER subset, in every modality a model has.

One *point* is one item (the query or one of the four candidates) of one question in one modality. Points carry
the question id, the item's role (``query`` or the candidate's role in docs/architecture.md, "MCQ (SABER-style)"), the modality, N, whether the
model answers that question correctly in that modality (text points: text→text, image points: image→image;
correct = the preserve candidate scores strictly highest, so ties count as wrong), the caption and the image path.

Layouts: PCA (numpy SVD, instant) and UMAP (umap-learn; its first run in a process compiles with numba). This module
is the maths only (subset choice, points, layouts, cache keys); embedding a file with a model and the on-disk layout
cache (``home()/maps/``, keyed by :func:`layout_key`, so a map seen once reopens at once) are the Map study's,
:mod:`bindlab.studies.map`.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bindlab import heavy
from bindlab.data.schema import MCQ

QUERY = "query"
METHODS = ("pca", "umap")
COLOR_BY = ("role", "modality", "n", "correct")
METRICS = ("cosine", "euclidean", "correlation", "manhattan")
DEFAULT_LIMIT = 60
DEFAULT_N_NEIGHBORS = 15
MAX_N_NEIGHBORS = 500  # UMAP's useful range is 2..~200; a larger neighbourhood only costs memory (numba's kNN graph)

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class LayoutParams:
    """UMAP settings. PCA ignores them, but they are part of every cache key (one key scheme for both)."""

    n_neighbors: int = DEFAULT_N_NEIGHBORS  # UMAP neighbourhood size, 2..MAX_N_NEIGHBORS and below the points
    min_dist: float = 0.1  # UMAP minimum distance between embedded points
    metric: str = "cosine"  # distance in the embedding space
    seed: int = 0  # UMAP random_state (also the subset sampling seed in build_map)

    def __post_init__(self) -> None:
        if not 2 <= int(self.n_neighbors) <= MAX_N_NEIGHBORS:
            raise ValueError(f"n_neighbors must be between 2 and {MAX_N_NEIGHBORS}, got {self.n_neighbors}")
        if not 0.0 <= float(self.min_dist) <= 1.0:
            raise ValueError(f"min_dist must be between 0 and 1, got {self.min_dist}")
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; choose from {list(METRICS)}")


@dataclass
class MapData:
    """The points of a map and their embeddings (before any layout).

    ``vectors`` is None in a map that does not keep them (:meth:`without_vectors`: a session's map, a study's
    result); :func:`bindlab.studies.map.map_vectors` then reads the same vectors back from the embedding cache.
    """

    path: Path  # the MCQ file
    model: str  # encoder id as the encoder reports it
    fingerprint: str  # encoder fingerprint (weights hash)
    data_hash: str  # fingerprint of the file + the selected question ids + the modalities
    modalities: list[str]
    points: list[dict[str, Any]]
    vectors: np.ndarray | None  # (p, d) unit vectors, one row per point; None when not kept
    accuracy: dict[str, float] = field(default_factory=dict)  # modality -> share of questions answered correctly
    notes: list[str] = field(default_factory=list)  # e.g. "image points left out: ..."

    def question_ids(self) -> list[str]:
        return list(dict.fromkeys(p["question"] for p in self.points))

    def without_vectors(self) -> MapData:
        """The same map without its vectors (164 MB for 10,000 ``bow`` points; the points are a few MB)."""
        return replace(self, vectors=None)


# --- subset and points (pure) --------------------------------------------------------------------------------------
def parse_n_objects(spec: str | Sequence[int | str] | None) -> list[int] | None:
    """``"2,3"`` / ``"2-4"`` / ``[2, 3]`` -> sorted N values; ``None``, ``""``, ``"all"`` or ``[]`` -> None (all N)."""
    if spec is None:
        return None
    if isinstance(spec, str):
        text = spec.strip().lower()
        if text in ("", "all"):
            return None
        from bindlab.data.saber import parse_sizes

        return parse_sizes(text)
    try:
        values = sorted({int(v) for v in spec})
    except (TypeError, ValueError):
        raise ValueError(f"numbers of objects {list(spec)!r} must be integers such as 2, 3") from None
    return values or None


def select_questions(
    questions: Sequence[MCQ], n_objects: Sequence[int] | None = None, limit: int = DEFAULT_LIMIT, seed: int = 0
) -> list[MCQ]:
    """A seeded random subset of at most ``limit`` questions with N in ``n_objects`` (all N when None).

    The chosen questions keep their order in the file. Raises ValueError when nothing matches.
    """
    if int(limit) < 1:
        raise ValueError(f"subset size must be at least 1, got {limit}")
    wanted = set(n_objects or [])
    pool = [q for q in questions if not wanted or q.n_objects in wanted]
    if not pool:
        have = sorted({q.n_objects for q in questions})
        raise ValueError(f"no question has N in {list(n_objects or [])}; this file has N = {have}")
    if len(pool) <= limit:
        return list(pool)
    keep = set(random.Random(seed).sample(range(len(pool)), int(limit)))
    return [q for i, q in enumerate(pool) if i in keep]


def full_credit(scores: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """``(q, 4)`` scores, ``(q,)`` answers -> ``(q,)`` bool: the preserve candidate scores strictly highest."""
    from bindlab.eval.metrics import mcq_credit

    return mcq_credit(scores, answers) >= 1.0


def item_points(
    questions: Sequence[MCQ], root: str | Path, modality: str, correct: Sequence[bool]
) -> list[dict[str, Any]]:
    """One point per query and candidate of every question, in ``embed_questions`` order (query, then candidates).

    Returns:
        dicts ``{id, question, item (0 = query, 1..4 = candidate), role, modality, n_objects, subset, correct,
        caption, image}``; ``id`` is ``"<question>/<modality>/<role>"`` (the candidate number is added when a
        question repeats a role).
    """
    out = []
    for q, ok in zip(questions, correct, strict=True):
        seen: set[str] = set()
        for k, it in enumerate((q.query, *q.candidates)):
            role = QUERY if k == 0 else (it.role or f"candidate{k}")
            tag = role if role not in seen else f"{role}{k}"
            seen.add(role)
            out.append(
                {
                    "id": f"{q.id}/{modality}/{tag}",
                    "question": q.id,
                    "item": k,
                    "role": role,
                    "modality": modality,
                    "n_objects": q.n_objects,
                    "subset": q.subset,
                    "correct": bool(ok),
                    "caption": it.text,
                    "image": str(Path(root) / it.image) if it.image else None,
                }
            )
    return out


def data_fingerprint(file_hash: str, question_ids: Sequence[str], modalities: Sequence[str]) -> str:
    """Fingerprint of what a map is drawn from: the file's sha256, the chosen questions and the modalities."""
    blob = json.dumps([file_hash, list(question_ids), list(modalities)])
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


# --- layouts (pure maths) ------------------------------------------------------------------------------------------
def pca_2d(x: np.ndarray) -> np.ndarray:
    """First two principal components of ``x`` ``(p, d)`` -> ``(p, 2)``, signs fixed so that each axis's largest
    loading is positive (the layout does not flip between runs). Fewer than two usable directions give zeros."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) == 0:
        raise ValueError(f"PCA needs a non-empty (points, dims) array, got shape {x.shape}")
    centred = x - x.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)  # vt: (min(p, d), d)
    comps = np.zeros((2, x.shape[1]))
    comps[: min(2, len(vt))] = vt[:2]
    for c in comps:
        if np.any(c):
            c *= np.sign(c[np.argmax(np.abs(c))])
    return (centred @ comps.T).astype(np.float32)


def umap_2d(x: np.ndarray, params: LayoutParams = LayoutParams()) -> np.ndarray:
    """UMAP of ``x`` ``(p, d)`` -> ``(p, 2)`` with ``params`` (deterministic for a seed; single-threaded).

    ``n_neighbors`` is checked against the points before umap-learn sees it: a chosen value must be below the number
    of points; the default (:data:`DEFAULT_N_NEIGHBORS`) is lowered to ``p - 1`` on a smaller map.
    """
    x = np.asarray(x, dtype=np.float32)
    if len(x) < 4:
        raise ValueError(f"UMAP needs at least 4 points, got {len(x)}; choose PCA or a larger subset")
    n_neighbors = int(params.n_neighbors)
    if n_neighbors >= len(x):
        if n_neighbors != DEFAULT_N_NEIGHBORS:
            raise ValueError(
                f"n_neighbors {n_neighbors} is not below the map's {len(x)} points; choose 2 to "
                f"{len(x) - 1} (or a larger subset)"
            )
        n_neighbors = len(x) - 1
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # umap's notes about n_jobs with a seed and about tiny graphs
        umap = heavy.module("umap")

        reducer = umap.UMAP(
            n_components=2,
            n_neighbors=n_neighbors,
            min_dist=float(params.min_dist),
            metric=params.metric,
            random_state=int(params.seed),
            n_jobs=1,
            init="spectral" if len(x) > 10 else "random",
        )
        return np.asarray(reducer.fit_transform(x), dtype=np.float32)


def compute_layout(x: np.ndarray, method: str, params: LayoutParams = LayoutParams()) -> np.ndarray:
    """``method`` in :data:`METHODS` -> ``(p, 2)`` coordinates."""
    if method == "pca":
        return pca_2d(x)
    if method == "umap":
        return umap_2d(x, params)
    raise ValueError(f"unknown map method {method!r}; choose from {list(METHODS)}")


# --- cache keys ----------------------------------------------------------------------------------------------------
def layout_key(fingerprint: str, data_hash: str, method: str, params: LayoutParams) -> str:
    """Cache key of a layout: model fingerprint + data fingerprint + method + params."""
    blob = json.dumps(
        {"model": fingerprint, "data": data_hash, "method": method, "params": asdict(params)}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


# --- records ------------------------------------------------------------------------------------------------------
def layout_records(data: MapData, xy: np.ndarray) -> list[dict[str, Any]]:
    """Points with their coordinates ``x``, ``y`` (for the JSON next to an exported map)."""
    return [{**p, "x": float(a), "y": float(b)} for p, (a, b) in zip(data.points, np.asarray(xy), strict=True)]


def summary_line(data: MapData) -> str:
    """One line: model, questions, points, modalities and accuracy per modality."""
    acc = ", ".join(f"{m}→{m} {a:.3f}" for m, a in data.accuracy.items())
    return (
        f"{data.model}: {len(data.question_ids())} questions, {len(data.points)} points "
        f"({' + '.join(data.modalities)}); correct share {acc}"
    )


# --- neighbours, search and selections (pure) ---------------------------------------------------------------------
def nearest_neighbours(vectors: np.ndarray, index: int, k: int = 10) -> list[tuple[int, float]]:
    """The ``k`` points nearest to point ``index`` by cosine similarity in the full embedding space (not the 2-D
    layout, which distorts distances), the point itself left out.

    Args:
        vectors: ``(p, d)`` embeddings, one row per point (normalised here, so any scale works).
        index: the point whose neighbours are wanted.
        k: how many (fewer when the map has fewer other points).

    Returns:
        ``[(point index, cosine), ...]``, most similar first; ties broken by the lower index.
    """
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2 or not 0 <= int(index) < len(x):
        raise ValueError(f"point {index} is not one of the map's {len(x)} points")
    if int(k) < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    norms = np.linalg.norm(x, axis=1)
    unit = x / np.where(norms > 0, norms, 1.0)[:, None]
    cos = unit @ unit[int(index)]  # (p,)
    order = [j for j in np.lexsort((np.arange(len(x)), -cos)) if j != int(index)]
    return [(int(j), float(cos[j])) for j in order[: int(k)]]


MAX_SEARCH_CHARS = 200  # a search is a few words; 100 KB of words once cost two minutes of CPU per redraw
MAX_SEARCH_WORDS = 20


def search_points(points: Sequence[dict[str, Any]], query: str) -> list[int]:
    """Indices of the points whose caption contains every word of ``query`` (case-insensitive); empty query -> [].

    Raises:
        ValueError: a query over :data:`MAX_SEARCH_CHARS` characters or :data:`MAX_SEARCH_WORDS` words, refused
            before any caption is read.
    """
    text = str(query or "")
    if len(text) > MAX_SEARCH_CHARS:
        raise ValueError(
            f"search: at most {MAX_SEARCH_CHARS} characters, got {len(text):,}; search for a few words, e.g. 'red cube'"
        )
    words = list(dict.fromkeys(text.lower().split()))
    if len(words) > MAX_SEARCH_WORDS:
        raise ValueError(
            f"search: at most {MAX_SEARCH_WORDS} different words, got {len(words)}; search for a few "
            "words, e.g. 'red cube'"
        )
    if not words:
        return []
    return [i for i, p in enumerate(points) if all(w in str(p.get("caption", "")).lower() for w in words)]


def selection_summary(points: Sequence[dict[str, Any]], indices: Sequence[int]) -> dict[str, Any]:
    """What a box or lasso selection holds: its points, how many questions they come from and the share of those
    (question, modality) pairs the model answers correctly.

    Returns:
        ``{"n_points", "n_questions", "n_correct", "n_answers", "accuracy" (None when empty), "roles": {role: count}}``.
    """
    chosen = [points[i] for i in dict.fromkeys(int(i) for i in indices) if 0 <= i < len(points)]
    answers = {(p["question"], p["modality"]): bool(p["correct"]) for p in chosen}
    roles: dict[str, int] = {}
    for p in chosen:
        roles[p["role"]] = roles.get(p["role"], 0) + 1
    n_correct = sum(answers.values())
    return {
        "n_points": len(chosen),
        "n_questions": len({p["question"] for p in chosen}),
        "n_correct": n_correct,
        "n_answers": len(answers),
        "accuracy": n_correct / len(answers) if answers else None,
        "roles": roles,
    }
