"""Compare's request checks before any model loads: the number of models per request is capped
(``limits().max_compare_models``, 8 locally, 4 in public mode, ``$BINDLAB_MAX_COMPARE_MODELS``), and every data path
it takes (``--data``, ``--pairs-data``, a benchmark's local copy in ``benchmark:NAME=PATH``) resolves inside the
allowed data roots, with the one message that says nothing about the path."""

from __future__ import annotations

import pytest

from bindlab.data.files import REFUSED
from bindlab.studies.compare import CompareRequest

MODELS = [f"toy:m{i}" for i in range(10)]  # ids are not loaded by the request: only counted


@pytest.fixture
def local(monkeypatch):
    monkeypatch.delenv("BINDLAB_PUBLIC", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    monkeypatch.delenv("BINDLAB_MAX_COMPARE_MODELS", raising=False)


def test_models_per_request_are_capped_locally_and_tighter_in_public_mode(local, monkeypatch):
    assert CompareRequest(models=MODELS[:8]).models == MODELS[:8]
    with pytest.raises(
        ValueError,
        match=r"9 encoders given; one comparison takes at most 8 "
        r"\(BINDLAB_MAX_COMPARE_MODELS\)",
    ):
        CompareRequest(models=",".join(MODELS[:9]))
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    assert len(CompareRequest(models=MODELS[:4]).models) == 4
    with pytest.raises(ValueError, match="at most 4"):
        CompareRequest(models=MODELS[:5])
    monkeypatch.setenv("BINDLAB_MAX_COMPARE_MODELS", "2")
    with pytest.raises(ValueError, match="3 encoders given; one comparison takes at most 2"):
        CompareRequest(models=MODELS[:3])
    # duplicates count once: "a,a,b" is two models
    assert CompareRequest(models=["bow", "bow", "minilm"]).models == ["bow", "minilm"]


def test_the_cap_is_checked_by_the_cli_and_the_tab_before_any_model_loads(local, monkeypatch, capsys):
    import gradio as gr

    from bindlab.cli import main
    from bindlab.encoders import service
    from bindlab.ui import compare

    def no_load(*a, **k):
        raise AssertionError("a model was loaded for a request over the cap")

    monkeypatch.setattr(service, "get_encoder", no_load)
    monkeypatch.setenv("BINDLAB_MAX_COMPARE_MODELS", "2")
    assert main(["compare", "--models", "bow,minilm,toy:clip"]) == 2
    err = capsys.readouterr().err
    assert "at most 2 (BINDLAB_MAX_COMPARE_MODELS)" in err and "Traceback" not in err
    with pytest.raises(gr.Error, match="at most 2"):
        compare.run(["bow", "minilm", "toy:clip"], ["mcq"], "tt", "", "", "")


@pytest.mark.usefixtures("tmp_roots")
@pytest.mark.parametrize("field", ["data", "pairs_data", "benchmark"])
def test_every_data_path_of_a_comparison_resolves_inside_the_roots(local, field):
    messages = set()
    for outside in ("/etc/passwd", "/etc/no-such-file-bindlab"):
        kwargs = (
            {"suite": ["mcq", f"benchmark:sugarcrepe={outside}"]}
            if field == "benchmark"
            else {field: outside, "suite": ["mcq", "pairs"]}
        )
        with pytest.raises(ValueError) as e:
            CompareRequest(models="bow,minilm", **kwargs)
        messages.add(str(e.value))
    assert len(messages) == 1, messages  # existing or missing: the same words
    msg = messages.pop()
    assert REFUSED in msg and "passwd" not in msg and "no-such-file" not in msg


@pytest.mark.usefixtures("tmp_roots")
def test_the_cli_refuses_pairs_data_outside_the_roots_with_one_line(local, capsys):
    from bindlab.cli import main

    assert main(["compare", "--models", "bow,minilm", "--suite", "pairs", "--pairs-data", "/etc/passwd"]) == 2
    err = capsys.readouterr().err
    assert REFUSED in err and "Traceback" not in err and "root:" not in err and len(err.strip().splitlines()) == 1
