"""A hostile visitor against a public-mode app, measured: memory growth and a second visitor's wait.

Starts ``python app.py`` with ``BINDLAB_PUBLIC=1`` on a free local port (a fresh ``$BINDLAB_HOME``, the default
public data roots), drives it through ``gradio_client`` as scripted visitors would, and reports:

(a) the server's resident memory (the app process and its children, sampled every 50 ms) before and during the
    heaviest requests public mode allows: an Attention caption at the word and character caps, and a Browse score of
    an uploaded MCQ file at the upload and question caps (5,000 questions padded to ~19 MB; scored with ``bow`` so
    the figure is the file's, fast), then the window in which the same size is scored with the real model; the
    growth over the warm server (model loaded) must stay under +1 GB;
(b) a second visitor's Browse *Score* time (a small fresh file, so neither the Browse memo nor the embedding cache
    answers it) when the server is idle and while the first visitor scores the largest file with the real model;
    the ratio's target is at most 2. The second visitor waits at most ``--busy-timeout`` seconds; past that the
    ratio is reported as a lower bound;
(c) with ``--visitors N``: N heavy visitors at once and a light one (the light request's seconds, the peak);
(d) with ``--sessions N``: N visitors one after another, each keeping a Map and a Browse score of its own upload:
    the memory each active session holds (target <= +150 MB) and what is left after they all leave (<= +300 MB);
(e) with ``--flood N``: N POSTs of a page-load event, each with a fresh session hash and no page (no heartbeat), as
    a script would send them: the server's growth (target <= +200 MB).

A measurement, not a unit test: run it by hand, on the machine you deploy to, and read the numbers with the load
average it prints (a busy machine slows both sides). Exit status 1 when (a) fails, 3 when (b) or (c)
misses its target, 4 when (d) does, 5 when (e) does.

Usage::

    python scripts/hostile_check.py [--model minilm] [--json out.json]
    python scripts/hostile_check.py --visitors 10      # (c) ten heavy visitors and a light one
    python scripts/hostile_check.py --sessions 6 --model bow   # (d) memory held per session, and after they leave
    python scripts/hostile_check.py --flood 1000               # (e) fresh session hashes with no page
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GB = 1 << 30


# --- the server's memory ---------------------------------------------------------------------------------------------
def _server_pid(port: int) -> int:
    """The ``python app.py`` process listening on ``port`` (found by its environment)."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"app.py" in cmd and f"GRADIO_SERVER_PORT={port}".encode() in env:
            return int(d.name)
    raise RuntimeError(f"no app.py process for port {port}")


def _rss_tree(pid: int) -> int:
    """Resident bytes of ``pid`` and every descendant."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            status = (d / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        ppid = int(fields.get("PPid", "0").strip() or 0)
        children.setdefault(ppid, []).append(int(d.name))
        rss[int(d.name)] = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, []))
    return total


class Sampler:
    """Samples the server's resident memory every ``every_s`` seconds in a thread; ``peak`` since ``reset``."""

    def __init__(self, pid: int, every_s: float = 0.05) -> None:
        self.pid, self.every_s, self.peak = pid, every_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_tree(self.pid))
            time.sleep(self.every_s)

    def reset(self) -> int:
        self.peak = _rss_tree(self.pid)
        return self.peak

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# --- the visitors' inputs ---------------------------------------------------------------------------------------------
def max_caption(words: int, chars: int) -> str:
    """A caption at both caps: ``words`` words and at most ``chars`` characters of long rare words (many
    sub-tokens each), starting with ``red cube blue sphere`` for the bindings."""
    filler = ["zygomorph", "quixotica", "bathyscap", "chrysopra", "xanthophy", "pterodact"]
    head = ["red", "cube", "blue", "sphere"]
    size = max(1, (chars - len(" ".join(head))) // max(words - len(head), 1) - 1)  # letters per filler word
    text = " ".join([*head, *(filler[i % len(filler)][:size] for i in range(words - len(head)))])
    assert len(text.split()) == words and len(text) <= chars, (len(text.split()), len(text))
    return text


def mcq_file(folder: Path, questions: int, seed: int, target_bytes: int = 0) -> Path:
    """A generated MCQ JSONL with ``questions`` questions; each line padded (an extra field the loader keeps
    reading) so the file reaches about ``target_bytes``."""
    from bindlab.data.saber import generate_saber

    per_size = -(-questions // 9)
    qs = generate_saber(per_size=per_size, sizes=range(2, 11), seed=seed)[:questions]
    lines = [json.dumps(q.to_json()) for q in qs]
    if target_bytes:
        per_line = target_bytes // len(lines) - 1
        lines = [x[:-1] + ', "pad": "' + "x" * max(0, per_line - len(x) - 11) + '"}' for x in lines]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mcq.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _upload(client: Any, path: Path, api_name: str = "/bl_data_upload") -> str:
    """Upload ``path`` through a tab's upload widget (Browse's by default); the opaque choice it becomes."""
    from gradio_client import handle_file

    choice, _ = client.predict(handle_file(str(path)), api_name=api_name)
    return choice["value"] if isinstance(choice, dict) else choice


def _score(client: Any, data: str, model: str, timeout_s: float | None = None) -> float | None:
    """Seconds one Browse *Score* took (None: no answer within ``timeout_s``)."""
    import concurrent.futures

    t = time.perf_counter()
    job = client.submit(data, model, "tt", "all", "all", "all", 8, api_name="/browse_score")
    try:
        job.result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        return None
    return time.perf_counter() - t


# --- the run -----------------------------------------------------------------------------------------------------------
def _say(report: dict[str, Any], key: str, value: Any) -> None:
    """Record one figure and print it at once (a long run keeps what it measured if it is stopped)."""
    report[key] = value
    print(f"{key}: {json.dumps(value)}", flush=True)


def run(model: str, trials: int, memory_model: str = "bow", busy_timeout_s: float = 300.0) -> dict[str, Any]:
    """Start the app and measure (a) and (b).

    Args:
        model: the encoder of the warm-up, the caption, both visitors' scores in (b).
        trials: idle scores of the second visitor (the median is the reference).
        memory_model: the encoder of (a)'s largest-file score (default ``bow``: the file's memory, in seconds).
        busy_timeout_s: how long the second visitor waits beside the heavy score before the check gives up and
            reports the ratio as a lower bound.
    """
    from gradio_client import Client

    from bindlab.config import LIMIT_DEFAULTS
    from bindlab.speed.browser import running_app

    public = {k: v[1] for k, v in LIMIT_DEFAULTS.items()}
    work = Path(tempfile.mkdtemp(prefix="bindlab-hostile-"))
    env = {"BINDLAB_PUBLIC": "1", "BINDLAB_HOME": str(work / "home"), "BINDLAB_DATA_ROOTS": ""}
    report: dict[str, Any] = {"model": model, "cpus": os.cpu_count()}
    _say(report, "load_before", os.getloadavg())
    big = mcq_file(
        work / "big", public["max_questions"], seed=7, target_bytes=int(public["max_upload_mb"] * (1 << 20) * 0.95)
    )
    with running_app(env=env, timeout_s=300, log=work / "app.log") as (url, _, _):
        pid = _server_pid(int(url.rsplit(":", 1)[1]))
        sampler = Sampler(pid)
        # a loaded machine answers slowly: give every HTTP call minutes, not httpx's 5 s
        a, b = (Client(url, verbose=False, download_files=False, httpx_kwargs={"timeout": 600}) for _ in range(2))
        _say(report, "rss_start_mb", round(sampler.reset() / (1 << 20), 1))
        # warm: the model loaded and one small score / caption done, as any first visitor would
        _score(a, _upload(a, mcq_file(work / "warm", 20, seed=100)), model)
        a.predict(
            model,
            "later_to_earlier",
            "a red cube and a blue sphere",
            "red:cube, blue:sphere",
            0,
            "",
            api_name="/attention_text",
        )
        warm = sampler.reset() / (1 << 20)
        _say(report, "rss_warm_mb", round(warm, 1))

        # (a) the heaviest allowed caption
        caption = max_caption(public["max_caption_words"], public["max_caption_chars"])
        t = time.perf_counter()
        a.predict(model, "later_to_earlier", caption, "red:cube, blue:sphere", 0, "", api_name="/attention_text")
        _say(
            report,
            "attention_max_caption",
            {
                "words": len(caption.split()),
                "chars": len(caption),
                "seconds": round(time.perf_counter() - t, 2),
                "peak_growth_mb": round(sampler.peak / (1 << 20) - warm, 1),
            },
        )

        # (a) the largest file Browse takes, scored with the cheap encoder: its memory is the file's (parsing, the
        # questions, the rows); the model's own working memory per batch is already in the warm figure
        stored = _upload(a, big)
        sampler.reset()
        seconds = _score(a, stored, memory_model)
        _say(
            report,
            "browse_max_file",
            {
                "model": memory_model,
                "questions": public["max_questions"],
                "bytes": big.stat().st_size,
                "seconds": round(seconds or 0.0, 2),
                "peak_growth_mb": round(sampler.peak / (1 << 20) - warm, 1),
            },
        )

        # (b) the second visitor idle, then while the first visitor scores the largest file with ``model``
        idle = [_score(b, _upload(b, mcq_file(work / f"idle{i}", 20, seed=200 + i)), model) for i in range(trials)]
        _say(report, "second_visitor_idle_s", [round(x, 2) for x in idle])
        small = _upload(b, mcq_file(work / "busy", 20, seed=300))
        heavy = _upload(
            a,
            mcq_file(
                work / "big2",
                public["max_questions"],
                seed=8,
                target_bytes=int(public["max_upload_mb"] * (1 << 20) * 0.95),
            ),
        )
        sampler.reset()

        def first_visitor() -> None:
            with contextlib.suppress(Exception):  # the app is stopped under it when the second visitor gives up
                _score(a, heavy, model)

        first = threading.Thread(target=first_visitor, daemon=True)
        first.start()
        time.sleep(2.0)  # the heavy score has started
        busy = _score(b, small, model, timeout_s=busy_timeout_s)
        _say(report, "second_visitor_busy_s", [round(busy, 2)] if busy is not None else [])
        _say(report, "second_visitor_gave_up_after_s", None if busy is not None else busy_timeout_s)
        _say(report, "heavy_window_peak_growth_mb", round(sampler.peak / (1 << 20) - warm, 1))
        _say(report, "load_during", os.getloadavg())
        _say(report, "rss_after_mb", round(_rss_tree(pid) / (1 << 20), 1))
        sampler.stop()
    idle_s, busy_s = report.pop("second_visitor_idle_s"), report.pop("second_visitor_busy_s")
    gave_up = report.pop("second_visitor_gave_up_after_s")
    ratio = (busy_s[0] if busy_s else gave_up) / statistics.median(idle_s)
    report["second_visitor"] = {
        "idle_s": idle_s,
        "busy_s": busy_s,
        "gave_up_after_s": gave_up,
        "ratio": round(ratio, 2),
        "ratio_is_lower_bound": not busy_s,
    }
    _say(report, "load_after", os.getloadavg())
    return report


def run_crowd(model: str, visitors: int, light_timeout_s: float = 60.0) -> dict[str, Any]:
    """(c) ``visitors`` heavy visitors at once, each scoring the largest allowed upload with ``model`` (a fresh
    file each, so no cache answers), then a light visitor's Browse *Score* of 20 questions: its seconds (target
    <= 10 s), what each heavy visitor got (scored, or refused with "busy" at once), and the server's memory
    high-water mark (target < 4 GB)."""
    import concurrent.futures

    from gradio_client import Client

    from bindlab.config import LIMIT_DEFAULTS
    from bindlab.speed.browser import running_app

    public = {k: v[1] for k, v in LIMIT_DEFAULTS.items()}
    work = Path(tempfile.mkdtemp(prefix="bindlab-crowd-"))
    env = {"BINDLAB_PUBLIC": "1", "BINDLAB_HOME": str(work / "home"), "BINDLAB_DATA_ROOTS": ""}
    report: dict[str, Any] = {"model": model, "visitors": visitors, "cpus": os.cpu_count()}
    _say(report, "load_before", os.getloadavg())
    with running_app(env=env, timeout_s=300, log=work / "app.log") as (url, _, _):
        pid = _server_pid(int(url.rsplit(":", 1)[1]))
        sampler = Sampler(pid)

        def client(address: str) -> Any:  # each visitor from its own address, as behind a Space's proxy
            return Client(
                url,
                verbose=False,
                download_files=False,
                httpx_kwargs={"timeout": 900},
                headers={"X-Forwarded-For": address},
            )

        light = client("192.0.2.1")
        _score(light, _upload(light, mcq_file(work / "warm", 20, seed=100)), model)  # the model loaded once
        _say(report, "rss_warm_mb", round(sampler.reset() / (1 << 20), 1))
        heavy = [client(f"198.51.100.{i + 1}") for i in range(visitors)]
        files = [
            _upload(c, mcq_file(work / f"big{i}", public["max_questions"], seed=10 + i)) for i, c in enumerate(heavy)
        ]
        small = _upload(light, mcq_file(work / "light", 20, seed=300))
        sampler.reset()

        def one(c: Any, data: str) -> dict[str, Any]:
            t = time.perf_counter()
            try:
                _score(c, data, model)
                return {"outcome": "scored", "seconds": round(time.perf_counter() - t, 1)}
            except Exception as e:  # noqa: BLE001 - a refusal comes back as the client's error
                said = str(e)
                return {
                    "outcome": "busy" if "busy" in said or "already have" in said else "error",
                    "seconds": round(time.perf_counter() - t, 1),
                    "said": said[:160],
                }

        with concurrent.futures.ThreadPoolExecutor(visitors) as pool:
            futures = [pool.submit(one, c, f) for c, f in zip(heavy, files, strict=True)]
            time.sleep(3.0)  # the heavy requests have arrived
            light_s = _score(light, small, model, timeout_s=light_timeout_s)
            _say(report, "light_request_s", None if light_s is None else round(light_s, 2))
            outcomes = [f.result() for f in futures]
        _say(report, "heavy", outcomes)
        _say(report, "peak_mb", round(sampler.peak / (1 << 20), 1))
        _say(report, "load_during", os.getloadavg())
        sampler.stop()
    return report


def _steady_rss(pid: int, seconds: float = 2.0, every_s: float = 0.25) -> int:
    """The server's resident bytes once a request is over: the median of samples over ``seconds`` (not the peak)."""
    samples = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        samples.append(_rss_tree(pid))
        time.sleep(every_s)
    return int(statistics.median(samples))


def run_sessions(model: str, sessions: int, questions: int = 0, leave_wait_s: float = 90.0) -> dict[str, Any]:
    """(d) What each visitor's session keeps: ``sessions`` visitors one after another, each in its own
    ``gradio_client`` session and from its own address, upload one MCQ file of ``questions`` questions (default:
    the Map's cap) and make the heaviest per-session requests on it: a Map of all of it (PCA; UMAP adds only a
    2-D layout) and a Browse *Score*. The server's steady RSS is taken after warm-up (the model loaded, each kind of
    request made once, that visitor gone) and after each visitor; then every client closes and the RSS is sampled
    for ``leave_wait_s`` seconds while the server notices (its heartbeat fires ``demo.unload``). Targets: at most
    +150 MB per active session, and back within 300 MB of idle after the visitors left.
    """
    from gradio_client import Client

    from bindlab.speed.browser import running_app
    from bindlab.studies.map import MAX_LIMIT

    questions = questions or MAX_LIMIT
    # a home outside /tmp, as on a Space (Gradio treats the temp folder as its own)
    work = Path(tempfile.mkdtemp(prefix="bindlab-sessions-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None))
    home = work / "home"
    env = {"BINDLAB_PUBLIC": "1", "BINDLAB_HOME": str(home), "BINDLAB_DATA_ROOTS": ""}
    report: dict[str, Any] = {"model": model, "sessions": sessions, "questions": questions, "cpus": os.cpu_count()}
    _say(report, "load_before", os.getloadavg())
    data = mcq_file(work / "visitor", questions, seed=7)  # every visitor's own upload of the same file

    def visit(url: str, address: str, path: Path, limit: int) -> Any:
        c = Client(
            url,
            verbose=False,
            download_files=False,
            httpx_kwargs={"timeout": 600},
            headers={"X-Forwarded-For": address},
        )
        c.predict(_upload(c, path, "/map_data_upload"), model, [], limit, 0, "role", "pca", "", api_name="/map_make")
        _score(c, _upload(c, path), model)
        return c

    def uploads_left() -> int:
        root = home / "uploads"
        return sum(1 for d in root.iterdir() if d.is_dir()) if root.is_dir() else 0

    mb = 1 << 20
    with running_app(env=env, timeout_s=300, log=work / "app.log") as (url, _, _):
        pid = _server_pid(int(url.rsplit(":", 1)[1]))
        _say(report, "rss_start_mb", round(_steady_rss(pid) / mb, 1))
        # warm-up: the model loaded, a small Map and a Browse score made once (imports, first-use caches), by a
        # visitor who then leaves; idle is the server after that
        warm = visit(url, "192.0.2.1", mcq_file(work / "warm", 20, seed=100), 20)
        warm.close()
        time.sleep(min(leave_wait_s, 40.0))
        idle = _steady_rss(pid)
        _say(report, "rss_idle_mb", round(idle / mb, 1))
        clients, held = [], []
        for i in range(sessions):
            t = time.perf_counter()
            clients.append(visit(url, f"198.51.100.{i + 1}", data, questions))
            rss = _steady_rss(pid)
            held.append(round(rss / mb, 1))
            _say(
                report,
                f"session_{i + 1}",
                {
                    "seconds": round(time.perf_counter() - t, 1),
                    "rss_mb": held[-1],
                    "over_idle_mb": round((rss - idle) / mb, 1),
                },
            )
        _say(report, "rss_per_session_count_mb", held)
        _say(report, "mean_growth_per_session_mb", round((held[-1] - idle / mb) / sessions, 1))
        # the first visitor's figure also holds what the first large request leaves (model working memory, caches)
        _say(
            report,
            "growth_per_session_after_first_mb",
            round((held[-1] - held[0]) / (sessions - 1), 1) if sessions > 1 else None,
        )
        _say(report, "uploads_before_leaving", uploads_left())
        for c in clients:
            c.close()  # stops the heartbeat; the server sees the stream end and runs the session's unload
        t0, after = time.perf_counter(), []
        while time.perf_counter() - t0 < leave_wait_s:
            time.sleep(8.0)
            after.append([round(time.perf_counter() - t0), round(_steady_rss(pid) / mb, 1), uploads_left()])
        _say(report, "after_leaving_s_mb_uploads", after)
        _say(report, "rss_after_leaving_mb", after[-1][1])
        _say(report, "after_leaving_over_idle_mb", round(after[-1][1] - idle / mb, 1))
    _say(report, "load_after", os.getloadavg())
    return report


def run_flood(posts: int) -> dict[str, Any]:
    """(e) ``posts`` page-load events, each with a fresh session hash and no page open: the server's steady resident
    memory before and after (Gradio keeps a page copy per session; headless ones are capped, bindlab.ui
    .headless_sessions)."""
    import urllib.request
    import uuid

    from bindlab.speed.browser import running_app

    home = tempfile.mkdtemp(prefix="bindlab-flood-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None)
    report: dict[str, Any] = {"posts": posts, "load_average_at_start": os.getloadavg()}
    with running_app(env={"BINDLAB_PUBLIC": "1", "BINDLAB_HOME": home}, timeout_s=240) as (url, _, _):
        deps = json.loads(urllib.request.urlopen(url + "/config", timeout=30).read())["dependencies"]
        load = next(d for d in deps if any(t[1] == "load" for t in d.get("targets", [])))
        pid = _server_pid(int(url.rsplit(":", 1)[1]))
        idle = _steady_rss(pid)
        accepted, t0 = 0, time.perf_counter()
        for _ in range(posts):
            body = {
                "data": [""],
                "fn_index": load["id"],
                "session_hash": uuid.uuid4().hex[:11],
                "event_data": None,
                "trigger_id": None,
            }
            req = urllib.request.Request(
                url + "/gradio_api/queue/join",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            with contextlib.suppress(OSError), urllib.request.urlopen(req, timeout=30) as r:
                accepted += r.status == 200
        time.sleep(3)
        after = _steady_rss(pid)
    _say(report, "accepted", accepted)
    _say(report, "seconds", round(time.perf_counter() - t0, 1))
    _say(report, "idle_mb", round(idle / (1 << 20)))
    _say(report, "growth_mb", round((after - idle) / (1 << 20), 1))
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="minilm", help="the encoder both visitors use (default: minilm)")
    ap.add_argument("--trials", type=int, default=2, help="idle second-visitor scores (median taken)")
    ap.add_argument("--memory-model", default="bow", help="encoder of (a)'s largest-file score (default: bow)")
    ap.add_argument(
        "--busy-timeout",
        type=float,
        default=300.0,
        help="seconds the second visitor waits beside the heavy score before giving up (default 300)",
    )
    ap.add_argument("--json", help="also write the report here")
    ap.add_argument(
        "--visitors",
        type=int,
        default=0,
        help="instead: this many heavy visitors at once and a light one (check (c); default: off)",
    )
    ap.add_argument(
        "--sessions",
        type=int,
        default=0,
        help="instead: this many visitors one after another, each keeping a Map and a Browse score; "
        "memory per session and after they leave (check (d); default: off)",
    )
    ap.add_argument(
        "--questions", type=int, default=0, help="(d) questions in each visitor's file (default: the Map's cap, 2,000)"
    )
    ap.add_argument(
        "--leave-wait",
        type=float,
        default=90.0,
        help="(d) seconds the RSS is sampled after the visitors left (default 90)",
    )
    ap.add_argument(
        "--flood",
        type=int,
        default=0,
        help="instead: this many page-load POSTs with fresh session hashes and no page (check (e))",
    )
    a = ap.parse_args(argv)
    if a.flood:
        report = run_flood(a.flood)
        if a.json:
            Path(a.json).write_text(json.dumps(report, indent=2) + "\n")
        grew = report["growth_mb"]
        print(
            f"(e) {a.flood} fresh sessions with no page: {grew:+.0f} MB (target <= 200): "
            f"{'ok' if grew <= 200 else 'MISSED'}"
        )
        return 0 if grew <= 200 else 5
    if a.sessions:
        report = run_sessions(a.model, a.sessions, a.questions, a.leave_wait)
        if a.json:
            Path(a.json).write_text(json.dumps(report, indent=2) + "\n")
        growth, kept = report["mean_growth_per_session_mb"], report["after_leaving_over_idle_mb"]
        print(
            f"(d) {a.sessions} sessions: {growth:.0f} MB held per active session (target <= 150): "
            f"{'ok' if growth <= 150 else 'MISSED'}; {kept:+.0f} MB over idle {a.leave_wait:.0f} s after they left "
            f"(target <= 300): {'ok' if kept <= 300 else 'MISSED'}"
        )
        return 0 if growth <= 150 and kept <= 300 else 4
    if a.visitors:
        report = run_crowd(a.model, a.visitors)
        if a.json:
            Path(a.json).write_text(json.dumps(report, indent=2) + "\n")
        light, peak = report["light_request_s"], report["peak_mb"]
        print(
            f"(c) light request beside {a.visitors} heavy visitors: {light} s (target <= 10): "
            f"{'ok' if light is not None and light <= 10 else 'MISSED'}; server peak {peak:.0f} MB (target < 4096)"
        )
        return 0 if light is not None and light <= 10 and peak < 4096 else 3
    report = run(a.model, a.trials, a.memory_model, a.busy_timeout)
    text = json.dumps(report, indent=2)
    if a.json:
        Path(a.json).write_text(text + "\n")
    growth = max(
        report["attention_max_caption"]["peak_growth_mb"],
        report["browse_max_file"]["peak_growth_mb"],
        report["heavy_window_peak_growth_mb"],
    )
    print(f"(a) peak growth over the warm server: {growth:.0f} MB (limit 1024 MB): {'ok' if growth < 1024 else 'FAIL'}")
    ratio, bound = report["second_visitor"]["ratio"], ">= " if report["second_visitor"]["ratio_is_lower_bound"] else ""
    print(
        f"(b) second visitor's score, busy / idle: {bound}{ratio:.2f}x (target <= 2): "
        f"{'ok' if ratio <= 2 else 'MISSED'}"
    )
    print(f"load average before {report['load_before']}, after {report['load_after']} on {report['cpus']} CPUs")
    return 1 if growth >= 1024 else (3 if ratio > 2 else 0)


if __name__ == "__main__":
    sys.exit(main())
