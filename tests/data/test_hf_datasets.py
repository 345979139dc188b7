"""Benchmarks as Hugging Face ``datasets`` folders: export, ``datasets.load_dataset``, evaluate the folder — the same
numbers as the source files; triplets and factor grids come back record for record."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from bindlab.data.files import DataError
from bindlab.data.hf_datasets import as_bindlab_path, export_dataset
from tests.cli_run import run

datasets = pytest.importorskip("datasets")


def _card_header(folder: Path) -> dict:
    import yaml

    text = (folder / "README.md").read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """A small MCQ set with images and a small Pairs set, generated as the docs show."""
    root = tmp_path_factory.mktemp("hfsets")
    run(
        "generate",
        "saber",
        "--out",
        root / "mcq",
        "--per-size",
        "4",
        "--sizes",
        "2-3",
        "--images",
        "--size",
        "48",
        "--workers",
        "1",
        "--seed",
        "2",
    )
    run(
        "generate",
        "composet",
        "--out",
        root / "pairs",
        "--scenes",
        "1",
        "--foils-per-scene",
        "15",
        "--size",
        "64",
        "--workers",
        "1",
    )
    return root


def test_mcq_with_images_round_trip_gives_the_same_numbers(sets, tmp_path):
    out = tmp_path / "mcq-hf"
    p = run("export-dataset", "--data", sets / "mcq", "--out", out)
    assert "(mcq)" in p.stdout and "1 parquet shard(s)" in p.stdout
    ds = datasets.load_dataset(str(out), split="test")
    assert ds.num_rows == 8 and isinstance(ds.features["query_image"], datasets.Image)
    assert isinstance(ds.features["candidate_images"].feature, datasets.Image)
    row = ds[0]
    assert row["query_image"].size == (48, 48) and len(row["candidate_images"]) == 4 and len(row["candidates"]) == 4
    source = [json.loads(line) for line in (sets / "mcq" / "mcq.jsonl").read_text().splitlines()]
    assert [json.loads(r) for r in ds["record"]] == source  # lossless, in order
    header = _card_header(out)
    assert header["license"] and header["size_categories"] == ["n<1K"]
    assert "multiple-choice" in header["task_categories"] and "text-to-image" in header["task_categories"]
    assert header["configs"][0]["data_files"][0] == {"split": "test", "path": "data/test-*"}
    assert header["dataset_info"]["splits"][0]["num_examples"] == 8
    body = (out / "README.md").read_text()
    assert "bindlab generate saber --out DIR --per-size 4 --sizes 2-3 --seed 2" in body and "--images --size 48" in body
    assert "## Known limits" in body and "## Citation" in body

    numbers = {}
    for name, data in (("jsonl", sets / "mcq" / "mcq.jsonl"), ("folder", out)):
        run(
            "eval",
            "mcq",
            "--data",
            data,
            "--model",
            "toy:clip",
            "--pairings",
            "tt,ii,ti",
            "--out",
            tmp_path / f"{name}.json",
            "--per-item",
            tmp_path / f"{name}.jsonl",
        )
        summary = json.loads((tmp_path / f"{name}.json").read_text())
        rows = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        numbers[name] = (
            {p: r["accuracy"] for p, r in summary["pairings"].items()},
            [(r["id"], r["pairing"], r["scores"]) for r in rows],
        )
    assert numbers["jsonl"] == numbers["folder"]
    again = as_bindlab_path(out, "mcq")
    assert again == as_bindlab_path(out, "mcq") and (again.parent / "meta.json").is_file()  # written once


def test_pairs_round_trip_gives_the_same_numbers(sets, tmp_path):
    out = export_dataset(sets / "pairs" / "pairs.jsonl", tmp_path / "pairs-hf")
    ds = datasets.load_dataset(str(out), split="test")
    assert ds.num_rows == 15 and isinstance(ds.features["foil_image"], datasets.Image)
    assert ds[0]["base_short"] and ds[0]["base_image"].size == (64, 64)
    assert _card_header(out)["task_categories"] == ["image-to-text", "text-to-image"]
    for name, data in (("jsonl", sets / "pairs" / "pairs.jsonl"), ("folder", out)):
        run("eval", "pairs", "--data", data, "--model", "toy:clip", "--out", tmp_path / f"{name}.json")
    a, b = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("jsonl", "folder"))
    assert a["overall"] == b["overall"] and a["by_edit_type"] == b["by_edit_type"]
    with pytest.raises(DataError, match="this dataset holds pairs"):
        as_bindlab_path(out, "mcq")


def test_triplets_and_a_factor_grid_come_back_record_for_record(tmp_path):
    run("generate", "triplets", "--out", tmp_path / "tr", "--n", "40", "--seed", "1")
    back = as_bindlab_path(export_dataset(tmp_path / "tr", tmp_path / "tr-hf"), "triplets")
    assert back.name == "triplets.jsonl"
    assert back.read_text().splitlines() == [
        json.dumps(json.loads(x), ensure_ascii=False)
        for x in (tmp_path / "tr" / "triplets.jsonl").read_text().splitlines()
    ]
    run(
        "generate",
        "factors",
        "--out",
        tmp_path / "grid",
        "--shapes",
        "2",
        "--hues",
        "2",
        "--patterns",
        "2",
        "--contexts",
        "6",
        "--replicas",
        "1",
        "--size",
        "32",
        "--workers",
        "1",
    )
    out = export_dataset(tmp_path / "grid", tmp_path / "grid-hf")
    assert datasets.load_dataset(str(out), split="test").num_rows == 2 * 2 * 2 * 6
    index = as_bindlab_path(out, "grid")
    rows = list(csv.DictReader(index.open()))
    assert rows == list(csv.DictReader((tmp_path / "grid" / "index.csv").open()))
    assert all((index.parent / r["image"]).read_bytes() == (tmp_path / "grid" / r["image"]).read_bytes() for r in rows)


def test_the_card_shows_copied_names_and_settings_as_text(tmp_path):
    """Issue 56, item 7: folder names and meta.json values were copied into the card's Markdown raw (HTML, links,
    images, headings)."""
    hostile = "<img src=x onerror=alert(1)> [site](http://example.com) ![p](x.png)"
    run("generate", "triplets", "--out", tmp_path / "tr", "--n", "20", "--seed", "1")
    meta_path = tmp_path / "tr" / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta.update({"seed": "1\n# Owned <script>alert(1)</script>", "template": "`x` | y |", "note": hostile})
    meta_path.write_text(json.dumps(meta))
    out = export_dataset(tmp_path / "tr", tmp_path / "tr-hf", name=f"# {hostile}")
    body = (out / "README.md").read_text().split("---\n", 2)[2]  # after the YAML header
    spans = re.findall(r"`[^`\n]*`", body)  # code spans show their text as it is: a settings span may quote it
    assert all("\n" not in s for s in spans)
    prose = re.sub(r"```.*?```", "", re.sub(r"`[^`\n]*`", "", body), flags=re.S)
    assert "<img" not in prose and "<script" not in prose and "](" not in prose.replace("\\](", "")
    headings = [line for line in body.splitlines() if line.startswith("#")]
    assert all(h.startswith(("# \\#", "## ")) for h in headings), headings
    assert "&lt;img src=x onerror=alert(1)&gt;" in body and "Owned" in body
    assert _card_header(out)["pretty_name"].startswith("# <img")  # the YAML header holds it as a quoted string


def test_refusals_say_what_to_do(sets, tmp_path, monkeypatch):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(DataError, match="holds other files; give a new or empty folder"):
        export_dataset(sets / "mcq", tmp_path / "busy")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    with pytest.raises(DataError, match="not a bindlab set"):
        export_dataset(tmp_path / "busy" / "notes.txt", tmp_path / "x")
    p = run("eval", "mcq", "--data", "hf:nobody/nothing", "--model", "bow", check=False)
    assert p.returncode == 2 and "could not fetch the dataset from the Hugging Face Hub" in p.stderr
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    from bindlab.studies.browse import McqRequest

    with pytest.raises(DataError, match="does not fetch datasets from the Hugging Face Hub"):
        McqRequest(data="hf:nobody/nothing", model="bow")


def test_the_data_pickers_offer_an_exported_folder(sets, tmp_path, monkeypatch):
    root = tmp_path / "roots"
    export_dataset(sets / "mcq", root / "shared-mcq")
    monkeypatch.setenv("BINDLAB_DATA_ROOTS", str(root))
    from bindlab.studies.datasets import list_data_sets

    assert ("roots/shared-mcq", str(root / "shared-mcq")) in list_data_sets("mcq")
    assert all(path != str(root / "shared-mcq") for _, path in list_data_sets("pairs"))
    from bindlab.studies.browse import McqRequest, run_mcq

    assert run_mcq(McqRequest(data=str(root / "shared-mcq"), model="bow")).summary["pairings"]["tt"]["n"] == 8
