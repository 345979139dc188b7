"""The raw upload route's bounds (bindlab.ui.upload_quota): the ledger's hourly window per address and its folder
measure, with a clock the test moves."""

from __future__ import annotations

import pytest

from bindlab.ui.upload_quota import MIB, UploadLedger, client_address


def test_the_quota_is_per_address_over_the_last_hour(tmp_path):
    now = [0.0]
    ledger = UploadLedger(tmp_path, clock=lambda: now[0])
    assert ledger.admit("a", 3 * MIB, quota=4 * MIB, space=0) is None
    assert "uploaded 3 MiB in the last hour and may upload 4 MiB an hour" in ledger.admit("a", 2 * MIB, 4 * MIB, 0)
    assert ledger.admit("b", 2 * MIB, 4 * MIB, 0) is None  # another address
    now[0] = 3601.0  # an hour later the first upload no longer counts
    assert ledger.used("a") == 0 and ledger.admit("a", 4 * MIB, 4 * MIB, 0) is None


def test_the_folder_cap_counts_what_is_there_and_what_passes(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "old.bin").write_bytes(b"\0" * MIB)
    ledger = UploadLedger(tmp_path)
    assert ledger.admit("a", MIB, quota=0, space=3 * MIB) is None  # 1 MiB there + 1 MiB now
    assert "upload space (3 MiB, BINDLAB_UPLOAD_SPACE_MB) is full" in ledger.admit("b", 2 * MIB, 0, 3 * MIB)


def test_the_address_is_what_the_trusted_proxy_saw_else_the_connection(monkeypatch):
    """Behind one trusted proxy (a Space's, the public default) the client is the entry that proxy appended, the
    last one; whatever the client put before it is ignored. Locally (no proxy) it is the connection's address."""
    forged = {"headers": [(b"x-forwarded-for", b"198.51.100.4, 203.0.113.9")], "client": ("10.0.0.1", 5)}
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    assert client_address(forged) == "203.0.113.9"
    assert client_address({"headers": [], "client": ("127.0.0.1", 5)}) == "127.0.0.1"
    monkeypatch.setenv("BINDLAB_TRUSTED_PROXY_HOPS", "2")  # a CDN in front of the platform's proxy
    assert client_address(forged) == "198.51.100.4"
    monkeypatch.setenv("BINDLAB_PUBLIC", "0")
    monkeypatch.delenv("BINDLAB_TRUSTED_PROXY_HOPS")
    assert client_address(forged) == "10.0.0.1"  # locally nothing in front: the header is not believed
    monkeypatch.setenv("BINDLAB_TRUSTED_PROXY_HOPS", "nine")
    with pytest.raises(ValueError, match="whole number from 0 to 8"):
        client_address(forged)
