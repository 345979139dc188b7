"""Image questions: each image is rendered from its own item's bindings; image sets are validated with paths."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from bindlab.data.render import RENDER_VOCAB, render_scene
from bindlab.data.saber import generate_saber, write_benchmark
from bindlab.data.saber_images import check_images, item_specs, question_seed, render_mcq_images
from bindlab.data.schema import DataError, load_mcqs


@pytest.fixture(scope="module")
def image_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("saber-img")
    qs = generate_saber(per_size=2, sizes=[2, 3, 6], seed=4, vocab=RENDER_VOCAB)
    n = render_mcq_images(qs, out, size=96, workers=1)
    write_benchmark(out, qs, {"seed": 4})
    return out, qs, n


def test_every_item_image_shows_exactly_its_own_bindings(image_set):
    out, qs, n = image_set
    assert n == 5 * len(qs)
    for q in qs[:3]:
        real = q.extra["realisations"]
        for item in (q.query, *q.candidates):
            specs = item_specs(item, real)
            assert {(s.attribute, s.shape) for s in specs} == item.binding_set()
            assert all(s.form == real[s.attribute] for s in specs)  # one realisation per attribute per question
            fresh = np.asarray(render_scene(specs, size=96, seed=question_seed(q.id)))
            np.testing.assert_array_equal(np.asarray(Image.open(out / item.image).convert("RGB")), fresh)


def test_rendering_resumes_and_jsonl_points_at_images(image_set):
    out, qs, _ = image_set
    assert render_mcq_images(qs, out, size=96, workers=1) == 0  # nothing left to do
    (out / qs[0].candidates[1].image).unlink()
    assert render_mcq_images(qs, out, size=96, workers=1) == 1
    loaded, _ = load_mcqs(out / "mcq.jsonl")
    assert check_images(loaded, out, verify=True) == []


def test_missing_and_corrupt_images_are_reported_with_paths(image_set, tmp_path):
    out, qs, _ = image_set
    loaded, _ = load_mcqs(out / "mcq.jsonl")
    missing = out / loaded[1].query.image
    missing.rename(tmp_path / "moved.png")
    bad = out / loaded[2].candidates[0].image
    original = bad.read_bytes()
    bad.write_bytes(b"not a png")
    try:
        problems = check_images(loaded, out, verify=True)
        assert any(str(missing) in p and "missing" in p for p in problems)
        assert any(str(bad) in p and "unreadable" in p for p in problems)
        from bindlab.eval.mcq import embed_questions

        class ImageOnly:
            id, fingerprint, modalities = "test:img", "test:img", frozenset({"image", "text"})

        with pytest.raises(DataError, match="missing image"):
            embed_questions(loaded, out, ImageOnly(), "image")
    finally:
        (tmp_path / "moved.png").rename(missing)
        bad.write_bytes(original)


def test_text_form_uses_renderable_vocabulary(image_set):
    _, qs, _ = image_set
    shapes = set(RENDER_VOCAB.objects)
    attrs = {a.name for a in RENDER_VOCAB.attributes}
    for q in qs:
        for item in (q.query, *q.candidates):
            assert all(a in attrs and o in shapes for a, o in item.bindings)
