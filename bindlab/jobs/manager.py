"""Background jobs: one subprocess and one folder per job, state on disk, no daemon.

A job folder (``$BINDLAB_HOME/jobs/<job_id>/``) holds ``config.json``, ``status.json`` (written atomically, under
the manager's file lock), ``log.txt`` (the process's stdout and stderr), ``progress.json`` and ``metrics.jsonl``
(written by the runner), ``checkpoints/`` and the outputs. Any process can make a :class:`JobManager` on the same
root and see the same jobs: the app can restart and still list, follow, cancel and resume them.

There is no scheduler process. Whenever a manager lists or submits, or a runner exits, the queue is *promoted*:
jobs whose process died without saying so become ``failed`` (with the end of their log), and queued jobs start
while fewer than ``max_heavy`` heavy jobs run (``$BINDLAB_MAX_HEAVY_JOBS``, default 1: one GPU-heavy job at a
time). The queue is served in turn, not first come first served (:func:`fair_order`): a visitor's next job waits
behind every other visitor's job that has fewer of its own visitor's jobs ahead, so ten visitors with one job
each start one after another however many jobs the first of them queued. A queued job's view says its place and
when it should start (:func:`queue_estimates`: from the running jobs' progress and the recent jobs' run times). Each job runs as ``python -m bindlab jobs _run DIR`` in its own session, so :meth:`JobManager.cancel` can
stop the whole process group (SIGTERM, then SIGKILL after a grace period); the runner checkpoints on SIGTERM.

Every job has an owner: a session id or a name passed to :class:`JobManager`, else the local owner
(``local:<OS user>``, what the CLI uses). A manager sees, cancels and resumes only its owner's jobs; another
owner's job reads exactly like a job that does not exist. The local owner outside public mode (or ``admin=True``)
sees all. The caps of :func:`bindlab.config.limits` hold for every job, walkthrough finetunes included: running
jobs per owner and on the server (enforced when the queue is promoted), queued jobs per owner and on the server,
steps and epochs (refused in :meth:`JobManager.submit` before anything is queued), and wall-clock seconds (a
job past the cap gets SIGTERM and can be resumed; its process group gets SIGKILL if still alive
:data:`KILL_GRACE_S` seconds later). A failed job's status carries a one-line ``message``; its
traceback stays in ``log.txt`` on the server and reaches a page only through a manager made with
``show_logs=True`` (the admin's default).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import getpass
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bindlab.config import jobs_root, limits, public_mode

STATES = ("queued", "running", "done", "failed", "cancelled")
FINAL = ("done", "failed", "cancelled")
_CHILDREN: dict[int, subprocess.Popen] = {}  # processes this Python process started (polled so none stays a zombie)
_SERVER_FIELDS = (
    "pid",
    "pgid",
    "pid_start",
    "log_tail",
    "dir",
    "kill_after",
)  # never shown to a page without show_logs
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[/\\][^/\\\s'\"]+){2,}")
# Seconds a job stopped for its time cap has, after SIGTERM, to checkpoint and exit before its process group gets
# SIGKILL (a process that ignores SIGTERM or hangs must not keep its slot's memory and CPU).
KILL_GRACE_S = 30.0


def visitor_key(st: dict[str, Any]) -> str:
    """Who a job is served for in turn: its client address when the page gave one (however many sessions or owner
    tokens it opened), else its owner."""
    return str(st.get("address") or st.get("owner") or local_owner())


TURN_WINDOW_S = 3600.0  # jobs started this recently still count as the visitor's turns taken


def fair_order(statuses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The queued jobs in the order they start: by turn — how many of the same visitor's jobs run, ran (started in
    the last :data:`TURN_WINDOW_S` seconds) or wait ahead of it (:func:`visitor_key`) — then oldest first. A
    visitor's first job goes before anyone's second, and one whose job just ran waits behind those still waiting."""
    now = _dt.datetime.now(_dt.UTC)
    ahead: dict[str, int] = {}
    for st in statuses:
        if st.get("state") == "queued" or not st.get("started"):
            continue
        try:
            recent = (now - _dt.datetime.fromisoformat(st["started"])).total_seconds() <= TURN_WINDOW_S
        except (TypeError, ValueError):
            recent = st.get("state") == "running"
        if recent or st.get("state") == "running":
            ahead[visitor_key(st)] = ahead.get(visitor_key(st), 0) + 1
    keyed = []
    for order, st in enumerate(statuses):  # statuses come oldest first
        if st.get("state") != "queued":
            continue
        key = visitor_key(st)
        keyed.append((ahead.get(key, 0), order, st))
        ahead[key] = ahead.get(key, 0) + 1
    return [st for _, _, st in sorted(keyed, key=lambda x: x[:2])]


DEFAULT_JOB_S = 300.0  # a job's run time before any job on this server finished (the estimate's first guess)


def typical_run_s(statuses: list[dict[str, Any]], cap_s: int) -> float:
    """Seconds a job usually runs here: the median of the last ten finished jobs' run times (start to end), else
    :data:`DEFAULT_JOB_S`; never above the time cap ``cap_s`` (0: none)."""
    spans = []
    for st in statuses[::-1]:
        if st.get("state") in FINAL and st.get("started") and st.get("finished"):
            with contextlib.suppress(TypeError, ValueError):
                a, b = (_dt.datetime.fromisoformat(st[k]) for k in ("started", "finished"))
                spans.append(max((b - a).total_seconds(), 1.0))
        if len(spans) == 10:
            break
    typical = sorted(spans)[len(spans) // 2] if spans else DEFAULT_JOB_S
    return min(typical, cap_s) if cap_s else typical


def queue_estimates(
    statuses: list[dict[str, Any]], slots: int, cap_s: int, progress: dict[str, dict[str, Any]] | None = None
) -> dict[str, tuple[int, float]]:
    """Each queued job's place (1 = next) and the seconds until it should start: the running jobs end when their
    progress says (``eta_s``) or after a typical run (:func:`typical_run_s`), within the time cap; then the queue,
    in :func:`fair_order`, fills the ``slots`` that free up, each job taking a typical run.

    Args:
        statuses: every job's status, oldest first.
        slots: jobs that run at once (the smaller of the heavy slots and the server's running cap).
        cap_s: the time cap of one job in seconds (0: none).
        progress: ``progress.json`` per running job id, when read.
    """
    import heapq

    now = _dt.datetime.now(_dt.UTC)
    typical = typical_run_s(statuses, cap_s)
    free: list[float] = []
    for st in statuses:
        if st.get("state") != "running":
            continue
        try:
            elapsed = (now - _dt.datetime.fromisoformat(st["started"])).total_seconds()
        except (KeyError, TypeError, ValueError):
            elapsed = 0.0
        eta = ((progress or {}).get(st.get("id", "")) or {}).get("eta_s")
        left = float(eta) if isinstance(eta, int | float) else max(typical - elapsed, 0.0)
        free.append(min(left, max(cap_s - elapsed, 0.0)) if cap_s else left)
    free = sorted(free)[: max(slots, 1)]
    free += [0.0] * (max(slots, 1) - len(free))
    heapq.heapify(free)
    out: dict[str, tuple[int, float]] = {}
    for place, st in enumerate(fair_order(statuses), start=1):
        start = heapq.heappop(free)
        out[st["id"]] = (place, start)
        heapq.heappush(free, start + typical)
    return out


def in_words(seconds: float) -> str:
    """A wait in words: ``about 40 s``, ``about 4 min``, ``about 1 h 5 min``."""
    s = max(round(seconds), 1)
    if s < 90:
        return f"about {s} s"
    hours, minutes = divmod(round(s / 60), 60)
    return f"about {hours} h {minutes} min" if hours else f"about {minutes} min"


def waiting_message(place: int, length: int, starts_in_s: float) -> str:
    """What a queued job says: ``waiting: 2nd of 5 in the queue; starts in about 4 min``."""
    nth = f"{place}{'th' if 10 <= place % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(place % 10, 'th')}"
    when = "as soon as a slot is free" if starts_in_s < 1 else f"in {in_words(starts_in_s)}"
    return f"waiting: {nth} of {length} in the queue; starts {when} (jobs run in turn, one visitor's each)"


def queue_reserve(max_queued: int) -> int:
    """Queue places kept for visitors with no job yet: a quarter of the queue, at least one (none when the queue has
    a single place)."""
    return max(1, max_queued // 4) if max_queued > 1 else 0


def local_owner() -> str:
    """The owner of jobs started from this machine's CLI: ``local:<OS user>``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return f"local:{user}"


def one_line(text: str, limit: int = 240, hide_paths: bool = False) -> str:
    """The first non-empty line of ``text``, at most ``limit`` characters; server paths become their last name."""
    line = next((x.strip() for x in str(text or "").splitlines() if x.strip()), "")
    if hide_paths:
        line = _PATH.sub(lambda m: "…/" + re.split(r"[/\\]", m.group(0))[-1], line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


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


def live_message(status: dict[str, Any], progress: dict[str, Any] | None) -> str:
    """The message of a job as its progress tells it: a running job that has reported progress since it (re)started
    says its phase and step (``training: step 87/160``), never the ``starting`` written when its process began.

    Args:
        status: the job's ``status.json``.
        progress: its ``progress.json`` (``phase``, ``step``, ``total_steps``, ``updated`` in epoch seconds).

    Returns:
        the message to show; the status's own message for a job that is not running or has not reported yet.
    """
    message = str(status.get("message") or "")
    if status.get("state") != "running" or not progress or progress.get("step") is None:
        return message
    step, total = progress.get("step") or 0, progress.get("total_steps") or "?"
    try:
        started = _dt.datetime.fromisoformat(status["started"]).timestamp() if status.get("started") else None
    except (TypeError, ValueError):
        started = None
    if started is not None and float(progress.get("updated") or 0.0) < started - 1.0:  # a previous attempt's report
        return f"starting (resuming after step {step}/{total})"
    phase = progress.get("phase") or "training"
    return f"{phase}: step {step}/{total}" if step else phase  # "loading", "baseline" before the first step


class JobLimitError(ValueError):
    """A job refused because of a cap (jobs per session or on the server, steps, epochs); the message says which."""


MAX_PROCESSES_ENV = "BINDLAB_MAX_JOB_PROCESSES"  # processes one job may start (data parallel), default 8


def check_processes(n: int) -> None:
    """Refuse a job asking for more processes than ``BINDLAB_MAX_JOB_PROCESSES`` (default 8) allows."""
    raw = os.environ.get(MAX_PROCESSES_ENV, "").strip()
    cap = int(raw) if raw.isdigit() else 8
    if n > cap:
        raise JobLimitError(
            f"num_processes {n} is over this server's cap of {cap} ({MAX_PROCESSES_ENV}); use at "
            f"most {cap} here, and for more run the job elsewhere ('jobs export-script ID --nproc {n}')"
        )


def launch_command(job_dir: Path, num_processes: int = 1, python: str | None = None) -> list[str]:
    """The command that runs a job: ``python -m bindlab jobs _run DIR``, or for N > 1 processes the same module
    under ``torchrun --standalone`` (a free rendezvous port, so jobs and tests never collide). Every process is in
    the job's one process group, so a cancel (killpg) reaches every rank."""
    py = python or sys.executable
    run = ["bindlab", "jobs", "_run", str(job_dir)]
    if num_processes <= 1:
        return [py, "-m", *run]
    return [py, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(num_processes), "-m", *run]


def planned_steps(epochs: int, max_steps: int, n_train: int, batch_size: int) -> int:
    """The optimizer steps a job will run: ``epochs * ceil(n_train / batch_size)``, at most ``max_steps`` when it is
    set (0 = no explicit cap) — :func:`bindlab.train.finetune.plan_steps` before the job exists."""
    total = epochs * -(-max(n_train, 0) // max(batch_size, 1))
    return min(total, max_steps) if max_steps else total


def check_training_caps(
    epochs: int, max_steps: int, lim: Any = None, n_train: int | None = None, batch_size: int | None = None
) -> None:
    """Refuse epochs or a step count over the caps (``BINDLAB_MAX_EPOCHS``, ``BINDLAB_MAX_STEPS``; 0 = no cap).

    The step cap holds for the steps the job will run: ``max_steps`` when set, else (``max_steps`` = 0, "no
    explicit cap") epochs × steps per epoch, when ``n_train`` (train rows) and ``batch_size`` are given. Without
    them, a job without ``max_steps`` is still cut at ``BINDLAB_MAX_STEPS`` by its runner.

    Raises:
        JobLimitError: naming the value, the cap and its environment variable.
    """
    lim = lim or limits()
    if lim.max_epochs and epochs > lim.max_epochs:
        raise JobLimitError(
            f"epochs={epochs} is over the cap of {lim.max_epochs} (BINDLAB_MAX_EPOCHS); use fewer epochs or max_steps"
        )
    if lim.max_steps and max_steps > lim.max_steps:
        raise JobLimitError(
            f"max_steps={max_steps} is over the cap of {lim.max_steps} (BINDLAB_MAX_STEPS); use fewer steps"
        )
    if lim.max_steps and not max_steps and n_train is not None and batch_size:
        total = planned_steps(epochs, 0, n_train, batch_size)
        if total > lim.max_steps:
            raise JobLimitError(
                f"max_steps=0 (no cap) means epochs={epochs} x {total // epochs:,} steps per epoch ({n_train:,} "
                f"train rows, batch size {batch_size}) = {total:,} steps, over the cap of {lim.max_steps:,} "
                f"(BINDLAB_MAX_STEPS); set max_steps to at most {lim.max_steps:,}, or use fewer epochs or a "
                "larger batch"
            )


class JobManager:
    """Submit, list, follow, cancel and resume finetune jobs stored under ``root``, as one owner.

    Args:
        root: folder of job folders (default ``$BINDLAB_HOME/jobs``).
        max_heavy: heavy jobs allowed to run at once (default ``$BINDLAB_MAX_HEAVY_JOBS`` or 1).
        owner: whose jobs these are: a session id (``session:<hash>``) or a name; None = the local owner
            (:func:`local_owner`), which is what the CLI is.
        admin: see and touch every owner's jobs; default: True for the local owner outside public mode.
        show_logs: include server-side details (log tail, pid, job folder) in what :meth:`show`, :meth:`list` and
            :meth:`wait` return; default: True for the local owner and for an admin. A page gets a manager
            without them: a failed job then shows its one-line ``error`` only.
        address: the client address new jobs come from (a hash, e.g. ``addr:<hex>``); a page passes it so that
            one address holds at most ``max_jobs_per_session + max_queued_per_session`` live jobs, however many
            sessions or owner tokens it opens. None: not counted (the CLI).
    """

    def __init__(
        self,
        root: str | Path | None = None,
        max_heavy: int | None = None,
        owner: str | None = None,
        admin: bool | None = None,
        show_logs: bool | None = None,
        address: str | None = None,
    ) -> None:
        self.root = Path(root) if root else jobs_root()
        self.root.mkdir(parents=True, exist_ok=True)
        env = os.environ.get("BINDLAB_MAX_HEAVY_JOBS", "1")
        self.max_heavy = int(max_heavy if max_heavy is not None else (env if env.isdigit() else 1))
        if self.max_heavy < 1:
            raise ValueError(f"max_heavy must be >= 1, got {self.max_heavy}")
        if owner is not None and (not isinstance(owner, str) or not owner.strip() or len(owner) > 200):
            raise ValueError(f"owner must be a non-empty name of at most 200 characters, got {owner!r}")
        self.owner = owner.strip() if owner else local_owner()
        self.admin = bool(admin) if admin is not None else (owner is None and not public_mode())
        self.show_logs = bool(show_logs) if show_logs is not None else (owner is None or self.admin)
        self.address = str(address).strip()[:100] if address and str(address).strip() else None

    # -- locking and state ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.root / ".lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _mine(self, st: dict[str, Any]) -> bool:
        """True when this manager may see and touch the job (its owner's, or any for an admin)."""
        return self.admin or st.get("owner", local_owner()) == self.owner

    def job_dir(self, job_id: str) -> Path:
        """Folder of one of this owner's jobs; raises KeyError naming the owner's recent ids when there is none.

        Another owner's job gets exactly the message of a job that does not exist.
        """
        job_id = str(job_id or "").strip().removeprefix("lora:").split("/")[0]
        d = self.root / job_id
        if (
            not re.fullmatch(r"[\w-][\w.-]{0,79}", job_id)
            or not (d / "status.json").is_file()
            or not self._mine(self._status(d))
        ):
            known = [s["id"] for s in self._statuses() if self._mine(s)][-5:]
            where = f" under {self.root}" if self.show_logs else ""
            raise KeyError(
                f"no job {job_id[:80]!r}{where}; your recent jobs: {known or 'none'} "
                "(see 'python -m bindlab jobs list')"
            )
        return d

    def _view(self, st: dict[str, Any]) -> dict[str, Any]:
        """A status as this manager may show it: ``error`` = the one-line message of a failed job (paths hidden
        unless ``show_logs``); server details only with ``show_logs``."""
        st = dict(st)
        st.setdefault("owner", local_owner())
        st["error"] = (
            one_line(st.get("message", ""), hide_paths=not self.show_logs) if st.get("state") == "failed" else None
        )
        if not self.show_logs:
            for k in _SERVER_FIELDS:
                st.pop(k, None)
            st["message"] = one_line(st.get("message", ""), hide_paths=True)
        return st

    def _status(self, d: Path) -> dict[str, Any]:
        return read_json(d / "status.json", {}) or {}

    def _set(self, d: Path, **changes: Any) -> dict[str, Any]:
        st = {**self._status(d), **changes}
        write_json_atomic(d / "status.json", st)
        return st

    def _statuses(self) -> list[dict[str, Any]]:
        out = [read_json(d / "status.json") for d in self.root.iterdir() if (d / "status.json").is_file()]
        # "submitted" (seconds, sub-second) keeps the queue first-in first-out within one second of "created"
        return sorted(
            (s for s in out if s), key=lambda s: (s.get("created", ""), s.get("submitted", 0.0), s.get("id", ""))
        )

    # -- lifecycle --------------------------------------------------------------------------------------------
    def submit(self, config: dict[str, Any], kind: str = "finetune") -> str:
        """Validate a finetune config and the caps, create the job folder (owned by this manager's owner), queue
        it and start it if a slot is free. Nothing is written when a check fails.

        Returns:
            The job id; the finetuned model will load as ``lora:<job_id>``.

        Raises:
            ValueError: a bad config; :class:`JobLimitError` when steps, epochs or the owner's or the server's
                job counts are over their caps.
        """
        from bindlab.encoders.base import parse_encoder_id
        from bindlab.train.finetune import FinetuneConfig

        if kind != "finetune":
            raise ValueError(f"unknown job kind {kind!r}; only 'finetune' jobs exist")
        cfg = FinetuneConfig.from_dict(config)
        parse_encoder_id(cfg.model)
        lim = limits()
        check_training_caps(cfg.epochs, cfg.max_steps, lim)
        check_processes(cfg.num_processes)
        data = Path(cfg.data)
        if not (data.is_file() or (data / "triplets.jsonl").is_file()):
            raise FileNotFoundError(
                f"no triplets at {data}; make them with 'python -m bindlab generate triplets --out {data}'"
            )
        self.promote()  # dead jobs leave their slots before the counts
        with self._locked():  # counting and creating under one lock: two submits at once cannot both slip in
            self._admit(lim)
            job_id = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
            d = self.root / job_id
            d.mkdir(parents=True)
            write_json_atomic(d / "config.json", cfg.to_dict())
            write_json_atomic(
                d / "status.json",
                {
                    "id": job_id,
                    "kind": kind,
                    "model_id": f"lora:{job_id}",
                    "base_model": cfg.model,
                    "state": "queued",
                    "owner": self.owner,
                    "address": self.address,
                    "heavy": bool(cfg.heavy),
                    "created": _now(),
                    "submitted": time.time(),
                    "started": None,
                    "finished": None,
                    "pid": None,
                    "pid_start": None,
                    "attempts": 0,
                    "resume": False,
                    "message": "waiting for a free slot",
                },
            )
        self.promote()
        return job_id

    def _admit(self, lim: Any) -> None:
        """Refuse a new job of this owner when it would go over a cap (called under the lock)."""
        statuses = self._statuses()
        mine = [s for s in statuses if s.get("owner", local_owner()) == self.owner]
        running_all = sum(s["state"] == "running" for s in statuses)
        queued_all = sum(s["state"] == "queued" for s in statuses)
        running_mine = sum(s["state"] == "running" for s in mine)
        queued_mine = sum(s["state"] == "queued" for s in mine)
        if lim.max_jobs_per_session == 0 or lim.max_jobs_global == 0:
            raise JobLimitError(
                "background jobs are turned off on this server (BINDLAB_MAX_JOBS_PER_SESSION or "
                "BINDLAB_MAX_JOBS_GLOBAL is 0)"
            )
        starts_now = running_mine < lim.max_jobs_per_session and running_all < lim.max_jobs_global and not queued_all
        live_here = sum(
            s["state"] in ("running", "queued") for s in statuses if self.address and s.get("address") == self.address
        )
        if self.address and live_here >= lim.max_jobs_per_session + lim.max_queued_per_session:
            raise JobLimitError(
                f"{live_here} jobs from your network address are running or queued, the most one address may have "
                f"(BINDLAB_MAX_JOBS_PER_SESSION + BINDLAB_MAX_QUEUED_PER_SESSION = "
                f"{lim.max_jobs_per_session + lim.max_queued_per_session}), whichever pages they came from; wait for "
                "one to finish or cancel one"
            )
        if starts_now:
            return
        if queued_mine >= lim.max_queued_per_session:
            raise JobLimitError(
                f"you have {running_mine} running and {queued_mine} queued job(s), the most one session may have "
                f"(BINDLAB_MAX_JOBS_PER_SESSION={lim.max_jobs_per_session}, BINDLAB_MAX_QUEUED_PER_SESSION="
                f"{lim.max_queued_per_session}); wait for one to finish or cancel one"
            )
        if queued_all >= lim.max_queued_global:
            nxt = min((w["starts_in_s"] for w in self._waits(statuses).values()), default=0.0)
            raise JobLimitError(
                f"the server's job queue is full ({queued_all} queued, BINDLAB_MAX_QUEUED_GLOBAL="
                f"{lim.max_queued_global}); a place should free in {in_words(nxt)}: try again then"
            )
        # a share of the queue is kept for visitors with no job yet: one who already has jobs (by owner or by
        # address) cannot take the last places, so a few visitors cannot fill the queue for everyone else
        reserve = queue_reserve(lim.max_queued_global)
        has_jobs = bool(running_mine or queued_mine or live_here)
        if has_jobs and public_mode() and queued_all >= lim.max_queued_global - reserve:
            raise JobLimitError(
                f"the server's job queue is nearly full ({queued_all} of {lim.max_queued_global} "
                f"places taken; the last {reserve} are kept for visitors with no job yet); you "
                "already have a job: try again when it has finished"
            )

    def promote(self) -> None:
        """Mark dead jobs failed, stop jobs past the time cap, then start queued jobs (oldest first) while the heavy
        slots, the server's running cap and each owner's running cap allow."""
        lim = limits()
        with self._locked():
            statuses = self._statuses()
            self._stop_overdue(statuses, lim.max_job_seconds)
            for st in statuses:
                if st["state"] == "running" and not pid_alive(st.get("pid"), st.get("pid_start")):
                    d = self.root / st["id"]
                    fresh = self._status(d)  # the runner may have just written its final state
                    if fresh.get("state") == "running":
                        log = tail(d / "log.txt", 20)
                        st.update(
                            self._set(
                                d,
                                state="failed",
                                finished=_now(),
                                message="the job process ended without reporting (crashed or killed)",
                                log_tail=log,
                            )
                        )
                    else:
                        st.update(fresh)
            running = [s for s in statuses if s["state"] == "running"]
            running_heavy = sum(1 for s in running if s.get("heavy", True))
            per_owner: dict[str, int] = {}
            for s in running:
                per_owner[s.get("owner", local_owner())] = per_owner.get(s.get("owner", local_owner()), 0) + 1
            total = len(running)
            for st in fair_order(statuses):
                owner = st.get("owner", local_owner())
                if total >= lim.max_jobs_global:
                    break
                if (st.get("heavy", True) and running_heavy >= self.max_heavy) or per_owner.get(
                    owner, 0
                ) >= lim.max_jobs_per_session:
                    continue
                self._start(self.root / st["id"], st)
                running_heavy += bool(st.get("heavy", True))
                per_owner[owner] = per_owner.get(owner, 0) + 1
                total += 1

    def _stop_overdue(self, statuses: list[dict[str, Any]], cap_s: int) -> None:
        """SIGTERM the process group of every job running longer than ``cap_s`` seconds (0: no cap) and mark it
        cancelled; it checkpoints on SIGTERM, so it can be resumed. A group still alive :data:`KILL_GRACE_S` seconds
        later gets SIGKILL (:meth:`_kill_stragglers`). Called under the lock."""
        self._kill_stragglers(statuses)
        if not cap_s:
            return
        now = _dt.datetime.now(_dt.UTC)
        for st in statuses:
            if st["state"] != "running" or not st.get("started") or not st.get("pgid"):
                continue
            if (now - _dt.datetime.fromisoformat(st["started"])).total_seconds() <= cap_s:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(st["pgid"]), signal.SIGTERM)
            st.update(
                self._set(
                    self.root / st["id"],
                    state="cancelled",
                    finished=_now(),
                    kill_after=time.time() + KILL_GRACE_S,
                    message=f"stopped after the {cap_s} s limit of one job (BINDLAB_MAX_JOB_SECONDS); "
                    "resume it to continue from its last checkpoint",
                )
            )
            self._schedule_kill(st["id"], KILL_GRACE_S)

    def _schedule_kill(self, job_id: str, delay_s: float) -> None:
        """Check the job's process group again in ``delay_s`` seconds, from a daemon timer of this process (a
        process that exits sooner leaves the check to the next :meth:`promote` of any manager, which sweeps too)."""

        def check() -> None:
            with contextlib.suppress(OSError), self._locked():  # OSError: the jobs folder was removed meanwhile
                self._kill_stragglers([self._status(self.root / job_id)])

        timer = threading.Timer(max(delay_s, 0.0) + 0.05, check)
        timer.daemon = True
        timer.start()

    def _kill_stragglers(self, statuses: list[dict[str, Any]]) -> None:
        """SIGKILL the process group of each job stopped for its time cap whose grace period (``kill_after``) has
        passed and whose group is still alive; a group that is gone clears ``kill_after``. Called under the lock."""
        now = time.time()
        for st in statuses:
            due = st.get("kill_after")
            if due is None or st.get("state") != "cancelled" or now < float(due):
                continue
            pgid = int(st.get("pgid") or 0)
            # the group's leader is gone or still the job's process: the pgid was not reused by someone else
            if pgid and group_alive(pgid) and _proc_start(pgid) in (None, st.get("pid_start")):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                with open(self.root / st["id"] / "log.txt", "a") as log:
                    log.write(f"=== {_now()} still running {KILL_GRACE_S:g} s after SIGTERM: SIGKILL\n")
            st.update(self._set(self.root / st["id"], kill_after=None))

    def _start(self, d: Path, st: dict[str, Any]) -> None:
        from bindlab.config import repo_root

        cfg = read_json(d / "config.json", {})
        n = int(cfg.get("num_processes", 1) or 1)
        cmd = launch_command(d, n)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(repo_root()), os.environ.get("PYTHONPATH")])),
            "PYTHONUNBUFFERED": "1",
            "BINDLAB_JOB_ID": st["id"],
        }
        with open(d / "log.txt", "a") as log:
            log.write(f"=== {_now()} start attempt {st.get('attempts', 0) + 1}: {' '.join(cmd)}\n")
            log.flush()
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=str(repo_root()),
                env=env,
                start_new_session=True,
            )
        _CHILDREN[proc.pid] = proc
        st.update(
            self._set(
                d,
                state="running",
                pid=proc.pid,
                pgid=proc.pid,
                pid_start=_proc_start(proc.pid),
                started=_now(),
                finished=None,
                attempts=st.get("attempts", 0) + 1,
                kill_after=None,
                message="starting",
            )
        )

    def mark_running(self, job_dir: str | Path, message: str) -> None:
        """A job started outside this manager (an exported script on another machine): running, this process."""
        d = Path(job_dir)
        with self._locked():
            self._set(
                d,
                state="running",
                pid=os.getpid(),
                pgid=os.getpgid(0),
                pid_start=_proc_start(os.getpid()),
                started=_now(),
                finished=None,
                message=message,
            )

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
            st = self._set(
                d,
                state="cancelled",
                finished=_now(),
                message=f"cancelled at step {step}" + ("; last checkpoint kept" if ckpt else ""),
            )
        self.promote()
        return self._view(st)

    def resume(self, job_id: str) -> dict[str, Any]:
        """Queue a cancelled or failed job again; it continues from its last checkpoint when there is one.

        The job counts against its owner's queue like a new one (:class:`JobLimitError` when over the cap).
        """
        d = self.job_dir(job_id)
        lim = limits()
        self.promote()
        with self._locked():
            st = self._status(d)
            if st["state"] not in ("cancelled", "failed"):
                raise ValueError(f"job {st['id']} is {st['state']}; only cancelled or failed jobs can be resumed")
            owner, self.owner = self.owner, st.get("owner", local_owner())  # an admin resumes in the owner's name
            try:
                self._admit(lim)
            finally:
                self.owner = owner
            st = self._set(d, state="queued", resume=True, finished=None, message="queued to resume")
        self.promote()
        return self._view(self._status(d))

    # -- reading ----------------------------------------------------------------------------------------------
    def list(self) -> list[dict[str, Any]]:
        """This owner's jobs (all for an admin), oldest first, each status with its progress; promotes first."""
        self.promote()
        out = []
        statuses = self._statuses()
        waits = self._waits(statuses)
        for s in statuses:
            if self._mine(s):
                pr = read_json(self.root / s["id"] / "progress.json", {}) or {}
                out.append(self._view({**s, "progress": pr, "message": live_message(s, pr), **waits.get(s["id"], {})}))
        return out

    def _waits(self, statuses: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Per queued job: ``queue_position`` (1 = next), ``queue_length``, ``starts_in_s`` and the message that
        says them (:func:`queue_estimates`)."""
        lim = limits()
        progress = {
            s["id"]: read_json(self.root / s["id"] / "progress.json", {}) or {}
            for s in statuses
            if s.get("state") == "running"
        }
        estimates = queue_estimates(statuses, min(self.max_heavy, lim.max_jobs_global), lim.max_job_seconds, progress)
        return {
            job_id: {
                "queue_position": place,
                "queue_length": len(estimates),
                "starts_in_s": round(start, 1),
                "message": waiting_message(place, len(estimates), start),
            }
            for job_id, (place, start) in estimates.items()
        }

    def show(self, job_id: str, log_lines: int = 30) -> dict[str, Any]:
        """Everything about one job: status, config, progress, metrics, LiNeS choice, result, and with
        ``show_logs`` the log tail and folder (``log_tail`` is '' without)."""
        self.promote()
        d = self.job_dir(job_id)
        st, pr = self._status(d), read_json(d / "progress.json", {}) or {}
        wait = self._waits(self._statuses()).get(st.get("id", ""), {}) if st.get("state") == "queued" else {}
        out = {
            "status": self._view({**st, "message": live_message(st, pr), **wait}),
            "config": read_json(d / "config.json", {}),
            "progress": pr,
            "metrics": self.metrics(job_id),
            "lines": read_json(d / "lines.json"),
            "result": read_json(d / "result.json"),
            "log_tail": "",
        }
        if self.show_logs:
            out.update(log_tail=tail(d / "log.txt", log_lines), dir=str(d))
        return out

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
        """The end of the job's log ('' for a manager without ``show_logs``: tracebacks stay on the server)."""
        d = self.job_dir(job_id)
        return tail(d / "log.txt", lines) if self.show_logs else ""

    def wait(
        self, job_id: str, timeout: float = 600, states: tuple[str, ...] = FINAL, poll: float = 0.2
    ) -> dict[str, Any]:
        """Block until the job reaches one of ``states`` (promoting as it goes); raises TimeoutError."""
        deadline = time.time() + timeout
        d = self.job_dir(job_id)
        while True:
            self.promote()
            st = self._status(d)
            if st["state"] in states:
                return self._view(st)
            if time.time() > deadline:
                raise TimeoutError(f"job {job_id} still {st['state']} after {timeout:.0f}s")
            time.sleep(poll)
