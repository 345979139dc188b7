"""Seeds and intervals: the Finetune tab's separated report over several finetune seeds, with paired gains.

One finetune job is one draw of the batch order and the LoRA init. This script takes several finished jobs made
with the same config but different ``--seed`` (so the triplet data, and with ``"eval_rows": 0`` every evaluation
row, are shared), recomputes the separated report's rows (:mod:`bindlab.studies.finetune_report`) **per item** for
the base model and each job's two tuned models (``lora:<job>/unscaled`` and ``lora:<job>``, LiNeS), and reports
for every row and tuned model:

- the base value (the base model is the same for every job, so it is scored once);
- the tuned value in each seed, their mean and standard deviation over seeds (ddof = 1);
- the paired gain: per item, tuned - base averaged over the seeds, then its mean with a 95 % percentile bootstrap
  interval over items (2,000 resamples, seed 0 by default) — "moved" when that interval excludes 0;
- per seed, the same paired interval of that seed alone, so a reader can see whether a row moved in every seed.

The rows, their labels and their items are the report's own pieces (``training_words``, ``training_templates``,
``_mcq_sets``, ``_triplet_groups``, ``_triplet_credit``, the forgetting and single-object controls); the MCQs are
the job's default compare data (:func:`bindlab.studies.finetune.default_compare_data`: for a ``toy:`` job the
embedded image benchmark) unless ``--data`` names a file. Every job must share the base model, the triplet data and
the evaluation rows; the script checks that each row's items are identical across jobs and stops otherwise.

With ``--pairings tt,ti,it`` (an image model and an MCQ file with images, e.g. ``generate saber --images``), the
rows of the questions given are also scored with image queries or image candidates, one row per pairing: SABER's
transfer question — does a text-only finetune move binding across modalities with the image tower unchanged? (ii
is left out by default: a text-only finetune cannot change it.)

    BINDLAB_HOME=... python scripts/seed_study.py --jobs ID0,ID1,ID2 --out study.json --markdown
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np  # noqa: E402

from bindlab.eval.metrics import bootstrap_ci  # noqa: E402

# the control rows, named as the separated report names them
DRIFT = "control: general-sentence similarity drift from base"
PARAPHRASE = "control: paraphrase R@1 (general sentences)"
T2I = "control: single-object text->image R@1"


def job_setup(job_id: str) -> dict[str, Any]:
    """A finished job's id, base model, config and LiNeS a (refuses a job that is not done)."""
    from bindlab.studies.finetune import job_info

    info = job_info(job_id, log_lines=0)
    st = info["status"]
    if st["state"] != "done":
        raise SystemExit(f"job {st['id']} is {st['state']}, not done")
    return {
        "id": st["id"],
        "base": st["base_model"],
        "config": info.get("config") or {},
        "lines_a": (info.get("lines") or {}).get("a"),
    }


def report_rows(
    config: dict[str, Any], questions: list[Any], mcq_path: Path, pairings: tuple[str, ...] = ("tt",)
) -> list[dict[str, Any]]:
    """The separated report's rows for one job's config, as the report builds them, each with its items.

    Returns entries ``{"evaluation", "kind" (mcq | triplets), "format", "chance", "items", "key", "pairing"}``;
    ``key`` is a tuple identifying the items (question ids and texts, triplet texts) so jobs can be checked to share
    them. The MCQ rows are tt; the rows of the questions given are repeated for each other pairing in ``pairings``
    when every question has its images (the generated rows are text only).
    """
    from bindlab.eval.mcq import question_chance
    from bindlab.studies.finetune_report import (
        _mcq_sets,
        _triplet_groups,
        benchmark_seed,
        training_templates,
        training_words,
    )
    from bindlab.train.finetune import load_splits

    splits = load_splits(str(config["data"]), int(config.get("eval_rows", 400) or 0), int(config.get("seed", 0) or 0))
    trained = training_templates(splits["train"]) or ("attributive",)
    seen = training_words(splits["train"])
    rows = []
    for s in _mcq_sets(questions, trained, seen, seed=benchmark_seed(mcq_path)):
        with_images = s["source"] == "the questions given" and all(
            q.query.image and all(c.image for c in q.candidates) for q in s["questions"]
        )
        for p in pairings:
            if p != "tt" and not with_images:
                continue
            rows.append(
                {
                    "evaluation": s["evaluation"] + ("" if pairings == ("tt",) else f" — {p}"),
                    "kind": "mcq",
                    "format": s["format"],
                    "chance": float(np.mean(question_chance(s["questions"]))),
                    "items": s["questions"],
                    "key": tuple((q.id, q.query.text) for q in s["questions"]),
                    "pairing": p,
                }
            )
    for g in _triplet_groups(splits, trained, seen):
        rows.append(
            {
                "evaluation": g["evaluation"],
                "kind": "triplets",
                "format": g["format"],
                "chance": 0.5,
                "items": g["rows"],
                "key": tuple((r["query"], r["positive"], r["negative"]) for r in g["rows"]),
            }
        )
    return rows


def item_credits(
    encoder: Any, rows: list[dict[str, Any]], data_dir: Path, base_general: np.ndarray, images: list[Any] | None
) -> dict[str, np.ndarray]:
    """``{evaluation: (n,) per-item values}`` of one model on every row, controls included; ``data_dir`` is the MCQ
    file's folder (its images)."""
    from bindlab.eval.mcq import evaluate_mcq
    from bindlab.studies.finetune_report import _forgetting_items, _t2i_items, _triplet_credit

    out: dict[str, np.ndarray] = {}
    for r in rows:
        if r["kind"] == "mcq":
            _, items = evaluate_mcq(r["items"], data_dir, encoder, [r["pairing"]])
            out[r["evaluation"]] = np.array([it["credit"] for it in items], dtype=np.float64)
        else:
            out[r["evaluation"]] = _triplet_credit(encoder, r["items"])
    forget = _forgetting_items(encoder, base_general)
    out[DRIFT] = forget["drift"]
    out[PARAPHRASE] = forget["paraphrase_r1"]
    if images is not None:
        out[T2I] = _t2i_items(encoder, images)
    return out


def paired(base: np.ndarray, tuned: list[np.ndarray], n_boot: int, seed: int) -> dict[str, Any]:
    """Base, per-seed values, mean ± sd over seeds, and the paired gain with its bootstrap interval over items."""
    per_seed = [float(t.mean()) for t in tuned]
    diff = np.mean(np.stack(tuned), axis=0) - base  # (n,) per item: tuned - base, averaged over seeds
    lo, hi = bootstrap_ci(diff, n_boot=n_boot, seed=seed)
    seed_cis = [list(bootstrap_ci(t - base, n_boot=n_boot, seed=seed)) for t in tuned]
    sign = 1 if lo > 0 else -1 if hi < 0 else 0
    return {
        "base": float(base.mean()),
        "per_seed": per_seed,
        "mean": float(np.mean(per_seed)),
        "sd": float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else 0.0,
        "gain": float(diff.mean()),
        "gain_ci95": [lo, hi],
        "moved": sign != 0,
        "per_seed_gain": [float((t - base).mean()) for t in tuned],
        "per_seed_gain_ci95": seed_cis,
        "moved_every_seed": sign != 0 and all((c[0] > 0) if sign > 0 else (c[1] < 0) for c in seed_cis),
    }


def study(
    job_ids: list[str], data: str | None, n_boot: int, boot_seed: int, pairings: tuple[str, ...] = ("tt",)
) -> dict[str, Any]:
    """Score the base once and every job's tuned models on every row; the paired statistics per row and model."""
    from bindlab.data.schema import load_mcqs
    from bindlab.encoders.base import load_encoder
    from bindlab.studies.finetune import default_compare_data
    from bindlab.train.compare import display_labels, job_models, report_models
    from bindlab.train.general_sentences import general_sentences

    jobs = [job_setup(j) for j in job_ids]
    first = jobs[0]
    for j in jobs[1:]:
        for what in ("base", "lines_a"):
            if j[what] != first[what]:
                raise SystemExit(f"jobs differ in {what}: {first['id']} {first[what]!r} vs {j['id']} {j[what]!r}")
        for what in ("data", "eval_rows"):
            if j["config"].get(what) != first["config"].get(what):
                raise SystemExit(f"jobs differ in config {what}: {first['id']} vs {j['id']}")
    mcq_path = Path(data) if data else default_compare_data(first["id"])
    questions, _ = load_mcqs(mcq_path)
    rows = report_rows(first["config"], questions, mcq_path, pairings)
    for j in jobs[1:]:  # the same rows with the same items (eval_rows 0, or one evaluation seed)
        other = report_rows(j["config"], questions, mcq_path, pairings)
        if [(r["evaluation"], r["key"]) for r in other] != [(r["evaluation"], r["key"]) for r in rows]:
            raise SystemExit(
                f'job {j["id"]} evaluates other rows or items than {first["id"]}; use the same data with "eval_rows": 0'
            )
    data_dir = mcq_path.parent  # the MCQ file's images (the generated rows are text only)

    t0 = time.time()
    base = load_encoder(first["base"])
    base_general = base.embed_texts(general_sentences())
    images = None
    if "image" in base.modalities:
        from bindlab.train.finetune import single_object_set

        images = single_object_set()
    credits = {"base": item_credits(base, rows, data_dir, base_general, images)}
    print(f"base {first['base']} scored ({time.time() - t0:.0f} s)", file=sys.stderr)
    models = [m for m in report_models(first["lines_a"]) if m != "base"]
    for j in jobs:
        ids = job_models(j["id"], j["base"])
        for m in models:
            t0 = time.time()
            credits[(j["id"], m)] = item_credits(load_encoder(ids[m]), rows, data_dir, base_general, images)
            print(f"{ids[m]} scored ({time.time() - t0:.0f} s)", file=sys.stderr)

    entries = [
        {
            "evaluation": r["evaluation"],
            "kind": r["kind"],
            "format": r["format"],
            "chance": r["chance"],
            "higher_is_better": True,
        }
        for r in rows
    ]
    entries.append(
        {"evaluation": DRIFT, "kind": "control", "format": "control", "chance": None, "higher_is_better": False}
    )
    entries.append(
        {"evaluation": PARAPHRASE, "kind": "control", "format": "control", "chance": None, "higher_is_better": True}
    )
    if images is not None:
        entries.append(
            {
                "evaluation": T2I,
                "kind": "control",
                "format": "control",
                "chance": 1 / len(images),
                "higher_is_better": True,
            }
        )
    for e in entries:
        b = credits["base"][e["evaluation"]]
        e["n"] = int(b.size)
        e["models"] = {
            m: paired(b, [credits[(j["id"], m)][e["evaluation"]] for j in jobs], n_boot, boot_seed) for m in models
        }
    return {
        "jobs": [j["id"] for j in jobs],
        "seeds": [j["config"].get("seed", 0) for j in jobs],
        "base_model": first["base"],
        "config": {k: v for k, v in first["config"].items() if k != "seed"},
        "data": str(mcq_path),
        "labels": {m: display_labels(first["lines_a"])[m] for m in models},
        "n_boot": n_boot,
        "boot_seed": boot_seed,
        "pairings": list(pairings),
        "rows": entries,
    }


def _signed(x: float) -> str:
    """``+0.123`` / ``-0.123``; a value that rounds to zero is ``+0.000`` (never ``-0.000``)."""
    return f"{round(x, 3) + 0.0:+.3f}"


def markdown(res: dict[str, Any]) -> str:
    """The study as a Markdown table; a gain is bold when its paired interval excludes 0, and marked † when each
    seed's own paired interval excludes 0 on the same side too."""
    models = list(res["labels"])
    head = ["row", "n", "chance", "base"]
    for m in models:
        head += [f"{res['labels'][m]} mean ± sd", f"{res['labels'][m]} gain [paired CI]"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in res["rows"]:
        first = e["models"][models[0]]
        cells = [
            e["evaluation"],
            str(e["n"]),
            "—" if e["chance"] is None else f"{e['chance']:.3f}",
            f"{first['base']:.3f}",
        ]
        for m in models:
            s = e["models"][m]
            gain = f"{_signed(s['gain'])} [{_signed(s['gain_ci95'][0])}, {_signed(s['gain_ci95'][1])}]"
            if s["moved"]:
                gain = f"**{gain}**" + (" †" if s["moved_every_seed"] else "")
            cells += [f"{s['mean']:.3f} ± {s['sd']:.3f}", gain]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", required=True, help="comma-separated finished job ids (same config, different --seed)")
    p.add_argument("--data", help="MCQ JSONL (default: the job's default compare data, as `jobs compare`)")
    p.add_argument("--out", default="study.json", help="where to write the study (JSON)")
    p.add_argument("--markdown", action="store_true", help="print the Markdown table")
    p.add_argument(
        "--pairings",
        default="tt",
        help="MCQ pairings of the questions given, e.g. tt,ti,it (default tt; "
        "image pairings need an image model and an MCQ file with images)",
    )
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--boot-seed", type=int, default=0, help="bootstrap seed (default 0)")
    a = p.parse_args(argv)
    job_ids = [j.strip() for j in a.jobs.split(",") if j.strip()]
    if not job_ids:
        p.error("--jobs needs at least one job id")
    from bindlab.eval.mcq import parse_pairings

    res = study(job_ids, a.data, a.n_boot, a.boot_seed, tuple(parse_pairings(a.pairings)))
    Path(a.out).write_text(json.dumps(res, indent=1))
    if a.markdown:
        print(markdown(res))
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
