"""Base vs finetuned, side by side: SABER MCQs (per pairing, per N), attention binding margins per layer, triplet
accuracy and the forgetting control.

The three models of a finished job are the base encoder, ``lora:<job>/unscaled`` and ``lora:<job>`` (LiNeS). MCQs
are scored through the normal cached pipeline (:func:`bindlab.eval.mcq.evaluate_mcq`); attention margins are read
on the MCQ queries (:mod:`bindlab.train.compare_attention`); triplet accuracy and the forgetting control come from
the job's ``result.json`` (computed in the job on the same rows for all three).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
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


def compare_job(job_id: str, mcq_path: str | Path, pairings: str = "auto", limit: int = 0,
                progress: Callable[[float, str], None] | None = None, manager: Any = None,
                attention_limit: int | None = 200) -> dict[str, Any]:
    """Score base, unscaled and LiNeS models of a finished job on the same MCQs.

    Args:
        job_id: a job in state ``done``.
        mcq_path: SABER-style MCQ JSONL.
        pairings: ``"auto"`` (tt, plus ti/it/ii when the model embeds images and the questions have images) or
            a comma-separated list.
        limit: first N questions only (0 = all).
        progress: optional ``(fraction, message)`` callback.
        attention_limit: attention margins on the first N of those questions' query captions (0 = all of them,
            None = skip the attention part).

    Returns:
        ``{"job", "models", "mcq": {label: {pairing: summary}}, "attention": section or None, "triplets": rows,
        "lines", "provenance"}``; the attention section is :func:`~bindlab.train.compare_attention.attention_compare`.
    """
    from bindlab.data.schema import load_mcqs
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.mcq import evaluate_mcq, parse_pairings
    from bindlab.jobs.manager import JobManager
    from bindlab.provenance import provenance

    manager = manager or JobManager()
    info = manager.show(job_id, log_lines=0)
    st = info["status"]
    if st["state"] != "done":
        raise ValueError(f"job {st['id']} is {st['state']}, not done; compare needs a finished job")
    if attention_limit is not None and attention_limit < 0:
        raise ValueError(f"attention_limit must be 0 (all captions), a positive number or None (skip); "
                         f"got {attention_limit}")
    questions, _ = load_mcqs(mcq_path)
    if limit:
        questions = questions[:limit]
    models = job_models(st["id"], st["base_model"])
    encoders = {label: load_encoder(mid) for label, mid in models.items()}
    if pairings == "auto":
        has_images = all(q.query.image for q in questions)
        pairings = "tt,ti,it,ii" if has_images and "image" in encoders["base"].modalities else "tt"
    plist = parse_pairings(pairings)
    share = 1.0 if attention_limit is None else 0.5  # of the progress bar, for the MCQs
    mcq: dict[str, Any] = {}
    for i, (label, enc) in enumerate(encoders.items()):
        if progress:
            progress(share * i / len(encoders), f"scoring {models[label]}")
        mcq[label], _ = evaluate_mcq(questions, Path(mcq_path).parent, enc, plist)
    attention = None
    if attention_limit is not None:
        from bindlab.analysis.attention import Caption
        from bindlab.train.compare_attention import attention_compare

        qs = questions[:attention_limit] if attention_limit else questions
        captions = [Caption(q.query.text, tuple(q.query.bindings), q.id) for q in qs]
        attention = attention_compare(encoders, captions, progress=(lambda f, msg: progress(0.5 + 0.5 * f, msg))
                                      if progress else None)
    if progress:
        progress(1.0, "done")
    return {"job": st["id"], "models": models, "pairings": plist, "mcq": mcq, "attention": attention,
            "triplets": result_rows(info["result"] or {}), "lines": info["lines"],
            "provenance": provenance(mcq_path, encoders["lines"], {"kind": "finetune-compare", "pairings": plist,
                                                                   "limit": limit, "models": models,
                                                                   "attention_limit": attention_limit})}


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
