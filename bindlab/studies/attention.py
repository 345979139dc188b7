"""Attention binding margins per layer (the ``attention`` command and the Attention tab): one study, two faces.

An :class:`AttentionRequest` validates what a face asked for; :func:`run_attention` loads the caption sets, runs
one (or two, with ``compare``) encoders' text transformers over them and returns the one
:class:`~bindlab.result.Result` both faces format, bootstrap seed included, so ``attention --out`` and the
tab give the same numbers. :func:`caption_view` is the tab's one-caption path (word x word attention at one layer),
with the caption's length checked before anything is tokenised. The maths lives in :mod:`bindlab.analysis.attention`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.analysis import attention as att
from bindlab.config import LIMIT_ENV, limits
from bindlab.result import Result
from bindlab.studies.progress import Progress
from bindlab.studies.validate import check_run_options, run_option

__all__ = [
    "DIRECTIONS",
    "MAX_CAPTION_CHARS",
    "MAX_CAPTION_WORDS",
    "AttentionRequest",
    "CaptionRequest",
    "caption_view",
    "curve_data",
    "run_attention",
]

DIRECTIONS = att.DIRECTIONS
MAX_CAPTION_WORDS = 512  # a free-text caption longer than this is refused before tokenising
MAX_CAPTION_CHARS = 8192  # ... and so is one this long in characters (a few giant "words")


def _whole(value: Any, name: str, low: int = 0) -> int:
    """``value`` as an int >= ``low``; a float must be whole. Raises ValueError naming ``name`` and the value."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not float(value).is_integer()
    ):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value!r}")
    return int(value)


MODEL_EMPTY = "{name} is empty; pick an encoder with a text transformer, e.g. minilm or toy:clip"


def _model(value: str | None, name: str, required: bool = True) -> str:
    value = (value or "").strip()
    if required and not value:
        raise ValueError(MODEL_EMPTY.format(name=name))
    return value


# ---------------------------------------------------------------------------------------------- requests
@dataclass
class AttentionRequest:
    """What one margins run asks for; validated on construction (``ValueError`` naming the bad value).

    Attributes:
        model: encoder id with a text transformer (minilm, toy:clip, hf:…, qwen3vl:…).
        data: MCQ, triplets or captions JSONL; ``""`` = the embedded mini SABER benchmark (over the renderable
            vocabulary when a model does not know the full one's words, as the toy models do).
        limit: first N captions of each caption set (0 = all).
        compare: a second encoder id ('' = none); adds its curves and the per-layer ratio second / first.
        direction: ``later_to_earlier`` (any model) or ``earlier_to_later`` (bidirectional models only).
        seed: bootstrap seed of the intervals and the ratio.
        device: as :class:`~bindlab.studies.validate.RunOptions` takes it.
        n_boot: bootstrap resamples (>= 1).
    """

    model: str = run_option("model", required=True, empty=MODEL_EMPTY.format(name="model"))
    data: str | Path = ""
    limit: int = run_option("limit")
    compare: str = ""
    direction: str = "later_to_earlier"
    seed: int = run_option("seed")
    device: str = run_option("device")
    n_boot: int = 1000
    dtype: str = run_option("dtype")  # the precision a hub model runs in

    def __post_init__(self) -> None:
        check_run_options(self)  # model, limit, seed, device (RunOptions)
        self.compare = _model(self.compare, "compare", required=False)
        self.data = str(self.data or "").strip()
        if self.data:
            from bindlab.studies.validate import data_input

            self.data = str(data_input(self.data, "data", "captions"))  # a datasets folder becomes its JSONL
        self.direction = att.check_direction(self.direction)
        self.n_boot = _whole(self.n_boot, "n_boot", low=1)
        from bindlab.studies.validate import check_options  # allowed data roots and size caps, as the CLI entry

        check_options({"data": self.data or None, "limit": self.limit, "n_boot": self.n_boot})


@dataclass
class CaptionRequest:
    """One caption for the word x word view; the length is checked here, before any tokeniser sees the text.

    Attributes:
        model: encoder id ('' = minilm).
        text: the caption (at most :data:`MAX_CAPTION_WORDS` words and :data:`MAX_CAPTION_CHARS` characters).
        bindings: ``"red:cube, blue:sphere"`` or ``[[attribute, object], ...]``.
        direction: as in :class:`AttentionRequest`.
        layer: the layer to show (clamped to the model's layers, with a note).
        id: a label for the caption (set · id, or "free text").
    """

    model: str = run_option("model", required=True)  # '' = minilm
    text: str
    bindings: str | Sequence[Sequence[str]]
    direction: str = "later_to_earlier"
    layer: int = 0
    id: str = "free text"
    device: str = run_option("device")
    head: int | None = None  # the head whose word x word map to show (None = mean over heads)
    dtype: str = run_option("dtype")  # the precision a hub model runs in

    def __post_init__(self) -> None:
        self.model = (self.model or "").strip() or "minilm"
        self.text = (self.text or "").strip()
        if not self.text:
            raise ValueError("type a caption, e.g. 'a red cube and a blue sphere'")
        n_words = len(self.text.split())
        if n_words > MAX_CAPTION_WORDS or len(self.text) > MAX_CAPTION_CHARS:
            raise ValueError(
                f"the caption has {n_words} words and {len(self.text)} characters; the limit is "
                f"{MAX_CAPTION_WORDS} words and {MAX_CAPTION_CHARS} characters: shorten it"
            )
        from bindlab.studies.validate import check_caption  # and the caps in force (tighter in public mode)

        check_caption(self.text)
        pairs = att.parse_bindings(self.bindings) if isinstance(self.bindings, str) else self.bindings
        cap = limits().max_n_objects
        if len(pairs) > cap:
            raise ValueError(
                f"{len(pairs)} bindings, above the cap of {cap} objects per caption "
                f"({LIMIT_ENV['max_n_objects']}); give at most {cap}"
            )
        self.bindings = [[str(a), str(o)] for a, o in pairs]
        self.direction = att.check_direction(self.direction)
        layer = self.layer or 0  # a slider sends floats: read 3.0 as layer 3
        self.layer = _whole(int(layer) if isinstance(layer, float) and np.isfinite(layer) else layer, "layer")
        check_run_options(self)  # device (RunOptions)
        if self.head is not None:
            self.head = _whole(self.head, "head")


def _encoder(model: str, device: str = "auto", dtype: str = "auto") -> Any:
    """The encoder, loaded once per process and shared with the other tabs."""
    from bindlab.studies.common import get_encoder

    return get_encoder(model, device, dtype=dtype)


def _data_path(data: str, encoders: Sequence[Any] = ()) -> Path:
    """``data``, else the embedded benchmark every one of ``encoders`` can read
    (:func:`~bindlab.studies.common.default_dataset_for`: the renderable one for the toy models)."""
    if data:
        return Path(data)
    from bindlab.studies.common import default_dataset_for

    return default_dataset_for(encoders)


# ---------------------------------------------------------------------------------------------- the study
def curve_data(res: dict[str, Any]) -> list[dict[str, Any]]:
    """One curve per (model, caption set) of a :func:`~bindlab.analysis.attention.results_json` document:
    ``{"label", "layers", "depth", "margin_mean", "ci_low", "ci_high", ...}``; ``depth`` is each layer's relative
    depth in [0, 1] (:func:`~bindlab.analysis.attention.normalised_depth`), the shared axis when two models' layer
    counts differ."""
    out = []
    for model, sets in [(res["model"], res["sets"])] + (
        [(res["compare"]["model"], res["compare"]["sets"])] if "compare" in res else []
    ):
        for name, s in sets.items():
            label = model if len(sets) == 1 else f"{model} · {name}"
            out.append({"label": label, **s, "depth": att.normalised_depth(len(s["layers"])) if s["layers"] else []})
    return out


def _peak(res: dict[str, Any]) -> tuple[float | None, int | None]:
    means = res["margin_mean"]
    layers = [i for i, m in enumerate(means) if m is not None]
    if not layers:
        return None, None
    best = max(layers, key=lambda i: means[i])
    return means[best], res["layers"][best]


def run_attention(request: AttentionRequest, progress: Progress | None = None) -> Result:
    """Binding margin per layer on every caption set of the data file (and the ratio with ``compare``).

    Returns:
        :class:`Result`: ``summary`` = the :func:`~bindlab.analysis.attention.results_json` document plus
        ``peak_margin`` (the primary metric: the largest mean margin over layers of the first caption set) and
        ``peak_layer``; ``rows`` = one row per caption (set, id, text, bindings, margins per layer, skip reason);
        ``figures_data = {"curves": curve_data(summary), "data_name"}``; provenance with the seed.
    """
    t = time.perf_counter()
    if progress:
        progress(0.0, f"loading {request.model}")
    enc = _encoder(request.model, request.device, request.dtype)  # weights load on first use
    enc2 = _encoder(request.compare, request.device, request.dtype) if request.compare else None
    path = _data_path(str(request.data), [e for e in (enc, enc2) if e is not None])
    sets = att.load_caption_sets(path, limit=request.limit)
    runs = att.run_attention(enc, sets, request.direction, progress=progress)
    compare = None
    if enc2 is not None:
        compare = (enc2, att.run_attention(enc2, sets, request.direction, progress=progress))
    res = att.results_json(enc, runs, request.direction, compare, n_boot=request.n_boot, seed=request.seed)
    res["peak_margin"], res["peak_layer"] = _peak(res)
    settings = {
        "direction": request.direction,
        "limit": request.limit,
        "compare": request.compare or None,
        "n_boot": request.n_boot,
        "seconds": round(time.perf_counter() - t, 3),
    }
    from bindlab.provenance import provenance

    prov = provenance(path, enc, settings, request.seed)
    notes = [
        f"{name}: {s['n_skipped']} of {s['n_captions'] + s['n_skipped']} captions skipped (bindings not "
        "found, or fewer than two objects)"
        for name, s in res["sets"].items()
        if s["n_skipped"]
    ]
    return Result(
        "attention",
        res,
        att.per_item_rows(runs),
        {"curves": curve_data(res), "data_name": path.name},
        prov,
        "peak_margin",
        notes=notes,
    )


def caption_view(request: CaptionRequest) -> dict[str, Any]:
    """One caption's word x word attention at one layer (of one head, or the heads' mean), its binding cells, its
    margin per layer and its margin per layer and head.

    Returns:
        dict: ``model`` (encoder id), ``text``, ``bindings``, ``own`` (``attribute:object`` labels), ``words``
        ``(W,)``, ``matrix`` ``(W, W)`` word attention at ``layer`` (row = from word) of ``head`` (None = mean over
        heads), ``cells`` (from word, to word, own) to outline, ``margins`` ``(layers,)``, ``head_margins``
        ``(layers, heads)`` (mean over heads = ``margins``), ``layer`` (the one shown), ``asked_layer``, ``head``.

    Raises:
        ValueError: bindings not in the caption, fewer than two objects, or a direction the model cannot give.
    """
    cap = att.Caption(request.text, tuple(tuple(b) for b in request.bindings), request.id)
    enc = _encoder(request.model, request.device, request.dtype)
    access = att.attention_access(enc)
    if request.head is not None and request.head >= access.num_heads:
        raise ValueError(f"head {request.head} does not exist: {enc.id} has heads 0 to {access.num_heads - 1}")
    r = att.analyse_caption(access, cap, request.direction, with_words=True, per_head=True, word_head=request.head)
    if len(r.layout.objects) < 2:
        raise ValueError(
            "the margin compares objects: mark at least two objects with their attributes, e.g. 'red:cube, blue:sphere'"
        )
    li = min(request.layer, len(r.margins) - 1)
    own = [f"{r.layout.labels[a]}:{r.layout.labels[o]}" for o, attrs in r.layout.objects for a in attrs]
    return {
        "model": enc.id,
        "text": cap.text,
        "bindings": request.bindings,
        "own": own,
        "words": [w.word for w in r.words],
        "matrix": r.word_attn[li],
        "cells": att.binding_cells(r.layout, request.direction),
        "margins": [float(m) for m in r.margins],
        "head_margins": r.head_margins,
        "layer": li,
        "asked_layer": request.layer,
        "head": request.head,
    }
