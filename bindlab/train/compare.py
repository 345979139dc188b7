"""Base vs finetuned, side by side: the tables of a compare (pure shaping, no I/O).

The three models of a finished job are the base encoder, ``lora:<job>/unscaled`` and ``lora:<job>`` (LiNeS). The
compare itself — scoring the three on the same MCQs through the cached pipeline and reading their attention margins —
is the Finetune study's (:func:`bindlab.studies.finetune.compare_job`); this module turns its record into rows:
MCQ accuracy per pairing and N, triplet accuracy and the forgetting control from the job's ``result.json``
(computed in the job on the same rows for all three), and the command line's text table.
"""

from __future__ import annotations

from typing import Any

from bindlab.train.lines import model_label

LABELS = ("base", "unscaled", "lines")

# What each format of the separated report measures (bindlab.studies.finetune_report builds the entries).
FORMATS: dict[str, str] = {
    "in-format": "the training sentence template and vocabulary: shows the model learnt the training format",
    "unseen words": "the training template, with words no training text contains",
    "out-of-template": "a sentence template the model was never trained on (same bindings, other wording), words "
    "seen in training",
    "out-of-template, unseen words": "a template the model was never trained on and words no training text contains",
    "held-out construction": "triplet construction types never trained on (deferred binding)",
    "control": "forgetting controls on general sentences: what finetuning may have cost",
}


def job_models(job_id: str, base: str) -> dict[str, str]:
    """``{"base": id, "unscaled": "lora:<job>/unscaled", "lines": "lora:<job>"}``."""
    return {"base": base, "unscaled": f"lora:{job_id}/unscaled", "lines": f"lora:{job_id}"}


def display_labels(lines_a: float | None) -> dict[str, str]:
    """How the three models are named to a reader: ``base``, ``unscaled`` and ``LiNeS (a=…)``.

    When ``a = 1`` LiNeS scaled nothing, so ``lora:<job>`` *is* the unscaled model: it is named ``unscaled`` too and
    the report shows it once (:func:`report_models`), never as LiNeS.
    """
    return {"base": "base", "unscaled": "unscaled", "lines": model_label(lines_a)}


def report_models(lines_a: float | None) -> list[str]:
    """The model keys a report shows: base, unscaled and, only when it scales something, the LiNeS model."""
    return ["base", "unscaled"] if model_label(lines_a) == "unscaled" else list(LABELS)


def _fmt(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None or v != v else f"{v:.{digits}f}"


def report_rows(entries: list[dict[str, Any]], lines_a: float | None) -> list[dict[str, Any]]:
    """The separated report as table rows: evaluation, format, in training distribution (yes/no: the training
    template *and* only words seen in training), N, chance, then per model its value and its 95 % CI
    (``"[lo, hi]"``), the columns named by :func:`display_labels`."""
    names = display_labels(lines_a)
    rows = []
    for e in entries:
        chance = e.get("chance")
        row: dict[str, Any] = {
            "evaluation": e["evaluation"],
            "format": e["format"],
            "in training distribution": "yes" if e["in_format"] else "no",
            "N": e["n"],
            "chance": "–" if chance is None else round(chance, 3),
        }
        for key in report_models(lines_a):
            m = e["models"].get(key)
            if m is None:
                continue
            row[names[key]] = round(m["value"], 4)
            row[f"{names[key]} 95% CI"] = f"[{_fmt(m['ci95'][0])}, {_fmt(m['ci95'][1])}]"
        rows.append(row)
    return rows


def report_text(entries: list[dict[str, Any]], lines_a: float | None) -> str:
    """What the report shows, in plain words: which rows moved beyond their 95 % intervals and which did not, each
    row named by what it contains (no figure averages rows of different kinds)."""
    names = display_labels(lines_a)
    tuned = report_models(lines_a)[-1]
    head = (
        "Rows in the training distribution use the training sentence template and only words seen in training: "
        "a gain there shows the model learnt the training format, not binding in general. The other rows are "
        "the general test (another template, unseen words, a held-out construction); control rows are what "
        "finetuning may have cost (drift: lower is better)."
    )
    if tuned == "unscaled":
        head += " LiNeS a = 1 scales nothing, so the job's model is the unscaled one (shown once, never as LiNeS)."
    moves = report_moves(entries, lines_a)
    if not moves:
        return head

    def named(rows: list[dict[str, Any]]) -> str:
        return "; ".join(
            f"{r['evaluation']} {r['base']:.3f} → {r['tuned']:.3f} (change {r['change']:+.3f} "
            f"[{r['change_ci95'][0]:+.3f}, {r['change_ci95'][1]:+.3f}])"
            for r in rows
        )

    for fmt_in, what in ((True, "in the training distribution"), (False, "outside it")):
        rows = [r for r in moves if r["in_format"] == fmt_in and r["kind"] != "control"]
        if not rows:
            continue
        moved = [r for r in rows if r["moved"] != "within"]
        head += (
            f" {names[tuned]} vs base, {what}: {len(moved)} of {len(rows)} rows moved beyond their intervals "
            "(the paired 95 % interval of the change excludes 0)" + (f" ({named(moved)})" if moved else "") + "."
        )
    ctrl = [r for r in moves if r["kind"] == "control" and r["moved"] != "within"]
    if ctrl:
        head += f" Controls that moved: {named(ctrl)}."
    return head


def _paired_columns(p: dict[str, Any] | None) -> dict[str, Any]:
    """A finetuned model's change over the base, item by item, as three columns (empty for the base itself)."""
    if not p:
        return {"change_vs_base": None, "change_ci95_low": None, "change_ci95_high": None}
    return {"change_vs_base": p["change"], "change_ci95_low": p["ci95"][0], "change_ci95_high": p["ci95"][1]}


def report_values(entries: list[dict[str, Any]], lines_a: float | None) -> list[dict[str, Any]]:
    """The separated report in long form, numbers only (for files): one row per evaluation and model with its value,
    interval bounds and n; the models named by :func:`display_labels`, LiNeS left out when ``a = 1``."""
    names = display_labels(lines_a)
    return [
        {
            "evaluation": e["evaluation"],
            "kind": e["kind"],
            "format": e["format"],
            "in_format": e["in_format"],
            "template": e.get("template"),
            "vocabulary": e.get("vocabulary"),
            "chance": e.get("chance"),
            "higher_is_better": e["higher_is_better"],
            "model": names[key],
            "value": m["value"],
            "ci95_low": m["ci95"][0],
            "ci95_high": m["ci95"][1],
            "n": m["n"],
            **_paired_columns((e.get("paired") or {}).get(key)),
        }
        for e in entries
        for key in report_models(lines_a)
        if (m := e["models"].get(key)) is not None
    ]


def report_moves(entries: list[dict[str, Any]], lines_a: float | None) -> list[dict[str, Any]]:
    """Which rows of the separated report moved: per evaluation, the job's model (LiNeS, or the unscaled model when
    ``a = 1``) against the base, ``moved`` = "up" / "down" when the paired 95 % interval of the change (item by item,
    ``entry["paired"]``) excludes 0, else "within" (the change is within the noise of this many items). Records
    without paired changes fall back to "the two separate intervals do not overlap".

    Returns:
        rows ``{"evaluation", "format", "in_format", "kind", "n", "model", "base", "tuned", "change", "change_ci95",
        "paired", "moved", "higher_is_better"}`` in the report's order (rows without both models are left out).
    """
    names = display_labels(lines_a)
    tuned = report_models(lines_a)[-1]
    rows = []
    for e in entries:
        b, t = e["models"].get("base"), e["models"].get(tuned)
        if b is None or t is None:
            continue
        paired = (e.get("paired") or {}).get(tuned)
        if paired:  # the change item by item: moved when its paired 95 % interval excludes 0
            lo, hi = paired["ci95"]
            moved = "up" if lo > 0 else "down" if hi < 0 else "within"
        else:  # an older record without paired changes: the two separate intervals do not overlap
            (blo, bhi), (tlo, thi) = b["ci95"], t["ci95"]
            lo, hi = tlo - bhi, thi - blo
            moved = "up" if tlo > bhi else "down" if thi < blo else "within"
        rows.append(
            {
                "evaluation": e["evaluation"],
                "format": e["format"],
                "in_format": e["in_format"],
                "kind": e["kind"],
                "n": e["n"],
                "model": names[tuned],
                "base": b["value"],
                "tuned": t["value"],
                "change": t["value"] - b["value"],
                "change_ci95": [lo, hi],
                "paired": bool(paired),
                "moved": moved,
                "higher_is_better": e["higher_is_better"],
            }
        )
    return rows


def format_report(entries: list[dict[str, Any]], lines_a: float | None) -> str:
    """Plain-text separated report for the command line."""
    names = display_labels(lines_a)
    keys = report_models(lines_a)
    out = [
        "separated report (value [95 % CI]); * = in the training distribution (training template, only words "
        "seen in training)",
        f"{'evaluation':<100}{'format':<32}{'N':>5}{'chance':>8}" + "".join(f"{names[k]:>26}" for k in keys),
    ]
    for e in entries:
        cells = "".join(
            f"{_fmt(m['value'])} [{_fmt(m['ci95'][0])}, {_fmt(m['ci95'][1])}]".rjust(26)
            for m in (e["models"].get(k) for k in keys)
            if m is not None
        )
        fmt = e["format"] + (" *" if e["in_format"] else "")
        chance = "–" if e.get("chance") is None else f"{e['chance']:.3f}"
        out.append(f"{e['evaluation'][:99]:<100}{fmt:<32}{e['n']:>5}{chance:>8}{cells}")
    out.append(report_text(entries, lines_a))
    return "\n".join(out)


def result_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per model from a job's result: triplet accuracy per split and forgetting-control figures.

    The model column names each model as :func:`display_labels` does; with ``a = 1`` the LiNeS row (identical to
    the unscaled one) is left out rather than shown as LiNeS.
    """
    a = (result.get("lines") or {}).get("a")
    names = display_labels(a)
    rows = []
    for label in report_models(a):
        ev = (result.get("eval") or {}).get(label)
        if not ev:
            continue
        row: dict[str, Any] = {"model": names[label]}
        for k, v in ev["triplets"].items():
            row[f"triplet_{k}"] = round(v, 4)
        for k, v in ev["forgetting"].items():
            row[k] = round(v, 4)
        rows.append(row)
    return rows


def labelled(rows: list[dict[str, Any]], lines_a: float | None) -> list[dict[str, Any]]:
    """Rows keyed ``base`` / ``unscaled`` / ``lines`` with those columns named for a reader (:func:`display_labels`);
    the ``lines`` column is dropped when ``a = 1`` (it equals ``unscaled``)."""
    names, keep = display_labels(lines_a), set(report_models(lines_a))
    return [{(names[k] if k in names else k): v for k, v in r.items() if k not in names or k in keep} for r in rows]


def mcq_table(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows ``{pairing, N, base, unscaled, lines}`` (N = "all" first, then each size)."""
    rows = []
    for p in res["pairings"]:
        base = res["mcq"]["base"][p]
        rows.append({"pairing": p, "N": "all", **{lab: round(res["mcq"][lab][p]["accuracy"], 4) for lab in LABELS}})
        for n in base["by_n"]:
            rows.append({"pairing": p, "N": n, **{lab: round(res["mcq"][lab][p]["by_n"][n], 4) for lab in LABELS}})
    return rows


def _chance(res: dict[str, Any]) -> float:
    """The base model's MCQ chance level in the first pairing (every model and pairing has the same questions)."""
    first = next(iter(res["mcq"]["base"].values()), {})
    return float(first.get("chance", 0.25))


def format_compare(res: dict[str, Any]) -> str:
    """Plain-text side-by-side table for the command line."""
    a = (res.get("lines") or {}).get("a")
    lines = [
        f"job {res['job']}: base = {res['models']['base']}, {display_labels(a)['lines']} = "
        f"{res['models']['lines']} (a = {a})",
        f"MCQ accuracy (chance {_chance(res):.3f}: the mean of per-question chance, 1/3 at N = 2, 1/4 above)",
        f"{'pairing':<8}{'N':>5}" + "".join(f"{display_labels(a)[k]:>16}" for k in report_models(a)),
    ]
    for r in labelled(mcq_table(res), a):
        lines.append(
            f"{r['pairing']:<8}{r['N']:>5}" + "".join(f"{v:>16.3f}" for k, v in r.items() if k not in ("pairing", "N"))
        )
    if res.get("attention"):
        from bindlab.train.compare_attention import format_attention

        lines.append(format_attention(res["attention"]))
    if res.get("report"):
        lines.append(format_report(res["report"], a))
    if res["triplets"]:
        lines.append("triplet accuracy and forgetting control (from the job)")
        for r in res["triplets"]:
            lines.append("  " + "  ".join(f"{k}={v}" for k, v in r.items()))
    return "\n".join(lines)
