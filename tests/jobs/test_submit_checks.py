"""Checks a finetune passes before it is queued, shared by the CLI and the tab (``studies.finetune.check_config``):
the triplets parse (a bad row is named by file and line) and have a train split; the steps cap holds for the steps
the job will run — with ``max_steps=0`` ("no cap") that is epochs × steps per epoch."""

from __future__ import annotations

import json
import math

import pytest

from bindlab.jobs.manager import JobLimitError, JobManager, planned_steps
from bindlab.studies.finetune import check_config, submit_finetune


@pytest.fixture(scope="module")
def triplets(tmp_path_factory):
    from bindlab.data.triplets import generate_triplets, load_triplets, write_triplets

    root = tmp_path_factory.mktemp("trip")
    rows, stats = generate_triplets(120, seed=0)
    write_triplets(root, rows, stats)
    return root, sum(r["split"] == "train" for r in load_triplets(root))


def _queued(root) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir()} if root.exists() else set()


def test_bad_triplets_are_named_by_file_and_line_before_a_job_exists(triplets, tmp_path, capsys):
    from bindlab.cli import main

    good = (triplets[0] / "triplets.jsonl").read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([good[0], good[1], '{"id": "x", "split": "train"}', *good[3:]]) + "\n")
    no_train = tmp_path / "no_train.jsonl"
    no_train.write_text("\n".join(x for x in good if json.loads(x)["split"] != "train") + "\n")
    jobs = JobManager(tmp_path / "jobs", owner="session:a")
    with pytest.raises(ValueError, match=rf"{bad}:3: missing field"):
        submit_finetune({"model": "minilm", "data": str(bad)}, jobs)
    with pytest.raises(ValueError, match="no rows in the train split"):
        submit_finetune({"model": "minilm", "data": str(no_train)}, jobs)
    assert _queued(tmp_path / "jobs") == set()
    assert main(["finetune", "--model", "minilm", "--data", str(bad), "--background"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3: missing field" in err and "Traceback" not in err


@pytest.mark.usefixtures("tmp_roots")
def test_max_steps_zero_cannot_step_past_the_cap(triplets, tmp_path, monkeypatch, capsys):
    from bindlab.cli import main

    data, n_train = triplets
    monkeypatch.setenv("BINDLAB_PUBLIC", "1")
    monkeypatch.setenv("BINDLAB_MAX_STEPS", "10")
    per_epoch = math.ceil(n_train / 4)
    assert per_epoch > 10 and planned_steps(2, 0, n_train, 4) == 2 * per_epoch
    jobs = JobManager(tmp_path / "jobs", owner="session:a")
    for cfg in ({"max_steps": 0, "epochs": 2}, {"epochs": 1}):  # 0 and absent: no explicit cap
        with pytest.raises(
            JobLimitError,
            match=rf"= {per_epoch * cfg['epochs']} steps, over the cap of 10 "
            r"\(BINDLAB_MAX_STEPS\)",
        ):
            submit_finetune({"model": "minilm", "data": str(data), "batch_size": 4, **cfg}, jobs)
    assert _queued(tmp_path / "jobs") == set()
    assert (
        main(
            [
                "finetune",
                "--model",
                "minilm",
                "--data",
                str(data),
                "--batch-size",
                "4",
                "--max-steps",
                "0",
                "--background",
            ]
        )
        == 2
    )
    assert "over the cap of 10 (BINDLAB_MAX_STEPS)" in capsys.readouterr().err
    # Within the cap: an explicit max_steps, or few enough rows per epoch with a larger batch.
    assert check_config({"model": "minilm", "data": str(data), "batch_size": 4, "max_steps": 10})["max_steps"] == 10
    batch = math.ceil(n_train / 10)
    assert planned_steps(1, 0, n_train, batch) <= 10
    check_config({"model": "minilm", "data": str(data), "batch_size": batch, "max_steps": 0})


@pytest.mark.usefixtures("tmp_roots")
@pytest.mark.parametrize("model", ["bow", "open_clip:ViT-B-32/openai"])
def test_a_model_without_a_trainable_text_tower_is_refused_before_a_job_exists(model, triplets, tmp_path, capsys):
    """Issue 56: ``finetune --model bow`` used to queue a job that failed when it loaded the model (a traceback in
    the foreground); it is refused at submit time, naming the model and those that can be finetuned."""
    from bindlab.cli import main

    data = str(triplets[0])
    jobs = JobManager(tmp_path / "jobs", owner="session:a")
    with pytest.raises(ValueError, match=rf"{model}: finetuning needs a transformer text encoder .*use minilm"):
        submit_finetune({"model": model, "data": data, "max_steps": 2}, jobs)
    assert _queued(tmp_path / "jobs") == set()
    for background in ([], ["--background"]):
        assert main(["finetune", "--model", model, "--data", data, "--max-steps", "2", *background]) == 2
        err = capsys.readouterr().err
        assert "finetuning needs a transformer text encoder" in err and "Traceback" not in err
        assert len([x for x in err.splitlines() if "error:" in x]) == 1, err
