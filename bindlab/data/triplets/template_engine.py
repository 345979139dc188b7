"""Word lists, the engine contract and the template engine for the finetuning triplets (SABER appendix B).

An *engine* turns an :class:`ExamplePlan` (construction type, bindings, distractors, context, register, opener,
length band, binding-distance range: everything the generator decides) into a :class:`WrittenExample` (the
positive caption plus the bindings it expresses). The generator in :mod:`bindlab.data.triplets` then builds the
query and both hard negatives and validates everything, whichever engine wrote the text.

:class:`TemplateEngine` writes with hand-made templates and filler phrases of known word counts, so that it can hit
a target length and binding distance exactly. All filler, context and opener words are kept disjoint from the
attribute and object pools (checked by the tests), so every attribute and object word appears exactly once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from bindlab.data.vocab import ATTRIBUTES, OBJECTS, PLURAL_ONLY, article

Pair = tuple[str, str]  # (attribute, object)

# ----------------------------------------------------------------------------------------------------------------
# Vocabulary: attribute families (with the object kinds they stay plausible for) and object kinds.
# ----------------------------------------------------------------------------------------------------------------

KINDS: tuple[str, ...] = ("animal", "food", "plant", "thing")
_ALL = frozenset(KINDS)

ANIMALS = frozenset(
    {
        "butterfly",
        "cat",
        "crab",
        "dinosaur",
        "dog",
        "dolphin",
        "dragon",
        "duck",
        "eagle",
        "elephant",
        "fish",
        "flamingo",
        "fox",
        "frog",
        "giraffe",
        "hippo",
        "horse",
        "koala",
        "lion",
        "lobster",
        "octopus",
        "ostrich",
        "owl",
        "panda",
        "parrot",
        "penguin",
        "pig",
        "rabbit",
        "seahorse",
        "snail",
        "squirrel",
        "turtle",
        "unicorn",
        "whale",
        "zebra",
    }
)
FOODS = frozenset(
    {
        "apple",
        "avocado",
        "bagel",
        "banana",
        "bread",
        "cake",
        "carrot",
        "cherry",
        "cookie",
        "cupcake",
        "donut",
        "egg",
        "lemon",
        "mango",
        "mushroom",
        "onion",
        "pear",
        "pineapple",
        "pizza",
        "pretzel",
        "pumpkin",
        "strawberry",
        "watermelon",
    }
)
PLANTS = frozenset({"cactus", "flower", "leaf", "rose", "sunflower", "tree", "tulip"})


def object_kind(obj: str) -> str:
    """``"animal"``, ``"food"``, ``"plant"`` or ``"thing"`` (everything else) for an object word."""
    if obj in ANIMALS:
        return "animal"
    if obj in FOODS:
        return "food"
    if obj in PLANTS:
        return "plant"
    return "thing"


@dataclass(frozen=True)
class AttributeFamily:
    """A semantic slot of attributes (``attr_bundle`` draws its two attributes per object from two families).

    Attributes:
        name: family name, e.g. ``"colour"``.
        rank: position in English adjective order (smaller comes first: "tiny red wooden kite").
        kinds: object kinds the family stays plausible for.
        words: the attribute words, one word each (hyphens allowed).
    """

    name: str
    rank: int
    kinds: frozenset[str]
    words: tuple[str, ...]


def _names(category: str, *, exclude: tuple[str, ...] = ()) -> tuple[str, ...]:
    return tuple(a.name for a in ATTRIBUTES if a.category == category and a.name not in exclude)


_THING = frozenset({"thing"})
ATTRIBUTE_FAMILIES: tuple[AttributeFamily, ...] = (
    AttributeFamily(
        "value",
        0,
        frozenset({"thing", "food"}),
        (
            "cheap",
            "expensive",
            "priceless",
            "valuable",
            "rare",
            "fancy",
            "ornate",
            "humble",
            "luxurious",
            "gaudy",
            "elegant",
            "tacky",
            "classy",
            "stylish",
            "trendy",
            "flashy",
        ),
    ),
    AttributeFamily(
        "mood",
        0,
        frozenset({"animal"}),
        (
            "sleepy",
            "hungry",
            "playful",
            "grumpy",
            "curious",
            "shy",
            "lazy",
            "friendly",
            "angry",
            "calm",
            "restless",
            "nervous",
            "cheerful",
            "fierce",
            "timid",
            "lonely",
            "proud",
            "clumsy",
            "wild",
            "tame",
        ),
    ),
    AttributeFamily(
        "size",
        1,
        _ALL,
        (
            "tiny",
            "small",
            "large",
            "huge",
            "giant",
            "massive",
            "enormous",
            "little",
            "oversized",
            "compact",
            "slender",
            "chunky",
            "stubby",
            "tall",
            "long",
            "wide",
            "narrow",
            "thin",
            "thick",
            "skinny",
            "petite",
            "colossal",
            "pocket-sized",
            "bulky",
        ),
    ),
    AttributeFamily(
        "age",
        2,
        _THING,
        (
            "ancient",
            "antique",
            "vintage",
            "modern",
            "retro",
            "brand-new",
            "old-fashioned",
            "futuristic",
            "medieval",
            "secondhand",
            "handmade",
        ),
    ),
    AttributeFamily(
        "shape",
        3,
        frozenset({"thing", "food", "plant"}),
        (
            "round",
            "oval",
            "curved",
            "lopsided",
            "pointed",
            "flat",
            "twisted",
            "angular",
            "spiral",
            "hexagonal",
            "triangular",
            "cylindrical",
            "bulging",
            "tapered",
        ),
    ),
    AttributeFamily(
        "wear",
        4,
        _THING,
        (
            "broken",
            "dented",
            "scratched",
            "chipped",
            "polished",
            "battered",
            "bent",
            "faded",
            "patched",
            "worn",
            "tarnished",
            "weathered",
            "stained",
            "scuffed",
            "frayed",
            "tattered",
            "pristine",
            "shabby",
            "creased",
            "rumpled",
            "warped",
            "mended",
            "rusty",
            "cracked",
        ),
    ),
    AttributeFamily(
        "surface",
        4,
        _ALL,
        (
            "wet",
            "damp",
            "dusty",
            "muddy",
            "clean",
            "dirty",
            "dry",
            "sticky",
            "greasy",
            "soggy",
            "frosty",
            "snowy",
            "soaked",
            "spotless",
            "grimy",
            "dripping",
        ),
    ),
    AttributeFamily(
        "freshness",
        4,
        frozenset({"food"}),
        (
            "fresh",
            "ripe",
            "rotten",
            "stale",
            "juicy",
            "crunchy",
            "burnt",
            "overripe",
            "mouldy",
            "crispy",
            "sliced",
            "peeled",
            "glazed",
            "frosted",
            "toasted",
            "sugary",
            "spicy",
            "salty",
            "sour",
            "bitter",
        ),
    ),
    AttributeFamily(
        "state",
        4,
        _THING,
        (
            "open",
            "closed",
            "empty",
            "full",
            "folded",
            "tilted",
            "upside-down",
            "half-empty",
            "unlocked",
            "wrapped",
            "tangled",
            "unplugged",
        ),
    ),
    AttributeFamily(
        "temperature",
        5,
        _ALL,
        ("hot", "cold", "warm", "chilly", "frozen", "lukewarm", "steaming", "toasty", "scorching"),
    ),
    AttributeFamily(
        "texture",
        6,
        _ALL,
        (
            *_names("texture", exclude=("rusty", "cracked")),
            "soft",
            "hard",
            "smooth",
            "rough",
            "bumpy",
            "fuzzy",
            "silky",
            "velvety",
            "glossy",
            "matte",
            "slippery",
            "wrinkled",
            "lumpy",
            "squishy",
            "prickly",
            "grainy",
            "coarse",
            "springy",
        ),
    ),
    AttributeFamily(
        "colour",
        7,
        _ALL,
        (
            *_names("colour"),
            "grey",
            "brown",
            "beige",
            "crimson",
            "scarlet",
            "turquoise",
            "teal",
            "navy",
            "maroon",
            "violet",
            "indigo",
            "amber",
            "ivory",
            "olive",
            "lilac",
            "magenta",
            "cyan",
            "charcoal",
            "cream",
            "bronze",
            "khaki",
            "lavender",
            "burgundy",
            "emerald",
            "mustard",
            "coral",
            "ochre",
            "jade",
            "auburn",
            "sapphire",
        ),
    ),
    AttributeFamily(
        "pattern",
        8,
        _ALL,
        (
            *_names("pattern"),
            "spotted",
            "dotted",
            "speckled",
            "mottled",
            "freckled",
            "streaked",
            "banded",
            "floral",
            "paisley",
            "tartan",
            "herringbone",
            "pinstriped",
            "marbled",
            "dappled",
        ),
    ),
    AttributeFamily(
        "effect",
        9,
        _ALL,
        (
            *_names("effect"),
            "sparkling",
            "shimmering",
            "gleaming",
            "luminous",
            "dazzling",
            "iridescent",
            "fluorescent",
            "shadowy",
            "smoky",
        ),
    ),
    AttributeFamily(
        "material",
        10,
        _THING,
        (
            *_names("material"),
            "plastic",
            "rubber",
            "glass",
            "woolen",
            "silken",
            "velvet",
            "brass",
            "iron",
            "steel",
            "tin",
            "bamboo",
            "wicker",
            "clay",
            "cardboard",
            "cotton",
            "denim",
            "linen",
            "porcelain",
            "plaster",
            "nylon",
            "suede",
            "canvas",
            "pewter",
            "cork",
            "granite",
            "oak",
            "pine",
            "maple",
            "walnut",
            "ebony",
            "concrete",
        ),
    ),
    AttributeFamily(
        "style",
        11,
        _ALL,
        (*_names("style"), "sketched", "painted", "embroidered", "carved", "sculpted", "inflatable", "decorative"),
    ),
)

FAMILY_OF: dict[str, AttributeFamily] = {w: f for f in ATTRIBUTE_FAMILIES for w in f.words}
ATTRIBUTE_POOL: tuple[str, ...] = tuple(w for f in ATTRIBUTE_FAMILIES for w in f.words)
# The engine counts words exactly and writes singular agreement ("the kite, which was red"), so the plural-only
# objects ("a pair of scissors ... were") are left out of its pool; the sentence templates handle them.
OBJECT_POOL: tuple[str, ...] = tuple(o for o in OBJECTS if o not in PLURAL_ONLY)

# Words with a job in the sentence structure: never used as filler (anaphoric references, the respective marker).
REFERENCE_PAIRS: tuple[tuple[str, str], ...] = (("former", "latter"), ("first", "second"))
RESERVED_WORDS = frozenset({"former", "latter", "first", "second", "respectively"})
AMBIGUOUS_PRONOUNS = frozenset({"it", "its", "they", "them", "their", "theirs", "itself", "themselves"})

# ----------------------------------------------------------------------------------------------------------------
# Diversity controls: contexts (place x time x weather), registers, openers.
# ----------------------------------------------------------------------------------------------------------------

PLACES: tuple[str, ...] = (
    "in the harbour",
    "at the market",
    "in the attic",
    "in the workshop",
    "in the classroom",
    "in the kitchen",
    "in the garage",
    "at the bakery",
    "in the library",
    "in the meadow",
    "in the orchard",
    "in the courtyard",
    "on the rooftop",
    "on the veranda",
    "on the porch",
    "in the cellar",
    "in the greenhouse",
    "in the barn",
    "in the studio",
    "in the gallery",
    "in the museum",
    "in the hallway",
    "at the playground",
    "on the pier",
    "on the beach",
    "at the campsite",
    "in the clearing",
    "at the station",
    "at the airport",
    "in the stadium",
    "at the fairground",
    "in the laboratory",
    "in the office",
    "in the lobby",
    "at the dock",
    "in the alley",
    "at the farm",
    "in the vineyard",
    "by the river",
    "by the lake",
    "near the waterfall",
    "in the canyon",
    "on the trail",
    "in the desert",
    "in the jungle",
    "on the ferry",
    "in the subway",
    "at the zoo",
    "at the circus",
    "in the theatre",
    "in the cathedral",
    "at the monastery",
    "in the bazaar",
    "at the fair",
    "in the nursery",
    "in the dormitory",
    "in the basement",
    "in the shed",
    "in the pantry",
    "on the balcony",
    "in the cafe",
    "at the diner",
    "in the parking area",
    "at the tram stop",
    "in the village",
    "in the suburbs",
    "at the crossroads",
    "on the island",
    "in the marsh",
    "on the glacier",
    "in the cave",
    "at the quarry",
    "at the mill",
    "at the post office",
    "in the waiting room",
    "in the ballroom",
    "at the embassy",
    "in the observatory",
    "at the racetrack",
    "in the playroom",
    "at the toy shop",
    "in the boathouse",
    "at the pharmacy",
    "in the gym",
    "at the bookshop",
    "in the chapel",
    "at the harbourside cafe",
    "in the school hall",
    "at the riverbank",
    "in the town hall",
    "at the petrol station",
    "in the hotel lobby",
    "at the bazaar entrance",
    "in the warehouse",
    "at the market stall",
    "in the bedroom",
    "in the bathroom",
    "in the living room",
    "at the garden centre",
    "in the treehouse",
    "at the ski lodge",
)
TIMES: tuple[str, ...] = (
    "at dawn",
    "at noon",
    "at dusk",
    "after midnight",
    "before sunrise",
    "in the evening",
    "late at night",
    "early in the morning",
    "on a Sunday",
    "after lunch",
    "at sunset",
    "on a weekday",
    "on a holiday",
)
WEATHERS: tuple[str, ...] = (
    "in the rain",
    "in the fog",
    "in falling snow",
    "during a storm",
    "in the drizzle",
    "in the wind",
    "in the heat",
    "after the rain",
    "in a downpour",
    "in the haze",
    "under heavy skies",
    "in the sunshine",
)

# (register, prefix). A prefix ending in ":" is followed by a capital, one ending in "," by a lower-case word.
REGISTERS: tuple[tuple[str, str], ...] = (
    ("news caption", "Photo:"),
    ("field notebook", "Field note:"),
    ("auction listing", "Lot description:"),
    ("maintenance log", "Log entry:"),
    ("museum label", "Exhibit note:"),
    ("diary entry", "Dear diary,"),
    ("police report", "Report:"),
    ("travel blog", ""),
    ("children's story", "Once upon a time,"),
    ("insurance claim", "Claim details:"),
    ("lost and found notice", "Found:"),
    ("real estate listing", "Listing:"),
    ("weather bulletin", "Bulletin:"),
    ("shopping list note", "Note to self:"),
    ("tour guide script", "On your left,"),
    ("witness statement", "Statement:"),
    ("product review", "Review:"),
    ("radio transcript", "Transcript:"),
    ("school essay", "In my view,"),
    ("ship log", "Ship log:"),
    ("inventory record", "Inventory:"),
    ("letter to a friend", "Guess what,"),
    ("film script", "Scene:"),
    ("poem line", ""),
    ("scientific observation", "Observation:"),
    ("classified advert", "For sale:"),
    ("social media post", "Update:"),
    ("cookbook aside", "Kitchen note:"),
    ("court record", "Court notes:"),
    ("obituary style", "Remembered:"),
    ("weekly newsletter", "This week,"),
    ("text message", ""),
)

# Sixteen opener styles; "{ctx}" is the context phrase and "{core}" the binding clause.
OPENERS: tuple[tuple[str, str], ...] = (
    ("place_first", "{ctx}, {core}"),
    ("subject_first", "{core} {ctx}"),
    ("just_then", "just then, {ctx}, {core}"),
    ("earlier", "earlier that day, {ctx}, {core}"),
    ("somewhere", "somewhere {ctx}, {core}"),
    ("according", "according to the notes, {ctx}, {core}"),
    ("as_expected", "as expected, {ctx}, {core}"),
    ("perception", "looking around {ctx}, we saw that {core}"),
    ("arrival", "when we arrived {ctx}, {core}"),
    ("surprise", "out of nowhere, {ctx}, {core}"),
    ("accounts", "by all accounts, {ctx}, {core}"),
    ("record", "for the record, {ctx}, {core}"),
    ("strangely", "strangely enough, {ctx}, {core}"),
    ("glance", "at a glance, {ctx}, {core}"),
    ("right_there", "right there {ctx}, {core}"),
    ("meanwhile", "meanwhile, {ctx}, {core}"),
)

# ----------------------------------------------------------------------------------------------------------------
# Filler phrases by role; every phrase's word count is its length key.
# ----------------------------------------------------------------------------------------------------------------

# Comma-enclosed asides inserted after a noun phrase (stretch the gap between two binding sites). None is a relative
# clause ("which ..."): a "which" after a noun is the relative sentence template, which a run may hold out.
ASIDES: tuple[str, ...] = (
    "again",
    "apparently",
    "oddly",
    "today",
    "reportedly",
    "evidently",
    "naturally",
    "meanwhile",
    "luckily",
    "as always",
    "as usual",
    "for once",
    "once more",
    "by chance",
    "as planned",
    "no doubt",
    "of course",
    "just as before",
    "to nobody's surprise",
    "for some reason",
    "as the guide said",
    "unattended all night",
    "much to everyone's delight",
    "as the guide explained to us",
    "left there since spring",
    "exactly as we remembered",
    "or so we were told",
    "according to the night guard",
    "half hidden from the path",
    "placed there by the caretaker",
    "as the caretaker had promised",
    "untouched by anyone for several days",
    "placed there earlier by the caretaker",
    "as the visitors were quick to notice",
    "left behind after the busy weekend rush",
    "untouched by anybody since the previous winter",
    "exactly where the caretaker had told us to look",
    "as our neighbour had mentioned during breakfast",
    "still waiting for somebody to come back",
)
# Clauses appended before the full stop (bring the caption to its target length).
TAILS: tuple[str, ...] = (
    "again",
    "today",
    "nearby",
    "too",
    "as expected",
    "once again",
    "for now",
    "as before",
    "all morning",
    "while gulls circled",
    "as evening fell",
    "before anyone noticed",
    "without much fuss",
    "as people passed",
    "as the crowd drifted past",
    "while a song played somewhere",
    "while music played in the background",
    "and nobody seemed to mind",
    "as somebody whistled in the distance",
    "and the whole scene felt peaceful",
    "while somebody hummed a tune upstairs",
    "though nobody could say who had left everything there",
    "and the whole place smelled of coffee and rain",
    "while the visitors took photos from every angle",
    "as the last of the daylight slipped behind the rooftops",
    "and a few children stopped to point and laugh",
    "well after the others had gone home for the night",
)
# Between a subject noun phrase and the next noun phrase's article: "<NP1> lay beside <a> <NP2>".
LINK_VERBS: tuple[str, ...] = (
    "lay beside",
    "sat next to",
    "rested against",
    "stood near",
    "leaned on",
    "hung above",
    "waited beside",
    "sat beside",
    "lay near",
    "stood behind",
    "rested under",
    "sat across from",
    "was propped against",
    "lay in front of",
    "stood just behind",
    "was placed next to",
    "was seen near",
    "sat close to",
)
# Verb phrases for conjoined plural subjects: "<NP1> and <NP2> sat side by side".
PLURAL_VPS: tuple[str, ...] = (
    "sat side by side",
    "stood together",
    "waited in a row",
    "shared the space",
    "were on display",
    "caught the eye",
    "were found together",
    "stood in the corner",
    "were left out",
    "lay together",
)
# Between an object and its predicative attribute ("the kite <looked> red").
PREDICATES: tuple[str, ...] = (
    "was",
    "looked",
    "seemed",
    "appeared",
    "stayed",
    "remained",
    "became",
    "turned",
    "felt",
    "was clearly",
    "looked quite",
    "seemed rather",
    "had turned",
    "had become",
    "was now",
    "looked almost",
    "appeared slightly",
    "was still",
    "had grown",
    "had slowly turned",
    "was by then",
    "seemed to be",
    "turned out to be",
    "had been described as",
)
PLURAL_PREDICATES: tuple[str, ...] = (
    "were",
    "looked",
    "seemed",
    "appeared",
    "had become",
    "turned out to be",
    "were described as",
    "were listed as",
    "were both noted as",
)
# Prepositions that attach distractor noun phrases at the end: ", close to a dusty lamp and a tiny clock".
DISTRACTOR_PREPS: tuple[str, ...] = (
    "close to",
    "not far from",
    "near",
    "beside",
    "across from",
    "next to",
    "along with",
    "just past",
    "opposite",
)


def _by_length(phrases: tuple[str, ...]) -> dict[int, list[tuple[str, ...]]]:
    out: dict[int, list[tuple[str, ...]]] = {}
    for p in phrases:
        words = tuple(p.split())
        out.setdefault(len(words), []).append(words)
    return out


_ASIDES = _by_length(ASIDES)
_TAILS = _by_length(TAILS)
_LINKS = _by_length(LINK_VERBS)
_PREDS = _by_length(PREDICATES)
_PL_PREDS = _by_length(PLURAL_PREDICATES)


def filler_vocabulary() -> set[str]:
    """Every lower-cased word the template engine can write besides attributes, objects and articles."""
    texts = [
        *PLACES,
        *TIMES,
        *WEATHERS,
        *(p for _, p in REGISTERS),
        *(t for _, t in OPENERS),
        *ASIDES,
        *TAILS,
        *LINK_VERBS,
        *PLURAL_VPS,
        *PREDICATES,
        *PLURAL_PREDICATES,
        *DISTRACTOR_PREPS,
        "and while whereas but between the both which that we",
    ]
    words: set[str] = set()
    for t in texts:
        for tok in t.replace("{ctx}", " ").replace("{core}", " ").split():
            core = tok.strip(",.;:").lower()
            if core:
                words.add(core)
    return words


# ----------------------------------------------------------------------------------------------------------------
# The engine contract.
# ----------------------------------------------------------------------------------------------------------------


PREDICATIVE_FORMS: dict[str, str] = {"conjoined": "predicative", "relative": "relative"}
"""The ``predicative`` construction's two forms and the sentence template each expresses: "the kite ... was red"
(predicative) and "the kite, which was red, ..." (relative). Holding a template out of training drops its form."""


@dataclass(frozen=True)
class ExamplePlan:
    """Everything the generator fixes before any text is written.

    Attributes:
        construction: one of the seven construction types.
        pairs: the queried (attribute, object) bindings, grouped by object in order of first mention; for
            ``attr_bundle`` two entries per object (its two attributes in adjective order).
        distractors: extra (attribute, object) pairs woven into the caption but not queried.
        place / time / weather: the context phrase parts (time and weather may be empty).
        register: writing register name (a key of :data:`REGISTERS`).
        opener: sentence-opener style name (a key of :data:`OPENERS`).
        length_band: target caption length in words (validation allows one below and four above).
        distance_range: target binding distance in words (inclusive), as measured by
            :func:`bindlab.data.triplets.binding_distance`.
        reverse_reference: ``deferred_bind_anaphoric`` only: assign the second-mentioned object's attribute first.
        references: ``deferred_bind_anaphoric`` only: the back-reference pair, e.g. ("former", "latter").
        forms: ``predicative`` only: the forms it may take (:data:`PREDICATIVE_FORMS`; fewer when a sentence template
            they express is held out of training).
    """

    construction: str
    pairs: tuple[Pair, ...]
    distractors: tuple[Pair, ...] = ()
    place: str = "in the garden"
    time: str = ""
    weather: str = ""
    register: str = "travel blog"
    opener: str = "place_first"
    length_band: tuple[int, int] = (16, 22)
    distance_range: tuple[int, int] = (0, 26)
    reverse_reference: bool = False
    references: tuple[str, str] = ("former", "latter")
    forms: tuple[str, ...] = ("conjoined", "relative")

    @property
    def context(self) -> str:
        """The full context phrase, e.g. ``"in the harbour at dawn in the rain"``."""
        return " ".join(p for p in (self.place, self.time, self.weather) if p)

    @property
    def objects(self) -> list[str]:
        """Queried objects in order of first mention."""
        return list(dict.fromkeys(o for _, o in self.pairs))


@dataclass(frozen=True)
class WrittenExample:
    """An engine's output: the positive caption and the bindings it says the caption expresses.

    Attributes:
        positive: the caption text.
        bindings: the (attribute, object) bindings the caption expresses; must equal the plan's pairs.
        distractors: the distractor pairs the caption contains.
        engine: the engine's name (provenance).
        notes: free-form engine details (e.g. the template form used), not validated.
    """

    positive: str
    bindings: tuple[Pair, ...]
    distractors: tuple[Pair, ...] = ()
    engine: str = "template"
    notes: dict[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------------------------------
# The template engine.
# ----------------------------------------------------------------------------------------------------------------


def _compose(k: int, table: dict[int, list[tuple[str, ...]]], rng: random.Random) -> list[list[str]]:
    """Phrases from ``table`` whose word counts sum to exactly ``k`` (no phrase twice where avoidable)."""
    out: list[list[str]] = []
    used: set[tuple[str, ...]] = set()
    max_len = max(table)
    while k > 0:
        # prefer few long phrases: a run of one-word asides reads badly
        top = min(k, max_len)
        if top == k and k in table and rng.random() < 0.7:
            n = k  # one phrase of exactly the missing length
        else:
            n = rng.choice([n for n in table if top - 2 <= n <= top] or [max(n for n in table if n <= top)])
        options = [p for p in table[n] if p not in used] or table[n]
        phrase = rng.choice(options)
        used.add(phrase)
        out.append(list(phrase))
        k -= n
    return out


def _aside(k: int, rng: random.Random) -> list[str]:
    """``k`` words of comma-separated asides, each phrase ending in a comma (placed after ``"<word>,"``)."""
    words: list[str] = []
    for phrase in _compose(k, _ASIDES, rng):
        phrase[-1] += ","
        words.extend(phrase)
    return words


def _insert_aside(words: list[str], k: int, rng: random.Random) -> list[str]:
    """Append ``, <k words of asides>,`` after ``words`` (nothing when k == 0)."""
    if k <= 0:
        return words
    words = list(words)
    words[-1] += ","
    return words + _aside(k, rng)


def _np(attrs: list[str], obj: str) -> list[str]:
    """Indefinite noun phrase ``["a", "red", "kite"]`` with the article chosen by pronunciation."""
    first = attrs[0] if attrs else obj
    return [article(first), *attrs, obj]


def _bare_np(obj: str, definite: bool) -> list[str]:
    return ["the", obj] if definite else [article(obj), obj]


def _pick(table: dict[int, list[tuple[str, ...]]], max_len: int, rng: random.Random, min_len: int = 1) -> list[str]:
    lengths = [n for n in table if min_len <= n <= max_len]
    if not lengths:
        lengths = [min(table)]
    return list(rng.choice(table[rng.choice(lengths)]))


class TemplateEngine:
    """Writes captions from templates and filler phrases; deterministic given the plan and the RNG.

    The binding distance is sampled inside ``plan.distance_range`` (clipped to what the chosen form can reach) and
    the length inside ``plan.length_band``; when a plan cannot be met (e.g. a long distance in a short band) the
    caption is written anyway and the validator rejects it, so the rejection is counted.
    """

    name = "template"

    def __init__(self, max_tries: int = 4) -> None:
        self.max_tries = max_tries

    def write(self, plan: ExamplePlan, rng: random.Random) -> WrittenExample:
        """Write the positive caption for ``plan``."""
        writer = _CORE_WRITERS.get(plan.construction)
        if writer is None:
            raise ValueError(f"unknown construction {plan.construction!r}; choose from {sorted(_CORE_WRITERS)}")
        target = rng.randint(*plan.length_band)
        limit = plan.length_band[1] + 4  # the validator's tolerance above the band
        best: tuple[int, list[str], str, list[str]] | None = None
        for _ in range(self.max_tries):  # redraw distance and form until the shortest frame fits the band
            core, form = writer(plan, rng)
            distractor_words = _distractor_phrase(plan.distractors, rng)
            shortest = len(core) + len(distractor_words) + len(plan.place.split())
            if best is None or shortest < best[0]:
                best = (shortest, core, form, distractor_words)
            if shortest <= limit:
                break
        _, core, form, distractor_words = best  # type: ignore[misc]
        text = _frame(core, distractor_words, plan, target, rng)
        return WrittenExample(text, plan.pairs, plan.distractors, self.name, {"form": form})


def _distance_target(plan: ExamplePlan, floor: int, rng: random.Random) -> int:
    lo, hi = plan.distance_range
    return rng.randint(max(lo, floor), max(hi, floor))


def _groups(plan: ExamplePlan) -> list[tuple[list[str], str]]:
    """Per object (in mention order): its attributes and the object."""
    by_obj: dict[str, list[str]] = {}
    for a, o in plan.pairs:
        by_obj.setdefault(o, []).append(a)
    return [(attrs, o) for o, attrs in by_obj.items()]


def _link(d: int, rng: random.Random) -> tuple[list[str], int]:
    """A linking verb phrase and aside length so that the gap before the next article is ``d - 1`` words."""
    verb = _pick(_LINKS, d - 1, rng)
    return verb, max(0, d - 1 - len(verb))


def _write_adjacent(plan: ExamplePlan, rng: random.Random) -> tuple[list[str], str]:
    """pair_swap, triple_bind_*, attr_bundle: attributes directly precede their objects."""
    groups = _groups(plan)
    nps = [_np(attrs, o) for attrs, o in groups]
    if len(nps) == 2:
        # gap = words between the first object and the second phrase's first attribute (the article included)
        form = rng.choice(("and", "link"))
        d = _distance_target(plan, 2, rng)
        if form == "and":
            words = _insert_aside(nps[0], d - 2, rng) + ["and", *nps[1]] + rng.choice(PLURAL_VPS).split()
        else:
            if d < 3:
                form, words = "and", nps[0] + ["and", *nps[1]] + rng.choice(PLURAL_VPS).split()
            else:
                verb, k = _link(d, rng)
                words = _insert_aside(nps[0], k, rng) + verb + nps[1]
        return words, form
    # three objects: one gap gets the target distance, the other up to three words more
    d = _distance_target(plan, 1, rng)
    targets = [d, d + rng.randint(0, 3)]
    rng.shuffle(targets)
    form = rng.choice(("list", "link", "between"))
    if form == "list" or targets[0] < 3:
        form = "list"
        first = _insert_aside(nps[0], targets[0] - 1, rng)
        first[-1] += "," if not first[-1].endswith(",") else ""
        second = _insert_aside(nps[1], max(0, targets[1] - 2), rng)
        return first + second + ["and", *nps[2]] + rng.choice(PLURAL_VPS).split(), form
    if form == "between":
        verbs = [v for v in ("lay", "sat", "stood", "hung", "waited", "was wedged") if len(v.split()) + 2 <= targets[0]]
        verb = rng.choice(verbs).split() + ["between"]
        k = max(0, targets[0] - len(verb) - 1)
        first = _insert_aside(nps[0], k, rng) + verb
    else:
        verb, k = _link(targets[0], rng)
        first = _insert_aside(nps[0], k, rng) + verb
    second = _insert_aside(nps[1], max(0, targets[1] - 2), rng)
    return first + second + ["and", *nps[2]], form


def _predicate(d: int, rng: random.Random, plural: bool = False) -> list[str]:
    """Exactly ``d`` words between a subject and its predicative attribute: asides then a predicate verb."""
    table = _PL_PREDS if plural else _PREDS
    verb = _pick(table, d, rng)
    k = d - len(verb)
    return (_aside(k, rng) if k > 0 else []) + verb


def _write_predicative(plan: ExamplePlan, rng: random.Random) -> tuple[list[str], str]:
    """Attributes detached from their nouns by a copula, change-of-state verb or relative clause."""
    (a1, o1), (a2, o2) = plan.pairs
    d = _distance_target(plan, 1, rng)
    dists = [d, d + rng.randint(0, 3)]
    rng.shuffle(dists)
    form = rng.choice(plan.forms)
    if form == "relative":
        # "the kite, which was red, sat near the bench, which looked wooden"
        d1, d2 = (max(2, x) for x in dists)

        def relative(o: str, a: str, dist: int) -> list[str]:
            pred = _predicate(dist - 1, rng)
            return ["the", o + ",", "which," if pred[0].endswith(",") else "which", *pred, a]

        c1 = relative(o1, a1, d1)
        c1[-1] += ","
        c2 = relative(o2, a2, d2)
        return c1 + _pick(_LINKS, 3, rng) + c2, form

    def clause(o: str, a: str, dist: int) -> list[str]:
        pred = _predicate(dist, rng)
        has_aside = pred[0].endswith(",") or any(w.endswith(",") for w in pred)
        return ["the", o + ("," if has_aside else "")] + pred + [a]

    joiner = rng.choice((["and"], ["while"], ["whereas"], ["but"]))
    c1 = clause(o1, a1, dists[0])
    c1[-1] += ","
    return c1 + joiner + clause(o2, a2, dists[1]), form


def _intro(objects: list[str], rng: random.Random) -> tuple[list[str], str]:
    """Introduce both nouns before any attribute: ``"a kite and a bench sat side by side"``."""
    o1, o2 = objects
    form = rng.choice(("and", "link", "both"))
    definite = form == "both" or rng.random() < 0.5
    if form == "link":
        return _intro_linked(objects, rng), form
    lead = ["both", "the"] if form == "both" else _bare_np(o1, definite)[:1]
    return lead + [o1, "and", *_bare_np(o2, definite)], form


def _intro_linked(objects: list[str], rng: random.Random) -> list[str]:
    """``"the kite lay beside the bench"``: both nouns introduced, ending on the second one."""
    definite = rng.random() < 0.5
    return _bare_np(objects[0], definite) + _pick(_LINKS, 4, rng) + _bare_np(objects[1], definite)


def _write_respective(plan: ExamplePlan, rng: random.Random) -> tuple[list[str], str]:
    """``"the kite and the bench were red and wooden, respectively"``: binding carried by word order alone."""
    (a1, _), (a2, _) = plan.pairs
    intro, form = _intro(plan.objects, rng)
    if form == "link":  # a linking verb leaves no room for a plural copula; use the conjoined intro
        intro = ["the", plan.objects[0], "and", "the", plan.objects[1]]
        form = "and"
    d = _distance_target(plan, 1, rng)
    verb = _pick(_PL_PREDS, d, rng)
    k = d - len(verb)
    words = _insert_aside(intro, k, rng) + verb + [a1, "and", a2 + ",", "respectively"]
    return words, form


def _write_anaphoric(plan: ExamplePlan, rng: random.Random) -> tuple[list[str], str]:
    """``"a kite lay beside a bench; the former was red, and the latter wooden"``; resolved by back-reference."""
    (a1, _), (a2, _) = plan.pairs
    intro, form = _intro(plan.objects, rng)
    vp = [] if form == "link" else rng.choice(PLURAL_VPS).split()
    if vp and len(vp) + 3 > plan.distance_range[1]:  # too far for the range: end the intro on the second noun
        intro, form = _intro_linked(plan.objects, rng), "link"
        vp = []
    intro += vp
    r1, r2 = plan.references
    # words between the last noun and the first attribute: verb phrase, aside, "the <ref>", predicate
    d = _distance_target(plan, len(vp) + 3, rng)
    pred1 = _pick(_PREDS, min(2, d - len(vp) - 2), rng)
    k = d - len(vp) - 2 - len(pred1)
    first, second = ((r2, a2), (r1, a1)) if plan.reverse_reference else ((r1, a1), (r2, a2))
    words = _insert_aside(intro, k, rng)
    words[-1] = words[-1].rstrip(",") + ";"
    pred2 = _pick(_PREDS, 2, rng)
    joiner = rng.choice((["and"], ["while"], ["whereas"], ["but"]))
    words += ["the", first[0], *pred1, first[1] + ","] + joiner + ["the", second[0], *pred2, second[1]]
    return words, form + ("/reversed" if plan.reverse_reference else "")


_CORE_WRITERS = {
    "pair_swap": _write_adjacent,
    "triple_bind_cycle": _write_adjacent,
    "triple_bind_swap": _write_adjacent,
    "attr_bundle": _write_adjacent,
    "predicative": _write_predicative,
    "deferred_bind_respective": _write_respective,
    "deferred_bind_anaphoric": _write_anaphoric,
}


def _distractor_phrase(distractors: tuple[Pair, ...], rng: random.Random) -> list[str]:
    """``["close", "to", "a", "dusty", "lamp", "and", "a", "tiny", "clock"]`` (empty without distractors)."""
    if not distractors:
        return []
    nps = [_np([a], o) for a, o in distractors]
    words = rng.choice(DISTRACTOR_PREPS).split()
    for i, np_words in enumerate(nps):
        if i == len(nps) - 1 and i > 0:
            words.append("and")
        elif i > 0:
            words[-1] += ","
        words.extend(np_words)
    return words


def _frame(core: list[str], distractor_words: list[str], plan: ExamplePlan, target: int, rng: random.Random) -> str:
    """Put register prefix, opener and context around the core clause and pad with tail clauses to ``target``."""
    prefix = dict(REGISTERS).get(plan.register, "").split()
    template = dict(OPENERS).get(plan.opener, "{ctx}, {core}")
    ctx_parts = [plan.place, plan.time, plan.weather]

    def assemble(prefix: list[str], template: str, ctx_parts: list[str]) -> list[str]:
        ctx = " ".join(p for p in ctx_parts if p).split()
        words: list[str] = []
        for tok in template.split():
            if tok.startswith("{ctx}"):
                words += ctx[:-1] + [ctx[-1] + tok[len("{ctx}") :]]
            elif tok == "{core}":
                words += core
                if core[-1] == "respectively" and not template.endswith("{core}"):
                    words[-1] += ","
            else:
                words.append(tok)
        return prefix + words

    # shorten the frame (weather, time, prefix, opener) until the fixed part fits the target
    options = [
        (prefix, template, ctx_parts),
        (prefix, template, ctx_parts[:2] + [""]),
        (prefix, template, ctx_parts[:1] + ["", ""]),
        ([], template, ctx_parts[:1] + ["", ""]),
        ([], "{ctx}, {core}", ctx_parts[:1] + ["", ""]),
    ]
    extra = len(distractor_words)
    for pre, tpl, parts in options:
        words = assemble(pre, tpl, parts)
        if len(words) + extra <= target:
            break
    if distractor_words:
        words[-1] = words[-1].rstrip(",") + ","
        words += distractor_words
    pad = target - len(words)
    if pad > 0:
        words[-1] = words[-1].rstrip(",") + ","
        for phrase in _compose(pad, _TAILS, rng):
            phrase[-1] += ","
            words += phrase
    words[-1] = words[-1].rstrip(",;") + "."
    # capitalise the first word and any word after a colon
    for i, w in enumerate(words):
        if i == 0 or words[i - 1].endswith(":"):
            words[i] = w[0].upper() + w[1:]
    return " ".join(words)


__all__ = [
    "ANIMALS",
    "ATTRIBUTE_FAMILIES",
    "ATTRIBUTE_POOL",
    "AttributeFamily",
    "AMBIGUOUS_PRONOUNS",
    "ExamplePlan",
    "FAMILY_OF",
    "FOODS",
    "KINDS",
    "OBJECT_POOL",
    "OPENERS",
    "PLACES",
    "PLANTS",
    "REFERENCE_PAIRS",
    "REGISTERS",
    "RESERVED_WORDS",
    "TIMES",
    "TemplateEngine",
    "WEATHERS",
    "WrittenExample",
    "filler_vocabulary",
    "object_kind",
]
