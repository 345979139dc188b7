"""Sentence templates: one set of (attribute, object) bindings written in several surface forms.

A template family turns bindings into a caption; the bindings, their order and the candidate roles stay the same,
only the words around them change:

- ``attributive`` (SABER's own form): "A red cube and a blue sphere."
- ``predicative``: "The cube is red and the sphere is blue."
- ``relative``: "A cube that is red and a sphere that is blue."
- ``with``: "A cube with a red colour and a sphere with a striped pattern."

The ``with`` form needs a noun for the attribute's type. Only types with a natural one are allowed
(:data:`WITH_NOUNS`: colour -> "colour", material -> "finish", pattern -> "pattern", texture -> "texture"); every
other type (SABER's ``effect`` and ``style``; the triplet families mood, size, age, shape, wear, surface, freshness,
state, temperature, value, effect and style) is *refused*: generators restrict their vocabulary to allowed types for
this template, and :func:`render` raises for a refused one. Nothing falls back to another template, so every text of
a question is in one template.

Agreement: a plural-only object (:data:`bindlab.data.vocab.PLURAL_ONLY`) counts by the pair and takes "are" ("a pair
of red scissors", "the scissors are red", "a pair of scissors that are red"); a noun attribute
(:data:`NOUN_ATTRIBUTES`) is said after "is" with a noun of its kind ("the jar is in a folded-paper origami style").

:func:`caption_problems` is the validator every template's output passes: grammar (:func:`grammar_problems`: a/an
and is/are agreement, no noun attribute bare after "is", capital first letter, one final full stop), every binding
word exactly once, and the exact template structure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from bindlab.data.vocab import article, conjoin, copula, with_article

TEMPLATES: tuple[str, ...] = ("attributive", "predicative", "relative", "with")
DEFAULT_TEMPLATE = "attributive"

# Attribute type (SABER category or triplet family) -> the noun of its "with" form.
WITH_NOUNS: dict[str, str] = {"colour": "colour", "material": "finish", "pattern": "pattern", "texture": "texture"}

# Attributes that are nouns, not adjectives ("polka-dot", "origami", "neon"): after "is" they read wrongly ("the jar
# is origami"), so the predicative and relative forms say them with a noun of their kind: "the jar is in a
# folded-paper origami style", "the kite is in a blue neon glow". Keyed by the attribute's head word (the last word
# of its text form). Noun materials ("the jar is marble", "the ring is copper") are ordinary English and stay as they are.
NOUN_ATTRIBUTES: dict[str, str] = {
    **dict.fromkeys(
        ("polka-dot", "zigzag", "camouflage", "tie-dye", "leopard-print", "paisley", "tartan", "herringbone"), "pattern"
    ),
    **dict.fromkeys(("origami", "cartoon"), "style"),
    "soap-bubble": "finish",
    "neon": "glow",
}

Pair = tuple[str, str]  # (attribute text, object)


def check_template(name: str) -> str:
    """Return ``name`` if it is a known template; otherwise a ValueError naming the choices."""
    if name not in TEMPLATES:
        raise ValueError(f"unknown template {name!r}; choose from {', '.join(TEMPLATES)}")
    return name


def parse_templates(spec: str | Sequence[str]) -> tuple[str, ...]:
    """``"attributive,predicative"`` -> ``("attributive", "predicative")`` (checked, duplicates dropped)."""
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else [str(s).strip() for s in spec]
    names = [n for n in names if n]
    return tuple(dict.fromkeys(check_template(n) for n in names))


def allows(template: str, category: str | None) -> bool:
    """Whether ``template`` can express an attribute of type ``category`` (only ``with`` refuses some types)."""
    return template != "with" or category in WITH_NOUNS


def complement(attr: str) -> str:
    """An attribute text as it follows "is": ``"red"``, or for a noun attribute (:data:`NOUN_ATTRIBUTES`) a phrase
    with a noun of its kind: ``"black and white polka-dot"`` -> ``"in a black and white polka-dot pattern"``."""
    noun = NOUN_ATTRIBUTES.get(attr.split()[-1].lower())
    return f"in {article(attr.split()[0])} {attr} {noun}" if noun else attr


def group_phrase(template: str, attrs: Sequence[str], obj: str, categories: Sequence[str | None] = ()) -> str:
    """One object with its attributes, lower case: ``"a red wooden kite"``, ``"the kite is red and wooden"``, ...

    Args:
        template: one of :data:`TEMPLATES`.
        attrs: the object's attribute texts (one or more).
        obj: the object word.
        categories: the attributes' types, needed by ``with`` (same length as ``attrs``).

    Raises:
        ValueError: unknown template, no attributes, or a type the ``with`` form refuses.
    """
    check_template(template)
    if not attrs:
        raise ValueError(f"object {obj!r} needs at least one attribute")
    if template == "attributive":
        return with_article(f"{' '.join(attrs)} {obj}")
    if template == "predicative":
        return f"the {obj} {copula(obj)} {conjoin([complement(a) for a in attrs])}"
    if template == "relative":
        return f"{with_article(obj)} that {copula(obj)} {conjoin([complement(a) for a in attrs])}"
    cats = list(categories) or [None] * len(attrs)
    if len(cats) != len(attrs):
        raise ValueError("the 'with' template needs one attribute type per attribute")
    parts = []
    for a, c in zip(attrs, cats, strict=True):
        if c not in WITH_NOUNS:
            raise ValueError(
                f"the 'with' template cannot express the {c or 'untyped'} attribute {a!r}; it allows "
                f"only {', '.join(WITH_NOUNS)} attributes"
            )
        parts.append(f"{article(a.split()[0])} {a} {WITH_NOUNS[c]}")
    return f"{with_article(obj)} with {conjoin(parts)}"


def join_groups(phrases: list[str], bundled: bool) -> str:
    """Conjoin group phrases; with ``bundled`` (some object has several attributes) two groups get a comma too
    ("the kite is red and wooden, and the bench is blue and tiny"), so the groups stay apart."""
    if bundled and len(phrases) == 2:
        return f"{phrases[0]}, and {phrases[1]}"
    return conjoin(phrases)


def render(template: str, pairs: Sequence[Pair], categories: Sequence[str | None] = (), sentence: bool = True) -> str:
    """The caption of (attribute text, object) pairs in ``template``, one phrase per pair.

    With ``sentence`` the first letter is capitalised and a full stop ends it (SABER captions); the attributive
    sentence is exactly :func:`bindlab.data.vocab.caption`.
    """
    cats = list(categories) or [None] * len(pairs)
    text = conjoin([group_phrase(template, [a], o, [c]) for (a, o), c in zip(pairs, cats, strict=True)])
    return text[0].upper() + text[1:] + "." if sentence else text


# --- validation --------------------------------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return [w.strip(",.;:").lower() for w in text.split() if w.strip(",.;:")]


_CLAUSE_WORDS = frozenset({"and", "that", "which", "but", "while", "whereas", "respectively"})


def grammar_problems(text: str) -> list[str]:
    """Agreement errors in a caption, found from its words alone (not by comparing with :func:`render`): ``a``/``an``
    against the next word's sound; an indefinite plural-only noun without "pair of" ("a red scissors"); ``is``/``are``
    against the noun before it ("the scissors is", "the cube are"); a noun attribute right after ``is``/``are``
    without its noun ("the jar is folded-paper origami")."""
    from bindlab.data.vocab import PLURAL_ONLY

    problems: list[str] = []
    words = _words(text)
    for i, w in enumerate(words[:-1]):
        if w in ("a", "an") and w != article(words[i + 1]):
            problems.append(f"article {w!r} before {words[i + 1]!r}")
    for i, w in enumerate(words):
        if w in PLURAL_ONLY:
            j = i - 1
            while j >= 0 and words[j] not in ("a", "an", "the", "and", "that", "with", "of"):
                j -= 1
            if j >= 0 and words[j] in ("a", "an"):
                problems.append(f"{w!r} without 'a pair of'")
        if w in ("is", "are") and i > 0:
            noun = words[i - 2] if words[i - 1] == "that" and i > 1 else words[i - 1]
            want = "are" if noun in PLURAL_ONLY else "is"
            if w != want:
                problems.append(f"{noun!r} {w}: expected {want!r}")
    raw = text.split()
    for i, tok in enumerate(raw):  # a noun attribute must be followed by the noun it qualifies
        w = tok.strip(",.;:").lower()
        ends = tok != tok.rstrip(",.;:") or i == len(raw) - 1 or raw[i + 1].lower() in _CLAUSE_WORDS
        if w in NOUN_ATTRIBUTES and ends:
            problems.append(f"noun attribute {w!r} without a noun after it (say 'in a ... {NOUN_ATTRIBUTES[w]}')")
    return problems


def caption_problems(
    template: str, text: str, pairs: Sequence[Pair], categories: Sequence[str | None] = (), sentence: bool = True
) -> list[str]:
    """Everything wrong with one templated caption (``[]`` = valid).

    Checks: first letter capitalised and exactly one full stop, at the end (``sentence`` captions only); every
    ``a``/``an`` agrees with the next word's sound; every attribute and object word of ``pairs`` occurs exactly
    once; and the text is the template's form of ``pairs`` (so each attribute sits in its object's phrase).
    """
    problems: list[str] = []
    if sentence:
        if not text[:1].isupper():
            problems.append("not capitalised")
        if not text.endswith(".") or text.count(".") != 1:
            problems.append("no single final full stop")
    words = _words(text)
    problems += grammar_problems(text)
    counts = Counter(words)
    for a, o in pairs:
        for w in (*a.lower().split(), o.lower()):
            if counts[w] != 1:
                problems.append(f"{w!r} occurs {counts[w]} times")
    try:
        expected = render(template, pairs, categories, sentence)
    except ValueError as e:
        problems.append(str(e))
    else:
        if text != expected:
            problems.append(f"not the {template} form: expected {expected!r}")
    return problems


__all__ = [
    "DEFAULT_TEMPLATE",
    "NOUN_ATTRIBUTES",
    "TEMPLATES",
    "WITH_NOUNS",
    "allows",
    "caption_problems",
    "check_template",
    "complement",
    "grammar_problems",
    "group_phrase",
    "join_groups",
    "parse_templates",
    "render",
]
