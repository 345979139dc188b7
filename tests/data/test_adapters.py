"""Benchmark adapters: each loads its fixture in the published format and yields the native metric, checked
against a naive recomputation from the same encoder; the bag-of-words validity check; real SugarCrepe++ files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bindlab.data.adapters import ADAPTERS, list_manifests, load_benchmark
from bindlab.data.adapters.base import same_bag
from bindlab.data.schema import DataError
from bindlab.eval.benchmarks import evaluate_benchmark, group_accuracy, tot_pass
from tests.cli_run import run

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"
REAL_SCPP = ROOT.parent / "shared" / "data" / "sugarcrepe_pp"


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    from bindlab.encoders.base import load_encoder
    from bindlab.encoders.tiny import build_tiny

    return load_encoder(build_tiny("hf-clip", tmp_path_factory.mktemp("tiny") / "clip"), device="cpu")


def _img(enc, path, box=None):
    from PIL import Image

    im = Image.open(path).convert("RGB")
    return enc.embed_images([im.crop(box) if box else im])[0]


def test_every_manifest_names_a_known_adapter_license_and_citation():
    ms = list_manifests()
    assert {"winoground", "colorswap", "sugarcrepe", "sugarcrepe_pp", "aro_vg_attribution"} <= set(ms)
    for name, m in ms.items():
        assert m["adapter"] in ADAPTERS and m["license"] and m["citation"] and m["source"]["local"], name


@pytest.mark.parametrize("name", ["winoground", "colorswap"])
def test_2x2_adapters_give_text_image_group_scores(name, clip):
    bench = load_benchmark(name, data=str(FIX / name))
    assert len(bench.items) == 3
    res, rows = evaluate_benchmark(bench, clip)
    naive = []
    for p in bench.items:  # naive: embed each image and caption on its own, build the 2x2 by hand
        c = clip.embed_texts([p.base.captions["short"], p.foil.captions["short"]])
        i = np.stack([_img(clip, p.base.image), _img(clip, p.foil.image)])
        s = c @ i.T
        naive.append((s[0, 0] > s[1, 0] and s[1, 1] > s[0, 1], s[0, 0] > s[0, 1] and s[1, 1] > s[1, 0]))
    assert res["native_metric"]["text_score"] == pytest.approx(np.mean([a for a, _ in naive]))
    assert res["native_metric"]["image_score"] == pytest.approx(np.mean([b for _, b in naive]))
    assert res["native_metric"]["group_score"] == pytest.approx(np.mean([a and b for a, b in naive]))
    flags = [same_bag(p.base.captions["short"], p.foil.captions["short"]) for p in bench.items]
    assert res["validity"]["same_bag_items"] == sum(flags)
    # image replaced by its own caption + bag of words: only items whose captions differ as bags can pass
    assert res["bow_text_only"]["group"] == pytest.approx(1 - np.mean(flags))
    assert [r["same_bag"] for r in rows] == flags


def test_winoground_fixture_tags_and_same_bag_flags():
    bench = load_benchmark("winoground", data=str(FIX / "winoground"))
    assert [p.edit_type for p in bench.items] == ["Object", "Relation", "Both"]
    assert [same_bag(p.base.captions["short"], p.foil.captions["short"]) for p in bench.items] == [True, True, False]


def test_sugarcrepe_seven_splits_accuracy(clip):
    bench = load_benchmark("sugarcrepe", data=str(FIX / "sugarcrepe"))
    assert len(bench.items) == 14
    res, rows = evaluate_benchmark(bench, clip)
    by = res["native_metric"]["by_split"]
    assert set(by) == {"add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj"}
    for it, row in zip(bench.items, rows, strict=False):
        t = clip.embed_texts([it.positives[0], it.negative])
        s = t @ _img(clip, it.image)
        assert row["pass"] == bool(s[0] > s[1])
    assert res["validity"]["same_bag_items"] == 4  # the swap splits' negatives are word-for-word reorderings
    assert res["bow_text_only"]["by_group"]["swap_att"] == 0.0 and res["bow_text_only"]["by_group"]["add_att"] == 1.0


def test_sugarcrepe_pp_itt_and_tot(clip, minilm):
    bench = load_benchmark("sugarcrepe_pp", data=str(FIX / "sugarcrepe_pp"))
    assert len(bench.items) == 10 and all(len(it.positives) == 2 for it in bench.items)
    itt, rows = evaluate_benchmark(bench, clip, task="itt")
    for it, row in zip(bench.items, rows, strict=False):
        t = clip.embed_texts([*it.positives, it.negative])
        s = t @ _img(clip, it.image)
        assert row["pass"] == bool(s[0] > s[2] and s[1] > s[2])
    tot, rows = evaluate_benchmark(bench, minilm, task="tot")
    for it, row in zip(bench.items, rows, strict=False):
        p1, p2, n = minilm.embed_texts([*it.positives, it.negative])
        assert row["pass"] == bool(p1 @ p2 > p1 @ n and p1 @ p2 > p2 @ n)
    assert tot["native_metric"]["name"].startswith("TOT accuracy") and itt["native_metric"]["name"].startswith(
        "ITT accuracy"
    )
    # chance from the task's shape: two paraphrases above one negative (1/3), not 1/2; the text-only task's paraphrase
    # pair the most similar of three pairs (1/3)
    assert itt["chance"] == pytest.approx(1 / 3) and tot["chance"] == pytest.approx(1 / 3)
    assert all(r["chance"] == pytest.approx(1 / 3) for r in itt["native_metric"]["by_split"].values())


@pytest.mark.parametrize(
    ("k", "m", "want"), [(1, 1, 1 / 2), (2, 1, 1 / 3), (5, 1, 1 / 6), (1, 3, 1 / 4), (2, 2, 1 / 6)]
)
def test_choice_chance_is_the_share_of_orders_with_every_positive_first(k, m, want):
    """The formula, and a brute-force count over every order of k positives and m negatives."""
    from itertools import permutations

    from bindlab.eval.metrics import choice_chance

    orders = list(permutations(["p"] * k + ["n"] * m))
    assert choice_chance(k, m) == pytest.approx(want)
    assert choice_chance(k, m) == pytest.approx(sum(o[:k] == ("p",) * k for o in orders) / len(orders))
    with pytest.raises(ValueError, match="at least one positive and one negative"):
        choice_chance(0, 1)


def test_aro_macro_accuracy_over_attribute_pairs_with_at_least_25_items(clip):
    bench = load_benchmark("aro_vg_attribution", data=str(FIX / "aro"))
    assert bench.items[0].box == (8, 8, 80, 72)
    res, rows = evaluate_benchmark(bench, clip)
    acc = res["accuracy"]
    assert acc["by_group"]["white_paved"]["n"] == 26 and acc["by_group"]["red_wooden"]["n"] == 3
    assert acc["groups_used"] == 1  # red_wooden has fewer than 25 items and is left out of the macro average
    assert res["native_metric"]["value"] == pytest.approx(acc["by_group"]["white_paved"]["accuracy"])
    it = bench.items[0]  # the crop, not the whole image, is what gets scored
    t = clip.embed_texts([it.positives[0], it.negative])
    s = t @ _img(clip, it.image, it.box)
    assert rows[0]["pass"] == bool(s[0] > s[1])
    assert res["validity"]["same_bag_share"] == 1.0 and res["bow_text_only"]["native_value"] == 0.0


def test_group_accuracy_and_tot_against_hand_values():
    out = group_accuracy(np.array([1, 0, 1, 1]), ["a", "a", "b", "c"], min_count=2)
    assert out["by_group"]["a"] == {"accuracy": 0.5, "n": 2} and out["macro"] == 0.5 and out["groups_used"] == 1
    assert tot_pass([0.9, 0.5, 0.5], [0.1, 0.5, 0.2], [0.2, 0.1, 0.6]).tolist() == [True, False, False]


def test_missing_local_copy_and_bad_files_are_clear(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_benchmark("winoground", data=str(tmp_path / "nope"))
    (tmp_path / "examples.jsonl").write_text('{"id": 0, "caption_0": "x"}\n')
    with pytest.raises(DataError, match=r"missing field\(s\)"):
        load_benchmark("winoground", data=str(tmp_path))
    with pytest.raises(DataError, match="unknown benchmark"):
        load_benchmark("nosuchbench")
    with pytest.raises(ValueError, match="unknown split"):
        load_benchmark("sugarcrepe", data=str(FIX / "sugarcrepe"), split="swap_everything")


@pytest.mark.skipif(not REAL_SCPP.exists(), reason=f"real SugarCrepe++ files not at {REAL_SCPP}")
def test_real_sugarcrepe_pp_text_only_with_minilm_and_bow(tmp_path, monkeypatch):
    """The five real SugarCrepe++ files through the CLI command (manifest path: the published files where a reader
    puts them, ``$BINDLAB_HOME/benchmarks/sugarcrepe_pp``), with a --limit per split."""
    home = tmp_path / "home"
    (home / "benchmarks").mkdir(parents=True)
    (home / "benchmarks" / "sugarcrepe_pp").symlink_to(REAL_SCPP.resolve())
    monkeypatch.setenv("BINDLAB_HOME", str(home))
    outs = {}
    for model in ("minilm", "bow"):
        out = tmp_path / f"{model}.json"
        r = run(
            "eval",
            "benchmark",
            "--name",
            "sugarcrepe_pp",
            "--model",
            model,
            "--task",
            "tot",
            "--limit",
            "20",
            "--out",
            out,
        )
        assert "same bag of words" in r.stdout
        outs[model] = json.loads(out.read_text())
    m, b = outs["minilm"], outs["bow"]
    assert m["n"] == 100 and set(m["native_metric"]["by_split"]) == {
        "replace_att",
        "replace_obj",
        "replace_rel",
        "swap_att",
        "swap_obj",
    }
    assert m["provenance"]["settings"]["source"] == str(REAL_SCPP.resolve())
    # bag of words cannot pass an item whose negative is a reordering of a positive
    assert b["validity"]["model_on_same_bag"] == 0.0 and b["validity"]["same_bag_items"] > 0
    assert b["native_metric"]["value"] == pytest.approx(m["bow_text_only"]["native_value"])
    assert m["native_metric"]["value"] > b["native_metric"]["value"]  # MiniLM reads word order, bow cannot


def test_a_benchmark_with_splits_is_headlined_per_split_then_macro(clip, capsys):
    """Issue 28, item 4: every split with its n, 95 % CI and chance; the headline is their macro mean (with an
    interval resampled within splits); the pooled figure is there, named "pooled"; the CLI prints splits first."""
    from bindlab.cli import main

    bench = load_benchmark("sugarcrepe", data=str(FIX / "sugarcrepe"))
    res, rows = evaluate_benchmark(bench, clip)
    nm = res["native_metric"]
    by = nm["by_split"]
    for name, r in by.items():
        passes = [row["pass"] for row in rows if row["group"] == name]
        assert r["n"] == len(passes) and r["accuracy"] == pytest.approx(np.mean(passes))
        assert r["chance"] == 0.5 and r["ci95"][0] <= r["accuracy"] <= r["ci95"][1]
    assert nm["value"] == pytest.approx(np.mean([r["accuracy"] for r in by.values()]))  # macro
    assert nm["pooled"] == pytest.approx(np.mean([row["pass"] for row in rows]))
    assert "macro over 7 splits" in nm["name"] and res["headline"] == "macro"
    assert res["native_ci95"][0] <= nm["value"] <= res["native_ci95"][1]
    assert (
        main(["eval", "benchmark", "--name", "sugarcrepe", "--data", str(FIX / "sugarcrepe"), "--model", str(clip.id)])
        == 0
    )
    out = capsys.readouterr().out
    assert out.index("  add_att") < out.index("  macro over 7 splits") and "pooled over items" in out
