"""Browse's accuracy-by-N chart as SVG (bindlab.present.svg_figures): the same rows as the Plotly figure, one point
per (subset, N) with its value and n in a tooltip, the chance level per N, and a message when there is nothing."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from bindlab.present.svg_figures import HEIGHT, accuracy_by_n_svg

NS = "{http://www.w3.org/2000/svg}"


def _rows() -> list[dict]:
    rows = []
    for n, acc, chance in ((2, 0.55, 1 / 3), (3, 0.40, 0.25), (5, 0.25, 0.25)):
        rows.append({"n_objects": n, "subset": "all", "accuracy": acc, "n": 20, "chance": chance})
        rows.append({"n_objects": n, "subset": "nested", "accuracy": acc - 0.1, "n": 10, "chance": chance})
    return rows


def _tooltips(root: ET.Element) -> list[str]:
    return [t.text for t in root.iter(f"{NS}title")]


def test_every_point_has_its_value_and_n_and_the_chance_is_drawn_per_n():
    root = ET.fromstring(accuracy_by_n_svg(_rows(), title="bow · tt: accuracy by N"))
    tips = _tooltips(root)
    assert "all · N=2: 0.550 (n=20)" in tips and "nested · N=5: 0.150 (n=10)" in tips
    assert [t for t in tips if t.startswith("N=")] == ["N=2: chance 0.333", "N=3: chance 0.250", "N=5: chance 0.250"]
    assert len([t for t in tips if t.startswith(("all", "nested"))]) == 6
    legend = [t.text for t in root.iter(f"{NS}text")]
    assert "all" in legend and "nested" in legend and "chance" in legend and "independent" not in legend
    assert "bow · tt: accuracy by N" in legend


def test_higher_accuracy_is_drawn_higher_and_n_runs_left_to_right():
    root = ET.fromstring(accuracy_by_n_svg(_rows()))
    circles = {c.find(f"{NS}title").text: (float(c.get("cx")), float(c.get("cy"))) for c in root.iter(f"{NS}circle")}
    x2, y2 = circles["all · N=2: 0.550 (n=20)"]
    x5, y5 = circles["all · N=5: 0.250 (n=20)"]
    assert x2 < x5 and y2 < y5 < HEIGHT  # SVG's y grows downwards
    assert circles["N=5: chance 0.250"][1] == y5  # accuracy at chance sits on the chance line


def test_rows_without_their_own_chance_get_a_flat_line_and_no_rows_a_message():
    rows = [{k: v for k, v in r.items() if k != "chance"} for r in _rows()]
    root = ET.fromstring(accuracy_by_n_svg(rows, chance=0.5))
    assert "chance 0.500" in _tooltips(root)
    empty = accuracy_by_n_svg([])
    assert re.search(r">no questions to summarise<", empty) and ET.fromstring(empty) is not None


def test_each_point_carries_its_95_interval_as_an_error_bar():
    """Rows with ``ci95_low``/``ci95_high`` (``browse.accuracy_table``): an error bar per point, its ends at the
    interval's heights, the interval in the point's tooltip, and a legend key for the bars."""
    rows = [{**r, "ci95_low": r["accuracy"] - 0.1, "ci95_high": r["accuracy"] + 0.15} for r in _rows()]
    root = ET.fromstring(accuracy_by_n_svg(rows))
    bars = [g for g in root.iter(f"{NS}g") if g.get("class") == "bl-ci"]
    assert len(bars) == 6 and {(g.get("data-subset"), g.get("data-n")) for g in bars} >= {("all", "2"), ("nested", "5")}
    circles = {c.find(f"{NS}title").text: c for c in root.iter(f"{NS}circle")}
    point = circles["all · N=2: 0.550 (n=20, 95% CI 0.450–0.700)"]
    bar = next(g for g in bars if (g.get("data-subset"), g.get("data-n")) == ("all", "2"))
    stem = bar.find(f"{NS}line")
    top, bottom, y = float(stem.get("y1")), float(stem.get("y2")), float(point.get("cy"))
    assert top < y < bottom  # the interval spans its point (SVG's y grows downwards)
    assert float(stem.get("x1")) == float(point.get("cx"))
    assert bar.find(f"{NS}title").text == "all · N=2: 95% CI 0.450–0.700"
    assert "95% CI" in [t.text for t in root.iter(f"{NS}text")]  # the legend names the bars
    # rows without intervals draw none
    assert "bl-ci" not in accuracy_by_n_svg(_rows())
