"""``generate factors``, ``ground``: matched visual grounding on a factor grid (the Grounding tab's feature)."""

from __future__ import annotations

import argparse
import time

from bindlab.cli.common import Groups, _write_export, _write_json, add_data_model, add_output_args, add_run_args


# --- factor grids and matched visual grounding ----------------------------------------------------------------
def cmd_generate_factors(a: argparse.Namespace) -> None:
    from tqdm import tqdm

    from bindlab.data.factors import generate_grid, generate_signal_grids, parse_strengths, spec_from_args

    spec = spec_from_args(a.shapes, a.hues, a.patterns, a.contexts, a.replicas, a.size, a.seed)
    strengths = parse_strengths(a.signal_strengths) if a.signal_strengths else None
    if strengths and "plain" not in spec.patterns:
        raise ValueError(
            "--signal-strengths blends every pattern with its plain rendering; keep 'plain' in "
            "--patterns (the default includes it)"
        )
    t = time.perf_counter()
    with tqdm(total=spec.n_images, desc="rendering", unit="img") as bar:
        index, n = generate_grid(a.out, spec, workers=a.workers, progress=lambda done, total: bar.update(1))
    print(
        f"factor grid {len(spec.shapes)} shapes x {len(spec.hues)} hues x {len(spec.patterns)} patterns x "
        f"{spec.n_contexts} contexts x {spec.replicas} replicas = {len(index)} images ({n} rendered now, "
        f"{len(index) - n} already there) at {spec.size}px in {time.perf_counter() - t:.1f}s -> "
        f"{index.root / 'index.csv'}; splits {index.splits}"
    )
    if strengths:
        t = time.perf_counter()
        with tqdm(desc="blending", unit="img") as bar:
            grids = generate_signal_grids(
                index.root,
                strengths,
                workers=a.workers,
                progress=lambda done, total: (setattr(bar, "total", total), bar.update(1)),
            )
        print(
            f"signal strengths {', '.join(f'{g:g}' for g, _ in grids)}: {len(grids)} grids of {len(index)} images "
            f"(each pattern blended with its nuisance-matched plain image) in {time.perf_counter() - t:.1f}s -> "
            f"{grids[0][1].parent}/g*/index.csv; run `python -m bindlab ground-sweep --data {index.root} ...`"
        )


def cmd_ground(a: argparse.Namespace) -> None:
    from bindlab.present.exports import grounding_export
    from bindlab.studies.grounding import GroundingRequest, run_grounding
    from bindlab.studies.progress import progress_for

    request = GroundingRequest(
        a.data,
        a.model,
        a.factor,
        a.alpha,
        controls=not a.no_controls,
        n_boot=a.n_boot,
        seed=a.seed,
        device=a.device,
        dtype=a.dtype,
        batch_size=a.batch_size,
        protocol=a.protocol,
        align=a.align,
    )
    with progress_for(not a.no_progress, "ground") as report:
        result = run_grounding(request, report)
    model = result.provenance["encoder"]["id"]
    for f, r in result.summary["factors"].items():
        nat, gr = r["test"]["native"], r["test"]["grounded"]
        print(
            f"{model} {f} ({len(r['values'])} values, test {r['n_images']['test']} images): "
            f"macro-mAP {nat['macro_map']:.3f} -> {gr['macro_map']:.3f}, top-1 {nat['top1']:.3f} -> "
            f"{gr['top1']:.3f} at alpha {r['alpha']:.2f} ({r['alpha_source']}; validation picks "
            f"{r['validation']['alpha']:.2f})"
        )
        if "controls" in r:
            c = r["controls"]["test"]
            print(
                "  controls (macro-mAP): "
                + ", ".join(f"{k} {v['macro_map']:.3f}" for k, v in c.items() if v is not None)
            )
        print(
            "  alpha* (zero crossing of the margin, only where -1 < c < 0): "
            + ", ".join(
                f"{row['value']} " + ("no crossing" if row["alpha_star"] is None else f"{row['alpha_star']:.2f}")
                for row in r["per_value"]
            )
        )
        if "alignment" in r:
            al, t = r["alignment"], r["alignment"]["test"]
            chosen = "identity" if al["map"]["lr"] is None else f"lr {al['map']['lr']:g} epoch {al['map']['epoch']}"
            print(
                f"  {al['scope']} global map ({chosen}, chosen on validation): macro-mAP native "
                f"{t['native']['macro_map']:.3f}, global {t['global']['macro_map']:.3f}, global + matched "
                f"{t['global_matched']['macro_map']:.3f} (alpha {al['alpha']:.2f}), matched "
                f"{t['matched']['macro_map']:.3f}"
            )
    _write_json(a.out, result.to_json())
    _write_export(a, lambda: grounding_export(result), result.provenance)


def cmd_ground_sweep(a: argparse.Namespace) -> None:
    from bindlab.studies.grounding_sweep import SweepRequest, run_grounding_sweep

    result = run_grounding_sweep(
        SweepRequest(a.data or "", a.model, a.factor, a.protocol, a.device, a.batch_size, dtype=a.dtype)
    )
    model = result.provenance["encoder"]["id"]
    print(
        f"{model} {a.factor} signal-strength sweep ({a.protocol} holdout; alpha re-selected on validation and "
        f"directions re-estimated at every gamma; test macro-mAP):"
    )
    print(f"{'gamma':>6} {'image-proto':>11} {'native':>7} {'matched':>8} {'gain':>7} {'alpha':>6} {'cosine':>7}")
    for r in result.rows:
        print(
            f"{r['gamma']:>6.2f} {r['image_prototype']:>11.3f} {r['native']:>7.3f} {r['matched']:>8.3f} "
            f"{r['gain']:>+7.3f} {r['alpha']:>6.2f} {r['cosine']:>7.3f}"
        )
    _write_json(a.out, result.to_json())


def add_commands(g: Groups) -> None:
    p = g.generate.add_parser(
        "factors", help="FactorAtlas-style grid shape x hue x pattern x context x replica -> DIR/index.csv (resumable)"
    )
    p.add_argument("--out", required=True, help="output folder")
    for name, n in (("shapes", 8), ("hues", 12), ("patterns", 11)):
        p.add_argument(
            f"--{name}",
            help=f"N = the first N of the {n} defaults, or a comma-separated list"
            + (" (plain first)" if name == "patterns" else ""),
        )
    p.add_argument(
        "--contexts",
        type=int,
        default=12,
        help="nuisance contexts (splits: 1/3 calibration, 1/6 validation, rest test; 12 -> 0-3 / 4-5 / 6-11)",
    )
    p.add_argument("--replicas", type=int, default=2, help="renderer seeds per context")
    p.add_argument("--size", type=int, default=96, help="image side in pixels")
    p.add_argument("--seed", type=int, default=0, help="renderer seed (replica jitter, noise, texture details)")
    p.add_argument("--workers", type=int, default=2, help="rendering processes")
    p.add_argument(
        "--signal-strengths",
        help="also write DIR/signal/g<gamma>/ grids blending every pattern with "
        "its nuisance-matched plain image, e.g. 1,.75,.5,.3,.2,.1,0",
    )
    p.set_defaults(func=cmd_generate_factors)

    q = g.top.add_parser("ground", help="matched visual grounding on a factor grid: native vs grounded AP per value")
    add_data_model(q, "factor grid folder (with index.csv)", "image+text encoder id, e.g. toy:clip or hf:/path/to/clip")
    q.add_argument("--factor", default="all", help="pattern, hue, shape, a comma list, or all")
    q.add_argument("--alpha", default="auto", help="auto (chosen on validation) or a fixed number in [0, 8]")
    q.add_argument(
        "--protocol",
        default="context",
        choices=["context", "combination"],
        help="held-out protocol: context (split by nuisance context) or combination (unseen "
        "combinations of the two non-target factors; all values in every split)",
    )
    q.add_argument(
        "--align",
        default="none",
        choices=["none", "shared", "factor"],
        help="also fit a global text map A (one shared, or one per factor) on calibration, chosen on "
        "validation, and report norm(A q) and matched grounding on top of it",
    )
    q.add_argument("--no-controls", action="store_true", help="skip the controls (attraction, mismatched, ...)")
    q.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples of the selective-grounding gate")
    add_run_args(q, seed="bootstrap seed of the selective-grounding gate")
    add_output_args(q)
    q.set_defaults(func=cmd_ground)

    w = g.top.add_parser(
        "ground-sweep",
        help="matched grounding at every signal strength gamma (each pattern "
        "blended with its plain image): gain vs native, direction cosine",
    )
    add_data_model(
        w,
        "grid folder made with `generate factors --signal-strengths ...` (default: a small grid at the "
        "paper's seven strengths, rendered once)",
        "image+text encoder id, e.g. toy:clip",
        data_required=False,
    )
    w.add_argument("--factor", default="pattern", choices=["pattern"], help="the attenuated factor")
    w.add_argument("--protocol", default="context", choices=["context", "combination"], help="held-out protocol")
    add_run_args(w, progress=False)
    add_output_args(w, export=False)
    w.set_defaults(func=cmd_ground_sweep)
