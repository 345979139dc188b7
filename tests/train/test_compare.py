"""Base vs finetuned compare (bindlab.studies.finetune) on a real 2-step job on a tiny random encoder: MCQs and per-layer attention margins side
by side (the LoRA model's attention maps come from the adapted weights), a zero adapter leaves the margins exactly
as the base's, a model without a text transformer is reported instead of breaking the compare, and the CLI prints
and writes the attention part."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from bindlab.jobs.manager import JobManager, read_json, write_json_atomic

LABELS = ("base", "unscaled", "lines")


@pytest.fixture(scope="module")
def done_job(tiny_st_job):
    """A finished 2-step job (large lr, so the adapter is far from zero) under the session's $BINDLAB_HOME/jobs (the
    run's shared one: these tests only read it), and a copy of it whose adapters are exactly zero."""
    from bindlab.encoders.adapter import read_adapter, save_adapter

    m, job = JobManager(), tiny_st_job["job"]  # the default root, where lora:<job_id> resolves
    assert str(m.root) == tiny_st_job["root"]

    zero = f"{job}-zero-{os.getpid()}"  # each xdist worker that runs these tests makes its own copy
    d = m.job_dir(job)
    shutil.copytree(d, m.root / zero)
    write_json_atomic(
        m.root / zero / "status.json", {**read_json(d / "status.json"), "id": zero, "model_id": f"lora:{zero}"}
    )
    for name in ("adapter_lines.safetensors", "adapter_unscaled.safetensors"):
        state = read_adapter(d / name)
        assert any(float(v.abs().max()) > 0 for k, v in state.items() if "lora_B" in k)
        save_adapter(m.root / zero / name, {k: v * 0 for k, v in state.items()})
    return m, job, zero


def test_compare_has_per_layer_margins_for_every_model_and_their_differences(done_job, small_benchmark):
    from bindlab.encoders.tiny import LAYERS
    from bindlab.studies.finetune import compare_job
    from bindlab.train.compare import format_compare
    from bindlab.train.compare_attention import attention_curves, attention_rows

    m, job, _ = done_job
    res = compare_job(job, small_benchmark[0], limit=18, manager=m, attention_limit=12)
    assert set(res["mcq"]) == set(LABELS)
    att = res["attention"]
    assert att["available"] and att["n_captions"] == 12 and att["base"] == "base"
    for label in LABELS:
        s = att["models"][label]
        assert s["layers"] == list(range(LAYERS)) and s["n_captions"] > 0
        assert all(isinstance(x, float) for x in s["margin_mean"] + s["ci_low"] + s["ci_high"])
        assert all(lo <= mu <= hi for lo, mu, hi in zip(s["ci_low"], s["margin_mean"], s["ci_high"], strict=True))
    assert att["models"]["lines"]["model"] == f"lora:{job}"
    for label in ("unscaled", "lines"):
        d = att["diff"][label]
        assert len(d["diff_mean"]) == LAYERS and d["deep"]["layers"] == [LAYERS - 1]
        # the paired difference is the difference of the means (same captions valid for both)
        base, ft = att["models"]["base"]["margin_mean"], att["models"][label]["margin_mean"]
        assert d["diff_mean"] == pytest.approx([f - b for b, f in zip(base, ft, strict=True)], abs=1e-5)
        assert d["last"]["mean"] == pytest.approx(d["diff_mean"][-1])
    # lr 1e-2 moved the attention: the finetuned margins are not the base's
    assert max(abs(x) for x in att["diff"]["unscaled"]["diff_mean"]) > 1e-6
    assert [c["label"].split(" ")[0] for c in attention_curves(att)] == list(LABELS)
    assert [r["model"] for r in attention_rows(att)] == list(LABELS)
    text = format_compare(res)
    assert "attention binding margin" in text and "Δ lines" in text and "over the deep layers" in text
    json.dumps(res)  # the CLI writes it as JSON


def test_a_zero_adapter_gives_exactly_the_base_margins(done_job, small_benchmark):
    from bindlab.studies.finetune import compare_job

    m, _, zero = done_job
    att = compare_job(zero, small_benchmark[0], limit=9, manager=m, attention_limit=0)["attention"]
    assert att["n_captions"] == 9
    base = att["models"]["base"]["margin_mean"]
    for label in ("unscaled", "lines"):
        assert att["models"][label]["margin_mean"] == base
        assert att["diff"][label]["diff_mean"] == [0.0] * len(base)
        assert att["diff"][label]["last"] == {"layer": len(base) - 1, "mean": 0.0, "ci_low": 0.0, "ci_high": 0.0}


def test_a_model_without_attention_is_reported_not_fatal(done_job, small_benchmark):
    from bindlab.analysis.attention import load_caption_sets
    from bindlab.encoders.base import load_encoder
    from bindlab.studies.finetune import attention_compare, compare_job
    from bindlab.train.compare_attention import attention_rows, format_attention

    m, job, _ = done_job
    caps = load_caption_sets(small_benchmark[0], limit=4)["queries"]
    ft = load_encoder(f"lora:{job}")
    att = attention_compare({"base": load_encoder("bow"), "lines": ft}, caps)
    assert not att["available"] and att["note"].startswith("attention margins are not available — bow")
    assert "not available" in format_attention(att)
    att = attention_compare({"base": ft, "other": load_encoder("bow")}, caps)
    assert att["available"] and "not available — bow" in att["diff"]["other"]["note"]
    assert "other: attention margins are not available — bow" in format_attention(att)
    assert attention_rows(att)[1]["captions"] == 0
    assert compare_job(job, small_benchmark[0], limit=3, manager=m, attention_limit=None)["attention"] is None
    with pytest.raises(ValueError, match="attention_limit"):
        compare_job(job, small_benchmark[0], manager=m, attention_limit=-1)


def test_jobs_compare_cli_prints_and_writes_the_attention_part(done_job, small_benchmark, tmp_path, capsys):
    from bindlab.cli import main

    _, job, _ = done_job
    out = tmp_path / "cmp.json"
    # --no-report: the separated report (most of a compare's work) is the CLI's in tests/studies/test_finetune.py
    assert (
        main(
            [
                "jobs",
                "compare",
                job,
                "--data",
                str(small_benchmark[0]),
                "--limit",
                "9",
                "--no-report",
                "--attention-limit",
                "5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "MCQ accuracy" in text and "attention binding margin (later_to_earlier, 5 queries)" in text
    res = json.loads(out.read_text())
    assert set(res["attention"]["models"]) == set(LABELS)
    assert np.isfinite(res["attention"]["diff"]["lines"]["deep"]["mean"])
    assert (
        main(
            ["jobs", "compare", job, "--data", str(small_benchmark[0]), "--limit", "3", "--no-attention", "--no-report"]
        )
        == 0
    )
    assert "attention binding margin" not in capsys.readouterr().out
