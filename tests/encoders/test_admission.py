"""A fair share under load (bindlab.encoders.admission): light requests run, heavy ones are bounded per visitor and
per server and refused at once with a wait hint, and every request has a time limit."""

from __future__ import annotations

import time

import numpy as np
import pytest

from bindlab.encoders import admission, service


@pytest.fixture(autouse=True)
def _empty_line():
    """Each test starts with nobody in line for a heavy slot (the line is the process's, like the slots)."""
    admission._LINE.clear()
    admission._MISSED.clear()
    yield
    admission._LINE.clear()
    admission._MISSED.clear()


def _scope(session: str, address: str = "1.2.3.4", seconds: float = 0, heavy_items: int = 100, max_heavy: int = 2):
    return admission.request_scope((f"session:{session}", f"addr:{address}"), seconds, heavy_items, max_heavy)


def test_light_requests_are_never_refused_while_heavy_ones_run():
    with _scope("a", "10.0.0.1"):
        admission.charge(500)  # heavy: takes a slot
        with _scope("b", "10.0.0.2"):
            admission.charge(500)  # the second and last slot
            for visitor in "cdefghijk":
                with _scope(visitor, f"10.0.1.{ord(visitor)}"):
                    admission.charge(99)  # light: below the threshold, always runs
                    with pytest.raises(admission.Busy, match="try again in about"):
                        admission.charge(1)  # crossing it: no slot left
            assert admission.heavy_running() == 2
    assert admission.heavy_running() == 0  # every slot is given back


def test_heavy_requests_are_served_in_turn():
    """With the slot taken, each refused visitor gets a place in line and an estimate; the freed slot goes to the
    first in line, not to whoever asks first, and a newcomer queues behind the others."""
    with _scope("a", "10.0.0.1", max_heavy=1):
        admission.charge(100)
        for i, visitor in enumerate("bc"):
            with _scope(visitor, f"10.0.0.{i + 2}", max_heavy=1), pytest.raises(admission.Busy) as e:
                admission.charge(100)
            assert f"you are {['1st', '2nd'][i]} in line" in str(e.value) and "try again in about" in str(e.value)
    assert admission.line_length() == 2
    with _scope("d", "10.0.0.9", max_heavy=1), pytest.raises(admission.Busy, match="3rd in line"):
        admission.charge(100)  # a newcomer does not take the free slot from those waiting
    with _scope("c", "10.0.0.3", max_heavy=1), pytest.raises(admission.Busy, match="2nd in line"):
        admission.charge(100)  # not c's turn yet
    with _scope("b", "10.0.0.2", max_heavy=1):
        admission.charge(100)  # b's turn
        assert admission.line_length() == 2
    with _scope("c", "10.0.0.3", max_heavy=1):
        admission.charge(100)  # then c's, from another tab of the same address too
    assert admission.line_length() == 1 and admission.heavy_running() == 0


def test_the_wait_estimate_follows_the_running_requests_progress(monkeypatch):
    """Before any heavy request has finished, the estimate comes from the running one's progress: half of its
    announced items done after 40 s -> about 40 s left for the first in line, 80 s more for each place behind."""
    monkeypatch.setattr(admission, "_RECENT_HEAVY_S", admission.deque(maxlen=20))
    with _scope("a", "10.0.0.1", max_heavy=1) as running:
        admission.expect(1000)
        running.started -= 40.0  # it began 40 s ago
        admission.charge(500)  # and has sent half its items
        with _scope("b", "10.0.0.2", max_heavy=1), pytest.raises(admission.Busy, match="about 40 s"):
            admission.charge(100)
        with _scope("c", "10.0.0.3", max_heavy=1), pytest.raises(admission.Busy, match="about 120 s"):
            admission.charge(100)


def test_no_projection_from_a_requests_first_batches(monkeypatch):
    """Under PROJECT_AFTER of its announced items sent, a running request's pace is not projected (its first
    batches are faster than the rest): the estimate falls back to 60 s a turn."""
    monkeypatch.setattr(admission, "_RECENT_HEAVY_S", admission.deque(maxlen=20))
    with _scope("a", "10.0.0.1", max_heavy=1) as running:
        admission.expect(10_000)
        running.started -= 2.0
        admission.charge(500)  # 5 % in 2 s: would project 40 s in all
        with _scope("b", "10.0.0.2", max_heavy=1), pytest.raises(admission.Busy, match="about 60 s"):
            admission.charge(100)
        with _scope("c", "10.0.0.3", max_heavy=1), pytest.raises(admission.Busy, match="about 120 s"):
            admission.charge(100)


def test_a_request_that_sent_all_it_announced_is_about_to_finish(monkeypatch):
    """Measured under load: a request scoring after its last batch counted as unknown, so the 1st in line was told
    "about 240 s" (the typical turn) five seconds before the slot came free — and the slot waits only TURN_KEPT_S."""
    monkeypatch.setattr(admission, "_RECENT_HEAVY_S", admission.deque([240.0], maxlen=20))
    with _scope("a", "10.0.0.1", max_heavy=1) as running:
        admission.expect(1000)
        running.started -= 200.0
        admission.charge(1000)  # everything it announced is sent
        with _scope("b", "10.0.0.2", max_heavy=1), pytest.raises(admission.Busy, match="about 5 s"):
            admission.charge(100)
        with _scope("c", "10.0.0.3", max_heavy=1), pytest.raises(admission.Busy, match="about 240 s"):
            admission.charge(100)  # then one typical turn for the next place
        running.expected = 0  # a request that announced nothing is not projected: a typical turn
        with _scope("b", "10.0.0.2", max_heavy=1), pytest.raises(admission.Busy, match="about 240 s"):
            admission.charge(100)


def test_a_turn_not_taken_passes_to_the_next(monkeypatch):
    """A visitor who does not come back within TURN_KEPT_S of the slot freeing loses the turn; one whose page was
    closed loses the place."""
    monkeypatch.setattr(admission, "TURN_KEPT_S", 0.05)
    with _scope("a", "10.0.0.1", max_heavy=1):
        admission.charge(100)
        for i, visitor in enumerate("bcd"):
            with _scope(visitor, f"10.0.0.{i + 2}", max_heavy=1), pytest.raises(admission.Busy):
                admission.charge(100)
    time.sleep(0.1)  # b's turn came and went
    admission.visitor_left("session:c")  # c closed the page
    with _scope("d", "10.0.0.4", max_heavy=1):
        admission.charge(100)
    assert admission.line_length() == 0


def test_one_heavy_request_per_session_and_per_address():
    with _scope("a", "10.0.0.1"):
        admission.charge(100)
        with _scope("a", "10.0.0.9"), pytest.raises(admission.Busy, match="already have a large request"):
            admission.charge(100)
        with _scope("z", "10.0.0.1"), pytest.raises(admission.Busy, match="already have a large request"):
            admission.charge(100)  # another tab of the same client address
    with _scope("a", "10.0.0.1"):
        admission.charge(100)  # the first one ended: the visitor may run the next


def test_a_request_past_its_time_limit_stops_at_the_next_model_turn():
    calls = []

    def embed(items):
        calls.append(len(items))
        time.sleep(0.05)
        return np.ones((len(items), 3), dtype=np.float32)

    with _scope("slow", seconds=0.12, heavy_items=0):
        with pytest.raises(admission.OverTime, match="longer than its limit"):
            service.in_turns(embed, list(range(100)), batch=10)
    assert 1 < len(calls) < 10  # stopped between batches, not after all of them


def test_a_request_stops_at_the_next_model_turn_when_its_visitor_leaves():
    """The page is closed mid-request (the app's unload handler calls access.visitor_left from another thread): the
    work stops between batches; another visitor's request, and the heavy slot it held, are not affected."""
    import threading

    from bindlab.studies.access import visitor_left

    calls = []

    def embed(items):
        calls.append(len(items))
        if len(calls) == 3:
            t = threading.Thread(target=visitor_left, args=("leaver",))
            t.start()
            t.join()
        return np.ones((len(items), 3), dtype=np.float32)

    with _scope("leaver", heavy_items=10):
        with pytest.raises(admission.Left, match="was closed"):
            service.in_turns(embed, list(range(100)), batch=10)
    assert calls == [10, 10, 10]
    assert admission.heavy_running() == 0
    with _scope("stayer"):
        assert service.in_turns(embed, list(range(20)), batch=10).shape == (20, 3)


def test_outside_a_request_nothing_is_limited():
    admission.charge(10**9)
    admission.check_time()
    assert admission.heavy_running() == 0


def test_public_mode_opens_a_scope_locally_none(monkeypatch):
    from bindlab.studies.access import request_scope

    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    with request_scope("s", "1.1.1.1"):
        assert admission._SCOPE.get() is None
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    with request_scope("s", "1.1.1.1"):
        scope = admission._SCOPE.get()
        assert scope is not None and scope.max_seconds == 300 and scope.heavy_items == 2_000


def test_a_request_announced_as_heavy_is_refused_before_its_first_batch(small_benchmark):
    """Browse's scoring announces its uncached texts first (service.expect_work): with every heavy slot taken, a
    large request is refused before the model embeds anything, not after its first chunk; once its texts are cached
    the same request is light and runs."""
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.mcq import evaluate_mcq

    path, questions = small_benchmark
    calls = []

    class Counting:
        def __init__(self, inner, tag):
            self.inner, self.id = inner, f"bow-counting-{tag}"
            self.modalities, self.fingerprint = inner.modalities, f"{inner.fingerprint}|{tag}"

        def embed_texts(self, texts):
            calls.append(len(texts))
            return self.inner.embed_texts(texts)

    enc = Counting(load_encoder("bow"), time.time_ns())
    with _scope("holder", "10.0.0.1", heavy_items=100, max_heavy=1):
        admission.charge(100)  # the only heavy slot
        with _scope("big", "10.0.0.2", heavy_items=100, max_heavy=1):
            with pytest.raises(admission.Busy, match="busy with 1 large request: you are 1st in line"):
                evaluate_mcq(questions, path.parent, enc)
    assert calls == []  # refused before the first batch
    evaluate_mcq(questions, path.parent, enc)  # outside a request: embeds (and caches) everything
    calls.clear()
    admission._LINE.clear()  # big's place in line, given up
    with _scope("holder", "10.0.0.1", heavy_items=100, max_heavy=1):
        admission.charge(100)
        with _scope("big", "10.0.0.2", heavy_items=100, max_heavy=1):
            evaluate_mcq(questions, path.parent, enc)  # everything cached: light, runs
    assert calls == []


def test_browse_announces_a_large_file_from_its_line_count_before_parsing_it(small_benchmark, monkeypatch):
    """With every heavy slot taken, a Browse score of a file too large for a light request is refused before the
    file is parsed (parsing a 5,000-question upload takes seconds of the interpreter every other visitor needs)."""
    from bindlab.studies import browse

    path, _ = small_benchmark  # 54 questions: 270 texts, heavy at a threshold of 100
    parsed = []
    parse = browse.load_questions
    monkeypatch.setattr(browse, "load_questions", lambda request: parsed.append(1) or parse(request))
    with _scope("holder", "10.0.0.1", heavy_items=100, max_heavy=1):
        admission.charge(100)
        with _scope("big", "10.0.0.2", heavy_items=100, max_heavy=1):
            with pytest.raises(admission.Busy, match="busy with 1 large request: you are 1st in line"):
                browse.run_mcq(browse.McqRequest(data=path, model="bow"))
            assert parsed == []
            res = browse.run_mcq(browse.McqRequest(data=path, model="bow", limit=10))  # 50 texts: light, it runs
            assert parsed == [1] and res.summary["pairings"]["tt"]["n"] == 10


def test_a_visitor_back_after_its_turn_goes_next_once(monkeypatch):
    """Measured under load: 53 of 285 waits told to visitors 3rd in line or further were more than the slot's 90 s
    longer than the real wait (up to 363 s), so a visitor trusting one lost its turn and, asking again, went to the
    back. Now a missed turn passes to the next in line, and the late visitor, when it asks, goes next after those
    already called; a second missed turn gives the place up."""
    monkeypatch.setattr(admission, "TURN_KEPT_S", 0.05)
    with _scope("late-a", "10.0.0.1", max_heavy=1):
        admission.charge(100)
        for i, visitor in enumerate("bcd"):
            with _scope(f"late-{visitor}", f"10.0.0.{i + 2}", max_heavy=1), pytest.raises(admission.Busy):
                admission.charge(100)
    time.sleep(0.1)  # the slot came free for b, who did not ask within TURN_KEPT_S: c's turn now
    with _scope("late-e", "10.0.0.9", max_heavy=1), pytest.raises(admission.Busy, match="3rd in line"):
        admission.charge(100)  # a newcomer, behind c and d (b is away)
    with _scope("late-b", "10.0.0.2", max_heavy=1), pytest.raises(admission.Busy, match="2nd in line"):
        admission.charge(100)  # b is back: after c, whose turn it is, and before d and e
    with _scope("late-d", "10.0.0.4", max_heavy=1), pytest.raises(admission.Busy, match="3rd in line"):
        admission.charge(100)
    with _scope("late-c", "10.0.0.3", max_heavy=1):
        admission.charge(100)  # c takes its turn
    time.sleep(0.1)  # then b's turn comes again, and b misses it again: the place is given up
    with _scope("late-d", "10.0.0.4", max_heavy=1):
        admission.charge(100)
    with _scope("late-b", "10.0.0.2", max_heavy=1), pytest.raises(admission.Busy, match="2nd in line"):
        admission.charge(100)  # back to the end of the line, behind e whose turn it now is
    assert admission.line_length() == 2
