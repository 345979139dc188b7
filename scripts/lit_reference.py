"""How much cross-modal binding can a frozen MiniLM text tower carry? toy:lit-minilm's image MCQs against a reference.

``toy:lit-minilm`` trains an image tower into the frozen MiniLM's space, so the best an image embedding can be *by
imitation* is where MiniLM puts its scene's captions. This script scores, on one image MCQ file (``generate saber
--images``), each pairing of the models given and of that reference:

- **reference** ("MiniLM imitation", :func:`bindlab.train.toy.eval.imitation_reference`): every image replaced by
  the normalised mean MiniLM embedding of ``K`` captions of its own scene, written as toy:lit-minilm's training
  captions are, so the reference knows each image's exact bindings and has no image error at all. ti = text query
  vs reference candidates, it = reference query vs text candidates, ii = reference vs reference; tt is MiniLM's own.

- **discriminant reference** (:func:`bindlab.train.toy.eval.discriminant_reference`): every image replaced by its
  scene's point ``W [(P - mu) - lam (N - mu)]`` — its captions' mean against its binding twins', whitened by the
  within-scene covariance of training-like captions — the targets of ``train toy --arch lit --lit-target
  discriminant``: what a tower that learnt those targets exactly would score.

- **phrase reference** (:func:`bindlab.train.toy.eval.phrase_reference`): every image replaced by its scene's
  phrase target — its objects' phrase embeddings ("a red cube") summed, less half its bag of pairings, in the same
  metric — the targets of ``--lit-target phrases`` (not the shipped toy:lit-minilm's): no caption sampling at all.
  With ``--caption-weights A,...`` also the targets of ``--target-caption-weight A``: A times the unit caption mean
  (the imitation reference's point) plus 1 - A times the phrase target, renormalised.

- **exact counts over a slot head's grid** (``--grid-of FOLDER``): every image replaced by the sum, over its
  objects, of the phrase grid of a slot-head model (``train toy --head-slots K``; the frozen MiniLM's "a/an
  <attribute> <shape>" in that run's metric): what its head would score if every slot were sure and right. Printed
  beside it: how near the model's own counts on the same images are.

- **confined** (``--span-dims K,...``, ``--span-of FOLDER``): the phrase reference (last ``--caption-weights``) with
  every point projected onto a subspace and renormalised: its own top K principal directions (centred on its mean),
  or the column space of a toy lit model's linear image projection (``image_proj``, width x 384). A tower whose
  embeddings are a linear map of its width-64 mean patch can only place images in such a 64-dimensional subspace;
  this shows what that costs even a perfect imitation of the targets (:class:`bindlab.encoders.toy.models.ImageHead`).

An image tower trained only to match caption embeddings approaches the imitation reference from below; one trained
with hard negatives (``--twin-share``) or towards the discriminant targets could in principle go past it. Accuracies
carry 95 % percentile bootstrap intervals over questions (2,000 resamples, seed 0).

    python scripts/lit_reference.py --data DIR/mcq.jsonl --models toy:lit-minilm,toy:clip [--k 8] [--no-discriminant] [--no-phrases] [--phrase-weights LAM,...] [--phrase-shrink S] [--caption-weights A,...] [--span-dims K,...] [--span-of FOLDER] [--grid-of FOLDER] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

PAIRINGS = ("tt", "ti", "it", "ii")


def model_credits(questions: list[Any], root: Path, model: str) -> dict[str, np.ndarray]:
    from bindlab.encoders.base import load_encoder
    from bindlab.eval.mcq import evaluate_mcq

    _, rows = evaluate_mcq(questions, root, load_encoder(model, device="cpu"), list(PAIRINGS))
    return {p: np.array([r["credit"] for r in rows if r["pairing"] == p]) for p in PAIRINGS}


def summary(credits: np.ndarray) -> dict[str, Any]:
    from bindlab.eval.metrics import bootstrap_ci

    lo, hi = bootstrap_ci(credits, n_boot=2000, seed=0)
    return {"accuracy": float(credits.mean()), "ci95": [float(lo), float(hi)], "n": int(credits.size)}


def principal_basis(points: np.ndarray, dims: int) -> np.ndarray:
    """(d, dims) orthonormal top principal directions of ``points`` (..., d), centred on their mean."""
    flat = points.reshape(-1, points.shape[-1])
    _, _, vt = np.linalg.svd(flat - flat.mean(0), full_matrices=False)
    return vt[:dims].T


def confined(points: np.ndarray, basis: np.ndarray, center: np.ndarray | None = None) -> np.ndarray:
    """``points`` (..., d) projected onto the span of the orthonormal ``basis`` (d, k) through ``center`` (default
    the origin), renormalised."""
    c = np.zeros(points.shape[-1]) if center is None else center
    out = c + (points - c) @ basis @ basis.T
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def grid_points(questions: list[Any], root: Path, folder: Path) -> tuple[np.ndarray, dict[str, float]]:
    """(q, 5, d) unit points: each MCQ image's objects counted exactly (``toy_lit.count_grid``) over the slot head's
    phrase grid of the toy lit model in ``folder`` (``image_head.phrases``); and how near the model's own counts on
    the images are: the share of an image's object cells among its n largest count cells (n objects; mean over
    images) and the share of images whose rounded counts are exact."""
    import torch

    from bindlab.encoders.base import load_encoder
    from bindlab.train.toy.eval import _item_scenes
    from bindlab.train.toy.lit import count_grid

    enc = load_encoder(f"toy:{folder}", device="cpu")
    head = getattr(enc.model, "image_head", None)
    if not hasattr(head, "counts"):
        raise SystemExit(f"--grid-of {folder}: not a slot-head lit model (train toy --head-slots K)")
    truth = count_grid([scene for q in questions for scene in _item_scenes(q)])
    with torch.inference_mode():
        points = head.embed(torch.from_numpy(truth)).numpy()  # the head's own sum over its grid
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    px = enc.pixels([root / item.image for q in questions for item in (q.query, *q.candidates)])
    with torch.inference_mode():
        counts = np.concatenate(
            [
                enc.model.encode_image_counts(torch.from_numpy(px[i : i + 256]))[1].numpy()
                for i in range(0, len(px), 256)
            ]
        )
    flat, true_flat = counts.reshape(len(counts), -1), truth.reshape(len(truth), -1)
    recall = [
        np.isin(np.flatnonzero(t), np.argsort(c)[::-1][: int(t.sum())]).mean()
        for c, t in zip(flat, true_flat, strict=True)
    ]
    return points.reshape(len(questions), 5, -1), {
        "top_n_recall": float(np.mean(recall)),
        "exact": float((np.round(flat) == true_flat).all(1).mean()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="image MCQ file (generate saber --images)")
    ap.add_argument("--models", default="toy:lit-minilm", help="comma-separated encoder ids with images")
    ap.add_argument("--k", type=int, default=8, help="captions averaged per reference image [default: 8]")
    ap.add_argument(
        "--no-discriminant",
        action="store_true",
        help="skip the discriminant reference (about 7 minutes of MiniLM on 2 cores for 400 questions)",
    )
    ap.add_argument("--no-phrases", action="store_true", help="skip the phrase reference (about 2 minutes)")
    ap.add_argument(
        "--twin-weights",
        default="0.5",
        metavar="LAM,...",
        help="discriminant reference: the twin weights lam to score [default: 0.5, the training default]",
    )
    ap.add_argument(
        "--phrase-weights",
        default="0.5",
        metavar="LAM,...",
        help="phrase reference: the bag weights lam to score [default: 0.5, the training default]",
    )
    ap.add_argument(
        "--phrase-shrink",
        type=float,
        default=None,
        metavar="S",
        help="phrase reference: covariance shrinkage of its metric [default: toy_lit.TARGET_SHRINK, "
        "0.03; match the run's --target-shrink]",
    )
    ap.add_argument(
        "--caption-weights",
        default="0",
        metavar="A,...",
        help="phrase reference: shares A of the caption mean in the target to score [default: 0, the "
        "phrase target alone]",
    )
    ap.add_argument(
        "--span-dims",
        default="",
        metavar="K,...",
        help="also score the phrase reference confined to its top K principal directions",
    )
    ap.add_argument(
        "--span-of",
        default="",
        metavar="FOLDER",
        help="also score the phrase reference confined to the column space of this toy lit model's "
        "linear image projection (a folder with model.safetensors and image_proj.weight)",
    )
    ap.add_argument(
        "--grid-of",
        default="",
        metavar="FOLDER",
        help="also score a slot-head lit model's phrase grid with the exact counts of each image's objects "
        "(what its head would score with sure, right slots), and say how near its own counts are",
    )
    ap.add_argument("--out", help="write the results JSON here")
    a = ap.parse_args(argv)
    from bindlab.data.schema import load_mcqs
    from bindlab.encoders.base import load_encoder

    path = Path(a.data)
    questions, _ = load_mcqs(path)
    res: dict[str, Any] = {"data": str(path), "questions": len(questions), "k": a.k, "rows": {}}
    from bindlab.train.toy.eval import (
        _pairing_credits,
        _question_texts,
        discriminant_reference,
        imitation_reference,
        phrase_points,
    )

    minilm = load_encoder("minilm", device="cpu")
    rows = {"MiniLM imitation (reference)": imitation_reference(questions, minilm, a.k)}
    if not a.no_discriminant:
        weights = [float(x) for x in a.twin_weights.split(",")]
        for lam, credit in discriminant_reference(questions, minilm, twin_weights=weights).items():
            rows[f"MiniLM discriminant, lam {lam:g} (reference)"] = credit
        print("scored the discriminant reference", file=sys.stderr)
    texts = _question_texts(questions, minilm)
    points = None  # the last phrase reference's points, which --span-dims / --span-of confine
    if not a.no_phrases:
        shrink = "" if a.phrase_shrink is None else f", shrink {a.phrase_shrink:g}"
        for lam in (float(x) for x in a.phrase_weights.split(",")):
            for share in (float(x) for x in a.caption_weights.split(",")):
                blend = f", caption mean {share:g}" if share else ""
                points = phrase_points(
                    questions, minilm, bag_weight=lam, shrink=a.phrase_shrink, caption_weight=share, k=a.k
                )
                rows[f"MiniLM phrases, lam {lam:g}{shrink}{blend} (reference)"] = _pairing_credits(
                    questions, texts, points
                )
        print("scored the phrase reference", file=sys.stderr)
    if a.span_dims or a.span_of:
        share = float(a.caption_weights.split(",")[-1])
        lam = float(a.phrase_weights.split(",")[-1])
        if points is None:
            points = phrase_points(
                questions, minilm, bag_weight=lam, shrink=a.phrase_shrink, caption_weight=share, k=a.k
            )
        label = f"MiniLM phrases, lam {lam:g}" + (f", caption mean {share:g}" if share else "")
        center = points.reshape(-1, points.shape[-1]).mean(0)
        for dims in (int(x) for x in filter(None, a.span_dims.split(","))):
            rows[f"{label}, top {dims} directions (reference)"] = _pairing_credits(
                questions, texts, confined(points, principal_basis(points, dims), center)
            )
        if a.span_of:
            from safetensors.numpy import load_file

            proj = load_file(str(Path(a.span_of) / "model.safetensors"))["image_proj.weight"]  # (embed_dim, width)
            basis, _ = np.linalg.qr(proj)
            rows[f"{label}, span of {Path(a.span_of).name}'s image_proj ({proj.shape[1]} dims; reference)"] = (
                _pairing_credits(questions, texts, confined(points, basis))
            )
        print("scored the confined references", file=sys.stderr)
    if a.grid_of:
        points, recall = grid_points(questions, path.parent, Path(a.grid_of))
        rows[f"exact counts over {Path(a.grid_of).name}'s phrase grid (reference)"] = _pairing_credits(
            questions, texts, points
        )
        res["grid_counts"] = recall
        print(
            f"{Path(a.grid_of).name}'s own counts on these images: the top-n cells hold {recall['top_n_recall']:.3f} "
            f"of the n objects; exact counts (rounded) on {recall['exact']:.3f} of the images",
            file=sys.stderr,
        )
    for m in filter(None, a.models.split(",")):
        rows[m] = model_credits(questions, path.parent, m)
        print(f"scored {m}", file=sys.stderr)
    from bindlab.eval.mcq import question_chance

    chance = float(np.mean(question_chance(questions)))
    print(f"{len(questions)} questions, N = {sorted({q.n_objects for q in questions})}, mean chance {chance:.3f}")
    print("| model | " + " | ".join(PAIRINGS) + " |")
    print("|---|" + "---|" * len(PAIRINGS))
    for name, cr in rows.items():
        res["rows"][name] = {p: summary(cr[p]) for p in PAIRINGS}
        cells = [f"{s['accuracy']:.3f} [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]" for s in res["rows"][name].values()]
        print(f"| {name} | " + " | ".join(cells) + " |")
    res["chance"] = chance
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
