"""SABER-style vocabulary: everyday objects, visual attributes, the colour palette and a/an choice.

Follows appendix A.1 of the SABER paper ("Stuck on Shuffle: On Attribute–Object Binding in Vision–Language
Models"; full entry in the README's References): about 230 objects and 50 attributes in six semantic categories;
every attribute has a *realisation type* that decides how its generation form is instantiated once per question:

- ``standalone``: fixed appearance, no slot (``camouflage``); some carry a fixed generation form
  (``soap-bubble`` -> ``iridescent soap-bubble``).
- ``single_color``: one colour slot (``glowing`` -> ``blue glowing``).
- ``two_color``: two distinct colour slots (``striped`` -> ``white and orange striped``).
- ``fixed_variant``: one of a closed set of variants (``wooden`` -> ``dark-brown wooden``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

PALETTE: tuple[str, ...] = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "white", "black")

CATEGORIES: tuple[str, ...] = ("colour", "material", "pattern", "texture", "effect", "style")
REALISATIONS: tuple[str, ...] = ("standalone", "single_color", "two_color", "fixed_variant")


@dataclass(frozen=True)
class Attribute:
    """One visual attribute.

    Attributes:
        name: the text form, one word (hyphens allowed), e.g. ``"striped"``.
        category: one of :data:`CATEGORIES`.
        realisation: one of :data:`REALISATIONS`.
        template: generation-form template; ``{c1}``/``{c2}`` are colour slots, ``{v}`` a variant slot.
        variants: the closed variant set for ``fixed_variant`` attributes.
    """

    name: str
    category: str
    realisation: str = "standalone"
    template: str = ""
    variants: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"attribute {self.name!r}: category {self.category!r} not in {CATEGORIES}")
        if self.realisation not in REALISATIONS:
            raise ValueError(f"attribute {self.name!r}: realisation {self.realisation!r} not in {REALISATIONS}")
        if self.realisation == "fixed_variant" and len(self.variants) < 2:
            raise ValueError(f"attribute {self.name!r}: fixed_variant needs at least two variants")

    def instantiate(self, rng: random.Random) -> str:
        """Sample this attribute's generation form, e.g. ``"white and orange striped"``."""
        if self.realisation == "single_color":
            return self.template.format(c1=rng.choice(PALETTE))
        if self.realisation == "two_color":
            c1, c2 = rng.sample(PALETTE, 2)  # two distinct colours
            return self.template.format(c1=c1, c2=c2)
        if self.realisation == "fixed_variant":
            return self.template.format(v=rng.choice(self.variants))
        return self.template or self.name


def _std(name: str, category: str, template: str = "") -> Attribute:
    return Attribute(name, category, "standalone", template)


def _one(name: str, category: str) -> Attribute:
    return Attribute(name, category, "single_color", "{c1} " + name)


def _two(name: str, category: str) -> Attribute:
    return Attribute(name, category, "two_color", "{c1} and {c2} " + name)


def _var(name: str, category: str, *variants: str) -> Attribute:
    return Attribute(name, category, "fixed_variant", "{v} " + name, tuple(variants))


# 50 attributes: 27 standalone, 4 single-colour, 6 two-colour, 13 fixed-variant (the paper's split).
ATTRIBUTES: tuple[Attribute, ...] = (
    # colour (12)
    *(_std(c, "colour") for c in PALETTE),
    _std("rainbow", "colour", "rainbow-coloured"),
    _var("golden", "colour", "polished", "brushed"),
    _var("silver", "colour", "polished", "brushed"),
    # material (11)
    _var("wooden", "material", "light-brown", "dark-brown"),
    _var("marble", "material", "white", "black", "green"),
    _var("metallic", "material", "brushed", "polished"),
    _var("ceramic", "material", "glazed", "matte"),
    _var("leather", "material", "brown", "black", "tan"),
    _var("stone", "material", "grey", "sandstone"),
    _var("woven", "material", "wicker", "straw"),
    _var("knitted", "material", "chunky", "fine"),
    _var("paper", "material", "crumpled", "folded"),
    _var("crystal", "material", "clear", "amethyst"),
    _var("copper", "material", "shiny", "tarnished"),
    # pattern (9)
    _two("striped", "pattern"),
    _two("polka-dot", "pattern"),
    _two("checkered", "pattern"),
    _two("zigzag", "pattern"),
    _two("plaid", "pattern"),
    _two("swirled", "pattern"),
    _std("camouflage", "pattern", "green and brown camouflage"),
    _std("tie-dye", "pattern", "multicoloured tie-dye"),
    _std("leopard-print", "pattern"),
    # texture (8)
    _std("sandy", "texture"),
    _std("furry", "texture"),
    _std("mossy", "texture"),
    _std("rusty", "texture"),
    _std("icy", "texture", "frosted icy"),
    _std("cracked", "texture"),
    _std("spiky", "texture"),
    _std("fluffy", "texture"),
    # effect (6)
    _one("glowing", "effect"),
    _one("neon", "effect"),
    _one("glittery", "effect"),
    _std("transparent", "effect", "see-through transparent"),
    _std("soap-bubble", "effect", "iridescent soap-bubble"),
    _std("holographic", "effect"),
    # style (4)
    _one("outlined", "style"),
    _std("pixelated", "style"),
    _std("origami", "style", "folded-paper origami"),
    _std("cartoon", "style", "flat cartoon"),
)

# 232 everyday objects, one word each (hyphens allowed) so that a binding is one attribute word + one object word.
OBJECTS: tuple[str, ...] = (
    "accordion",
    "airplane",
    "anchor",
    "apple",
    "armchair",
    "avocado",
    "axe",
    "backpack",
    "bagel",
    "balloon",
    "banana",
    "banjo",
    "barrel",
    "basket",
    "bathtub",
    "bell",
    "bench",
    "bicycle",
    "binoculars",
    "birdhouse",
    "blender",
    "boat",
    "book",
    "boot",
    "bottle",
    "bowl",
    "box",
    "bracelet",
    "bread",
    "briefcase",
    "broom",
    "bucket",
    "bus",
    "butterfly",
    "cactus",
    "cake",
    "calculator",
    "camera",
    "candle",
    "cannon",
    "canoe",
    "cap",
    "car",
    "carrot",
    "castle",
    "cat",
    "chair",
    "cherry",
    "chessboard",
    "clock",
    "cloud",
    "coat",
    "compass",
    "cone",
    "cookie",
    "crab",
    "crown",
    "cube",
    "cup",
    "cupcake",
    "cylinder",
    "dice",
    "dinosaur",
    "dog",
    "dolphin",
    "donut",
    "door",
    "dragon",
    "drum",
    "duck",
    "dumbbell",
    "eagle",
    "easel",
    "egg",
    "elephant",
    "envelope",
    "fan",
    "feather",
    "fence",
    "fish",
    "flag",
    "flamingo",
    "flashlight",
    "flower",
    "flute",
    "football",
    "fork",
    "fox",
    "frog",
    "giraffe",
    "glove",
    "goblet",
    "guitar",
    "hammer",
    "hammock",
    "handbag",
    "harp",
    "hat",
    "headphones",
    "heart",
    "helicopter",
    "helmet",
    "hexagon",
    "hippo",
    "horse",
    "hourglass",
    "house",
    "igloo",
    "jar",
    "kettle",
    "key",
    "kite",
    "koala",
    "ladder",
    "lamp",
    "lantern",
    "laptop",
    "leaf",
    "lemon",
    "lighthouse",
    "lion",
    "lobster",
    "lock",
    "mailbox",
    "mango",
    "map",
    "mask",
    "microphone",
    "microscope",
    "mirror",
    "mitten",
    "motorcycle",
    "mug",
    "mushroom",
    "necklace",
    "notebook",
    "octopus",
    "onion",
    "oven",
    "ostrich",
    "owl",
    "paintbrush",
    "pan",
    "panda",
    "parrot",
    "pear",
    "pen",
    "pencil",
    "penguin",
    "piano",
    "pig",
    "pillow",
    "pineapple",
    "pizza",
    "plate",
    "pretzel",
    "pumpkin",
    "pyramid",
    "rabbit",
    "radio",
    "ring",
    "robot",
    "rocket",
    "rose",
    "ruler",
    "sailboat",
    "sandal",
    "saxophone",
    "scarf",
    "scissors",
    "scooter",
    "seahorse",
    "shell",
    "shield",
    "shoe",
    "shovel",
    "skateboard",
    "sled",
    "snail",
    "snowboard",
    "snowman",
    "sock",
    "sofa",
    "sphere",
    "spoon",
    "squirrel",
    "star",
    "strawberry",
    "submarine",
    "suitcase",
    "sunflower",
    "surfboard",
    "sword",
    "table",
    "teapot",
    "teddy-bear",
    "telephone",
    "telescope",
    "tent",
    "toaster",
    "toothbrush",
    "torus",
    "tractor",
    "train",
    "tree",
    "triangle",
    "trophy",
    "truck",
    "trumpet",
    "tulip",
    "turtle",
    "typewriter",
    "ukulele",
    "umbrella",
    "unicorn",
    "unicycle",
    "urn",
    "vase",
    "violin",
    "volcano",
    "wallet",
    "watch",
    "watermelon",
    "whale",
    "wheel",
    "windmill",
    "xylophone",
    "yacht",
    "yo-yo",
    "zebra",
    "kayak",
    "wrench",
)

ATTRIBUTE_BY_NAME: dict[str, Attribute] = {a.name: a for a in ATTRIBUTES}

# Objects English names only in the plural ("scissors are", never "a scissors"): one of them is "a pair of scissors"
# (:func:`with_article`) and takes "are" (:func:`copula`). "dice" is used as a singular and is not among them.
PLURAL_ONLY: frozenset[str] = frozenset({"binoculars", "headphones", "scissors"})

# Words whose first letter misleads a spelling rule about the sound (checked by pronunciation, not spelling).
_VOWEL_SOUND_CONSONANT_LETTER = ("hour", "honest", "honou", "honor", "heir", "x-")  # "an x-ray": letter name
_CONSONANT_SOUND_VOWEL_LETTER = ("uni", "use", "usu", "uten", "ukulele", "uro", "euro", "eu", "one", "once", "ewe")


def article(word: str) -> str:
    """Return ``"a"`` or ``"an"`` for the word that follows, chosen by pronunciation.

    >>> [article(w) for w in ("umbrella", "unicorn", "hourglass", "orange", "ukulele", "one-eyed")]
    ['an', 'a', 'an', 'an', 'a', 'a']
    """
    if not word:
        raise ValueError("article() needs a non-empty word")
    w = word.strip()
    low = w.lower()
    if low.startswith(_VOWEL_SOUND_CONSONANT_LETTER):
        return "an"
    if low.startswith(_CONSONANT_SOUND_VOWEL_LETTER):
        return "a"
    return "an" if low[0] in "aeiou" else "a"


def with_article(phrase: str) -> str:
    """``"striped cube"`` -> ``"a striped cube"``; ``"orange cube"`` -> ``"an orange cube"``.

    A phrase ending in a plural-only noun (:data:`PLURAL_ONLY`) counts by the pair: ``"red scissors"`` ->
    ``"a pair of red scissors"``.
    """
    if phrase.split()[-1].lower() in PLURAL_ONLY:
        return f"a pair of {phrase}"
    return f"{article(phrase.split()[0])} {phrase}"


def copula(noun: str) -> str:
    """``"is"``, or ``"are"`` for a plural-only noun (``"the scissors are red"``)."""
    return "are" if noun.lower() in PLURAL_ONLY else "is"


def conjoin(phrases: list[str]) -> str:
    """Join noun phrases as SABER does: ``"a red cube and a blue sphere"``; three or more with commas."""
    if not phrases:
        raise ValueError("conjoin() needs at least one phrase")
    if len(phrases) == 1:
        return phrases[0]
    if len(phrases) == 2:
        return f"{phrases[0]} and {phrases[1]}"
    return ", ".join(phrases[:-1]) + f", and {phrases[-1]}"


def caption(pairs: list[tuple[str, str]]) -> str:
    """Templated caption of (attribute form, object) pairs, first letter capitalised, full stop at the end.

    Example: ``[("sandy", "snowboard"), ("pink", "cherry")]`` -> ``"A sandy snowboard and a pink cherry."``
    """
    text = conjoin([with_article(f"{a} {o}") for a, o in pairs])
    return text[0].upper() + text[1:] + "."


# ---------------------------------------------------------------------------------------------- content words
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# Function words carry no binding content; dropping them keeps "a"/"an" repairs from breaking exact ties.
STOPWORDS = frozenset({"a", "an", "the", "and", "of", "with", "is", "are", "on", "in"})


def tokens(text: str) -> list[str]:
    """Lower-cased content words of ``text`` (hyphenated words stay whole; function words dropped).

    The words the ``bow`` encoder counts and the dataset adapters compare captions by.
    """
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]
