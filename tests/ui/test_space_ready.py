"""Hugging Face Space readiness, without a browser: the README header is a valid Space config, the app honours the
host/port a Space sets and refuses oversized uploads, importing the app loads no model code, and GPU-bound
callbacks get ZeroGPU's decorator exactly when the ``spaces`` package is there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
import uuid

import pytest
import yaml

from tests.ui.conftest import ROOT, _free_port

SPACE_COLORS = {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}


def _front_matter() -> tuple[dict, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), "README.md must open with the Space's YAML header"
    head, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body


def test_readme_front_matter_is_a_gradio_space_config():
    import gradio

    meta, body = _front_matter()
    for key in (
        "title",
        "emoji",
        "colorFrom",
        "colorTo",
        "sdk",
        "sdk_version",
        "python_version",
        "app_file",
        "pinned",
        "short_description",
    ):
        assert key in meta, key
    assert meta["sdk"] == "gradio" and meta["sdk_version"] == gradio.__version__
    assert (ROOT / meta["app_file"]).is_file() and meta["app_file"] == "app.py"
    assert {meta["colorFrom"], meta["colorTo"]} <= SPACE_COLORS
    assert isinstance(meta["pinned"], bool) and len(meta["short_description"]) <= 60
    assert str(meta["python_version"]).startswith("3.")
    # Right after the header (and the title), the two commands: run the app, run the tests.
    lines = [ln for ln in body.splitlines() if ln.strip()]
    assert lines[0].startswith("# ") and lines[1] == "```bash"
    assert "python -m venv .venv && . .venv/bin/activate && pip install -e . && python app.py" in lines[2]
    assert (
        'python -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && ruff check . && ruff format --check . && python -m pytest'
    ) in lines[3] and lines[4] == "```"
    assert lines[3].split("#")[0].strip() == ci_test_command()  # the README's test command is what CI runs
    assert "docs/deploy.md" in body and (ROOT / "docs" / "deploy.md").is_file()


def _run_py(code: str, env: dict[str, str] | None = None, pythonpath: str | None = None) -> dict:
    """Run ``code`` in a fresh interpreter at the repo root; it prints one JSON line, returned parsed."""
    env = {**os.environ, **(env or {})}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_importing_the_app_loads_no_model_code_and_changes_nothing_off_zerogpu():
    """As on a laptop or an ordinary Space (``spaces`` installed or not, no ZeroGPU): no model code imported, and
    the GPU decorator hands callbacks back unchanged."""
    out = _run_py(
        """
        import json, sys
        import bindlab.ui.app
        from bindlab.ui import browse, gpu
        heavy = ("torch", "transformers", "open_clip", "timm", "peft", "accelerate", "sentence_transformers",
                 "safetensors.torch", "umap", "sklearn")
        def f(x):
            return x
        print(json.dumps({"heavy": sorted(m for m in heavy if m in sys.modules), "same": gpu.gpu_task(45)(f) is f,
                          "zerogpu": hasattr(browse.score, "zerogpu")}))
    """,
        env={"SPACES_ZERO_GPU": ""},
    )
    assert out == {"heavy": [], "same": True, "zerogpu": False}


def test_gpu_task_is_the_identity_without_spaces():
    out = _run_py("""
        import json, sys
        sys.modules["spaces"] = None  # makes `import spaces` raise ImportError, as when it is not installed
        from bindlab.ui import browse, gpu
        def f(x):
            return x
        print(json.dumps({"same": gpu.gpu_task(30)(f) is f, "spaces": gpu.spaces_gpu() is not None,
                          "score": browse.score.__name__, "zerogpu": hasattr(browse.score, "zerogpu"),
                          "queue": gpu.GPU_QUEUE}))
    """)
    assert out == {
        "same": True,
        "spaces": False,
        "score": "score",
        "zerogpu": False,
        "queue": {"concurrency_id": "gpu", "concurrency_limit": 1},
    }


# With the real `spaces` package in ZeroGPU mode (it decorates without contacting its device API); where it is not
# installed, a stand-in module with the same decorator signature (GPU(task=None, *, duration=None)) is used.
SPACES_STANDIN = """
import functools

def GPU(task=None, *, duration=None, size=None):
    if task is None:
        return functools.partial(GPU, duration=duration, size=size)
    @functools.wraps(task)
    def wrapper(*a, **k):
        return task(*a, **k)
    wrapper.zerogpu = None
    wrapper.duration = duration
    return wrapper
"""


def test_gpu_task_applies_spaces_gpu_when_spaces_is_installed(tmp_path):
    try:
        import spaces  # noqa: F401

        pythonpath, real = None, True
    except ImportError:
        (tmp_path / "spaces.py").write_text(SPACES_STANDIN)
        pythonpath, real = str(tmp_path), False
    out = _run_py(
        """
        import json
        import gradio  # as in the app: gradio first, then spaces through bindlab.ui.gpu
        from bindlab.ui import attention, browse, gpu
        def f(x):
            return x + 1
        g = gpu.gpu_task(45)(f)
        # (not called: under ZeroGPU a call asks the device API for a GPU)
        print(json.dumps({"wrapped": g is not f, "inner": getattr(g, "__wrapped__", None) is f,
                          "zerogpu": hasattr(g, "zerogpu"), "score": hasattr(browse.score, "zerogpu"),
                          "caption": hasattr(attention.show_caption, "zerogpu"), "name": browse.score.__name__}))
    """,
        env={"SPACES_ZERO_GPU": "true", "SPACES_ZERO_DEVICE_API_URL": "http://127.0.0.1:9"},
        pythonpath=pythonpath,
    )
    assert out["wrapped"] and out["inner"] and out["zerogpu"] and out["score"] and out["caption"], (real, out)
    assert out["name"] == "score"


def test_env_settings_are_validated(monkeypatch):
    from bindlab.ui import gpu
    from bindlab.ui.common import max_upload_bytes, max_upload_mb

    monkeypatch.setenv("BINDLAB_MAX_UPLOAD_MB", "3")
    assert max_upload_mb() == 3 and max_upload_bytes() == 3 * 2**20
    for bad in ("0", "-1", "lots"):
        monkeypatch.setenv("BINDLAB_MAX_UPLOAD_MB", bad)
        with pytest.raises(ValueError, match="BINDLAB_MAX_UPLOAD_MB"):
            max_upload_mb()
    monkeypatch.setenv("BINDLAB_GPU_CONCURRENCY", "3")
    assert gpu.gpu_concurrency() == 3
    monkeypatch.setenv("BINDLAB_GPU_CONCURRENCY", "zero")
    with pytest.raises(ValueError, match="BINDLAB_GPU_CONCURRENCY"):
        gpu.gpu_concurrency()
    with pytest.raises(ValueError, match="duration"):
        gpu.gpu_task(0)


def test_check_upload_refuses_a_file_over_the_limit(tmp_path, monkeypatch):
    from bindlab.ui.common import check_upload

    monkeypatch.setenv("BINDLAB_MAX_UPLOAD_MB", "1")
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    small.write_bytes(b"x" * 1000)
    big.write_bytes(b"x" * (2 * 2**20))
    assert check_upload(str(small)) == small
    with pytest.raises(ValueError, match=r"big.jsonl is 2.0 MiB; uploads are limited to 1 MiB"):
        check_upload(str(big))
    with pytest.raises(ValueError, match="no file uploaded"):
        check_upload(None)
    with pytest.raises(ValueError, match="missing on the server"):
        check_upload(str(tmp_path / "gone.jsonl"))


@pytest.fixture(scope="module")
def space_app(tmp_path_factory):
    """``python app.py`` started the way a Space starts it: host and port from the environment (GRADIO_SERVER_NAME,
    GRADIO_SERVER_PORT, set by ``running_app``), 1 MiB uploads."""
    from bindlab.speed.browser import running_app

    home = tmp_path_factory.mktemp("space-home")
    env = {
        "BINDLAB_MAX_UPLOAD_MB": "1",
        "BINDLAB_HOME": str(home),
        "BINDLAB_UPLOAD_QUOTA_MB": "2",
        "BINDLAB_UPLOAD_SPACE_MB": "5",
        "GRADIO_TEMP_DIR": str(home / "gradio-tmp"),
    }
    with running_app(env, timeout_s=180, log=home / "app.log") as (url, _, _):
        yield url


def _upload(url: str, size: int, address: str | None = None) -> tuple[int, str]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="data.jsonl"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + b"x" * size
        + f"\r\n--{boundary}--\r\n".encode()
    )
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    if address:
        headers["X-Forwarded-For"] = address  # as a Space's proxy sets it
    req = urllib.request.Request(f"{url}/gradio_api/upload", data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_app_listens_on_the_port_from_the_environment(space_app):
    with urllib.request.urlopen(space_app, timeout=10) as r:
        assert r.status == 200 and "bindlab" in r.read().decode()


def test_upload_over_the_limit_is_refused_with_a_clear_message(space_app):
    status, text = _upload(space_app, int(1.5 * 2**20), address="198.51.100.1")  # over the file cap, under the quota
    assert status == 413 and "File size exceeded maximum allowed size of 1048576 bytes" in text
    status, text = _upload(space_app, 100_000, address="198.51.100.1")
    assert status == 200 and "data.jsonl" in text


def test_the_raw_upload_route_has_a_quota_per_address_and_a_cap_on_the_folder(space_app):
    """2 MiB an hour per address, 5 MiB in Gradio's upload folder (this app's own): the route refuses what would go
    over either before reading it, with one line; another address has its own quota, the folder cap holds for all."""
    mib = 2**20
    assert [_upload(space_app, int(0.9 * mib), "203.0.113.7")[0] for _ in range(2)] == [200, 200]
    status, text = _upload(space_app, int(0.9 * mib), "203.0.113.7")
    assert status == 413 and "may upload 2 MiB an hour (BINDLAB_UPLOAD_QUOTA_MB)" in text
    accepted, refusal = 2, ""
    for n in range(8, 20):  # fresh addresses (a forged X-Forwarded-For gets one too): the folder cap stops them
        status, text = _upload(space_app, int(0.9 * mib), f"203.0.113.{n}")
        if status != 200:
            refusal = text
            break
        accepted += 1
    assert "the server's upload space (5 MiB, BINDLAB_UPLOAD_SPACE_MB) is full" in refusal
    assert 3 <= accepted <= 6


def test_start_up_self_check_waits_for_a_slow_page():
    """A page that takes 4 s to answer (a busy machine building it): Gradio's own check gives up after 3 s and stops
    the app; bindlab's waits. A port where nothing listens is still reported as down."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from gradio import networking

    from bindlab.ui.app import patient_url_ok

    class Slow(BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802 (http.server's naming)
            time.sleep(4)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        if networking.url_ok is not patient_url_ok:  # launch() swaps it in, in the app's own process only
            assert not networking.url_ok(url)  # Gradio's check: 3 s, then "localhost is not accessible"
        assert patient_url_ok(url, within_s=20)
    finally:
        server.shutdown()
    t = time.monotonic()
    assert not patient_url_ok(f"http://127.0.0.1:{_free_port()}/", within_s=1.5)
    assert time.monotonic() - t < 10


def ci_test_command() -> str:
    """The command .ci/run runs: the README's test line as .ci/run reads it (bash, first code block, comment
    dropped), so the two can never drift apart."""
    import subprocess

    script = (ROOT / ".ci" / "run").read_text()
    line = next(ln for ln in script.splitlines() if ln.startswith("cmd=$("))
    return subprocess.run(
        ["bash", "-c", f'cd {ROOT} && {line} && printf %s "$cmd"'], capture_output=True, text=True, check=True
    ).stdout
