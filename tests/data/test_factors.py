"""Factor grid: fully crossed, split by context, nuisance-matched, index round trip and validation, resumable."""

from __future__ import annotations

import csv
import itertools
import json

import numpy as np
import pytest
from PIL import Image

from bindlab.data import factors as F
from bindlab.data.schema import DataError

SMALL = F.FactorGridSpec(shapes=("cube", "sphere"), hues=("red", "teal"), patterns=("striped", "glowing"),
                         n_contexts=3, replicas=2, size=32)


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    root = tmp_path_factory.mktemp("grid")
    index, n = F.generate_grid(root, SMALL, workers=1)
    return root, index, n


def test_default_spec_is_the_papers_size_and_split():
    spec = F.FactorGridSpec()
    assert (len(spec.shapes), len(spec.hues), len(spec.patterns), spec.n_contexts, spec.replicas) == (8, 12, 10, 12, 2)
    assert spec.n_images == 23040
    assert F.default_splits(12) == {"calibration": [0, 1, 2, 3], "validation": [4, 5], "test": list(range(6, 12))}


@pytest.mark.parametrize("n", range(3, 25))
def test_splits_partition_the_contexts(n):
    s = F.default_splits(n)
    assert sorted(s["calibration"] + s["validation"] + s["test"]) == list(range(n))
    assert all(s[k] for k in F.SPLITS)


@pytest.mark.parametrize("kwargs, match", [
    ({"shapes": ("cube", "blob")}, "unknown shape"), ({"hues": ("red", "red")}, "duplicate hue"),
    ({"patterns": ("striped",)}, "at least 2 patterns"), ({"patterns": ("striped", "leopard-print")}, "unknown pattern"),
    ({"n_contexts": 2}, "at least 3 contexts"), ({"replicas": 0}, "replicas"), ({"size": 8}, "size"),
])
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
    by = {(r.shape, r.hue, r.pattern, r.context, r.replica): np.asarray(Image.open(root / r.image), float)
          for r in index.rows}
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


def test_generation_is_resumable_and_deterministic(tmp_path):
    spec = F.FactorGridSpec(shapes=("cube", "star"), hues=("lime", "indigo"), patterns=("plaid", "neon"),
                            n_contexts=3, replicas=1, size=32)
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
