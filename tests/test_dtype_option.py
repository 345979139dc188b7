"""``dtype``, one run option (issue 53): the CLI's ``--dtype``, every request and ``bindlab.load_encoder`` pass it to the
backend, which runs a hub model in that precision. On CPU half precision falls back to float32 with a warning
(bindlab/encoders/runtime.py), and that warning is how these CPU tests see the option arrive."""

from __future__ import annotations

import logging

import pytest

import bindlab
from bindlab.cli import main
from bindlab.data.saber import generate_saber, write_benchmark
from bindlab.encoders.tiny import build_tiny

FELL_BACK = "dtype float16 asked for on CPU; using float32"


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    root = tmp_path_factory.mktemp("dtype")
    mcq = write_benchmark(root / "s", generate_saber(per_size=2, sizes=[2], seed=1), {"seed": 1})
    return build_tiny("hf-clip", root / "tiny-clip"), str(mcq)


def test_the_cli_passes_dtype_to_a_hub_model(tiny_clip, tmp_path, caplog):
    model, mcq = tiny_clip
    out = tmp_path / "r.json"
    with caplog.at_level(logging.WARNING):
        code = main(
            [
                "eval",
                "mcq",
                "--data",
                mcq,
                "--model",
                model,
                "--dtype",
                "float16",
                "--device",
                "cpu",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
    assert code in (0, None) and out.is_file()
    assert FELL_BACK in caplog.text


def test_an_unknown_dtype_is_refused_before_anything_loads(tiny_clip, capsys):
    model, mcq = tiny_clip
    code = main(["eval", "mcq", "--data", mcq, "--model", model, "--dtype", "bf16", "--no-progress"])
    assert code not in (0, None)
    assert "unknown dtype 'bf16'; choose auto, float32, bfloat16 or float16" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown dtype 'half'"):
        bindlab.load_encoder(model, dtype="half")


def test_the_api_loads_a_hub_model_in_the_dtype_asked_for(tiny_clip, caplog):
    model, _ = tiny_clip
    with caplog.at_level(logging.WARNING):
        enc = bindlab.load_encoder(model, device="cpu", dtype="float16")
        assert enc.embed_texts(["a red cube"]).shape[0] == 1
    assert FELL_BACK in caplog.text
    assert bindlab.load_encoder(model, device="cpu", dtype="float16") is enc  # one instance per (weights, options)
    assert bindlab.load_encoder(model, device="cpu") is not enc  # the default precision is another instance


def test_a_bundled_model_says_it_runs_in_float32(caplog):
    with caplog.at_level(logging.WARNING):
        bindlab.load_encoder("bow", dtype="bfloat16")
    assert "runs in float32: dtype bfloat16 applies to hub models" in caplog.text


def test_a_finetuned_model_over_a_bundled_base_says_it_runs_in_float32(tiny_st_job, caplog):
    """``lora:`` runs its base: over an ``st:`` base a dtype was ignored without a word (hf bases take it)."""
    with caplog.at_level(logging.WARNING):
        bindlab.load_encoder(f"lora:{tiny_st_job['job']}", dtype="bfloat16")
    assert f"lora:{tiny_st_job['job']} (base {tiny_st_job['model']}) runs in float32: dtype bfloat16" in caplog.text
