"""Page-wide layout rules, readable at 1280x800 and at 1920x1080 (tests/ui/test_layout_ui.py checks them).

- Tables never wrap inside a word or a number. Gradio 6's Dataframe sizes its columns from a hidden "sizing" row
  (its longest value per column) laid out as a table: here that row may wrap between words only, so a column is
  never narrower than its longest word or number; the cells wrap between words only (Gradio's own cells use
  ``word-break: break-word``, which splits "rank" into "ran k" and "-0.008606" into "-0.0086 06"). A table wider
  than its box scrolls sideways (Gradio's viewport scrolls; the tabs pin their key columns with
  ``pinned_columns``). A table that does not wrap (``wrap=False``) shows each value whole on one line instead of
  cutting it off with "…".
- Markdown and HTML tables do the same: no break inside a word, sideways scroll when too wide.
- Plots are redrawn at their box's width when a tab is shown (:data:`RESIZE_JS`): a figure drawn while its tab was
  hidden (another tab's *Open in Browse*) would otherwise keep the width plotly guessed and be cut off.
"""

from __future__ import annotations

CSS = """
.table-wrap .sizing-body td, .table-wrap .header-table .header-cell {max-width: none !important}
.table-wrap:has(span.wrap) .sizing-body td {white-space: normal !important}
.table-wrap .sizing-body td, .table-wrap th span, .table-wrap [role=gridcell] span,
.prose table th, .prose table td, table.bl-side th, table.bl-side td, .map-table th, .map-table td
  {overflow-wrap: normal !important; word-break: keep-all !important; hyphens: manual}
.prose table {display: block; max-width: 100%; overflow-x: auto}
"""


# Columns of ids whose values stay on one line (a line may break after a hyphen: "n02-ind-" / "000"), by
# Dataframe elem_id: their 0-based column numbers.
WHOLE_COLUMNS = {"bl-topk": (1,), "cmp-diff": (0,)}


def whole_columns(elem_id: str, cols: tuple[int, ...]) -> str:
    """CSS that keeps each value of columns ``cols`` of the Dataframe ``elem_id`` on one line: its cells and the
    sizing row's cell (so the column is as wide as its longest value)."""
    return "\n".join(
        f"#{elem_id} .sizing-body td:nth-child({c + 1}), #{elem_id} [data-col='{c}'] span "
        "{white-space: nowrap !important}"
        for c in cols
    )


# Text columns given room before a table scrolls (squeezed to their longest word, a caption is one word a line), by
# Dataframe elem_id: {0-based column: minimum width}.
MIN_WIDTHS = {"bl-topk": {3: "16em"}}

# Dataframes whose first columns stay in view while the table scrolls sideways (Gradio 6.31 takes ``pinned_columns``
# but draws nothing sticky): elem_id -> the widths in px of its pinned columns but the last, fixed (the tab passes
# them as ``column_widths``) so that each next pinned column knows where to stick.
PINNED: dict[str, tuple[int, ...]] = {
    "bl-candidates": (44,),
    "bl-topk": (60,),
    "bl-pairs-compare-table": (),
    "cmp-leaderboard": (60,),
    "cmp-cross": (),
    "cmp-diff": (),
    "ft-report": (),
}


def pinned(elem_id: str) -> dict[str, object]:
    """The ``gr.Dataframe`` keywords of a table listed in :data:`PINNED`: ``pinned_columns`` and the fixed widths."""
    widths = PINNED[elem_id]
    return {"pinned_columns": len(widths) + 1, "column_widths": [f"{w}px" for w in widths]}


def pinned_css(elem_id: str, widths: tuple[int, ...]) -> str:
    """CSS that makes the first ``len(widths) + 1`` columns of the Dataframe ``elem_id`` sticky, each at the sum of
    the widths before it; body cells take their row's background so the text scrolling under them stays hidden."""
    rules = []
    for k in range(len(widths) + 1):
        left = sum(widths[:k])
        rules.append(
            f"#{elem_id} th:nth-child({k + 1}), #{elem_id} [role=gridcell][data-col='{k}'] "
            f"{{position: sticky !important; left: {left}px; z-index: 3}}\n"
            f"#{elem_id} [role=gridcell][data-col='{k}'] {{background: inherit}}"
        )
    return "\n".join(rules)


CSS += "\n".join(whole_columns(elem_id, cols) for elem_id, cols in WHOLE_COLUMNS.items())
CSS += "\n" + "\n".join(pinned_css(elem_id, widths) for elem_id, widths in PINNED.items())
CSS += "\n" + "\n".join(
    f"#{elem_id} .sizing-body td:nth-child({c + 1}) {{min-width: {w}}}"
    for elem_id, widths in MIN_WIDTHS.items()
    for c, w in widths.items()
)

# Redraw the shown plotly figures at their boxes' size on each tab change (build_app wires it): Gradio draws them
# "responsive", so plotly resizes every visible one on a window resize event.
RESIZE_JS = """() => { setTimeout(() => window.dispatchEvent(new Event('resize')), 150); }"""
