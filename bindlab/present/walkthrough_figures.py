"""The Walkthrough's charts, built from the step dicts of :mod:`bindlab.studies.walkthrough` (pure: dict -> plotly Figure).

The Walkthrough tab shows them and its Download panel (:func:`bindlab.present.exports.walkthrough_export`) exports them, so
both draw the same figures.
"""

from __future__ import annotations

from typing import Any

from bindlab.present import attention_figures as af
from bindlab.present import figures
from bindlab.present import grounding_figures as gf

PAIRING_NAMES = {"tt": "text → text", "ti": "text → image", "it": "image → text", "ii": "image → image"}


def objects_figure(r: dict[str, Any]) -> Any:
    """Step 4: accuracy by number of objects, with the chance level."""
    title = f"{r['model']} · {PAIRING_NAMES[r['pairing']]}: accuracy by number of objects"
    return figures.accuracy_by_n(r["rows"], title=title, chance=r["chance"])


def grounding_curve(r: dict[str, Any]) -> Any:
    """Step 5: the margin M(α) of the chosen value, with α, α* and the validation α marked."""
    return gf.margin_curve(r["curve"]["alphas"], r["curve"]["margin"], r["alpha"], r["alpha_star"],
                           r["alpha_validation"], r["value"])


def grounding_bars(r: dict[str, Any]) -> Any:
    """Step 5: test AP per value, text query vs grounded query, the chosen value highlighted."""
    return gf.ap_bars(r["values"], r["ap_native_all"], r["ap_grounded_all"], r["alpha"], r["value"])


def attention_figure(r: dict[str, Any]) -> Any:
    """Step 6: the attention binding margin per layer with its 95 % interval."""
    return af.margin_curves(af.result_curves(r), title=f"Attention binding margin per layer: {r['model']}")


def finetune_figure(r: dict[str, Any]) -> Any:
    """Step 7: accuracy by N, base vs finetuned vs LiNeS, in every pairing."""
    return figures.compare_by_n(r["by_n"])
