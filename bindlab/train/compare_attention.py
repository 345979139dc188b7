"""The attention part of a job compare, shaped for reading: per-layer binding margins of base vs finetuned.

Each model of the compare (base, ``lora:<job>/unscaled``, ``lora:<job>``) has the per-layer attention binding
margin of :mod:`bindlab.analysis.attention` on one caption set (the MCQ queries), with its 95 % bootstrap band;
each finetuned model also has the paired difference to the base (per layer, at the last layer and averaged over
the deep layers, the last third) with a bootstrap interval over captions. The section is computed by
:func:`bindlab.studies.finetune.attention_compare`; this module turns it into curves, rows and text.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bindlab.analysis import attention as att

CAPTION_SET = "queries"


# --- formatting for the CLI and the Finetune tab -------------------------------------------------------------------
def _shown(section: dict[str, Any], names: dict[str, str] | None) -> dict[str, tuple[str, dict[str, Any]]]:
    """``{key: (display name, model entry)}``; with ``names`` (:func:`bindlab.train.compare.display_labels`) a second
    model named like an earlier one (the ``lines`` model at a = 1, which is the unscaled one) is left out."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for key, m in section.get("models", {}).items():
        name = (names or {}).get(key, key)
        if names and name in {n for n, _ in out.values()}:
            continue
        out[key] = (name, m)
    return out


def attention_curves(section: dict[str, Any], names: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Curves for :func:`bindlab.present.attention_figures.margin_curves`, one per model that has margins, labelled
    with ``names`` when given (``{"lines": "LiNeS (a=0.1)", …}``)."""
    return [
        {**m, "label": f"{name} ({m['model']})"}
        for name, m in _shown(section, names).values()
        if m.get("layers") and m.get("n_captions")
    ]


def _deep_mean(m: dict[str, Any]) -> float | None:
    vals = [m["margin_mean"][i] for i in att.deep_layers(len(m["layers"]))]
    return None if None in vals else round(float(np.mean(vals)), 6)


def _with_ci(s: dict[str, Any] | None) -> str:
    if not s or s.get("mean") is None:
        return "n/a"
    ci = "" if s.get("ci_low") is None else f" [{s['ci_low']:+.4f}, {s['ci_high']:+.4f}]"
    return f"{s['mean']:+.4f}{ci}"


def attention_rows(section: dict[str, Any], names: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One row per model: captions used, last-layer and deep-layer margins, and the difference to the base (95 % CI);
    the model column as ``names`` calls it (a duplicate name is shown once)."""
    rows = []
    for label, (name, m) in _shown(section, names).items():
        if "note" in m:
            rows.append(
                {
                    "model": name,
                    "captions": 0,
                    "last layer": None,
                    "deep layers": None,
                    "Δ last vs base": m["note"],
                    "Δ deep vs base": "",
                }
            )
            continue
        d = section.get("diff", {}).get(label)
        has = bool(m["n_captions"])
        rows.append(
            {
                "model": name,
                "captions": m["n_captions"],
                "last layer": m["margin_mean"][-1] if has else None,
                "deep layers": _deep_mean(m) if has else None,
                "Δ last vs base": "—" if d is None else d.get("note") or _with_ci(d["last"]),
                "Δ deep vs base": "—" if d is None else ("" if "note" in d else _with_ci(d["deep"])),
            }
        )
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
            lines.append(
                f"  {label}: {r['captions']} captions; Δ vs base at the last layer {r['Δ last vs base']}, "
                f"over the deep layers {deep} {r['Δ deep vs base']} (95 % CI)"
            )
    return "\n".join(lines)
