"""No path from a visitor (public mode): a published benchmark is named only by a manifest's name and its local copy
must lie inside the data roots; a model id is a listed id, ``bow`` or the visitor's own ``lora:<job>``, never a
server path; and no message a page shows names a server folder, the session id or an upload token.

Every refusal is probed with a target that exists and one that does not: the words must be the same, so no answer
says whether a server file or folder is there. Locally (not public) nothing changes.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from bindlab.data import adapters
from bindlab.data.files import REFUSED, DataError
from bindlab.studies.access import MODEL_REFUSED, check_model_access, redact, visitor

ROOT = Path(__file__).resolve().parents[2]
SECRET = "EXAM-ANSWER-KEY-42"  # content of a server file outside the roots that no visitor may see
SESSION = "sess7f3a9c2e1b"  # a browser session id


@pytest.fixture
def public(monkeypatch, tmp_path):
    """Public mode, the default public roots (the repo's data/ and bindlab/assets/, a fresh $BINDLAB_HOME)."""
    home = tmp_path / "home"
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    monkeypatch.setenv("BINDLAB_HOME", str(home))
    monkeypatch.delenv("BINDLAB_DATA_ROOTS", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    return home


@pytest.fixture
def outside(tmp_path):
    """A folder outside the public roots holding a 'secret' file in a benchmark's published format."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "data.jsonl").write_text(json.dumps({"image": SECRET, "caption": SECRET}) + "\n")
    (d / "grades-2026.bin").write_bytes(b"\0" * 16)
    (d / "evil.json").write_text(json.dumps({"name": "evil", "adapter": "winoground", "secret": SECRET}))
    return d


@pytest.fixture
def page_session():
    """Callbacks run as if served for browser session SESSION (what ``friendly`` reads from Gradio's request)."""
    from gradio.context import LocalContext

    token = LocalContext.request.set(SimpleNamespace(session_hash=SESSION))
    yield SESSION
    LocalContext.request.reset(token)


def _message(fn, *args, **kwargs) -> str:
    """The message of the error ``fn`` raises: a ``gr.Error`` (a tab callback) or a ``ValueError`` (a study)."""
    with pytest.raises((gr.Error, ValueError)) as e:
        fn(*args, **kwargs)
    return html.unescape(str(e.value.message if isinstance(e.value, gr.Error) else e.value))


def _mcq(folder: Path) -> Path:
    from bindlab.data.saber import generate_saber, write_benchmark

    return write_benchmark(folder, generate_saber(per_size=1, sizes=[2], seed=0), {"seed": 0})


def _pairs(folder: Path) -> Path:
    """A one-pair Pairs file whose two images are not there."""
    folder.mkdir(parents=True, exist_ok=True)
    side = {
        "base": ("images/base.png", "A red cube to the left of a blue sphere."),
        "foil": ("images/foil.png", "A red cube to the right of a blue sphere."),
    }
    row = {
        "id": "p0",
        "scene_id": "s0",
        "edit_type": "move_object",
        "edit_category": "spatial",
        **{k: {"image": img, "captions": {"short": cap}} for k, (img, cap) in side.items()},
    }
    path = folder / "pairs.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path


# --- (1) published benchmarks: a manifest's name, a local copy inside the roots -------------------------------------
BAD_NAMES = [
    "../../etc/passwd",
    "/etc/passwd.json",
    "x/../../y",
    "winoground.json",
    "../winoground",
    "~/x",
    "winoground/",
    "no_such_benchmark",
]


def test_a_benchmark_is_named_only_by_a_manifests_name(public, outside):
    from bindlab.studies.benchmark import BenchmarkRequest
    from bindlab.studies.compare import CompareRequest

    names = [
        *BAD_NAMES,
        str(adapters.manifests_dir() / "winoground.json"),
        str(outside / "evil.json"),
        str(outside / "missing.json"),
    ]
    expected = adapters.benchmark_refused()
    assert "winoground" in expected and "sugarcrepe_pp" in expected
    calls = {
        "load_manifest": adapters.load_manifest,
        "load_benchmark": adapters.load_benchmark,
        "BenchmarkRequest": lambda n: BenchmarkRequest(name=n, model="bow"),
        "CompareRequest": lambda n: CompareRequest(models="bow,minilm", suite=["mcq", f"benchmark:{n}"]),
    }
    for label, call in calls.items():
        for name in names:
            msg = _message(call, name)
            assert msg == expected, (label, name, msg)
    # a local copy by path is no name either (another session's upload included), existing or not
    for path in (str(outside), str(outside / "nope"), str(public / "uploads" / "other" / "pairs-x")):
        assert _message(CompareRequest, models="bow,minilm", suite=[f"benchmark:winoground={path}"]) == expected
    assert adapters.check_benchmark_name(" winoground ") == "winoground"


def test_the_compare_tab_refuses_a_benchmark_path_with_the_same_words(public, outside, page_session):
    from bindlab.ui import compare

    expected = adapters.benchmark_refused()
    for bench in (
        "../../etc/passwd",
        str(outside / "evil.json"),
        str(outside / "missing.json"),
        f"winoground={outside}",
        f"benchmark:winoground={outside / 'nope'}",
    ):
        msg = _message(compare.run, ["bow", "minilm"], [], "tt", "", "", bench)
        assert msg == expected, (bench, msg)


@pytest.fixture
def manifests(tmp_path, monkeypatch, outside, public):
    """A manifests folder of our own: 'evil' (local copy outside the roots, existing), 'ghost' (outside, missing),
    'climb' (relative, climbing out of $BINDLAB_HOME) and 'good' (inside $BINDLAB_HOME); the adapter's reader is
    replaced by one that records what it was asked to open."""
    from bindlab.data.adapters import winoground

    folder = tmp_path / "manifests"
    folder.mkdir()
    local = {"evil": str(outside), "ghost": str(outside / "nope"), "climb": "../outside", "good": "benchmarks/good"}
    for name, path in local.items():
        (folder / f"{name}.json").write_text(
            json.dumps({"name": name, "adapter": "winoground", "source": {"local": path}, "url": "https://example.org"})
        )
    (public / "benchmarks" / "good").mkdir(parents=True)
    opened: list[Path] = []

    def load_local(path, split=None, limit=0, images=None):
        opened.append(Path(path))
        return [SimpleNamespace(id="x")]

    monkeypatch.setattr(adapters, "manifests_dir", lambda: folder)
    monkeypatch.setattr(winoground, "load_local", load_local)
    return opened


def test_a_manifests_local_copy_outside_the_roots_is_never_opened_nor_named(manifests, outside, public, monkeypatch):
    messages = {}
    for name in ("evil", "ghost", "climb"):
        for source in ("auto", "local"):
            msg = _message(adapters.load_benchmark, name, source=source)
            assert SECRET not in msg and str(outside) not in msg and "outside" not in msg, msg
            messages.setdefault(source, set()).add(msg.replace(name, "NAME"))
    assert all(len(m) == 1 for m in messages.values()), messages  # existing or missing: the same words
    assert manifests == []  # nothing outside the roots was opened
    bench = adapters.load_benchmark("good")  # a local copy inside the roots loads
    assert manifests == [Path(os.path.realpath(public / "benchmarks" / "good"))] and bench.name == "good"
    # a data path given by the caller: inside the roots only (the one refusal of every data path)
    for data in (str(outside), str(outside / "nope")):
        assert REFUSED in _message(adapters.load_benchmark, "good", data=data)
    # locally nothing changes: the manifest's copy loads wherever it is
    monkeypatch.setenv("BINDLAB_PUBLIC", "0")
    adapters.load_benchmark("evil")
    assert manifests[-1] == outside


# --- (2) model ids: listed ids, bow, the visitor's own lora: jobs; never a server path -------------------------------
PATH_IDS = [
    "st:/proc/self",
    "hf:/root",
    "toy:/tmp/x",
    "qwen3vl:/",
    "open_clip:local-dir:/etc",
    "st:~",
    "hf:../x",
    "st:./bindlab",
    "hf:~/.cache",
    "toy:clip/../../etc",
    "hf:openai/clip-vit-base-patch32@..",
    "nope:model",
    "hf:someone/unlisted-model",
    "/etc/passwd",
]


def _existing_and_missing(home: Path, outside: Path) -> list[str]:
    """Path ids in pairs: a folder that exists and one that does not (a job folder, a folder holding weights)."""
    job = home / "jobs" / "20990101-000000-a1a1a1"
    job.mkdir(parents=True)
    return [
        f"hf:{job}",
        f"hf:{job.parent / '20990101-000000-ffffff'}",
        f"qwen3vl:{outside}",
        f"qwen3vl:{outside / 'nope'}",
        f"st:{outside}",
        f"st:{outside}-nope",
        f"open_clip:local-dir:{outside}",
        f"toy:{outside}",
    ]


def test_a_model_id_naming_a_path_gets_one_message_whether_it_exists_or_not(public, outside, monkeypatch):
    from bindlab.encoders import service
    from bindlab.studies import common

    def no_load(*a, **k):
        raise AssertionError("a refused model id reached the loader")

    monkeypatch.setattr(service, "get_encoder", no_load)
    ids = PATH_IDS + _existing_and_missing(public, outside)
    with visitor(SESSION):
        messages = {m: _message(check_model_access, m) for m in ids}
        messages.update({f"get_encoder {m}": _message(common.get_encoder, m) for m in ids})
    assert set(messages.values()) == {MODEL_REFUSED}, messages
    for part in ("grades", "jobs", str(outside), "proc", "/root", "found", "exist"):
        assert part not in MODEL_REFUSED


def test_listed_models_still_load_in_public_mode_and_any_id_locally(public, monkeypatch):
    from bindlab.studies import common

    with visitor(SESSION):
        for model in ("toy:clip", "minilm", "bow", "bow:words", "st:all-MiniLM-L6-v2"):
            assert check_model_access(model) == model
        for model in ("toy:clip", "minilm", "bow"):
            assert common.get_encoder(model).embed_texts(["a red cube"]).shape[0] == 1
        monkeypatch.setenv("BINDLAB_SERVER_MEMORY_GB", "16")  # a CPU Space
        monkeypatch.setenv("BINDLAB_PUBLIC_REVISIONS", "hf:openai/clip-vit-base-patch32@main")
        for model in (
            "hf:openai/clip-vit-base-patch32",
            "open_clip:ViT-B-32/openai",
            "qwen3vl:Qwen/Qwen3-VL-Embedding-2B",
            "hf:openai/clip-vit-base-patch32@main",
        ):
            assert check_model_access(model) == model  # listed hub ids pass the check (loading needs the hub)
    monkeypatch.setenv("BINDLAB_PUBLIC", "0")
    for model in PATH_IDS:
        assert check_model_access(model) == model


def test_public_mode_offers_no_free_revisions_and_no_model_too_large_for_the_server(public, monkeypatch):
    """Issue 56, item 6: any revision of a listed hub id, and an 8B model on a 16 GB CPU Space, were accepted."""
    monkeypatch.setenv("BINDLAB_SERVER_MEMORY_GB", "16")
    with visitor(SESSION):
        with pytest.raises(
            ValueError,
            match=r"too large for this server: about 8.8 B parameters need 53 GB .* "
            r"declares 16 GB \(BINDLAB_SERVER_MEMORY_GB\)",
        ):
            check_model_access("qwen3vl:Qwen/Qwen3-VL-Embedding-8B")
        with pytest.raises(ValueError, match=r"offered here at its default revision only: drop the '@0123abc'"):
            check_model_access("qwen3vl:Qwen/Qwen3-VL-Embedding-2B@0123abc")
        monkeypatch.setenv("BINDLAB_SERVER_MEMORY_GB", "80")  # a GPU Space that declares more
        assert check_model_access("qwen3vl:Qwen/Qwen3-VL-Embedding-8B") == "qwen3vl:Qwen/Qwen3-VL-Embedding-8B"
        monkeypatch.setenv("BINDLAB_SERVER_MEMORY_GB", "lots")
        with pytest.raises(ValueError, match="must be a positive number of GB"):
            check_model_access("hf:openai/clip-vit-base-patch32")
    monkeypatch.setenv("BINDLAB_PUBLIC", "0")  # locally: the person's own machine, any id and revision
    assert (
        check_model_access("qwen3vl:Qwen/Qwen3-VL-Embedding-8B@0123abc") == "qwen3vl:Qwen/Qwen3-VL-Embedding-8B@0123abc"
    )


def test_every_listed_model_has_a_size():
    from bindlab.encoders.presets import PRESETS

    assert all(p.params_m > 0 for p in PRESETS if p.source == "hub")


def _model_callbacks(mcq: str, pairs_file: str, home: Path):
    """(name, call(model)) for every tab callback that takes a model id (the grounding ones with the default grid,
    which a refused id must not get as far as rendering)."""
    from bindlab.ui import attention, browse, compare, embedding_map, finetune, grounding, pairs, walkthrough

    request = SimpleNamespace(session_hash=SESSION)
    return [
        ("browse", lambda m: browse.score(mcq, m, "tt", "all", "all", "all", 8)),
        ("pairs", lambda m: pairs.score(pairs_file, m, "short")),
        ("grounding", lambda m: grounding.load("", m, "hue", 0.0)),
        ("grounding-sweep", lambda m: grounding.run_sweep("", m)),
        ("attention", lambda m: attention.compute(m, "", mcq, 5, "later_to_earlier")),
        ("attention-text", lambda m: attention.analyse_text(m, "later_to_earlier", "a red cube", "red:cube", 0)),
        ("map", lambda m: embedding_map.make_map(mcq, m, [], 20, 0, "role", "pca")),
        ("compare", lambda m: compare.run([m, "bow"], ["mcq"], "tt", mcq, "", "")),
        ("finetune", lambda m: finetune.launch(m, str(home / "triplets"), 1, 1, 8, 5e-5, 4, "auto", request=request)),
        ("walkthrough-attention", lambda m: walkthrough.run_attention(m, None, None)),
    ]


def test_every_tab_refuses_a_path_model_id_with_the_same_words(public, outside, page_session, monkeypatch):
    from bindlab.encoders import service

    def no_load(*a, **k):
        raise AssertionError("a refused model id reached the loader")

    monkeypatch.setattr(service, "get_encoder", no_load)
    mcq = str(_mcq(public / "sets" / "mini"))
    pairs_file = str(_pairs(public / "sets" / "pairs"))
    ids = ["st:/proc/self", "hf:/root", f"qwen3vl:{outside}", f"qwen3vl:{outside / 'nope'}"]
    for name, call in _model_callbacks(mcq, pairs_file, public):
        messages = {m: _message(call, m) for m in ids}
        assert len(set(messages.values())) == 1, (name, messages)
        msg = messages[ids[0]]
        assert "not offered on this server" in msg, (name, msg)
        assert not any(p in msg for p in ("/proc", "/root", str(outside), "grades")), (name, msg)


# --- (3) no server path, session id or upload token in a page's message ----------------------------------------------
def _server_words(home: Path, tokens: list[str]) -> list[str]:
    return sorted({str(home), os.path.realpath(home), SESSION, "/tmp", str(ROOT), *tokens})


def test_public_error_messages_name_no_server_path_session_or_upload_token(
    public, outside, page_session, tmp_path, monkeypatch
):
    from bindlab.studies import datasets
    from bindlab.ui import browse, compare, pairs
    from bindlab.ui.common import friendly

    # a malformed JSONL upload (line 2 is not JSON)
    src = tmp_path / "src"
    src.mkdir()
    bad = src / "mcq.jsonl"
    bad.write_text(_mcq(src / "ok").read_text().splitlines()[0] + "\n{not json\n")
    bad_mcq = datasets.store_upload(str(bad), "mcq", SESSION)
    # an uploaded pairs file whose images did not come with it
    no_images = datasets.store_upload(str(_pairs(src / "pairs")), "pairs", SESSION)
    tokens = [bad_mcq.parent.name, no_images.parent.name]
    # an upload over the size cap, and one whose temporary file has gone
    monkeypatch.setenv("BINDLAB_MAX_UPLOAD_MB", "1")
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * (2 << 20))
    cases = {
        "upload over the cap": lambda: friendly(datasets.store_upload)(str(big), "mcq", SESSION),
        "upload gone": lambda: friendly(datasets.store_upload)(
            str(tmp_path / "gradio" / "abc" / "gone.jsonl"), "mcq", SESSION
        ),
        "malformed upload": lambda: browse.score(str(bad_mcq), "bow", "tt", "all", "all", "all", 8),
        "missing pair image": lambda: pairs.score(str(no_images), "toy:clip", "short"),
        "missing file in the roots": lambda: browse.score(
            str(public / "nope" / "mcq.jsonl"), "bow", "tt", "all", "all", "all", 8
        ),
        "bad model": lambda: browse.score(str(bad_mcq), f"st:{public}", "tt", "all", "all", "all", 8),
        "bad benchmark": lambda: compare.run(["bow", "minilm"], [], "tt", "", "", f"winoground={bad_mcq}"),
        "a study's message quoting paths": lambda: friendly(_raise)(
            f"{bad_mcq}:2 and {public}/sets and {tmp_path}/gradio/abc/x.png and upload:{tokens[0]} of {SESSION}"
        ),
    }
    words = _server_words(public, tokens)
    for label, call in cases.items():
        msg = _message(call)
        assert msg.strip(), label
        leaked = [w for w in words if w in msg]
        assert not leaked, (label, leaked, msg)
    assert "[your upload]/mcq.jsonl:2" in _message(cases["malformed upload"])
    assert "missing" in _message(cases["upload gone"]) and "gone.jsonl" in _message(cases["upload gone"])


def _raise(text: str) -> None:
    raise DataError(text)


def test_redact_rules_and_local_mode_unchanged(public, tmp_path, monkeypatch):
    from bindlab.studies import datasets

    own = datasets.session_uploads(SESSION) / "mcq-abcd1234"
    other = datasets.session_uploads("someone-else") / "pairs-zzzz9999"
    text = (
        f"{own}/mcq.jsonl:3: bad; {other}/p.jsonl; {public}/sets/tiny/mcq.jsonl; {public}2/x; "
        f"/var/tmp/keep; {tmp_path}/gradio/9f/a.png; {ROOT}/bindlab/data_manifests/x.json; session {SESSION}"
    )
    out = redact(text, SESSION)
    assert out == (
        "[your upload]/mcq.jsonl:3: bad; [an upload]/p.jsonl; home/sets/tiny/mcq.jsonl; x; /var/tmp/keep; "
        "a.png; [app]/bindlab/data_manifests/x.json; session [session]"
    ), out
    monkeypatch.setenv("BINDLAB_PUBLIC", "0")
    assert redact(text, SESSION) == text


def test_an_owner_token_names_the_same_owner_for_every_session_and_nothing_else():
    """A page's owner token (kept in the browser) makes every session that claims it one job owner; a malformed
    token gets a fresh one; the owner name is a hash, never the token."""
    from bindlab.studies import access

    token = access.claim_owner("s1", "")
    assert len(token) == 32 and int(token, 16) >= 0
    assert access.claim_owner("s2", token) == token
    assert access.job_owner("s1") == access.job_owner("s2") != "session:s1"
    assert token not in access.job_owner("s1")
    assert access.claim_owner("s3", "<script>") != "<script>"  # not a token: a new one
    assert access.job_owner("s3") != access.job_owner("s1")
    assert access.job_owner("never-claimed") == "session:never-claimed"
    assert access.job_owner(None) is None
    with pytest.raises(ValueError, match="session"):
        access.claim_owner("", token)


def test_a_flood_of_claims_from_one_address_cannot_push_out_another_visitors(monkeypatch):
    """Issue 56, item 2: past 10,000 claims a real visitor's claim was evicted (its jobs and lora: models vanished
    until a reload). A flood from one address now only evicts that address's own claims."""
    from bindlab.studies import access

    monkeypatch.setattr(access, "MAX_CLAIMS", 300)
    real = access.claim_owner("real-visitor", "", "198.51.100.7")
    owner = access.job_owner("real-visitor")
    for i in range(1000):  # page loads with fresh session hashes, one address
        access.claim_owner(f"flood-{i}", "", "203.0.113.66")
    assert access.job_owner("real-visitor") == owner and real
    flood = [s for s in access._CLAIMS if s.startswith("flood-")]
    assert len(flood) == access.MAX_CLAIMS_PER_ADDRESS and flood[-1] == "flood-999"


def test_one_address_holds_a_bounded_number_of_live_jobs(monkeypatch, tmp_path, tiny_st_job):
    """However many owners (sessions, tokens) one client address uses, it may have at most
    max_jobs_per_session + max_queued_per_session jobs running or queued."""
    from bindlab.jobs.manager import JobLimitError, JobManager

    monkeypatch.setenv("BINDLAB_MAX_JOBS_PER_SESSION", "1")
    monkeypatch.setenv("BINDLAB_MAX_QUEUED_PER_SESSION", "1")
    monkeypatch.setenv("BINDLAB_MAX_JOBS_GLOBAL", "1")
    cfg = {
        "model": tiny_st_job["model"],
        "data": tiny_st_job["triplets"],
        "max_steps": 1,
        "batch_size": 4,
        "eval_rows": 8,
        "device": "cpu",
        "evaluate": False,
        "debug": {"sleep_per_step": 30.0},
    }
    root = tmp_path / "jobs"
    jobs = []
    try:
        for owner in ("owner:a", "owner:b"):
            jobs.append((JobManager(root, owner=owner, address="addr:x"), None))
            jobs[-1] = (jobs[-1][0], jobs[-1][0].submit(cfg))
        with pytest.raises(JobLimitError, match="network address"):
            JobManager(root, owner="owner:c", address="addr:x").submit(cfg)
        other = JobManager(root, owner="owner:d", address="addr:y")  # another address is not held back by it
        jobs.append((other, other.submit(cfg)))
    finally:
        for m, job in jobs:
            try:
                m.cancel(job, grace_s=1)
            except ValueError:
                pass
