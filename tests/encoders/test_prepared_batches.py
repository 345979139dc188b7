"""Images prepared in worker threads a batch ahead of the forward pass give the serial path's vectors; the default
batch size per device, settled by the out-of-memory back-off, is remembered per (model, device)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from bindlab.encoders import runtime
from bindlab.encoders.base import EncoderError, l2_normalize, load_encoder
from bindlab.encoders.images import load_images


@pytest.fixture(scope="module")
def image_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("prepared")
    rng = np.random.default_rng(0)
    paths = []
    for i, mode in enumerate(["RGB", "L", "RGBA", "P", "RGB", "LA", "I;16", "RGB"] * 3):
        arr = rng.integers(0, 255, (40 + i, 50 + 2 * i, 3), dtype=np.uint8)
        img = (
            Image.fromarray(arr).convert(mode)
            if mode != "I;16"
            else Image.fromarray(arr[..., 0].astype(np.uint16) * 200)
        )
        p = folder / f"im{i}.png"
        img.save(p)
        paths.append(str(p))
    big = folder / "big.png"
    Image.fromarray(rng.integers(0, 255, (300, 500, 3), dtype=np.uint8)).save(big)
    return [*paths, str(big)]


def _serial(enc, paths):
    """The path before preparation moved to threads: every image loaded first, then preprocessed per batch."""
    ims, notes = load_images(paths, enc.id, enc.max_image_side, rgb=False)
    with torch.inference_mode():
        x = torch.stack([enc.preprocess(im) for im in ims]).to(enc.device, enc.dtype)
        return l2_normalize(enc.model.encode_image(x).float().cpu().numpy()), notes


def test_threads_give_the_serial_vectors(tiny_id, image_files):
    enc = load_encoder(tiny_id("open-clip"), max_image_side=256)
    expected, notes = _serial(enc, image_files)
    assert notes and notes[0].startswith(f"image #{len(image_files) - 1}:")  # the big one was downscaled
    enc.runner.batch_size = len(image_files)
    for workers in (1, 4):
        enc.runner.workers = workers
        np.testing.assert_array_equal(enc.embed_images(image_files), expected)
        assert enc.last_image_notes == notes
    enc.runner.batch_size = 5  # several batches, the next one prepared while one runs
    np.testing.assert_allclose(enc.embed_images(image_files), expected, atol=1e-6)


def test_an_unreadable_image_is_named_by_its_index(tiny_id, image_files, tmp_path):
    enc = load_encoder(tiny_id("open-clip"))
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    enc.runner.batch_size = 2
    with pytest.raises(EncoderError, match="image #3: .*bad.png"):
        enc.embed_images([*image_files[:3], str(bad), *image_files[3:6]])


def test_default_batch_per_device_and_the_settled_size_is_remembered(monkeypatch):
    monkeypatch.setattr(runtime, "_SETTLED", {})
    assert runtime.BatchRunner("m", device="cpu").batch_size == runtime.CPU_BATCH
    assert runtime.BatchRunner("m", device="cuda:0").batch_size == runtime.GPU_BATCH
    assert runtime.BatchRunner("m", 7, device="cuda:0").batch_size == 7  # an explicit size wins
    runner = runtime.BatchRunner("m", device="cuda:0")
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)

    def forward(batch):  # fits 60 items at most, as a GPU that runs out of memory above that would
        if len(batch) > 60:
            raise torch.cuda.OutOfMemoryError("out of memory")
        return np.stack([[float(x), 1.0] for x in batch])

    out = runner.run_prepared(lambda i: i, forward, 300)
    np.testing.assert_array_equal(out[:, 0], np.arange(300))
    assert runner.batch_size == 32
    assert runtime.BatchRunner("m", device="cuda:0").batch_size == 32  # the next instance starts there
    assert runtime.BatchRunner("other", device="cuda:0").batch_size == runtime.GPU_BATCH
    assert runtime.BatchRunner("m", device="cpu").batch_size == runtime.CPU_BATCH


def test_hf_images_opened_in_threads_give_the_serial_vectors(tiny_id, image_files):
    enc = load_encoder(tiny_id("hf-clip"))
    enc.runner.batch_size = len(image_files)
    enc.runner.workers = 1
    serial = enc.embed_images(image_files)
    enc.runner.workers = 4
    np.testing.assert_array_equal(enc.embed_images(image_files), serial)
