"""One instance per model, a bounded number of models: spellings of one model's weights cannot pile up copies."""

from __future__ import annotations

import pytest

from bindlab.encoders import service
from bindlab.encoders.base import EncoderError, load_encoder


@pytest.mark.parametrize(
    "model", ["st:all-MiniLM-L6-v2@r0", "toy:clip@v2", "bow:bow@x", "toy:clip@<img src=x onerror=alert(1)>"]
)
def test_a_revision_of_weights_on_this_machine_is_refused_before_loading(model):
    with pytest.raises(EncoderError, match="one version; drop"):
        load_encoder(model)


@pytest.mark.parametrize("model", ["minilm@main", "bow@x"])
def test_an_alias_takes_no_revision(model):
    with pytest.raises(EncoderError, match="no backend"):
        load_encoder(model)


def test_twenty_five_revision_spellings_add_no_instance(monkeypatch):
    before = service.loaded_count()
    for r in range(25):
        with pytest.raises(EncoderError):
            service.get_encoder(f"st:all-MiniLM-L6-v2@r{r}")
    assert service.loaded_count() == before


def test_loaded_encoders_are_capped_least_recently_used_first(monkeypatch):
    monkeypatch.setenv("BINDLAB_MAX_LOADED_MODELS", "2")
    monkeypatch.setattr(service, "_INSTANCES", type(service._INSTANCES)())
    a = service.get_encoder("bow")
    toy = service.get_encoder("toy:clip")
    assert service.get_encoder("bow") is a  # a hit makes bow the most recently used
    service.get_encoder("toy:shared")  # a third model: the least recently used (toy:clip) goes
    assert service.loaded_count() == 2
    assert service.get_encoder("bow") is a
    assert service.get_encoder("toy:clip") is not toy  # loaded again
