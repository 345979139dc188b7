"""The *Download* panel every results tab shares: choose formats, press *Prepare files*, click a file to download it.

Files are written by :mod:`bindlab.present.exports` (the same files as the CLI's ``--export DIR``) into a fresh folder per
request, so two browser tabs exporting at once never overwrite each other's files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from bindlab.present import exports

FORMAT_CHOICES = list(exports.FORMATS)
HELP = ("Tables as **CSV** (opens in pandas / a spreadsheet) and **JSON** (with provenance), per-item results as "
        "**JSONL**, figures as **PNG**, **SVG** and standalone interactive **HTML**. PNG/SVG need Chromium on the "
        "server. Every download folder also holds `provenance.json`.")


@dataclass
class ExportPanel:
    """The components of one Download panel."""

    formats: gr.CheckboxGroup
    button: gr.Button
    files: gr.File
    note: gr.Markdown


def export_panel(prefix: str, what: str = "results") -> ExportPanel:
    """Lay out a collapsed *Download* accordion in the current Blocks; element ids start with ``prefix``."""
    with gr.Accordion(f"Download {what}", open=False, elem_id=f"{prefix}-export"):
        gr.Markdown(HELP)
        with gr.Row():
            formats = gr.CheckboxGroup(FORMAT_CHOICES, value=FORMAT_CHOICES, label="Formats", scale=3,
                                       elem_id=f"{prefix}-export-formats")
            button = gr.Button("Prepare files", scale=1, elem_id=f"{prefix}-export-btn")
        files = gr.File(label="Files (click a name to download)", file_count="multiple", interactive=False,
                        elem_id=f"{prefix}-export-files")
        note = gr.Markdown(elem_id=f"{prefix}-export-note")
    return ExportPanel(formats, button, files, note)


def wire(panel: ExportPanel, fn: Callable[..., Any], inputs: Sequence[Any], api_name: str) -> None:
    """``panel.button`` runs ``fn(*inputs, formats)``, which returns ``(file paths, note)``."""
    panel.button.click(fn, [*inputs, panel.formats], [panel.files, panel.note], api_name=api_name)


def deliver(view: exports.ResultView, provenance: dict[str, Any], formats: Sequence[str] | None
            ) -> tuple[list[str], str]:
    """Write ``view`` into a fresh folder; return the file paths for a ``gr.File`` and a one-line note."""
    if not formats:
        raise ValueError(f"tick at least one format ({', '.join(FORMAT_CHOICES)})")
    written = exports.write_view(view, exports.new_export_dir(), provenance, formats)
    note = f"{len(written.paths)} files ready."
    if written.notes:
        note += " " + " ".join(f"**Note:** {n}." for n in written.notes)
    return [str(p) for p in written.paths], note
