"""The settings of one toy training run (``train toy``): :class:`TrainConfig` and its model sizes
(:class:`ModelSize`), the one list of them.

Each setting is a field whose metadata carries what the faces need: its ``train toy`` flag, help text, metavar and
choices (the command's flags are built from them, :func:`bindlab.cli.common.add_fields`), and whether and how the
reproduce command of a model card names it (:func:`bindlab.train.toy.card.command_args`). Nothing here imports
torch, numpy or the renderer, so the CLI builds its parser without them; the checks that need them import them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ARCHS = ("clip", "shared", "lit")  # bindlab.encoders.toy.models.ARCHS (a test keeps them equal)
TWIN_LAYOUTS = ("same", "shuffled")  # bindlab.train.toy.data.TWIN_LAYOUTS
MAX_OBJECTS = (4, 5)  # the keys of bindlab.train.toy.data.OBJECT_WEIGHTS
TARGET_SHRINK = 0.03  # bindlab.train.toy.lit.TARGET_SHRINK
TARGET_TWIN_WEIGHT = 0.5  # bindlab.train.toy.lit.TARGET_TWIN_WEIGHT
PHRASE_BAG_WEIGHT = 0.5  # bindlab.train.toy.lit.PHRASE_BAG_WEIGHT
RANK_SCALE = 30.0  # bindlab.train.phrase_metric.RANK_SCALE

# Architectures of the shipped models (small enough for 2 shared CPU cores).
ARCH_DEFAULTS: dict[str, dict[str, Any]] = {
    "clip": dict(width=64, heads=4, layers=4, text_layers=3, embed_dim=64, image_size=64, patch_size=16, stem="deep"),
    "shared": dict(width=64, heads=4, layers=4, embed_dim=64, image_size=64, patch_size=16, stem="deep"),
    # toy:clip's image tower; embed_dim is set to the frozen text model's dimension (MiniLM: 384)
    "lit": dict(width=64, heads=4, layers=4, image_size=64, patch_size=16, stem="deep"),
}
LIT_TARGETS = ("captions", "discriminant", "phrases")  # what a lit image is trained towards (TrainConfig.lit_target)
STEMS = ("deep", "light")  # the convolutional stems (ModelSize.stem)
TEXT_DIMS = {"minilm": 384}  # frozen text models of --arch lit (known dimensions; others are measured)


ALWAYS: Callable[[dict[str, Any]], bool] = lambda t: True  # noqa: E731 - a rule of the reproduce command
NEVER: Callable[[dict[str, Any]], bool] = lambda t: False  # noqa: E731


def _setting(
    default: Any = None,
    help: str = "",  # noqa: A002 - argparse's word
    *,
    factory: Callable[[], Any] | None = None,
    flag: str | None = None,
    metavar: str | None = None,
    choices: tuple[Any, ...] | None = None,
    required: bool = False,
    shown: Callable[[dict[str, Any]], bool] | None = None,
    value: Callable[[dict[str, Any]], Any] | None = None,
    lit: bool = False,
) -> Any:
    """One training setting: its default and, in the field's metadata, all that ``train toy`` and the card need.

    Args:
        help: the ``train toy`` flag's help text; a setting without one has no flag and no place in the command.
        flag: the flag, when it is not ``--`` and the name with dashes (``--holdout-combos``).
        metavar, choices, required: as ``argparse`` takes them (``required``: no default on the command line).
        shown: whether the reproduce command of a recorded ``train_config`` names the flag; by default when the
            value is set (not 0, empty or False).
        value: the value the command writes; by default the recorded one.
        lit: only for ``--arch lit`` (never in another architecture's command).
    """
    meta = {
        k: v
        for k, v in {
            "help": help,
            "flag": flag,
            "metavar": metavar,
            "choices": choices,
            "required": required,
            "shown": shown,
            "value": value,
            "lit": lit,
        }.items()
        if v
    }
    return field(default_factory=factory, metadata=meta) if factory else field(default=default, metadata=meta)


def _lit_target_is(*targets: str) -> Callable[[dict[str, Any]], bool]:
    return lambda t: t.get("lit_target", "captions") in targets


@dataclass
class ModelSize:
    """Overrides of an architecture's sizes as ``train toy`` takes them (0 or None: the architecture's own; tests use
    tiny models); :meth:`overrides` is the ``model`` of a :class:`TrainConfig`."""

    width: int = _setting(0, "override the hidden width (0 = the architecture's; tests use tiny models)")
    layers: int = _setting(0, "override the number of blocks (0 = the architecture's)")
    heads: int = _setting(0, "override the number of attention heads (0 = the architecture's)")
    image_size: int = _setting(0, "override the image side in pixels (0 = the architecture's)")
    patch_size: int = _setting(0, "override the ViT patch side in pixels, a multiple of 4 (0 = the architecture's)")
    stem: str | None = _setting(None, "override the convolutional stem", choices=STEMS)
    head_hidden: int = _setting(
        0,
        "image head: 0 = a linear map of the mean patch (the embeddings span at most --width "
        "dimensions); H = a per-patch MLP of hidden width H, then the mean (spans the whole joint "
        "space; for --arch lit, whose frozen text space is wider than the tower)",
        metavar="H",
    )
    head_slots: int = _setting(
        0,
        "image head (--arch lit --lit-target phrases): K object slots, each a distribution over "
        "the frozen text model's object phrases, summed; every image is then a mixture of phrase "
        "hypotheses (0 = no slot head)",
        metavar="K",
    )

    def overrides(self) -> dict[str, Any]:
        """The :class:`~bindlab.encoders.toy.models.ToyConfig` overrides that are set: ``layers`` sizes the text
        tower too, ``width`` the joint embedding."""
        sizes = {
            "width": self.width,
            "layers": self.layers,
            "text_layers": self.layers,
            "heads": self.heads,
            "image_size": self.image_size,
            "patch_size": self.patch_size,
            "stem": self.stem,
            "embed_dim": self.width,
            "head_hidden": self.head_hidden,
            "head_slots": self.head_slots,
        }
        return {k: v for k, v in sizes.items() if v}


@dataclass
class TrainConfig:
    """Settings of one training run (recorded in ``training.json``), in the order a card's reproduce command names
    them; the flagless ones (``warmup``, ``weight_decay``, ``render_workers``, ``model``) are the loop's own."""

    arch: str = _setting(
        "clip",
        "clip = two towers; shared = one stack; lit = an image tower trained into a frozen text "
        "model's space (LiT, text tower locked; see --text)",
        choices=ARCHS,
        required=True,
        shown=ALWAYS,
    )
    text: str = _setting(
        "",
        "with --arch lit: the frozen text model (default minilm, the "
        "bundled all-MiniLM-L6-v2); its caption embeddings are cached",
        metavar="MODEL",
        shown=ALWAYS,
        value=lambda t: t.get("text") or "minilm",
        lit=True,
    )
    steps: int = _setting(6000, "optimizer steps (6000 = the shipped models)", shown=ALWAYS)
    seed: int = _setting(
        0, "seed of the init, the scene pool, the batch order and the captions", shown=ALWAYS
    )  # fixes init, pool, batch order and captions
    batch_size: int = _setting(128, "image-caption pairs per step", shown=ALWAYS)  # in-batch negatives
    lr: float = _setting(1.5e-3, "AdamW peak learning rate (linear warm-up, then cosine decay to 0)", shown=ALWAYS)
    pool_size: int = _setting(10000, "pre-rendered training scenes (cached)", shown=ALWAYS)
    holdout_fraction: float = _setting(  # toy_data.heldout_combinations
        0.0,
        "keep this share of shape x attribute pairs out of every training scene (the shipped models: "
        "0.15); eval toy then reports seen vs unseen combinations",
        flag="--holdout-combos",
        metavar="FRACTION",
    )
    twin_share: float = _setting(  # toy_data.make_batch; NegCLIP-style
        0.0,
        "add binding twins (same scene, two attributes swapped or one replaced; --twin-layout) as hard "
        "negatives, this share of the batch size per step (toy:negclip: 0.5)",
        metavar="SHARE",
    )
    twin_layout: str = _setting(  # toy_data.shuffled_slots
        "same",
        "with --twin-share: a twin's objects sit in its scene's slots (same), or in the same slots in a "
        "random other order (shuffled), as an image MCQ's right candidate and its swaps do",
        choices=TWIN_LAYOUTS,
        shown=lambda t: bool(t.get("twin_share")) and t.get("twin_layout", "same") != "same",
    )
    pair_share: float = _setting(  # train.toy.pairs
        0.0,
        "add CompoSET-style pair twins (a Pairs-set scene and the same scene with one attribute edit, "
        "all twelve contexts) as hard negatives, this share of the batch size per step",
        flag="--pair-twins",
        metavar="SHARE",
    )
    pair_scenes: int = _setting(
        3000,
        "with --pair-twins: pair twins rendered for the run (one edit per scene; cached)",
        metavar="N",
        shown=lambda t: bool(t.get("pair_share")),
    )
    max_objects: int = _setting(  # toy_data.OBJECT_WEIGHTS
        4,
        "pool scenes have 1..N objects: 4 (shares 35/25/20/20 %%, the shipped models) or 5 (shares "
        "30/20/17.5/17.5/15 %%; a SABER-style MCQ asks about 2-5) [default: 4]",
        choices=MAX_OBJECTS,
        metavar="N",
        shown=lambda t: int(t.get("max_objects") or 4) != 4,
    )
    render_size: int = _setting(
        0,
        "draw the pool at PX pixels and shrink it to the model's side with the box filter the "
        "encoder shrinks image files with (an MCQ set's images are drawn at 128 px); 0 = draw at "
        "the model's side [default: 0]",
        metavar="PX",
    )
    render_share: float = _setting(  # toy_data.pool_render_sizes
        1.0,
        "with --render-size: the share of pool scenes (and their twins) drawn at PX; the rest are "
        "drawn at the model's side, as the single-object evaluation's renders are [default: 1]",
        metavar="S",
        shown=lambda t: bool(t.get("render_size")) and float(t.get("render_share", 1.0)) < 1,
    )
    captions_per_scene: int = _setting(  # toy_lit.CAPTIONS_PER_SCENE
        4,
        "with --arch lit: real-English captions per pool scene, embedded once up front",
        metavar="K",
        shown=lambda t: int(t.get("captions_per_scene") or 4) != 4,
        lit=True,
    )
    lit_target: str = _setting(
        "captions",
        "with --arch lit: captions = contrastive with one cached caption per scene (the shipped "
        "toy:lit-minilm's first stage); discriminant = pull each image towards W[(P - mu) - lam(N - "
        "mu)], its scene's caption mean against its binding twin's, whitened by the captions' "
        "within-scene covariance (bindlab.train.toy.lit.discriminant_targets); phrases = pull it "
        "towards its objects' phrase embeddings ('a red cube') summed, less lam of the scene's bag of "
        "pairings, in that metric (bindlab.train.toy.lit.phrase_targets; not the shipped model's)",
        choices=LIT_TARGETS,
        shown=lambda t: t.get("lit_target", "captions") != "captions",
        lit=True,
    )
    target_bag_weight: float = _setting(
        PHRASE_BAG_WEIGHT,
        "with --lit-target phrases: lam, the weight of the scene's bag (every attribute of it with every object of it)",
        metavar="LAM",
        shown=_lit_target_is("phrases"),
        lit=True,
    )
    target_twin_weight: float = _setting(
        TARGET_TWIN_WEIGHT,
        "with --lit-target discriminant: lam, the weight of the binding twin's caption mean",
        metavar="LAM",
        shown=lambda t: t.get("lit_target", "captions") not in ("captions", "phrases"),
        lit=True,
    )
    target_shrink: float = _setting(
        TARGET_SHRINK,
        "with --lit-target discriminant or phrases: covariance shrinkage, a share of its mean eigenvalue",
        metavar="S",
        shown=lambda t: t.get("lit_target", "captions") != "captions",
        lit=True,
    )
    target_pair_weight: float = _setting(
        0.0,
        "with --lit-target discriminant or phrases and --twin-share: weight of a second term that pulls the "
        "difference between a scene's and its twin's image embeddings towards the difference of "
        "their targets (where the binding is)",
        metavar="W",
        lit=True,
    )
    target_contrastive: float = _setting(
        0.0,
        "with --lit-target discriminant or phrases: weight of a contrastive (InfoNCE) term between the "
        "batch's images and their targets, beside the cosine loss (with --twin-share, scene and twin "
        "are each other's hardest negatives)",
        metavar="W",
        lit=True,
    )
    target_caption_weight: float = _setting(  # toy_lit.blend_targets
        0.0,
        "with --lit-target phrases: share A of the scene's unit caption mean in its target (A * mean "
        "+ (1 - A) * phrase target, renormalised; bindlab.train.toy.lit.blend_targets); the whole "
        "pool's captions (and, with --twin-share, its twins') are embedded once up front",
        metavar="A",
        lit=True,
    )
    target_rank_steps: int = _setting(  # train.phrase_metric
        0,
        "with --lit-target phrases: learn their metric for N steps (from the within-scene whitener) so "
        "that each cached caption ranks its scene's point above its binding twin's and the reverse "
        "(bindlab.train.phrase_metric; 12-15 s for 1,500 steps on the 10,000-scene pool); 0 = the whitener",
        metavar="N",
        lit=True,
    )
    rank_scenes: int = _setting(
        0,
        "with --target-rank-steps: fit the metric on the pool's first N scenes, so only their "
        "captions (and their twins') are embedded and the pool can grow without embedding all of its "
        "captions (about 86 a second with one thread); 0 = every pool scene",
        metavar="N",
        shown=lambda t: bool(t.get("target_rank_steps")) and bool(t.get("rank_scenes")),
        lit=True,
    )
    image_rank_weight: float = _setting(
        0.0,
        "with --lit-target phrases and --twin-share: weight of a ranking term on the images themselves: "
        "each scene's cached caption must score its image above its binding twin's, and each image "
        "its caption above the twin's (bindlab.train.toy.train.image_rank_loss)",
        metavar="W",
        lit=True,
    )
    image_rank_scale: float = _setting(  # large: every wrong sign costs alike
        RANK_SCALE,
        "with --image-rank-weight: the margins' scale inside its logistic loss (default 30, the ranked "
        "metric's); a large one (300) makes every wrong decision cost about alike, so the image's bias "
        "(how well it matches its captions' common part) must shrink below the binding margin",
        metavar="S",
        shown=lambda t: bool(t.get("image_rank_weight")) and float(t.get("image_rank_scale", RANK_SCALE)) != RANK_SCALE,
        lit=True,
    )
    image_margin_weight: float = _setting(
        0.0,
        "with --lit-target phrases and --twin-share: weight of a term that regresses each (scene, twin) "
        "pair's four decision margins under its cached caption, computed on the images, onto the same "
        "margins of their targets (bindlab.train.toy.train.image_margin_loss)",
        metavar="W",
        lit=True,
    )
    image_bias_weight: float = _setting(
        0.0,
        "with --lit-target phrases and --twin-share: weight of a term that pins the component of each "
        "(scene, twin) pair's unit image difference along its captions' mean to the same component of "
        "their targets' (bindlab.train.toy.train.image_bias_loss)",
        metavar="W",
        lit=True,
    )
    slot_count_weight: float = _setting(
        0.0,
        "with --head-slots: weight of a term that regresses the slots' summed (shape, attribute) "
        "counts onto the objects each training scene shows, so each slot commits to one object "
        "(bindlab.train.toy.train.slot_count_loss)",
        metavar="W",
        lit=True,
    )
    hard_share: float = _setting(  # toy_data.shape_hard_groups
        0.5, "share of each batch in shape-hard groups (single objects sharing an attribute)", shown=NEVER
    )
    checkpoint_every: int = _setting(100, "steps between checkpoints (a rerun resumes from the last one)", shown=NEVER)
    threads: int = _setting(  # on a busy 2-core machine 1 thread ran ~10x faster than 2 (measured)
        1, "torch CPU threads (1 is fastest on a busy 2-core machine)", shown=NEVER
    )
    warmup: int = 60  # linear warm-up steps, then cosine decay to 0
    weight_decay: float = 0.05
    render_workers: int = 2  # processes that render the pool
    model: dict[str, Any] = field(default_factory=dict, metadata={"sizes": True})  # ToyConfig overrides: ModelSize
    init_from: str = _setting(
        "",
        "start from this toy model folder's weights (a finetune, e.g. bindlab/assets/toy-clip) instead of a fresh init",
        metavar="DIR",
    )

    def __post_init__(self) -> None:
        self._check_shared()
        if self.arch == "lit":
            self._check_lit()
        else:
            self._check_not_lit()
        self.heldout()  # checks holdout_fraction

    def _check_shared(self) -> None:
        """The settings every arch reads."""
        if self.arch not in ARCHS:
            raise ValueError(f"unknown toy arch {self.arch!r}; choose one of {ARCHS}")
        for name in ("steps", "batch_size", "pool_size", "checkpoint_every"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.batch_size < 2:
            raise ValueError("batch_size must be at least 2 (contrastive training needs negatives)")
        if not 0 <= self.twin_share <= 1:
            raise ValueError(f"twin_share must be between 0 and 1, got {self.twin_share}")
        if not 0 <= self.pair_share <= 1:
            raise ValueError(f"pair_share must be between 0 and 1, got {self.pair_share}")
        if self.twin_layout not in TWIN_LAYOUTS:
            raise ValueError(f"unknown twin layout {self.twin_layout!r}; choose one of {TWIN_LAYOUTS}")
        if self.max_objects not in MAX_OBJECTS:
            raise ValueError(f"max_objects must be one of {sorted(MAX_OBJECTS)}, got {self.max_objects}")
        if self.render_size and not 32 <= int(self.render_size) <= 512:
            raise ValueError(f"render_size must be 0 (the model's side) or 32-512 px, got {self.render_size}")
        if not 0 < self.render_share <= 1:
            raise ValueError(f"render_share must be in (0, 1], got {self.render_share}")
        if self.render_share < 1 and not self.render_size:
            raise ValueError("--render-share is the share of the pool drawn at --render-size: give --render-size too")
        if self.pair_share > 0 and int(self.pair_scenes) < 1:
            raise ValueError(f"pair_scenes must be at least 1, got {self.pair_scenes}")
        if self.init_from and not (Path(self.init_from) / "model.safetensors").is_file():
            raise ValueError(
                f"init_from {self.init_from!r} is not a toy model folder (no model.safetensors); give "
                "a folder written by 'train toy', e.g. bindlab/assets/toy-clip"
            )

    def _check_lit(self) -> None:
        """The LiT settings (a frozen text tower, targets, twin terms), with ``text`` defaulting to minilm."""
        if self.pair_share:
            raise ValueError(
                "--arch lit trains with cached captions of the pool and its binding twins only: no --pair-twins"
            )
        if not self.text:
            self.text = "minilm"
        if int(self.captions_per_scene) < 1:
            raise ValueError(f"captions_per_scene must be at least 1, got {self.captions_per_scene}")
        if self.lit_target not in LIT_TARGETS:
            raise ValueError(f"unknown lit target {self.lit_target!r}; choose one of {LIT_TARGETS}")
        if self.lit_target != "captions" and int(self.captions_per_scene) < 2:
            raise ValueError(
                f"--lit-target {self.lit_target} needs at least 2 captions per scene (its metric is "
                "their within-scene covariance)"
            )
        if self.lit_target == "discriminant" and not 0 <= self.target_twin_weight < 1:
            raise ValueError(f"target_twin_weight must be in [0, 1), got {self.target_twin_weight}")
        if self.lit_target == "phrases" and not 0 <= self.target_bag_weight < 1:
            raise ValueError(f"target_bag_weight must be in [0, 1), got {self.target_bag_weight}")
        if not 0 <= self.target_caption_weight <= 1:
            raise ValueError(f"target_caption_weight must be in [0, 1], got {self.target_caption_weight}")
        if int(self.target_rank_steps) < 0:
            raise ValueError(f"target_rank_steps must be at least 0, got {self.target_rank_steps}")
        if self.target_rank_steps and self.lit_target != "phrases":
            raise ValueError("--target-rank-steps is for --lit-target phrases (it learns their metric)")
        if int(self.rank_scenes) < 0:
            raise ValueError(f"rank_scenes must be at least 0, got {self.rank_scenes}")
        if self.rank_scenes and not self.target_rank_steps:
            raise ValueError("--rank-scenes is for --target-rank-steps (the scenes its metric is fitted on)")
        needs_all = [
            f"--{n.replace('_', '-')}"
            for n in ("target_caption_weight", "image_rank_weight", "image_margin_weight", "image_bias_weight")
            if getattr(self, n)
        ]
        if self.rank_scenes and needs_all:
            raise ValueError(
                f"--rank-scenes embeds only the first scenes' captions; {needs_all[0]} needs every "
                "pool scene's (leave --rank-scenes out)"
            )
        for name in ("image_rank_weight", "image_margin_weight", "image_bias_weight"):  # twin terms on images
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be at least 0, got {getattr(self, name)}")
            if getattr(self, name) and (self.lit_target != "phrases" or not self.twin_share):
                raise ValueError(
                    f"--{name.replace('_', '-')} is for --lit-target phrases with twins in the batch (--twin-share)"
                )
        if not self.image_rank_scale > 0:
            raise ValueError(f"image_rank_scale must be positive, got {self.image_rank_scale}")
        if self.target_caption_weight and self.lit_target != "phrases":
            raise ValueError(
                "--target-caption-weight is for --lit-target phrases (the share of the scene's "
                "caption mean in its phrase target)"
            )
        if self.lit_target != "captions" and self.target_shrink <= 0:
            raise ValueError(f"target_shrink must be positive, got {self.target_shrink}")
        if self.target_pair_weight < 0:
            raise ValueError(f"target_pair_weight must be at least 0, got {self.target_pair_weight}")
        if self.target_pair_weight and not self.twin_share:
            raise ValueError("--target-pair-weight needs twins in the batch (--twin-share)")
        if self.target_pair_weight and self.lit_target == "captions":
            raise ValueError("--target-pair-weight is for --lit-target discriminant or phrases")
        if self.target_contrastive < 0:
            raise ValueError(f"target_contrastive must be at least 0, got {self.target_contrastive}")
        if self.target_contrastive and self.lit_target == "captions":
            raise ValueError(
                "--target-contrastive is for --lit-target discriminant or phrases (captions "
                "training is contrastive already)"
            )
        if self.model.get("head_slots") and self.lit_target != "phrases":
            raise ValueError("--head-slots is for --lit-target phrases (its slots sum the targets' phrases)")
        if self.slot_count_weight < 0:
            raise ValueError(f"slot_count_weight must be at least 0, got {self.slot_count_weight}")
        if self.slot_count_weight and not self.model.get("head_slots"):
            raise ValueError("--slot-count-weight supervises a slot head's counts: give --head-slots K too")

    def _check_not_lit(self) -> None:
        """A LiT-only setting on another arch is refused, naming the arch."""
        if self.model.get("head_slots"):
            raise ValueError(f"--head-slots is for --arch lit --lit-target phrases; {self.arch} has no phrase grid")
        if self.slot_count_weight:
            raise ValueError(f"--slot-count-weight is for --arch lit with --head-slots; {self.arch} has no slot head")
        if self.text:
            raise ValueError(f"--text is for --arch lit (a frozen text tower); {self.arch} trains its own")
        if self.lit_target != "captions":
            raise ValueError(f"--lit-target is for --arch lit; {self.arch} trains its own text tower")

    @property
    def clean_holdout(self) -> bool:
        """Whether the held-out pairs are kept out of colour slots too (lit runs: yes)."""
        return self.arch == "lit"

    def heldout(self) -> frozenset[tuple[str, str]]:
        """The held-out (shape, attribute) pairs of this run."""
        from bindlab.train.toy.data import heldout_combinations

        return frozenset(heldout_combinations(self.holdout_fraction, self.seed))

    def model_config(self, vocab_size: int) -> Any:
        """The :class:`~bindlab.encoders.toy.models.ToyConfig` of this run (a vocabulary of ``vocab_size`` words)."""
        from bindlab.encoders.toy.models import ToyConfig

        extra: dict[str, Any] = {}
        if self.arch == "lit":
            extra = {"text_model": self.text, "embed_dim": text_dim(self.text), "max_text_len": 0}
            vocab_size = 0
            if self.model.get("head_slots"):
                from bindlab.data.render import RENDER_VOCAB

                extra.update(head_shapes=len(RENDER_VOCAB.objects), head_attributes=len(RENDER_VOCAB.attributes))
        return ToyConfig(arch=self.arch, vocab_size=vocab_size, **{**ARCH_DEFAULTS[self.arch], **self.model, **extra})


def text_dim(text_model: str) -> int:
    """The embedding dimension of a frozen text model (:data:`TEXT_DIMS`, else measured on one text)."""
    if text_model in TEXT_DIMS:
        return TEXT_DIMS[text_model]
    from bindlab.encoders.base import load_encoder

    return int(load_encoder(text_model, device="cpu").embed_texts(["a red cube"]).shape[1])
