"""FactorAtlas-style factor grids: shape x hue x pattern x nuisance context x replica, fully crossed.

A grid is a folder of PNG files plus ``index.csv`` (docs/architecture.md, "Factor grids": ``image, shape, hue, pattern, context, replica``)
and ``meta.json`` (the :class:`FactorGridSpec` and the context splits). Every semantic cell (shape, hue, pattern)
appears once in every nuisance realisation (context, replica), and the nuisance of a realisation is the same for
every cell (nuisance-matched), so the factors are balanced against everything else.

- **shape**: silhouettes from the renderer (:data:`bindlab.data.render.RENDER_SHAPES`).
- **hue**: a 12-hue wheel (red ... pink, as in the paper); every pattern is drawn *in* the hue.
- **pattern**: eleven surface looks that all take the hue (the paper has ten, plain among them): plain (one flat
  colour), six two-tone patterns drawn in the hue and a darker shade of it (striped, polka-dot, checkered, zigzag,
  plaid, swirled) and four one-colour looks (glittery, glowing, neon, outlined).
- **context**: :func:`bindlab.data.render.context_from_index` (pose, scale, viewpoint shear/tilt, background,
  light direction, brightness/contrast, noise); a **replica** (the paper's renderer seed) jitters pose, scale,
  shear and light of its context and reseeds noise and texture details.

Splits are by context (paper: calibration 0-3, validation 4-5, test 6-11; both replicas of a context in the same
split). :meth:`FactorIndex.combination_masks` gives the paper's second protocol (unseen combinations of the two
non-target factors). Rendering is resumable: a valid PNG already on disk is kept.

**Signal strength** (paper §3.3 / C.4): :func:`generate_signal_grids` writes, next to a grid that includes plain,
one grid per strength ``gamma`` under ``signal/g<gamma>/`` in which every patterned image is blended with its
nuisance-matched plain rendering (:func:`bindlab.data.render.blend`); ``gamma = 1`` is the grid itself and
``gamma = 0`` makes every pattern its plain image.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import multiprocessing
import os
import shutil
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bindlab.config import LIMIT_ENV, limits
from bindlab.data.files import DataError, load_json_bounded, read_text_bounded, resolve_image_field
from bindlab.data.render import (
    RENDER_SHAPES,
    ObjectSpec,
    SceneContext,
    _is_valid_png,
    blend,
    context_from_index,
    render_single,
)
from bindlab.data.textures import COLOURS

FACTORS: tuple[str, ...] = ("shape", "hue", "pattern")
SHAPES: tuple[str, ...] = ("cube", "sphere", "cylinder", "cone", "pyramid", "torus", "star", "heart")
HUES: tuple[str, ...] = (
    "red",
    "orange",
    "yellow",
    "lime",
    "green",
    "teal",
    "cyan",
    "blue",
    "indigo",
    "purple",
    "magenta",
    "pink",
)
TWO_TONE: tuple[str, ...] = ("striped", "polka-dot", "checkered", "zigzag", "plaid", "swirled")
ONE_COLOUR: tuple[str, ...] = ("glittery", "glowing", "neon", "outlined")
PLAIN = "plain"  # one flat colour: the pattern factor's "no pattern" value and the target of signal attenuation
PATTERNS: tuple[str, ...] = (PLAIN,) + TWO_TONE + ONE_COLOUR
SPLITS: tuple[str, ...] = ("calibration", "validation", "test")
INDEX_COLUMNS: tuple[str, ...] = ("image", "shape", "hue", "pattern", "context", "replica")
SHADE = 0.45  # the second tone of a two-tone pattern: the hue scaled towards black by this factor


def default_splits(n_contexts: int) -> dict[str, list[int]]:
    """Context ids per split: a third (rounded up) calibration, a sixth (at least 1) validation, the rest test.

    For 12 contexts this is the paper's 0-3 / 4-5 / 6-11.
    """
    if n_contexts < 3:
        raise ValueError(f"a factor grid needs at least 3 contexts (calibration, validation, test), got {n_contexts}")
    n_cal = math.ceil(n_contexts / 3)
    n_val = max(1, round(n_contexts / 6))
    if n_cal + n_val >= n_contexts:
        n_cal = n_contexts - n_val - 1
    ids = list(range(n_contexts))
    return {"calibration": ids[:n_cal], "validation": ids[n_cal : n_cal + n_val], "test": ids[n_cal + n_val :]}


def _check_values(kind: str, values: Sequence[str], valid: Sequence[str]) -> None:
    if len(values) < 2:
        raise ValueError(f"a factor grid needs at least 2 {kind}s, got {list(values)}")
    if len(set(values)) != len(values):
        raise ValueError(f"duplicate {kind}s in {list(values)}")
    bad = [v for v in values if v not in valid]
    if bad:
        raise ValueError(f"unknown {kind}(s) {bad}; valid {kind}s: {', '.join(valid)}")


@dataclass(frozen=True)
class FactorGridSpec:
    """What to render. The default is the paper's layout with plain among 11 patterns: 8 x 12 x 11 x 12 x 2 = 25,344
    images (the paper's 23,040 has 10 patterns)."""

    shapes: tuple[str, ...] = SHAPES  # silhouettes, from RENDER_SHAPES
    hues: tuple[str, ...] = HUES  # colour words, from textures.COLOURS
    patterns: tuple[str, ...] = PATTERNS  # looks drawn in the hue, from PATTERNS
    n_contexts: int = 12  # nuisance contexts 0..n-1 (context_from_index(i, n_contexts))
    replicas: int = 2  # renderer seeds per context
    size: int = 96  # image side in pixels
    seed: int = 0  # fixes replica jitter, noise and texture details

    def __post_init__(self) -> None:
        for name in ("shapes", "hues", "patterns"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        _check_values("shape", self.shapes, RENDER_SHAPES)
        _check_values("hue", self.hues, tuple(COLOURS))
        _check_values("pattern", self.patterns, PATTERNS)
        default_splits(self.n_contexts)  # validates n_contexts
        if self.replicas < 1:
            raise ValueError(f"replicas must be >= 1, got {self.replicas}")
        if self.size < 32:
            raise ValueError(f"size must be at least 32 px, got {self.size}")
        lim = limits()
        if self.size > lim.max_render_size:
            raise ValueError(
                f"size {self.size} px is above the cap of {lim.max_render_size} px ({LIMIT_ENV['max_render_size']})"
            )
        if self.n_images > lim.max_grid_images:
            raise ValueError(
                f"a grid of {self.n_images:,} images is above the cap of {lim.max_grid_images:,} "
                f"(shapes x hues x patterns x contexts x replicas); use fewer contexts or replicas, "
                f"or raise {LIMIT_ENV['max_grid_images']}"
            )

    @property
    def n_images(self) -> int:
        return len(self.shapes) * len(self.hues) * len(self.patterns) * self.n_contexts * self.replicas

    def values(self, factor: str) -> tuple[str, ...]:
        """The vocabulary of ``factor`` (``shape``, ``hue`` or ``pattern``) in grid order."""
        if factor not in FACTORS:
            raise ValueError(f"unknown factor {factor!r}; choose one of {FACTORS}")
        return {"shape": self.shapes, "hue": self.hues, "pattern": self.patterns}[factor]

    def to_json(self) -> dict:
        """JSON-ready (lists, not tuples), as stored in ``meta.json``."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


def _pick(arg: str | None, default: tuple[str, ...], kind: str) -> tuple[str, ...]:
    """A CLI factor argument: empty = all defaults, ``N`` = the first N defaults, else a comma-separated list."""
    if not arg:
        return default
    arg = arg.strip()
    if arg.isdigit():
        n = int(arg)
        if not 2 <= n <= len(default):
            raise ValueError(f"--{kind}s {n}: choose 2..{len(default)} (or a comma-separated list)")
        return default[:n]
    return tuple(v.strip() for v in arg.split(",") if v.strip())


def spec_from_args(
    shapes: str | None = None,
    hues: str | None = None,
    patterns: str | None = None,
    contexts: int = 12,
    replicas: int = 2,
    size: int = 96,
    seed: int = 0,
) -> FactorGridSpec:
    """Build a spec from CLI-style arguments (each factor: empty, a count of defaults, or a comma list)."""
    return FactorGridSpec(
        _pick(shapes, SHAPES, "shape"),
        _pick(hues, HUES, "hue"),
        _pick(patterns, PATTERNS, "pattern"),
        contexts,
        replicas,
        size,
        seed,
    )


# ---------------------------------------------------------------------------------------------- one cell
def _shade(hue: str) -> str:
    r, g, b = (int(round(c * SHADE)) for c in COLOURS[hue])
    return f"#{r:02x}{g:02x}{b:02x}"


def object_spec(shape: str, hue: str, pattern: str) -> ObjectSpec:
    """The renderer object of one semantic cell: ``pattern`` drawn in ``hue`` (two-tone: hue + darker shade)."""
    if pattern == PLAIN:
        return ObjectSpec(shape, PLAIN, hue)
    if pattern in TWO_TONE:
        return ObjectSpec(shape, pattern, f"{hue} and {_shade(hue)} {pattern}")
    if pattern in ONE_COLOUR:
        return ObjectSpec(shape, pattern, f"{hue} {pattern}")
    raise ValueError(f"unknown pattern {pattern!r}; valid patterns: {', '.join(PATTERNS)}")


def realisation(context: int, replica: int, n_contexts: int, seed: int = 0) -> tuple[SceneContext, int]:
    """The nuisance of one (context, replica): a jittered copy of the context and the render seed.

    The same for every semantic cell, so the grid is nuisance-matched.
    """
    base = context_from_index(context, n_contexts)
    rng = np.random.default_rng([seed, context, replica, 7])
    ctx = dataclasses.replace(
        base,
        name=f"{base.name}-r{replica}",
        rotation=base.rotation + float(rng.uniform(-20, 20)),
        light_angle=(base.light_angle + float(rng.uniform(-25, 25))) % 360.0,
        scale=float(np.clip(base.scale * rng.uniform(0.9, 1.0), 0.5, 1.0)),
        shear=float(np.clip(base.shear + rng.uniform(-0.08, 0.08), -0.5, 0.5)),
    )
    return ctx, zlib.crc32(f"{seed}|{context}|{replica}".encode())


def render_cell(shape: str, hue: str, pattern: str, context: int, replica: int, spec: FactorGridSpec):
    """Render one grid image (PIL RGB, ``spec.size`` square)."""
    ctx, render_seed = realisation(context, replica, spec.n_contexts, spec.seed)
    return render_single(object_spec(shape, hue, pattern), spec.size, render_seed, ctx)


# ---------------------------------------------------------------------------------------------- index
@dataclass(frozen=True)
class FactorRow:
    """One line of ``index.csv``."""

    image: str  # path relative to the grid folder
    shape: str
    hue: str
    pattern: str
    context: int
    replica: int


def grid_rows(spec: FactorGridSpec) -> list[FactorRow]:
    """Every image of the grid in a fixed order (context, replica, shape, hue, pattern)."""
    return [
        FactorRow(f"images/c{c:02d}/r{r}/{s}-{h}-{p}.png", s, h, p, c, r)
        for c in range(spec.n_contexts)
        for r in range(spec.replicas)
        for s in spec.shapes
        for h in spec.hues
        for p in spec.patterns
    ]


def write_index(path: str | os.PathLike, rows: Sequence[FactorRow]) -> Path:
    """Write ``index.csv`` atomically."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(INDEX_COLUMNS)
        for r in rows:
            w.writerow([r.image, r.shape, r.hue, r.pattern, r.context, r.replica])
    os.replace(tmp, p)
    return p


@dataclass(frozen=True)
class FactorIndex:
    """A loaded grid: one row per image, with its labels, context split and context-replica group."""

    root: Path  # the grid folder
    rows: tuple[FactorRow, ...]
    splits: dict[str, list[int]]  # context ids per split
    meta: dict = field(default_factory=dict)  # meta.json (empty if absent)

    def __len__(self) -> int:
        return len(self.rows)

    def paths(self) -> list[Path]:
        return [self.root / r.image for r in self.rows]

    def labels(self, factor: str) -> np.ndarray:
        """``(n,)`` string labels of ``factor``."""
        if factor not in FACTORS:
            raise ValueError(f"unknown factor {factor!r}; choose one of {FACTORS}")
        return np.array([getattr(r, factor) for r in self.rows])

    def values(self, factor: str) -> list[str]:
        """The vocabulary of ``factor``: grid order from meta.json when known, else first appearance."""
        spec = self.meta.get("spec", {})
        key = {"shape": "shapes", "hue": "hues", "pattern": "patterns"}[factor]
        if spec.get(key):
            return list(spec[key])
        return list(dict.fromkeys(self.labels(factor).tolist()))

    def masks(self) -> dict[str, np.ndarray]:
        """``(n,)`` boolean mask per split, from each image's context."""
        ctx = np.array([r.context for r in self.rows])
        return {s: np.isin(ctx, self.splits[s]) for s in SPLITS}

    def groups(self) -> np.ndarray:
        """``(n,)`` context-replica group of each image (``"c03-r1"``), for cluster bootstraps."""
        return np.array([f"c{r.context:02d}-r{r.replica}" for r in self.rows])

    def combination_masks(self, target: str) -> dict[str, np.ndarray]:
        """Split masks of the unseen-combination protocol for ``target`` (the paper's Table 2, second block).

        Every cell (a, b) of the two non-target factors goes to one split by ``(i + j) mod m`` of its value
        positions (``m = 6``: residues 0-1 calibration, 2 validation, 3-5 test, the context split's 1/3, 1/6, 1/2;
        ``m = 3`` when a non-target factor has fewer than 6 values). Every value of every factor, every context
        and every replica stay in all three splits; only the combinations are held out.

        Raises:
            ValueError: a non-target factor with fewer than 3 values (its values could not be in every split).
        """
        if target not in FACTORS:
            raise ValueError(f"unknown factor {target!r}; choose one of {FACTORS}")
        a, b = (f for f in FACTORS if f != target)
        va, vb = self.values(a), self.values(b)
        if min(len(va), len(vb)) < 3:
            raise ValueError(
                f"the combination holdout for {target} needs at least 3 values of {a} and of {b} "
                f"(got {len(va)} and {len(vb)}); use a larger grid or --protocol context"
            )
        m = 6 if min(len(va), len(vb)) >= 6 else 3
        buckets = {
            6: ("calibration", "calibration", "validation", "test", "test", "test"),
            3: ("calibration", "validation", "test"),
        }[m]
        pos_a, pos_b = {v: i for i, v in enumerate(va)}, {v: i for i, v in enumerate(vb)}
        split = np.array([buckets[(pos_a[getattr(r, a)] + pos_b[getattr(r, b)]) % m] for r in self.rows])
        return {s: split == s for s in SPLITS}


def _parse_row(rec: dict[str, str], line: int, path: Path) -> FactorRow:
    missing = [c for c in INDEX_COLUMNS if not (rec.get(c) or "").strip()]
    if missing:
        raise DataError(f"{path}:{line}: empty or missing {missing}")
    try:
        context, replica = int(rec["context"]), int(rec["replica"])
    except ValueError:
        raise DataError(
            f"{path}:{line}: context and replica must be integers, got {rec['context']!r}, {rec['replica']!r}"
        ) from None
    if context < 0 or replica < 0 or context > _MAX_CONTEXT:
        raise DataError(
            f"{path}:{line}: context and replica must be whole numbers in 0..{_MAX_CONTEXT}, got {context}, {replica}"
        )
    resolve_image_field(path.parent, rec["image"].strip(), f"{path}:{line}")
    return FactorRow(
        rec["image"].strip(), rec["shape"].strip(), rec["hue"].strip(), rec["pattern"].strip(), context, replica
    )


_MAX_CONTEXT = 10_000  # contexts index split lists; a larger one is a typo, not a grid


def _read_meta(path: Path) -> dict:
    """``meta.json`` next to an index: a JSON object with an optional ``splits`` mapping of split -> context list."""
    meta = load_json_bounded(path, dict, "meta.json")
    splits = meta.get("splits")
    if splits is not None and not (
        isinstance(splits, dict)
        and all(
            isinstance(v, list) and all(isinstance(c, int) and not isinstance(c, bool) for c in v)
            for v in splits.values()
        )
    ):
        raise DataError(f"{path}: 'splits' must map split names to lists of context numbers")
    return meta


def load_index(folder: str | os.PathLike, check_images: bool = True) -> FactorIndex:
    """Read and validate ``folder/index.csv`` (and ``meta.json`` when present).

    Checks the header, every row's fields, duplicate images, that every split has images, that every factor has
    at least two values and, with ``check_images``, that every image file exists (missing ones are named).

    Raises:
        DataError: with the file, line and what is wrong.
    """
    root = Path(folder).expanduser()
    path = root / "index.csv" if root.is_dir() or not root.suffix else root
    root = path.parent
    if not path.is_file():
        raise DataError(f"{path} does not exist; make a grid with `python -m bindlab generate factors --out DIR`")
    meta: dict = _read_meta(root / "meta.json") if (root / "meta.json").exists() else {}
    text = read_text_bounded(path)
    if text.count("\n") > limits().max_jsonl_lines:
        raise DataError(
            f"{path} has more than {limits().max_jsonl_lines} lines; split the grid or raise "
            f"{LIMIT_ENV['max_jsonl_lines']}"
        )
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames or []
        absent = [c for c in INDEX_COLUMNS if c not in header]
        if absent:  # the header itself is never echoed: it may be the first line of any file
            raise DataError(
                f"{path}: not a factor index: the header lacks columns {absent}; "
                f"need a CSV header with {list(INDEX_COLUMNS)}"
            )
        rows = tuple(_parse_row(rec, i, path) for i, rec in enumerate(reader, start=2))
    except csv.Error as e:
        raise DataError(f"{path}: not a valid CSV file ({e})") from None
    if not rows:
        raise DataError(f"{path} has no rows")
    seen: set[str] = set()
    dupes = [r.image for r in rows if r.image in seen or seen.add(r.image)]
    if dupes:
        raise DataError(f"{path}: duplicate images {dupes[:3]} ({len(dupes)} in all)")
    contexts = sorted({r.context for r in rows})
    splits = meta.get("splits") or default_splits(max(contexts) + 1)
    for s in SPLITS:
        if not any(r.context in splits.get(s, []) for r in rows):
            raise DataError(
                f"{path}: no images in the {s} split (contexts {splits.get(s)}); contexts present: {contexts}"
            )
    cap = limits().max_factor_values
    for factor in (*FACTORS, "context"):
        n_values = len({getattr(r, factor) for r in rows})
        if factor != "context" and n_values < 2:
            raise DataError(f"{path}: factor {factor!r} has fewer than 2 values")
        if n_values > cap:
            raise DataError(
                f"{path}: factor {factor!r} has {n_values:,} values, more than one grid may have "
                f"({cap:,}, {LIMIT_ENV['max_factor_values']}); keep fewer values, or split the grid"
            )
    if check_images:
        missing = [str(root / r.image) for r in rows if not (root / r.image).is_file()]
        if missing:
            raise DataError(
                f"{len(missing)} of {len(rows)} images listed in {path} are missing, e.g. "
                f"{missing[:3]}; re-run `python -m bindlab generate factors` on the folder to finish it"
            )
    return FactorIndex(root, rows, {s: list(splits[s]) for s in SPLITS}, meta)


# ---------------------------------------------------------------------------------------------- generation
def _render_job(job: tuple[str, str, str, str, int, int, FactorGridSpec]) -> str:
    path, shape, hue, pattern, context, replica, spec = job
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    render_cell(shape, hue, pattern, context, replica, spec).save(tmp, format="PNG")
    os.replace(tmp, target)  # atomic: a killed run leaves no half-written PNG under the real name
    return path


def generate_grid(
    out: str | os.PathLike, spec: FactorGridSpec, workers: int = 2, progress: Callable[[int, int], None] | None = None
) -> tuple[FactorIndex, int]:
    """Render the grid into ``out`` (resumable) and write ``index.csv`` and ``meta.json``.

    A folder holding a different grid (another ``meta.json`` spec) is refused rather than mixed.

    Args:
        out: output folder (created if missing).
        spec: what to render.
        workers: rendering processes (in this process when ``<= 1``).
        progress: called as ``progress(done, total)`` after each rendered image.

    Returns:
        ``(index, n_rendered)``; ``n_rendered`` is 0 when every image was already there.
    """
    root = Path(out).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    meta_path = root / "meta.json"
    meta = {
        "kind": "factor-grid",
        "spec": spec.to_json(),
        "splits": default_splits(spec.n_contexts),
        "seed": spec.seed,
        "n_images": spec.n_images,
    }
    if meta_path.is_file():
        try:
            old = load_json_bounded(meta_path, dict, "meta.json").get("spec")
        except DataError:
            old = None
        if old is not None and old != meta["spec"]:
            raise ValueError(f"{root} holds a different factor grid ({old}); choose an empty folder")
    meta_path.write_text(json.dumps(meta, indent=2))
    rows = grid_rows(spec)
    jobs = [
        (str(root / r.image), r.shape, r.hue, r.pattern, r.context, r.replica, spec)
        for r in rows
        if not _is_valid_png(root / r.image)
    ]
    total = len(jobs)
    if workers <= 1 or total <= 1:
        for done, _ in enumerate(map(_render_job, jobs), 1):
            if progress:
                progress(done, total)
    else:
        with multiprocessing.get_context().Pool(min(workers, total)) as pool:
            for done, _ in enumerate(pool.imap_unordered(_render_job, jobs, chunksize=8), 1):
                if progress:
                    progress(done, total)
    write_index(root / "index.csv", rows)
    return load_index(root), total


# The app's default grid: the full vocabulary under 4 contexts x 1 replica at the toy models' 64 px (4,224 images
# with plain among the 11 patterns; 3,840 before plain; calibration 0-1, validation 2, test 3). Rendered once under
# $BINDLAB_HOME on first use (a grid rendered before plain existed is re-rendered in a new folder).
DEFAULT_GRID = FactorGridSpec(n_contexts=4, replicas=1, size=64)


def default_grid(progress: Callable[[int, int], None] | None = None) -> Path:
    """The folder of the default grid, rendering (or finishing) it first when needed."""
    from bindlab.config import home

    root = home() / "factor-grid-default-v2"  # v2: plain joined the patterns (the old folder holds another spec)
    if (root / "index.csv").is_file():
        try:
            load_index(root)
            return root
        except DataError:
            pass  # incomplete: render the rest
    generate_grid(root, DEFAULT_GRID, workers=2, progress=progress)
    return root


# ---------------------------------------------------------------------------------------------- signal strength
SIGNAL_DIR = "signal"  # folder of the attenuated grids inside a grid folder
PAPER_STRENGTHS: tuple[float, ...] = (1.0, 0.7, 0.5, 0.35, 0.2, 0.1, 0.0)  # Table 10 of the paper
MAX_STRENGTHS = 12  # each strength writes (and the sweep scores) a whole grid; the paper uses 7


def parse_strengths(arg: str | Sequence[float]) -> tuple[float, ...]:
    """``"1,.75,.5"`` (or numbers) -> distinct strengths in [0, 1], strongest first.

    Raises:
        ValueError: a non-number, a value outside [0, 1], a duplicate, an empty list or more than
            :data:`MAX_STRENGTHS` values, naming it.
    """
    parts = [p.strip() for p in arg.split(",") if p.strip()] if isinstance(arg, str) else list(arg)
    if len(parts) > MAX_STRENGTHS:
        raise ValueError(
            f"--signal-strengths lists {len(parts)} values; at most {MAX_STRENGTHS} (each writes and scores "
            "a whole grid), e.g. the paper's 1,.7,.5,.35,.2,.1,0"
        )
    out: list[float] = []
    for p in parts:
        try:
            g = float(p)
        except (TypeError, ValueError):
            raise ValueError(
                f"signal strength {p!r} is not a number; give a comma list in [0, 1], e.g. 1,.75,.5,.3,.2,.1,0"
            ) from None
        if not 0.0 <= g <= 1.0:
            raise ValueError(f"signal strength {p!r} is outside [0, 1]; 1 = the patterned image, 0 = plain")
        if round(g, 4) in [round(x, 4) for x in out]:
            raise ValueError(f"signal strength {p!r} is listed twice")
        out.append(g)
    if not out:
        raise ValueError("no signal strengths given; e.g. --signal-strengths 1,.75,.5,.3,.2,.1,0")
    return tuple(sorted(out, reverse=True))


def strength_folder(root: str | os.PathLike, gamma: float) -> Path:
    """``root/signal/g0.750``: the grid at signal strength ``gamma``."""
    return Path(root) / SIGNAL_DIR / f"g{gamma:.3f}"


def plain_image(row: FactorRow) -> str:
    """The image path of the nuisance-matched plain rendering of ``row`` (same shape, hue, context, replica)."""
    return f"images/c{row.context:02d}/r{row.replica}/{row.shape}-{row.hue}-{PLAIN}.png"


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def _blend_job(job: tuple[str, str, str, float]) -> str:
    patterned, plain, out, gamma = job
    from bindlab.data.files import open_image

    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open_image(patterned) as a, open_image(plain) as b:
        blend(a, b, gamma).save(tmp, format="PNG")
    os.replace(tmp, target)
    return out


def generate_signal_grids(
    root: str | os.PathLike,
    strengths: Sequence[float],
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> list[tuple[float, Path]]:
    """Write one attenuated copy of the grid in ``root`` per strength (resumable).

    At strength ``gamma`` every patterned image becomes ``blend(patterned, plain, gamma)`` with the plain image of
    the same shape, hue, context and replica; plain images are linked unchanged. Each copy is a complete grid
    (``index.csv``, ``meta.json`` with ``signal_strength``) with the same rows, so it loads like any other.

    Raises:
        ValueError: the grid has no plain pattern (nothing to attenuate towards).
    """
    index = load_index(root)
    if PLAIN not in index.values("pattern"):
        raise ValueError(
            f"{index.root} has no {PLAIN!r} pattern to attenuate towards; generate the grid with "
            f"plain among --patterns (the default includes it)"
        )
    jobs: list[tuple[str, str, str, float]] = []
    links: list[tuple[Path, Path]] = []
    out = []
    for gamma in parse_strengths(list(strengths)):
        folder = strength_folder(index.root, gamma)
        folder.mkdir(parents=True, exist_ok=True)
        for r in index.rows:
            src, dst = index.root / r.image, folder / r.image
            if _is_valid_png(dst):
                continue
            if r.pattern == PLAIN or gamma == 1.0:
                links.append((src, dst))
            else:
                jobs.append((str(src), str(index.root / plain_image(r)), str(dst), gamma))
        meta = {**index.meta, "signal_strength": gamma, "signal_of": str(index.root)}
        (folder / "meta.json").write_text(json.dumps(meta, indent=2))
        out.append((gamma, folder))
    total = len(jobs) + len(links)
    for done, (src, dst) in enumerate(links, 1):
        _link_or_copy(src, dst)
        if progress:
            progress(done, total)
    results = (
        map(_blend_job, jobs)
        if workers <= 1 or len(jobs) <= 1
        else multiprocessing.get_context().Pool(min(workers, len(jobs))).imap_unordered(_blend_job, jobs, 16)
    )
    for done, _ in enumerate(results, len(links) + 1):
        if progress:
            progress(done, total)
    for _, folder in out:
        write_index(folder / "index.csv", index.rows)
    return out


def signal_grids(root: str | os.PathLike) -> list[tuple[float, Path]]:
    """The attenuated grids written next to the grid in ``root``, strongest first (empty when there are none)."""
    base = Path(root).expanduser()
    base = base.parent if base.suffix == ".csv" else base
    found = []
    for folder in sorted((base / SIGNAL_DIR).glob("g*")):
        try:
            gamma = float(folder.name[1:])
        except ValueError:
            continue
        if (folder / "index.csv").is_file() and 0.0 <= gamma <= 1.0:
            found.append((gamma, folder))
    return sorted(found, key=lambda t: -t[0])


# The sweep's default: every pattern (plain included) on 4 shapes x 6 hues x 6 contexts x 1 replica at 64 px
# (1,584 images per strength; calibration 0-1, validation 2, test 3-5) under the paper's seven strengths.
DEFAULT_SIGNAL_GRID = FactorGridSpec(shapes=SHAPES[:4], hues=HUES[:6], n_contexts=6, replicas=1, size=64)


def default_signal_grid(progress: Callable[[int, int], None] | None = None) -> Path:
    """The folder of the default signal-strength grid (:data:`DEFAULT_SIGNAL_GRID` at :data:`PAPER_STRENGTHS`),
    rendering (or finishing) it first when needed."""
    from bindlab.config import home

    root = home() / "factor-grid-signal"
    have = {round(g, 3) for g, _ in signal_grids(root)} if (root / "index.csv").is_file() else set()
    if have >= {round(g, 3) for g in PAPER_STRENGTHS}:
        try:
            for _, folder in signal_grids(root):
                load_index(folder)
            return root
        except DataError:
            pass
    generate_grid(root, DEFAULT_SIGNAL_GRID, workers=2, progress=progress)
    generate_signal_grids(root, PAPER_STRENGTHS, workers=2, progress=progress)
    return root
