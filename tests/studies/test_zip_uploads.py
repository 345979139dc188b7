"""Uploads that carry images (issue 32, item 6): a .zip with a JSONL and its images becomes a set the studies
score, and what an upload must not carry — paths out, symlinks, bombs, too many entries — is refused before it is
written, leaving nothing behind."""

from __future__ import annotations

import io
import stat
import zipfile
from pathlib import Path

import pytest

from bindlab.studies import datasets
from tests.cli_run import run

SESSION = "zip-session"


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    root = tmp_path_factory.mktemp("zipsets")
    run(
        "generate",
        "saber",
        "--out",
        root / "mcq",
        "--per-size",
        "2",
        "--sizes",
        "2-3",
        "--images",
        "--size",
        "32",
        "--workers",
        "1",
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


def _zip(folder: Path, out: Path, prefix: str = "") -> Path:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                zf.write(f, prefix + f.relative_to(folder).as_posix())
        zf.writestr("__MACOSX/._mcq.jsonl", b"junk an archiver adds")
    return out


@pytest.fixture
def public(monkeypatch):
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")


def test_a_zip_with_images_becomes_a_set_the_studies_score(sets, tmp_path, public):
    from bindlab.studies.browse import McqRequest, run_mcq
    from bindlab.studies.pairs import PairsRequest, run_pairs

    stored = datasets.store_upload(_zip(sets / "mcq", tmp_path / "m.zip", prefix="my-set/"), "mcq", SESSION)
    assert stored.name == "mcq.jsonl" and (stored.parent / "images").is_dir()
    assert not (stored.parent / "__MACOSX").exists()
    label, token, path = datasets._uploads("mcq", SESSION)[-1]
    assert path == stored and label == "uploaded: mcq.jsonl + 20 images"
    value = datasets.choice_value("mcq", stored, SESSION)
    assert value == f"upload:{token}" and datasets.resolve_choice(value, SESSION, "mcq") == str(stored)
    res = run_mcq(McqRequest(data=stored, model="toy:clip", pairings=("ii", "ti")))
    assert res.summary["pairings"]["ii"]["n"] == 4

    pairs = datasets.store_upload(_zip(sets / "pairs", tmp_path / "p.zip"), "pairs", SESSION)
    assert run_pairs(PairsRequest(data=pairs, model="toy:clip")).summary["n_pairs"] == 15
    assert datasets.list_uploads("mcq", "another-session") == []  # a session sees its own uploads only


def _bad_zip(tmp_path: Path, build) -> Path:
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        build(zf)
    return path


def _symlink(zf: zipfile.ZipFile) -> None:
    info = zipfile.ZipInfo("images/q.png")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    zf.writestr(info, "/etc/passwd")
    zf.writestr("mcq.jsonl", "{}\n")


@pytest.mark.parametrize(
    "build, said",
    [
        (lambda zf: zf.writestr("../../escape.jsonl", "{}\n"), "climbs out of the zip's folder"),
        (lambda zf: zf.writestr("/abs/mcq.jsonl", "{}\n"), "absolute or Windows path"),
        (lambda zf: zf.writestr("C:\\x\\mcq.jsonl", "{}\n"), "absolute or Windows path"),
        (_symlink, "is a symbolic link"),
        (lambda zf: zf.writestr(".hidden/mcq.jsonl", "{}\n"), "is hidden or has an unusable name"),
        (
            lambda zf: zf.writestr("big.bin", b"\0" * (81 << 20)),
            "unpacks to 81 MiB; an upload may unpack to at most 80",
        ),
        (
            lambda zf: [zf.writestr(f"f{i}", b"") for i in range(datasets.ZIP_MAX_MEMBERS + 1)],
            "entries; an upload takes",
        ),
        (lambda zf: zf.writestr("notes.txt", "no data here"), r"put one MCQ JSONL file \(mcq.jsonl\) at the top"),
        (lambda zf: (zf.writestr("a.jsonl", "{}\n"), zf.writestr("b.jsonl", "{}\n")), "found 2 JSONL files there"),
        (lambda zf: None, "holds no files"),
    ],
)
def test_what_an_upload_must_not_carry_is_refused_and_nothing_is_kept(tmp_path, public, build, said):
    archive = _bad_zip(tmp_path, build)
    before = set(datasets.session_uploads(SESSION).glob("*")) if datasets.session_uploads(SESSION).exists() else set()
    with pytest.raises(ValueError, match=said) as err:
        datasets.store_upload(archive, "mcq", SESSION)
    assert "bindlab" not in str(err.value).lower() or "bindlab_max" in str(err.value).lower()  # no server path
    assert set(datasets.session_uploads(SESSION).glob("*")) == before


def test_a_zip_that_lies_about_its_sizes_is_stopped_while_writing(tmp_path, public, monkeypatch):
    monkeypatch.setattr(datasets, "ZIP_EXPANSION", 1)
    monkeypatch.setenv("BINDLAB_MAX_UPLOAD_MB", "1")
    archive = tmp_path / "liar.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("mcq.jsonl", b"\0" * (3 << 20))
    raw = bytearray(archive.read_bytes())
    entry = zipfile.ZipFile(io.BytesIO(bytes(raw))).infolist()[0]
    for at in (raw.find(b"PK\x03\x04") + 22, raw.find(b"PK\x01\x02") + 24):  # uncompressed size: local + central
        raw[at : at + 4] = (1000).to_bytes(4, "little")
    archive.write_bytes(bytes(raw))
    assert entry.file_size == 3 << 20
    with pytest.raises(ValueError, match="more than 1 MiB|cannot be unpacked"):
        datasets.store_upload(archive, "mcq", SESSION)


def test_a_grid_comes_as_one_zip(tmp_path, public):
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
    stored = datasets.store_upload(_zip(tmp_path / "grid", tmp_path / "g.zip", prefix="grid/"), "grid", SESSION)
    assert stored.is_dir() and (stored / "index.csv").is_file()
    from bindlab.data.factors import load_index

    assert len(load_index(stored).rows) == 48
    with pytest.raises(ValueError, match="upload one .zip on its own"):
        datasets.store_upload([tmp_path / "g.zip", tmp_path / "grid" / "index.csv"], "grid", SESSION)


def test_the_data_file_of_a_zip_is_named_as_a_single_upload_is(tmp_path, public):
    """A hostile data file name inside the zip does not reach the page's list as typed."""
    archive = tmp_path / "named.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("<img src=x onerror=alert(1)>.jsonl", "{}\n")
    stored = datasets.store_upload(archive, "mcq", SESSION)
    assert "<" not in stored.name and stored.is_file()
    assert datasets._uploads("mcq", SESSION)[-1][2] == stored
