"""SABER-style 4-way binding MCQ generator (SABER section 3, appendix A).

Per scene size N: half *independent* questions and half *nested-chain* questions (each chain starts at the
smallest size and adds one binding per size, keeping the earlier ones and reshuffling their order). Candidates:

- ``preserve``  — the query's bindings, pairs in a different order;
- ``attr_swap`` — objects in the preserve order, attributes permuted so bindings change;
- ``obj_swap``  — attributes in the preserve order, objects permuted;
- ``joint_swap``— both permuted;
- for N = 2, where only two one-to-one assignments exist, the fourth candidate is ``replace``: keep one query
  binding and replace the object or the attribute of the other with an element not in the query.

For N >= 3 the four binding assignments are pairwise distinct. Every attribute's generation form (e.g. striped
-> "white and orange striped") is drawn once per chain/question and reused in all five items. Candidates are
shuffled; ``answer`` is the preserve candidate's index. Everything is deterministic for a seed: each question
draws from its own RNG seeded by (seed, question key), so a subset of sizes generates the same questions.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindlab.data.schema import MCQ, Item, write_jsonl
from bindlab.data.templates import DEFAULT_TEMPLATE, allows, check_template, render
from bindlab.data.vocab import ATTRIBUTES, OBJECTS, Attribute

Pair = tuple[str, str]  # (attribute name, object)


@dataclass(frozen=True)
class Vocabulary:
    """The objects and attributes a generator draws from (the full SABER lists, or a renderable subset)."""

    objects: tuple[str, ...]
    attributes: tuple[Attribute, ...]

    def __post_init__(self) -> None:
        if len(set(self.objects)) != len(self.objects) or len({a.name for a in self.attributes}) != len(
            self.attributes
        ):
            raise ValueError("vocabulary objects and attribute names must be unique")


SABER_VOCAB = Vocabulary(OBJECTS, ATTRIBUTES)


def parse_sizes(spec: str) -> list[int]:
    """``"2-10"`` -> [2..10]; ``"2,4,6"`` -> [2, 4, 6]. Sizes must be between 2 and 20."""
    sizes: set[int] = set()
    try:
        for part in spec.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                sizes.update(range(lo, hi + 1))
            elif part:
                sizes.add(int(part))
    except ValueError:
        raise ValueError(f"sizes {spec!r} must look like '2-10' or '2,3,5'") from None
    if not sizes or min(sizes) < 2 or max(sizes) > 20:
        raise ValueError(f"sizes {spec!r} must be between 2 and 20 objects")
    return sorted(sizes)


def _assignment(pairs: Sequence[Pair]) -> frozenset[Pair]:
    return frozenset(pairs)


def _nonidentity_perm(n: int, rng: random.Random) -> list[int]:
    """A uniformly random permutation of range(n) other than the identity (n >= 2)."""
    while True:
        p = list(range(n))
        rng.shuffle(p)
        if p != list(range(n)):
            return p


def _reorder(pairs: list[Pair], rng: random.Random) -> list[Pair]:
    """Same pairs, different order (the preserve candidate must not repeat the query's surface order)."""
    return [pairs[i] for i in _nonidentity_perm(len(pairs), rng)]


def make_candidates(query: list[Pair], vocab: Vocabulary, rng: random.Random) -> list[tuple[str, list[Pair]]]:
    """The four (role, pairs) candidates of one question, in canonical order (preserve first).

    Raises:
        ValueError: if the pairs repeat an attribute or an object (bindings would be ambiguous).
    """
    n = len(query)
    attrs = [a for a, _ in query]
    objs = [o for _, o in query]
    if len(set(attrs)) != n or len(set(objs)) != n:
        raise ValueError(f"a question's attributes and objects must be distinct: {query}")
    preserve = _reorder(query, rng)
    p_attrs = [a for a, _ in preserve]
    p_objs = [o for _, o in preserve]
    if n == 2:
        swapped_attrs = [p_attrs[1], p_attrs[0]]
        attr_swap = list(zip(swapped_attrs, p_objs, strict=False))
        obj_swap = list(zip(p_attrs, [p_objs[1], p_objs[0]], strict=False))
        return [
            ("preserve", preserve),
            ("attr_swap", attr_swap),
            ("obj_swap", obj_swap),
            ("replace", _replace_candidate(query, vocab, rng)),
        ]
    taken = {_assignment(query)}
    out: list[tuple[str, list[Pair]]] = [("preserve", preserve)]
    for role in ("attr_swap", "obj_swap", "joint_swap"):
        for _ in range(1000):
            pa = _nonidentity_perm(n, rng) if role in ("attr_swap", "joint_swap") else list(range(n))
            po = _nonidentity_perm(n, rng) if role in ("obj_swap", "joint_swap") else list(range(n))
            cand = [(p_attrs[pa[i]], p_objs[po[i]]) for i in range(n)]
            if _assignment(cand) not in taken:  # pairwise-distinct assignments; rejected ones are resampled
                taken.add(_assignment(cand))
                out.append((role, cand))
                break
        else:  # pragma: no cover - impossible for n >= 3 (n! >= 6 assignments)
            raise RuntimeError(f"could not draw a distinct {role} for {query}")
    return out


def _replace_candidate(query: list[Pair], vocab: Vocabulary, rng: random.Random) -> list[Pair]:
    """N = 2: keep one binding, replace the attribute or the object of the other with a new element."""
    keep, change = rng.sample(range(2), 2)
    attrs = {a for a, _ in query}
    objs = {o for _, o in query}
    a, o = query[change]
    if rng.random() < 0.5:
        a = rng.choice([x.name for x in vocab.attributes if x.name not in attrs])
    else:
        o = rng.choice([x for x in vocab.objects if x not in objs])
    pairs = [query[keep], (a, o)]
    rng.shuffle(pairs)
    return pairs


def _item(pairs: list[Pair], forms: dict[str, str], vocab: Vocabulary, template: str, role: str | None = None) -> Item:
    cats = [_attr(vocab, a).category for a, _ in pairs]
    return Item(
        text=render(template, pairs, cats),
        gen_text=render(template, [(forms[a], o) for a, o in pairs], cats),
        bindings=list(pairs),
        role=role,
    )


def _question(
    qid: str,
    query: list[Pair],
    forms: dict[str, str],
    vocab: Vocabulary,
    rng: random.Random,
    subset: str,
    chain_id: str | None = None,
    chain_pos: int | None = None,
    template: str = DEFAULT_TEMPLATE,
) -> MCQ:
    cands = make_candidates(query, vocab, rng)
    # Attributes introduced by the N=2 replacement also need a fixed generation form.
    for _, pairs in cands:
        for a, _ in pairs:
            if a not in forms:
                forms[a] = _attr(vocab, a).instantiate(rng)
    order = list(range(4))
    rng.shuffle(order)
    items = [_item(cands[i][1], forms, vocab, template, cands[i][0]) for i in order]
    extra: dict[str, Any] = {"realisations": {a: forms[a] for a in sorted(forms)}}
    if template != DEFAULT_TEMPLATE:
        extra["template"] = template
    return MCQ(
        id=qid,
        n_objects=len(query),
        subset=subset,
        chain_id=chain_id,
        chain_pos=chain_pos,
        query=_item(query, forms, vocab, template),
        candidates=items,
        answer=order.index(0),
        extra=extra,
    )


def _attr(vocab: Vocabulary, name: str) -> Attribute:
    for a in vocab.attributes:
        if a.name == name:
            return a
    raise KeyError(name)


def _new_pairs(k: int, used_attrs: set[str], used_objs: set[str], vocab: Vocabulary, rng: random.Random) -> list[Pair]:
    attrs = rng.sample([a.name for a in vocab.attributes if a.name not in used_attrs], k)
    objs = rng.sample([o for o in vocab.objects if o not in used_objs], k)
    return list(zip(attrs, objs, strict=False))


def template_vocab(vocab: Vocabulary, template: str) -> Vocabulary:
    """The part of ``vocab`` that ``template`` can express (``with`` refuses attribute types without a noun)."""
    check_template(template)
    kept = tuple(a for a in vocab.attributes if allows(template, a.category))
    return vocab if len(kept) == len(vocab.attributes) else Vocabulary(vocab.objects, kept)


def max_size(vocab: Vocabulary) -> int:
    """The largest scene size ``vocab`` supports (one object and one attribute stay free for N = 2 replacement)."""
    return min(len(vocab.objects), len(vocab.attributes)) - 1


def generate_saber(
    per_size: int = 200,
    sizes: Sequence[int] = range(2, 11),
    seed: int = 0,
    vocab: Vocabulary = SABER_VOCAB,
    template: str = DEFAULT_TEMPLATE,
) -> list[MCQ]:
    """Generate SABER-style MCQs.

    Args:
        per_size: questions per scene size; half independent, half nested (the odd one goes to independent).
        sizes: scene sizes (numbers of attribute–object pairs), each >= 2.
        seed: master seed; the output is a pure function of (per_size, sizes, seed, vocab, template).
        vocab: objects and attributes to draw from.
        template: sentence template of every text (:data:`bindlab.data.templates.TEMPLATES`); all five texts of a
            question share it. ``with`` draws only attributes whose type it can express (see
            :func:`template_vocab`); the other templates give the same bindings and roles as ``attributive``.

    Returns:
        Questions ordered by size, independent before nested.
    """
    from bindlab.config import LIMIT_ENV, limits

    vocab = template_vocab(vocab, template)
    sizes = sorted(set(sizes))
    if per_size < 1:
        raise ValueError(f"per_size must be at least 1, got {per_size}")
    cap = limits().max_per_size
    if per_size > cap:
        raise ValueError(
            f"per_size {per_size} is above the cap of {cap} questions per size; use a smaller "
            f"--per-size or raise {LIMIT_ENV['max_per_size']}"
        )
    if not sizes or sizes[0] < 2:
        raise ValueError(f"sizes must be >= 2, got {list(sizes)}")
    if sizes[-1] > max_size(vocab):
        raise ValueError(
            f"size {sizes[-1]} needs more objects/attributes than the vocabulary has "
            f"({len(vocab.objects)} objects, {len(vocab.attributes)} attributes); the largest possible "
            f"size is {max_size(vocab)}"
        )
    n_nested = per_size // 2
    n_indep = per_size - n_nested
    by_size: dict[int, list[MCQ]] = {n: [] for n in sizes}
    for n in sizes:
        for i in range(n_indep):
            rng = random.Random(f"saber:{seed}:independent:{n}:{i}")
            query = _new_pairs(n, set(), set(), vocab, rng)
            forms = {a: _attr(vocab, a).instantiate(rng) for a, _ in query}
            by_size[n].append(
                _question(f"n{n:02d}-ind-{i:03d}", query, forms, vocab, rng, "independent", template=template)
            )
    for c in range(n_nested):
        rng = random.Random(f"saber:{seed}:chain:{c}")
        chain: list[Pair] = []
        forms: dict[str, str] = {}
        for pos, n in enumerate(sizes):
            used_a = {a for a, _ in chain} | set(forms)
            chain = chain + _new_pairs(n - len(chain), used_a, {o for _, o in chain}, vocab, rng)
            for a, _ in chain:
                forms.setdefault(a, _attr(vocab, a).instantiate(rng))
            query = chain[:]
            rng.shuffle(query)  # each chain step reshuffles the order of its pairs
            q_forms = {a: forms[a] for a, _ in chain}  # a copy: N=2 replacement forms stay out of the chain
            q = _question(
                f"n{n:02d}-chain-{c:03d}", query, q_forms, vocab, rng, "nested", f"chain-{c:03d}", pos, template
            )
            by_size[n].append(q)
    return [q for n in sizes for q in by_size[n]]


# Bumped whenever the same settings write other texts: 2 = plural-only objects as "a pair of scissors" and noun
# attributes after "is" with their noun (2026-12-02). A generated folder records it in meta.json ("text_format"),
# so the embedded default built by an older bindlab is rebuilt instead of read.
TEXT_FORMAT = 2


def write_benchmark(out_dir: str | Path, questions: Sequence[MCQ], settings: dict[str, Any]) -> Path:
    """Write ``out_dir/mcq.jsonl`` and ``out_dir/meta.json`` (generator settings, bindlab version and
    :data:`TEXT_FORMAT`). Returns the JSONL path."""
    from bindlab.config import __version__

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "mcq.jsonl"
    write_jsonl(path, [q.to_json() for q in questions])
    meta = {
        "generator": "saber",
        "bindlab_version": __version__,
        "text_format": TEXT_FORMAT,
        "n_questions": len(questions),
        **settings,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    return path
