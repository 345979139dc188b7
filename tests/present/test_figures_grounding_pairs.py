"""Figure builders of the Grounding and Pairs tabs: α* on the margin curve and its axis, the 2-D view's zoom, the
per-edit-type chart's n labels, zero versus missing, and chance lines named in the legend."""

from __future__ import annotations

import numpy as np
import pytest

from bindlab.present import figures
from bindlab.present import grounding_figures as gf

ALPHAS = np.round(np.arange(161) * 0.05, 10)  # the slider's 0..8 grid


def _curve(c: float, norm: float = 0.2) -> list[float]:
    return list(norm * (c + ALPHAS) / np.sqrt(1 + ALPHAS**2 + 2 * ALPHAS * c))


def _star_traces(fig) -> list:
    return [t for t in fig.data if t.name and t.name.startswith("α* =")]


def test_margin_curve_marks_alpha_star_on_the_curve_when_it_exists():
    fig = gf.margin_curve(ALPHAS, _curve(-0.4), 1.0, 0.4, chosen=2.0, value="red")
    (star,) = _star_traces(fig)
    assert list(star.x) == [pytest.approx(0.4)] and list(star.y) == [0.0]
    assert "α* = 0.40" in fig.layout.title.text
    lo, hi = fig.layout.xaxis.range
    assert lo <= 0 and hi >= 8  # the slider's whole range, α* inside it


@pytest.mark.parametrize("star", [None, float("nan")])
def test_margin_curve_says_no_crossing_and_draws_no_marker(star):
    fig = gf.margin_curve(ALPHAS, _curve(0.3), 1.0, star, value="red")
    assert not _star_traces(fig) and "no zero crossing" in fig.layout.title.text
    assert not [s for s in fig.layout.shapes if s.line.color == gf.TARGET]
    lo, hi = fig.layout.xaxis.range
    assert lo == pytest.approx(-0.16) and hi == pytest.approx(8.16)


def test_alpha_axis_is_extended_to_reach_alpha_star_outside_the_curve():
    short = ALPHAS[ALPHAS <= 0.3]
    fig = gf.margin_curve(short, _curve(-0.6)[: len(short)], 0.1, 0.6, value="red")
    lo, hi = fig.layout.xaxis.range
    assert lo < 0 and hi > 0.6  # reaches α* = 0.6 beyond the curve's last point 0.3
    assert gf.alpha_axis_range([0, 8], None) == pytest.approx([-0.16, 8.16])
    assert gf.alpha_axis_range([0, 8], 9.0)[1] > 9.0


def test_plane_zooms_to_the_images_and_names_its_axes():
    rng = np.random.default_rng(0)
    n = 200
    x, y = 0.2 + 0.01 * rng.standard_normal(n), 0.1 + 0.01 * rng.standard_normal(n)
    labels = [("red", "green", "blue")[i % 3] for i in range(n)]
    plane = {
        "x": x.tolist(),
        "y": y.tolist(),
        "positive": [lab == "red" for lab in labels],
        "labels": labels,
        "q": [0.3, 0.95],
        "q_alpha": [0.8, 0.6],
        "d": [1.0, 0.0],
    }
    fig = gf.grounding_plane(plane, "red", 1.0)
    xr, yr = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert xr[0] <= x.min() and xr[1] >= x.max() and xr[1] - xr[0] < 0.2  # zoomed on the blob, not 0..1
    assert yr[0] <= y.min() and yr[1] >= y.max() and yr[1] - yr[0] < 0.2
    assert "· d" not in fig.layout.xaxis.title.text and "d (image direction of red)" in fig.layout.xaxis.title.text
    names = [t.name for t in fig.data]
    assert "red (target)" in names and "green" in names and "blue" in names  # coloured by value
    assert len(fig.layout.annotations) == 3  # the three arrows, inside the view
    for a in fig.layout.annotations:
        assert xr[0] <= a.x <= xr[1] and yr[0] <= a.y <= yr[1]


def _pair_rows():
    return [
        {"edit_type": "modify_color", "category": "attribute", "n": 40, "i2t": 0.5, "t2i": 0.25, "group": 0.1},
        {"edit_type": "swap_color", "category": "attribute", "n": 12, "i2t": 0.0, "t2i": 0.0, "group": 0.0},
        {"edit_type": "modify_size", "category": "attribute", "n": 0, "i2t": None, "t2i": None, "group": None},
    ]


def test_pairs_chart_lists_every_edit_type_with_n_and_tells_zero_from_missing():
    fig = figures.pairs_by_edit_type(_pair_rows())
    bars = [t for t in fig.data if t.type == "bar"]
    assert {t.name for t in bars} == {"I2T", "T2I", "Group"}
    for t in bars:
        assert list(t.y) == ["modify_color (n=40)", "swap_color (n=12)", "modify_size (n=0)"]
        assert t.x[1] > 0 and t.text[1] == "0"  # zero is drawn (a sliver labelled 0)...
        assert t.x[2] is None and t.text[2] == ""  # ...missing is not a bar
    missing = [a.text for a in fig.layout.annotations if a.y == "modify_size (n=0)"]
    assert missing and "no pairs" in missing[0]
    legend = {t.name for t in fig.data}
    assert "chance I2T / T2I (0.25)" in legend and "chance Group (0.167)" in legend
    assert not [a for a in fig.layout.annotations if "chance" in (a.text or "")]  # no label drawn over a bar


def test_pairs_chart_says_pairs_and_rows_and_draws_each_score_s_interval():
    """With the pairs behind each n and each score's 95 % interval (``studies.pairs.edit_type_table``), every label
    says both counts and every bar carries its interval as an error bar and in its hover; missing stays missing."""
    rows = [
        {
            **r,
            "pairs": r["n"] // 4,
            **{f"{k}_ci95": None if r[k] is None else [r[k] / 2, (r[k] + 1) / 2] for k in ("i2t", "t2i", "group")},
        }
        for r in _pair_rows()
    ]
    fig = figures.pairs_by_edit_type(rows)
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    assert list(bars["I2T"].y) == [
        "modify_color (10 pairs, n=40)",
        "swap_color (3 pairs, n=12)",
        "modify_size (0 pairs, n=0)",
    ]
    err = bars["I2T"].error_x
    assert err.array[0] == 0.25 and err.arrayminus[0] == 0.25  # 0.5 in [0.25, 0.75]
    assert err.array[2] is None  # no pairs: no interval
    assert "95% CI 0.250–0.750" in bars["I2T"].customdata[0][1] and bars["I2T"].customdata[2][1] == "no pairs"
    assert "n = pairs × caption levels scored" in fig.layout.title.text


def test_accuracy_by_n_download_figure_has_error_bars_from_the_rows_intervals():
    rows = [
        {
            "n_objects": n,
            "subset": "all",
            "accuracy": a,
            "n": 20,
            "chance": 0.25,
            "ci95_low": a - 0.1,
            "ci95_high": a + 0.2,
        }
        for n, a in ((2, 0.5), (3, 0.4))
    ]
    fig = figures.accuracy_by_n(rows)
    line = next(t for t in fig.data if t.name == "all")
    assert list(line.error_y.array) == pytest.approx([0.2, 0.2]) and list(line.error_y.arrayminus) == pytest.approx(
        [0.1, 0.1]
    )
    assert list(line.customdata) == [20, 20] and "95% CI 0.400–0.700" in line.text[0]  # n, then the interval
    assert "bars: 95% bootstrap interval" in fig.layout.title.text
    plain = figures.accuracy_by_n([{k: v for k, v in r.items() if not k.startswith("ci95")} for r in rows])
    assert next(t for t in plain.data if t.name == "all").error_y.array is None  # no interval, no bar
