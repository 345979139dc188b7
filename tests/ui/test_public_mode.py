"""Public mode, tried as a hostile visitor would: no call returns a byte of a server file outside the allowed roots or
says whether it exists, an upload is stored per session, one session cannot touch another's jobs, and a caption over
the cap is refused before any model loads.

The first half calls the tab callbacks in-process (public mode switched on with the environment); the second starts
``python app.py`` with ``BINDLAB_PUBLIC=1`` and drives its API with ``gradio_client``, as a scripted visitor would.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import gradio as gr
import pytest

from bindlab.data.files import REFUSED
from tests.conftest import seed_embedding_cache

ROOT = Path(__file__).resolve().parents[2]
SECRET = "bindlab-secret-7f3a"  # content of a server file no visitor may see
OUTSIDE = [str(ROOT / ".git" / "config"), "/etc/passwd", "/etc/hostname"]  # exist, outside the public roots
MISSING = ["/etc/no-such-file-bindlab", "/nonexistent/dir/mcq.jsonl"]


@pytest.fixture
def public(monkeypatch, tmp_path):
    """Public mode with the default public roots (the repo's data/ and bindlab/assets/, a fresh $BINDLAB_HOME)."""
    home = tmp_path / "home"
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    monkeypatch.setenv("BINDLAB_HOME", str(home))
    monkeypatch.delenv("BINDLAB_DATA_ROOTS", raising=False)
    return home


class FakeRequest:
    """What a callback reads from ``gr.Request``: the session hash."""

    def __init__(self, session_hash: str) -> None:
        self.session_hash = session_hash


def _error(fn, *args, **kwargs) -> str:
    with pytest.raises(gr.Error) as e:
        fn(*args, **kwargs)
    return str(e.value.message)


def _path_callbacks():
    """(name, call(path)) for every tab callback that takes a data path."""
    from bindlab.ui import attention, browse, compare, embedding_map, finetune, grounding, pairs

    return [
        ("browse", lambda p: browse.score(p, "bow", "tt", "all", "all", "all", 8)),
        ("pairs", lambda p: pairs.score(p, "toy:shared", "short")),
        ("grounding", lambda p: grounding.load(p, "toy:clip", "hue", 0.0)),
        ("attention", lambda p: attention.compute("minilm", "", p, 5, "later_to_earlier")),
        ("map", lambda p: embedding_map.make_map(p, "bow", [], 20, 0, "role", "pca")),
        ("compare", lambda p: compare.run(["bow", "minilm"], ["mcq"], "tt", p, "", "")),
        ("compare-pairs", lambda p: compare.run(["bow", "minilm"], ["pairs"], "tt", "", p, "")),
        ("finetune", lambda p: finetune.launch("minilm", p, 1, 1, 8, 5e-5, 4, "auto", request=FakeRequest("a"))),
        ("finetune-compare", lambda p: finetune.compare("job-x", p, request=FakeRequest("a"))),
    ]


@pytest.mark.parametrize("name", [n for n, _ in _path_callbacks()])
def test_a_path_outside_the_roots_gets_one_message_whether_it_exists_or_not(public, name):
    call = dict(_path_callbacks())[name]
    messages = {p: _error(call, p) for p in OUTSIDE + MISSING}
    assert len(set(messages.values())) == 1, messages  # existing, missing, file or folder: the same words
    msg = next(iter(messages.values()))
    assert REFUSED in msg and "upload" in msg
    assert not any(part in msg for part in ("/etc", "passwd", ".git", "not found", "JSON", "exist")), msg


@pytest.mark.usefixtures("tmp_roots")
def test_local_mode_resolves_paths_through_the_roots_too(monkeypatch):
    """Outside public mode the roots are $BINDLAB_DATA_ROOTS (here: the temp folder and the repo): /etc is outside."""
    from bindlab.ui import browse

    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    msgs = {_error(browse.score, p, "bow", "tt", "all", "all", "all", 8) for p in ["/etc/passwd", "/etc/nope"]}
    assert len(msgs) == 1 and REFUSED in msgs.pop()


def _hostile_mcq(folder: Path) -> Path:
    """A valid SABER file whose image fields point at server files (absolute, climbing out, via a symlink)."""
    from bindlab.data.saber import generate_saber, write_benchmark

    path = write_benchmark(folder, generate_saber(per_size=1, sizes=[2, 3], seed=0), {"seed": 0})
    (folder / "link.png").symlink_to("/etc/passwd")
    targets = ["/etc/passwd", "../../.git/config", "../" * 12 + "etc/passwd", "link.png", str(ROOT / ".git/config")]
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for i, row in enumerate(rows):
        row["query"]["image"] = targets[i % len(targets)]
        for j, c in enumerate(row["candidates"]):
            c["image"] = targets[(i + j + 1) % len(targets)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_an_uploaded_mcq_with_hostile_image_fields_is_refused_without_reading_them(public, tmp_path):
    from bindlab.studies import datasets
    from bindlab.ui import browse, embedding_map

    src = _hostile_mcq(tmp_path / "src")
    stored = datasets.store_upload(str(src), "mcq", "session-a")
    assert datasets.session_uploads("session-a") in stored.parents and stored.read_bytes() == src.read_bytes()
    for pairing in ("tt", "ti", "it", "ii"):
        msg = _error(
            browse.score, str(stored), "bow" if pairing == "tt" else "toy:clip", pairing, "all", "all", "all", 8
        )
        assert "outside the data file's folder" in msg, msg
        assert "root:" not in msg and "[core]" not in msg
    msg = _error(embedding_map.make_map, str(stored), "toy:clip", [], 20, 0, "role", "pca")
    assert "outside the data file's folder" in msg and "root:" not in msg


def test_upload_store_checks_size_kind_and_session(public, tmp_path, monkeypatch):
    from bindlab.studies import datasets
    from bindlab.ui.common import check_upload

    monkeypatch.setenv("BINDLAB_MAX_UPLOAD_MB", "1")
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * (2 << 20))
    for fn in (lambda: check_upload(str(big)), lambda: datasets.store_upload(str(big), "mcq", "s")):
        with pytest.raises(ValueError, match="limited to 1 MiB"):
            fn()
    one = tmp_path / "index.csv"
    one.write_text("image,shape\n")
    with pytest.raises(ValueError, match="upload one"):
        datasets.store_upload([str(one), str(one)], "mcq", "s")
    with pytest.raises(ValueError, match="needs a file named triplets.jsonl"):
        datasets.store_upload([str(one)], "triplets", "s")
    folder = datasets.store_upload([str(one)], "grid", "../../etc")  # a session name cannot climb out
    assert datasets.uploads_root() in folder.parents and (folder / "index.csv").is_file()
    assert datasets.delete_uploads("../../etc") and not folder.exists()


def test_the_grounding_folder_error_never_echoes_file_content(public):
    from bindlab.studies import datasets
    from bindlab.ui import grounding

    src = public.parent / "grid"
    src.mkdir()
    (src / "index.csv").write_text(f"HF_TOKEN={SECRET}\nfoo,bar\n")
    folder = datasets.store_upload([str(src / "index.csv")], "grid", "s")
    msg = _error(grounding.load, str(folder), "toy:clip", "hue", 0.0)
    assert SECRET not in msg and "HF_TOKEN" not in msg, msg


def test_a_caption_over_the_cap_is_refused_before_any_model_loads(public, monkeypatch):
    from bindlab.encoders import service
    from bindlab.ui import attention

    def no_model(*a, **k):
        raise AssertionError("a model was loaded for a caption over the cap")

    monkeypatch.setattr(service, "get_encoder", no_model)
    words = " ".join(["red cube"] * 150)  # 300 words: over the public cap of 200
    for text in (words, "x" * 2001):
        msg = _error(attention.analyse_text, "minilm", "later_to_earlier", text, "red:cube", 0)
        assert "above the cap" in msg


def test_unexpected_errors_show_no_detail_in_public_mode(public, caplog):
    from bindlab.ui.common import friendly

    @friendly
    def boom() -> None:
        raise RuntimeError(f"/srv/app/{SECRET}")

    msg = _error(boom)
    assert SECRET not in msg and "RuntimeError" in msg
    assert SECRET in caplog.text  # the server log keeps the traceback


# --- the running app, driven through its API ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def public_app(tmp_path_factory, default_scores_cached):
    """``python app.py`` in public mode with a fresh $BINDLAB_HOME and the default public roots; the home holds the
    run's embedding cache, so each page load reads the embedded default's MiniLM vectors instead of computing them."""
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.speed.browser import running_app

    home = tmp_path_factory.mktemp("public-home")
    # a set under $BINDLAB_HOME before the start: the page offers it (by an opaque value, never its path)
    write_benchmark(home / "sets" / "tiny", generate_saber(per_size=2, sizes=[2, 3], seed=0), {"seed": 0})
    seed_embedding_cache(home)
    env = {"BINDLAB_PUBLIC": "1", "BINDLAB_HOME": str(home), "BINDLAB_DATA_ROOTS": "", "BINDLAB_MAX_UPLOAD_MB": "2"}
    start_s = float(os.environ.get("BINDLAB_TEST_APP_START_S", "180"))
    with running_app(env=env, timeout_s=start_s, log=ROOT / ".app-public-test.log") as (url, _, _):
        yield url, home


def _client(url: str):
    gradio_client = pytest.importorskip("gradio_client")
    return gradio_client.Client(url, verbose=False, download_files=False)


def _api_error(client, *args, api_name: str) -> str:
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError) as e:
        client.predict(*args, api_name=api_name)
    return str(e.value)


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_file_routes_never_serve_server_files(public_app):
    url, home = public_app
    (home / "secret.txt").write_text(SECRET)
    for target in [
        "/etc/passwd",
        str(ROOT / ".git" / "config"),
        str(ROOT / "app.py"),
        str(home / "secret.txt"),
        "../../../../etc/passwd",
    ]:
        for route in ("/gradio_api/file=", "/file="):
            status, body = _get(url + route + urllib.parse.quote(target))
            assert status >= 400 or (
                b"root:" not in body
                and b"[core]" not in body
                and SECRET.encode() not in body
                and b"build_app" not in body
            ), (route, target, status)


def test_hostile_upload_free_paths_and_sessions_through_the_api(public_app, tmp_path):
    from gradio_client import handle_file

    url, _ = public_app
    a, b = _client(url), _client(url)
    # the data inputs take no free server path: a typed value that is not an offered set is refused by Gradio
    for p in OUTSIDE + MISSING:
        msg = _api_error(a, p, "bow", "tt", "all", "all", "all", 8, api_name="/browse_score")
        assert "root:" not in msg and "[core]" not in msg and "not found" not in msg.lower()
    # an uploaded MCQ whose image fields name server files: stored for this session, refused when scored
    choice, _ = a.predict(handle_file(str(_hostile_mcq(tmp_path / "up"))), api_name="/bl_data_upload")
    stored = choice["value"] if isinstance(choice, dict) else choice  # the dropdown's update: the stored file chosen
    assert stored.startswith("upload:mcq-") and "/" not in stored  # an opaque token, not the stored file's path
    msg = _api_error(a, stored, "toy:clip", "ti", "all", "all", "all", 8, api_name="/browse_score")
    assert "outside the data file's folder" in msg and "root:" not in msg
    # another session cannot use the first one's upload
    msg = _api_error(b, stored, "bow", "tt", "all", "all", "all", 8, api_name="/browse_score")
    assert "outside the data file's folder" not in msg
    # an upload over the size cap is refused by the upload route
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"{}\n" * (1 << 20))
    with pytest.raises(Exception):  # noqa: B017 - gradio_client raises its own error types for a refused upload
        a.predict(handle_file(str(big)), api_name="/bl_data_upload")
    # a caption over the cap: refused with the cap in the message
    msg = _api_error(a, "minilm", "later_to_earlier", "red " * 300, "", 0, "", api_name="/attention_text")
    assert "above the cap" in msg


def _server_paths(home: Path) -> list[str]:
    """The absolute server paths no page config may hold: $BINDLAB_HOME and the repo (as given and as realpaths)."""
    return sorted({str(home), os.path.realpath(home), str(ROOT), os.path.realpath(ROOT)})


def test_the_page_config_and_api_description_name_no_server_path(public_app):
    """What any visitor reads before calling anything: /config (the page's components, their choices and values)
    and the API description gradio_client builds (view_api): the data choices are opaque values, no server path."""
    url, home = public_app
    client = _client(url)
    status, body = _get(url + "/config")
    assert status == 200
    api = json.dumps(client.view_api(print_info=False, return_format="dict"), default=str)
    _, info = _get(url + "/gradio_api/info")
    for name, text in (("/config", body.decode()), ("view_api", api), ("/gradio_api/info", info.decode())):
        for path in _server_paths(home):
            assert path not in text, (name, path, text[max(0, text.find(path) - 200) : text.find(path) + 100])
    config = json.loads(body)
    data = next(c["props"] for c in config["components"] if c.get("props", {}).get("elem_id") == "bl-data")
    values = [v for _, v in data["choices"]]
    assert values[0] == "" and f"set:{home.name}/sets/tiny/mcq.jsonl" in values, values
    assert data["label"] == "MCQ file"  # the dropdown is drawn with its label (its props reach the page)


def test_scoring_with_an_opaque_data_value_works_through_the_api(public_app):
    url, home = public_app
    client = _client(url)
    out = client.predict(
        f"set:{home.name}/sets/tiny/mcq.jsonl", "bow", "tt", "all", "all", "all", 8, api_name="/browse_score"
    )
    text = json.dumps(out, default=str)
    assert "4 questions" in text and "accuracy" in text, text[:600]
    # the set's own server path is no value the input takes
    msg = _api_error(
        client, str(home / "sets" / "tiny" / "mcq.jsonl"), "bow", "tt", "all", "all", "all", 8, api_name="/browse_score"
    )
    assert "not one offered here" in msg and str(home) not in msg


def test_a_second_session_cannot_see_cancel_or_resume_the_first_sessions_job(public_app):
    url, _ = public_app
    a, b = _client(url), _client(url)
    # the launch answers the job picker and its message, then the job's status, bar, curves and the jobs table
    choice, msg, *_ = a.predict("minilm", "", 1, 1, 8, 5e-5, 4, "auto", api_name="/ft_launch")
    job = choice["value"] if isinstance(choice, dict) else choice  # the job dropdown's update
    try:
        assert job and job in msg
        for api in ("/ft_cancel", "/ft_resume"):
            err = _api_error(b, job, api_name=api)
            assert "no job" in err.lower(), err  # A's job reads like one that does not exist
        assert "recent jobs: none" in _api_error(b, job, api_name="/ft_poll")
        polled = b.predict("", api_name="/ft_poll")
        assert job not in json.dumps(polled, default=str)  # B's jobs table and job list do not show A's job
        assert job in json.dumps(a.predict(job, api_name="/ft_poll"), default=str)  # A still sees its own
    finally:
        a.predict(job, api_name="/ft_cancel")


@pytest.mark.ui
def test_a_visitors_job_survives_a_page_reload(public_app, browser):
    """Issue 32: the job a visitor started is still theirs after a reload (a new session id): the page keeps an owner
    token in the browser and claims it again. Another browser (its own token) does not see the job."""
    url, home = public_app
    ctx = browser.new_context()
    other = browser.new_context()
    job = None
    try:
        page = ctx.new_page()
        page.goto(url, timeout=120_000)
        page.get_by_role("tab", name="Finetune").click(timeout=180_000)
        box = page.locator("#ft-max-steps input").first
        box.fill("1")
        box.press("Tab")
        page.click("#ft-launch")
        page.wait_for_selector("#ft-message :text('Started job')", timeout=180_000)
        job = page.inner_text("#ft-message").split("job ")[1].split(";")[0].strip()
        page.reload()
        page.get_by_role("tab", name="Finetune").click(timeout=180_000)
        page.wait_for_function(
            "(job) => (document.querySelector('#ft-jobs') || {}).innerText?.includes(job)", arg=job, timeout=120_000
        )  # the reloaded page lists the job as its own
        _cancel_as_admin(home, job)  # its training is not what is tested: free the CPU for the stranger's page
        stranger = other.new_page()
        stranger.goto(url, timeout=120_000)
        stranger.get_by_role("tab", name="Finetune").click(timeout=180_000)
        stranger.wait_for_selector("#ft-jobs", timeout=60_000)
        stranger.wait_for_timeout(1500)
        assert job not in stranger.inner_text("#ft-jobs")
    finally:
        if job:
            _cancel_as_admin(home, job)
        ctx.close()
        other.close()


def _cancel_as_admin(home, job: str) -> None:
    from bindlab.jobs.manager import JobManager

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BINDLAB_HOME", str(home))
        try:
            JobManager(admin=True).cancel(job, grace_s=2)
        except ValueError:
            pass  # already finished or cancelled
