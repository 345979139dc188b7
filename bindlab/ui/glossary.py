"""The Glossary panel: one closed accordion near the top of the page defining every term the app shows
(:data:`bindlab.present.glossary.GLOSSARY`), each as escaped text."""

from __future__ import annotations

import gradio as gr

from bindlab.present.glossary import GLOSSARY
from bindlab.present.safe_text import md_text


def glossary_markdown() -> str:
    """The glossary as a Markdown list: each term in bold, then its definition (both escaped text)."""
    return "\n".join(f"- **{md_text(term)}**: {md_text(text)}" for term, text in GLOSSARY)


def build_glossary() -> gr.Accordion:
    """Lay out the Glossary accordion (closed by default) in the current Blocks."""
    with gr.Accordion("Glossary", open=False, elem_id="bl-glossary") as panel:
        gr.Markdown(glossary_markdown(), elem_id="bl-glossary-text")
    return panel


__all__ = ["build_glossary", "glossary_markdown"]
