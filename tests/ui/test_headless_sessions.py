"""Sessions that never open a page are capped (issue 56, item 2): 1,000 POSTs with fresh session hashes grew a public
server by 683 MB (Gradio keeps a page copy per session hash until 10,000 newer ones come). A session with a heartbeat
(a page open) is never dropped for a headless one."""

from __future__ import annotations

import asyncio
import threading

import gradio as gr
import pytest
from gradio.state_holder import StateHolder

from bindlab.ui import headless_sessions as hs


@pytest.fixture
def holder(monkeypatch):
    monkeypatch.setenv("BINDLAB_MAX_HEADLESS_SESSIONS", "10")
    original = StateHolder.update
    with gr.Blocks() as demo:
        gr.Textbox("x")
    h = StateHolder()
    h.set_blocks(demo)
    hs.install()
    yield h
    StateHolder.update = original  # this test process's other apps keep Gradio's own


def test_a_flood_of_fresh_sessions_keeps_only_the_cap_and_never_a_live_page(holder):
    live = ["page-a", "page-b"]
    for s in live:
        hs.mark_live(s)
        holder[s]
    for i in range(200):  # a script posting events with fresh session hashes
        holder[f"flood-{i}"]
    assert len(holder.session_data) == 10 + len(live)
    assert all(s in holder.session_data for s in live)
    assert list(holder.session_data)[-1] == "flood-199"  # the newest headless ones stay
    hs.forget("page-a")  # its page closed: now it is headless like the rest, and goes first
    holder["flood-200"]
    assert "page-a" not in holder.session_data and "page-b" in holder.session_data
    hs.forget("page-b")


def test_install_is_once_and_off_locally(monkeypatch):
    monkeypatch.delenv("BINDLAB_MAX_HEADLESS_SESSIONS", raising=False)
    monkeypatch.setenv("BINDLAB_PUBLIC", "0")
    assert hs.headless_cap() == 0
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    assert hs.headless_cap() == hs.PUBLIC_CAP
    monkeypatch.setenv("BINDLAB_MAX_HEADLESS_SESSIONS", "lots")
    with pytest.raises(ValueError, match="whole number"):
        hs.headless_cap()


def test_the_heartbeat_route_marks_a_session_live():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["path"])

    mw = hs.HeartbeatSeen(app)

    async def both():
        await mw({"type": "http", "method": "GET", "path": "/gradio_api/heartbeat/abc123"}, None, None)
        await mw({"type": "http", "method": "POST", "path": "/gradio_api/queue/join"}, None, None)

    # its own thread and loop: another test of this worker may have left a loop running on the main thread
    worker = threading.Thread(target=asyncio.run, args=(both(),))
    worker.start()
    worker.join(timeout=30)
    assert hs.is_live("abc123") and seen == ["/gradio_api/heartbeat/abc123", "/gradio_api/queue/join"]
    hs.forget("abc123")
    assert not hs.is_live("abc123")
