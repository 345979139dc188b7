"""Base vs finetuned, side by side: the tables of a compare (pure shaping, no I/O).

The three models of a finished job are the base encoder, ``lora:<job>/unscaled`` and ``lora:<job>`` (LiNeS). The
compare itself — scoring the three on the same MCQs through the cached pipeline and reading their attention margins —
is the Finetune study's (:func:`bindlab.studies.finetune.compare_job`); this module turns its record into rows:
MCQ accuracy per pairing and N, triplet accuracy and the forgetting control from the job's ``result.json``
(computed in the job on the same rows for all three), and the command line's text table.
"""

from __future__ import annotations

from typing import Any

LABELS = ("base", "unscaled", "lines")


def job_models(job_id: str, base: str) -> dict[str, str]:
    """``{"base": id, "unscaled": "lora:<job>/unscaled", "lines": "lora:<job>"}``."""
    return {"base": base, "unscaled": f"lora:{job_id}/unscaled", "lines": f"lora:{job_id}"}


def result_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per model from a job's result: triplet accuracy per split and forgetting-control figures."""
    rows = []
    for label in LABELS:
        ev = (result.get("eval") or {}).get(label)
        if not ev:
            continue
        row: dict[str, Any] = {"model": label}
        for k, v in ev["triplets"].items():
            row[f"triplet_{k}"] = round(v, 4)
        for k, v in ev["forgetting"].items():
            row[k] = round(v, 4)
        rows.append(row)
    return rows


def mcq_table(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows ``{pairing, N, base, unscaled, lines}`` (N = "all" first, then each size)."""
    rows = []
    for p in res["pairings"]:
        base = res["mcq"]["base"][p]
        rows.append({"pairing": p, "N": "all", **{lab: round(res["mcq"][lab][p]["accuracy"], 4) for lab in LABELS}})
        for n in base["by_n"]:
            rows.append({"pairing": p, "N": n, **{lab: round(res["mcq"][lab][p]["by_n"][n], 4) for lab in LABELS}})
    return rows


def format_compare(res: dict[str, Any]) -> str:
    """Plain-text side-by-side table for the command line."""
    lines = [f"job {res['job']}: base = {res['models']['base']}, lines = {res['models']['lines']} "
             f"(a = {(res.get('lines') or {}).get('a')})", "MCQ accuracy (chance 0.25)",
             f"{'pairing':<8}{'N':>5}{'base':>10}{'unscaled':>10}{'lines':>10}"]
    for r in mcq_table(res):
        lines.append(f"{r['pairing']:<8}{r['N']:>5}{r['base']:>10.3f}{r['unscaled']:>10.3f}{r['lines']:>10.3f}")
    if res.get("attention"):
        from bindlab.train.compare_attention import format_attention

        lines.append(format_attention(res["attention"]))
    if res["triplets"]:
        lines.append("triplet accuracy and forgetting control (from the job)")
        for r in res["triplets"]:
            lines.append("  " + "  ".join(f"{k}={v}" for k, v in r.items()))
    return "\n".join(lines)
