"""The vocabulary of the toy models: every word the toy caption recipe (``bindlab.train.toy.data``) can write.

The word tokenizer of the toy models (:class:`bindlab.encoders.toy.tokenizer.WordTokenizer`) is built from
:func:`default_words`; the benchmark captions over the renderable vocabulary use the same words.
"""

from __future__ import annotations

import re

from bindlab.data.render import RENDER_VOCAB
from bindlab.data.vocab import PALETTE

WORD_RE = re.compile(r"\w+(?:[-']\w+)*")  # the caption-word regex of bindlab.encoders.attention_access

# Words of the caption templates (bindlab.train.toy.data.TEMPLATES, PAIR_TEMPLATES) and of the benchmark captions.
EXTRA_WORDS = (
    "there",
    "is",
    "are",
    "next",
    "to",
    "beside",
    "photo",
    "picture",
    "image",
    "scene",
    "of",
    "with",
    "on",
    "grey",
    "background",
    "the",
    "in",
    "and",
    "a",
    "an",
)


def default_words() -> list[str]:
    """Every word the recipe can produce (and the benchmark captions use), sorted."""
    words = set(EXTRA_WORDS) | set(PALETTE)
    words.update(RENDER_VOCAB.objects)
    for attr in RENDER_VOCAB.attributes:
        words.add(attr.name)
        filled = attr.template.replace("{c1}", "").replace("{c2}", "").replace("{v}", "")
        words.update(WORD_RE.findall(filled.lower()))
        for v in attr.variants:
            words.update(WORD_RE.findall(v.lower()))
    return sorted(words)
