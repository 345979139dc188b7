"""Factor grid: fully crossed, split by context, nuisance-matched, index round trip and validation, resumable."""

from __future__ import annotations

import csv
import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bindlab.data import factors as F
from bindlab.data.schema import DataError

SMALL = F.FactorGridSpec(
    shapes=("cube", "sphere"), hues=("red", "teal"), patterns=("striped", "glowing"), n_contexts=3, replicas=2, size=32
)


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    root = tmp_path_factory.mktemp("grid")
    index, n = F.generate_grid(root, SMALL, workers=1)
    return root, index, n


def test_default_spec_is_the_papers_size_and_split():
    spec = F.FactorGridSpec()
    assert (len(spec.shapes), len(spec.hues), len(spec.patterns), spec.n_contexts, spec.replicas) == (8, 12, 11, 12, 2)
    assert spec.patterns[0] == "plain" and spec.n_images == 25344
    assert F.default_splits(12) == {"calibration": [0, 1, 2, 3], "validation": [4, 5], "test": list(range(6, 12))}


@pytest.mark.parametrize("n", range(3, 25))
def test_splits_partition_the_contexts(n):
    s = F.default_splits(n)
    assert sorted(s["calibration"] + s["validation"] + s["test"]) == list(range(n))
    assert all(s[k] for k in F.SPLITS)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"shapes": ("cube", "blob")}, "unknown shape"),
        ({"hues": ("red", "red")}, "duplicate hue"),
        ({"patterns": ("striped",)}, "at least 2 patterns"),
        ({"patterns": ("striped", "leopard-print")}, "unknown pattern"),
        ({"n_contexts": 2}, "at least 3 contexts"),
        ({"replicas": 0}, "replicas"),
        ({"size": 8}, "size"),
    ],
)
def test_spec_validation_names_the_bad_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        F.FactorGridSpec(**kwargs)


def test_spec_from_cli_args():
    spec = F.spec_from_args("3", "red,blue", "", contexts=6, replicas=1)
    assert spec.shapes == F.SHAPES[:3] and spec.hues == ("red", "blue") and spec.patterns == F.PATTERNS
    with pytest.raises(ValueError, match="choose 2"):
        F.spec_from_args("99")


def test_grid_is_fully_crossed_and_splits_by_context(grid):
    root, index, n = grid
    assert n == len(index) == SMALL.n_images == 48
    cells = {(r.shape, r.hue, r.pattern, r.context, r.replica) for r in index.rows}
    assert cells == set(itertools.product(SMALL.shapes, SMALL.hues, SMALL.patterns, range(3), range(2)))
    m = index.masks()
    assert not (m["calibration"] & m["validation"]).any() and not (m["validation"] & m["test"]).any()
    assert (m["calibration"] | m["validation"] | m["test"]).all()
    ctx = np.array([r.context for r in index.rows])
    for split in F.SPLITS:  # both replicas of a context land in the same split
        assert set(ctx[m[split]]) == set(index.splits[split])
    groups = index.groups()
    assert len(set(groups)) == 3 * 2 and all(len(set(ctx[groups == g])) == 1 for g in set(groups))


def test_images_show_the_hue_and_differ_by_pattern(grid):
    root, index, _ = grid
    by = {
        (r.shape, r.hue, r.pattern, r.context, r.replica): np.asarray(Image.open(root / r.image), float)
        for r in index.rows
    }
    red, teal = by[("cube", "red", "striped", 0, 0)], by[("cube", "teal", "striped", 0, 0)]
    assert red.shape == (32, 32, 3)
    assert red[..., 0].mean() > teal[..., 0].mean() and teal[..., 2].mean() > red[..., 2].mean()
    assert np.abs(by[("cube", "red", "glowing", 0, 0)] - red).mean() > 5  # the pattern changes the image
    assert np.abs(by[("cube", "red", "striped", 0, 1)] - red).mean() > 1  # a replica is another realisation


def test_index_round_trip_and_meta(grid):
    root, index, _ = grid
    again = F.load_index(root / "index.csv")
    assert again.rows == index.rows and again.splits == index.splits
    assert index.values("hue") == list(SMALL.hues)
    meta = json.loads((root / "meta.json").read_text())
    assert meta["spec"] == SMALL.to_json() and meta["n_images"] == SMALL.n_images
    with open(root / "index.csv") as f:
        assert tuple(next(csv.reader(f))) == F.INDEX_COLUMNS


def test_missing_and_malformed_index_are_reported(grid, tmp_path):
    root, index, _ = grid
    with pytest.raises(DataError, match="does not exist"):
        F.load_index(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "index.csv").write_text("image,shape,hue\nx.png,cube,red\n")
    with pytest.raises(DataError, match="lacks columns"):
        F.load_index(bad)
    (bad / "index.csv").write_text("image,shape,hue,pattern,context,replica\nx.png,cube,red,striped,one,0\n")
    with pytest.raises(DataError, match="integers"):
        F.load_index(bad)
    rows = list(index.rows)
    F.write_index(bad / "index.csv", rows)  # images are not in this folder
    with pytest.raises(DataError, match=r"48 of 48 images .* missing") as e:
        F.load_index(bad)
    assert str(bad / rows[0].image) in str(e.value)


def test_a_grid_with_too_many_values_of_one_factor_is_refused_before_any_image_is_read(grid, tmp_path, monkeypatch):
    """Issue 56, item 5: a 1.3 MB upload whose pattern factor had 2,500 values made a 68.5 MB page after minutes."""
    root, index, _ = grid
    rows = [replace(r, pattern=f"p{i}", image=f"img/{i}.png") for i, r in enumerate(index.rows)]  # 48 patterns
    many = tmp_path / "many"
    many.mkdir()
    F.write_index(many / "index.csv", rows)  # no image is there: the count is refused first
    monkeypatch.setenv("BINDLAB_MAX_FACTOR_VALUES", "40")
    with pytest.raises(
        DataError,
        match=r"factor 'pattern' has 48 values, more than one grid may have \(40, "
        r"BINDLAB_MAX_FACTOR_VALUES\)",
    ):
        F.load_index(many)
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    monkeypatch.delenv("BINDLAB_MAX_FACTOR_VALUES")
    with pytest.raises(DataError, match="48 of 48 images"):  # 48 <= public 64: on to the image check
        F.load_index(many)


def test_generation_is_resumable_and_deterministic(tmp_path):
    spec = F.FactorGridSpec(
        shapes=("cube", "star"), hues=("lime", "indigo"), patterns=("plaid", "neon"), n_contexts=3, replicas=1, size=32
    )
    index, n = F.generate_grid(tmp_path, spec, workers=1)
    assert n == 24
    first = (tmp_path / index.rows[5].image).read_bytes()
    (tmp_path / index.rows[5].image).unlink()
    (tmp_path / index.rows[7].image).write_bytes(b"not a png")  # a corrupt leftover is rendered again
    _, n = F.generate_grid(tmp_path, spec, workers=2)
    assert n == 2
    assert (tmp_path / index.rows[5].image).read_bytes() == first
    assert F.generate_grid(tmp_path, spec, workers=1)[1] == 0
    with pytest.raises(ValueError, match="different factor grid"):
        F.generate_grid(tmp_path, F.FactorGridSpec(shapes=("cube", "heart"), n_contexts=3, replicas=1), workers=1)


# ---------------------------------------------------------------------------------------------- plain, signal strength
def _px(path):
    return np.asarray(Image.open(path).convert("RGB"), dtype=np.int64)


@pytest.mark.parametrize("hue", ["red", "teal", "indigo", "#123456"])
def test_plain_takes_any_hue_and_shares_geometry_with_every_pattern(hue):
    from bindlab.data.render import ObjectSpec, render_single

    ctx, seed = F.realisation(2, 1, 4)
    plain, fp = render_single(ObjectSpec("star", "plain", hue), 48, seed, ctx, return_mask=True)
    p = np.asarray(plain, dtype=np.int64)
    rgb = np.array(F.COLOURS.get(hue) or [int(hue[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)
    body = p[fp].mean(0)
    assert np.corrcoef(body, rgb)[0, 1] > 0.9  # the body is the hue, shaded
    for pattern in F.TWO_TONE + ("glittery", "outlined"):
        look = F.object_spec("star", hue if not hue.startswith("#") else "red", pattern)
        img, fp2 = render_single(look, 48, seed, ctx, return_mask=True)
        assert (fp2 == fp).all()  # same silhouette, pose and viewpoint
        if not hue.startswith("#"):
            assert (np.asarray(img, dtype=np.int64)[~fp] == p[~fp]).all()  # background, shadow, noise identical
    with pytest.raises(ValueError, match="exactly one colour"):
        ObjectSpec("star", "plain", "red and blue")


@pytest.fixture(scope="module")
def signal(tmp_path_factory):
    root = tmp_path_factory.mktemp("signal")
    spec = F.FactorGridSpec(
        shapes=("cube", "star"),
        hues=("red", "teal"),
        patterns=("plain", "striped", "glittery"),
        n_contexts=3,
        replicas=1,
        size=32,
    )
    F.generate_grid(root, spec, workers=1)
    grids = F.generate_signal_grids(root, [1, 0.5, 0], workers=1)
    return root, spec, grids


def test_signal_grids_blend_with_the_nuisance_matched_plain_image(signal):
    from bindlab.data.render import render_single

    root, spec, grids = signal
    assert [g for g, _ in grids] == [1.0, 0.5, 0.0] == [g for g, _ in F.signal_grids(root)]
    base = F.load_index(root)
    by_gamma = {g: F.load_index(folder) for g, folder in grids}
    for g, idx in by_gamma.items():
        assert idx.rows == base.rows and idx.splits == base.splits and idx.meta["signal_strength"] == g
    for r in base.rows:
        pat, plain = _px(root / r.image), _px(root / F.plain_image(r))
        one, half, zero = (_px(by_gamma[g].root / r.image) for g in (1.0, 0.5, 0.0))
        assert (one == pat).all()  # gamma = 1 is the patterned image
        assert (zero == plain).all()  # gamma = 0 is the plain image
        assert np.abs(half - (pat + plain) / 2).max() <= 0.5 + 1e-9
        ctx, seed = F.realisation(r.context, r.replica, spec.n_contexts, spec.seed)
        _, fp = render_single(F.object_spec(r.shape, r.hue, r.pattern), spec.size, seed, ctx, return_mask=True)
        assert (half[~fp] == plain[~fp]).all()  # geometry and nuisance are the plain image's, pixel for pixel
        if r.pattern != "plain":
            assert np.abs(pat - plain)[fp].mean() > 3 and np.abs(half - plain)[fp].mean() > 1
    assert F.generate_signal_grids(root, [0.5], workers=1)  # resumable: nothing left to do
    with pytest.raises(ValueError, match="outside"):
        F.parse_strengths("1,1.5")
    with pytest.raises(ValueError, match="twice"):
        F.parse_strengths("1,.5,0.50")


def test_signal_grids_need_plain(grid):
    root, _, _ = grid
    with pytest.raises(ValueError, match="no 'plain' pattern"):
        F.generate_signal_grids(root, [1, 0])


def test_combination_holdout_keeps_every_value_in_every_split():
    rows = [
        F.FactorRow(f"{s}{h}{p}{c}.png", s, h, p, c, 0)
        for s in F.SHAPES[:6]
        for h in F.HUES[:7]
        for p in F.PATTERNS[:3]
        for c in range(3)
    ]
    index = F.FactorIndex(Path("."), tuple(rows), F.default_splits(3), {})
    for target in F.FACTORS:
        m = index.combination_masks(target)
        assert sum(int(x.sum()) for x in m.values()) == len(rows) and not (m["calibration"] & m["test"]).any()
        a, b = (f for f in F.FACTORS if f != target)
        cells = {
            s: {(getattr(r, a), getattr(r, b)) for r, keep in zip(rows, m[s], strict=True) if keep} for s in F.SPLITS
        }
        assert not (cells["calibration"] & cells["test"]) and not (cells["validation"] & cells["test"])
        for s in F.SPLITS:
            picked = [r for r, keep in zip(rows, m[s], strict=True) if keep]
            for f in F.FACTORS:  # every value of every factor and every context is in every split
                assert {getattr(r, f) for r in picked} == set(index.values(f))
            assert {r.context for r in picked} == {0, 1, 2}
    small = F.FactorIndex(Path("."), tuple(r for r in rows if r.hue in F.HUES[:2]), F.default_splits(3), {})
    with pytest.raises(ValueError, match="at least 3 values"):
        small.combination_masks("pattern")
