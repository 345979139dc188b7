"""One encoder instance per model weights: every spelling of a local folder shares one copy."""

from __future__ import annotations

import shutil

from bindlab.encoders.base import canonical_id, parse_encoder_id
from bindlab.encoders.service import get_encoder, instance_key


def test_spellings_of_one_folder_give_one_instance(tiny_id, tmp_path, monkeypatch):
    folder = tmp_path / "model"
    shutil.copytree(tiny_id("st").removeprefix("st:"), folder)
    (tmp_path / "link").symlink_to(folder)
    monkeypatch.chdir(tmp_path)
    spellings = [
        f"st:{folder}",
        f"st:/{folder}",
        f"st://{folder}",
        "st:model/",
        "st:./model",
        f"st:{tmp_path}/link",
        "st:link/",
        f"st:{tmp_path}/./link/../model",
    ]
    assert {str(canonical_id(parse_encoder_id(s))) for s in spellings} == {f"st:{folder.resolve()}"}
    first = get_encoder(spellings[0])
    assert all(get_encoder(s) is first for s in spellings)
    assert first.id == f"st:{folder.resolve()}"
    assert get_encoder(spellings[0], batch_size=2) is not first  # other options, other instance


def test_new_weights_in_the_same_folder_give_a_new_instance(tiny_id, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_id("st").removeprefix("st:"), folder)
    first = get_encoder(f"st:{folder}")
    key = instance_key(f"st:{folder}")
    weights = next(folder.glob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one flipped bit in the last weight
    weights.write_bytes(bytes(data))
    new_key = instance_key(f"st:{folder}/")
    assert new_key[0] == key[0] and new_key[1] != key[1]  # same folder, other weights fingerprint
    assert get_encoder(f"st:{folder}/") is not first


def test_names_that_are_not_paths_are_left_alone(tmp_path, monkeypatch):
    (tmp_path / "clip").mkdir()  # a folder named like a shipped model must not hijack toy:clip
    monkeypatch.chdir(tmp_path)
    for text in ("toy:clip", "minilm", "bow", "hf:openai/clip-vit-base-patch32", "open_clip:ViT-B-32/openai"):
        eid = parse_encoder_id(text)
        assert canonical_id(eid) == eid
    assert get_encoder("bow") is get_encoder("bow:words")


def test_cached_vectors_reads_back_what_was_embedded_without_the_model(tmp_path):
    import numpy as np
    import pytest

    from bindlab.encoders.cache import EmbeddingCache
    from bindlab.encoders.service import cached_vectors, embed_texts

    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    encoder = get_encoder("bow")
    texts = ["a red cube and a blue ball", "a blue cube and a red ball", "a red cube and a blue ball"]
    try:
        embedded = embed_texts(encoder, texts, cache=cache)
        np.testing.assert_array_equal(cached_vectors(encoder.fingerprint, "text", texts, cache=cache), embedded)
        with pytest.raises(LookupError, match="1 of 2 text embeddings are not in the embedding cache"):
            cached_vectors(encoder.fingerprint, "text", [texts[0], "a green cone"], cache=cache)
        with pytest.raises(LookupError):  # another model's vectors are not these
            cached_vectors("other-weights", "text", texts[:1], cache=cache)
        with pytest.raises(ValueError, match="unknown modality"):
            cached_vectors(encoder.fingerprint, "audio", texts, cache=cache)
    finally:
        cache.close()
