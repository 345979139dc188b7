"""Generating benchmarks: the SABER-style MCQ set (``generate saber``) and the CompoSET-style pairs
(``generate composet``), one function each for the CLI and the Python API."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Progress = Callable[[int, int], None]


def generate_saber_set(
    out: str | Path,
    per_size: int = 200,
    sizes: str | Sequence[int] = "2-10",
    seed: int = 0,
    images: bool = False,
    template: str = "attributive",
    vocab_from: str | Path | None = None,
    size: int = 256,
    workers: int = 2,
    progress: Progress | None = None,
) -> tuple[Path, dict[str, Any], int]:
    """Write SABER-style 4-way binding MCQs to ``out/mcq.jsonl`` (+ ``meta.json``; images with ``images``).

    Args:
        out: output folder (created).
        per_size: questions per scene size, half independent, half nested.
        sizes: scene sizes, ``"2-10"``, ``"2,3,5"`` or a sequence of ints.
        seed: generator seed (same seed and settings, same questions; the renderer's seed too).
        images: also render the query and candidate images over the renderable vocabulary (resumable).
        template: sentence template (``attributive``, ``predicative``, ``relative``, ``with``).
        vocab_from: a ``holdout_vocab.json`` (``generate triplets --holdout-words``): its held-out words only.
        size: image side in pixels (with ``images``).
        workers: rendering processes (with ``images``).
        progress: ``progress(done, total)`` over the images rendered.

    Returns:
        ``(path of mcq.jsonl, the settings written to meta.json, images rendered now)``.

    Raises:
        ValueError: sizes the vocabulary cannot fill (naming the largest possible N), an unknown template.
    """
    from bindlab.data.saber import SABER_VOCAB, generate_saber, max_size, parse_sizes, template_vocab, write_benchmark
    from bindlab.data.templates import check_template

    sizes = parse_sizes(sizes) if isinstance(sizes, str) else sorted({int(n) for n in sizes})
    template = check_template(template)
    settings: dict[str, Any] = {
        "seed": seed,
        "per_size": per_size,
        "sizes": sizes,
        "images": images,
        "template": template,
    }
    if images:
        from bindlab.data.render import RENDER_VOCAB as base
    else:
        base = SABER_VOCAB
    vocab = base
    if vocab_from:
        from bindlab.data.triplets.holdout import saber_vocab_from

        vocab = saber_vocab_from(vocab_from, base)
        settings.update(vocab_from=str(vocab_from), n_objects=len(vocab.objects), n_attributes=len(vocab.attributes))
    usable = template_vocab(vocab, template)
    if sizes[-1] > max_size(usable):
        where = f"the held-out vocabulary of {vocab_from}" if vocab_from else "the vocabulary"
        raise ValueError(
            f"sizes {sizes[0]}-{sizes[-1]}: {where} has {len(usable.objects)} objects and "
            f"{len(usable.attributes)} attributes{' the template can express' if usable is not vocab else ''}"
            f", so the largest scene size is N = {max_size(usable)}; use sizes 2-{max_size(usable)}"
        )
    if len(usable.attributes) != len(vocab.attributes):
        settings["attributes_refused_by_template"] = sorted(
            {x.category for x in vocab.attributes} - {x.category for x in usable.attributes}
        )
    questions = generate_saber(per_size=per_size, sizes=sizes, seed=seed, vocab=vocab, template=template)
    rendered = 0
    if images:
        from bindlab.data.saber_images import render_mcq_images

        rendered = render_mcq_images(questions, out, size=size, workers=workers, seed=seed, progress=progress)
        settings.update(image_size=size, vocab="renderable")
    return write_benchmark(out, questions, settings), settings, rendered
