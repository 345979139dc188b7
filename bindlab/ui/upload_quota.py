"""Bounds on Gradio's raw upload route (``POST /gradio_api/upload``), which stores files before any bindlab
callback runs, with no session: a per-address hourly quota and a cap on the upload folder's total size.

:class:`UploadQuota` is an ASGI middleware (it sees the request before Gradio reads a byte of it). An upload must
say its size (``Content-Length``; browsers and ``gradio_client`` do); the request is refused with 413 and one line
(its body read and dropped, never stored, so the sender sees the reason rather than a broken connection) when it
would take its client address over ``BINDLAB_UPLOAD_QUOTA_MB`` in the last hour, or the upload folder over
``BINDLAB_UPLOAD_SPACE_MB``. The client address is the ``X-Forwarded-For`` entry of the outermost trusted proxy
(:mod:`bindlab.ui.client_address`), else the connection's: a forged first hop no longer buys a fresh quota, and the
folder cap, which no header changes, still bounds the disk. Gradio's own ``delete_cache`` empties the folder by age.
The folder cap counts bindlab's own upload folders too (``$BINDLAB_HOME/uploads``): the copies stored per session
and what is unpacked from them (``uploads/<session>/.imported``, the datasets folders a zip carried), each session
of which is also held to ``BINDLAB_UPLOAD_QUOTA_MB`` when it unpacks (:func:`bindlab.data.hf_datasets.materialise`). Both limits are 0 (off)
locally and on in public mode (:func:`bindlab.config.limits`).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from bindlab.config import limits
from bindlab.ui.client_address import client_address as forwarded_client

WINDOW_S = 3600.0  # the quota is per address over the last hour
RESCAN_S = 30.0  # the folder's size is re-measured at most this often (uploads in between are added as they pass)
MIB = 1 << 20


class UploadLedger:
    """Bytes accepted per client address in the last hour, and the upload folder's size (thread-safe)."""

    def __init__(
        self, folder: str | os.PathLike, clock: Any = time.monotonic, unpacked: str | os.PathLike | None = None
    ) -> None:
        self.folder = Path(folder)
        self.unpacked = Path(unpacked) if unpacked else None  # bindlab's uploads root: stored and unpacked copies
        self.clock = clock
        self._by_address: dict[str, deque[tuple[float, int]]] = {}
        self._folder_bytes = 0
        self._scanned_at = float("-inf")
        self._lock = threading.Lock()

    def _scan(self) -> int:
        total = 0
        stack = [self.folder] + ([self.unpacked] if self.unpacked and self.unpacked != self.folder else [])
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:
                continue
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(Path(e.path))
                    elif e.is_file(follow_symlinks=False):
                        total += e.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
        return total

    def used(self, address: str) -> int:
        """Bytes ``address`` uploaded in the last hour."""
        with self._lock:
            return self._used(address, self.clock())

    def _used(self, address: str, now: float) -> int:
        entries = self._by_address.get(address)
        if not entries:
            return 0
        while entries and now - entries[0][0] > WINDOW_S:
            entries.popleft()
        if not entries:
            del self._by_address[address]
        return sum(n for _, n in entries)

    def admit(self, address: str, size: int, quota: int, space: int) -> str | None:
        """Record an upload of ``size`` bytes from ``address`` and return None, or return why it is refused."""
        with self._lock:
            now = self.clock()
            if quota and self._used(address, now) + size > quota:
                return (
                    f"upload refused: this address uploaded {self._used(address, now) / MIB:.0f} MiB in the last "
                    f"hour and may upload {quota // MIB} MiB an hour (BINDLAB_UPLOAD_QUOTA_MB); try again later"
                )
            if space:
                if now - self._scanned_at > RESCAN_S:
                    self._folder_bytes, self._scanned_at = self._scan(), now
                if self._folder_bytes + size > space:
                    return (
                        f"upload refused: the server's upload space ({space // MIB} MiB, BINDLAB_UPLOAD_SPACE_MB) "
                        "is full; uploads are removed after an hour, try again later"
                    )
            self._by_address.setdefault(address, deque()).append((now, size))
            self._folder_bytes += size
            return None


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def client_address(scope: dict[str, Any]) -> str:
    """The request's client address as the app's events read it (:func:`bindlab.ui.client_address.client_address`:
    ``X-Forwarded-For`` only as far as the trusted proxy hops)."""
    client = scope.get("client") or ("unknown", 0)
    return str(forwarded_client(_header(scope, b"x-forwarded-for"), str(client[0])))


class UploadQuota:
    """ASGI middleware: the quota and the folder cap on ``POST …/gradio_api/upload`` (see the module docstring)."""

    def __init__(self, app: Any, folder: str | os.PathLike | None = None) -> None:
        self.app = app
        if folder is None:
            from gradio.utils import get_upload_folder

            folder = get_upload_folder()
        from bindlab.config import uploads_root

        self.ledger = UploadLedger(folder, unpacked=uploads_root())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (
            scope.get("type") != "http"
            or scope.get("method") != "POST"
            or not str(scope.get("path", "")).rstrip("/").endswith("/gradio_api/upload")
        ):
            await self.app(scope, receive, send)
            return
        lim = limits()
        quota, space = lim.upload_quota_mb * MIB, lim.upload_space_mb * MIB
        if not (quota or space):
            await self.app(scope, receive, send)
            return
        length = _header(scope, b"content-length").strip()
        if not length.isdigit():
            await _drain(receive, lim.max_upload_mb * MIB + MIB)
            await _refuse(
                send, 411, "upload refused: send the upload's size (Content-Length); browsers and gradio_client do"
            )
            return
        why = self.ledger.admit(client_address(scope), int(length), quota, space)
        if why:
            await _drain(receive, lim.max_upload_mb * MIB + MIB)
            await _refuse(send, 413, why)
            return
        await self.app(scope, receive, send)


async def _drain(receive: Any, at_most: int) -> None:
    """Read and drop the refused request's body (up to ``at_most`` bytes), so the client, still sending, reads the
    413 and its reason instead of a broken connection. Nothing is stored."""
    seen = 0
    while seen <= at_most:
        message = await receive()
        if message.get("type") != "http.request":
            return
        seen += len(message.get("body", b""))
        if not message.get("more_body"):
            return


async def _refuse(send: Any, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
