"""Unpacked copies count against the visitor's upload quota (issue 56, item 1): a datasets folder unpacked from an
upload (``uploads/<session>/.imported``) may take its session's folder — the uploads and earlier copies included —
at most to ``BINDLAB_UPLOAD_QUOTA_MB``; past it the unpacking is refused with one sentence and nothing is kept. The
upload route's folder cap counts those copies as well."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bindlab.data.files import DataError
from bindlab.data.hf_datasets import IMPORTED, as_bindlab_path, folder_bytes
from bindlab.studies.datasets import delete_uploads, session_uploads

MIB = 1 << 20


def _datasets_folder(folder: Path, rows: int, pad: int) -> Path:
    """A folder laid out as ``export-dataset`` writes one: ``rows`` MCQ records of ``pad`` bytes each (random, so
    neither parquet's compression nor its dictionary makes it small on disk and large decoded by accident)."""
    (folder / "bindlab").mkdir(parents=True)
    (folder / "data").mkdir()
    (folder / "bindlab" / "export.json").write_text(json.dumps({"kind": "mcq", "rows": rows}))
    records = [json.dumps({"id": f"q{i}", "pad": os.urandom(pad // 2).hex()}) for i in range(rows)]
    pq.write_table(pa.table({"record": records}), folder / "data" / "test-00000-of-00001.parquet")
    return folder


@pytest.fixture
def public(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BINDLAB_UPLOAD_QUOTA_MB", "4")
    return tmp_path


def test_an_unpacked_copy_that_would_pass_the_quota_is_refused_and_nothing_is_kept(public):
    upload = session_uploads("visitor-1") / "mcq-abc123"
    small = _datasets_folder(upload / "small", rows=4, pad=64 * 1024)  # 256 KiB decoded
    copy = as_bindlab_path(small, "mcq")
    assert copy.is_file() and session_uploads("visitor-1") / IMPORTED in copy.parents
    held = folder_bytes(session_uploads("visitor-1"))
    assert 0.4 * MIB < held < 0.7 * MIB  # the upload (stored, ~256 KiB) and its copy, both counted
    earlier = session_uploads("visitor-1") / "mcq-earlier" / "mcq.jsonl"  # an earlier upload, stored as it came
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"x" * (5 * MIB // 2))
    big = _datasets_folder(upload / "big", rows=12, pad=128 * 1024)  # 1.5 MiB decoded: over what is left of 4 MiB
    with pytest.raises(DataError, match=r"big: unpacking this upload would take your uploads over the 4 MiB quota "):
        as_bindlab_path(big, "mcq")
    copies = [p for p in (session_uploads("visitor-1") / IMPORTED).iterdir()]
    assert copies == [copy.parent], copies  # no second copy, no staging folder left
    # another visitor's folder is its own: the same set unpacks there
    other = session_uploads("visitor-2") / "mcq-def456"
    assert as_bindlab_path(_datasets_folder(other / "big", rows=12, pad=128 * 1024), "mcq").is_file()
    delete_uploads("visitor-1")
    delete_uploads("visitor-2")
    assert not (public / "home" / "uploads").exists() or not any((public / "home" / "uploads").iterdir())


def test_the_quota_holds_only_for_uploads_and_only_when_it_is_on(public, monkeypatch):
    """A datasets folder that is not an upload (the server's own, or the CLI's --data) is not a visitor's; a server
    without a quota (local use) unpacks within its other bounds only."""
    local = _datasets_folder(public / "server-set", rows=12, pad=128 * 1024)
    assert as_bindlab_path(local, "mcq").is_file()
    monkeypatch.setenv("BINDLAB_UPLOAD_QUOTA_MB", "0")
    upload = session_uploads("visitor-3") / "mcq-abc123"
    assert as_bindlab_path(_datasets_folder(upload / "big", rows=12, pad=128 * 1024), "mcq").is_file()


def test_the_upload_routes_folder_cap_counts_unpacked_copies(tmp_path):
    from bindlab.ui.upload_quota import UploadLedger

    gradio_folder, uploads = tmp_path / "gradio", tmp_path / "home" / "uploads"
    gradio_folder.mkdir(parents=True)
    copy = uploads / "visitor-1" / IMPORTED / "abc"
    copy.mkdir(parents=True)
    (copy / "mcq.jsonl").write_bytes(b"x" * 3 * MIB)
    space = 4 * MIB
    assert UploadLedger(gradio_folder).admit("a", 2 * MIB, 0, space) is None  # the copies unseen: admitted
    refused = UploadLedger(gradio_folder, unpacked=uploads).admit("a", 2 * MIB, 0, space)
    assert refused and "upload space (4 MiB, BINDLAB_UPLOAD_SPACE_MB) is full" in refused
    assert UploadLedger(gradio_folder, unpacked=uploads).admit("a", MIB // 2, 0, space) is None
