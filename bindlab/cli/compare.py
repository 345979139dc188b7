"""``compare``: several encoders on the same suite, one leaderboard (the Compare tab's feature)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bindlab.cli.common import (
    Groups,
    _write_export,
    _write_json,
    _write_per_item,
    add_data_model,
    add_output_args,
    add_run_args,
)


def _cell(value: Any, ci: Any = None, label: str = "", digits: int = 3) -> str:
    if value is None:
        return "n/a"
    text = f"{value:.{digits}f}"
    text = f"{text} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else text
    return f"{text} {label}" if label else text


def leaderboard_text(rows: list[dict[str, Any]]) -> str:
    """The leaderboard as plain text: rank, model, then each score with its 95 % interval and, where it has a chance
    level, above / at / below chance; last the share of MCQ caption words the model does not know."""
    if not rows:
        return "(no scores)"
    columns = [k for k in rows[0] if k not in ("rank", "model") and not k.endswith((" 95% CI", " vs chance"))]
    cells = [
        [
            str(r["rank"]),
            r["model"],
            *(
                _cell(r[c], r.get(f"{c} 95% CI"), r.get(f"{c} vs chance", ""), 1 if c.endswith(" %") else 3)
                for c in columns
            ),
        ]
        for r in rows
    ]
    header = ["#", "model", *columns]
    widths = [max(len(x) for x in col) for col in zip(header, *cells, strict=True)]
    return "\n".join(
        "  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip() for line in [header, *cells]
    )


def cmd_compare(a: argparse.Namespace) -> None:
    from bindlab.present.exports import models_compare_export
    from bindlab.studies.compare import CompareRequest, run_compare
    from bindlab.studies.progress import progress_for
    from bindlab.studies.validate import input_path

    if a.pairs_data:
        input_path(a.pairs_data, "pairs_data")  # inside the allowed data roots, like --data
    request = CompareRequest(
        models=a.models,
        suite=a.suite,
        data=a.data,
        pairs_data=a.pairs_data,
        pairings=a.pairings,
        verbosity=a.verbosity,
        limit=a.limit,
        seed=a.seed,
        batch_size=a.batch_size,
        device=a.device,
        dtype=a.dtype,
        use_cache=not a.no_cache,
    )
    with progress_for(not a.no_progress, "compare") as report:
        result = run_compare(request, report)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    s = result.summary
    print(f"{len(s['models'])} models on {', '.join(s['suite'])} (sorted by {s['sort_by']}; 95% bootstrap CIs)")
    print(leaderboard_text(s["leaderboard"]))
    print(s["leader_text"])  # a leader only where its 95 % interval lies above every other model's
    for row in s["set_used"]:  # what each task and pairing scored, and what was left out and why
        print(f"scored: {row['text']}")
    chance = {sc["column"]: sc["chance"] for sc in result.tables["scores"] if sc["chance"] is not None}
    if chance:  # an MCQ accuracy's chance: the mean of its questions' own (1/3 at N = 2, 1/4 above)
        print("chance levels: " + ", ".join(f"{c} {v:.3f}" for c, v in chance.items()))
    for u in s.get("unknown_words", []):
        if u["n_unknown"]:
            top = ", ".join((u["top"] or "").split(", ")[:8])
            print(
                f"{u['model']} does not know {u['share']:.1%} of the MCQ caption words ({u['query_share']:.1%} of "
                f"the query words; {u['questions_with_unknown']} of {u['n_questions']} questions); most frequent: {top}"
            )
    ag = s["agreement"]
    if ag["mean_spearman"] is not None:
        v = ag["variance_share"]
        print(
            f"per-scene agreement over {ag['n_models']} models x {ag['n_scenes']} scenes: mean Spearman rho "
            f"{ag['mean_spearman']:.3f} (CompoSET: 0.56); variance explained by scene {v['scene']:.1%}, "
            f"by model {v['model']:.1%}"
        )
    if s["diff_models"]:
        a_, b_ = s["diff_models"]
        print(f"{len(s['question_diff'])} questions {a_} gets right and {b_} gets wrong")
    if s["from_cache"]:
        print(f"from cache: {', '.join(s['from_cache'])}")
    _write_json(a.out, result.to_json())
    _write_per_item(a.per_item, result.rows)
    _write_export(a, lambda: models_compare_export(result), result.provenance)


def add_commands(g: Groups) -> None:
    p = g.top.add_parser(
        "compare",
        help="several encoders on the same suite: leaderboard with 95 %% CIs, per-N and "
        "per-edit-type scores, per-question diff, per-scene agreement",
    )
    add_data_model(
        p,
        "MCQ JSONL file (default: the embedded mini benchmark)",
        "comma-separated encoder ids, e.g. bow,minilm,toy:clip,toy:shared",
        data_required=False,
        model_flag="--models",
    )
    p.add_argument(
        "--suite",
        default="mcq",
        help="comma-separated tasks (python -m bindlab tasks lists them): mcq, retrieval, pairs, benchmark:NAME[=PATH]",
    )
    p.add_argument("--pairs-data", help="Pairs JSONL file (default: the embedded CompoSET-style mini set)")
    p.add_argument("--pairings", default="tt", help="MCQ/retrieval pairings, comma-separated: tt,ti,it,ii")
    p.add_argument("--verbosity", default="all", help="pairs caption level: short|medium|long|all")
    p.add_argument("--no-cache", action="store_true", help="rescore every model (ignore and do not write the cache)")
    add_run_args(
        p,
        batch_size=None,
        batch_help="texts or images per encoder forward pass (default: the backend's)",
        limit="first N questions / pairs / items (0 = all)",
        seed="bootstrap seed",
    )
    add_output_args(
        p,
        out="write results JSON here (the leaderboard, cross-benchmark table, agreement)",
        per_item="write every question's per-model credit and margin as JSONL here",
    )
    p.set_defaults(func=cmd_compare)
