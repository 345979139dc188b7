"""``bench --only vs_library`` on CPU with a few dozen images: both sides run on the same files and models, and
bindlab's vectors are the library's."""

from __future__ import annotations

import importlib.util

from bindlab.speed.bench import SECTIONS
from bindlab.speed.vs_library import bench_vs_library


def test_vs_library_runs_small_on_cpu(tmp_path):
    assert "vs_library" in dict(SECTIONS)
    out = bench_vs_library(full=False, image_per_size=1, text_per_size=4, workers=1, work=tmp_path)
    assert out["device"] == "cpu" and out["sizes"].startswith("small")
    assert out["machine"]["cores_available"] >= 1 and "load_avg_1m" in out["machine"]
    images = out["images"]
    assert images["unique_images"] == 45 and list(images) == ["questions", "unique_images", "pairing", "ViT-B-32"]
    vit = images["ViT-B-32"]
    assert vit["library"]["items"] == vit["bindlab_cold"]["items"] == 45
    assert vit["ratio"] > 0 and vit["library"]["peak_gpu_mib"] is None
    assert vit["max_abs_vector_difference"] < 1e-5  # the same weights, preprocess and dtype: the same vectors
    texts = out["texts"]
    assert texts["bindlab_warm"]["seconds"] < texts["bindlab_cold"]["seconds"]
    if importlib.util.find_spec("sentence_transformers") is None:
        assert texts["library"] is None and "not installed" in texts["note"]
    else:
        assert texts["library"]["items"] == texts["unique_texts"] == texts["bindlab_cold"]["items"]
        assert texts["max_abs_vector_difference"] < 1e-5
