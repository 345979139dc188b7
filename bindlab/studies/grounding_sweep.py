"""Signal-strength sweep (FactorAtlas §3.3 / C.4; the ``ground-sweep`` command and the Grounding tab's view).

Every patterned image of a grid is blended with its nuisance-matched plain rendering at strengths ``gamma``
(``generate factors --signal-strengths``, :func:`bindlab.data.factors.generate_signal_grids`). At every strength
the matched directions are re-estimated from that strength's calibration images and alpha is re-selected on its
validation images, so no strength reuses the full-signal direction. Per strength the sweep reports test macro-mAP of
the image-prototype query, the native query and matched grounding, the matched gain, and the mean cosine between
each value's direction and its full-signal (``gamma = 1``) counterpart.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.data.factors import load_index, signal_grids
from bindlab.eval.metrics import task_chance
from bindlab.result import Result
from bindlab.studies.grounding import MODEL_EMPTY, check_protocol, open_session
from bindlab.studies.progress import Progress
from bindlab.studies.validate import check_run_options, run_option

__all__ = ["SweepRequest", "resolve_signal_grid", "run_grounding_sweep", "sweep_row"]


@dataclass
class SweepRequest:
    """What one sweep asks for; validated on construction (``ValueError`` naming the bad value).

    Attributes:
        data: a grid folder with ``signal/g*/`` strength grids; ``""`` = the default signal grid (rendered once
            under ``$BINDLAB_HOME``).
        model: image+text encoder id, e.g. ``toy:clip``.
        factor: the attenuated factor; only ``pattern`` (blending moves a pattern towards plain).
        protocol: ``context`` or ``combination``.
        device, batch_size: encoder settings.
    """

    data: str | Path
    model: str = run_option("model", required=True, empty=MODEL_EMPTY)
    factor: str = "pattern"
    protocol: str = "context"
    device: str = run_option("device")
    batch_size: int = run_option("batch_size", default=64)
    dtype: str = run_option("dtype")  # the precision a hub model runs in

    def __post_init__(self) -> None:
        check_run_options(self)  # model, device, batch size (RunOptions)
        from bindlab.studies.access import check_model_access

        check_model_access(self.model)  # public mode: a listed id or the visitor's own job, before a grid is made
        self.data = str(self.data or "").strip()
        if self.factor != "pattern":
            raise ValueError(
                f"factor {self.factor!r}: the signal-strength sweep blends each pattern with its plain "
                "rendering, so only --factor pattern applies"
            )
        self.protocol = check_protocol(self.protocol)
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be a whole number >= 1, got {self.batch_size!r}")
        from bindlab.studies.validate import check_options

        check_options({"data": self.data or None, "batch_size": self.batch_size})


def resolve_signal_grid(data: str | Path, progress: Progress | None = None) -> list[tuple[float, Path]]:
    """The strength grids of ``data`` (strongest first); empty ``data`` = the default grid, rendered on first use.

    Raises:
        ValueError: a folder without strength grids, saying how to make them.
    """
    data = str(data or "").strip()
    if not data:
        from bindlab.data.factors import default_signal_grid

        report = (
            (lambda done, total: progress(done / max(total, 1), f"rendering the signal grid {done}/{total}"))
            if progress
            else None
        )
        data = str(default_signal_grid(report))
    grids = signal_grids(data)
    if not grids:
        raise ValueError(
            f"{data} has no signal-strength grids (signal/g*/index.csv); make them with `python -m "
            f"bindlab generate factors --out {data} --signal-strengths 1,.75,.5,.3,.2,.1,0` (same "
            "grid options as before)"
        )
    return grids


def sweep_row(session: Any, factor: str, reference: np.ndarray | None) -> dict[str, Any]:
    """One strength: validation-selected alpha, test readouts and the direction cosine to ``reference``.

    When every value's images are identical (``gamma = 0`` with an encoder that maps equal images to equal
    embeddings) there is no contrast and no direction: matched grounding is then the native query.
    """
    try:
        state = session.state(factor)
    except ValueError as e:
        if "prototype equals the rest mean" not in str(e):
            raise
        from bindlab.analysis.grounding import readout

        m = session.masks_for(factor)
        idx = session.index
        nat = readout(
            session.embeddings[m["test"]], idx.labels(factor)[m["test"]], session.queries(factor), idx.values(factor)
        )
        return {
            "alpha": 0.0,
            "image_prototype": float("nan"),
            "native": nat.macro_map,
            "matched": nat.macro_map,
            "native_top1": nat.top1,
            "matched_top1": nat.top1,
            "gain": 0.0,
            "cosine": float("nan"),
            "directions": None,
            "note": "no contrast: every value's images are identical",
        }
    sel = state.select_alpha()
    view = state.at_alpha(sel.value)
    d = state.directions.directions
    cos = float(np.mean(np.sum(d * reference, axis=1))) if reference is not None else 1.0
    return {
        "alpha": sel.value,
        "image_prototype": state.prototype_test.macro_map,
        "native": view["map_native"],
        "matched": view["map_grounded"],
        "native_top1": view["top1_native"],
        "matched_top1": view["top1_grounded"],
        "gain": view["map_grounded"] - view["map_native"],
        "cosine": cos,
        "directions": d,
    }


def run_grounding_sweep(request: SweepRequest, progress: Progress | None = None) -> Result:
    """Matched grounding at every signal strength of a grid.

    Returns:
        :class:`Result` with ``rows`` = one row per strength (``gamma``, ``alpha``, ``image_prototype``,
        ``native``, ``matched``, ``gain``, ``cosine``, top-1s; macro-mAP on test), ``summary`` with the full-signal
        and weakest-nonzero gains and whether the gain vanishes at ``gamma = 0``, ``figures_data = {"gamma",
        "native", "matched", "image_prototype", "cosine"}`` and the provenance of the full-signal grid.
    """
    t = time.perf_counter()
    grids = resolve_signal_grid(request.data, progress)
    if grids[0][0] != 1.0:
        raise ValueError(
            f"the sweep needs the full-signal grid (gamma = 1) for the direction cosine; found "
            f"{[g for g, _ in grids]}: add 1 to --signal-strengths"
        )
    rows: list[dict[str, Any]] = []
    reference: np.ndarray | None = None
    encoder = None
    for i, (gamma, folder) in enumerate(grids):
        if progress:
            progress(i / len(grids), f"gamma {gamma:g}: embedding and grounding ({i + 1}/{len(grids)})")
        session = open_session(
            folder, request.model, device=request.device, batch_size=request.batch_size, dtype=request.dtype
        )
        encoder = encoder or session.encoder
        if request.protocol != "context":
            session = session.view(request.protocol)
        row = sweep_row(session, request.factor, reference)
        if reference is None:
            reference = row["directions"]
        row.pop("directions")
        rows.append({"gamma": gamma, **row, "n_test": session.split_sizes(request.factor)["test"]})
    nonzero = [r for r in rows if r["gamma"] > 0]
    zero = [r for r in rows if r["gamma"] == 0]
    summary: dict[str, Any] = {
        "factor": request.factor,
        "protocol": request.protocol,
        "strengths": [r["gamma"] for r in rows],
        "full_signal": {k: rows[0][k] for k in ("native", "matched", "gain", "alpha")},
        "weakest": {k: nonzero[-1][k] for k in ("gamma", "native", "matched", "gain", "cosine")},
        "gain_at_zero": zero[0]["gain"] if zero else None,
        "chance": task_chance("one_of", len(load_index(grids[0][1], check_images=False).values(request.factor))),
        "full_signal_gain": rows[0]["gain"],
        "sweep": rows,
    }
    figures = {k: [r[k] for r in rows] for k in ("gamma", "native", "matched", "image_prototype", "cosine")}
    from bindlab.provenance import provenance

    settings = {
        "factor": request.factor,
        "protocol": request.protocol,
        "strengths": summary["strengths"],
        "grids": [str(f) for _, f in grids],
        "seconds": round(time.perf_counter() - t, 3),
    }
    prov = provenance(grids[0][1] / "index.csv", encoder, settings, 0)
    notes = [
        "alpha is re-selected on validation and directions re-estimated from calibration at every gamma",
        "cosine: mean over values of d_v(gamma) . d_v(1)",
    ]
    return Result("grounding-sweep", summary, rows, figures, prov, "full_signal_gain", notes=notes)
