"""Encoders: the one protocol, id parser and registry (:mod:`bindlab.encoders.base`), one module per backend.

Importing this package registers the built-in backends: each backend module calls
:func:`~bindlab.encoders.base.register_backend` at import and keeps its heavy imports inside its loader, so this
stays cheap. ``base`` itself imports no backend (a registry filled from outside, as timm's model registry is), so
the backends can use ``base`` — ``lora:`` even loads its base encoder through it — without an import cycle.
"""

from bindlab.encoders import adopted, bow, hf, lora, open_clip_backend, qwen3vl, sentence  # noqa: F401
from bindlab.encoders.toy import backend as toy_backend  # noqa: F401
