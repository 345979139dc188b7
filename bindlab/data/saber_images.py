"""Images for SABER-style questions: render the query and candidates of each question, and check image sets.

Each item (query or candidate) is drawn from its *generation form*: its (attribute, object) bindings with the
question's fixed attribute realisations (``extra["realisations"]``), so an attribute looks the same in all five
images of a question. All five share one seed — the same layout of slots and the same flip — and objects fill
the slots in the item's caption order, so an attribute swap changes only which object carries which look.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

from bindlab.data.schema import MCQ, DataError, Item


def item_specs(item: Item, realisations: dict[str, str]) -> list:
    """The renderer's ObjectSpecs for one item, in caption order (attribute form from the question's realisations)."""
    from bindlab.data.render import ObjectSpec

    return [ObjectSpec(shape=o, attribute=a, form=realisations.get(a, "")) for a, o in item.bindings]


def question_seed(qid: str, seed: int = 0) -> int:
    """A stable 31-bit seed per question id (shared by its five images)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{qid}".encode()).digest()[:4], "little") & 0x7FFFFFFF


def image_paths(q: MCQ) -> list[str]:
    """Relative paths of a question's five images: query first, then candidates in their order."""
    return [f"images/{q.id}/query.png"] + [f"images/{q.id}/c{k}.png" for k in range(len(q.candidates))]


def render_mcq_images(
    questions: Sequence[MCQ],
    out_dir: str | Path,
    size: int = 256,
    workers: int = 2,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Render every question's query and candidate images under ``out_dir`` and set their ``image`` fields.

    Resumable: images already on disk (and readable) are kept. Returns the number of images rendered now.

    Raises:
        ValueError: if a question uses a shape or attribute the renderer cannot draw (generate the questions with
        ``vocab=RENDER_VOCAB``).
    """
    from bindlab.data.render import render_batch

    tasks = []
    for q in questions:
        real = q.extra.get("realisations", {})
        s = question_seed(q.id, seed)
        for item, rel in zip((q.query, *q.candidates), image_paths(q), strict=False):
            tasks.append((rel, item_specs(item, real), s))
            item.image = rel
    return render_batch(tasks, out_dir, size=size, workers=workers, progress=progress)


def check_images(questions: Sequence[MCQ], root: str | Path, verify: bool = False) -> list[str]:
    """Problems with a question set's images: missing image fields, missing files, unreadable files.

    Args:
        verify: also open every file through the one capped loader (:func:`bindlab.data.files.open_image`) and
            check that it decodes (slower).

    Returns:
        One human-readable line per problem (empty when all is well).

    Raises:
        DataError: an image path that exists but is not a regular file (a FIFO, a device, a folder): such a path is
            never opened (a FIFO would block) and never quietly left out.
    """
    from bindlab.data.files import check_regular, open_image

    problems = []
    for q in questions:
        for name, item in [("query", q.query)] + [(f"candidate {k}", c) for k, c in enumerate(q.candidates)]:
            if not item.image:
                problems.append(f"{q.id} {name}: no image path")
                continue
            p = Path(root) / item.image
            if not p.exists():
                problems.append(f"{q.id} {name}: missing image {p}")
                continue
            try:
                check_regular(p)
            except DataError as e:
                raise DataError(f"{q.id} {name}: image {e}") from None
            if verify:
                try:
                    with open_image(p):
                        pass
                except DataError as e:
                    problems.append(f"{q.id} {name}: unreadable image ({e})")
    return problems


def require_images(questions: Sequence[MCQ], root: str | Path) -> None:
    """Raise :class:`DataError` listing (up to five) image problems with their paths, and how many there are."""
    problems = check_images(questions, root)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise DataError(
            f"{len(problems)} image problem(s) under {root}: {shown}{more}. "
            "Generate images with 'generate saber --images' or use the tt pairing"
        )
