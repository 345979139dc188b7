"""The attention part of a job compare: per-layer binding margins of base vs finetuned on the same captions.

Each model of the compare (base, ``lora:<job>/unscaled``, ``lora:<job>``) gets the per-layer attention binding
margin of :mod:`bindlab.analysis.attention` on one caption set (the MCQ queries), with its 95 % bootstrap band;
each finetuned model also gets the paired difference to the base (per layer, at the last layer and averaged over
the deep layers, the last third) with a bootstrap interval over captions. A model without a text transformer to
read attention from does not break the compare: its entry says why there are no margins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bindlab.analysis import attention as att
from bindlab.encoders.base import EncoderError

CAPTION_SET = "queries"


def attention_compare(encoders: dict[str, Any], captions: Sequence[att.Caption], direction: str = "later_to_earlier",
                      n_boot: int = 1000, seed: int = 0, progress: Callable[[float, str], None] | None = None
                      ) -> dict[str, Any]:
    """Margins of every model on the same captions, and each later model's difference to the first (the base).

    Args:
        encoders: ``{label: encoder}``, the base first.
        captions: the captions with their bindings (e.g. the MCQ queries).
        direction: ``later_to_earlier`` (any model) or ``earlier_to_later`` (bidirectional models only).
        progress: optional ``(fraction, message)`` callback.

    Returns:
        ``{"available", "note", "direction", "caption_set", "n_captions", "base", "models": {label: summary with
        "model" (id), or {"model", "note"} when that model has no margins}, "diff": {label: margin_difference, or
        {"note"}}}``; ``available`` is False (and ``note`` says why) when the base has no margins.
    """
    att.check_direction(direction)
    labels = list(encoders)
    out: dict[str, Any] = {"available": False, "note": "", "direction": direction, "caption_set": CAPTION_SET,
                           "n_captions": len(captions), "base": labels[0] if labels else None, "models": {}, "diff": {}}
    if not labels or not captions:
        out["note"] = "no models or no captions to analyse"
        return out
    runs: dict[str, att.SetMargins] = {}
    for i, (label, enc) in enumerate(encoders.items()):
        def step(f: float, msg: str, i: int = i) -> None:
            if progress:
                progress((i + f) / len(encoders), f"attention margins: {msg}")

        try:
            runs[label] = att.set_margins(att.attention_access(enc), CAPTION_SET, captions, direction, step)
        except (EncoderError, ValueError, NotImplementedError) as e:
            why = str(e) if enc.id in str(e) else f"{enc.id}: {e}"  # most messages already name the model
            out["models"][label] = {"model": enc.id, "note": f"attention margins are not available — {why}"}
            continue
        out["models"][label] = {"model": enc.id, **runs[label].summary(n_boot, seed)}
    base = labels[0]
    if base not in runs:
        out["note"] = out["models"][base]["note"]
        return out
    if out["models"][base]["n_captions"] == 0:
        out["note"] = (f"no caption could be analysed for {encoders[base].id} "
                       f"(e.g. {next(iter(runs[base].skipped.values()), 'none given')})")
        return out
    out["available"] = True
    for label in labels[1:]:
        if label not in runs:
            out["diff"][label] = {"note": out["models"][label]["note"]}
            continue
        try:
            out["diff"][label] = att.margin_difference(runs[base].margins, runs[label].margins, n_boot, seed)
        except ValueError as e:
            out["diff"][label] = {"note": str(e)}
    return out


# --- formatting for the CLI and the Finetune tab -------------------------------------------------------------------
def attention_curves(section: dict[str, Any]) -> list[dict[str, Any]]:
    """Curves for :func:`bindlab.present.attention_figures.margin_curves`, one per model that has margins."""
    return [{"label": f"{label} ({m['model']})", **m} for label, m in section.get("models", {}).items()
            if m.get("layers") and m.get("n_captions")]


def _deep_mean(m: dict[str, Any]) -> float | None:
    vals = [m["margin_mean"][i] for i in att.deep_layers(len(m["layers"]))]
    return None if None in vals else round(float(np.mean(vals)), 6)


def _with_ci(s: dict[str, Any] | None) -> str:
    if not s or s.get("mean") is None:
        return "n/a"
    ci = "" if s.get("ci_low") is None else f" [{s['ci_low']:+.4f}, {s['ci_high']:+.4f}]"
    return f"{s['mean']:+.4f}{ci}"


def attention_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per model: captions used, last-layer and deep-layer margins, and the difference to the base (95 % CI)."""
    rows = []
    for label, m in section.get("models", {}).items():
        if "note" in m:
            rows.append({"model": label, "captions": 0, "last layer": None, "deep layers": None,
                         "Δ last vs base": m["note"], "Δ deep vs base": ""})
            continue
        d = section.get("diff", {}).get(label)
        has = bool(m["n_captions"])
        rows.append({"model": label, "captions": m["n_captions"],
                     "last layer": m["margin_mean"][-1] if has else None,
                     "deep layers": _deep_mean(m) if has else None,
                     "Δ last vs base": "—" if d is None else d.get("note") or _with_ci(d["last"]),
                     "Δ deep vs base": "—" if d is None else ("" if "note" in d else _with_ci(d["deep"]))})
    return rows


def per_layer_rows(section: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows ``{layer, <label>: margin, ..., "Δ <label>": difference to the base, ...}`` (margins side by side)."""
    models = {k: m for k, m in section.get("models", {}).items() if m.get("n_captions")}
    diffs = {k: d for k, d in section.get("diff", {}).items() if "diff_mean" in d}
    n = max((len(m["layers"]) for m in models.values()), default=0)
    rows = []
    for layer in range(n):
        row: dict[str, Any] = {"layer": layer}
        for k, m in models.items():
            row[k] = m["margin_mean"][layer] if layer < len(m["margin_mean"]) else None
        for k, d in diffs.items():
            row[f"Δ {k}"] = d["diff_mean"][layer]
        rows.append(row)
    return rows


def format_attention(section: dict[str, Any]) -> str:
    """Plain-text block for the command line: per-layer margins side by side, then the differences to the base."""
    if not section:
        return ""
    head = f"attention binding margin ({section['direction']}, {section['n_captions']} {section['caption_set']})"
    if not section.get("available"):
        return f"{head}: not available — {section.get('note')}"
    lines = [head]
    rows = per_layer_rows(section)
    keys = [k for k in rows[0] if k != "layer"] if rows else []
    lines.append(f"{'layer':>6}" + "".join(f"{k:>12}" for k in keys))
    for r in rows:
        lines.append(f"{r['layer']:>6}" + "".join("n/a".rjust(12) if r[k] is None else f"{r[k]:>+12.4f}" for k in keys))
    deep = att.deep_layers(len(section["models"][section["base"]]["layers"]))
    for label, r in zip(section["models"], attention_rows(section), strict=True):
        m = section["models"][label]
        if "note" in m:
            lines.append(f"  {label}: {m['note']}")
        elif label == section["base"]:
            lines.append(f"  {label}: {r['captions']} captions (the reference)")
        else:
            lines.append(f"  {label}: {r['captions']} captions; Δ vs base at the last layer {r['Δ last vs base']}, "
                         f"over the deep layers {deep} {r['Δ deep vs base']} (95 % CI)")
    return "\n".join(lines)
