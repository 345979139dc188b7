"""Persistent embedding cache shared by runs and processes.

One SQLite file under ``$BINDLAB_HOME/cache/embeddings.sqlite`` (WAL mode: many readers, writers take turns
with a busy timeout, so two processes writing at once is safe). A row is keyed by
sha256(encoder fingerprint, modality, instruction, content hash) and stores the float32 vector with its
length and a checksum. A second table keeps, per (tokenizer fingerprint, text), the words a tokenizer does not
know (:meth:`EmbeddingCache.get_words`), so a run whose vectors are all cached tokenizes nothing. Lookups are one
query for any number of keys (``json_each``), and the rows are checked together (one checksum pass, one
vectorised finiteness test). Nothing wrong is ever served:

- a row whose bytes do not match its checksum, or whose vector is zero or not finite, is treated as missing,
  recomputed and overwritten; :meth:`EmbeddingCache.put_many` refuses zero and non-finite vectors outright;
- a database file that is not a database (garbled header) or whose pages are garbage ("database disk image is
  malformed") is moved aside as ``<name>.corrupt-<time>`` and rebuilt empty, with one warning;
- a disk that refuses writes (full, read-only, unwritable folder) gives one warning, and the vectors of the run
  are kept in memory instead, so the run still finishes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.config import home
from bindlab.encoders.base import EncoderError

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS emb (
    key TEXT PRIMARY KEY,
    dim INTEGER NOT NULL,
    crc INTEGER NOT NULL,
    vec BLOB NOT NULL,
    created REAL NOT NULL
)
"""
_WORDS_SCHEMA = """
CREATE TABLE IF NOT EXISTS unk (
    key TEXT PRIMARY KEY,
    words TEXT NOT NULL
)
"""
_CHUNK = 500  # keys per SELECT ... IN (...), below SQLite's variable limit (where json_each is missing)
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_DISK_CODES = {3, 8, 10, 13, 14}  # SQLITE_PERM, READONLY, IOERR, FULL, CANTOPEN
_CORRUPT_WORDS = ("malformed", "not a database", "file is encrypted")
_DISK_WORDS = (
    "disk is full",
    "readonly",
    "read-only",
    "unable to open",
    "disk i/o error",
    "permission denied",
    "no such file or directory",
)


class _Corrupt(Exception):
    """The database file is damaged; it must be moved aside and rebuilt."""


class _DiskRefused(Exception):
    """The disk refused a read or a write (full, read-only, cannot open); the cache falls back to memory."""


def content_key(fingerprint: str, modality: str, content: bytes | str, instruction: str = "") -> str:
    """The cache key of one item: sha256 over (fingerprint, modality, instruction, content hash)."""
    return content_keys(fingerprint, modality, [content], instruction)[0]


def content_keys(fingerprint: str, modality: str, contents: Sequence[bytes | str], instruction: str = "") -> list[str]:
    """:func:`content_key` of many items: the hash of the shared prefix (fingerprint, modality, instruction) is
    computed once and copied per item, so a warm run of 67,500 texts spends a quarter of the hashing."""
    prefix = hashlib.sha256()
    for part in (fingerprint.encode(), modality.encode(), instruction.encode()):
        prefix.update(len(part).to_bytes(8, "little"))
        prefix.update(part)
    size = (32).to_bytes(8, "little")  # the length of a sha256 digest, the last part
    sha256 = hashlib.sha256
    out = []
    for content in contents:
        data = content.encode("utf-8") if isinstance(content, str) else content
        h = prefix.copy()
        h.update(size)
        h.update(sha256(data).digest())
        out.append(h.hexdigest())
    return out


def word_keys(tokenizer_fingerprint: str, texts: Sequence[str]) -> list[str]:
    """The keys of texts' unknown-word lists (:meth:`EmbeddingCache.get_words`) for the tokenizer with
    ``tokenizer_fingerprint``: what a tokenizer does not know depends on it and the text alone."""
    return content_keys(tokenizer_fingerprint, "unknown-words", texts)


def word_set_key(tokenizer_fingerprint: str, texts: Sequence[str]) -> str:
    """The key of the unknown-word lists of a whole sequence of texts, in order (:meth:`EmbeddingCache.get_word_set`):
    one sha256 over the tokenizer fingerprint and each text's length and UTF-8 bytes, so a run over the same
    captions finds all its lists in one row instead of one lookup per caption."""
    h = hashlib.sha256()
    for part in (tokenizer_fingerprint.encode(), b"unknown-words-set"):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    for text in texts:
        data = text.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def bad_rows(vecs: np.ndarray) -> np.ndarray:
    """Indices of rows that must never be cached or served: zero norm or any non-finite value. (n, d) -> (k,)."""
    vecs = np.asarray(vecs, dtype=np.float32).reshape(len(vecs), -1)
    with np.errstate(over="ignore", invalid="ignore"):
        ok = np.all(np.isfinite(vecs), axis=1) & (np.linalg.norm(vecs, axis=1) > 0)
    return np.flatnonzero(~ok)


def valid_vector(vec: np.ndarray) -> bool:
    """One vector's :func:`bad_rows` test, without the matrix set-up (the cache runs it on every row it reads):
    finite everywhere and not all zeros (for finite values, a zero norm means every entry is zero). (d,) -> bool."""
    return bool(np.isfinite(vec).all() and vec.any())


def _classify(e: sqlite3.Error) -> type[Exception] | None:
    """_Corrupt, _DiskRefused, or None (another error, e.g. 'database is locked') for a sqlite error."""
    code = getattr(e, "sqlite_errorcode", None)
    if isinstance(code, int):
        if code & 0xFF in _CORRUPT_CODES:
            return _Corrupt
        if code & 0xFF in _DISK_CODES:
            return _DiskRefused
    text = str(e).lower()
    if any(w in text for w in _CORRUPT_WORDS):
        return _Corrupt
    if any(w in text for w in _DISK_WORDS):
        return _DiskRefused
    return None


class EmbeddingCache:
    """Vectors by key in one SQLite file; use :meth:`get_or_compute` for the common path.

    Attributes:
        corrupt_seen: rows found damaged (checksum, length, zero or non-finite vector) and treated as missing.
        rebuilt: how many times a damaged database file was moved aside and rebuilt.
        memory_only: the reason the disk refused (None while the file works); vectors then stay in memory.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else home() / "cache" / "embeddings.sqlite"
        self._local = threading.local()  # one connection per thread (Gradio runs callbacks in threads)
        self._lock = threading.Lock()
        self._generation = 0  # bumped on a rebuild, so every thread reconnects to the new file
        self._memory: dict[str, np.ndarray] = {}  # vectors of this run that the disk would not take
        self._memory_words: dict[str, list[str]] = {}  # unknown words of this run that the disk would not take
        self.corrupt_seen = 0
        self.rebuilt = 0
        self.memory_only: str | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            self._refused(e)

    # -- connection -------------------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.generation != self._generation:
            conn.close()
            conn = None
        if conn is None:
            conn = self._open()
            self._local.conn, self._local.generation = conn, self._generation
            self._local.inode = _inode(self.path)
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.Error as e:
            kind = _classify(e)
            if kind is None:
                raise
            raise kind(str(e)) from None

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            conn.execute(_WORDS_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def _drop_conn(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._local.conn = None

    def _rebuild(self, reason: str) -> None:
        """Move the damaged file (and its -wal/-shm) aside; the next connection creates a fresh database."""
        seen = getattr(self._local, "inode", None)
        self._drop_conn()
        with self._lock:
            if seen is not None and _inode(self.path) not in (seen, None):
                return  # another thread or process already rebuilt it; just reconnect
            stamp = f"corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
            aside = self.path.with_name(f"{self.path.name}.{stamp}")
            for suffix in ("", "-wal", "-shm"):
                src = Path(f"{self.path}{suffix}")
                if src.exists():
                    try:
                        src.replace(Path(f"{aside}{suffix}"))
                    except OSError as e:
                        raise _DiskRefused(str(e)) from None
            self._generation += 1
            self.rebuilt += 1
        log.warning(
            "embedding cache %s was damaged (%s); moved it aside to %s and started an empty one",
            self.path,
            reason,
            aside.name,
        )

    def _refused(self, e: BaseException) -> None:
        """Switch to memory-only for the rest of this cache's life, with one warning."""
        if self.memory_only is None:
            self.memory_only = str(e) or type(e).__name__
            log.warning(
                "embedding cache %s cannot be used (%s): embeddings of this run are kept in memory only "
                "and not saved; free disk space or point BINDLAB_HOME at a writable folder",
                self.path,
                self.memory_only,
            )

    def _db(self, op: Callable[[sqlite3.Connection], object]) -> object:
        """Run ``op`` on this thread's connection: rebuild a damaged file once; None when the disk refuses."""
        if self.memory_only is not None:
            return None
        for attempt in range(2):
            try:
                try:
                    return op(self._conn())
                except sqlite3.Error as e:
                    kind = _classify(e)
                    if kind is None:
                        raise
                    raise kind(str(e)) from None
            except _Corrupt as e:
                if attempt:
                    self._refused(e)
                    return None
                try:
                    self._rebuild(str(e))
                except _DiskRefused as e2:
                    self._refused(e2)
                    return None
            except _DiskRefused as e:
                self._refused(e)
                return None
        return None

    # -- access -----------------------------------------------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Valid cached vectors for the keys that have one (missing, damaged, zero or non-finite keys are absent).

        One query for all the keys; the rows are checked together (:func:`_decode_rows`), and each vector returned
        is a read-only row of one matrix per dimension.
        """
        uniq = list(dict.fromkeys(keys))
        found = {k: self._memory[k] for k in uniq if k in self._memory} if self._memory else {}
        rest = [k for k in uniq if k not in found] if found else uniq
        rows = self._db(lambda conn: _select(conn, "key, dim, crc, vec", "emb", rest)) if rest else []
        good, damaged = _decode_rows(rows or [])
        self.corrupt_seen += damaged
        found.update(good)
        return found

    def present(self, keys: Sequence[str]) -> set[str]:
        """The keys that have a row (their vectors are not read or checked: a cheap count of what is cached)."""
        uniq = list(dict.fromkeys(keys))
        found = {k for k in uniq if k in self._memory}
        rest = [k for k in uniq if k not in found]
        return found | {
            row[0] for row in (self._db(lambda conn: _select(conn, "key", "emb", rest)) if rest else []) or []
        }

    def get_words(self, keys: Sequence[str]) -> dict[str, list[str]]:
        """Cached unknown-word lists (see :func:`word_keys`) for the keys that have one; a row whose text is not a
        JSON list of strings is treated as missing (and counted in ``corrupt_seen``)."""
        uniq = list(dict.fromkeys(keys))
        found = {k: self._memory_words[k] for k in uniq if k in self._memory_words}
        rest = [k for k in uniq if k not in found]
        rows = self._db(lambda conn: _select(conn, "key, words", "unk", rest)) if rest else []
        for key, text in rows or []:
            try:
                words = [] if text == "[]" else json.loads(text)  # most texts have no unknown word
            except (TypeError, ValueError):
                words = None
            if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
                self.corrupt_seen += 1
                continue
            found[key] = words
        return found

    def put_words(self, items: dict[str, Sequence[str]]) -> None:
        """Store unknown-word lists by key (replacing existing rows) in one transaction; in memory when the disk
        refuses."""
        if not items:
            return
        rows = [(k, json.dumps(list(v), ensure_ascii=False)) for k, v in items.items()]
        if self._db(lambda conn: self._write(conn, rows, "INSERT OR REPLACE INTO unk VALUES (?, ?)")) is None:
            self._memory_words.update({k: list(v) for k, v in items.items()})

    def get_word_set(self, key: str, n: int) -> list[list[str]] | None:
        """The ``n`` unknown-word lists stored under ``key`` (:func:`word_set_key`), or None when there is no such
        row or it is not a JSON list of ``n`` lists of strings (then counted in ``corrupt_seen``)."""
        if key in self._memory_words:
            lists: Any = self._memory_words[key]
        else:
            rows = self._db(lambda conn: _select(conn, "key, words", "unk", [key])) or []
            if not rows:
                return None
            try:
                lists = json.loads(rows[0][1])
            except (TypeError, ValueError):
                lists = None
        if not _word_lists(lists, n):
            self.corrupt_seen += 1
            return None
        return [list(words) for words in lists] if key in self._memory_words else lists  # parsed rows are new lists

    def put_word_set(self, key: str, lists: Sequence[Sequence[str]]) -> None:
        """Store the unknown-word lists of a sequence of texts as one row under ``key`` (:func:`word_set_key`)."""
        value = [list(words) for words in lists]
        text = json.dumps(value, ensure_ascii=False)
        if self._db(lambda conn: self._write(conn, [(key, text)], "INSERT OR REPLACE INTO unk VALUES (?, ?)")) is None:
            self._memory_words[key] = value  # type: ignore[assignment]

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """Store vectors (float32), replacing existing rows, in one transaction.

        Raises:
            ValueError: when any vector is all zeros or holds a NaN/inf (nothing is stored then).
        """
        if not items:
            return
        keys = list(items)
        vecs = [np.ascontiguousarray(items[k], dtype=np.float32).ravel() for k in keys]
        bad = [k for k, v in zip(keys, vecs, strict=True) if not valid_vector(v)]
        if bad:
            raise ValueError(
                f"refusing to cache {len(bad)} zero or non-finite vector(s) (first key {bad[0][:12]}…); "
                "a broken encoder output must never be stored"
            )
        now = time.time()
        rows = []
        for key, vec in zip(keys, vecs, strict=True):
            blob = vec.tobytes()
            rows.append((key, len(blob) // 4, zlib.crc32(blob), blob, now))
        if self._db(lambda conn: self._write(conn, rows)) is None:
            self._memory.update(zip(keys, vecs, strict=True))

    @staticmethod
    def _write(
        conn: sqlite3.Connection, rows: list[tuple], sql: str = "INSERT OR REPLACE INTO emb VALUES (?, ?, ?, ?, ?)"
    ) -> bool:
        for attempt in range(5):
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(sql, rows)
                conn.execute("COMMIT")
                return True
            except sqlite3.Error as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if _classify(e) is not None or attempt == 4:
                    raise  # damaged or refused: handled by _db; locked past every retry: a real error
                time.sleep(0.2 * (attempt + 1))  # "database is locked" past the timeout: back off and retry
        return False

    def count(self) -> int:
        """Rows stored on disk plus vectors held in memory for this run."""
        n = self._db(lambda conn: int(conn.execute("SELECT COUNT(*) FROM emb").fetchone()[0]))
        return int(n or 0) + len(self._memory)

    def close(self) -> None:
        """Close this thread's connection (the last one to close folds the WAL back into the file)."""
        self._drop_conn()

    def clear(self) -> None:
        self._memory.clear()
        self._memory_words.clear()
        self._db(lambda conn: (conn.execute("DELETE FROM emb"), conn.execute("DELETE FROM unk")))

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

        Raises:
            EncoderError: when ``compute`` returns zero or non-finite vectors (the good ones are cached first).
        """
        found = self.get_many(keys)
        missing_keys = [k for k in dict.fromkeys(keys) if k not in found]
        if missing_keys:
            first_index: dict[str, int] = {}
            for i, k in enumerate(keys):
                first_index.setdefault(k, i)
            idx = [first_index[k] for k in missing_keys]
            vecs = np.asarray(compute(idx), dtype=np.float32)
            if vecs.shape[0] != len(idx):
                raise RuntimeError(f"encoder returned {vecs.shape[0]} vectors for {len(idx)} inputs")
            bad = set(bad_rows(vecs).tolist())
            new = {k: v for j, (k, v) in enumerate(zip(missing_keys, vecs, strict=True)) if j not in bad}
            self.put_many(new)
            found.update(new)
            if bad:
                first = idx[min(bad)]
                raise EncoderError(
                    f"the encoder returned {len(bad)} zero or non-finite vector(s) out of {len(idx)} "
                    f"(first: input #{first}); they were not cached or used — check the model and its settings "
                    "(batch size >= 1, dtype)"
                )
        if progress:
            progress(len(keys), len(keys))
        if not keys:
            return np.zeros((0, 0), dtype=np.float32), 0
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False), len(missing_keys)


def _word_lists(value: Any, n: int) -> bool:
    """Whether ``value`` is a list of ``n`` lists of strings (a stored :meth:`EmbeddingCache.put_word_set` row)."""
    if not isinstance(value, list) or len(value) != n or not all(type(words) is list for words in value):
        return False
    return all(type(w) is str for w in chain.from_iterable(value))


def _decode(dim: int, crc: int, blob: bytes) -> np.ndarray | None:
    """The stored vector, or None when its bytes, length or values are not a valid embedding."""
    if not isinstance(blob, bytes) or dim < 1 or len(blob) != 4 * dim or zlib.crc32(blob) != crc:
        return None
    vec = np.frombuffer(blob, dtype=np.float32)
    return vec if valid_vector(vec) else None


def _decode_rows(rows: Sequence[tuple]) -> tuple[dict[str, np.ndarray], int]:
    """``(key, dim, crc, blob)`` rows -> ``({key: vector}, rows found damaged)``: the checks of :func:`_decode`
    (length, checksum, finite and not all zeros) on all rows at once, one matrix per dimension."""
    crc32 = zlib.crc32
    by_dim: dict[int, list[tuple[str, bytes]]] = {}
    damaged = 0
    for key, dim, crc, blob in rows:
        if (
            isinstance(blob, bytes)
            and isinstance(dim, int)
            and dim >= 1
            and len(blob) == 4 * dim
            and crc32(blob) == crc
        ):
            by_dim.setdefault(dim, []).append((key, blob))
        else:
            damaged += 1
    found: dict[str, np.ndarray] = {}
    for dim, part in by_dim.items():
        mat = np.frombuffer(b"".join(blob for _, blob in part), dtype=np.float32).reshape(len(part), dim)
        with np.errstate(over="ignore", invalid="ignore"):
            ok = np.isfinite(mat).all(axis=1) & mat.any(axis=1)
        damaged += int((~ok).sum())
        found.update((key, mat[i]) for i, (key, _) in enumerate(part) if ok[i])
    return found, damaged


def _select(conn: sqlite3.Connection, columns: str, table: str, keys: list[str]) -> list[tuple]:
    """Rows of ``table`` for ``keys``: one query with the keys as one JSON parameter (``json_each``); chunks of
    :data:`_CHUNK` bound keys where SQLite lacks JSON functions."""
    if _HAS_JSON:
        return conn.execute(
            f"SELECT {columns} FROM {table} WHERE key IN (SELECT value FROM json_each(?))", (json.dumps(keys),)
        ).fetchall()
    rows: list[tuple] = []
    for i in range(0, len(keys), _CHUNK):
        chunk = keys[i : i + _CHUNK]
        rows += conn.execute(
            f"SELECT {columns} FROM {table} WHERE key IN ({','.join('?' * len(chunk))})", chunk
        ).fetchall()
    return rows


def _json_functions() -> bool:
    """Whether this SQLite has ``json_each`` (built in since 3.38, and in most earlier builds)."""
    try:
        sqlite3.connect(":memory:").execute("SELECT value FROM json_each('[1]')").fetchall()
    except sqlite3.Error:
        return False
    return True


_HAS_JSON = _json_functions()


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None
