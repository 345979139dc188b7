"""Peak memory of one Browse score of the largest file public mode allows, measured in this process.

Writes an MCQ file at the public upload and question caps (5,000 questions padded to ~19 MB, as
``scripts/hostile_check.py`` does), then in a fresh child process scores it the way the Browse tab does
(``bindlab.studies.browse.run_mcq``, pairing ``tt``) with a fresh embedding cache, after a 20-question warm-up
score (the code and the model loaded, as on a warm server), sampling the process's resident
memory every 10 ms. Reports the peak growth over the process before the file was read, for the default chunk and
for ``--chunk`` (e.g. a chunk past the file's size: everything at once, as before chunking). A measurement, not a
test.

Usage::

    python scripts/score_memory.py [--model bow] [--chunk 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def measure(data: Path, warm: Path, model: str, chunk: int | None) -> dict[str, float]:
    """In this process: score ``warm`` (imports, the model), then ``data`` with ``model`` (chunk None: the default);
    RSS figures in MB, growth over the warm process."""
    import bindlab.eval.mcq as mcq
    from bindlab.studies.browse import McqRequest, run_mcq

    if chunk:
        mcq.SCORE_CHUNK = chunk
    run_mcq(McqRequest(data=warm, model=model, pairings="tt"))  # the warm server: code and model loaded
    peak, stop = [_rss()], threading.Event()
    before = peak[0]

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.01)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.perf_counter()
    result = run_mcq(McqRequest(data=data, model=model, pairings="tt"))
    seconds = time.perf_counter() - t0
    stop.set()
    t.join()
    mb = 1 << 20
    return {
        "chunk": mcq.SCORE_CHUNK,
        "questions": result.summary["pairings"]["tt"]["n"],
        "seconds": round(seconds, 1),
        "rss_before_mb": round(before / mb, 1),
        "peak_growth_mb": round((peak[0] - before) / mb, 1),
        "after_growth_mb": round((_rss() - before) / mb, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="bow")
    ap.add_argument("--chunk", type=int, default=0, help="also measure with this chunk (0: only the default)")
    ap.add_argument("--child", nargs=3, metavar=("DATA", "WARM", "CHUNK"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(measure(Path(a.child[0]), Path(a.child[1]), a.model, int(a.child[2]) or None)))
        return 0
    from bindlab.config import LIMIT_DEFAULTS
    from scripts.hostile_check import mcq_file

    public = {k: v[1] for k, v in LIMIT_DEFAULTS.items()}
    work = Path(tempfile.mkdtemp(prefix="bindlab-score-memory-"))
    data = mcq_file(
        work / "big", public["max_questions"], seed=7, target_bytes=int(public["max_upload_mb"] * (1 << 20) * 0.95)
    )
    warm = mcq_file(work / "warm", 20, seed=100)
    print(f"file: {public['max_questions']} questions, {data.stat().st_size:,} bytes; load average {os.getloadavg()}")
    for chunk in [0] + ([a.chunk] if a.chunk else []):
        env = {**os.environ, "BINDLAB_HOME": str(work / f"home{chunk}"), "BINDLAB_DATA_ROOTS": str(work)}
        out = subprocess.run(
            [sys.executable, __file__, "--model", a.model, "--child", str(data), str(warm), str(chunk)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        print(out.stdout.strip().splitlines()[-1], flush=True)
    print(f"load average after {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
