"""Procedural CLEVR-like scenes for SABER image questions and FactorAtlas-style factor grids.

We cannot run an image generator offline, so bindlab draws scenes itself (SABER appendix A.4): one to ten objects
on a neutral grey background, scattered (never in a row) and clearly apart, each drawn exactly once with its
attribute. Binding locality is structural: every object owns a disc, the discs are disjoint, and everything an
object draws (body, rim, shadow, glow halo) stays inside its disc. Changing one object therefore changes no pixel
outside that object's disc.

Silhouettes live in :mod:`bindlab.data.shapes`, attribute looks in :mod:`bindlab.data.textures`; this module holds
the public API: :class:`ObjectSpec`, :class:`SceneContext`, :func:`render_scene`, :func:`render_single`,
:func:`render_batch` and the renderable vocabulary :data:`RENDER_VOCAB`.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter

from bindlab.data.saber import Vocabulary
from bindlab.data.shapes import SHAPES, rasterise, spike_parts
from bindlab.data.textures import FACTOR_LOOKS, LOOKS, Field, Look, Paint, painter, parse_factor_look, parse_form
from bindlab.data.vocab import ATTRIBUTE_BY_NAME, Attribute

RENDER_SHAPES: tuple[str, ...] = tuple(SHAPES)
RENDER_ATTRIBUTES: tuple[Attribute, ...] = tuple(ATTRIBUTE_BY_NAME[name] for name in LOOKS)
RENDER_VOCAB = Vocabulary(RENDER_SHAPES, RENDER_ATTRIBUTES)
MAX_OBJECTS = 16

RGB = tuple[int, int, int]


def _choices(kind: str, value: str, valid: tuple[str, ...]) -> ValueError:
    return ValueError(f"unknown {kind} {value!r}; valid {kind}s: {', '.join(valid)}")


@dataclass(frozen=True)
class ObjectSpec:
    """One object of a scene.

    Attributes:
        shape: a name from :data:`RENDER_SHAPES`, e.g. ``"cube"``.
        attribute: an attribute name from :data:`RENDER_ATTRIBUTES`, e.g. ``"striped"``, or a factor-grid look
            from :data:`~bindlab.data.textures.FACTOR_LOOKS` (``"plain"``: one flat colour, any hue).
        form: the instantiated generation form from ``Attribute.instantiate`` (``"white and orange striped"``);
            for ``"plain"`` its colour (``"teal"`` or ``"#rrggbb"``); empty for the default appearance.
    """

    shape: str
    attribute: str
    form: str = ""

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise _choices("shape", self.shape, RENDER_SHAPES)
        if self.attribute not in LOOKS and self.attribute not in FACTOR_LOOKS:
            raise _choices("attribute", self.attribute, tuple(LOOKS) + tuple(FACTOR_LOOKS))
        self.look()  # validates the form

    def look(self) -> Look:
        """The parsed appearance (colours, variant) of this object's attribute."""
        if self.attribute in FACTOR_LOOKS:
            return parse_factor_look(self.attribute, self.form)
        return parse_form(ATTRIBUTE_BY_NAME[self.attribute], self.form)


@dataclass(frozen=True)
class SceneContext:
    """Nuisance factors of a scene (the "context" axis of a factor grid). The default is the neutral scene."""

    name: str = "neutral"
    background: RGB = (150, 150, 150)  # top colour of the background
    background_bottom: RGB | None = None  # bottom colour of a vertical gradient; None = uniform
    brightness: float = 1.0  # global gain, 0.5..1.5
    contrast: float = 1.0  # global contrast around mid-grey, 0.5..1.5
    light_angle: float = 135.0  # direction the light comes from, degrees (0 = right, 90 = top)
    noise: float = 0.0  # std of Gaussian pixel noise, in 0..255 units
    rotation: float = 0.0  # object pose, degrees
    scale: float = 1.0  # object size within its disc, 0.5..1
    shear: float = 0.0  # horizontal shear (viewpoint), -0.5..0.5
    tilt: float = 1.0  # vertical foreshortening (viewpoint elevation), 0.5..1

    def __post_init__(self) -> None:
        ranges = {
            "brightness": (0.5, 1.5),
            "contrast": (0.5, 1.5),
            "noise": (0.0, 40.0),
            "scale": (0.5, 1.0),
            "shear": (-0.5, 0.5),
            "tilt": (0.5, 1.0),
        }
        for key, (lo, hi) in ranges.items():
            if not lo <= getattr(self, key) <= hi:
                raise ValueError(f"SceneContext.{key}={getattr(self, key)!r} outside [{lo}, {hi}]")
        for key in ("background", "background_bottom"):
            c = getattr(self, key)
            if c is not None and (len(c) != 3 or not all(0 <= x <= 255 for x in c)):
                raise ValueError(f"SceneContext.{key}={c!r} must be three values in 0..255")


_BACKGROUNDS: tuple[tuple[RGB, RGB | None], ...] = (
    ((150, 150, 150), None),
    ((172, 165, 150), (140, 134, 122)),
    ((135, 142, 155), None),
    ((110, 110, 112), (140, 140, 142)),
    ((185, 185, 182), None),
    ((150, 155, 145), (120, 125, 118)),
)


def context_from_index(i: int, n: int = 12) -> SceneContext:
    """The ``i``-th of ``n`` deterministic nuisance contexts; index 0 is the neutral scene.

    Contexts differ in background, light direction (evenly spaced over ``n``, so all ``n`` are distinct),
    brightness/contrast, noise, pose, scale and viewpoint shear/tilt.
    """
    if n < 1 or not 0 <= i < n:
        raise ValueError(f"context index {i} must be in 0..{n - 1}")
    if i == 0:
        return SceneContext()
    bg, bg2 = _BACKGROUNDS[i % len(_BACKGROUNDS)]
    return SceneContext(
        name=f"context-{i:02d}",
        background=bg,
        background_bottom=bg2,
        brightness=(1.0, 0.85, 1.12, 0.95)[i % 4],
        contrast=(1.0, 1.15, 0.85)[i % 3],
        light_angle=(135.0 + 360.0 * i / n) % 360.0,
        noise=(0.0, 4.0, 8.0)[i % 3],
        rotation=((i * 7) % n) / max(n - 1, 1) * 60.0 - 30.0,
        scale=(1.0, 0.85, 0.72)[i % 3],
        shear=(0.0, 0.2, -0.2, 0.1)[i % 4],
        tilt=(1.0, 0.85, 0.7)[(i // 3) % 3],
    )


@dataclass(frozen=True)
class Slot:
    """Where an object goes: disc centre and radius in pixels, pose jitter (degrees) and size jitter."""

    cx: float
    cy: float
    radius: float
    angle: float = 0.0
    scale: float = 1.0


def scene_layout(n: int, size: int = 256, seed: int = 0) -> list[Slot]:
    """Scatter ``n`` disjoint discs over a ``size`` x ``size`` canvas by rejection sampling.

    The layout depends only on (n, size, seed), so two images of one question share it when they share a seed.
    Discs shrink as ``n`` grows (ten fit in 256 px); for n >= 3 near-collinear layouts are rejected.
    """
    if not 1 <= n <= MAX_OBJECTS:
        raise ValueError(f"a scene has 1..{MAX_OBJECTS} objects, got {n}")
    rng = np.random.default_rng([seed, n, size, 3])
    radius = size * min(0.3, 0.33 / math.sqrt(n))
    gap, margin = max(2.0, 0.02 * size), 0.01 * size
    for attempt in range(200):
        r = radius * 0.97 ** (attempt // 10)
        centres: list[np.ndarray] = []
        for _ in range(n):
            for _ in range(300):
                c = rng.uniform(r + margin, size - r - margin, 2)
                if all(np.hypot(*(c - o)) >= 2 * r + gap for o in centres):
                    centres.append(c)
                    break
            else:
                break
        if len(centres) == n and (n < 3 or not _collinear(np.array(centres))):
            return [
                Slot(float(x), float(y), float(r), float(rng.uniform(-10, 10)), float(rng.uniform(0.9, 1.0)))
                for x, y in centres
            ]
    raise RuntimeError(f"could not place {n} objects in {size} px")  # pragma: no cover


def _collinear(points: np.ndarray, tol: float = 0.2) -> bool:
    """True when the points lie close to one line (smallest / largest principal spread below ``tol``)."""
    s = np.linalg.svd(points - points.mean(0), compute_uv=False)
    return bool(s[1] < tol * s[0])


# ---------------------------------------------------------------------------------------------- drawing
def _pose(ctx: SceneContext, angle: float, scale: float) -> np.ndarray:
    a = math.radians(ctx.rotation + angle)
    rot = np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])
    return rot @ np.array([[1.0, ctx.shear], [0.0, 1.0]]) @ np.diag([1.0, ctx.tilt]) * (ctx.scale * scale)


def _light(ctx: SceneContext) -> tuple[float, float]:
    a = math.radians(ctx.light_angle)
    return math.cos(a), -math.sin(a)  # image coordinates, y down


def _shading(kind: str, x: np.ndarray, y: np.ndarray, light: tuple[float, float]) -> np.ndarray:
    """Diffuse light factor (h, w) for image-space unit coordinates around the object centre."""
    lx, ly = light
    lz = 0.75
    norm = math.sqrt(0.66 * (lx * lx + ly * ly) + lz * lz)
    lx, ly, lz = 0.81 * lx / norm, 0.81 * ly / norm, lz / norm
    if kind == "sphere":
        nz = np.sqrt(np.clip(1 - x * x - y * y, 0, 1))
        return 0.6 + 0.55 * np.clip(x * lx + y * ly + nz * lz, 0, 1)
    if kind == "cylinder":
        xc = np.clip(x, -1, 1)
        return 0.62 + 0.5 * np.clip(xc * lx + np.sqrt(1 - xc * xc) * lz, 0, 1)
    return 1.0 + 0.1 * (x * lx + y * ly)


def _blur(a: np.ndarray, sigma: float) -> np.ndarray:
    img = Image.fromarray((np.clip(a, 0, 1) * 255).astype(np.uint8))
    return np.asarray(img.filter(ImageFilter.GaussianBlur(sigma)), dtype=np.float32) / 255.0


def _draw_object(
    canvas: np.ndarray,
    spec: ObjectSpec,
    slot: Slot,
    ctx: SceneContext,
    rng: np.random.Generator,
    footprint: bool = False,
) -> np.ndarray:
    """Draw one object into ``canvas`` (H, W, 3) float, in place, inside its disc; return its mask (H, W) bool.

    The mask is coverage >= 0.5, or with ``footprint`` every pixel the body touches at all (coverage > 0).
    """
    height, width = canvas.shape[:2]
    look = spec.look()
    parts = spike_parts(spec.shape) if spec.attribute == "spiky" else SHAPES[spec.shape].parts
    matrix = _pose(ctx, slot.angle, slot.scale)
    reach = max(np.sqrt(((p.points @ matrix.T) ** 2).sum(1)).max() for p in parts if p.add)
    matrix = matrix / max(reach, 1.0)  # shear may push points outside the unit disc
    obj_r = 0.85 * slot.radius
    x0, y0 = max(0, int(slot.cx - slot.radius)), max(0, int(slot.cy - slot.radius))
    x1, y1 = (
        min(width, int(math.ceil(slot.cx + slot.radius)) + 1),
        min(height, int(math.ceil(slot.cy + slot.radius)) + 1),
    )
    cx, cy = slot.cx - x0, slot.cy - y0  # centre in patch coordinates (pixel centres at +0.5)
    h, w = y1 - y0, x1 - x0
    cov, facet = rasterise(parts, matrix, (cx, cy), obj_r, (h, w), shades=True)
    gx, gy = np.meshgrid(
        ((np.arange(w) + 0.5 - cx) / obj_r).astype(np.float32), ((np.arange(h) + 0.5 - cy) / obj_r).astype(np.float32)
    )  # image-space units
    inv = np.linalg.inv(matrix)
    u, v = inv[0, 0] * gx + inv[0, 1] * gy, inv[1, 0] * gx + inv[1, 1] * gy
    scale = math.sqrt(abs(np.linalg.det(matrix)))
    fld = Field(u.astype(np.float32), v.astype(np.float32), cov, obj_r * scale, rng)
    paint: Paint = painter(spec.attribute)(look, fld)
    light = _light(ctx)
    lit = _shading(SHAPES[spec.shape].shading, gx / scale, gy / scale, light)
    factor = (1 + (0.5 + 0.5 * paint.shading) * (facet - 1)) * (1 + paint.shading * (lit - 1))
    rgb = paint.rgb * factor[..., None]
    if paint.gloss:
        spec_hl = np.exp(-(((gx / scale - 0.42 * light[0]) ** 2 + (gy / scale - 0.42 * light[1]) ** 2) / 0.03))
        rgb = rgb + (255 - rgb) * (paint.gloss * spec_hl)[..., None]
    if paint.edge is not None:
        rim = fld.band(0.045)
        rgb = rgb * (1 - rim * (1 - paint.edge))[..., None]
    dist = np.hypot(gx, gy) * obj_r / slot.radius  # in disc radii
    window = np.clip((1 - dist) / 0.12, 0, 1)  # everything but the body fades out before the disc edge
    patch = canvas[y0:y1, x0:x1]
    if paint.glow is None:  # soft ground shadow, offset away from the light
        sh = max(1, int(round(0.1 * obj_r)))
        shifted = np.roll(np.roll(cov, int(round(-light[1] * sh)), 0), int(round(-light[0] * sh)), 1)
        shadow = _blur(shifted, 0.06 * obj_r) * window * (1 - cov)
        patch *= (1 - 0.3 * shadow)[..., None]
    else:  # halo in the glow colour
        halo = np.clip(_blur(cov, 0.09 * obj_r) * 1.8, 0, 1) * window * (1 - cov)
        patch += (np.asarray(paint.glow, dtype=np.float32) - patch) * (0.9 * halo)[..., None]
    a = (cov * paint.alpha)[..., None]
    patch += (np.clip(rgb, 0, 255) - patch) * a
    mask = np.zeros((height, width), dtype=bool)
    mask[y0:y1, x0:x1] = cov > 0 if footprint else cov >= 0.5
    return mask


def _background(size: int, ctx: SceneContext) -> np.ndarray:
    top = np.asarray(ctx.background, dtype=np.float32)
    bottom = top if ctx.background_bottom is None else np.asarray(ctx.background_bottom, dtype=np.float32)
    t = np.linspace(0, 1, size, dtype=np.float32)[:, None, None]
    return np.broadcast_to(top * (1 - t) + bottom * t, (size, size, 3)).copy()


def _finish(canvas: np.ndarray, ctx: SceneContext, seed: int) -> np.ndarray:
    """Global lighting and sensor noise (the same for every object), then 8-bit quantisation."""
    out = ((canvas - 128.0) * ctx.contrast + 128.0) * ctx.brightness
    if ctx.noise > 0:
        out = out + np.random.default_rng([seed, 1_000_003]).normal(0, ctx.noise, out.shape)
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


def _object_rng(seed: int, index: int, spec: ObjectSpec) -> np.random.Generator:
    key = zlib.crc32(f"{spec.shape}|{spec.attribute}|{spec.form}".encode())
    return np.random.default_rng([seed, index, key])


def render_scene(
    objects: list[ObjectSpec],
    size: int = 256,
    seed: int = 0,
    context: SceneContext | None = None,
    flip: bool | None = None,
    return_masks: bool = False,
):
    """Render a scene with each object drawn once, scattered and apart, attributes kept local.

    Args:
        objects: 1..16 objects; the layout depends only on their number, ``size`` and ``seed``.
        size: image side in pixels.
        seed: fixes layout, texture details, noise and (with ``flip=None``) the flip.
        context: nuisance factors; None for the neutral scene.
        flip: mirror horizontally; None flips with probability 0.5 drawn from ``seed``.
        return_masks: also return the object masks.

    Returns:
        The RGB image (size, size); with ``return_masks``, ``(image, masks)`` where masks are (size, size) bool
        arrays, one per object in the order given, flipped with the image.
    """
    if size < 32:
        raise ValueError(f"size must be at least 32 px, got {size}")
    for obj in objects:
        if not isinstance(obj, ObjectSpec):
            raise ValueError(f"objects must be ObjectSpec instances, got {obj!r}")
    ctx = context or SceneContext()
    canvas = _background(size, ctx)
    slots = scene_layout(len(objects), size, seed)
    masks = [
        _draw_object(canvas, obj, slot, ctx, _object_rng(seed, i, obj))
        for i, (obj, slot) in enumerate(zip(objects, slots, strict=True))
    ]
    pixels = _finish(canvas, ctx, seed)
    if flip is None:
        flip = bool(np.random.default_rng([seed, 2]).random() < 0.5)
    if flip:
        pixels = np.ascontiguousarray(pixels[:, ::-1])
        masks = [np.ascontiguousarray(m[:, ::-1]) for m in masks]
    image = Image.fromarray(pixels, "RGB")
    return (image, masks) if return_masks else image


def render_slots(
    objects: list[ObjectSpec | None],
    slots: list[Slot],
    size: int = 256,
    seed: int = 0,
    context: SceneContext | None = None,
) -> tuple[Image.Image, list[np.ndarray | None]]:
    """Render objects into given slots (``None`` leaves a slot empty); never flips.

    Single-edit pairs use this: base and foil share the slots of one :func:`scene_layout`, so adding, removing or
    moving an object changes only the pixels of the discs involved. Object ``i`` draws from the same texture RNG
    as in :func:`render_scene` (keyed by seed, slot index and spec).

    Returns:
        The RGB image (size, size) and one (size, size) bool mask per slot (``None`` for an empty slot).
    """
    if len(objects) != len(slots):
        raise ValueError(f"{len(objects)} objects for {len(slots)} slots; give one object (or None) per slot")
    ctx = context or SceneContext()
    canvas = _background(size, ctx)
    masks = [
        None if obj is None else _draw_object(canvas, obj, slot, ctx, _object_rng(seed, i, obj))
        for i, (obj, slot) in enumerate(zip(objects, slots, strict=True))
    ]
    return Image.fromarray(_finish(canvas, ctx, seed), "RGB"), masks


def render_single(
    spec: ObjectSpec, size: int = 96, seed: int = 0, context: SceneContext | None = None, return_mask: bool = False
):
    """One centred object filling most of the image (a factor-grid cell: shape x attribute x context).

    Geometry (silhouette, pose, shadow), background, lighting and noise depend only on the shape, ``size``,
    ``seed`` and ``context``, never on the look, so two looks of one cell differ only where their paint differs
    (glowing and neon also swap the ground shadow for a halo inside the object's disc).

    Returns:
        The RGB image (size, size); with ``return_mask``, ``(image, footprint)``: the (size, size) bool mask of
        every pixel the object's body touches (coverage > 0), the same for every look of a shape.
    """
    if size < 16:
        raise ValueError(f"size must be at least 16 px, got {size}")
    ctx = context or SceneContext()
    canvas = _background(size, ctx)
    mask = _draw_object(
        canvas, spec, Slot(size / 2, size / 2, size / 2), ctx, _object_rng(seed, 0, spec), footprint=True
    )
    image = Image.fromarray(_finish(canvas, ctx, seed), "RGB")
    return (image, mask) if return_mask else image


def blend(patterned: Image.Image, plain: Image.Image, gamma: float) -> Image.Image:
    """Attenuate a look towards its plain rendering: ``round(gamma * patterned + (1 - gamma) * plain)`` per pixel.

    ``gamma = 1`` returns the patterned pixels and ``gamma = 0`` the plain ones, exactly; wherever the two images
    agree (background, noise, everything outside the painted object) every blend agrees with them.

    Raises:
        ValueError: ``gamma`` outside [0, 1] or images of different sizes.
    """
    if not 0.0 <= float(gamma) <= 1.0:
        raise ValueError(f"signal strength gamma must be in [0, 1], got {gamma!r}")
    if patterned.size != plain.size:
        raise ValueError(f"cannot blend a {patterned.size} image with a {plain.size} one")
    a = np.asarray(patterned.convert("RGB"), dtype=np.float64)
    b = np.asarray(plain.convert("RGB"), dtype=np.float64)
    out = np.clip(np.round(float(gamma) * a + (1.0 - float(gamma)) * b), 0, 255).astype(np.uint8)
    return Image.fromarray(out, "RGB")


# ---------------------------------------------------------------------------------------------- batch
Task = tuple[str, list[ObjectSpec], int]  # (path relative to out_dir, objects, seed)


def _is_valid_png(path: Path) -> bool:
    from bindlab.data.files import open_image

    try:
        with open_image(path) as im:  # regular file only (a FIFO never blocks), decoded: truncation fails here
            return im.format == "PNG"
    except Exception:  # noqa: BLE001 - any failure to read means "render again"
        return False


def _render_task(job: tuple[str, list[ObjectSpec], int, int]) -> str:
    path, objects, seed, size = job
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    render_scene(objects, size=size, seed=seed).save(tmp, format="PNG")
    os.replace(tmp, target)  # atomic: a killed run leaves no half-written PNG under the real name
    return path


def render_batch(
    tasks: list[Task],
    out_dir: str | os.PathLike,
    size: int = 256,
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Render (relative path, objects, seed) tasks to PNG files, resumably.

    A task whose file exists and decodes as a PNG is skipped; the rest are rendered by a pool of ``workers``
    processes (in this process when ``workers <= 1``), each written to a temporary name and renamed.

    Args:
        tasks: (path relative to ``out_dir``, objects, seed) per image.
        out_dir: output folder (created if missing).
        size: image side in pixels.
        workers: number of processes.
        progress: called as ``progress(done, total)`` after each rendered image.

    Returns:
        The number of images rendered (0 when everything was already there).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(str(out / rel), list(objs), int(seed), size) for rel, objs, seed in tasks if not _is_valid_png(out / rel)]
    total = len(jobs)
    if workers <= 1 or total <= 1:
        results = map(_render_task, jobs)
        for done, _ in enumerate(results, 1):
            if progress:
                progress(done, total)
        return total
    with multiprocessing.get_context().Pool(min(workers, total)) as pool:
        for done, _ in enumerate(pool.imap_unordered(_render_task, jobs), 1):
            if progress:
                progress(done, total)
    return total
