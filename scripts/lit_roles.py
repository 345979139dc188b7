"""Where do a lit model's cross-modal MCQ answers fail? Pairwise wins of the right candidate over each distractor role.

An image MCQ answer is right only when the right candidate beats all of its distractors; this script splits that into
one decision per (question, distractor): the share of questions where the right candidate scores higher than the
distractor of each role (``attr_swap``, ``obj_swap``, ``joint_swap``: the same words with the bindings changed;
``replace``: one attribute replaced), in ti (text query, image candidates) and it (image query, text candidates).
Chance is .5 for every cell. Rows: the models given (their images embedded) and two stand-ins for the images, the
phrase reference and the phrase reference with half caption mean (:func:`bindlab.train.toy.eval.phrase_reference`'s
points, the targets of ``train toy --lit-target phrases [--target-caption-weight 0.5]``, with the runs' metric,
shrink .3, and 4 captions per scene, as trained).

    python scripts/lit_roles.py --data DIR/mcq.jsonl --models toy:lit-minilm,toy:runs/lit-blend-geo2 [--n N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def role_wins(questions: list, txt: np.ndarray, img: np.ndarray, pairing: str) -> dict[str, float]:
    """Share of (question, distractor) pairs, per distractor role, where the right candidate scores higher;
    ``txt``/``img`` (q, 5, d) unit vectors, query first."""
    from bindlab.train.toy.eval import pairing_scores

    wins: dict[str, list[bool]] = {}
    for q, s in zip(questions, pairing_scores(txt, img, pairing), strict=True):
        for j, c in enumerate(q.candidates):
            if j != q.answer:
                wins.setdefault(c.role, []).append(bool(s[q.answer] > s[j]))
    return {role: float(np.mean(w)) for role, w in sorted(wins.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="image MCQ file (generate saber --images)")
    ap.add_argument("--models", default="toy:lit-minilm", help="comma-separated encoder ids with images")
    ap.add_argument("--n", type=int, default=0, help="only questions with this many objects (0 = all)")
    a = ap.parse_args(argv)
    from PIL import Image

    from bindlab.data.schema import load_mcqs
    from bindlab.encoders.base import load_encoder
    from bindlab.train.toy.eval import _question_texts, phrase_points

    path = Path(a.data)
    questions = [q for q in load_mcqs(path)[0] if not a.n or q.n_objects == a.n]
    minilm = load_encoder("minilm", device="cpu")
    txt = _question_texts(questions, minilm)
    rows = {
        "MiniLM phrases, lam 0.5, shrink 0.3 (reference)": phrase_points(questions, minilm, 0.5, 0.3),
        "the same with caption mean 0.5 (reference)": phrase_points(
            questions, minilm, 0.5, 0.3, caption_weight=0.5, k=4
        ),
    }
    models = list(filter(None, a.models.split(",")))
    images = (
        [Image.open(path.parent / item.image).convert("RGB") for q in questions for item in (q.query, *q.candidates)]
        if models
        else []
    )
    for name in models:
        emb = load_encoder(name, device="cpu").embed_images(images)
        rows[name] = (emb / np.linalg.norm(emb, axis=1, keepdims=True)).reshape(len(questions), 5, -1)
    print(
        f"{len(questions)} questions{f' with {a.n} objects' if a.n else ''}; right candidate beats the distractor "
        "of each role (chance .5)"
    )
    header = None
    for name, img in rows.items():
        cells = {f"{p} > {r}": v for p in ("ti", "it") for r, v in role_wins(questions, txt, img, p).items()}
        if header is None:
            header = list(cells)
            print("| image stand-in / model | " + " | ".join(header) + " |")
            print("|---|" + "---|" * len(header))
        print(f"| {name} | " + " | ".join(f"{cells[h]:.2f}" for h in header) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
