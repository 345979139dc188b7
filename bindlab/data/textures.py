"""Attribute appearances for the procedural scene renderer (:mod:`bindlab.data.render`).

An attribute's look is a pure numpy function of object-local coordinates ``(u, v)`` (the unit disc of the object,
following its pose, so stripes turn with the object). It returns a :class:`Paint`: the body colour, its opacity
(crystal, glass and ice let the background through), how much 3D shading and edge darkening apply, and an optional
glow colour for a halo that the renderer keeps inside the object's own disc. Colours and variants come from the
attribute's instantiated generation form (``"white and orange striped"``, ``"dark-brown wooden"``), see
:func:`parse_form`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bindlab.data.vocab import PALETTE, Attribute

RGB = tuple[float, float, float]

COLOURS: dict[str, RGB] = {
    "red": (215, 35, 35),
    "orange": (250, 135, 15),
    "yellow": (250, 220, 30),
    "green": (35, 160, 55),
    "blue": (35, 85, 225),
    "purple": (135, 45, 185),
    "pink": (250, 125, 185),
    "white": (245, 245, 245),
    "black": (22, 22, 22),
    # Five more hues complete the 12-hue wheel of factor grids (FactorAtlas); SABER still samples from PALETTE.
    "lime": (150, 215, 30),
    "teal": (20, 140, 130),
    "cyan": (30, 200, 230),
    "indigo": (70, 40, 150),
    "magenta": (220, 30, 170),
}
HEX_COLOUR = re.compile(r"#[0-9a-fA-F]{6}")  # a colour slot also takes "#rrggbb" (e.g. a darker shade of a hue)
WHITE: RGB = (255.0, 255.0, 255.0)


@dataclass(frozen=True)
class Look:
    """A parsed appearance: the attribute name, its colours (palette words) and its variant."""

    attribute: str
    colours: tuple[str, ...] = ()
    variant: str = ""


@dataclass
class Field:
    """Where a look is painted: object-local coordinates and the object's coverage, all (h, w)."""

    u: np.ndarray
    v: np.ndarray
    cov: np.ndarray
    px: float  # pixels per unit of (u, v)
    rng: np.random.Generator

    def band(self, width: float) -> np.ndarray:
        """Coverage of the rim of the silhouette, ``width`` units wide (at least one pixel), (h, w) in [0, 1]."""
        return np.clip(self.cov - erode(self.cov, max(1, int(round(width * self.px)))), 0, 1)


def erode(a: np.ndarray, k: int) -> np.ndarray:
    """Grey-level erosion of (h, w) ``a`` by an octagon of radius ``k`` pixels (alternating 3x3 cross and square)."""
    for i in range(k):
        p = np.pad(a, 1)
        m = np.minimum(np.minimum(p[:-2, 1:-1], p[2:, 1:-1]), np.minimum(p[1:-1, :-2], p[1:-1, 2:]))
        np.minimum(m, a, out=m)
        if i % 2:
            np.minimum(m, np.minimum(np.minimum(p[:-2, :-2], p[:-2, 2:]), np.minimum(p[2:, :-2], p[2:, 2:])), out=m)
        a = m
    return a


def hsv_to_rgb(h: np.ndarray, s: float, v: float) -> np.ndarray:
    """Vectorised HSV -> RGB for hue array ``h`` in [0, 1) (h, w); returns (h, w, 3) in 0..255."""
    k = (np.array([5.0, 3.0, 1.0]) + h[..., None] * 6) % 6
    return (v - v * s * np.clip(np.minimum(k, 4 - k), 0, 1)) * 255


@dataclass
class Paint:
    """A look's result: ``rgb`` (h, w, 3) in 0..255 and how the renderer composes it."""

    rgb: np.ndarray
    alpha: float | np.ndarray = 1.0  # body opacity, scalar or (h, w)
    shading: float = 1.0  # strength of 3D shading (0 = none)
    edge: float | None = 0.6  # rim darkening factor, None for no rim
    glow: RGB | None = None  # halo colour, drawn around the object inside its own disc
    gloss: float = 0.0  # specular highlight strength


# ---------------------------------------------------------------------------------------------- helpers
def _fill(f: Field, c: RGB) -> np.ndarray:
    return np.broadcast_to(np.asarray(c, dtype=np.float32), f.u.shape + (3,)).copy()


def _mix(a: RGB | np.ndarray, b: RGB | np.ndarray, t: np.ndarray | float) -> np.ndarray:
    t = np.asarray(t, dtype=np.float32)
    t = t[..., None] if t.ndim else t
    return np.asarray(a, dtype=np.float32) * (1 - t) + np.asarray(b, dtype=np.float32) * t


def _square(t: np.ndarray, period_px: float | np.ndarray) -> np.ndarray:
    """Anti-aliased square wave of period 1 in ``t``: 1 on the first half, 0 on the second, ~1 px transitions."""
    return np.clip(0.5 + np.sin(2 * np.pi * t) * np.maximum(period_px, 1.0) / np.pi, 0, 1)


def _waves(f: Field, n: int = 5, lo: float = 1.5, hi: float = 4.0) -> np.ndarray:
    """Smooth random field in about [-1, 1]: a sum of ``n`` random plane waves, frequencies in [lo, hi]."""
    out = np.zeros_like(f.u)
    total = 0.0
    for _ in range(n):
        fr = f.rng.uniform(lo, hi)
        a = f.rng.uniform(0, np.pi)
        ph = f.rng.uniform(0, 2 * np.pi)
        out += np.sin(fr * (f.u * np.cos(a) + f.v * np.sin(a)) * np.pi + ph) / fr
        total += 1 / fr
    return out / total * 1.6


def _hash(i: np.ndarray, j: np.ndarray, salt: float) -> np.ndarray:
    """Deterministic pseudo-random value in [0, 1) per integer cell (i, j)."""
    x = np.sin(i * 12.9898 + j * 78.233 + salt * 37.719) * 43758.5453
    return x - np.floor(x)


def _grain(f: Field, size: float, salt: float) -> np.ndarray:
    """Per-grain random values in [0, 1), grains ``size`` units wide but never smaller than a pixel."""
    g = max(size, 1.0 / f.px)
    return _hash(np.floor(f.u / g), np.floor(f.v / g), salt)


def _voronoi(f: Field, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """Jittered-grid Voronoi cells: (cell id, distance to the cell border in units), both (h, w)."""
    g = np.arange(-1.3, 1.31, spacing)
    if g.size < 2:  # an object so small that one cell would cover it (spacing > 2.6 units): two cells a side, so
        g = np.array([-1.3, 1.3])  # there is a border to draw and a second-nearest point to measure it by
    gx, gy = np.meshgrid(g, g)
    pts = np.stack([gx.ravel(), gy.ravel()], 1) + f.rng.uniform(-0.4, 0.4, (gx.size, 2)) * spacing
    d = (f.u[..., None] - pts[:, 0]) ** 2 + (f.v[..., None] - pts[:, 1]) ** 2  # (h, w, k)
    two = np.partition(d, 1, axis=-1)[..., :2]
    cell = np.argmin(d, axis=-1)
    return cell, (np.sqrt(two[..., 1]) - np.sqrt(two[..., 0])) / 2


def _highlight(f: Field, x: float = -0.35, y: float = -0.42, sx: float = 0.2, sy: float = 0.12) -> np.ndarray:
    return np.exp(-(((f.u - x) / sx) ** 2 + ((f.v - y) / sy) ** 2))


def _period(f: Field, base: float, min_px: float = 7.0) -> float:
    """A pattern period in units: ``base``, widened on small objects so that it spans at least ``min_px``."""
    return max(base, min_px / f.px)


def colour_rgb(name: str) -> RGB:
    """RGB of a colour word from :data:`COLOURS` or of a ``"#rrggbb"`` string."""
    if HEX_COLOUR.fullmatch(name):
        return tuple(float(int(name[i : i + 2], 16)) for i in (1, 3, 5))  # type: ignore[return-value]
    return COLOURS[name]


def _c(look: Look, i: int) -> RGB:
    return colour_rgb(look.colours[i])


# ---------------------------------------------------------------------------------------------- colours
def _flat(look: Look, f: Field) -> Paint:
    return Paint(_fill(f, COLOURS[look.attribute]))


def _rainbow(look: Look, f: Field) -> Paint:
    bands = [COLOURS[c] for c in ("red", "orange", "yellow", "green", "blue", "purple")]
    t = np.clip((f.v + 0.15 * f.u + 0.95) / 1.9 * 6, 0, 5.999)
    rgb = np.asarray(bands, dtype=np.float32)[t.astype(int)]
    return Paint(rgb, shading=0.5)


def _metal(dark: RGB, light: RGB, brushed: bool, f: Field) -> np.ndarray:
    if brushed:  # soft gradient with fine streaks along u
        t = 0.55 + 0.25 * np.sin(1.6 * f.v + 0.8 * f.u) + 0.18 * (_hash(np.floor(f.v * f.px / 1.5), 0, 3.0) - 0.5)
    else:  # polished: sharp reflected bands and a bright highlight
        t = (0.5 + 0.5 * np.sin(3.2 * f.v + 1.4 * f.u + 0.6)) ** 1.6 + 0.8 * _highlight(f, sx=0.3, sy=0.1)
    return _mix(dark, light, np.clip(t, 0, 1))


def _golden(look: Look, f: Field) -> Paint:
    return Paint(_metal((135, 88, 8), (255, 228, 110), look.variant == "brushed", f), shading=0.4)


# ---------------------------------------------------------------------------------------------- materials
def _metallic(look: Look, f: Field) -> Paint:
    return Paint(_metal((55, 62, 75), (236, 240, 248), look.variant == "brushed", f), shading=0.4)


def _copper(look: Look, f: Field) -> Paint:
    rgb = _metal((110, 45, 20), (245, 160, 110), False, f)
    if look.variant == "tarnished":  # verdigris blotches
        patina = np.clip((_waves(f, 5, 2.5, 6.0) - 0.1) * 4, 0, 1)
        rgb = _mix(rgb, (70, 165, 135), patina * 0.9)
    return Paint(rgb, shading=0.4)


def _wooden(look: Look, f: Field) -> Paint:
    light, dark = ((205, 150, 85), (140, 88, 40)) if look.variant == "light-brown" else ((120, 70, 32), (62, 32, 12))
    t = (f.v + 0.12 * f.u**2 + 0.22 * _waves(f, 3, 0.8, 2.0)) * 6.5
    ring = (0.5 + 0.5 * np.cos(2 * np.pi * t)) ** 6
    fibre = 0.12 * (_hash(np.floor(f.v * f.px / 1.2), 0, 5.0) - 0.5)
    return Paint(_mix(light, dark, np.clip(0.15 + 0.8 * ring + fibre, 0, 1)), shading=0.6)


_MARBLE = {
    "white": ((238, 236, 230), (105, 105, 112)),
    "black": ((30, 30, 34), (225, 225, 225)),
    "green": ((30, 105, 70), (200, 235, 215)),
}


def _marble(look: Look, f: Field) -> Paint:
    base, vein = _MARBLE[look.variant]
    turb = _waves(f, 6, 1.5, 5.0)
    s1 = np.sin((f.u * 1.1 + f.v * 0.7) * 3.0 + 3.2 * turb)
    s2 = np.sin((f.u * -0.6 + f.v * 1.2) * 4.0 + 2.5 * turb + 1.0)
    veins = np.exp(-((s1 / 0.13) ** 2)) + 0.6 * np.exp(-((s2 / 0.09) ** 2))
    return Paint(_mix(base, vein, np.clip(veins, 0, 1)), shading=0.5, gloss=0.35)


def _ceramic(look: Look, f: Field) -> Paint:
    # pottery with a two-tone glaze: a dark teal glaze dripping over a cream body
    drip_line = -0.15 + 0.12 * np.sin(f.u * 9.0) + 0.2 * np.maximum(np.sin(f.u * 4.5 + 1.0), 0) ** 4
    glaze = np.clip((drip_line - f.v) * f.px * 0.5 + 0.5, 0, 1)
    rgb = _mix((236, 224, 198), (28, 92, 100), glaze)
    if look.variant == "matte":
        rgb *= (0.94 + 0.08 * _grain(f, 0.02, 7.0))[..., None]
        return Paint(rgb, shading=0.8)
    return Paint(rgb, shading=0.8, gloss=0.9)


def _stone(look: Look, f: Field) -> Paint:
    base = (112, 110, 106) if look.variant == "grey" else (205, 168, 118)
    rgb = _fill(f, base) * (1 + 0.12 * _waves(f, 4, 2.0, 5.0))[..., None]
    g = _grain(f, 0.03, 11.0)
    rgb = rgb * np.where(g < 0.12, 0.55, np.where(g > 0.9, 1.35, 0.9 + 0.2 * _grain(f, 0.015, 13.0)))[..., None]
    return Paint(rgb, shading=0.8)


def _crystal(look: Look, f: Field) -> Paint:
    tint, alpha = ((210, 232, 255), 0.55) if look.variant == "clear" else ((150, 70, 205), 0.75)
    cell, border = _voronoi(f, _period(f, 0.45, 10.0))
    facet = 0.55 + 0.8 * _hash(cell.astype(np.float32), 1.0, 17.0)
    rgb = np.clip(_fill(f, tint) * facet[..., None], 0, 255)
    lines = np.clip(1.5 - border * f.px, 0, 1)  # bright facet edges, about a pixel wide
    rgb = _mix(rgb, WHITE, lines * 0.85)
    return Paint(rgb, alpha=np.clip(alpha + 0.35 * lines + 0.2 * (facet - 1), 0, 1), shading=0.2, edge=0.7, gloss=0.8)


def _woven(look: Look, f: Field) -> Paint:
    base = (190, 140, 75) if look.variant == "wicker" else (232, 205, 125)
    cell = 0.3
    i, j = np.floor(f.u / cell), np.floor(f.v / cell)
    across = np.where((i + j) % 2 == 0, f.v, f.u) / cell * 2  # two strands per cell, alternating direction
    profile = np.sin(np.pi * (across - np.floor(across)))
    along = np.where((i + j) % 2 == 0, f.u, f.v) / cell
    ends = np.sin(np.pi * (along - np.floor(along))) ** 0.3
    return Paint(_fill(f, base) * (0.35 + 0.7 * profile * ends)[..., None], shading=0.6)


# ---------------------------------------------------------------------------------------------- patterns
def _two(look: Look, f: Field, t: np.ndarray) -> np.ndarray:
    return _mix(_c(look, 1), _c(look, 0), t)


def _striped(look: Look, f: Field) -> Paint:
    period = _period(f, 0.34)
    t = (f.u * 0.6 + f.v * 0.8) / period
    return Paint(_two(look, f, _square(t, period * f.px)), shading=0.6)


def _polka(look: Look, f: Field) -> Paint:
    s = _period(f, 0.42, 9.0)
    row = np.round(f.v / (s * 0.866))
    off = (row % 2) * s / 2
    col = np.round((f.u - off) / s)
    d = np.hypot(f.u - (col * s + off), f.v - row * s * 0.866)
    dot = np.clip((0.31 * s - d) * f.px + 0.5, 0, 1)
    return Paint(_mix(_c(look, 0), _c(look, 1), dot), shading=0.6)


def _checkered(look: Look, f: Field) -> Paint:
    cell = _period(f, 0.32, 4.5)
    a, b = _square(f.u / (2 * cell), 2 * cell * f.px), _square(f.v / (2 * cell), 2 * cell * f.px)
    return Paint(_two(look, f, a * b + (1 - a) * (1 - b)), shading=0.6)


def _zigzag(look: Look, f: Field) -> Paint:
    p = _period(f, 0.44, 9.0)
    tri = np.abs((f.u / (0.82 * p)) % 1.0 - 0.5) * 2  # triangle wave in [0, 1]
    t = (f.v + 0.39 * p * tri) / p
    return Paint(_two(look, f, _square(t, p * f.px)), shading=0.6)


def _plaid(look: Look, f: Field) -> Paint:
    p = _period(f, 0.55, 12.0)
    hb = _square(f.v / p, p * f.px * 0.5) * _square(f.v / p + 0.25, p * f.px * 0.5)
    vb = _square(f.u / p, p * f.px * 0.5) * _square(f.u / p + 0.25, p * f.px * 0.5)
    rgb = _mix(_c(look, 0), _c(look, 1), 0.55 * (hb + vb) - 0.1 * hb * vb)
    thin = np.maximum(
        np.clip(1.2 - np.abs((f.v / p + 0.6) % 1.0 - 0.5) * p * f.px, 0, 1),
        np.clip(1.2 - np.abs((f.u / p + 0.6) % 1.0 - 0.5) * p * f.px, 0, 1),
    )
    return Paint(_mix(rgb, np.asarray(_c(look, 1)) * 0.45, thin * 0.8), shading=0.6)


def _swirled(look: Look, f: Field) -> Paint:
    r = np.hypot(f.u, f.v)
    theta = np.arctan2(f.v, f.u)
    t = theta / (2 * np.pi) * 2 + r * 1.8
    return Paint(_two(look, f, _square(t, np.maximum(r, 0.15) * f.px * 1.2)), shading=0.6)


def _camouflage(look: Look, f: Field) -> Paint:
    n1, n2 = _waves(f, 5, 2.0, 4.5), _waves(f, 5, 2.0, 4.5)
    rgb = _fill(f, (160, 150, 100))
    rgb = np.where((n1 > 0.12)[..., None], np.float32((58, 88, 40)), rgb)
    rgb = np.where((n2 > 0.25)[..., None], np.float32((105, 72, 40)), rgb)
    rgb = np.where(((n1 < -0.4) & (n2 < 0.0))[..., None], np.float32((35, 38, 28)), rgb)
    return Paint(rgb, shading=0.6)


def _leopard(look: Look, f: Field) -> Paint:
    s = 0.4
    i, j = np.round(f.u / s), np.round(f.v / s)
    cx = (i + (_hash(i, j, 1.0) - 0.5) * 0.3) * s
    cy = (j + (_hash(i, j, 2.0) - 0.5) * 0.3) * s
    ang = np.arctan2(f.v - cy, f.u - cx)
    wobble = 1 + 0.25 * np.sin(3 * ang + 6.28 * _hash(i, j, 3.0))
    d = np.hypot(f.u - cx, f.v - cy) / wobble
    ring = np.clip((0.14 - d) * f.px + 0.5, 0, 1) * np.clip(1 - np.abs(np.sin(ang * 2.5 + j)) * 0.9, 0, 1) ** 0.3
    centre = np.clip((0.075 - d) * f.px + 0.5, 0, 1)
    rgb = _mix((222, 172, 88), (28, 20, 12), ring)
    return Paint(_mix(rgb, (185, 115, 45), centre), shading=0.6)


# ---------------------------------------------------------------------------------------------- textures
def _icy(look: Look, f: Field) -> Paint:
    frost = np.clip(_waves(f, 6, 3.0, 9.0) * 1.5, -1, 1)
    rgb = _mix((188, 225, 248), WHITE, 0.35 + 0.35 * frost)
    rgb = _mix(rgb, WHITE, (_grain(f, 0.025, 19.0) > 0.8) * 0.8)
    rgb = _mix(rgb, (95, 165, 220), f.band(0.1) * 0.9)
    return Paint(rgb, alpha=0.9, shading=0.3, edge=None, gloss=0.6)


def _cracked(look: Look, f: Field) -> Paint:
    warp = Field(f.u + 0.05 * _waves(f, 4, 4.0, 9.0), f.v + 0.05 * _waves(f, 4, 4.0, 9.0), f.cov, f.px, f.rng)
    cell, border = _voronoi(warp, _period(f, 0.42, 14.0))
    tone = 0.9 + 0.18 * _hash(cell.astype(np.float32), 0.0, 23.0)
    rgb = _fill(f, (208, 186, 146)) * tone[..., None]
    crack = np.clip(1.3 - border * f.px / max(1.0, 0.02 * f.px), 0, 1)  # dark lines, ~1 px on small objects
    return Paint(_mix(rgb, (45, 32, 20), crack), shading=0.7)


def _spiky(look: Look, f: Field) -> Paint:  # the spikes themselves are added to the silhouette by the renderer
    return Paint(_fill(f, (72, 98, 104)), shading=1.0, edge=0.45)


# ---------------------------------------------------------------------------------------------- effects & style
def _glowing(look: Look, f: Field) -> Paint:
    c = _c(look, 0)
    core = np.clip(1 - np.hypot(f.u, f.v), 0, 1)
    if look.colours[0] == "black":  # a dark body in a dark aura ("black light"), never a grey object
        return Paint(_mix(c, (70, 70, 80), core), shading=0.0, edge=None, glow=(0.0, 0.0, 0.0))
    return Paint(_mix(c, WHITE, 0.15 + 0.5 * core), shading=0.0, edge=None, glow=c)


def _neon(look: Look, f: Field) -> Paint:
    c = _c(look, 0)
    body = (205, 205, 205) if look.colours[0] == "black" else (32, 32, 40)
    tube, core = f.band(0.11), f.band(0.075) - f.band(0.035)
    rgb = _mix(body, c, np.clip(tube, 0, 1))
    return Paint(_mix(rgb, WHITE, np.clip(core, 0, 1) * 0.45), shading=0.0, edge=None, glow=c)


def _glittery(look: Look, f: Field) -> Paint:
    c = np.asarray(_c(look, 0), dtype=np.float32)
    base = {"black": c * 0.8 + 25, "white": np.float32((200, 204, 218))}.get(look.colours[0], c)
    g = _grain(f, 0.045, 29.0)
    rgb = _mix(base * np.where(g > 0.8, 0.62, 1.0)[..., None], WHITE, np.where(g < 0.22, 0.8, 0.0))
    w = 1.1 / f.px  # star arms about a pixel thick
    sparkle = np.zeros_like(f.u)  # a few four-pointed stars, the sign of glitter even on small objects
    for x, y in f.rng.uniform(-0.55, 0.55, (4, 2)):
        du, dv = np.abs(f.u - x), np.abs(f.v - y)
        arm = np.maximum(
            np.exp(-((dv / w) ** 2)) * np.clip(1 - du / 0.32, 0, 1) ** 1.5,
            np.exp(-((du / w) ** 2)) * np.clip(1 - dv / 0.32, 0, 1) ** 1.5,
        )
        sparkle = np.maximum(sparkle, np.maximum(arm, np.exp(-(du**2 + dv**2) / (2.2 * w) ** 2)))
    return Paint(_mix(rgb, WHITE, np.clip(sparkle * 1.2, 0, 1)), shading=0.4)


def _transparent(look: Look, f: Field) -> Paint:
    # glass: the background shows through; a dark outer rim, a bright inner rim and two reflection streaks
    outer = f.band(0.035)
    inner = np.clip(f.band(0.09) - outer, 0, 1)
    d = f.u * 0.7 + f.v * 0.7
    streaks = np.clip(1.5 - np.abs(d + 0.3) * f.px / 1.5, 0, 1) + np.clip(1.5 - np.abs(d + 0.05) * f.px, 0, 1)
    light = np.clip(inner * 0.8 + streaks * (f.u < 0.2), 0, 1)
    rgb = _mix(_mix(_fill(f, (225, 238, 250)), WHITE, light), (60, 75, 95), outer)
    return Paint(rgb, alpha=np.clip(0.12 + 0.85 * outer + 0.75 * light, 0, 1), shading=0.0, edge=None)


def _holographic(look: Look, f: Field) -> Paint:
    hue = (0.35 * f.u + 0.55 * f.v + 0.12 * np.sin(6 * f.u + 3 * f.v) + 0.5) % 1.0
    rgb = hsv_to_rgb(hue, 0.42, 0.98)
    sheen = np.exp(-(((f.u * 0.7 - f.v * 0.7 - 0.2) / 0.12) ** 2))
    return Paint(_mix(rgb, WHITE, sheen * 0.6), shading=0.3, gloss=0.5)


def _outlined(look: Look, f: Field) -> Paint:
    name = look.colours[0]
    fill = (70, 70, 76) if name in ("white", "yellow") else (238, 235, 226)
    line = np.clip(f.band(0.13) * 1.2, 0, 1)
    return Paint(_mix(fill, _c(look, 0), line), shading=0.0, edge=None)


LOOKS: dict[str, Callable[[Look, Field], Paint]] = {
    **{c: _flat for c in PALETTE},
    "rainbow": _rainbow,
    "golden": _golden,
    "wooden": _wooden,
    "marble": _marble,
    "metallic": _metallic,
    "ceramic": _ceramic,
    "stone": _stone,
    "crystal": _crystal,
    "copper": _copper,
    "woven": _woven,
    "striped": _striped,
    "polka-dot": _polka,
    "checkered": _checkered,
    "zigzag": _zigzag,
    "plaid": _plaid,
    "swirled": _swirled,
    "camouflage": _camouflage,
    "leopard-print": _leopard,
    "icy": _icy,
    "cracked": _cracked,
    "spiky": _spiky,
    "glowing": _glowing,
    "neon": _neon,
    "glittery": _glittery,
    "transparent": _transparent,
    "holographic": _holographic,
    "outlined": _outlined,
}


# ---------------------------------------------------------------------------------------------- factor-grid looks
def _plain(look: Look, f: Field) -> Paint:
    """One flat colour with the two-tone patterns' shading and rim: a patterned look with the pattern taken away."""
    return Paint(_fill(f, _c(look, 0)), shading=0.6)


# Looks that factor grids use but SABER's vocabulary does not (they are not attributes): name -> painter.
FACTOR_LOOKS: dict[str, Callable[[Look, Field], Paint]] = {"plain": _plain}


def painter(name: str) -> Callable[[Look, Field], Paint]:
    """The painter of an attribute look (:data:`LOOKS`) or a factor-grid look (:data:`FACTOR_LOOKS`)."""
    return LOOKS[name] if name in LOOKS else FACTOR_LOOKS[name]


def parse_factor_look(name: str, form: str = "") -> Look:
    """Read a factor-grid look's one colour from its form (``"teal"`` or ``"#rrggbb"``; ``""`` -> red).

    Raises:
        ValueError: if the form does not name exactly one colour.
    """
    words = form.replace(",", " ").split()
    colours = tuple(w for w in words if w in COLOURS or HEX_COLOUR.fullmatch(w)) if words else ("red",)
    if len(colours) != 1 or len(words) != 1:
        raise ValueError(f"form {form!r} of {name!r} needs exactly one colour from {list(COLOURS)} or '#rrggbb'")
    return Look(name, colours)


# Default colours/variants when an ObjectSpec carries no instantiated form.
_DEFAULT_COLOURS: dict[str, tuple[str, ...]] = {
    "striped": ("white", "red"),
    "polka-dot": ("white", "blue"),
    "checkered": ("black", "white"),
    "zigzag": ("yellow", "purple"),
    "plaid": ("white", "green"),
    "swirled": ("pink", "blue"),
    "glowing": ("yellow",),
    "neon": ("pink",),
    "glittery": ("purple",),
    "outlined": ("blue",),
}


def _wanted_colours(attr: Attribute) -> int:
    return {"single_color": 1, "two_color": 2}.get(attr.realisation, 0)


def parse_form(attr: Attribute, form: str = "") -> Look:
    """Read colours and variant from an instantiated generation form.

    ``"white and orange striped"`` -> ``Look("striped", ("white", "orange"))``; ``"dark-brown wooden"`` ->
    ``Look("wooden", (), "dark-brown")``; ``""`` -> the attribute's default look.

    Raises:
        ValueError: if the form has the wrong number of palette colours or an unknown variant.
    """
    words = form.replace(",", " ").split()
    n = _wanted_colours(attr)
    if attr.realisation == "fixed_variant":
        found = [w for w in words if w in attr.variants]
        if not words:
            return Look(attr.name, (), attr.variants[0])
        if not found:
            raise ValueError(f"form {form!r} of {attr.name!r} names no variant; choose from {list(attr.variants)}")
        return Look(attr.name, (), found[0])
    if n == 0:
        return Look(attr.name)
    colours = tuple(w for w in words if w in COLOURS or HEX_COLOUR.fullmatch(w))
    if not words:
        colours = _DEFAULT_COLOURS.get(attr.name, ("red", "blue")[:n])
    if len(colours) != n or len(set(colours)) != n:
        raise ValueError(
            f"form {form!r} of {attr.name!r} needs {n} distinct colour(s) from {list(COLOURS)} or '#rrggbb'"
        )
    return Look(attr.name, colours)
