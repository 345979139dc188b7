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

from bindlab.eval.metrics import bootstrap_ci, p_text, task_chance  # noqa: E402

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
                "chance": task_chance("triplet"),
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
                "chance": task_chance("one_of", len(images)),
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


# ---- run mode: one command trains and scores a study's seeds, one folder per seed, resumable ---------------------


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` -> ``[0, 1, 2, 3, 4]``; ``"0,2,5"`` -> ``[0, 2, 5]`` (ranges and lists may mix)."""
    out: list[int] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if "-" in part[1:]:
            a, b = part.split("-", 1)
            out += list(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    if not out or len(set(out)) != len(out):
        raise SystemExit(f"--seeds {text!r}: give distinct seeds, e.g. 0-4 or 0,1,2")
    return out


def _credit_file(folder: Path) -> Path:
    return folder / "credits.npz"


def _save_credits(path: Path, credits: dict[str, dict[str, np.ndarray]]) -> None:
    """``{model: {evaluation: values}}`` as one npz (keys ``model::evaluation``), written atomically."""
    flat = {f"{m}::{e}": v for m, rows in credits.items() for e, v in rows.items()}
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **flat)
    tmp.replace(path)


def load_credits(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """The inverse of :func:`_save_credits`."""
    out: dict[str, dict[str, np.ndarray]] = {}
    with np.load(path) as z:
        for k in z.files:
            m, e = k.split("::", 1)
            out.setdefault(m, {})[e] = z[k]
    return out


GENERAL = "__general_embeddings__"  # each model's general-sentence embeddings (the drift test's own null)


def _earlier_job(log: Path) -> str | None:
    """The job id a seed's earlier finetune log names (``job ID submitted``), if any."""
    if not log.is_file():
        return None
    for line in log.read_text().splitlines():
        if line.startswith("job ") and " submitted" in line:
            return line.split()[1]
    return None


def _train_seed(config: Path, seed: int, folder: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run one finetune (a subprocess, so a crash leaves the other seeds alone); its result JSON in ``folder``."""
    import subprocess

    out = folder / "finetune.json"
    if out.is_file():
        return json.loads(out.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    earlier = _earlier_job(folder / "finetune.log")
    if earlier:  # a run stopped while its job went on: wait for that job instead of training the seed again
        from bindlab.studies.finetune import job_info

        while (info := job_info(earlier, log_lines=0))["status"]["state"] in ("queued", "running"):
            time.sleep(5)
        if info["status"]["state"] == "done":
            res = {"job_id": earlier, "model_id": f"lora:{earlier}", **job_info(earlier)["result"]}
            out.write_text(json.dumps(res, indent=1))
            return res
    t0 = time.time()
    cmd = [sys.executable, "-m", "bindlab", "finetune", "--config", str(config), "--seed", str(seed)]
    with open(folder / "finetune.log", "w") as log:
        rc = subprocess.call([*cmd, "--out", str(out)], env=env, stdout=log, stderr=subprocess.STDOUT)
    if rc != 0 or not out.is_file():
        raise SystemExit(f"seed {seed}: finetune failed (rc {rc}); see {folder / 'finetune.log'}")
    res = json.loads(out.read_text())
    (folder / "timing.json").write_text(json.dumps({"finetune_s": round(time.time() - t0, 1)}))
    return res


def run_seeds(
    config: Path, seeds: list[int], root: Path, data: str | None, pairings: tuple[str, ...]
) -> dict[str, Any]:
    """Train and score every seed not yet done under ``root`` (``root/seed-S/``: the finetune's result, log and
    per-item credits; ``root/base/``: the base model's credits; ``root/home``: the jobs). Returns the study's pieces
    for :func:`seed_table`: ``{"seeds", "rows", "labels", "credits": {"base": ..., seed: ...}}``."""
    import os

    from bindlab.data.schema import load_mcqs
    from bindlab.encoders.base import load_encoder
    from bindlab.train.compare import display_labels, job_models, report_models
    from bindlab.train.general_sentences import general_sentences

    root.mkdir(parents=True, exist_ok=True)
    os.environ["BINDLAB_HOME"] = str((root / "home").resolve())
    env = dict(os.environ)
    cfg = json.loads(config.read_text())
    frozen = root / "config.json"
    if frozen.is_file() and json.loads(frozen.read_text()) != cfg:
        raise SystemExit(f"{root} holds seeds of another config ({frozen}); use a new --dir")
    frozen.write_text(json.dumps(cfg, indent=1))
    jobs = {}

    def train(s: int) -> None:
        print(f"seed {s}: finetune", file=sys.stderr, flush=True)
        jobs[s] = job_setup(_train_seed(frozen, s, root / f"seed-{s}", env)["job_id"])

    train(seeds[0])  # the first seed fixes the rows; every later one is trained, then scored at once
    first = jobs[seeds[0]]
    mcq_path = Path(data) if data else None
    if mcq_path is None:
        from bindlab.studies.finetune import default_compare_data

        mcq_path = default_compare_data(first["id"])
    questions, _ = load_mcqs(mcq_path)
    rows = report_rows(first["config"], questions, mcq_path, pairings)
    keys = [[r["evaluation"], str(hash(r["key"]))] for r in rows]
    images = None
    models = [m for m in report_models(first["lines_a"]) if m != "base"]

    def score(enc: Any, base_general: np.ndarray) -> dict[str, np.ndarray]:
        got = item_credits(enc, rows, mcq_path.parent, base_general, images)
        got[GENERAL] = enc.embed_texts(general_sentences())
        return got

    base_dir = root / "base"
    base_dir.mkdir(exist_ok=True)
    base = load_encoder(first["base"])
    if "image" in base.modalities:
        from bindlab.train.finetune import single_object_set

        images = single_object_set()
    base_general = base.embed_texts(general_sentences())
    if not _credit_file(base_dir).is_file():
        t0 = time.time()
        _save_credits(_credit_file(base_dir), {"base": score(base, base_general)})
        print(f"base scored ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    credits: dict[Any, Any] = {"base": load_credits(_credit_file(base_dir))["base"]}
    for s in seeds:
        if s not in jobs:
            train(s)
        j = jobs[s]
        for what in ("base", "lines_a"):
            if j[what] != first[what]:
                raise SystemExit(f"seed {s} differs in {what}: {j[what]!r} vs {first[what]!r}")
        folder = root / f"seed-{s}"
        if not _credit_file(folder).is_file():
            other = report_rows(j["config"], questions, mcq_path, pairings)
            if [[r["evaluation"], str(hash(r["key"]))] for r in other] != keys:
                raise SystemExit(f"seed {s} evaluates other rows or items; use the same data with eval_rows 0")
            t0 = time.time()
            ids = job_models(j["id"], j["base"])
            _save_credits(_credit_file(folder), {m: score(load_encoder(ids[m]), base_general) for m in models})
            timing = json.loads((folder / "timing.json").read_text()) if (folder / "timing.json").is_file() else {}
            timing["score_s"] = round(time.time() - t0, 1)
            (folder / "timing.json").write_text(json.dumps(timing))
            print(f"seed {s} scored ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
        credits[s] = load_credits(_credit_file(folder))
    return {
        "seeds": seeds,
        "jobs": {s: jobs[s]["id"] for s in seeds},
        "base_model": first["base"],
        "config": {k: v for k, v in cfg.items() if k != "seed"},
        "data": str(mcq_path),
        "rows": [{k: r[k] for k in ("evaluation", "kind", "format", "chance")} for r in rows],
        "controls": images is not None,
        "labels": {m: display_labels(first["lines_a"])[m] for m in models},
        "credits": credits,
    }


def seed_table(pieces: dict[str, Any], n_boot: int = 2000, boot_seed: int = 0) -> dict[str, Any]:
    """Every row's change against the base over the seeds: mean over seeds, seed spread, the two-level (seeds, then
    items) 95 % interval, its p and the Holm-adjusted p across the report's whole family of tests, and the verdict
    (holds / mixed / n.s.: :func:`bindlab.eval.metrics.hierarchical_bootstrap`). Drift is tested against its own
    null (:func:`bindlab.eval.metrics.drift_permutation_test`: is the base further from the tuned seeds than they
    are from each other?), not against 0."""
    from bindlab.eval.metrics import drift_permutation_test, hierarchical_bootstrap, holm

    seeds = pieces["seeds"]
    base = pieces["credits"]["base"]
    models = list(pieces["labels"])
    names = [r["evaluation"] for r in pieces["rows"]] + [DRIFT, PARAPHRASE] + ([T2I] if T2I in base else [])
    rows = []
    for ev in names:
        known = next((r for r in pieces["rows"] if r["evaluation"] == ev), None)
        row: dict[str, Any] = {
            "evaluation": ev,
            "chance": known["chance"] if known else (task_chance("one_of", base[ev].size) if ev == T2I else None),
            "n": int(base[ev].size),
            "base": float(base[ev].mean()),
            "models": {},
        }
        for m in models:
            tuned = [pieces["credits"][s][m][ev] for s in seeds]
            if ev == DRIFT:
                emb = [base[GENERAL]] + [pieces["credits"][s][m][GENERAL] for s in seeds]
                stat = {"per_seed": [float(t.mean()) for t in tuned], "mean": float(np.mean([t.mean() for t in tuned]))}
                stat["seed_sd"] = float(np.std(stat["per_seed"], ddof=1)) if len(seeds) > 1 else 0.0
                if len(seeds) >= 2:
                    perm = drift_permutation_test(emb)
                    stat.update(ci95=None, p=perm["p"], null=perm, test="permutation of the base label")
                    stat["verdict"] = "holds" if perm["p"] <= 0.05 else "n.s."
                else:
                    stat.update(ci95=None, p=float("nan"), verdict="one seed", test="none (one seed)")
            else:
                stat = hierarchical_bootstrap([t - base[ev] for t in tuned], n_boot=n_boot, seed=boot_seed)
                stat["test"] = "hierarchical bootstrap"
            stat["value_per_seed"] = [float(t.mean()) for t in tuned]
            row["models"][m] = stat
        rows.append(row)
    family = [(i, m) for i, r in enumerate(rows) for m in models]
    adj = holm([rows[i]["models"][m]["p"] for i, m in family])
    for (i, m), a in zip(family, adj, strict=True):
        st = rows[i]["models"][m]
        st["p_holm"] = a
        if st["verdict"] in ("holds", "mixed") and not a <= 0.05:
            st["verdict"] = "n.s. (Holm)"
    return {k: v for k, v in pieces.items() if k != "credits"} | {
        "n_boot": n_boot,
        "boot_seed": boot_seed,
        "family_size": len(family),
        "rows": rows,
    }


def seed_markdown(res: dict[str, Any]) -> str:
    """The per-seed table: one line per row and tuned model — seeds, base, each seed's value, the mean change over
    seeds ± its seed sd, the two-level 95 % interval, raw and Holm-adjusted p, and the verdict."""
    seeds = res["seeds"]
    head = ["row", "model", "n", "chance", "base", "per seed (" + ", ".join(str(s) for s in seeds) + ")"]
    head += ["Δ mean ± seed sd", "95 % interval (seeds, then items)", "p", "p (Holm)", "verdict"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in res["rows"]:
        for m, st in r["models"].items():
            if r["evaluation"] == DRIFT:
                null = st.get("null") or {}
                delta = f"{st['mean']:.3f} ± {st['seed_sd']:.3f}"
                # the null's two distances in one unit (1 - cos), side by side; the Δ column is the report's drift
                ci = (
                    f"base→tuned {null['drift']:.3f} vs seed-to-seed {null['seed_drift']:.3f} (1 − cos; own null)"
                    if null
                    else "—"
                )
            else:
                delta = f"{_signed(st['mean'])} ± {st['seed_sd']:.3f}"
                ci = f"[{_signed(st['ci95'][0])}, {_signed(st['ci95'][1])}]"
            cells = [
                r["evaluation"],
                res["labels"][m],
                str(r["n"]),
                "—" if r["chance"] is None else f"{r['chance']:.3f}",
                f"{r['base']:.3f}",
                ", ".join(f"{v:.3f}" for v in st["value_per_seed"]),
                delta,
                ci,
                p_text(st["p"]),
                p_text(st["p_holm"]),
                st["verdict"],
            ]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def claims_markdown(res: dict[str, Any], rows: list[str]) -> str:
    """A short table of a study's headline rows (a model card's): per row and tuned model the seeds used, base, the
    tuned mean ± its seed sd, the change with its two-level 95 % interval, the Holm p (adjusted across the *whole*
    study's family, not just these rows) and the verdict. ``rows`` are evaluation names as the study writes them;
    an unknown one is refused."""
    by_name = {r["evaluation"]: r for r in res["rows"]}
    missing = [r for r in rows if r not in by_name]
    if missing:
        raise SystemExit(f"the study has no row {missing[0]!r}")
    head = "| claim | model | seeds | base | tuned, mean ± seed sd | Δ [95 % interval, seeds then items] | p (Holm) | verdict |"
    out = [head, "|---|---|---|---|---|---|---|---|"]
    for name in rows:
        r = by_name[name]
        for m, st in r["models"].items():
            vals = np.asarray(st["value_per_seed"], dtype=float)
            if r["evaluation"] == DRIFT:
                null = st.get("null") or {}
                change = f"{st['mean']:.3f} (base→tuned {null.get('drift', float('nan')):.3f} vs seed-to-seed " + (
                    f"{null.get('seed_drift', float('nan')):.3f}; own null)"
                )
            else:
                change = f"{_signed(st['mean'])} [{_signed(st['ci95'][0])}, {_signed(st['ci95'][1])}]"
            sd = float(np.std(vals, ddof=1)) if vals.size > 1 else 0.0
            cells = [
                f"{name} (n = {r['n']})",
                res["labels"][m],
                f"{len(vals)} ({', '.join(str(x) for x in res['seeds'])})",
                f"{r['base']:.3f}",
                f"{vals.mean():.3f} ± {sd:.3f}",
                change,
                p_text(st["p_holm"]),
                st["verdict"],
            ]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def write_block(path: Path, section: str, table: str) -> None:
    """Replace the text between ``<!-- seed-study:SECTION -->`` and ``<!-- /seed-study:SECTION -->`` in a Markdown
    file with ``table`` (the markers stay); a file without the markers is refused."""
    start, end = f"<!-- seed-study:{section} -->", f"<!-- /seed-study:{section} -->"
    text = path.read_text()
    if start not in text or end not in text:
        raise SystemExit(f"{path} has no {start} ... {end} block; add the two markers where the table goes")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{start}\n{table}\n{end}{tail}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", help="comma-separated finished job ids (same config, different --seed)")
    p.add_argument(
        "--config",
        help="run mode: a finetune config (JSON); trains and scores every --seeds seed not yet done under --dir",
    )
    p.add_argument("--seeds", default="0-4", help="run mode: training seeds, e.g. 0-4 or 0,1,2 (default 0-4)")
    p.add_argument("--dir", help="run mode: the study's folder (one seed-S folder per seed; rerun to resume)")
    p.add_argument("--train-only", action="store_true", help="run mode: train and score, write no table yet")
    p.add_argument("--report", help="run mode: a Markdown file whose seed-study block (--section) gets the table")
    p.add_argument("--section", default="seed-study", help="the block's name in --report (default seed-study)")
    p.add_argument("--data", help="MCQ JSONL (default: the job's default compare data, as `jobs compare`)")
    p.add_argument("--out", default="study.json", help="where to write the study (JSON)")
    p.add_argument("--markdown", action="store_true", help="print the Markdown table")
    p.add_argument(
        "--pairings",
        default="tt",
        help="MCQ pairings of the questions given, e.g. tt,ti,it (default tt; "
        "image pairings need an image model and an MCQ file with images)",
    )
    p.add_argument(
        "--claims",
        help="instead: a study JSON (--out of a run) whose headline rows (--rows) go into --report's block as a "
        "short table (a model card's)",
    )
    p.add_argument("--rows", default="", help="with --claims: evaluation names, separated by ';'")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--boot-seed", type=int, default=0, help="bootstrap seed (default 0)")
    a = p.parse_args(argv)
    from bindlab.eval.mcq import parse_pairings

    pairings = tuple(parse_pairings(a.pairings))
    if a.claims:
        table = claims_markdown(json.loads(Path(a.claims).read_text()), [r for r in a.rows.split(";") if r])
        if a.report:
            write_block(Path(a.report), a.section, table)
        else:
            print(table)
        return 0
    if a.config:
        if not a.dir:
            p.error("--config needs --dir (the study's folder)")
        pieces = run_seeds(Path(a.config), parse_seeds(a.seeds), Path(a.dir), a.data, pairings)
        if a.train_only:
            return 0
        res = seed_table(pieces, a.n_boot, a.boot_seed)
        out = Path(a.dir) / "study.json" if a.out == "study.json" else Path(a.out)
        out.write_text(json.dumps(res, indent=1))
        table = seed_markdown(res)
        (Path(a.dir) / "study.md").write_text(table + "\n")
        if a.report:
            write_block(Path(a.report), a.section, table)
        if a.markdown:
            print(table)
        print(f"wrote {out}", file=sys.stderr)
        return 0
    job_ids = [j.strip() for j in (a.jobs or "").split(",") if j.strip()]
    if not job_ids:
        p.error("give --jobs ID,ID,... (finished jobs) or --config with --dir (run mode)")
    res = study(job_ids, a.data, a.n_boot, a.boot_seed, pairings)
    Path(a.out).write_text(json.dumps(res, indent=1))
    if a.markdown:
        print(markdown(res))
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
