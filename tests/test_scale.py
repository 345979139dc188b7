"""Scale-out under torchrun / accelerate launch, on 2 CPU processes (gloo).

The pure helpers (env detection, shard ranges, merging) are tested without processes; then real launches:
``eval mcq`` (minilm) and ``eval pairs`` (toy:clip) on 2 processes give the single-process JSON (timing fields
aside), with a cold cache (both ranks embed) and a warm one (nothing is recomputed); a 2-process finetune takes
the same steps as one process, keeps one job folder, and resumes after a cancel. Every launch starts several
processes that import torch (minutes on a busy 2-core machine), so they are marked ``slow``: CI runs them with
``-m slow``, the default run keeps the helpers and the exported launch script's contents.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bindlab.encoders import distributed
from bindlab.encoders.distributed import World, merge_shards, shard_range, world_from_env

REPO = Path(__file__).resolve().parents[1]
TIMING_KEYS = {"created", "seconds"}  # provenance fields that say when and how long, never what


# --- pure helpers ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 5, 7, 64])
@pytest.mark.parametrize("size", [1, 2, 3, 8])
def test_shards_are_disjoint_cover_everything_in_order_and_balanced(n, size):
    ranges = [shard_range(n, r, size) for r in range(size)]
    covered = [i for lo, hi in ranges for i in range(lo, hi)]
    assert covered == list(range(n))  # disjoint, complete, rank order = input order
    lengths = [hi - lo for lo, hi in ranges]
    assert max(lengths) - min(lengths) <= 1


def test_shard_range_refuses_impossible_ranks():
    for args in ((5, 2, 2), (5, -1, 2), (5, 0, 0), (-1, 0, 1)):
        with pytest.raises(ValueError, match="shard_range"):
            shard_range(*args)


def test_merge_shards_concatenates_in_rank_order_and_skips_empty_shards():
    a, b = np.ones((2, 3), np.float32), np.zeros((1, 3), np.float32)
    got = merge_shards([a, np.zeros((0, 0), np.float32), b])
    assert got.shape == (3, 3) and np.array_equal(got, np.concatenate([a, b]))
    assert merge_shards([np.zeros((0, 0))]).shape == (0, 0)
    with pytest.raises(ValueError, match="same model"):
        merge_shards([a, np.ones((1, 4))])


def test_world_from_env_reads_the_launcher_variables():
    assert world_from_env({}) == World(0, 1, 0) and not World().active and World().main
    w = world_from_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"})
    assert (w.rank, w.size, w.local_rank, w.main, w.active) == (3, 4, 1, False, True)
    assert world_from_env({"RANK": "1", "WORLD_SIZE": "2"}).local_rank == 1
    with pytest.raises(ValueError, match="RANK=2, WORLD_SIZE=2"):
        world_from_env({"RANK": "2", "WORLD_SIZE": "2"})
    with pytest.raises(ValueError, match="WORLD_SIZE='two'"):
        world_from_env({"WORLD_SIZE": "two"})


def test_collectives_are_identity_in_one_process(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert not distributed.active()
    assert distributed.broadcast({"x": 1}) == {"x": 1} and distributed.gather(5) == [5]
    assert distributed.mean(0.25) == 0.25 and distributed.any_rank(True) and not distributed.any_rank(False)


def test_a_job_asking_for_too_many_processes_is_refused(monkeypatch):
    from bindlab.jobs.manager import JobLimitError, check_processes

    check_processes(8)
    with pytest.raises(JobLimitError, match="num_processes 9 is over this server's cap of 8"):
        check_processes(9)
    monkeypatch.setenv("BINDLAB_MAX_JOB_PROCESSES", "2")
    with pytest.raises(JobLimitError, match="cap of 2"):
        check_processes(3)


# --- launches ----------------------------------------------------------------------------------------------------
def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "BINDLAB_HOME": str(home),
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "BINDLAB_DIST_VERBOSE": "1",
    }


def _torchrun(home: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "bindlab",
        *args,
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=_env(home), cwd=REPO)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def _single(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in _env(home).items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    p = subprocess.run(
        [sys.executable, "-m", "bindlab", *args], capture_output=True, text=True, timeout=600, env=env, cwd=REPO
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def _per_rank(stderr: str) -> list[int]:
    line = [x for x in stderr.splitlines() if "items per rank" in x][-1]
    return json.loads(line.split("items per rank", 1)[1])


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in TIMING_KEYS}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def assert_same_result(a: Path, b: Path, tol: float = 1e-6) -> None:
    """The two JSON results are equal outside timing fields; numbers to ``tol``."""

    def same(x, y, where):
        if isinstance(x, dict):
            assert isinstance(y, dict) and x.keys() == y.keys(), where
            for k in x:
                same(x[k], y[k], f"{where}/{k}")
        elif isinstance(x, list):
            assert isinstance(y, list) and len(x) == len(y), where
            for i, (u, v) in enumerate(zip(x, y, strict=True)):
                same(u, v, f"{where}[{i}]")
        elif isinstance(x, float) and not isinstance(x, bool):
            assert y == pytest.approx(x, abs=tol, nan_ok=True), where
        else:
            assert x == y, where

    same(_strip(json.loads(a.read_text())), _strip(json.loads(b.read_text())), "")


@pytest.fixture(scope="module")
def saber(tmp_path_factory):
    from bindlab.data.saber import generate_saber, write_benchmark

    qs = generate_saber(per_size=2, sizes=range(2, 5), seed=5)
    return write_benchmark(tmp_path_factory.mktemp("saber"), qs, {"seed": 5, "per_size": 2})


@pytest.fixture(scope="module")
def composet(tmp_path_factory):
    out = tmp_path_factory.mktemp("composet")
    _single(
        out / "home",
        "generate",
        "composet",
        "--out",
        str(out / "cs"),
        "--scenes",
        "1",
        "--foils-per-scene",
        "15",
        "--size",
        "64",
        "--workers",
        "1",
    )
    return out / "cs" / "pairs.jsonl"


# Slow: four Python processes that each import torch and load MiniLM (one single-process run, then torchrun's launcher
# and two ranks) beside the other xdist worker on 2 cores: 111 s of the default run on a loaded machine. The sharding
# itself is covered without processes above (shard ranges, merging, one-process collectives).
@pytest.mark.slow
def test_eval_mcq_minilm_on_two_processes_equals_one_process(saber, tmp_path):
    args = ("eval", "mcq", "--data", str(saber), "--model", "minilm", "--device", "cpu")
    one = _single(tmp_path / "h1", *args, "--out", str(tmp_path / "one.json"))
    two = _torchrun(tmp_path / "h2", *args, "--out", str(tmp_path / "two.json"))
    assert_same_result(tmp_path / "one.json", tmp_path / "two.json")
    assert two.stdout.count("wrote ") == 1 and one.stdout.splitlines()[0] == two.stdout.splitlines()[0]
    per_rank = _per_rank(two.stderr)
    assert len(per_rank) == 2 and min(per_rank) > 0  # a cold cache: both ranks embedded a share
    # Rank 0 alone wrote the cache: every unique text once.
    import sqlite3

    with sqlite3.connect(tmp_path / "h2" / "cache" / "embeddings.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM emb").fetchone()[0] == sum(per_rank)


# Slow: eight Python processes that each import torch (the CompoSET render, one single-process run, then two torchrun
# launches of a launcher and two ranks each): 104 s of the default run on a loaded 2-core machine.
@pytest.mark.slow
def test_eval_pairs_toy_clip_two_processes_cold_and_warm_cache(composet, tmp_path):
    args = ("eval", "pairs", "--data", str(composet), "--model", "toy:clip", "--device", "cpu", "--verbosity", "short")
    _single(tmp_path / "h1", *args, "--out", str(tmp_path / "one.json"))
    cold = _torchrun(tmp_path / "h2", *args, "--out", str(tmp_path / "two.json"))
    assert_same_result(tmp_path / "one.json", tmp_path / "two.json")
    assert min(_per_rank(cold.stderr)) > 0
    # Warm: the single-process run's cache already holds every text and image, so nothing is sharded.
    warm = _torchrun(tmp_path / "h1", *args, "--out", str(tmp_path / "warm.json"))
    assert _per_rank(warm.stderr) == []
    assert_same_result(tmp_path / "one.json", tmp_path / "warm.json")


@pytest.mark.slow  # a third launch of the same command; the torchrun tests cover the sharding
def test_accelerate_launch_runs_the_same_command(composet, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ("eval", "pairs", "--data", str(composet), "--model", "toy:clip", "--device", "cpu", "--verbosity", "short")
    _single(tmp_path / "h1", *args, "--out", str(tmp_path / "one.json"))
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(port),
        "-m",
        "bindlab",
        *args,
        "--out",
        str(tmp_path / "acc.json"),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=_env(tmp_path / "h2"), cwd=REPO)
    assert p.returncode == 0, p.stderr[-3000:]
    assert min(_per_rank(p.stderr)) > 0
    assert_same_result(tmp_path / "one.json", tmp_path / "acc.json")


@pytest.mark.slow
def test_a_user_error_under_torchrun_is_one_line_and_every_rank_exits(saber, tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "bindlab",
        "eval",
        "mcq",
        "--data",
        str(saber),
        "--model",
        "nope:x",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=_env(tmp_path / "h"), cwd=REPO)
    assert p.returncode != 0 and "error: unknown encoder backend 'nope'" in p.stderr
    assert "Traceback" not in p.stderr.split("error:")[0]


# --- data-parallel finetuning --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from bindlab.data.triplets import generate_triplets, write_triplets
    from bindlab.encoders.tiny import build_tiny

    root = tmp_path_factory.mktemp("ft")
    model = build_tiny("st", root / "st")
    rows, stats = generate_triplets(120, seed=0)
    write_triplets(root / "trip", rows, stats)
    return model, str(root / "trip")


def _job(tiny, **kw):
    # batch 5 does not split evenly over 2 ranks: the loss weighting must still give the global batch's gradient
    return {
        "model": tiny[0],
        "data": tiny[1],
        "batch_size": 5,
        "eval_rows": 8,
        "device": "cpu",
        "lr": 1e-2,
        "evaluate": False,
        "threads": 1,
        **kw,
    }


# Slow: two real jobs, one of them a torchrun launcher with two training ranks (four processes that import torch and
# transformers): 74 s of the default run on a loaded 2-core machine. The one-process job path runs by default in
# tests/jobs/test_manager.py.
@pytest.mark.slow
def test_two_process_finetune_takes_the_one_process_steps(tiny, tmp_path, monkeypatch):
    from bindlab.encoders.adapter import read_adapter
    from bindlab.jobs.manager import JobManager

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    runs = {}
    for n in (1, 2):
        m = JobManager(tmp_path / f"jobs{n}")
        job = m.submit(_job(tiny, max_steps=3, num_processes=n))
        st = m.wait(job, timeout=300)
        assert st["state"] == "done", m.log_tail(job, 60)
        assert [j["id"] for j in m.list()] == [job]  # one job, however many processes
        assert len([p for p in (tmp_path / f"jobs{n}").iterdir() if p.is_dir()]) == 1
        runs[n] = (
            [e["loss"] for e in m.metrics(job) if "loss" in e],
            read_adapter(m.job_dir(job) / "adapter_unscaled.safetensors"),
        )
    (l1, a1), (l2, a2) = runs[1], runs[2]
    assert len(l1) == len(l2) == 3 and np.allclose(l1, l2, atol=1e-4)
    # The two runs sum the batch's gradient in another order (one matmul vs two shards and an all-reduce): float32
    # noise of about 2**-24 of the summed terms. Adam then divides each element by its own gradient size, so an element
    # whose gradient cancels to near zero turns that noise into a step of up to lr either way, while every other
    # element moves by the same lr-sized step in both runs. An element-wise tolerance is therefore load-dependent
    # (it failed at 5e-5); the scale-free test is the size of the difference against the size of the update itself.
    # (LoRA B starts at zero, so its norm is its update; A's norm is its seeded init plus its update.)
    for k, v in a1.items():
        diff, size = np.linalg.norm(v.numpy() - a2[k].numpy()), np.linalg.norm(v.numpy())
        assert diff <= 0.02 * size, (k, diff, size)


@pytest.mark.slow  # three launches of a 2-process job (minutes on a busy 2-core machine)
def test_two_process_finetune_cancels_every_rank_and_resumes(tiny, tmp_path, monkeypatch):
    import torch

    from bindlab.jobs.manager import JobManager, group_alive, read_json

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    m = JobManager(tmp_path / "jobs")
    job = m.submit(_job(tiny, max_steps=5, num_processes=2, checkpoint_every=1, debug={"sleep_per_step": 1.0}))
    d = m.job_dir(job)
    deadline = time.time() + 240
    while (read_json(d / "progress.json", {}) or {}).get("step", 0) < 2:
        assert time.time() < deadline and m.show(job)["status"]["state"] == "running", m.log_tail(job, 60)
        time.sleep(0.2)
    pgid = read_json(d / "status.json")["pgid"]
    st = m.cancel(job, grace_s=20)
    assert st["state"] == "cancelled" and not group_alive(pgid)
    step = torch.load(d / "checkpoints" / "last.pt", map_location="cpu", weights_only=False)["step"]
    assert step >= 2
    m.resume(job)
    st = m.wait(job, timeout=300)
    assert st["state"] == "done", m.log_tail(job, 60)
    assert f"(from step {step})" in m.log_tail(job, 300)
    assert read_json(d / "result.json")["steps"] == 5
    assert sorted({e["step"] for e in m.metrics(job) if "loss" in e}) == [1, 2, 3, 4, 5]


# --- a job that runs elsewhere -------------------------------------------------------------------------------------
@pytest.fixture()
def queued_job(tiny, tmp_path, monkeypatch):
    """A 2-process job created in $BINDLAB_HOME/jobs and left queued (never started here)."""
    from bindlab.jobs.manager import JobManager

    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(JobManager, "promote", lambda self: None)  # for the whole test: nothing starts it here
    m = JobManager(tmp_path / "home" / "jobs")
    job = m.submit(_job(tiny, max_steps=2, num_processes=2))
    return job, m.job_dir(job)


def test_export_script_writes_a_torchrun_accelerate_and_sbatch_launch(queued_job, capsys):
    from bindlab.cli import main

    job, d = queued_job
    assert main(["jobs", "export-script", job, "--nodes", "2"]) == 0
    out = capsys.readouterr().out
    launch, sbatch = (d / "launch.sh").read_text(), (d / "sbatch.sh").read_text()
    assert launch in out and sbatch in out and f"lora:{d}" in out
    assert 'torchrun --standalone --nproc_per_node "$NPROC" -m bindlab jobs _run "$JOB_DIR"' in launch
    assert 'NPROC="${NPROC:-2}"' in launch and "accelerate launch --multi_gpu" in launch
    assert "#SBATCH --nodes=2" in sbatch and "#SBATCH --gpus-per-node=2" in sbatch and "srun torchrun" in sbatch
    assert f'JOB_DIR="${{JOB_DIR:-{d}}}"' in sbatch and os.access(d / "launch.sh", os.X_OK)
    for script in (d / "launch.sh", d / "sbatch.sh"):
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert main(["jobs", "export-script", "nope-123"]) == 2  # a missing job is one error line


@pytest.mark.slow  # a real 2-process run of the exported script
def test_the_exported_launch_script_runs_the_job_and_its_result_loads(queued_job):
    from bindlab.encoders.base import load_encoder
    from bindlab.jobs.manager import read_json

    job, d = queued_job
    from bindlab.cli import main

    assert main(["jobs", "export-script", job]) == 0
    p = subprocess.run(
        ["bash", str(d / "launch.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert not (d / "log.txt").exists()  # the manager never started it: the script ran it
    assert read_json(d / "status.json")["state"] == "done" and read_json(d / "result.json")["steps"] == 2
    enc = load_encoder(f"lora:{d}", device="cpu")
    assert enc.embed_texts(["a red cube"]).shape[0] == 1
