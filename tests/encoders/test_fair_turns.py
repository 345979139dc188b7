"""Requests that embed at once take the model in turns, one batch each in arrival order (encoders.service.MODEL_TURN)."""

from __future__ import annotations

import hashlib
import threading
import time

import numpy as np
import pytest

from bindlab.encoders.cache import EmbeddingCache
from bindlab.encoders.service import MODEL_TURN, FairLock, embed_texts, fair_batch_size, in_turns


class SlowEncoder:
    """A text encoder that sleeps per call (one call = one batch) and logs which job each batch belonged to."""

    modalities = frozenset({"text"})

    def __init__(self, batch_size: int, seconds: float, log: list[str]) -> None:
        self.id = self.fingerprint = "fake:slow"
        self.batch_size, self.seconds, self.log = batch_size, seconds, log
        self.calls: list[int] = []

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        assert MODEL_TURN.waiting() >= 1  # called inside a turn
        self.calls.append(len(texts))
        time.sleep(self.seconds)
        self.log.append(texts[0].split()[0])
        vecs = np.stack(
            [
                np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8)[:8].astype(np.float32) + 1
                for t in texts
            ]
        )
        return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def test_a_short_request_interleaves_with_a_long_one(tmp_path):
    log: list[str] = []
    enc = SlowEncoder(batch_size=2, seconds=0.02, log=log)
    done: dict[str, float] = {}

    def job(name: str, n: int) -> None:
        cache = EmbeddingCache(tmp_path / f"{name}.sqlite")
        vecs = embed_texts(enc, [f"{name} text {i}" for i in range(n)], cache=cache)
        assert vecs.shape == (n, 8)
        done[name] = time.perf_counter()

    long = threading.Thread(target=job, args=("long", 80))  # 40 batches
    long.start()
    while log.count("long") < 3:  # the long job is well under way
        time.sleep(0.005)
    started = len(log)
    short = threading.Thread(target=job, args=("short", 4))  # 2 batches
    short.start()
    short.join(timeout=30)
    long.join(timeout=30)
    assert not short.is_alive() and not long.is_alive()
    assert log.count("short") == 2 and log.count("long") == 40
    first_short, last_short = (i for i, who in enumerate(log) if who == "short")
    assert first_short >= started
    assert log[first_short:last_short].count("long") <= 1  # once queued, at most one long batch between its own
    assert set(done) == {"short", "long"}
    # it finished long before the long job did, in batch order: what the turns decide. (Not compared by wall clock:
    # under load the short thread may sit unscheduled, or in its cache write, after its last batch while the long
    # job's batches run — that is the OS's scheduling, not the lock's; it once failed a clean-clone run at load 4.)
    assert last_short < len(log) - 25


def test_fair_lock_serves_in_arrival_order():
    lock, order = FairLock(), []
    lock.acquire()  # hold it while the others queue up, one by one
    threads = []
    for i in range(5):
        t = threading.Thread(target=lambda i=i: (lock.acquire(), order.append(i), lock.release()))
        t.start()
        threads.append(t)
        while lock.waiting() < i + 2:
            time.sleep(0.001)
    lock.release()
    for t in threads:
        t.join(timeout=10)
    assert order == [0, 1, 2, 3, 4]
    assert lock.waiting() == 0


def _newcomers_versus_a_busy_thread(max_skips: int) -> list[str]:
    """A thread that just had 5 turns queues first, then three fresh threads; the order they get the lock."""
    lock, order = FairLock(max_skips=max_skips, idle_reset_s=60), []
    ready, go = threading.Event(), threading.Event()

    def busy() -> None:
        for _ in range(5):
            lock.acquire()
            lock.release()
        ready.set()
        go.wait()
        lock.acquire()
        order.append("busy")
        lock.release()

    def fresh(name: str) -> None:
        lock.acquire()
        order.append(name)
        lock.release()

    threads = [threading.Thread(target=busy)]
    threads[0].start()
    ready.wait(10)
    lock.acquire()  # hold it while everyone queues up
    go.set()
    for name in ("s1", "s2", "s3"):
        while lock.waiting() < len(threads) + 1:
            time.sleep(0.001)
        threads.append(threading.Thread(target=fresh, args=(name,)))
        threads[-1].start()
    while lock.waiting() < 5:
        time.sleep(0.001)
    lock.release()
    for t in threads:
        t.join(timeout=10)
    return order


def test_fewest_recent_turns_go_first_but_nobody_starves():
    assert _newcomers_versus_a_busy_thread(max_skips=4) == ["s1", "s2", "s3", "busy"]
    assert _newcomers_versus_a_busy_thread(max_skips=2) == ["s1", "s2", "busy", "s3"]  # passed over twice: its turn


def test_in_turns_fills_rows_in_order_and_checks_counts():
    calls: list[int] = []

    def embed(items: list[int]) -> np.ndarray:
        calls.append(len(items))
        return np.array([[float(x), 1.0] for x in items])

    out = in_turns(embed, list(range(7)), batch=3)
    assert calls == [3, 3, 1] and out.dtype == np.float32
    assert out[:, 0].tolist() == list(range(7))
    with pytest.raises(RuntimeError, match="returned 1 vectors for 3 inputs"):
        in_turns(lambda items: np.ones((1, 2)), [1, 2, 3], batch=3)
    assert in_turns(embed, [], batch=3).shape == (0, 0)


def test_fair_batch_size_reads_the_encoders_own_batch():
    class Runner:
        batch_size = 16

    class WithRunner:
        runner = Runner()

    assert fair_batch_size(SlowEncoder(5, 0, [])) == 5
    assert fair_batch_size(WithRunner()) == 16
    assert fair_batch_size(object()) == 64


def test_lookups_go_in_chunks_into_one_output(tmp_path, monkeypatch):
    import bindlab.encoders.service as service

    monkeypatch.setattr(service, "LOOKUP_CHUNK", 5)
    log: list[str] = []
    enc = SlowEncoder(batch_size=3, seconds=0.0, log=log)
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    sizes: list[int] = []
    real = cache.get_or_compute
    monkeypatch.setattr(
        cache, "get_or_compute", lambda keys, compute: (sizes.append(len(keys)), real(keys, compute))[1]
    )
    texts = [f"w{i} x" for i in range(11)] + ["w0 x"]  # the last repeats the first, in another chunk
    vecs = embed_texts(enc, texts, cache=cache)
    assert sizes == [5, 5, 2]
    assert sum(enc.calls) == 11  # the repeat came from the cache
    assert max(enc.calls) <= 3
    assert vecs.dtype == np.float32 and vecs.shape == (12, 8)
    np.testing.assert_array_equal(vecs[0], vecs[11])
    monkeypatch.setattr(service, "LOOKUP_CHUNK", 10_000)  # all at once: the same vectors
    np.testing.assert_array_equal(vecs, embed_texts(enc, texts, cache=EmbeddingCache(tmp_path / "d.sqlite")))
