"""Text a user supplied, put on a page, into Markdown, into a plotly figure or into an exported file: always text,
never markup (docs/architecture.md, "Rules every view follows": user text is text, never markup, in every view and export).

Anything that can come from a user goes through one of these before it meets markup: ids, captions, bindings,
file and folder names, values read from a data file (an ``index.csv``'s factor values, roles, edit types), encoder
ids (a typed ``@revision`` included), job messages and error messages that quote an input.

- :func:`html_text` — inside HTML (``gr.HTML``, a table cell, an attribute value).
- :func:`message_text` — a ``gr.Error`` / toast message, which Gradio renders as (sanitised) HTML element content:
  ``& < >`` escaped, quotes left as typed (they mean nothing outside an attribute).
- :func:`md_text` — inside Markdown (``gr.Markdown``): HTML is escaped and every Markdown punctuation mark is
  backslash-escaped, so ``[x](javascript:…)``, ``![x](…)``, ``**``, `````, ``|`` … show as the characters typed.
- :func:`md_code` — the same, shown in a monospace ``<code>`` span (a Markdown code span would show the escapes).
- :func:`plot_text` — plotly titles, trace names, category labels, ``text`` and ``hovertext``: plotly reads them as
  its own small HTML (``<b>``, ``<br>``, ``<a href>``) and decodes ``&amp; &lt; &gt;``.

Never use a user string as an ``re.sub`` replacement string (backslash escapes there turn ``\\074`` into ``<``): use a
function replacement.
"""

from __future__ import annotations

import html
import re
from typing import Any

__all__ = ["html_text", "md_code", "md_text", "message_text", "plot_text"]

# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones that make inline Markdown (links,
# images, emphasis, code, tables, strike-through, maths) or a backslash escape anywhere in a line ...
_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()!|$~])")
# ... and these only at the start of one (a heading, a list item, a numbered item)
_MD_LINE_START = re.compile(r"^(\s*)([#+\-=]|\d+(?=\.))")


def html_text(value: Any) -> str:
    """``value`` as text inside HTML (element content or a quoted attribute value): ``& < > " '`` escaped."""
    return html.escape(str(value), quote=True)


def message_text(value: Any) -> str:
    """``value`` as the text of a ``gr.Error`` (or ``gr.Warning`` / ``gr.Info``) message: Gradio puts the message into
    the page as HTML, so ``& < >`` are escaped; it is never inside an attribute, so quotes stay as they are."""
    return html.escape(str(value), quote=False)


def md_text(value: Any) -> str:
    """``value`` as text inside Markdown: one line (line breaks become spaces, so it cannot start a block), Markdown
    punctuation backslash-escaped, then HTML escaped (Gradio's Markdown renders raw HTML)."""
    one_line = re.sub(r"[\r\n]+", " ", str(value))
    escaped = _MD_PUNCT.sub(lambda m: "\\" + m.group(1), one_line)
    escaped = _MD_LINE_START.sub(
        lambda m: m.group(1) + (m.group(2) + "\\" if m.group(2)[0].isdigit() else "\\" + m.group(2)), escaped
    )
    return html.escape(escaped, quote=True)


def md_code(value: Any) -> str:
    """``value`` in a monospace span inside Markdown (what a code span would show, without its escape problems)."""
    return f"<code>{md_text(value)}</code>"


def plot_text(value: Any) -> str:
    """``value`` as text in a plotly string (title, name, label, text, hovertext): ``& < >`` escaped, which plotly
    decodes back for display."""
    return html.escape(str(value), quote=False)
