"""Background jobs: one subprocess and one folder per job, state on disk, no daemon.

A job folder (``$BINDLAB_HOME/jobs/<job_id>/``) holds ``config.json``, ``status.json`` (written atomically, under
the manager's file lock), ``log.txt`` (the process's stdout and stderr), ``progress.json`` and ``metrics.jsonl``
(written by the runner), ``checkpoints/`` and the outputs. Any process can make a :class:`JobManager` on the same
root and see the same jobs: the app can restart and still list, follow, cancel and resume them.

There is no scheduler process. Whenever a manager lists or submits, or a runner exits, the queue is *promoted*:
jobs whose process died without saying so become ``failed`` (with the end of their log), and queued jobs start
while fewer than ``max_heavy`` heavy jobs run (``$BINDLAB_MAX_HEAVY_JOBS``, default 1: one GPU-heavy job at a
time). Each job runs as ``python -m bindlab jobs _run DIR`` in its own session, so :meth:`JobManager.cancel` can
stop the whole process group (SIGTERM, then SIGKILL after a grace period); the runner checkpoints on SIGTERM.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STATES = ("queued", "running", "done", "failed", "cancelled")
FINAL = ("done", "failed", "cancelled")
_CHILDREN: dict[int, subprocess.Popen] = {}  # processes this Python process started (polled so none stays a zombie)


def jobs_root() -> Path:
    """``$BINDLAB_HOME/jobs``."""
    from bindlab.config import home

    return home() / "jobs"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON through a temporary file and a rename, so readers never see a partial file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=2))
    tmp.replace(path)


def read_json(path: Path, default: Any = None) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return default


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a text file ('' when missing)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64_000))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _proc_start(pid: int) -> str | None:
    """Start time of a process (Linux ``/proc``), to tell a live job from a reused pid; None if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return fields[19] if len(fields) > 19 else None


def pid_alive(pid: int | None, start: str | None = None) -> bool:
    """True when ``pid`` runs (not a zombie) and, if ``start`` is given, is the same process that was started."""
    if not pid:
        return False
    child = _CHILDREN.get(pid)
    if child is not None and child.poll() is not None:
        _CHILDREN.pop(pid, None)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state in ("Z", "X"):
            return False
    except OSError:
        pass
    return start is None or _proc_start(pid) in (None, start)


def group_alive(pgid: int) -> bool:
    """True while any process of the group runs (zombies of our own children are reaped first)."""
    for pid, child in list(_CHILDREN.items()):
        if child.poll() is not None:
            _CHILDREN.pop(pid, None)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) succeeds while zombies remain; look for a live member
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(f[2]) == pgid and f[0] not in ("Z", "X"):
                return True
    return False


class JobManager:
    """Submit, list, follow, cancel and resume finetune jobs stored under ``root``.

    Args:
        root: folder of job folders (default ``$BINDLAB_HOME/jobs``).
        max_heavy: heavy jobs allowed to run at once (default ``$BINDLAB_MAX_HEAVY_JOBS`` or 1).
    """

    def __init__(self, root: str | Path | None = None, max_heavy: int | None = None) -> None:
        self.root = Path(root) if root else jobs_root()
        self.root.mkdir(parents=True, exist_ok=True)
        env = os.environ.get("BINDLAB_MAX_HEAVY_JOBS", "1")
        self.max_heavy = int(max_heavy if max_heavy is not None else (env if env.isdigit() else 1))
        if self.max_heavy < 1:
            raise ValueError(f"max_heavy must be >= 1, got {self.max_heavy}")

    # -- locking and state ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.root / ".lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def job_dir(self, job_id: str) -> Path:
        """Folder of a job; raises KeyError naming the known ids when there is none."""
        job_id = (job_id or "").strip().removeprefix("lora:").split("/")[0]
        d = self.root / job_id
        if not job_id or "/" in job_id or not (d / "status.json").exists():
            known = [s["id"] for s in self._statuses()][-5:]
            raise KeyError(f"no job {job_id!r} under {self.root}; recent jobs: {known or 'none'} "
                           "(see 'python -m bindlab jobs list')")
        return d

    def _status(self, d: Path) -> dict[str, Any]:
        return read_json(d / "status.json", {}) or {}

    def _set(self, d: Path, **changes: Any) -> dict[str, Any]:
        st = {**self._status(d), **changes}
        write_json_atomic(d / "status.json", st)
        return st

    def _statuses(self) -> list[dict[str, Any]]:
        out = [read_json(d / "status.json") for d in self.root.iterdir() if (d / "status.json").is_file()]
        return sorted((s for s in out if s), key=lambda s: (s.get("created", ""), s.get("id", "")))

    # -- lifecycle --------------------------------------------------------------------------------------------
    def submit(self, config: dict[str, Any], kind: str = "finetune") -> str:
        """Validate a finetune config, create the job folder, queue it and start it if a slot is free.

        Returns:
            The job id; the finetuned model will load as ``lora:<job_id>``.
        """
        from bindlab.encoders.base import parse_encoder_id
        from bindlab.train.finetune import FinetuneConfig

        if kind != "finetune":
            raise ValueError(f"unknown job kind {kind!r}; only 'finetune' jobs exist")
        cfg = FinetuneConfig.from_dict(config)
        parse_encoder_id(cfg.model)
        data = Path(cfg.data)
        if not (data.is_file() or (data / "triplets.jsonl").is_file()):
            raise FileNotFoundError(f"no triplets at {data}; make them with "
                                    f"'python -m bindlab generate triplets --out {data}'")
        job_id = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
        d = self.root / job_id
        d.mkdir(parents=True)
        write_json_atomic(d / "config.json", cfg.to_dict())
        write_json_atomic(d / "status.json", {
            "id": job_id, "kind": kind, "model_id": f"lora:{job_id}", "base_model": cfg.model, "state": "queued",
            "heavy": bool(cfg.heavy), "created": _now(), "started": None, "finished": None, "pid": None,
            "pid_start": None, "attempts": 0, "resume": False, "message": "waiting for a free slot"})
        self.promote()
        return job_id

    def promote(self) -> None:
        """Mark dead jobs failed, then start queued jobs (oldest first) while heavy slots are free."""
        with self._locked():
            statuses = self._statuses()
            for st in statuses:
                if st["state"] == "running" and not pid_alive(st.get("pid"), st.get("pid_start")):
                    d = self.root / st["id"]
                    fresh = self._status(d)  # the runner may have just written its final state
                    if fresh.get("state") == "running":
                        log = tail(d / "log.txt", 20)
                        st.update(self._set(d, state="failed", finished=_now(),
                                            message="the job process ended without reporting (crashed or killed)",
                                            log_tail=log))
                    else:
                        st.update(fresh)
            running_heavy = sum(1 for s in statuses if s["state"] == "running" and s.get("heavy", True))
            for st in statuses:
                if st["state"] != "queued":
                    continue
                if st.get("heavy", True) and running_heavy >= self.max_heavy:
                    continue
                self._start(self.root / st["id"], st)
                running_heavy += bool(st.get("heavy", True))

    def _start(self, d: Path, st: dict[str, Any]) -> None:
        from bindlab.config import repo_root

        cfg = read_json(d / "config.json", {})
        n = int(cfg.get("num_processes", 1) or 1)
        run = ["bindlab", "jobs", "_run", str(d)]
        cmd = ([sys.executable, "-m", "accelerate.commands.launch", "--num_processes", str(n), "--module", *run]
               if n > 1 else [sys.executable, "-m", *run])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo_root()), os.environ.get("PYTHONPATH")])),
               "PYTHONUNBUFFERED": "1", "BINDLAB_JOB_ID": st["id"]}
        with open(d / "log.txt", "a") as log:
            log.write(f"=== {_now()} start attempt {st.get('attempts', 0) + 1}: {' '.join(cmd)}\n")
            log.flush()
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    cwd=str(repo_root()), env=env, start_new_session=True)
        _CHILDREN[proc.pid] = proc
        st.update(self._set(d, state="running", pid=proc.pid, pgid=proc.pid, pid_start=_proc_start(proc.pid),
                            started=_now(), finished=None, attempts=st.get("attempts", 0) + 1,
                            message="starting"))

    def finish(self, job_dir: str | Path, state: str, message: str = "", log_tail: str | None = None) -> None:
        """Called by the runner as it exits: record the final state (unless already cancelled), then promote."""
        if state not in FINAL:
            raise ValueError(f"final state must be one of {FINAL}, got {state!r}")
        d = Path(job_dir)
        with self._locked():
            if self._status(d).get("state") != "cancelled":
                extra = {"log_tail": log_tail} if log_tail is not None else {}
                self._set(d, state=state, finished=_now(), message=message, **extra)
        self.promote()

    def cancel(self, job_id: str, grace_s: float = 5.0) -> dict[str, Any]:
        """Cancel a job: a queued one never starts; a running one gets SIGTERM (it checkpoints and exits), then
        SIGKILL after ``grace_s`` seconds if any process of its group is left. Returns the new status."""
        d = self.job_dir(job_id)
        st = self._status(d)
        if st["state"] in FINAL:
            raise ValueError(f"job {st['id']} is already {st['state']}; nothing to cancel")
        if st["state"] == "running" and st.get("pgid"):
            pgid = int(st["pgid"])
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)
            deadline = time.time() + grace_s
            while time.time() < deadline and group_alive(pgid):
                time.sleep(0.1)
            if group_alive(pgid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                deadline = time.time() + 5
                while time.time() < deadline and group_alive(pgid):
                    time.sleep(0.05)
        step = (read_json(d / "progress.json", {}) or {}).get("step", 0)
        ckpt = (d / "checkpoints" / "last.pt").exists()
        with self._locked():
            st = self._set(d, state="cancelled", finished=_now(),
                           message=f"cancelled at step {step}" + ("; last checkpoint kept" if ckpt else ""))
        self.promote()
        return st

    def resume(self, job_id: str) -> dict[str, Any]:
        """Queue a cancelled or failed job again; it continues from its last checkpoint when there is one."""
        d = self.job_dir(job_id)
        with self._locked():
            st = self._status(d)
            if st["state"] not in ("cancelled", "failed"):
                raise ValueError(f"job {st['id']} is {st['state']}; only cancelled or failed jobs can be resumed")
            st = self._set(d, state="queued", resume=True, finished=None, message="queued to resume")
        self.promote()
        return self._status(d)

    # -- reading ----------------------------------------------------------------------------------------------
    def list(self) -> list[dict[str, Any]]:
        """All jobs, oldest first, each status with its progress; promotes the queue first."""
        self.promote()
        return [{**s, "progress": read_json(self.root / s["id"] / "progress.json", {}) or {}} for s in self._statuses()]

    def show(self, job_id: str, log_lines: int = 30) -> dict[str, Any]:
        """Everything about one job: status, config, progress, metrics, LiNeS choice, result, log tail."""
        self.promote()
        d = self.job_dir(job_id)
        return {"status": self._status(d), "config": read_json(d / "config.json", {}),
                "progress": read_json(d / "progress.json", {}) or {}, "metrics": self.metrics(job_id),
                "lines": read_json(d / "lines.json"), "result": read_json(d / "result.json"),
                "log_tail": tail(d / "log.txt", log_lines), "dir": str(d)}

    def metrics(self, job_id: str) -> list[dict[str, Any]]:
        """The job's metric events (``{"step", "loss"}`` per step, ``{"step", "val_acc"}`` per evaluation)."""
        out = []
        try:
            for line in (self.job_dir(job_id) / "metrics.jsonl").read_text().splitlines():
                with contextlib.suppress(json.JSONDecodeError):
                    out.append(json.loads(line))
        except OSError:
            pass
        return out

    def log_tail(self, job_id: str, lines: int = 30) -> str:
        return tail(self.job_dir(job_id) / "log.txt", lines)

    def wait(self, job_id: str, timeout: float = 600, states: tuple[str, ...] = FINAL, poll: float = 0.2) -> dict[str, Any]:
        """Block until the job reaches one of ``states`` (promoting as it goes); raises TimeoutError."""
        deadline = time.time() + timeout
        d = self.job_dir(job_id)
        while True:
            self.promote()
            st = self._status(d)
            if st["state"] in states:
                return st
            if time.time() > deadline:
                raise TimeoutError(f"job {job_id} still {st['state']} after {timeout:.0f}s")
            time.sleep(poll)
