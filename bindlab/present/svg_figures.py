"""Small charts as inline SVG text, for views that must paint at once (pure: rows -> an ``<svg>`` string).

Browse's accuracy-by-N chart is on the app's first view. As a Plotly figure it made every visitor's browser fetch and
compile Plotly's 4.6 MB script before the page settled (about 40 % of a page load's CPU in Chromium); the same chart
drawn as SVG costs a few kilobytes. Every point keeps a tooltip (its ``<title>``) with the value, its n and its 95 %
interval, like the Plotly hover, and the interval is drawn as an error bar (``<g class="bl-ci">``). The downloadable figure stays the Plotly one (:func:`bindlab.present.figures.accuracy_by_n`); both
draw the same rows.

Every text is escaped here: titles carry model ids and file names that a visitor can choose.
"""

from __future__ import annotations

from html import escape
from typing import Any

from bindlab.present.figures import SUBSET_COLOURS
from bindlab.present.numbers import score

WIDTH, HEIGHT = 480, 300
LEFT, RIGHT, TOP, BOTTOM = 46, 120, 34, 40  # plot margins; the legend sits in the right one
Y_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)


def _x_positions(ns: list[int]) -> dict[int, float]:
    lo, hi = min(ns), max(ns)
    span = WIDTH - LEFT - RIGHT
    if lo == hi:
        return {lo: LEFT + span / 2}
    return {n: LEFT + span * (n - lo) / (hi - lo) for n in ns}


def _y(v: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - min(max(float(v), 0.0), 1.02) / 1.02)


def _polyline(points: list[tuple[float, float]], colour: str, width: float, dash: str = "") -> str:
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="{width}"{dashed}/>'


SUBSET_DX = {"all": 0.0, "independent": -6.0, "nested": 6.0}  # the subsets' points side by side at each N, so
# their error bars do not hide one another


def _has_ci(row: dict[str, Any]) -> bool:
    return row.get("ci95_low") is not None and row.get("ci95_high") is not None


def _point_tip(subset: str, row: dict[str, Any]) -> str:
    """A point's tooltip: ``all · N=2: 0.550 (n=20, 95% CI 0.400–0.700)`` (no interval part when it has none)."""
    ci = f", 95% CI {score(row['ci95_low'])}–{score(row['ci95_high'])}" if _has_ci(row) else ""
    return f"{subset} · N={int(row['n_objects'])}: {score(row['accuracy'])} (n={int(row['n'])}{ci})"


def _error_bar(x: float, row: dict[str, Any], subset: str, colour: str) -> str:
    """A vertical bar from the row's ``ci95_low`` to ``ci95_high`` with caps, its interval in a tooltip."""
    lo, hi = _y(row["ci95_low"]), _y(row["ci95_high"])
    cap = 3.5
    lines = "".join(
        f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{y1:.1f}" y2="{y2:.1f}"/>'
        for x1, x2, y1, y2 in ((x, x, hi, lo), (x - cap, x + cap, hi, hi), (x - cap, x + cap, lo, lo))
    )
    faint = "" if subset == "all" else ' stroke-opacity="0.55"'  # the subsets' bars behind the overall one
    return (
        f'<g class="bl-ci" data-subset="{escape(subset)}" data-n="{int(row["n_objects"])}" stroke="{colour}" '
        f'stroke-width="1.3"{faint}><title>{escape(subset)} · N={int(row["n_objects"])}: 95% CI '
        f"{score(row['ci95_low'])}–{score(row['ci95_high'])}</title>{lines}</g>"
    )


def accuracy_by_n_svg(
    rows: list[dict[str, Any]], title: str = "MCQ accuracy by number of objects", chance: float = 0.25
) -> str:
    """Accuracy vs N, one line per subset, each point with its 95 % interval as an error bar when the rows carry one,
    the chance level dashed grey (per N from the rows' ``chance`` when they carry one, else flat at ``chance``): the
    same chart as :func:`bindlab.present.figures.accuracy_by_n`, as SVG.

    Args:
        rows: ``{"n_objects", "subset", "accuracy", "n", "chance"?, "ci95_low"?, "ci95_high"?}`` dicts
            (``browse.accuracy_table``).
        title: shown above the plot (escaped).
        chance: the flat chance level when no row carries its own.

    Returns:
        An ``<svg>`` element that scales to its container's width; a short message in one when there are no rows.
    """
    head = (
        f'<svg class="bl-svg-chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg" '
        'style="max-width:640px;font:12px sans-serif;color:inherit">'
    )
    if not rows:
        return (
            head + f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" fill="currentColor">'
            "no questions to summarise</text></svg>"
        )
    ns = sorted({int(r["n_objects"]) for r in rows})
    xs = _x_positions(ns)
    parts = [
        head,
        f'<text x="{LEFT}" y="18" fill="currentColor" font-size="13" font-weight="bold">{escape(title)}</text>',
    ]
    right = WIDTH - RIGHT
    for v in Y_TICKS:  # grid and y axis
        y = _y(v)
        parts.append(
            f'<line x1="{LEFT}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="currentColor" stroke-opacity="0.15"/>'
        )
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="currentColor">{v:g}</text>')
    base = _y(0.0)
    for n in ns:  # x ticks
        parts.append(f'<text x="{xs[n]:.1f}" y="{base + 16:.1f}" text-anchor="middle" fill="currentColor">{n}</text>')
    parts.append(
        f'<text x="{(LEFT + right) / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle" fill="currentColor">'
        "number of objects (N)</text>"
    )
    parts.append(
        f'<text transform="translate(12 {(TOP + base) / 2:.1f}) rotate(-90)" text-anchor="middle" '
        'fill="currentColor">accuracy</text>'
    )

    legend: list[tuple[str, str, str]] = []
    all_rows = [r for r in rows if r["subset"] == "all"] or rows
    per_n = sorted({int(r["n_objects"]): r["chance"] for r in all_rows if r.get("chance") is not None}.items())
    if per_n:
        pts = [(xs[n], _y(c)) for n, c in per_n]
        parts.append(_polyline(pts, "grey", 1.5, "5 4"))
        parts.extend(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="grey"><title>N={n}: chance {score(c)}</title></circle>'
            for (n, c), (x, y) in zip(per_n, pts, strict=True)
        )
    else:
        y = _y(chance)
        parts.append(
            f'<line x1="{LEFT}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="grey" stroke-width="1.5" '
            f'stroke-dasharray="5 4"><title>chance {score(chance)}</title></line>'
        )
    for subset in ("all", "independent", "nested"):
        line = sorted((r for r in rows if r["subset"] == subset), key=lambda r: int(r["n_objects"]))
        if not line:
            continue
        colour = SUBSET_COLOURS[subset]
        dx = SUBSET_DX[subset] if len(ns) > 1 else 0.0
        pts = [(xs[int(r["n_objects"])] + dx, _y(r["accuracy"])) for r in line]
        parts.append(_polyline(pts, colour, 3 if subset == "all" else 1.5))
        parts.extend(_error_bar(x, r, subset, colour) for r, (x, _) in zip(line, pts, strict=True) if _has_ci(r))
        parts.extend(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{4 if subset == "all" else 3}" fill="{colour}">'
            f"<title>{_point_tip(subset, r)}</title></circle>"
            for r, (x, y) in zip(line, pts, strict=True)
        )
        legend.append((subset, colour, ""))
    legend.append(("chance", "grey", "5 4"))
    for i, (name, colour, dash) in enumerate(legend):  # legend beside the plot, like the Plotly one
        y = TOP + 8 + 18 * i
        parts.append(_polyline([(right + 12, y), (right + 34, y)], colour, 2, dash))
        parts.append(f'<text x="{right + 40}" y="{y + 4}" fill="currentColor">{name}</text>')
    if any(_has_ci(r) for r in rows):  # what the bars are
        y = TOP + 8 + 18 * len(legend)
        x = right + 23
        parts.append(
            f'<path class="bl-ci-key" d="M{x} {y - 6}V{y + 6}M{x - 3.5} {y - 6}H{x + 3.5}M{x - 3.5} {y + 6}'
            f'H{x + 3.5}" stroke="currentColor" stroke-width="1.3"/>'
        )
        parts.append(f'<text x="{right + 40}" y="{y + 4}" fill="currentColor">95% CI</text>')
    parts.append("</svg>")
    return "".join(parts)
