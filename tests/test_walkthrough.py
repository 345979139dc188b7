"""The Walkthrough's step functions on tiny data: each number checked against a naive recomputation or a property."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bindlab.config import assets_root
from bindlab.studies import walkthrough as wt


@pytest.fixture(scope="module")
def image_benchmark(tmp_path_factory):
    """A tiny image benchmark in the renderable vocabulary (what the toy models know)."""
    from bindlab.data.render import RENDER_VOCAB
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.data.saber_images import render_mcq_images

    out = tmp_path_factory.mktemp("wt-images")
    qs = generate_saber(per_size=1, sizes=[2, 3, 4], seed=2, vocab=RENDER_VOCAB)
    render_mcq_images(qs, out, size=64, workers=1)
    return write_benchmark(out, qs, {"seed": 2})


@pytest.fixture(scope="module")
def tiny_grid(tmp_path_factory):
    from bindlab.data.factors import FactorGridSpec, generate_grid

    out = tmp_path_factory.mktemp("wt-grid")
    generate_grid(
        out,
        FactorGridSpec(
            shapes=("cube", "sphere"),
            hues=("red", "blue"),
            patterns=("striped", "polka-dot", "checkered"),
            n_contexts=4,
            replicas=1,
            size=64,
        ),
        workers=1,
    )
    return out


def test_bag_of_words_ties_every_swap_exactly(small_benchmark):
    path, qs = small_benchmark
    r = wt.step_bag_of_words(path)
    assert r["model"] == "bow:words" and r["n_questions"] == len(qs)
    assert r["tie_share"] == 1.0
    assert r["n_swaps"] == sum(c.role in wt.SWAP_ROLES for q in qs for c in q.candidates)
    assert r["by_n"]["2"] == pytest.approx(1 / 3)  # preserve, attr swap and obj swap tie; "replace" loses
    assert all(v == pytest.approx(0.25) for k, v in r["by_n"].items() if k != "2")
    ex = r["example"]
    assert ex["n_objects"] == 3
    preserve = next(c["score"] for c in ex["candidates"] if c["role"] == "preserve")
    assert all(c["score"] == preserve for c in ex["candidates"] if c["role"] in wt.SWAP_ROLES)


def test_text_encoder_numbers_match_a_naive_recomputation(tmp_path):
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.encoders.tiny import build_tiny
    from bindlab.studies.browse import question_view, scored_set

    qs = generate_saber(per_size=1, sizes=range(2, 11), seed=4)
    path = write_benchmark(tmp_path / "saber", qs, {"seed": 4})
    model = build_tiny("st", tmp_path / "st")
    r = wt.step_text_encoder(path, model=model)
    s = scored_set(path, model, "tt")
    gaps, others = [], []
    for i, q in enumerate(qs):
        view = question_view(s, q.id)
        by_role = {c["role"]: c["score"] for c in view["candidates"]}
        gaps.append(abs(by_role["preserve"] - max(by_role[x] for x in wt.SWAP_ROLES if x in by_role)))
        prev = qs[i - 1]
        others.append(float(s.queries[i] @ s.gallery[4 * (i - 1 if i else len(qs) - 1) + prev.answer]))
    assert r["median_abs_gap"] == pytest.approx(float(np.median(gaps)), abs=1e-6)
    assert r["median_other"] == pytest.approx(float(np.median(others)), abs=1e-6)
    assert 0 <= r["accuracy"] <= 1 and r["ci95"][0] <= r["accuracy"] <= r["ci95"][1]
    assert r["share_correct"] == pytest.approx(float(np.mean(s.credit >= 1)))


def test_objects_compares_small_and_large_scenes(small_benchmark):
    path, qs = small_benchmark
    r = wt.step_objects(path, model="bow", pairing="tt")
    assert r["small"]["sizes"] == [3, 4, 5] and r["large"]["sizes"] == [8, 9, 10]
    assert r["small"]["accuracy"] == pytest.approx(0.25) and r["large"]["accuracy"] == pytest.approx(0.25)
    assert r["small"]["n"] == sum(q.n_objects in (3, 4, 5) for q in qs)
    assert {row["n_objects"] for row in r["rows"]} == set(range(2, 11))


def test_objects_chart_has_a_95_interval_at_every_point(small_benchmark):
    """Step 4 promises 95 % intervals: every row carries the bootstrap interval of its questions' credit (the
    metrics helper's, recomputed here), and every line of the chart draws it as an error bar."""
    from bindlab.eval.metrics import bootstrap_ci
    from bindlab.present.walkthrough_figures import objects_figure
    from bindlab.studies.browse import scored_set

    path, qs = small_benchmark
    r = wt.step_objects(path, model="minilm", pairing="tt")
    s = scored_set(path, "minilm", "tt")
    for row in r["rows"]:
        credit = [
            c
            for q, c in zip(s.questions, s.credit, strict=True)
            if q.n_objects == row["n_objects"] and row["subset"] in ("all", q.subset)
        ]
        assert row["ci95"] == pytest.approx(list(bootstrap_ci(np.array(credit))))
        assert row["ci95"][0] - 1e-9 <= row["accuracy"] <= row["ci95"][1] + 1e-9
    fig = objects_figure(r)
    lines = [t for t in fig.data if t.name in ("all", "independent", "nested")]
    assert lines and "95 % CI" in fig.layout.title.text
    for t in lines:
        rows = {x["n_objects"]: x for x in r["rows"] if x["subset"] == t.name}
        for n, y, up, down in zip(t.x, t.y, t.error_y.array, t.error_y.arrayminus, strict=True):
            assert y + up == pytest.approx(rows[n]["ci95"][1]) and y - down == pytest.approx(rows[n]["ci95"][0])


def test_objects_needs_two_sizes(tmp_path):
    from bindlab.data.saber import generate_saber, write_benchmark

    path = write_benchmark(tmp_path, generate_saber(per_size=2, sizes=[2, 3], seed=0), {})
    with pytest.raises(ValueError, match="two sizes"):
        wt.step_objects(path, model="bow", pairing="tt")


def test_missing_file_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="embedded default"):
        wt.step_bag_of_words("/nonexistent/mcq.jsonl")


def test_images_all_four_pairings_with_the_toy_models_and_the_fix_pair(image_benchmark):
    r = wt.step_images(image_benchmark)
    assert {(x["model"], x["pairing"]) for x in r["rows"]} == {
        (m, p) for m in ("toy:clip", "toy:negclip", "toy:shared") for p in ("tt", "ti", "it", "ii")
    }
    assert all(0 <= x["accuracy"] <= 1 for x in r["rows"])
    assert r["n_questions"] == 3 and r["chance"] == pytest.approx((1 / 3 + 1 / 4 + 1 / 4) / 3)  # N = 2, 3, 4
    ex = r["example"]
    assert ex["query"]["image"] and all(c["image"] for c in ex["candidates"])
    # the failure and its fix: toy:clip vs toy:negclip in the pairings with images, read from the same rows
    fix = r["fix"]
    assert (fix["before"], fix["after"]) == ("toy:clip", "toy:negclip")
    assert [x["pairing"] for x in fix["rows"]] == ["ii", "it", "ti"]
    acc = {(x["model"], x["pairing"]): x for x in r["rows"]}
    for x in fix["rows"]:
        assert x["before"] == pytest.approx(acc["toy:clip", x["pairing"]]["accuracy"])
        assert x["after"] == pytest.approx(acc["toy:negclip", x["pairing"]]["accuracy"])
        assert x["before_ci95"] == pytest.approx(acc["toy:clip", x["pairing"]]["ci95"])
        assert x["change"] == pytest.approx(x["after"] - x["before"])
        lo, hi = x["change_ci95"]
        assert lo <= x["change"] + 1e-12 and x["change"] <= hi + 1e-12
        assert x["clear"] == ("better" if lo > 0 else "worse" if hi < 0 else "unclear")


def test_fix_rows_paired_change_and_verdict():
    """The paired change is the mean of per-question differences; its interval decides the verdict."""
    n = 200
    before = np.zeros(n)
    after = np.r_[np.ones(150), np.zeros(50)]  # 150 questions fixed, none broken
    same = wt.fix_rows({("a", "ii"): before, ("b", "ii"): before}, fix=("a", "b"), pairings=("ii",))["rows"][0]
    assert same["change"] == 0 and same["change_ci95"] == [0, 0] and same["clear"] == "unclear"
    up = wt.fix_rows({("a", "ii"): before, ("b", "ii"): after}, fix=("a", "b"), pairings=("ii",))["rows"][0]
    assert up["before"] == 0 and up["after"] == pytest.approx(0.75) and up["change"] == pytest.approx(0.75)
    assert up["change_ci95"][0] > 0.6 and up["clear"] == "better"
    down = wt.fix_rows({("a", "ii"): after, ("b", "ii"): before}, fix=("a", "b"), pairings=("ii",))["rows"][0]
    assert down["clear"] == "worse" and down["change"] == pytest.approx(-0.75)


def test_images_step_text_explains_hard_negatives_and_holds_no_numbers():
    """The paragraph explains NegCLIP-style hard negatives; every number on the step comes from the computation."""
    import re

    from bindlab.ui.walkthrough import PARAGRAPHS

    text = " ".join(PARAGRAPHS["images"].split())
    assert "toy:negclip" in text and "hard negative" in text and "swapped" in text
    assert "extra negative image" in text and "extra negative caption" in text
    assert not re.search(r"\d\.\d|\d\s*%", text)  # no measured number typed into the text


def test_grounding_at_zero_is_the_text_query_and_alpha_moves_it(tiny_grid):
    r0 = wt.step_grounding(alpha=0.0, grid=tiny_grid)
    assert r0["factor"] == "pattern" and sorted(r0["values"]) == ["checkered", "polka-dot", "striped"]
    assert r0["ap_grounded"] == pytest.approx(r0["ap_native"]) and r0["map_grounded"] == pytest.approx(r0["map_native"])
    assert r0["margin_grounded"] == pytest.approx(r0["margin_native"])
    r = wt.step_grounding(alpha=3.0, value="striped", grid=tiny_grid)
    assert r["value"] == "striped" and r["alpha"] == 3.0
    # the closed form of docs/architecture.md, "Matched visual grounding (α and α*)": M(alpha) = |Delta| (c + alpha) / sqrt(1 + alpha^2 + 2 alpha c); alpha* = -c
    # only where the margin crosses zero (-1 < c < 0)
    c = r["c"]
    assert r["alpha_star"] == (pytest.approx(-c) if -1 < c < 0 else None)
    norm = r["margin_native"] / c
    assert r["margin_grounded"] == pytest.approx(norm * (c + 3.0) / np.sqrt(1 + 9.0 + 6.0 * c), rel=1e-5)
    assert 0 <= r["map_prototype"] <= 1 and 0 <= r["alpha_validation"] <= 8
    assert len(r["ap_native_all"]) == len(r["values"])


def test_attention_peak_and_last_layer(image_benchmark):
    r = wt.step_attention(image_benchmark, model="toy:shared", limit=3)
    mm = r["margin_mean"]
    assert len(mm) == 4 and r["n_captions"] == 3
    assert r["peak"] == max(mm) and r["peak_layer"] == mm.index(max(mm))
    assert r["first"] == mm[0] and r["last"] == mm[-1]
    with pytest.raises(ValueError, match="positive"):
        wt.step_attention(image_benchmark, model="toy:shared", limit=0)


def test_toy_triplets_stay_in_the_toy_vocabulary():
    from bindlab.data.triplets import load_triplets, words_of

    path = wt.toy_triplets(per_size=20, seed=5)
    rows = load_triplets(path)  # validates every row (negative = a word permutation of the positive)
    assert {"train", "val", "test"} <= {r["split"] for r in rows}  # held-out splits: tests/test_toy_triplet_splits.py
    rows = [r for r in rows if r["split"] not in ("test_template_relative", "test_template_with")]  # "that", "colour"
    assert {r["negative_kind"] for r in rows} == {"attribute", "object"}
    assert {len(r["bindings"]) for r in rows} == set(wt.TRIPLET_SIZES)
    vocab = set(json.loads((assets_root() / "toy-shared" / "vocab.json").read_text())["vocab"])
    unknown = {w.lower() for r in rows for t in (r["query"], r["positive"], r["negative"]) for w in words_of(t)} - vocab
    assert not unknown, f"words the toy model does not know: {sorted(unknown)[:10]}"
    assert wt.toy_triplets(per_size=20, seed=5) == path  # made once


def test_finetune_config_is_a_valid_small_cpu_job():
    from bindlab.train.finetune import FinetuneConfig

    data = str(wt.toy_triplets(per_size=20, seed=5))
    cfg = FinetuneConfig.from_dict(wt.finetune_config(max_steps=2, data=data))
    assert cfg.model == "toy:shared" and cfg.threads == 1 and cfg.heavy is False and cfg.max_steps == 2
    assert cfg.data == data
    with pytest.raises(ValueError, match="threads"):
        FinetuneConfig.from_dict(wt.finetune_config(threads=-1, data=data))


def test_start_poll_and_cancel_a_finetune_job(tmp_path):
    from bindlab.jobs.manager import JobManager

    m = JobManager(tmp_path / "jobs")
    job = wt.start_finetune(
        manager=m, max_steps=2, data=str(wt.toy_triplets(per_size=20, seed=5)), debug={"sleep_per_step": 5}
    )
    st = wt.finetune_status(job, manager=m)
    assert st["id"] == job and st["state"] in ("queued", "running") and not st["done"]
    assert st["config"]["model"] == "toy:shared"
    m.cancel(job, grace_s=2)
    assert wt.finetune_status(job, manager=m)["state"] == "cancelled"
    assert wt.latest_finished(manager=m) is None
    with pytest.raises(KeyError, match="no job"):
        wt.finetune_status("no-such-job", manager=m)


@pytest.mark.slow
def test_finetune_job_to_before_after(image_benchmark):
    """The whole step 7 on a 3-step job: done, then base vs finetuned in four pairings and the image drift."""
    from bindlab.jobs.manager import JobManager

    job = wt.start_finetune(max_steps=3, eval_rows=20)
    st = JobManager().wait(job, timeout=900, poll=1)
    assert st["state"] == "done", wt.finetune_status(job)["log_tail"]
    assert wt.latest_finished(max_steps=3, eval_rows=20) == job
    r = wt.step_finetune(job, image_benchmark, attention_limit=4)
    assert [x["pairing"] for x in r["rows"]] == ["tt", "ti", "it", "ii"]
    assert r["steps"] == 3 and r["n_questions"] == 3
    assert r["image_drift"]["n_images"] == 3 and r["image_drift"]["mean_1_minus_cos"] >= 0
    # the Finetune tab's separated report: the questions shown are in the training template; the general
    # rows (held-out templates, unseen words) beside them, each with n and a 95 % interval, and which rows moved
    assert r["template"] == "attributive" and r["names"]["lines"] == "finetuned + LiNeS (a=0.1)"
    formats = {x["evaluation"]: x["format"] for x in r["report_rows"]}
    given = {
        k: v
        for k, v in formats.items()
        if k.startswith("MCQ, attributive template (trained)") and k.endswith("(the questions given)")
    }
    assert given and set(given.values()) <= {"in-format", "unseen words"}  # split by the words training saw
    assert {"in-format", "out-of-template", "unseen words", "control"} <= set(formats.values())
    assert all(x["N"] > 0 and x["LiNeS (a=0.1) 95% CI"].startswith("[") for x in r["report_rows"])
    assert [m["evaluation"] for m in r["report_moves"]] == [x["evaluation"] for x in r["report_rows"]]
    assert {m["moved"] for m in r["report_moves"]} <= {"up", "down", "within"}
    from bindlab.present import exports
    from bindlab.ui import walkthrough as tab

    text = tab.finetune_md(r)
    assert "training template" in text and "in-format" in text and "moved up beyond the interval" in text
    view = exports.walkthrough_export({"finetune": r})
    assert {"step7_report", "step7_report_values", "step7_report_moves"} <= set(view.tables)


def test_export_holds_the_steps_run_so_far(small_benchmark, tmp_path):
    """The Walkthrough's Download: one table per step run (numbers equal to the step's own), a chart where the step
    has one, nothing for steps not run; CSV readable by pandas."""
    import pandas as pd

    from bindlab.present import exports

    path, _ = small_benchmark
    results = {"bow": wt.step_bag_of_words(path), "objects": wt.step_objects(path, model="bow", pairing="tt")}
    view = exports.walkthrough_export(results)
    assert set(view.tables) == {"step1_bow", "step1_bow_by_n", "step1_example", "step4_objects", "step4_small_vs_large"}
    assert set(view.figures) == {"step4_accuracy_by_n"}
    written = exports.write_view(view, tmp_path, {"settings": {"kind": "walkthrough"}}, ["csv", "json"])
    assert not written.notes
    bow = pd.read_csv(tmp_path / "walkthrough_step1_bow.csv")
    assert bow.loc[0, "tie_share"] == 1.0 and bow.loc[0, "accuracy"] == pytest.approx(results["bow"]["accuracy"])
    groups = pd.read_csv(tmp_path / "walkthrough_step4_small_vs_large.csv").set_index("group")
    assert groups.loc["large", "accuracy"] == pytest.approx(results["objects"]["large"]["accuracy"])
    with pytest.raises(ValueError, match="run at least one step"):
        exports.walkthrough_export({})


def test_export_holds_every_table_and_chart_each_step_shows(small_benchmark, image_benchmark, tiny_grid, tmp_path):
    """Steps 1-6 run (step 7 in the slow test below): the download has the example question of steps 1-3, step 3's
    failure-and-fix table and chart, step 4's intervals as numbers, step 5's AP chart beside its margin curve; the
    app's download adds one zip that holds the same files."""
    import zipfile
    from pathlib import Path

    import pandas as pd

    from bindlab.present import exports
    from bindlab.ui.exports import deliver

    path, _ = small_benchmark
    results = {
        "bow": wt.step_bag_of_words(path),
        "text": wt.step_text_encoder(path, model="bow"),
        "images": wt.step_images(image_benchmark, models=("toy:clip",)),
        "objects": wt.step_objects(path, model="bow", pairing="tt"),
        "grounding": wt.step_grounding(alpha=1.0, grid=tiny_grid),
        "attention": wt.step_attention(image_benchmark, model="toy:shared", limit=3),
    }
    view = exports.walkthrough_export(results)
    assert {
        "step1_example",
        "step2_example",
        "step3_images",
        "step3_fix",
        "step3_example",
        "step4_objects",
        "step5_ap_per_value",
        "step5_margin_curve",
        "step6_attention",
    } <= set(view.tables)
    assert set(view.figures) == {
        "step3_fix",
        "step4_accuracy_by_n",
        "step5_margin_curve",
        "step5_ap_per_value",
        "step6_attention",
    }
    assert [r["role"] for r in view.tables["step1_example"]][0] == "query" and len(view.tables["step1_example"]) == 5
    paths, note = deliver(view, wt.walkthrough_provenance(results), ["csv", "json", "html"])
    files = {Path(p).name: Path(p) for p in paths}
    fix = pd.read_csv(files["walkthrough_step3_fix.csv"])
    assert list(fix["pairing"]) == ["ii", "it", "ti"] and (fix["change_ci95_low"] <= fix["change_ci95_high"]).all()
    objects = pd.read_csv(files["walkthrough_step4_objects.csv"])
    assert (objects["ci95_low"] <= objects["accuracy"] + 1e-9).all() and "ci95" not in objects.columns
    assert {"walkthrough_step3_fix.html", "walkthrough_step5_ap_per_value.html"} <= set(files)
    assert list(files)[-1] == "walkthrough_all.zip" and "walkthrough_all.zip" in note
    with zipfile.ZipFile(files["walkthrough_all.zip"]) as z:
        assert z.namelist() == list(files)[:-1]

    # the panel's default: each step's headline table (CSV) and chart (HTML), provenance and a README, not every
    # table in every format
    from bindlab.ui.exports import DEFAULT_CHOICES

    main, note = deliver(view, wt.walkthrough_provenance(results), DEFAULT_CHOICES)
    names = [Path(p).name for p in main]
    assert names == [
        f"walkthrough_{n}.csv"
        for n in (
            "step1_bow",
            "step2_text",
            "step3_fix",
            "step4_small_vs_large",
            "step5_grounding",
            "step5_ap_per_value",
            "step6_attention",
        )
    ] + [
        f"walkthrough_{n}.html" for n in ("step3_fix", "step4_accuracy_by_n", "step5_ap_per_value", "step6_attention")
    ] + ["provenance.json", "README.txt", "walkthrough_all.zip"]
    assert len(names) < len(files) and "the main files" in note
    readme = Path(main[names.index("README.txt")]).read_text()
    assert "walkthrough_step3_fix.csv — step 3: the failure and its fix" in readme
    assert "walkthrough_step4_accuracy_by_n.html — step 4: accuracy by number of objects N" in readme
    assert "step1_example" in readme  # named among the files a full download adds


def test_grounding_refuses_a_value_not_in_the_grid(tiny_grid):
    """A typed pattern that the grid does not hold is refused with the list, never silently replaced."""
    with pytest.raises(ValueError, match=r"'zebra' is not in the grid; choose one of .*striped"):
        wt.step_grounding(alpha=1.0, value="zebra", grid=tiny_grid)


# --- the steps' defaults show an effect; the page's memory of the steps run --------------------------------------
def test_difference_interval_and_the_objects_change(small_benchmark):
    """The small-vs-large change carries its own bootstrap interval: independent samples resampled apart; a clear
    fall excludes 0, no difference (a bag of words on text: chance everywhere) is exactly 0 and unclear."""
    lo, hi = wt.difference_ci(np.r_[np.ones(45), np.zeros(15)], np.r_[np.ones(15), np.zeros(45)])
    assert -0.7 < lo < hi < -0.3  # 0.75 → 0.25
    lo, hi = wt.difference_ci(np.r_[np.ones(30), np.zeros(30)], np.r_[np.ones(30), np.zeros(30)])
    assert lo < 0 < hi
    with pytest.raises(ValueError, match="non-empty"):
        wt.difference_ci(np.array([]), np.ones(3))
    path, _ = small_benchmark
    r = wt.step_objects(path, model="bow", pairing="tt")
    assert r["change"] == {"value": 0.0, "ci95": [0.0, 0.0], "verdict": "unclear"}


def test_grounding_gain_interval_is_paired_over_the_test_images(tiny_grid):
    r0 = wt.step_grounding(alpha=0.0, grid=tiny_grid)
    assert r0["gain"] == pytest.approx(0.0) and r0["gain_ci95"] == pytest.approx([0.0, 0.0])  # the same query twice
    r = wt.step_grounding(alpha=2.0, grid=tiny_grid)
    assert r["gain"] == pytest.approx(r["ap_grounded"] - r["ap_native"])
    assert r["gain_ci95"][0] <= r["gain"] + 1e-9 and r["gain"] <= r["gain_ci95"][1] + 1e-9
    assert wt.step_grounding(grid=tiny_grid)["value"] == wt.GROUNDING_VALUE  # the default, when the grid has it


def test_the_page_opens_steps_4_and_5_on_the_study_defaults():
    from bindlab.ui import walkthrough as tab

    assert f"{wt.OBJECTS_MODEL}|{wt.OBJECTS_PAIRING}" in dict(tab.STEP_MODELS_N).values()
    assert tab.objects_choice(f"{wt.OBJECTS_MODEL}|{wt.OBJECTS_PAIRING}") == (wt.OBJECTS_MODEL, wt.OBJECTS_PAIRING)
    assert 0 < wt.GROUNDING_ALPHA <= 8  # inside the slider, and not α = 0 (the text query itself: a gain of 0)


def test_every_step_paragraph_says_what_to_look_at():
    from bindlab.ui.walkthrough import PARAGRAPHS

    assert set(PARAGRAPHS) == {s.key for s in wt.STEPS}
    for key, text in PARAGRAPHS.items():
        text = " ".join(text.split())
        assert "**Look at**" in text and ": it shows" in text, key


@pytest.mark.slow
def test_steps_4_and_5_defaults_show_an_effect_beyond_the_noise():
    """On the embedded default (the image benchmark and the factor grid, rendered on first use: minutes on a cold
    home) with the real toy models: step 4's change from small to large scenes and step 5's AP gain each have a 95 %
    interval that excludes 0, and read non-zero at the three decimals the page shows."""
    from bindlab.ui.walkthrough import grounding_md, objects_md

    r = wt.step_objects()
    c = r["change"]
    assert (r["model"], r["pairing"]) == (wt.OBJECTS_MODEL, wt.OBJECTS_PAIRING)
    assert (c["ci95"][0] > 0 or c["ci95"][1] < 0) and c["verdict"] != "unclear"
    assert f"{c['value']:+.3f}" not in ("+0.000", "-0.000")
    assert "the interval excludes 0" in objects_md(r)
    g = wt.step_grounding()
    assert (g["value"], g["alpha"]) == (wt.GROUNDING_VALUE, wt.GROUNDING_ALPHA)
    assert g["gain_ci95"][0] > 0 and f"{g['gain']:+.3f}" != "+0.000"
    assert "it excludes 0" in grounding_md(g)


def test_run_step_remembers_and_a_reload_rebuilds_what_the_browser_recorded(small_benchmark):
    """A step pressed again with the same settings (or rebuilt for a download after a reload) is the remembered
    result, not a new computation; a browser's record is checked like typed input."""
    first = wt.run_step("bow")
    assert wt.run_step("bow") is first and wt.run_step("bow", {"ignored": 1}) is first
    assert wt.step_settings("grounding", {"alpha": "1.5", "value": "striped", "x": 1}) == {
        "alpha": 1.5,
        "value": "striped",
    }
    with pytest.raises(ValueError, match="not a walkthrough step"):
        wt.step_settings("nope")
    with pytest.raises(ValueError, match="alpha 'x' is not a float"):
        wt.step_settings("grounding", {"alpha": "x"})
    have = {"objects": {"model": "mine"}}
    results, skipped = wt.rebuild_results(
        {"bow": {}, "objects": {}, "nope": {}, "attention": {"model": "nope:x"}}, have
    )
    assert results["bow"] is first and results["objects"] is have["objects"]  # this page's own result is kept
    assert set(results) == {"bow", "objects"} and len(skipped) == 1 and skipped[0].startswith("step attention:")
    with pytest.raises(ValueError, match="job id"):
        wt.run_step("finetune", {})


def test_steps_report_progress_during_the_embedding(tmp_path):
    """Step 2 passes the scoring's own progress on (what it embeds and how many questions, per chunk of questions,
    within the step's share of the bar), not only one message before the work."""
    from bindlab.data.saber import generate_saber, write_benchmark
    from bindlab.encoders.tiny import build_tiny

    path = write_benchmark(tmp_path / "saber", generate_saber(per_size=2, sizes=range(2, 6), seed=7), {"seed": 7})
    seen: list[tuple[float, str]] = []
    wt.step_text_encoder(path, model=build_tiny("st", tmp_path / "st"), progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert len(seen) >= 2 and fractions == sorted(fractions) and 0 <= fractions[0] and fractions[-1] <= 1
    assert any(m.startswith("embedding texts with") and "/8 questions" in m for _, m in seen[1:]), seen
