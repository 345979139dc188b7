"""Object silhouettes for the procedural scene renderer (:mod:`bindlab.data.render`).

Every shape is a short list of polygon parts in *unit coordinates*: x to the right, y downwards, the whole shape
centred on its bounding box and scaled so that its farthest point lies on the unit circle. A part either adds to
the silhouette or cuts a hole (``add=False``); ``shade`` darkens or lightens a part (a cube's faces, a house's door)
so that solids read as 3D and everyday objects read as what they are, while the attribute texture stays the same
everywhere on the object. Names are words from :data:`bindlab.data.vocab.OBJECTS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
from PIL import Image, ImageDraw


@dataclass(frozen=True, eq=False)
class Part:
    """One polygon of a shape: ``points`` (k, 2) in unit coordinates; ``add=False`` cuts a hole."""

    points: np.ndarray  # (k, 2)
    add: bool = True
    shade: float = 1.0  # multiplies the texture's brightness on this part


@dataclass(frozen=True, eq=False)
class Shape:
    """A named silhouette; ``shading`` is the 3D light model: ``flat``, ``sphere`` or ``cylinder``."""

    name: str
    parts: tuple[Part, ...]
    shading: str = "flat"


# ---------------------------------------------------------------------------------------------- polygon helpers
def ellipse(
    cx: float, cy: float, rx: float, ry: float | None = None, a0: float = 0.0, a1: float = 360.0, n: int = 48
) -> np.ndarray:
    """Points on an elliptic arc from angle ``a0`` to ``a1`` (degrees; 90 points down), shape (n, 2)."""
    ry = rx if ry is None else ry
    t = np.radians(np.linspace(a0, a1, n, endpoint=(a1 - a0) % 360 != 0))
    return np.stack([cx + rx * np.cos(t), cy + ry * np.sin(t)], axis=1)


def arc_band(cx: float, cy: float, r0: float, r1: float, a0: float, a1: float, n: int = 24) -> np.ndarray:
    """A thick arc (a handle or a hook): outer arc forwards then inner arc backwards, shape (2n, 2)."""
    return np.concatenate([ellipse(cx, cy, r1, r1, a0, a1, n), ellipse(cx, cy, r0, r0, a0, a1, n)[::-1]])


def rect(x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    return np.array([(x0, y0), (x1, y0), (x1, y1), (x0, y1)], dtype=float)


def poly(*pts: tuple[float, float]) -> np.ndarray:
    return np.array(pts, dtype=float)


def regular(n: int, r: float = 1.0, rot: float = 0.0) -> np.ndarray:
    t = np.radians(rot + 360.0 * np.arange(n) / n)
    return np.stack([r * np.cos(t), r * np.sin(t)], axis=1)


def star_points(n: int, r_out: float, r_in: float, rot: float = -90.0) -> np.ndarray:
    t = np.radians(rot + 180.0 * np.arange(2 * n) / n)
    r = np.where(np.arange(2 * n) % 2 == 0, r_out, r_in)
    return np.stack([r * np.cos(t), r * np.sin(t)], axis=1)


def rotate(points: np.ndarray, deg: float, about: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    p = points - np.asarray(about)
    return p @ np.array([[c, s], [-s, c]]) + np.asarray(about)


def _heart() -> np.ndarray:
    t = np.linspace(0, 2 * np.pi, 72, endpoint=False)
    x = 16 * np.sin(t) ** 3
    y = -(13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * np.cos(3 * t) - np.cos(4 * t))
    return np.stack([x, y], axis=1) / 17.0


def _bell_body() -> np.ndarray:
    t = np.linspace(0.0, 1.0, 20)
    y = -0.62 + 1.17 * t
    w = 0.32 + 0.48 * t**2.4
    return np.concatenate([np.stack([-w, y], 1), np.stack([w, y], 1)[::-1]])


def _shield() -> np.ndarray:
    t = np.linspace(0, 1, 16)
    right = np.stack([0.75 * (1 - t) ** 1.3, 0.0 + 0.95 * t**0.8], 1)  # curved side down to the point
    top = poly((-0.75, -0.8), (0.0, -0.68), (0.75, -0.8))
    return np.concatenate([top, right, right[::-1][1:-1] * [-1, 1]])


def _flag_cloth() -> np.ndarray:
    x = np.linspace(-0.64, 0.85, 20)
    wave = 0.08 * np.sin((x + 0.64) * 5.0)
    return np.concatenate([np.stack([x, -0.9 + wave], 1), np.stack([x, -0.05 + wave], 1)[::-1]])


# ---------------------------------------------------------------------------------------------- the shapes
def _p(points: np.ndarray, shade: float = 1.0) -> Part:
    return Part(points, True, shade)


def _hole(points: np.ndarray) -> Part:
    return Part(points, False)


_RAW: dict[str, tuple[list[Part], str]] = {
    # geometric solids (CLEVR-like, faces shaded)
    "cube": (
        [
            _p(poly((0, -0.86), (0.75, -0.43), (0, 0), (-0.75, -0.43)), 1.12),
            _p(poly((-0.75, -0.43), (0, 0), (0, 0.86), (-0.75, 0.43)), 0.92),
            _p(poly((0, 0), (0.75, -0.43), (0.75, 0.43), (0, 0.86)), 0.72),
        ],
        "flat",
    ),
    "sphere": ([_p(ellipse(0, 0, 1.0, 1.0, n=72))], "sphere"),
    "cylinder": (
        [_p(rect(-0.6, -0.55, 0.6, 0.6)), _p(ellipse(0, 0.6, 0.6, 0.2)), _p(ellipse(0, -0.55, 0.6, 0.2), 1.18)],
        "cylinder",
    ),
    "cone": ([_p(poly((0, -0.92), (-0.62, 0.55), (0.62, 0.55))), _p(ellipse(0, 0.55, 0.62, 0.2, 0, 180))], "cylinder"),
    "pyramid": (
        [
            _p(poly((0, -0.85), (-0.85, 0.42), (0.15, 0.75)), 1.06),
            _p(poly((0, -0.85), (0.15, 0.75), (0.85, 0.35)), 0.74),
        ],
        "flat",
    ),
    "torus": ([_p(ellipse(0, 0, 1.0, 0.62, n=72)), _hole(ellipse(0, -0.05, 0.42, 0.2))], "sphere"),
    # flat geometric figures
    "star": ([_p(star_points(5, 1.0, 0.42))], "flat"),
    "heart": ([_p(_heart())], "flat"),
    "hexagon": ([_p(regular(6, 1.0, 0.0))], "flat"),
    "triangle": ([_p(regular(3, 1.0, -90.0))], "flat"),
    # everyday silhouettes
    "umbrella": (
        [
            _p(ellipse(0, 0.05, 1.0, 0.8, 180, 360)),
            *[_hole(ellipse(x, 0.08, 0.25, 0.11)) for x in (-0.75, -0.25, 0.25, 0.75)],
            _p(poly((0, -0.75), (-0.5, 0.0), (0.5, 0.0)), 0.86),
            _p(rect(-0.05, 0.0, 0.05, 0.85)),
            _p(arc_band(-0.16, 0.85, 0.07, 0.16, 0, 180)),
            _p(rect(-0.03, -0.95, 0.03, -0.7)),
        ],
        "flat",
    ),
    "mug": (
        [
            _p(arc_band(0.35, 0.0, 0.2, 0.4, -90, 90)),
            _p(rect(-0.6, -0.65, 0.35, 0.65)),
            _p(ellipse(-0.125, 0.65, 0.475, 0.12)),
            _p(ellipse(-0.125, -0.65, 0.475, 0.12), 0.5),
        ],
        "cylinder",
    ),
    "key": (
        [
            _p(ellipse(-0.6, 0, 0.4, 0.4)),
            _hole(ellipse(-0.6, 0, 0.16, 0.16)),
            _p(rect(-0.26, -0.09, 0.95, 0.09)),
            _p(rect(0.52, 0.08, 0.66, 0.32)),
            _p(rect(0.76, 0.08, 0.9, 0.26)),
        ],
        "flat",
    ),
    "house": (
        [
            _p(rect(0.38, -0.72, 0.58, -0.3), 0.8),
            _p(rect(-0.65, -0.08, 0.65, 0.8)),
            _p(poly((-0.88, -0.05), (0, -0.8), (0.88, -0.05)), 0.8),
            _p(rect(-0.42, 0.32, -0.14, 0.8), 0.5),
            _p(rect(0.14, 0.12, 0.44, 0.4), 0.5),
        ],
        "flat",
    ),
    "tree": (
        [
            _p(rect(-0.14, 0.25, 0.14, 0.95), 0.6),
            _p(ellipse(0, -0.45, 0.47)),
            _p(ellipse(-0.42, -0.05, 0.38)),
            _p(ellipse(0.42, -0.05, 0.38)),
            _p(ellipse(0, 0.05, 0.42)),
        ],
        "flat",
    ),
    "fish": (
        [
            _p(poly((0.3, 0), (0.95, -0.45), (0.82, 0), (0.95, 0.45)), 0.85),
            _p(poly((-0.3, -0.32), (0.0, -0.6), (0.18, -0.28)), 0.85),
            _p(ellipse(-0.15, 0, 0.65, 0.4)),
            _p(ellipse(-0.5, -0.08, 0.08), 0.15),
        ],
        "flat",
    ),
    "kite": (
        [
            _p(poly((0, -0.95), (0.6, -0.25), (0, 0.6))),
            _p(poly((0, -0.95), (0, 0.6), (-0.6, -0.25)), 0.82),
            _p(poly((-0.025, 0.6), (0.025, 0.6), (0.14, 1.0), (0.09, 1.0)), 0.7),
            _p(poly((0.07, 0.8), (-0.12, 0.7), (-0.12, 0.9)), 0.9),
            _p(poly((0.07, 0.8), (0.26, 0.7), (0.26, 0.9))),
        ],
        "flat",
    ),
    "bell": (
        [
            _p(ellipse(0, -0.8, 0.13)),
            _p(ellipse(0, -0.6, 0.33, 0.2)),
            _p(_bell_body()),
            _p(ellipse(0, 0.55, 0.82, 0.14), 0.85),
            _p(ellipse(0, 0.74, 0.15), 0.5),
        ],
        "cylinder",
    ),
    "crown": (
        [
            _p(poly((-0.8, 0.55), (-0.8, -0.45), (-0.42, 0.05), (0, -0.62), (0.42, 0.05), (0.8, -0.45), (0.8, 0.55))),
            _p(rect(-0.8, 0.28, 0.8, 0.55), 0.78),
            *[_p(ellipse(x, y, 0.11)) for x, y in ((-0.8, -0.5), (0, -0.7), (0.8, -0.5))],
        ],
        "flat",
    ),
    "apple": (
        [
            _p(ellipse(-0.26, 0.12, 0.56)),
            _p(ellipse(0.26, 0.12, 0.56)),
            _p(ellipse(0, 0.35, 0.58, 0.5)),
            _p(rect(-0.04, -0.78, 0.06, -0.3), 0.45),
            _p(rotate(ellipse(0.3, -0.62, 0.24, 0.1), -30, (0.3, -0.62)), 0.75),
        ],
        "sphere",
    ),
    "mushroom": (
        [
            _p(rect(-0.28, -0.05, 0.28, 0.78), 0.9),
            _p(ellipse(0, 0.78, 0.28, 0.09), 0.9),
            _p(ellipse(0, -0.05, 0.95, 0.75, 180, 360)),
            _p(ellipse(0, -0.05, 0.95, 0.14), 0.7),
        ],
        "flat",
    ),
    "cloud": (
        [
            _p(ellipse(-0.55, 0.15, 0.36)),
            _p(ellipse(-0.12, -0.18, 0.5)),
            _p(ellipse(0.38, -0.02, 0.42)),
            _p(ellipse(0.72, 0.22, 0.29)),
            _p(rect(-0.55, 0.15, 0.72, 0.51)),
        ],
        "flat",
    ),
    "shield": ([_p(_shield(), 0.8), _p(_shield() * 0.72 + [0, -0.04])], "flat"),
    "bottle": (
        [
            _p(rect(-0.38, -0.15, 0.38, 0.85)),
            _p(ellipse(0, -0.15, 0.38, 0.3)),
            _p(rect(-0.13, -0.75, 0.13, -0.3)),
            _p(rect(-0.17, -0.94, 0.17, -0.72), 0.55),
        ],
        "cylinder",
    ),
    "hourglass": (
        [
            _p(poly((-0.5, -0.8), (0.5, -0.8), (0.08, 0), (0.5, 0.8), (-0.5, 0.8), (-0.08, 0))),
            _p(rect(-0.62, -0.96, 0.62, -0.8), 0.55),
            _p(rect(-0.62, 0.8, 0.62, 0.96), 0.55),
        ],
        "cylinder",
    ),
    "sailboat": (
        [
            _p(rect(-0.035, -0.95, 0.035, 0.45), 0.55),
            _p(poly((0.07, -0.9), (0.07, 0.35), (0.78, 0.35))),
            _p(poly((-0.07, -0.72), (-0.07, 0.35), (-0.62, 0.35)), 0.88),
            _p(poly((-0.92, 0.45), (0.92, 0.45), (0.62, 0.82), (-0.62, 0.82)), 0.72),
        ],
        "flat",
    ),
    "rocket": (
        [
            _p(poly((-0.28, 0.12), (-0.62, 0.72), (-0.28, 0.55)), 0.78),
            _p(poly((0.28, 0.12), (0.62, 0.72), (0.28, 0.55)), 0.78),
            _p(rect(-0.28, -0.35, 0.28, 0.58)),
            _p(ellipse(0, -0.35, 0.28, 0.62, 180, 360)),
            _p(poly((-0.18, 0.58), (0.18, 0.58), (0.26, 0.8), (-0.26, 0.8)), 0.55),
            _p(ellipse(0, -0.2, 0.13), 0.3),
        ],
        "cylinder",
    ),
    "flag": (
        [_p(rect(-0.74, -0.96, -0.64, 0.96), 0.55), _p(_flag_cloth()), _p(ellipse(-0.69, -0.96, 0.08), 0.55)],
        "flat",
    ),
}


def _normalise(parts: list[Part]) -> tuple[Part, ...]:
    """Centre the silhouette on its bounding box and scale its farthest point onto the unit circle."""
    pts = np.concatenate([p.points for p in parts if p.add])
    centre = (pts.min(0) + pts.max(0)) / 2
    scale = np.sqrt(((pts - centre) ** 2).sum(1)).max()
    return tuple(Part((p.points - centre) / scale, p.add, p.shade) for p in parts)


SHAPES: dict[str, Shape] = {name: Shape(name, _normalise(parts), shading) for name, (parts, shading) in _RAW.items()}


@cache
def spike_parts(name: str, n_spikes: int = 14, inner: float = 0.8) -> tuple[Part, ...]:
    """The shape shrunk to ``inner`` with spikes on its outline reaching the unit circle (the ``spiky`` look).

    Spike bases sit on the outermost silhouette point along ``n_spikes`` rays from the centre, found on a raster.
    """
    parts = tuple(Part(p.points * inner, p.add, p.shade) for p in SHAPES[name].parts)
    res = 160
    mask = rasterise(parts, np.eye(2), (res / 2, res / 2), res / 2 * 0.98, (res, res), supersample=1) > 0.5
    spikes = []
    for k in range(n_spikes):
        t = 2 * math.pi * k / n_spikes
        d = np.array([math.cos(t), math.sin(t)])
        radii = np.linspace(0.0, 1.0, 120)
        ij = np.clip((res / 2 + np.outer(radii * res / 2 * 0.98, d)).astype(int), 0, res - 1)
        inside = mask[ij[:, 1], ij[:, 0]]
        if not inside.any():
            continue
        rho = radii[np.nonzero(inside)[0].max()]
        half = math.pi / n_spikes * 0.8
        base = [(rho - 0.08) * np.array([math.cos(t + s), math.sin(t + s)]) for s in (-half, half)]
        tip = min(rho + 0.28, 1.0) * d
        spikes.append(Part(np.array([base[0], tip, base[1]]), True, 1.0))
    return parts + tuple(spikes)


def rasterise(
    parts: tuple[Part, ...],
    matrix: np.ndarray,
    centre: tuple[float, float],
    radius: float,
    shape_hw: tuple[int, int],
    supersample: int | None = None,
    shades: bool = False,
):
    """Anti-aliased coverage (and optionally the per-pixel part shade) of a shape drawn into a patch.

    Args:
        parts: the polygons, unit coordinates.
        matrix: (2, 2) pose matrix applied to unit coordinates before scaling by ``radius``.
        centre: (x, y) of the shape centre in patch pixels.
        radius: pixels per unit.
        shape_hw: (h, w) of the patch.
        supersample: sub-pixel factor per axis; None picks 4 for small patches, 2 for large ones.
        shades: also return the shade map.

    Returns:
        coverage (h, w) float in [0, 1]; with ``shades``, also shade (h, w) float (1 where uncovered).
    """
    h, w = shape_hw
    ss = supersample or (4 if max(h, w) <= 128 else 2)
    cov = Image.new("L", (w * ss, h * ss), 0)
    shd = Image.new("L", (w * ss, h * ss), 0)
    dc, ds = ImageDraw.Draw(cov), ImageDraw.Draw(shd)
    for part in parts:
        xy = (part.points @ matrix.T * radius + np.asarray(centre)) * ss
        pts = [tuple(p) for p in xy.tolist()]
        dc.polygon(pts, fill=255 if part.add else 0)
        if part.add:
            ds.polygon(pts, fill=int(round(min(part.shade, 2.5) * 100)))
    c = np.asarray(cov, dtype=np.float32).reshape(h, ss, w, ss).mean(axis=(1, 3)) / 255.0
    if not shades:
        return c
    s_ss = np.asarray(shd, dtype=np.float32) * (np.asarray(cov) > 0)
    s = s_ss.reshape(h, ss, w, ss).mean(axis=(1, 3)) / 100.0
    return c, np.where(c > 1e-3, s / np.maximum(c, 1e-3), 1.0)
