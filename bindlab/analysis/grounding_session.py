"""Matched visual grounding on a factor grid with a real encoder: the glue behind ``bindlab ground`` and the tab.

A :class:`GroundingSession` holds one grid's image embeddings (computed once through the persistent embedding
cache) and the native text queries of each factor; :meth:`GroundingSession.state` builds and memoises the
:class:`~bindlab.analysis.grounding.GroundingState` of a factor, after which moving alpha is vector maths only.
:func:`open_session` memoises sessions per (grid, encoder) in this process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.analysis.grounding import ALPHA_GRID, GroundingState, native_queries, pencil_scores
from bindlab.analysis.grounding_controls import grounding_audit
from bindlab.data.factors import FACTORS, FactorIndex, load_index

Progress = Callable[[float, str], None]
MAX_SESSIONS = 4  # sessions kept in memory (each holds (n, d) float32 embeddings)
TOP_K = 8  # images shown for the grounded query
MAP_POINTS = 1500  # test images drawn in the 2-D view (a fixed, evenly spaced subsample)


def check_factor(factor: str) -> str:
    if factor not in FACTORS:
        raise ValueError(f"unknown factor {factor!r}; choose one of {', '.join(FACTORS)}")
    return factor


class GroundingSession:
    """One grid embedded by one encoder.

    Args:
        index: the loaded grid.
        embeddings: ``(n, d)`` image embeddings in index order.
        embed_texts: ``list[str] -> (m, d)`` text embedder in the same space.
        encoder: the encoder (for provenance), optional.
    """

    def __init__(self, index: FactorIndex, embeddings: np.ndarray, embed_texts: Callable[[list[str]], np.ndarray],
                 encoder: Any = None) -> None:
        if len(embeddings) != len(index):
            raise ValueError(f"{len(embeddings)} embeddings for {len(index)} images")
        self.index, self.embeddings, self.embed_texts, self.encoder = index, embeddings, embed_texts, encoder
        self.masks = index.masks()
        self.groups = index.groups()
        self._states: dict[str, GroundingState] = {}
        self._audits: dict[str, Any] = {}
        self._lock = threading.Lock()

    def queries(self, factor: str) -> np.ndarray:
        """``(k, d)`` native queries of ``factor`` (mean of its three templates), in :meth:`values` order."""
        return native_queries(self.embed_texts, check_factor(factor), self.index.values(factor))

    def state(self, factor: str) -> GroundingState:
        """The memoised slider state of ``factor`` (directions from calibration, scores of every split)."""
        with self._lock:
            if factor not in self._states:
                m = self.masks
                self._states[factor] = GroundingState(
                    self.embeddings, self.index.labels(factor), self.queries(factor), m["calibration"],
                    m["validation"], m["test"], values=self.index.values(factor), groups=self.groups)
            return self._states[factor]

    def audit(self, factor: str, n_boot: int = 2000, seed: int = 0):
        """The full single-factor protocol (:func:`grounding_audit`): alpha, lambda and gate on validation, then test."""
        key = f"{factor}|{n_boot}|{seed}"
        with self._lock:
            if key not in self._audits:
                m = self.masks
                self._audits[key] = grounding_audit(
                    self.embeddings, self.index.labels(factor), self.queries(check_factor(factor)), m["calibration"],
                    m["validation"], m["test"], values=self.index.values(factor), groups=self.groups,
                    n_boot=n_boot, seed=seed)
            return self._audits[key]

    def test_rows(self) -> np.ndarray:
        """Index rows of the test images, in the order of the state's test scores."""
        return np.flatnonzero(self.masks["test"])

    def split_sizes(self) -> dict[str, int]:
        return {s: int(m.sum()) for s, m in self.masks.items()}


# ---------------------------------------------------------------------------------------------- loading
_SESSIONS: OrderedDict[tuple[str, str], GroundingSession] = OrderedDict()
_SESSIONS_LOCK = threading.Lock()


def _index_key(folder: str | Path) -> str:
    p = Path(folder).expanduser().resolve()
    p = p / "index.csv" if p.is_dir() else p
    st = p.stat() if p.is_file() else None
    return f"{p}|{st.st_mtime_ns if st else 0}|{st.st_size if st else 0}"


def open_session(data: str | Path, model: str, progress: Progress | None = None, device: str = "auto",
                 batch_size: int = 64) -> GroundingSession:
    """Load (or reuse) the session of grid ``data`` embedded with encoder ``model``.

    Images are embedded through :func:`bindlab.encoders.service.embed_image_files` (persistent cache), so a second
    process pays only the cache read. Raises ``EncoderError``/``DataError``/``ValueError`` with a readable message.
    """
    from bindlab.encoders.base import EncoderError, load_encoder
    from bindlab.encoders.service import embed_image_files, embed_texts

    key = (_index_key(data), model.strip())
    with _SESSIONS_LOCK:
        if key in _SESSIONS:
            _SESSIONS.move_to_end(key)
            return _SESSIONS[key]
    index = load_index(data)
    encoder = load_encoder(model.strip(), device=device, batch_size=batch_size)
    if "image" not in encoder.modalities or "text" not in encoder.modalities:
        raise EncoderError(f"{encoder.id} is not an image+text encoder; grounding needs both towers "
                           "(e.g. toy:clip, hf:/path/to/clip)")
    paths = index.paths()
    chunk = max(256, len(paths) // 20)
    parts = []
    for lo in range(0, len(paths), chunk):
        if progress:
            progress(lo / len(paths), f"embedding images with {encoder.id} ({lo}/{len(paths)})")
        parts.append(embed_image_files(encoder, paths[lo:lo + chunk]))
    session = GroundingSession(index, np.concatenate(parts).astype(np.float32),
                               lambda texts: embed_texts(encoder, texts), encoder)
    with _SESSIONS_LOCK:
        _SESSIONS[key] = session
        while len(_SESSIONS) > MAX_SESSIONS:
            _SESSIONS.popitem(last=False)
    return session


def clear_sessions() -> None:
    """Forget the memoised sessions (e.g. after image files changed under an unchanged ``index.csv``)."""
    with _SESSIONS_LOCK:
        _SESSIONS.clear()


# ---------------------------------------------------------------------------------------------- reports
def factor_report(session: GroundingSession, factor: str, alpha: str | float = "auto", controls: bool = True,
                  n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
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
    state = session.state(factor)
    selection = state.select_alpha()  # validation only
    if alpha == "auto":
        used, source = selection.value, "validation"
    else:
        used, source = float(alpha), "fixed"
        if not 0 <= used <= float(ALPHA_GRID[-1]):
            raise ValueError(f"--alpha must be 'auto' or a number in [0, {ALPHA_GRID[-1]:g}], got {alpha}")
    view = state.at_alpha(used)
    rows = [{"value": v, "ap_native": view["ap_native"][i], "ap_grounded": view["ap_grounded"][i],
             "margin_native": view["margin_native"][i], "margin_grounded": view["margin_grounded"][i],
             "alpha_star": view["alpha_star"][i]} for i, v in enumerate(view["values"])]
    out: dict[str, Any] = {
        "factor": factor, "values": view["values"], "alpha": used, "alpha_source": source,
        "validation": {"alpha": selection.value, "macro_map": selection.macro_map, "top1": selection.top1},
        "test": {"native": {"macro_map": view["map_native"], "top1": view["top1_native"]},
                 "grounded": {"macro_map": view["map_grounded"], "top1": view["top1_grounded"]}},
        "per_value": rows, "n_images": session.split_sizes(),
    }
    if controls:
        audit = session.audit(factor, n_boot=n_boot, seed=seed)
        out["controls"] = audit.to_dict()
    return out


def slider_view(session: GroundingSession, factor: str, value: str, alpha: float,
                curve: np.ndarray = ALPHA_GRID) -> dict[str, Any]:
    """Everything the tab shows for one slider position, from precomputed scores (no matmul over the gallery).

    Returns:
        dict with the :meth:`GroundingState.at_alpha` readout (all values), the margin curve ``M(alpha)`` of
        ``value`` over ``curve``, the top-:data:`TOP_K` test images of the grounded query (paths, labels, scores)
        and a 2-D view: test images projected on the plane spanned by ``d_v`` (x) and the part of ``q_v``
        orthogonal to it (y), where ``q_v``, ``q'_v(alpha)`` and ``d_v`` lie exactly.
    """
    state = session.state(factor)
    values = state.values.tolist()
    if value not in values:
        raise ValueError(f"value {value!r} is not a {factor}; choose one of {values}")
    v = values.index(value)
    view = state.at_alpha(alpha)
    curve = np.asarray(curve, dtype=np.float64)
    margins = state.margin_curve(curve)["margins"]
    view["curve"] = {"alphas": curve.tolist(), "margin": [row[v] for row in margins]}
    view["value"], view["value_index"] = value, v
    test = state.test
    s = pencil_scores(test, 1.0, float(alpha))[:, v]  # (n_test,) grounded cosines of value v
    top = np.argsort(-s, kind="stable")[:TOP_K]
    rows = session.test_rows()
    labels = session.index.labels(factor)
    view["top"] = [{"path": str(session.index.root / session.index.rows[rows[i]].image), "label": str(labels[rows[i]]),
                    "score": float(s[i]), "hit": bool(test.value_idx[i] == v)} for i in top]
    view["top_precision"] = float(np.mean([t["hit"] for t in view["top"]])) if len(top) else float("nan")
    c = float(state.c[v])
    perp = np.sqrt(max(1.0 - c * c, 1e-12))
    pick = np.linspace(0, len(s) - 1, min(MAP_POINTS, len(s))).round().astype(int)
    x = test.s_e[pick, v]  # g . d_v
    y = (test.s_q[pick, v] - c * x) / perp  # g . (q_v - c d_v) / |q_v - c d_v|
    qa = np.array([c, perp]) + float(alpha) * np.array([1.0, 0.0])
    qa = qa / np.linalg.norm(qa)
    view["plane"] = {"x": x.tolist(), "y": y.tolist(), "positive": (test.value_idx[pick] == v).tolist(),
                     "q": [c, perp], "q_alpha": qa.tolist(), "d": [1.0, 0.0]}
    return view
