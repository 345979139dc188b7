"""Hub loaders of the published benchmarks, without a network: each test lays out a hub cache folder the way
``huggingface_hub`` does (``datasets--ORG--NAME/refs/<rev>`` + ``snapshots/<commit>/<repo files>``), with files in
the hub repo's own format (parquet with image-bytes columns, JSON, zip), points ``HF_HUB_CACHE`` at it, and loads
through the real ``snapshot_download`` (offline: cache only) and the real parsers. The items must equal what the
local copy in the published format gives."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bindlab.data.adapters import load_benchmark
from bindlab.data.adapters.aro import swapped_words
from bindlab.data.schema import DataError

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])  # how `datasets` stores an Image column


def hub_repo(cache: Path, repo: str, files: dict[str, bytes], revision: str = "main") -> Path:
    """Write ``files`` (repo path -> content) as a cached snapshot of dataset ``repo`` at ``revision``."""
    commit = revision if len(revision) == 40 else hashlib.sha1(f"{repo}@{revision}".encode()).hexdigest()
    base = cache / f"datasets--{repo.replace('/', '--')}"
    if len(revision) != 40:
        (base / "refs" / revision).parent.mkdir(parents=True, exist_ok=True)
        (base / "refs" / revision).write_text(commit)
    snap = base / "snapshots" / commit
    for rel, data in files.items():
        (snap / rel).parent.mkdir(parents=True, exist_ok=True)
        (snap / rel).write_bytes(data)
    return snap


def parquet_bytes(columns: dict[str, pa.Array], features: dict | None = None) -> bytes:
    table = pa.table(columns)
    if features is not None:  # the schema metadata `datasets` writes (ClassLabel names live here)
        table = table.replace_schema_metadata({b"huggingface": json.dumps({"info": {"features": features}}).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def image_cells(paths: list[Path], names: list[str] | None = None) -> pa.Array:
    return pa.array(
        [{"bytes": p.read_bytes(), "path": (names[i] if names else p.name)} for i, p in enumerate(paths)], type=IMAGE
    )


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hf-hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def _same_pairs(a, b):
    assert [p.id for p in a] == [p.id for p in b]
    for x, y in zip(a, b, strict=True):
        assert x.base.captions == y.base.captions and x.foil.captions == y.foil.captions
        assert Path(x.base.image).read_bytes() == Path(y.base.image).read_bytes()
        assert Path(x.foil.image).read_bytes() == Path(y.foil.image).read_bytes()
        assert x.edit_category == y.edit_category


def _colorswap_parquet() -> bytes:
    rows = [json.loads(line) for line in (FIX / "colorswap" / "test.jsonl").read_text().splitlines()]
    return parquet_bytes(
        {
            "id": pa.array([r["id"] for r in rows], pa.int64()),
            "image_1": image_cells([FIX / "colorswap" / r["image_1"] for r in rows]),
            "image_2": image_cells([FIX / "colorswap" / r["image_2"] for r in rows]),
            **{k: pa.array([r[k] for r in rows]) for k in ("caption_1", "caption_2", "image_source", "caption_source")},
        }
    )


def test_colorswap_hub_parquet_equals_the_json_export(hub_cache):
    hub_repo(hub_cache, "stanfordnlp/colorswap", {"data/test-00000-of-00001.parquet": _colorswap_parquet()})
    hub = load_benchmark("colorswap", source="hub")
    local = load_benchmark("colorswap", data=str(FIX / "colorswap"))
    assert hub.source == "hub:stanfordnlp/colorswap"
    _same_pairs(hub.items, local.items)
    assert len(load_benchmark("colorswap", source="hub", limit=2).items) == 2


def test_colorswap_local_parquet_file_and_folder(tmp_path):
    (tmp_path / "data").mkdir()
    f = tmp_path / "data" / "test-00000-of-00001.parquet"
    f.write_bytes(_colorswap_parquet())
    local = load_benchmark("colorswap", data=str(FIX / "colorswap"))
    _same_pairs(load_benchmark("colorswap", data=str(f)).items, local.items)
    _same_pairs(load_benchmark("colorswap", data=str(tmp_path)).items, local.items)  # a `hf download` folder
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(DataError, match="not a readable parquet file"):
        load_benchmark("colorswap", data=str(bad))


def test_colorswap_falls_back_to_the_hubs_parquet_export(hub_cache):
    """A repo whose main branch has no parquet: the refs/convert/parquet export (<config>/<split>/0000.parquet)."""
    hub_repo(hub_cache, "stanfordnlp/colorswap", {"README.md": b"gated"})
    hub_repo(
        hub_cache,
        "stanfordnlp/colorswap",
        {"default/test/0000.parquet": _colorswap_parquet()},
        revision="refs/convert/parquet",
    )
    _same_pairs(
        load_benchmark("colorswap", source="hub").items, load_benchmark("colorswap", data=str(FIX / "colorswap")).items
    )


def test_winoground_hub_jsonl_and_images_zip(hub_cache):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in sorted((FIX / "winoground" / "images").glob("*.png")):
            z.write(p, f"images/{p.name}")
    hub_repo(
        hub_cache,
        "facebook/winoground",
        {
            "data/examples.jsonl": (FIX / "winoground" / "examples.jsonl").read_bytes(),
            "data/images.zip": buf.getvalue(),
            "winoground.py": b"# script",
        },
    )
    hub = load_benchmark("winoground", source="hub")
    _same_pairs(hub.items, load_benchmark("winoground", data=str(FIX / "winoground")).items)
    assert [p.edit_type for p in hub.items] == ["Object", "Relation", "Both"]
    again = load_benchmark("winoground", source="hub")  # unpacked once, reused
    assert [p.base.image for p in again.items] == [p.base.image for p in hub.items]


def test_sugarcrepe_hub_per_split_parquet_with_class_label_names(hub_cache):
    """HuggingFaceM4/SugarCrepe_<split>: image bytes, tested_labels [caption, negative], true_label -> names."""
    for split in ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj"):
        data = json.loads((FIX / "sugarcrepe" / f"{split}.json").read_text())
        rows = [data[k] for k in sorted(data, key=int)]
        labels = [[r["caption"], r["negative_caption"]] for r in rows]
        if split == "swap_obj":  # order must not matter when the class names say which label is true
            labels = [lab[::-1] for lab in labels]
        names = sorted({t for lab in labels for t in lab})
        features = {
            "image": {"_type": "Image"},
            "tested_labels": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "Sequence"},
            "true_label": {"names": names, "_type": "ClassLabel"},
        }
        hub_repo(
            hub_cache,
            f"HuggingFaceM4/SugarCrepe_{split}",
            {
                f"data/test-00000-of-00001-{split}.parquet": parquet_bytes(
                    {
                        "image": image_cells([FIX / "sugarcrepe" / "images" / r["filename"] for r in rows]),
                        "tested_labels": pa.array(labels, pa.list_(pa.string())),
                        "true_label": pa.array([names.index(r["caption"]) for r in rows], pa.int64()),
                    },
                    features,
                )
            },
        )
    hub = load_benchmark("sugarcrepe", source="hub")
    local = load_benchmark("sugarcrepe", data=str(FIX / "sugarcrepe"))
    assert len(hub.items) == len(local.items) == 14
    for h, x in zip(hub.items, local.items, strict=True):
        assert (h.group, h.positives, h.negative, h.extra["filename"]) == (
            x.group,
            x.positives,
            x.negative,
            x.extra["filename"],
        )
        assert Path(h.image).read_bytes() == Path(x.image).read_bytes()
    assert [it.group for it in load_benchmark("sugarcrepe", source="hub", split="swap_att").items] == ["swap_att"] * 2


def test_sugarcrepe_pp_hub_json_files_text_only_unless_images_given(hub_cache):
    files = {f"data/{p.name}": p.read_bytes() for p in sorted((FIX / "sugarcrepe_pp").glob("*.json"))}
    hub_repo(hub_cache, "Aman-J/SugarCrepe_pp", {**files, "README.md": b"card"})
    hub = load_benchmark("sugarcrepe_pp", source="hub")
    local = load_benchmark("sugarcrepe_pp", data=str(FIX / "sugarcrepe_pp"))
    assert [(h.id, h.positives, h.negative) for h in hub.items] == [
        (x.id, x.positives, x.negative) for x in local.items
    ]
    assert all(h.image is None for h in hub.items)  # COCO images are not on the hub
    with_images = load_benchmark("sugarcrepe_pp", source="hub", images=str(FIX / "sugarcrepe_pp" / "images"))
    assert [h.image for h in with_images.items] == [x.image for x in local.items]


def test_aro_hub_parquet_at_pinned_revision_crops_and_attribute_pairs(hub_cache, tmp_path):
    """Two shards at the manifest's pinned commit: shard 0 stores whole images + bbox (cropped when scored),
    shard 1 stores images already cut to the box and no 'attributes' column (pair read off the captions)."""
    from PIL import Image

    rows = json.loads((FIX / "aro" / "visual_genome_attribution.json").read_text())
    rev = json.loads((ROOT / "bindlab" / "data_manifests" / "aro_vg_attribution.json").read_text())["source"]["hub"][
        "revision"
    ]
    crops = []
    for r in rows[20:]:
        p = tmp_path / f"crop-{r['image_path']}.png"
        x, y, w, h = (r[f"bbox_{c}"] for c in "xywh")
        Image.open(FIX / "aro" / "images" / r["image_path"]).crop((x, y, x + w, y + h)).save(p)
        crops.append(p)

    def shard(part, images, with_attributes):
        cols = {
            "image": image_cells(images),
            "true_caption": pa.array([r["true_caption"] for r in part]),
            "false_caption": pa.array([r["false_caption"] for r in part]),
            "bbox": pa.array([{c: float(r[f"bbox_{c}"]) for c in "xywh"} for r in part]),
        }
        if with_attributes:
            cols["attributes"] = pa.array([r["attributes"] for r in part], pa.list_(pa.string()))
        return parquet_bytes(cols)

    hub_repo(
        hub_cache,
        "gowitheflow/ARO-Visual-Attribution",
        {
            "data/test-00000-of-00002.parquet": shard(
                rows[:20], [FIX / "aro" / "images" / r["image_path"] for r in rows[:20]], True
            ),
            "data/test-00001-of-00002.parquet": shard(rows[20:], crops, False),
        },
        revision=rev,
    )
    bench = load_benchmark("aro_vg_attribution", source="hub")
    assert bench.source == f"hub:gowitheflow/ARO-Visual-Attribution@{rev}"
    assert len(bench.items) == len(rows) == 29
    assert bench.items[0].box == (8, 8, 80, 72) and bench.items[20].box is None
    assert Image.open(bench.items[20].image).size == (72, 64)
    assert [it.group for it in bench.items[:20]] == ["_".join(r["attributes"]) for r in rows[:20]]
    # without 'attributes' the pair comes from the captions, in the true caption's word order
    assert [it.group for it in bench.items[20:]] == [
        "_".join(swapped_words(r["true_caption"], r["false_caption"], "")) for r in rows[20:]
    ]
    assert swapped_words("the white house and the paved road", "the paved house and the white road", "") == (
        "white",
        "paved",
    )
    with pytest.raises(DataError, match="swapped pair"):
        swapped_words("a red cube", "a red cube on a table", "row 0")


@pytest.mark.parametrize(
    "name,repo",
    [
        ("aro_vg_attribution", "gowitheflow/ARO-Visual-Attribution"),
        ("sugarcrepe", "HuggingFaceM4/SugarCrepe_add_att"),
        ("winoground", "facebook/winoground"),
    ],
)
def test_offline_without_a_cached_copy_says_so_and_how_to_use_a_local_copy(hub_cache, name, repo):
    with pytest.raises(DataError) as e:
        load_benchmark(name, source="hub")
    msg = str(e.value)
    assert (
        "hub is unreachable" in msg
        and repo in msg
        and "--data PATH" in msg
        and f"bindlab/data_manifests/{name}.json" in msg
    )


def test_cli_eval_benchmark_from_the_hub_cache(hub_cache, tmp_path):
    """End to end: `eval benchmark --source hub` on SugarCrepe++ (text-only task) from the hub cache."""
    files = {f"data/{p.name}": p.read_bytes() for p in sorted((FIX / "sugarcrepe_pp").glob("*.json"))}
    hub_repo(hub_cache, "Aman-J/SugarCrepe_pp", files)
    out = tmp_path / "r.json"
    env = {**os.environ, "HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1"}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bindlab",
            "eval",
            "benchmark",
            "--name",
            "sugarcrepe_pp",
            "--source",
            "hub",
            "--model",
            "bow",
            "--task",
            "tot",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["n"] == 10 and res["provenance"]["settings"]["source"] == "hub:Aman-J/SugarCrepe_pp"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "bindlab",
            "eval",
            "benchmark",
            "--name",
            "aro_vg_attribution",
            "--source",
            "hub",
            "--model",
            "bow",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2 and "hub is unreachable" in r.stderr and "Traceback" not in r.stderr
