"""Matched visual grounding on a factor grid (the ``ground`` command and the Grounding tab): one study, two faces.

A :class:`GroundingRequest` validates what a face asked for; :func:`run_grounding` runs it and returns the one
:class:`~bindlab.result.Result` both faces format, so ``ground --out`` and the tab's report give the same
numbers. Underneath, a :class:`GroundingSession` holds one grid's image embeddings (computed once through the
persistent embedding cache) and the native text queries of each factor; :meth:`GroundingSession.state` builds and
memoises the :class:`~bindlab.analysis.grounding.GroundingState` of a factor, after which moving alpha is vector
maths only (:func:`slider_view`, the tab's slider). :func:`open_session` memoises sessions per (grid, encoder) in
this process. The maths lives in :mod:`bindlab.analysis.grounding` and :mod:`bindlab.analysis.grounding_controls`.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.analysis.grounding import ALPHA_GRID, GroundingState, native_queries, pencil_scores
from bindlab.analysis.grounding_controls import grounding_audit
from bindlab.data.factors import FACTORS, FactorIndex, load_index
from bindlab.eval.metrics import TIE_TOL
from bindlab.result import Result
from bindlab.studies.validate import check_run_options, run_option

__all__ = [
    "ALIGNMENTS",
    "ALPHA_GRID",
    "FACTORS",
    "PROTOCOLS",
    "GroundingRequest",
    "GroundingSession",
    "TOP_K",
    "clear_sessions",
    "factor_report",
    "open_session",
    "resolve_grid",
    "run_grounding",
    "slider_payload",
    "slider_view",
    "state_payload",
    "top_images",
    "validation_choice",
]

Progress = Callable[[float, str], None]
MAX_SESSIONS = 4  # sessions kept in memory (each holds (n, d) float32 embeddings)
MAX_SESSION_BYTES = 256 << 20  # and at most this much of them, the newest always kept
TOP_K = 8  # images shown for the grounded query
MAP_POINTS = 1500  # test images drawn in the 2-D view (a fixed, evenly spaced subsample)
ALPHA_MAX = float(ALPHA_GRID[-1])  # the largest alpha a request may fix (8)


PROTOCOLS = ("context", "combination")  # held-out protocols (paper Table 2: context holdout, unseen combinations)
ALIGNMENTS = ("none", "shared", "factor")  # global alignment baselines (paper §3.4): none, A_shared, A_f


def check_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    return protocol


def check_factor(factor: str) -> str:
    if factor not in FACTORS:
        raise ValueError(f"unknown factor {factor!r}; choose one of {', '.join(FACTORS)}")
    return factor


def check_alpha(alpha: Any) -> str | float:
    """``"auto"`` or a finite number in [0, :data:`ALPHA_MAX`] (a numeric string is read as a number).

    Raises:
        ValueError: anything else, naming the value.
    """
    if isinstance(alpha, str):
        if alpha.strip().lower() == "auto":
            return "auto"
        try:
            value = float(alpha)
        except ValueError:
            value = math.nan
    elif isinstance(alpha, (int, float)) and not isinstance(alpha, bool):
        value = float(alpha)
    else:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= ALPHA_MAX):
        raise ValueError(f"alpha must be 'auto' or a number in [0, {ALPHA_MAX:g}], got {alpha!r}")
    return value


def parse_factors(spec: str | Sequence[str]) -> tuple[str, ...]:
    """``"all"``, one factor, a comma list, or a sequence of factors -> a tuple of known factors (order kept).

    Raises:
        ValueError: an unknown factor or an empty choice, naming it and the choices.
    """
    if isinstance(spec, str):
        factors = list(FACTORS) if spec.strip() == "all" else [f.strip() for f in spec.split(",") if f.strip()]
    else:
        factors = [str(f).strip() for f in spec]
    bad = [f for f in factors if f not in FACTORS]
    if bad or not factors:
        raise ValueError(f"factor {spec!r}: choose from {', '.join(FACTORS)}, a comma list or 'all'")
    return tuple(dict.fromkeys(factors))


MODEL_EMPTY = "model is empty; enter an image+text encoder id, e.g. toy:clip or hf:/path/to/clip"


# ---------------------------------------------------------------------------------------------- the request
@dataclass
class GroundingRequest:
    """What one grounding run asks for; validated on construction (``ValueError`` naming the bad value).

    Attributes:
        data: factor grid folder (with ``index.csv``) or the ``index.csv`` itself; ``""`` = the default grid
            (rendered once under ``$BINDLAB_HOME`` by :func:`resolve_grid`).
        model: image+text encoder id, e.g. ``toy:clip`` or ``hf:/path/to/clip``.
        factors: ``"all"``, a factor, a comma list or a sequence; normalised to a tuple of :data:`FACTORS`.
        alpha: ``"auto"`` (chosen on validation, the protocol) or a fixed finite number in [0, 8].
        controls: also run the controls (attraction, mismatched directions, image prototype, selective gate).
        n_boot: bootstrap resamples of the selective-grounding gate (>= 1).
        seed: bootstrap seed.
        device, batch_size: as :class:`~bindlab.studies.validate.RunOptions` takes them (here 64 images per batch).
        protocol: ``"context"`` (split by nuisance context) or ``"combination"`` (unseen combinations of the two
            non-target factors; every value, context and replica in every split).
        align: ``"none"``, ``"shared"`` (one map ``A_shared``) or ``"factor"`` (one map ``A_f`` per factor): also
            report the global-alignment baseline ``norm(A q)`` and matched grounding on top of it
            (:mod:`bindlab.studies.grounding_align`).
    """

    data: str | Path
    model: str = run_option("model", required=True, empty=MODEL_EMPTY)
    factors: str | Sequence[str] = "all"
    alpha: str | float = "auto"
    controls: bool = True
    n_boot: int = 2000
    seed: int = run_option("seed")
    device: str = run_option("device")
    batch_size: int = run_option("batch_size", default=64)
    settings: dict[str, Any] = field(default_factory=dict, repr=False)  # extra settings for the provenance
    protocol: str = "context"
    align: str = "none"
    dtype: str = run_option("dtype")  # the precision a hub model runs in

    def __post_init__(self) -> None:
        check_run_options(self)  # model, seed, device, batch size (RunOptions)
        from bindlab.studies.access import check_model_access

        check_model_access(self.model)  # public mode: a listed id or the visitor's own job, before a grid is made
        self.data = str(self.data or "").strip()
        self.factors = parse_factors(self.factors)
        self.alpha = check_alpha(self.alpha)
        self.n_boot = _int_at_least(self.n_boot, 1, "n_boot")
        self.protocol = check_protocol(str(self.protocol or "context").strip())
        self.align = str(self.align or "none").strip()
        if self.align not in ALIGNMENTS:
            raise ValueError(f"unknown alignment {self.align!r}; choose one of {', '.join(ALIGNMENTS)}")
        from bindlab.studies.validate import check_options  # allowed data roots and size caps, as the CLI entry

        check_options({"data": self.data or None, "n_boot": self.n_boot, "batch_size": self.batch_size})


def _int_at_least(value: Any, low: int | None, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be at least {low}, got {value!r}")
    return int(value)


def resolve_grid(data: str | Path, progress: Progress | None = None) -> Path:
    """The grid folder of ``data``; empty = the default grid, rendered on first use."""
    data = str(data or "").strip()
    if data:
        from bindlab.studies.validate import data_input

        return data_input(data, "data", "grid")  # a datasets folder becomes the grid's index.csv
    from bindlab.data.factors import default_grid

    report = (
        (lambda done, total: progress(done / max(total, 1), f"rendering the default grid {done}/{total}"))
        if progress
        else None
    )
    return default_grid(report)


class GroundingSession:
    """One grid embedded by one encoder.

    Args:
        index: the loaded grid.
        embeddings: ``(n, d)`` image embeddings in index order.
        embed_texts: ``list[str] -> (m, d)`` text embedder in the same space.
        encoder: the encoder (for provenance), optional.
    """

    def __init__(
        self,
        index: FactorIndex,
        embeddings: np.ndarray,
        embed_texts: Callable[[list[str]], np.ndarray],
        encoder: Any = None,
    ) -> None:
        if len(embeddings) != len(index):
            raise ValueError(f"{len(embeddings)} embeddings for {len(index)} images")
        self.index, self.embeddings, self.embed_texts, self.encoder = index, embeddings, embed_texts, encoder
        self.masks = index.masks()
        self.groups = index.groups()
        self.protocol = "context"
        self._query_override: dict[str, np.ndarray] = {}
        self._states: dict[str, GroundingState] = {}
        self._audits: dict[str, Any] = {}
        self._lock = threading.Lock()

    def view(self, protocol: str | None = None, queries: dict[str, np.ndarray] | None = None) -> GroundingSession:
        """A session over the same embeddings with another split protocol and/or replaced queries per factor.

        Args:
            protocol: ``"context"`` (splits by nuisance context) or ``"combination"`` (unseen combinations of the
                two non-target factors, :meth:`FactorIndex.combination_masks`); None keeps this one's.
            queries: factor -> ``(k, d)`` queries used instead of the native ones (e.g. globally aligned ``A q``).
        """
        protocol = self.protocol if protocol is None else check_protocol(protocol)
        out = GroundingSession(self.index, self.embeddings, self.embed_texts, self.encoder)
        out.protocol = protocol
        out._query_override = {**self._query_override, **(queries or {})}
        return out

    def masks_for(self, factor: str) -> dict[str, np.ndarray]:
        """The split masks of ``factor`` under this session's protocol (context splits are the same for all)."""
        if self.protocol == "combination":
            return self.index.combination_masks(check_factor(factor))
        return self.masks

    def native(self, factor: str) -> np.ndarray:
        """``(k, d)`` native queries of ``factor`` (mean of its three templates), in :meth:`values` order."""
        return native_queries(self.embed_texts, check_factor(factor), self.index.values(factor))

    def queries(self, factor: str) -> np.ndarray:
        """The queries grounding starts from: native ones unless :meth:`view` replaced them."""
        if factor in self._query_override:
            return self._query_override[factor]
        return self.native(factor)

    def state(self, factor: str) -> GroundingState:
        """The memoised slider state of ``factor`` (directions from calibration, scores of every split)."""
        with self._lock:
            if factor not in self._states:
                m = self.masks_for(factor)
                self._states[factor] = GroundingState(
                    self.embeddings,
                    self.index.labels(factor),
                    self.queries(factor),
                    m["calibration"],
                    m["validation"],
                    m["test"],
                    values=self.index.values(factor),
                    groups=self.groups,
                )
            return self._states[factor]

    def audit(self, factor: str, n_boot: int = 2000, seed: int = 0):
        """The full single-factor protocol (:func:`grounding_audit`): alpha, lambda and gate on validation, then test."""
        key = f"{factor}|{n_boot}|{seed}"
        with self._lock:
            if key not in self._audits:
                m = self.masks_for(factor)
                self._audits[key] = grounding_audit(
                    self.embeddings,
                    self.index.labels(factor),
                    self.queries(check_factor(factor)),
                    m["calibration"],
                    m["validation"],
                    m["test"],
                    values=self.index.values(factor),
                    groups=self.groups,
                    n_boot=n_boot,
                    seed=seed,
                )
            return self._audits[key]

    def test_rows(self, factor: str | None = None) -> np.ndarray:
        """Index rows of the test images, in the order of the state's test scores (of ``factor``'s protocol)."""
        return np.flatnonzero((self.masks if factor is None else self.masks_for(factor))["test"])

    def split_sizes(self, factor: str | None = None) -> dict[str, int]:
        return {s: int(m.sum()) for s, m in (self.masks if factor is None else self.masks_for(factor)).items()}


# ---------------------------------------------------------------------------------------------- loading
_SESSIONS: OrderedDict[tuple[str, str], GroundingSession] = OrderedDict()
_SESSIONS_LOCK = threading.Lock()


def _index_key(folder: str | Path) -> str:
    p = Path(folder).expanduser().resolve()
    p = p / "index.csv" if p.is_dir() else p
    st = p.stat() if p.is_file() else None
    return f"{p}|{st.st_mtime_ns if st else 0}|{st.st_size if st else 0}"


def open_session(
    data: str | Path,
    model: str,
    progress: Progress | None = None,
    device: str = "auto",
    batch_size: int = 64,
    dtype: str = "auto",
) -> GroundingSession:
    """Load (or reuse) the session of grid ``data`` embedded with encoder ``model``.

    Images are embedded through :func:`bindlab.encoders.service.embed_image_files` (persistent cache), so a second
    process pays only the cache read. Raises ``EncoderError``/``DataError``/``ValueError`` with a readable message.
    """
    from bindlab.encoders.base import EncoderError
    from bindlab.encoders.service import embed_image_files, embed_texts, get_encoder, instance_key, loader_options
    from bindlab.studies.access import check_model_access

    check_model_access(model)  # before the session cache: a visitor reuses only their own jobs' lora: models
    options = loader_options(device, batch_size, dtype)
    # the grid's index and the encoder instance the session embeds with (weights fingerprint, device, dtype, batch)
    key = (_index_key(data), instance_key(model.strip(), **options))
    with _SESSIONS_LOCK:
        if key in _SESSIONS:
            _SESSIONS.move_to_end(key)
            return _SESSIONS[key]
    index = load_index(data)
    encoder = get_encoder(model.strip(), **options)  # the process's one instance of it
    if "image" not in encoder.modalities or "text" not in encoder.modalities:
        raise EncoderError(
            f"{encoder.id} is not an image+text encoder; grounding needs both towers (e.g. toy:clip, hf:/path/to/clip)"
        )
    paths = index.paths()
    chunk = max(256, len(paths) // 20)
    parts = []
    for lo in range(0, len(paths), chunk):
        if progress:
            progress(lo / len(paths), f"embedding images with {encoder.id} ({lo}/{len(paths)})")
        parts.append(embed_image_files(encoder, paths[lo : lo + chunk]))
    session = GroundingSession(
        index, np.concatenate(parts).astype(np.float32), lambda texts: embed_texts(encoder, texts), encoder
    )
    with _SESSIONS_LOCK:
        _SESSIONS[key] = session
        # by count and by bytes (the newest always kept): a grid of many images holds (n, d) embeddings and masks
        while len(_SESSIONS) > MAX_SESSIONS or (len(_SESSIONS) > 1 and _held_bytes() > MAX_SESSION_BYTES):
            _SESSIONS.popitem(last=False)
    return session


def _session_bytes(session: GroundingSession) -> int:
    """What one cached session holds: its embeddings and split masks (the encoder is shared by the process)."""
    masks = (
        sum(getattr(m, "nbytes", 0) for m in (session.masks or {}).values()) if isinstance(session.masks, dict) else 0
    )
    return int(session.embeddings.nbytes) + int(masks)


def _held_bytes() -> int:
    return sum(_session_bytes(s) for s in _SESSIONS.values())


def clear_sessions() -> None:
    """Forget the memoised sessions (e.g. after image files changed under an unchanged ``index.csv``)."""
    with _SESSIONS_LOCK:
        _SESSIONS.clear()


# ---------------------------------------------------------------------------------------------- reports
def factor_report(
    session: GroundingSession,
    factor: str,
    alpha: str | float = "auto",
    controls: bool = True,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Native versus grounded retrieval of one factor on the test contexts, with alpha chosen on validation.

    Args:
        session: an open session.
        factor: ``shape``, ``hue`` or ``pattern``.
        alpha: ``"auto"`` (validation selection, the protocol) or a fixed float in [0, 8] (exploration; the
            validation choice is still reported beside it).
        controls: also run the controls (prototype attraction, mismatched directions, image prototype,
            selective grounding).

    Returns:
        JSON-ready dict: per-value rows, macro-mAP and top-1 native vs grounded, the alpha used and the
        validation choice, split sizes, and (with ``controls``) the audit readouts.
    """
    check_factor(factor)
    alpha = check_alpha(alpha)
    state = session.state(factor)
    selection = state.select_alpha()  # validation only
    if alpha == "auto":
        used, source = selection.value, "validation"
    else:
        used, source = float(alpha), "fixed"
    view = state.at_alpha(used)
    rows = [
        {
            "value": v,
            "ap_native": view["ap_native"][i],
            "ap_grounded": view["ap_grounded"][i],
            "margin_native": view["margin_native"][i],
            "margin_grounded": view["margin_grounded"][i],
            "alpha_star": view["alpha_star"][i],
        }
        for i, v in enumerate(view["values"])
    ]
    out: dict[str, Any] = {
        "factor": factor,
        "values": view["values"],
        "alpha": used,
        "alpha_source": source,
        "validation": {"alpha": selection.value, "macro_map": selection.macro_map, "top1": selection.top1},
        "test": {
            "native": {"macro_map": view["map_native"], "top1": view["top1_native"]},
            "grounded": {"macro_map": view["map_grounded"], "top1": view["top1_grounded"]},
        },
        "per_value": rows,
        "n_images": session.split_sizes(factor),
        "protocol": session.protocol,
    }
    if controls:
        audit = session.audit(factor, n_boot=n_boot, seed=seed)
        out["controls"] = audit.to_dict()
    return out


def slider_view(
    session: GroundingSession, factor: str, value: str, alpha: float, curve: np.ndarray = ALPHA_GRID
) -> dict[str, Any]:
    """Everything the tab shows for one slider position, from precomputed scores (no matmul over the gallery).

    Returns:
        dict with the :meth:`GroundingState.at_alpha` readout (all values), the margin curve ``M(alpha)`` of
        ``value`` over ``curve``, the top-:data:`TOP_K` test images of the grounded query (paths, labels, scores)
        and a 2-D view: test images projected on the plane spanned by ``d_v`` (x) and the part of ``q_v``
        orthogonal to it (y), where ``q_v``, ``q'_v(alpha)`` and ``d_v`` lie exactly (``plane["labels"]``: each
        drawn image's value). ``alpha_star`` is ``None`` for values whose margin has no zero crossing.
    """
    state = session.state(factor)
    v, s = _grounded_scores(state, factor, value, alpha)
    view = state.at_alpha(alpha)
    curve = np.asarray(curve, dtype=np.float64)
    margins = state.margin_curve(curve)["margins"]
    view["curve"] = {"alphas": curve.tolist(), "margin": [row[v] for row in margins]}
    view["value"], view["value_index"] = value, v
    test = state.test
    view["top"] = _top_images(session, factor, test, v, s)
    view["top_precision"] = float(np.mean([t["hit"] for t in view["top"]])) if view["top"] else float("nan")
    c = float(state.c[v])
    perp = np.sqrt(max(1.0 - c * c, 1e-12))
    pick = np.linspace(0, len(s) - 1, min(MAP_POINTS, len(s))).round().astype(int)
    x = test.s_e[pick, v]  # g . d_v
    y = (test.s_q[pick, v] - c * x) / perp  # g . (q_v - c d_v) / |q_v - c d_v|
    qa = np.array([c, perp]) + float(alpha) * np.array([1.0, 0.0])
    qa = qa / np.linalg.norm(qa)
    view["plane"] = {
        "x": x.tolist(),
        "y": y.tolist(),
        "positive": (test.value_idx[pick] == v).tolist(),
        "labels": [str(state.values[i]) for i in test.value_idx[pick]],
        "q": [c, perp],
        "q_alpha": qa.tolist(),
        "d": [1.0, 0.0],
    }
    return view


def slider_payload(session: GroundingSession, factor: str, curve: np.ndarray = ALPHA_GRID) -> dict[str, Any]:
    """The slider payload of ``factor``'s state in ``session`` (:func:`state_payload`)."""
    return state_payload(session.state(check_factor(factor)), factor, curve)


def state_payload(state: GroundingState, factor: str, curve: np.ndarray = ALPHA_GRID) -> dict[str, Any]:
    """What the browser needs to redraw the slider's views at any alpha without asking the server (issue 31).

    The grounded score of test image ``i`` for value ``v`` at strength ``alpha`` is
    ``(s_q[i, v] + alpha s_e[i, v]) / sqrt(1 + alpha^2 + 2 alpha qe[v])`` (:func:`pencil_scores` with ``a = 1``), so
    the two score matrices, the labels and ``qe`` give AP per value, macro-mAP and top-1 at every alpha; the margin
    curves and the 2-D view's ``c`` are sent as the server computes them. ``s_q`` and ``s_e`` are float32 products
    (:func:`~bindlab.analysis.grounding.score_split` multiplies in float32), so sending them as float32 loses nothing:
    the browser's numbers equal :func:`slider_view`'s up to float64 rounding.

    Returns:
        JSON-ready dict; the large arrays are base64 strings of little-endian arrays: ``s_q``, ``s_e`` (float32,
        ``(n, k)`` row-major), ``value_idx`` (uint16, ``(n,)``), ``curve_margin`` (float64, ``(len(curve), k)``).
    """
    import base64
    import hashlib

    test = state.test
    n, k = test.s_q.shape
    if k > np.iinfo(np.uint16).max:
        raise ValueError(f"{k} values are more than the slider can send")

    def b64(a: np.ndarray, dtype: str) -> str:
        return base64.b64encode(np.ascontiguousarray(a, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()).decode()

    s_q, s_e = b64(test.s_q, "float32"), b64(test.s_e, "float32")
    margins = np.asarray(state.margin_curve(np.asarray(curve, dtype=np.float64))["margins"], dtype=np.float64)
    return {
        "id": hashlib.sha256((s_q + s_e).encode()).hexdigest()[:16],
        "factor": factor,
        "n": int(n),
        "k": int(k),
        "values": [str(v) for v in state.values.tolist()],
        "s_q": s_q,
        "s_e": s_e,
        "value_idx": b64(test.value_idx, "uint16"),
        "qe": np.diag(test.qe).tolist(),
        "c": state.c.tolist(),
        "delta_norms": state.directions.delta_norms.tolist(),
        "curve_alphas": np.asarray(curve, dtype=np.float64).tolist(),
        "curve_margin": b64(margins, "float64"),
        "ap_native": [None if math.isnan(a) else float(a) for a in state.native_test.ap],
        "top_k": TOP_K,
        "tie_tol": TIE_TOL,
    }


def _grounded_scores(state: GroundingState, factor: str, value: str, alpha: float) -> tuple[int, np.ndarray]:
    """``value``'s index among ``factor``'s values and its grounded cosines at ``alpha``, (n_test,), on the test
    split; an unknown value is refused with the values to choose from."""
    values = state.values.tolist()
    if value not in values:
        raise ValueError(f"value {value!r} is not a {factor}; choose one of {values}")
    v = values.index(value)
    return v, pencil_scores(state.test, 1.0, float(alpha))[:, v]


def _top_images(session: GroundingSession, factor: str, test: Any, v: int, s: np.ndarray) -> list[dict[str, Any]]:
    """The :data:`TOP_K` test images of value ``v`` by grounded score ``s`` (ties in gallery order); ``test`` is
    the factor's test split (its ``value_idx`` says which images hold ``v``)."""
    rows, labels = session.test_rows(factor), session.index.labels(factor)
    return [
        {
            "path": str(session.index.root / session.index.rows[rows[i]].image),
            "label": str(labels[rows[i]]),
            "score": float(s[i]),
            "hit": bool(test.value_idx[i] == v),
        }
        for i in np.argsort(-s, kind="stable")[:TOP_K]
    ]


def top_images(session: GroundingSession, factor: str, value: str, alpha: float) -> list[dict[str, Any]]:
    """Only the top test images of :func:`slider_view` (the gallery when the slider is let go: no AP, no curves)."""
    state = session.state(factor)
    v, s = _grounded_scores(state, factor, value, alpha)
    return _top_images(session, factor, state.test, v, s)


def validation_choice(session: GroundingSession, factor: str) -> dict[str, float]:
    """The protocol's alpha for ``factor``, chosen on validation only: ``{"alpha", "macro_map", "top1"}``."""
    sel = session.state(check_factor(factor)).select_alpha()
    return {"alpha": sel.value, "macro_map": sel.macro_map, "top1": sel.top1}


# ---------------------------------------------------------------------------------------------- the study
def run_grounding(request: GroundingRequest, progress: Progress | None = None) -> Result:
    """Native versus grounded retrieval of each requested factor (the ``ground`` command and the tab's report).

    Returns:
        :class:`Result` with ``summary = {"factors": {factor: factor_report(...)}, "grounded_macro_map",
        "native_macro_map"}`` (the two means over the factors of test macro-mAP; the grounded one is the primary
        metric), ``rows`` = one row per (factor, value), ``figures_data = {"curves": {factor: margin curves over
        ALPHA_GRID}}``, and the provenance (grid ``index.csv`` hash, encoder, settings, seed).
    """
    t = time.perf_counter()
    grid = resolve_grid(request.data, progress)
    session = open_session(
        grid,
        request.model,
        progress=progress,
        device=request.device,
        batch_size=request.batch_size,
        dtype=request.dtype,
    )
    if request.protocol != "context":
        session = session.view(request.protocol)
    reports = {
        f: factor_report(session, f, request.alpha, controls=request.controls, n_boot=request.n_boot, seed=request.seed)
        for f in request.factors
    }
    if request.align != "none":
        from bindlab.studies.grounding_align import alignment_reports, alignment_summary

        for f, block in alignment_reports(session, request.factors, request.align, progress).items():
            reports[f]["alignment"] = block
    summary: dict[str, Any] = {
        "factors": reports,
        "grounded_macro_map": float(np.mean([r["test"]["grounded"]["macro_map"] for r in reports.values()])),
        "native_macro_map": float(np.mean([r["test"]["native"]["macro_map"] for r in reports.values()])),
    }
    if request.align != "none":
        summary.update(alignment_summary(reports))  # noqa: F821 - imported with alignment_reports above
    rows = [{"factor": f, **row} for f, r in reports.items() for row in r["per_value"]]
    curves = {f: session.state(f).margin_curve(ALPHA_GRID) for f in request.factors}
    settings = {
        "factors": list(request.factors),
        "alpha": request.alpha,
        "controls": request.controls,
        "n_boot": request.n_boot,
        "splits": session.index.splits,
        "protocol": request.protocol,
        "align": request.align,
        **request.settings,
        "seconds": round(time.perf_counter() - t, 3),
    }
    from bindlab.provenance import provenance

    prov = provenance(session.index.root / "index.csv", session.encoder, settings, request.seed)
    notes = [] if len(reports) == 1 else ["grounded_macro_map and native_macro_map are means over the factors"]
    return Result("grounding", summary, rows, {"curves": curves}, prov, "grounded_macro_map", notes=notes)
