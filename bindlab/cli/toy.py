"""``train toy``, ``eval toy``: the toy vision-language models and their cards."""

from __future__ import annotations

import argparse
from pathlib import Path

from bindlab.cli.common import OUT_HELP, Groups, _write_json


def cmd_train_toy(a: argparse.Namespace) -> None:
    from bindlab.studies.toy import ToyTrainRequest, run_toy_train

    model = {
        "width": a.width,
        "layers": a.layers,
        "text_layers": a.layers,
        "heads": a.heads,
        "image_size": a.image_size,
        "patch_size": a.patch_size,
        "stem": a.stem,
        "embed_dim": a.width,
        "head_hidden": a.head_hidden,
        "head_slots": a.head_slots,
    }
    request = ToyTrainRequest(
        arch=a.arch,
        out=a.out,
        steps=a.steps,
        batch_size=a.batch_size,
        seed=a.seed,
        pool_size=a.pool_size,
        hard_share=a.hard_share,
        checkpoint_every=a.checkpoint_every,
        threads=a.threads,
        lr=a.lr,
        model=model,
        progress=not a.no_progress,
        holdout_fraction=a.holdout_combos,
        twin_share=a.twin_share,
        init_from=a.init_from or "",
        pair_share=a.pair_twins,
        pair_scenes=a.pair_scenes,
        text=a.text or "",
        captions_per_scene=a.captions_per_scene,
        lit_target=a.lit_target,
        target_twin_weight=a.target_twin_weight,
        target_shrink=a.target_shrink,
        target_pair_weight=a.target_pair_weight,
        target_bag_weight=a.target_bag_weight,
        target_contrastive=a.target_contrastive,
        target_caption_weight=a.target_caption_weight,
        target_rank_steps=a.target_rank_steps,
        image_rank_weight=a.image_rank_weight,
        rank_scenes=a.rank_scenes,
        twin_layout=a.twin_layout,
        image_rank_scale=a.image_rank_scale,
        image_margin_weight=a.image_margin_weight,
        image_bias_weight=a.image_bias_weight,
        slot_count_weight=a.slot_count_weight,
        max_objects=a.max_objects,
        render_size=a.render_size,
        render_share=a.render_share,
    )
    record = run_toy_train(request).summary
    out = Path(a.out)
    if not record["finished"]:
        print(
            f"stopped at step {record['steps']}/{a.steps}; run the same command again to resume from {out}/checkpoint"
        )
        return
    if record.get("captions"):
        c = record["captions"]
        print(
            f"captions: {c['captions']:,} ({c['distinct']:,} distinct) embedded once by {c['text_model']} in "
            f"{c['embed_seconds']:.0f}s -> {out / c['cache']}"
        )
    print(
        f"trained toy:{a.arch} ({record['parameters']:,} parameters) for {record['steps']} steps in "
        f"{record['train_seconds']:.0f}s (+{record['render_seconds']:.0f}s rendering); final loss "
        f"{record['final_loss']:.3f} -> toy:{out.resolve()}"
    )
    if a.eval_sample:
        cmd_eval_toy(
            argparse.Namespace(
                model=f"toy:{out.resolve()}",
                sample=a.eval_sample,
                per_size=a.eval_per_size,
                out=str(out / "eval.json"),
                seed=a.seed,
            )
        )


def cmd_eval_toy(a: argparse.Namespace) -> None:
    from bindlab.studies.toy import ToyEvalRequest, run_toy_eval

    request = ToyEvalRequest(
        model=a.model,
        sample=a.sample,
        per_size=a.per_size,
        seed=a.seed,
        card=bool(getattr(a, "card", False)),
        card_notes=tuple(getattr(a, "note", None) or ()),
    )
    res = run_toy_eval(request)
    for line in res.notes:
        print(line)
    _write_json(a.out, {**res.summary, "provenance": res.provenance})


def add_commands(g: Groups) -> None:
    tr = g.top.add_parser("train", help="train a model").add_subparsers(dest="what", required=True, metavar="KIND")
    p = tr.add_parser(
        "toy", help="train a toy vision-language model (toy:clip / toy:shared / toy:lit-minilm) on rendered scenes"
    )
    p.add_argument(
        "--arch",
        choices=["clip", "shared", "lit"],
        required=True,
        help="clip = two towers; shared = one stack; lit = an image tower trained into a frozen text "
        "model's space (LiT, text tower locked; see --text)",
    )
    p.add_argument(
        "--text",
        metavar="MODEL",
        help="with --arch lit: the frozen text model (default minilm, the "
        "bundled all-MiniLM-L6-v2); its caption embeddings are cached",
    )
    p.add_argument(
        "--captions-per-scene",
        type=int,
        default=4,
        metavar="K",
        help="with --arch lit: real-English captions per pool scene, embedded once up front",
    )
    p.add_argument(
        "--lit-target",
        choices=["captions", "discriminant", "phrases"],
        default="captions",
        help="with --arch lit: captions = contrastive with one cached caption per scene (the shipped "
        "toy:lit-minilm's first stage); discriminant = pull each image towards W[(P - mu) - lam(N - "
        "mu)], its scene's caption mean against its binding twin's, whitened by the captions' "
        "within-scene covariance (bindlab.train.toy.lit.discriminant_targets); phrases = pull it "
        "towards its objects' phrase embeddings ('a red cube') summed, less lam of the scene's bag of "
        "pairings, in that metric (bindlab.train.toy.lit.phrase_targets; not the shipped model's)",
    )
    p.add_argument(
        "--target-twin-weight",
        type=float,
        default=0.5,
        metavar="LAM",
        help="with --lit-target discriminant: lam, the weight of the binding twin's caption mean",
    )
    p.add_argument(
        "--target-pair-weight",
        type=float,
        default=0.0,
        metavar="W",
        help="with --lit-target discriminant or phrases and --twin-share: weight of a second term that pulls the "
        "difference between a scene's and its twin's image embeddings towards the difference of "
        "their targets (where the binding is)",
    )
    p.add_argument(
        "--target-bag-weight",
        type=float,
        default=0.5,
        metavar="LAM",
        help="with --lit-target phrases: lam, the weight of the scene's bag (every attribute of it with "
        "every object of it)",
    )
    p.add_argument(
        "--target-caption-weight",
        type=float,
        default=0.0,
        metavar="A",
        help="with --lit-target phrases: share A of the scene's unit caption mean in its target (A * mean "
        "+ (1 - A) * phrase target, renormalised; bindlab.train.toy.lit.blend_targets); the whole "
        "pool's captions (and, with --twin-share, its twins') are embedded once up front",
    )
    p.add_argument(
        "--target-rank-steps",
        type=int,
        default=0,
        metavar="N",
        help="with --lit-target phrases: learn their metric for N steps (from the within-scene whitener) so "
        "that each cached caption ranks its scene's point above its binding twin's and the reverse "
        "(bindlab.train.phrase_metric; 12-15 s for 1,500 steps on the 10,000-scene pool); 0 = the whitener",
    )
    p.add_argument(
        "--rank-scenes",
        type=int,
        default=0,
        metavar="N",
        help="with --target-rank-steps: fit the metric on the pool's first N scenes, so only their "
        "captions (and their twins') are embedded and the pool can grow without embedding all of its "
        "captions (about 86 a second with one thread); 0 = every pool scene",
    )
    p.add_argument(
        "--image-rank-weight",
        type=float,
        default=0.0,
        metavar="W",
        help="with --lit-target phrases and --twin-share: weight of a ranking term on the images themselves: "
        "each scene's cached caption must score its image above its binding twin's, and each image "
        "its caption above the twin's (bindlab.train.toy.train.image_rank_loss)",
    )
    p.add_argument(
        "--image-rank-scale",
        type=float,
        default=30.0,
        metavar="S",
        help="with --image-rank-weight: the margins' scale inside its logistic loss (default 30, the ranked "
        "metric's); a large one (300) makes every wrong decision cost about alike, so the image's bias "
        "(how well it matches its captions' common part) must shrink below the binding margin",
    )
    p.add_argument(
        "--image-margin-weight",
        type=float,
        default=0.0,
        metavar="W",
        help="with --lit-target phrases and --twin-share: weight of a term that regresses each (scene, twin) "
        "pair's four decision margins under its cached caption, computed on the images, onto the same "
        "margins of their targets (bindlab.train.toy.train.image_margin_loss)",
    )
    p.add_argument(
        "--image-bias-weight",
        type=float,
        default=0.0,
        metavar="W",
        help="with --lit-target phrases and --twin-share: weight of a term that pins the component of each "
        "(scene, twin) pair's unit image difference along its captions' mean to the same component of "
        "their targets' (bindlab.train.toy.train.image_bias_loss)",
    )
    p.add_argument(
        "--target-contrastive",
        type=float,
        default=0.0,
        metavar="W",
        help="with --lit-target discriminant or phrases: weight of a contrastive (InfoNCE) term between the "
        "batch's images and their targets, beside the cosine loss (with --twin-share, scene and twin "
        "are each other's hardest negatives)",
    )
    p.add_argument(
        "--target-shrink",
        type=float,
        default=0.03,
        metavar="S",
        help="with --lit-target discriminant or phrases: covariance shrinkage, a share of its mean eigenvalue",
    )
    p.add_argument("--out", required=True, help="output folder (checkpoints; the final model loads as toy:/path)")
    p.add_argument("--steps", type=int, default=6000, help="optimizer steps (6000 = the shipped models)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the init, the scene pool, the batch order and the captions"
    )
    p.add_argument("--batch-size", type=int, default=128, help="image-caption pairs per step")
    p.add_argument(
        "--lr", type=float, default=1.5e-3, help="AdamW peak learning rate (linear warm-up, then cosine decay to 0)"
    )
    p.add_argument("--pool-size", type=int, default=10000, help="pre-rendered training scenes (cached)")
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=100,
        help="steps between checkpoints (a rerun resumes from the last one)",
    )
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is fastest on a busy 2-core machine)")
    p.add_argument(
        "--width", type=int, default=0, help="override the hidden width (0 = the architecture's; tests use tiny models)"
    )
    p.add_argument("--layers", type=int, default=0, help="override the number of blocks (0 = the architecture's)")
    p.add_argument(
        "--heads", type=int, default=0, help="override the number of attention heads (0 = the architecture's)"
    )
    p.add_argument(
        "--image-size", type=int, default=0, help="override the image side in pixels (0 = the architecture's)"
    )
    p.add_argument(
        "--patch-size",
        type=int,
        default=0,
        help="override the ViT patch side in pixels, a multiple of 4 (0 = the architecture's)",
    )
    p.add_argument("--stem", choices=["deep", "light"], help="override the convolutional stem")
    p.add_argument(
        "--head-hidden",
        type=int,
        default=0,
        metavar="H",
        help="image head: 0 = a linear map of the mean patch (the embeddings span at most --width "
        "dimensions); H = a per-patch MLP of hidden width H, then the mean (spans the whole joint "
        "space; for --arch lit, whose frozen text space is wider than the tower)",
    )
    p.add_argument(
        "--head-slots",
        type=int,
        default=0,
        metavar="K",
        help="image head (--arch lit --lit-target phrases): K object slots, each a distribution over "
        "the frozen text model's object phrases, summed; every image is then a mixture of phrase "
        "hypotheses (0 = no slot head)",
    )
    p.add_argument(
        "--slot-count-weight",
        type=float,
        default=0.0,
        metavar="W",
        help="with --head-slots: weight of a term that regresses the slots' summed (shape, attribute) "
        "counts onto the objects each training scene shows, so each slot commits to one object "
        "(bindlab.train.toy.train.slot_count_loss)",
    )
    p.add_argument(
        "--max-objects",
        type=int,
        choices=[4, 5],
        default=4,
        metavar="N",
        help="pool scenes have 1..N objects: 4 (shares 35/25/20/20 %%, the shipped models) or 5 (shares "
        "30/20/17.5/17.5/15 %%; a SABER-style MCQ asks about 2-5) [default: 4]",
    )
    p.add_argument(
        "--render-size",
        type=int,
        default=0,
        metavar="PX",
        help="draw the pool at PX pixels and shrink it to the model's side with the box filter the "
        "encoder shrinks image files with (an MCQ set's images are drawn at 128 px); 0 = draw at "
        "the model's side [default: 0]",
    )
    p.add_argument(
        "--render-share",
        type=float,
        default=1.0,
        metavar="S",
        help="with --render-size: the share of pool scenes (and their twins) drawn at PX; the rest are "
        "drawn at the model's side, as the single-object evaluation's renders are [default: 1]",
    )
    p.add_argument(
        "--hard-share",
        type=float,
        default=0.5,
        help="share of each batch in shape-hard groups (single objects sharing an attribute)",
    )
    p.add_argument(
        "--holdout-combos",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="keep this share of shape x attribute pairs out of every training scene (the shipped models: "
        "0.15); eval toy then reports seen vs unseen combinations",
    )
    p.add_argument(
        "--twin-share",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="add binding twins (same scene, two attributes swapped or one replaced; --twin-layout) as hard "
        "negatives, this share of the batch size per step (toy:negclip: 0.5)",
    )
    p.add_argument(
        "--twin-layout",
        choices=("same", "shuffled"),
        default="same",
        help="with --twin-share: a twin's objects sit in its scene's slots (same), or in the same slots in a "
        "random other order (shuffled), as an image MCQ's right candidate and its swaps do",
    )
    p.add_argument(
        "--pair-twins",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="add CompoSET-style pair twins (a Pairs-set scene and the same scene with one attribute edit, "
        "all twelve contexts) as hard negatives, this share of the batch size per step",
    )
    p.add_argument(
        "--pair-scenes",
        type=int,
        default=3000,
        metavar="N",
        help="with --pair-twins: pair twins rendered for the run (one edit per scene; cached)",
    )
    p.add_argument(
        "--init-from",
        metavar="DIR",
        help="start from this toy model folder's weights (a finetune, e.g. "
        "bindlab/assets/toy-clip) instead of a fresh init",
    )
    p.add_argument(
        "--eval-sample",
        type=int,
        default=300,
        help="held-out single-object renders for the final evaluation (0 = skip it)",
    )
    p.add_argument("--eval-per-size", type=int, default=10, help="MCQs per N = 2..10 in the final evaluation")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_train_toy)

    e = g.eval.add_parser("toy", help="single-object retrieval and image MCQs on rendered scenes (toy model card)")
    e.add_argument("--model", required=True, help="encoder id with text and images, e.g. toy:clip")
    e.add_argument(
        "--sample",
        type=int,
        default=0,
        help="held-out single-object renders (0 = all 1008 shape x attribute combinations)",
    )
    e.add_argument("--per-size", type=int, default=40, help="MCQs per N = 2..10")
    e.add_argument("--seed", type=int, default=0, help="seed of the sampled renders and MCQs")
    e.add_argument("--out", help=OUT_HELP)
    e.add_argument(
        "--card", action="store_true", help="also write the model card README.md into the toy model's folder"
    )
    e.add_argument(
        "--note",
        action="append",
        help="a line for the card's training section (repeatable), e.g. the machine's load during training",
    )
    e.set_defaults(func=cmd_eval_toy)
