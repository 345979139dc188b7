"""The embedding map as a plotly figure, and its standalone HTML export, both with image thumbnails on hover.

``map_figure`` is pure (points + coordinates -> Figure). Plotly's hover label cannot show images, so when given
thumbnails the figure hides it and carries the hover data in ``layout.meta``; :data:`HOVER_JS` (one function,
``blMapHover(gd)``) then draws a small hover box (thumbnail, caption, role, N, correctness) from that data. The Map
tab and the standalone HTML export both bind it, so they show the same box; plotly.js is inlined in the export, so
the file opens offline.
"""

from __future__ import annotations

import base64
import io
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from bindlab.present.safe_text import plot_text

ROLE_COLOURS = {
    "query": "#222222",
    "preserve": "#2ca02c",
    "attr_swap": "#d62728",
    "obj_swap": "#1f77b4",
    "joint_swap": "#9467bd",
    "replace": "#8c564b",
}
MODALITY_COLOURS = {"text": "#1f77b4", "image": "#ff7f0e"}
CORRECT_COLOURS = {"correct": "#2ca02c", "wrong": "#d62728"}
N_COLOURS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"]
SYMBOLS = {"text": "circle", "image": "square"}
COLOR_LABELS = {"role": "role", "modality": "modality", "n": "number of objects", "correct": "model correct"}


def category(point: dict[str, Any], color_by: str) -> str:
    """The legend group of a point under ``color_by`` (role | modality | n | correct)."""
    if color_by == "role":
        return point["role"]
    if color_by == "modality":
        return point["modality"]
    if color_by == "n":
        return f"N={point['n_objects']}"
    if color_by == "correct":
        return "correct" if point["correct"] else "wrong"
    raise ValueError(f"unknown colour {color_by!r}; choose from {list(COLOR_LABELS)}")


def _colour(cat: str, color_by: str, rank: int) -> str:
    table = {"role": ROLE_COLOURS, "modality": MODALITY_COLOURS, "correct": CORRECT_COLOURS}.get(color_by, {})
    return table.get(cat) or N_COLOURS[rank % len(N_COLOURS)]


def _order(cats: Sequence[str], color_by: str) -> list[str]:
    known = {"role": list(ROLE_COLOURS), "modality": list(MODALITY_COLOURS), "correct": list(CORRECT_COLOURS)}
    if color_by == "n":
        return sorted(set(cats), key=lambda c: int(c.split("=")[1]))
    first = [c for c in known.get(color_by, []) if c in cats]
    return first + sorted(set(cats) - set(first))


def hover_caption(text: str, width: int = 60) -> str:
    """A caption wrapped with ``<br>`` for plotly's hover label (the caption itself is text, escaped)."""
    return "<br>".join(plot_text(line) for line in textwrap.wrap(text, width)) or plot_text(text)


def map_figure(
    points: Sequence[dict[str, Any]],
    xy: np.ndarray,
    color_by: str = "role",
    title: str = "",
    thumbs: dict[str, Any] | None = None,
    height: int = 620,
    highlight: Sequence[int] = (),
    highlight_label: str = "",
    joined: str | None = None,
) -> go.Figure:
    """A scatter of map points, one legend entry per colour group; marker shape = modality (circle text, square image).

    Queries are large open rings drawn first, candidates filled markers drawn over them: where a question's five
    items sit on one spot (a model that barely moves a caption when its bindings change), the candidates show inside
    their query's ring and neither hides the other. Each colour group is one legend
    entry (its queries are a second trace in the same ``legendgroup``), so clicking a legend entry hides or shows
    the group; box and lasso selection work on every group.

    Args:
        points: dicts from :func:`bindlab.analysis.embedding_map.item_points`.
        xy: ``(p, 2)`` coordinates, one row per point.
        color_by: ``role`` | ``modality`` | ``n`` | ``correct``.
        thumbs: :func:`thumbnails` of ``points``: plotly's hover label is hidden and ``layout.meta`` carries what
            :data:`HOVER_JS` shows instead (with the thumbnail). None: plotly's own label with the caption.
        highlight: indices of points to ring (e.g. caption search matches), drawn on top.
        highlight_label: the legend name of the rings (text: it may quote a visitor's search).
        joined: a question id: lines from its query to each of its candidates, per modality, roles labelled.

    Each marker's ``customdata`` is ``[point id, question id, point index]``; clicks and selections read it.
    """
    from bindlab.present.figures import message_figure

    if not len(points):
        return message_figure("no points to draw")
    xy = np.asarray(xy)
    cats = [category(p, color_by) for p in points]
    custom_hover = thumbs is not None
    fig = go.Figure()
    order = _order(cats, color_by)
    # each group's legend entry is its candidates' trace (a filled marker), its queries' where it has no candidates
    with_candidates = {c for c, p in zip(cats, points, strict=True) if p["role"] != QUERY_ROLE}
    for is_query in (True, False):  # queries first (rings), candidates on top
        for rank, cat in enumerate(order):
            idx = [i for i, c in enumerate(cats) if c == cat and (points[i]["role"] == QUERY_ROLE) == is_query]
            if not idx:
                continue
            trace = _points_trace(
                points,
                xy,
                idx,
                cat,
                _colour(cat, color_by, rank),
                is_query,
                custom_hover,
                show_legend=not is_query or cat not in with_candidates,
            )
            trace.legendrank = 1 + rank  # the legend keeps the group order, whatever the drawing order
            fig.add_trace(trace)
    if joined:
        _add_question_lines(fig, points, xy, joined)
    if len(highlight):
        idx = [int(i) for i in highlight]
        fig.add_trace(
            go.Scatter(
                x=xy[idx, 0],
                y=xy[idx, 1],
                mode="markers",
                hoverinfo="skip",
                name=plot_text(highlight_label) or f"highlighted ({len(idx)})",
                marker=dict(symbol="circle-open", size=20, color="#ff7f0e", line=dict(width=3)),
            )
        )
    fig.update_layout(
        title=title,
        height=height,
        legend_title_text=COLOR_LABELS.get(color_by, color_by),
        margin=dict(l=40, r=20, t=50, b=40),
        plot_bgcolor="#fafafa",
        hovermode="closest",
        dragmode="select",
        legend=dict(itemclick="toggle", itemdoubleclick="toggleothers"),
        xaxis=dict(showticklabels=False, title=""),
        yaxis=dict(showticklabels=False, title=""),
    )
    if custom_hover:
        fig.update_layout(meta=hover_data(points, thumbs))
    return fig


QUERY_ROLE = "query"


def _points_trace(
    points: Sequence[dict[str, Any]],
    xy: np.ndarray,
    idx: Sequence[int],
    cat: str,
    colour: str,
    is_query: bool,
    custom_hover: bool,
    show_legend: bool,
) -> go.Scatter:
    pts = [points[i] for i in idx]
    return go.Scatter(
        x=xy[idx, 0],
        y=xy[idx, 1],
        mode="markers",
        name=plot_text(cat),
        legendgroup=cat,
        showlegend=show_legend,
        marker=dict(
            color=colour,
            size=16 if is_query else 8,
            opacity=0.9 if is_query else 0.8,
            symbol=[SYMBOLS.get(p["modality"], "circle") + ("-open" if is_query else "") for p in pts],
            line=dict(width=2.5 if is_query else 0.5, color=colour if is_query else "white"),
        ),
        customdata=[[p["id"], p["question"], i] for p, i in zip(pts, idx, strict=True)],
        text=[
            f"{hover_caption(p['caption'])}<br><i>{plot_text(p['role'])} · {plot_text(p['modality'])} · "
            f"N={plot_text(p['n_objects'])} · {'correct' if p['correct'] else 'wrong'}</i><br>{plot_text(p['id'])}"
            for p in pts
        ],
        hoverinfo="none" if custom_hover else "text",
        hovertemplate=None if custom_hover else "%{text}<extra></extra>",
    )


def _add_question_lines(fig: go.Figure, points: Sequence[dict[str, Any]], xy: np.ndarray, question: str) -> None:
    """Lines from a question's query to each of its candidates (per modality), candidates labelled by role."""
    for modality in dict.fromkeys(p["modality"] for p in points):
        items = [i for i, p in enumerate(points) if p["question"] == question and p["modality"] == modality]
        query = next((i for i in items if points[i]["role"] == QUERY_ROLE), None)
        if query is None:
            continue
        cands = [i for i in items if i != query]
        xs, ys = [], []
        for i in cands:
            xs += [xy[query, 0], xy[i, 0], None]
            ys += [xy[query, 1], xy[i, 1], None]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                hoverinfo="skip",
                name=plot_text(f"{question} ({modality})"),
                line=dict(color="#555", width=1.5, dash="dot" if modality == "image" else "solid"),
            )
        )
        fig.add_trace(
            go.Scatter(
                x=xy[cands, 0],
                y=xy[cands, 1],
                mode="text",
                hoverinfo="skip",
                showlegend=False,
                text=[plot_text(points[i]["role"]) for i in cands],
                textposition="top center",
                textfont=dict(size=11, color="#333"),
            )
        )


def hover_data(points: Sequence[dict[str, Any]], thumbs: dict[str, Any]) -> dict[str, Any]:
    """What :data:`HOVER_JS` reads from ``layout.meta``: per point its caption, role, modality, N, correctness and
    id, plus the thumbnails."""
    return {
        "bindlab_map": {
            "points": [
                {
                    "id": p["id"],
                    "caption": p["caption"],
                    "role": p["role"],
                    "modality": p["modality"],
                    "n": p["n_objects"],
                    "correct": p["correct"],
                }
                for p in points
            ],
            "thumbs": thumbs,
        }
    }


# --- standalone HTML ------------------------------------------------------------------------------------------------
def thumbnail_uri(path: str | Path, size: int = 64, quality: int = 70) -> str | None:
    """A small JPEG ``data:`` URI of an image file (longest side ``size`` px), or None when it cannot be read.

    The file goes through the one capped loader (:func:`bindlab.data.files.open_image`): a FIFO or a device is never
    opened for reading (no hang), a decompression bomb is never decoded."""
    from bindlab.data.files import DataError, open_image

    try:
        with open_image(path) as im:
            im = im.convert("RGB")
            im.thumbnail((size, size))
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=quality)
    except (DataError, OSError):
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def thumbnails(points: Sequence[dict[str, Any]], size: int = 64) -> dict[str, Any]:
    """Thumbnails for the points that have images, each image encoded once.

    Returns:
        ``{"images": [data URI, ...], "of_point": [index into images or -1, one per point]}``.
    """
    images: list[str] = []
    where: dict[str, int] = {}
    of_point = []
    for p in points:
        path = p.get("image")
        if size <= 0 or not path:
            of_point.append(-1)
            continue
        if path not in where:
            uri = thumbnail_uri(path, size)
            where[path] = len(images) if uri else -1
            if uri:
                images.append(uri)
        of_point.append(where[path])
    return {"images": images, "of_point": of_point}


# blMapHover(gd): draw the hover box of a map figure from gd.layout.meta.bindlab_map (see map_figure). Safe to call
# again on the same plot (the Map tab does after every new figure): it replaces its listeners and reuses the box.
HOVER_JS = """
function blMapHover(gd) {
  var data = gd && gd.layout && gd.layout.meta && gd.layout.meta.bindlab_map;
  if (!data || !gd.on) return false;
  var box = document.getElementById('bl-hover-box');
  if (!box) {
    box = document.createElement('div');
    box.id = 'bl-hover-box';
    box.style.cssText = 'position:fixed;display:none;pointer-events:none;z-index:1000;background:#fff;' +
      'border:1px solid #999;border-radius:6px;padding:6px 8px;max-width:320px;font:12px sans-serif;' +
      'color:#222;box-shadow:0 2px 6px rgba(0,0,0,.2)';
    document.body.appendChild(box);
  }
  if (gd.removeAllListeners) { gd.removeAllListeners('plotly_hover'); gd.removeAllListeners('plotly_unhover'); }
  gd.on('plotly_hover', function (ev) {
    var pt = ev.points[0], k = pt.customdata[2], p = data.points[k];
    box.replaceChildren();
    var t = data.thumbs.of_point[k];
    if (t >= 0) { var img = document.createElement('img'); img.src = data.thumbs.images[t];
      img.style.cssText = 'display:block;margin-bottom:4px;image-rendering:pixelated;width:96px'; box.appendChild(img); }
    var cap = document.createElement('div'); cap.textContent = p.caption; box.appendChild(cap);
    var meta = document.createElement('div'); meta.style.color = '#555';
    meta.textContent = p.role + ' · ' + p.modality + ' · N=' + p.n + ' · ' + (p.correct ? 'correct' : 'wrong') +
      ' · ' + p.id;
    box.appendChild(meta);
    var e = ev.event || {clientX: 0, clientY: 0};
    box.style.left = (e.clientX + 14) + 'px'; box.style.top = (e.clientY + 14) + 'px'; box.style.display = 'block';
  });
  gd.on('plotly_unhover', function () { box.style.display = 'none'; });
  return true;
}
"""


def map_html(
    points: Sequence[dict[str, Any]], xy: np.ndarray, color_by: str = "role", title: str = "", thumb_size: int = 64
) -> str:
    """A standalone HTML page of the map: plotly.js inlined (works offline) and the hover box with thumbnails."""
    fig = map_figure(points, xy, color_by, title, thumbs=thumbnails(points, thumb_size))
    script = HOVER_JS + "\nblMapHover(document.getElementById('bindlab-map'));\n"
    return fig.to_html(include_plotlyjs=True, full_html=True, div_id="bindlab-map", post_script=script)
