"""The CLI as a user runs it: real files, the commands' own output and exit codes.

Most checks call ``bindlab.cli.main`` in the test process (:func:`tests.cli_run.run`: the same argv, stdout, stderr and exit code
as ``python -m bindlab``, without a new interpreter paying ~4 s of CPU to import torch each time); one test runs the
real ``python -m bindlab`` subprocess, and tests/test_documented_commands.py runs every command the README shows
that way."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.cli_run import run


def test_the_real_command_exits_2_with_one_line_and_0_with_its_output(tmp_path):
    """``python -m bindlab`` as a process: an error is one line on stderr with exit code 2, a result exits 0."""
    bad = tmp_path / "none.jsonl"
    p = subprocess.run(
        [sys.executable, "-m", "bindlab", "eval", "mcq", "--data", str(bad), "--model", "bow"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ},
    )
    assert p.returncode == 2 and "file not found" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "bindlab", "models"], capture_output=True, text=True, timeout=600, env={**os.environ}
    )
    assert p.returncode == 0 and "minilm" in p.stdout, p.stderr


def test_generate_eval_round_trip(tmp_path):
    out = tmp_path / "s"
    p = run("generate", "saber", "--out", str(out), "--per-size", "4", "--sizes", "2-4", "--seed", "5")
    assert "generated 12 questions" in p.stdout
    lines = (out / "mcq.jsonl").read_text().splitlines()
    assert len(lines) == 12
    assert json.loads((out / "meta.json").read_text())["seed"] == 5

    res = tmp_path / "r.json"
    items = tmp_path / "items.jsonl"
    run("eval", "mcq", "--data", str(out / "mcq.jsonl"), "--model", "bow", "--out", str(res), "--per-item", str(items))
    r = json.loads(res.read_text())
    tt = r["pairings"]["tt"]
    assert tt["by_n"] == {"2": pytest.approx(1 / 3), "3": pytest.approx(0.25), "4": pytest.approx(0.25)}
    assert 0 <= tt["accuracy"] <= 1 and tt["n"] == 12
    prov = r["provenance"]
    assert prov["encoder"]["id"] == "bow:words" and prov["seed"] == 5 and len(prov["dataset"]["sha256"]) == 64
    rows = [json.loads(x) for x in items.read_text().splitlines()]
    assert len(rows) == 12 and {"id", "scores", "answer", "credit"} <= set(rows[0])

    rres = tmp_path / "rr.json"
    run("eval", "retrieval", "--data", str(out / "mcq.jsonl"), "--model", "bow", "--out", str(rres))
    rr = json.loads(rres.read_text())["pairings"]["tt"]
    assert set(rr["map"]) == {"all", "independent", "nested"}
    assert all(0 <= v <= 1 for v in (rr["r@1"], rr["r@5"], rr["map"]["all"]))
    assert set(rr["containment"]) >= {"subset_outranks_exact", "superset_outranks_exact", "own_question_top4"}


def test_user_errors_are_one_line_not_tracebacks(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n')
    for args, msg in [
        (("eval", "mcq", "--data", str(bad), "--model", "bow"), "bad.jsonl:1: missing field"),
        (("eval", "mcq", "--data", str(tmp_path / "none.jsonl"), "--model", "bow"), "file not found"),
        (("eval", "mcq", "--data", str(bad), "--model", "nope:x"), "unknown encoder backend"),
        (("generate", "saber", "--out", str(tmp_path / "o"), "--sizes", "1-3"), "between 2 and 20"),
    ]:
        p = run(*args, check=False)
        assert p.returncode == 2
        assert msg in p.stderr
        assert "Traceback" not in p.stderr


def test_models_lists_presets_and_why():
    p = run("models")
    assert "minilm" in p.stdout and "bow" in p.stdout
    assert "hf:openai/clip-vit-base-patch32" in p.stdout
    assert "hub unreachable" in p.stdout  # tests run with HF_HUB_OFFLINE=1


def test_every_command_has_help():
    for args in (
        ("--help",),
        ("generate", "saber", "--help"),
        ("eval", "mcq", "--help"),
        ("eval", "retrieval", "--help"),
        ("models", "--help"),
        ("bench", "--help"),
    ):
        assert "usage" in run(*args).stdout


def test_image_benchmark_end_to_end_with_a_tiny_image_text_encoder(tmp_path):
    """generate saber --images, then eval mcq and retrieval in all four pairings with a tiny random CLIP."""
    from bindlab.encoders.tiny import build_tiny

    model = build_tiny("hf-clip", tmp_path / "tiny-clip")
    out = tmp_path / "s"
    p = run("generate", "saber", "--images", "--per-size", "2", "--sizes", "2-3", "--size", "64", "--out", str(out))
    assert "rendered 20 new images" in p.stdout
    p = run("generate", "saber", "--images", "--per-size", "2", "--sizes", "2-3", "--size", "64", "--out", str(out))
    assert "rendered 0 new images (20 already there)" in p.stdout  # resumable
    res = tmp_path / "r.json"
    p = run(
        "eval",
        "mcq",
        "--data",
        str(out / "mcq.jsonl"),
        "--model",
        model,
        "--pairings",
        "tt,ti,it,ii",
        "--out",
        str(res),
    )
    r = json.loads(res.read_text())["pairings"]
    assert set(r) == {"tt", "ti", "it", "ii"}
    assert all(0 <= r[k]["accuracy"] <= 1 and r[k]["n"] == 4 for k in r)
    rr = tmp_path / "rr.json"
    run(
        "eval", "retrieval", "--data", str(out / "mcq.jsonl"), "--model", model, "--pairings", "ti,ii", "--out", str(rr)
    )
    assert set(json.loads(rr.read_text())["pairings"]) == {"ti", "ii"}
    # a missing image is named with its path, not a crash inside the model
    victim = out / "images" / "n02-ind-000" / "c1.png"
    victim.unlink()
    p = run("eval", "mcq", "--data", str(out / "mcq.jsonl"), "--model", model, "--pairings", "ti", check=False)
    assert p.returncode == 2 and str(victim) in p.stderr


def test_eval_mcq_without_data_scores_the_embedded_benchmark(tmp_path, capsys):
    """``bindlab eval mcq --model ID`` alone: the embedded mini benchmark, as Browse picks it (the renderable one for a
    toy model, which does not know the full vocabulary's words)."""
    from bindlab.cli import main

    out = tmp_path / "r.json"
    assert main(["eval", "mcq", "--model", "bow", "--out", str(out)]) in (0, None)
    err = capsys.readouterr().err
    assert "embedded mini benchmark" in err and "saber-mini/mcq.jsonl" in err
    doc = json.loads(out.read_text())
    assert doc["pairings"]["tt"]["n"] == 180
    assert main(["eval", "mcq", "--model", "toy:clip", "--limit", "10"]) in (0, None)
    assert "saber-mini-images/mcq.jsonl" in capsys.readouterr().err
