"""The Compare tab's model picker takes at most limits().max_compare_models encoders (the page refuses a fifth
selection in public mode); the same cap is checked again in CompareRequest for API calls."""

from __future__ import annotations

import gradio as gr
import pytest


def _models_dropdown() -> gr.Dropdown:
    from bindlab.ui import compare

    with gr.Blocks() as demo:
        compare.build_tab()
    return next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "cmp-models")


@pytest.mark.parametrize(("public", "cap_env", "cap"), [("1", None, 4), ("0", None, 8), ("1", "2", 2)])
def test_the_model_picker_takes_at_most_the_cap(monkeypatch, tmp_path, public, cap_env, cap):
    monkeypatch.setenv("BINDLAB_PUBLIC", public)
    monkeypatch.setenv("BINDLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BINDLAB_DATA_ROOTS", raising=False)
    if cap_env is None:
        monkeypatch.delenv("BINDLAB_MAX_COMPARE_MODELS", raising=False)
    else:
        monkeypatch.setenv("BINDLAB_MAX_COMPARE_MODELS", cap_env)
    models = _models_dropdown()
    assert models.multiselect and models.max_choices == cap
    assert 0 < len(models.value) <= cap and f"at most {cap}" in models.label
