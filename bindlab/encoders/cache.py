"""Persistent embedding cache shared by runs and processes.

One SQLite file under ``$BINDLAB_HOME/cache/embeddings.sqlite`` (WAL mode: many readers, writers take turns
with a busy timeout, so two processes writing at once is safe). A row is keyed by
sha256(encoder fingerprint, modality, instruction, content hash) and stores the float32 vector with its
length and a checksum; a row whose bytes do not match its checksum is treated as missing, recomputed and
overwritten — a corrupt entry is never served. A database file that cannot be opened at all is moved aside.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
import zlib
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bindlab.config import home

_SCHEMA = """
CREATE TABLE IF NOT EXISTS emb (
    key TEXT PRIMARY KEY,
    dim INTEGER NOT NULL,
    crc INTEGER NOT NULL,
    vec BLOB NOT NULL,
    created REAL NOT NULL
)
"""
_CHUNK = 500  # keys per SELECT ... IN (...), below SQLite's variable limit


def content_key(fingerprint: str, modality: str, content: bytes | str, instruction: str = "") -> str:
    """The cache key of one item: sha256 over (fingerprint, modality, instruction, content hash)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    h = hashlib.sha256()
    for part in (fingerprint.encode(), modality.encode(), instruction.encode(), hashlib.sha256(data).digest()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


class EmbeddingCache:
    """Vectors by key in one SQLite file; use :meth:`get_or_compute` for the common path."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else home() / "cache" / "embeddings.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()  # one connection per thread (Gradio runs callbacks in threads)
        self.corrupt_seen = 0

    # -- connection -------------------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            return conn
        except sqlite3.DatabaseError:
            # Not a database (truncated, overwritten): keep it for inspection and start a fresh one.
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            self.path.replace(aside)
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            return conn

    # -- access -----------------------------------------------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Valid cached vectors for the keys that have one (missing and corrupt keys are absent)."""
        found: dict[str, np.ndarray] = {}
        conn = self._conn()
        uniq = list(dict.fromkeys(keys))
        for i in range(0, len(uniq), _CHUNK):
            chunk = uniq[i : i + _CHUNK]
            rows = conn.execute(
                f"SELECT key, dim, crc, vec FROM emb WHERE key IN ({','.join('?' * len(chunk))})", chunk
            ).fetchall()
            for key, dim, crc, blob in rows:
                if len(blob) != 4 * dim or zlib.crc32(blob) != crc:
                    self.corrupt_seen += 1
                    continue
                vec = np.frombuffer(blob, dtype=np.float32)
                if not np.all(np.isfinite(vec)):
                    self.corrupt_seen += 1
                    continue
                found[key] = vec
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """Store vectors (float32), replacing existing rows, in one transaction."""
        if not items:
            return
        now = time.time()
        rows = []
        for key, vec in items.items():
            blob = np.ascontiguousarray(vec, dtype=np.float32).tobytes()
            rows.append((key, len(blob) // 4, zlib.crc32(blob), blob, now))
        conn = self._conn()
        for attempt in range(5):
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?, ?, ?)", rows)
                conn.execute("COMMIT")
                return
            except sqlite3.OperationalError:  # "database is locked" past the timeout: back off and retry
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))

    def count(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM emb").fetchone()[0])

    def clear(self) -> None:
        self._conn().execute("DELETE FROM emb")

    def get_or_compute(
        self,
        keys: Sequence[str],
        compute: Callable[[list[int]], np.ndarray],
        progress: Callable[[int, int], None] | None = None,
    ) -> tuple[np.ndarray, int]:
        """Vectors for ``keys`` in order, computing only the missing ones.

        Args:
            keys: one cache key per item (duplicates allowed; computed once).
            compute: given the indices (into ``keys``) of missing items, returns their vectors ``(m, d)``.
            progress: optional ``(done, total)`` callback.

        Returns:
            ``(vectors (n, d) float32, number computed)``.
        """
        found = self.get_many(keys)
        missing_keys = [k for k in dict.fromkeys(keys) if k not in found]
        if missing_keys:
            first_index = {}
            for i, k in enumerate(keys):
                first_index.setdefault(k, i)
            idx = [first_index[k] for k in missing_keys]
            vecs = np.asarray(compute(idx), dtype=np.float32)
            if vecs.shape[0] != len(idx):
                raise RuntimeError(f"encoder returned {vecs.shape[0]} vectors for {len(idx)} inputs")
            new = dict(zip(missing_keys, vecs))
            self.put_many(new)
            found.update(new)
        if progress:
            progress(len(keys), len(keys))
        if not keys:
            return np.zeros((0, 0), dtype=np.float32), 0
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False), len(missing_keys)
