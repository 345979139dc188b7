"""Texts a toy model cuts at its token limit reach the result that scored them: Browse's MCQ result (its summary, its
notes and the tab's summary line) and the Finetune compare's notes."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

LONG = " and ".join(["a red striped cube", "a blue dotted sphere", "a green cone", "a yellow cylinder"] * 4) + "."


@pytest.fixture(scope="module")
def long_caption_mcq(tmp_path_factory):
    """Four renderable-vocabulary questions, the first one's query over toy:shared's 46 words."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber, write_benchmark

    path = write_benchmark(
        tmp_path_factory.mktemp("long") / "saber",
        generate_saber(per_size=2, sizes=[2, 3], seed=5, vocab=RENDER_VOCAB),
        {"seed": 5},
    )
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines[0]["query"]["text"] = LONG
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_browse_result_says_how_many_texts_were_truncated(long_caption_mcq):
    from bindlab.studies import browse
    from bindlab.ui.browse import summary_md

    assert len(LONG.split()) > 46
    res = browse.run_mcq(browse.McqRequest(long_caption_mcq, "toy:shared"))
    cut = res.summary["truncated"]
    assert (cut["n_truncated"], cut["max_tokens"]) == (1, 48) and cut["n_texts"] > 1
    sentence = f"toy:shared truncated 1 of {cut['n_texts']} texts to 48 tokens (words after word 46 are not read)."
    assert sentence in res.notes
    # the Browse tab's summary line says it too
    scored = SimpleNamespace(model="toy:shared", pairing="tt", result=res, summary=res.summary["pairings"]["tt"])
    assert "truncated 1 of" in summary_md(scored)
    # a model that keeps every text whole says nothing about truncation
    assert not any("truncated" in n for n in browse.run_mcq(browse.McqRequest(long_caption_mcq, "bow")).notes)


def test_finetune_compare_notes_say_how_many_texts_were_truncated(long_caption_mcq, tmp_path):
    """A real 2-step job of a tiny random toy:shared model, compared on the benchmark with the long caption."""
    from bindlab.encoders.toy.backend import build_random
    from bindlab.jobs.manager import JobManager
    from bindlab.studies import finetune as fs
    from bindlab.studies.walkthrough import toy_triplets

    model = build_random(tmp_path / "model", arch="shared", width=16, layers=2, heads=2)
    m = JobManager()
    job = m.submit(
        {
            "model": model,
            "data": str(toy_triplets()),
            "max_steps": 2,
            "batch_size": 4,
            "eval_rows": 8,
            "device": "cpu",
            "threads": 1,
        }
    )
    st = m.wait(job, timeout=900)
    assert st["state"] == "done", m.log_tail(job)
    res = fs.run_finetune_compare(
        fs.FinetuneCompareRequest(job, str(long_caption_mcq), pairings="tt", attention_limit=None, report=False)
    )
    assert res.summary["truncated"]["n_truncated"] == 1
    assert any(n.startswith(f"{model} truncated 1 of ") and "to 48 tokens" in n for n in res.notes), res.notes
