"""Attention binding margins per layer (SABER appendix C.3; docs/architecture.md, "Attention binding margin").

For one caption and one layer with attention map ``A`` of shape ``(heads, seq, seq)`` (row ``i`` = attention
*from* token ``i``), the attention from word ``u`` to word ``v`` is

    e(u -> v) = mean over heads, mean over the sub-tokens i of u, of  sum over the sub-tokens j of v of A[h, i, j]

Each (object, attribute) pair is read in **one direction**, fixed by where the two words sit in the caption:

- ``later_to_earlier`` (default, the only direction a causal model has): from the later word to the earlier one.
  In "a red cube" the object is later, so it is cube -> red; in the predicative "the cube is red" the attribute
  is later, so it is red -> cube.
- ``earlier_to_later`` (bidirectional encoders only: MiniLM/BERT, SigLIP): from the earlier word to the later one.

Binding margin of an object ``o`` = mean of ``e`` over its own attributes minus mean of ``e`` over the attributes
bound to the *other* objects of the caption; the caption's margin at a layer is the mean over objects that have
both. Zero = no preference for the object's own attributes.

Locating bindings in a caption: captions are split into words with the access module's ``WORD`` pattern (inner
hyphens and apostrophes kept: "polka-dot" and "teddy-bear" are one word each); an attribute or object may also be a
phrase of several words ("dark red"), which is then one unit whose sub-tokens are all its words' sub-tokens.
Matching is case-insensitive. When a word occurs more than once ("a red cube and a red sphere"), each binding takes
the closest (attribute, object) occurrence pair, closest pairs first, attribute before object on ties, and an
attribute occurrence serves one binding only; objects are occurrences too, so "a red cube and a blue cube" has two
cube objects. Chat-templated models (Qwen3-VL) need nothing special here: the encoder's
:class:`~bindlab.encoders.attention_access.TextAttentionAccess` maps caption characters into the templated sequence.

Memory: one caption at a time; each layer's map is reduced at once to a units x units matrix, so neither a batch nor
all layers x heads x tokens^2 of even one caption is kept here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bindlab.encoders import admission
from bindlab.encoders.attention_access import WORD, TextAttentionAccess, WordSpan, align_words
from bindlab.encoders.base import EncoderError
from bindlab.encoders.service import MODEL_TURN

DIRECTIONS = ("later_to_earlier", "earlier_to_later")
Binding = tuple[str, str]  # (attribute, object)


# --- pure maths ------------------------------------------------------------------------------------------------
def unit_pooling(token_sets: Sequence[Sequence[int]], seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """The two matrices that turn a token x token map into a unit x unit one: ``(M, S)`` with ``M`` ``(U, seq)``
    averaging the from-unit's tokens and ``S`` ``(seq, U)`` summing the to-unit's tokens."""
    m = np.zeros((len(token_sets), seq_len))
    s = np.zeros((seq_len, len(token_sets)))
    for u, toks in enumerate(token_sets):
        m[u, list(toks)] = 1.0 / len(toks)
        s[list(toks), u] = 1.0
    return m, s


def unit_attention(attn: np.ndarray, token_sets: Sequence[Sequence[int]]) -> np.ndarray:
    """Word-level (unit-level) attention of one layer.

    Args:
        attn: ``(heads, seq, seq)`` attention map, row ``i`` = attention from token ``i``.
        token_sets: per unit (word or phrase), its non-empty list of sequence positions.

    Returns:
        ``(U, U)`` float64 matrix ``W`` with ``W[u, v]`` = mean over heads and over the sub-tokens of ``u`` of the
        summed attention to the sub-tokens of ``v`` (= ``M @ mean_heads(attn) @ S``, :func:`unit_pooling`).
    """
    a = np.asarray(attn, dtype=np.float64).mean(axis=0)  # (seq, seq): heads averaged first (the maths is linear)
    m, s = unit_pooling(token_sets, a.shape[-1])
    return m @ a @ s


def _pair_index(positions: Sequence[int], obj: int, attr: int, direction: str) -> tuple[int, int]:
    """``(from unit, to unit)`` of the object–attribute pair in ``direction``, decided by their word positions."""
    later, earlier = (obj, attr) if positions[obj] > positions[attr] else (attr, obj)
    return (later, earlier) if direction == "later_to_earlier" else (earlier, later)


def pair_attention(unit_attn: np.ndarray, positions: Sequence[int], obj: int, attr: int, direction: str) -> float:
    """Attention between an object unit and an attribute unit in the direction fixed by their word positions.

    Args:
        unit_attn: ``(U, U)`` from :func:`unit_attention`.
        positions: per unit, its first word index in the caption (decides which word is later).
        obj, attr: unit indices.
        direction: ``later_to_earlier`` or ``earlier_to_later``.
    """
    return float(unit_attn[_pair_index(positions, obj, attr, direction)])


def margin_weights(
    positions: Sequence[int], objects: Sequence[tuple[int, Sequence[int]]], direction: str = "later_to_earlier"
) -> np.ndarray | None:
    """The binding margin is linear in the unit attention: the ``(U, U)`` matrix ``P`` with
    ``binding_margin = sum(P * unit_attn)``, or None when no object has both own and other attributes.

    For the K objects that have both, ``P`` holds ``+1/(K·|own|)`` at each own-attribute pair and
    ``−1/(K·|other|)`` at each other-attribute pair (the pairs oriented by :func:`pair_attention`'s rule).
    """
    check_direction(direction)
    terms = []
    for k, (obj, own) in enumerate(objects):
        other = [a for j, (_, attrs) in enumerate(objects) if j != k for a in attrs]
        if own and other:
            terms.append((obj, own, other))
    if not terms:
        return None
    p = np.zeros((len(positions), len(positions)))
    for obj, own, other in terms:
        for attrs, sign in ((own, 1.0), (other, -1.0)):
            for a in attrs:
                p[_pair_index(positions, obj, a, direction)] += sign / (len(terms) * len(attrs))
    return p


def binding_margin(
    unit_attn: np.ndarray,
    positions: Sequence[int],
    objects: Sequence[tuple[int, Sequence[int]]],
    direction: str = "later_to_earlier",
) -> float:
    """Binding margin of one caption at one layer (NaN when no object has both own and other attributes): the mean
    over objects of (mean attention to its own attributes − mean attention to the other objects' attributes).

    Args:
        unit_attn: ``(U, U)`` unit-level attention (:func:`unit_attention`).
        positions: ``(U,)`` first word index of each unit.
        objects: per object, ``(object unit, own attribute units)``; the other objects' attribute units are the
            "other attributes".
        direction: ``later_to_earlier`` or ``earlier_to_later``.
    """
    p = margin_weights(positions, objects, direction)
    return float("nan") if p is None else float((p * unit_attn).sum())


def head_margins(
    attn: np.ndarray,
    token_sets: Sequence[Sequence[int]],
    positions: Sequence[int],
    objects: Sequence[tuple[int, Sequence[int]]],
    direction: str = "later_to_earlier",
) -> np.ndarray:
    """Binding margin of one caption at one layer, **per head** (bertviz-style head view).

    The margin is linear in the attention map, so the mean of these over heads is :func:`binding_margin` of the
    head-averaged :func:`unit_attention`, the number the curves show.

    Args:
        attn: ``(heads, seq, seq)`` attention map of one layer, row ``i`` = attention from token ``i``.
        token_sets: per unit, its sequence positions (as for :func:`unit_attention`).
        positions, objects, direction: as for :func:`binding_margin`.

    Returns:
        ``(heads,)`` margins; all NaN when no object has both own and other attributes.
    """
    a = np.asarray(attn, dtype=np.float64)
    p = margin_weights(positions, objects, direction)
    if p is None:
        return np.full(a.shape[0], np.nan)
    m, s = unit_pooling(token_sets, a.shape[-1])
    return np.einsum("uv,huv->h", p, np.einsum("us,hst,tv->huv", m, a, s))  # (heads,)


def normalised_depth(n_layers: int) -> list[float]:
    """Relative depth of each of ``n_layers`` layers: ``layer / (n_layers − 1)`` in [0, 1] (``[0.0]`` for one layer),
    so that models with different layer counts can share one axis (first block = 0, last block = 1)."""
    if n_layers < 1:
        raise ValueError(f"need at least one layer, got {n_layers}")
    return [0.0] if n_layers == 1 else [round(i / (n_layers - 1), 6) for i in range(n_layers)]


def margin_summary(margins: np.ndarray, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Per-layer mean margin with a 95 % percentile bootstrap interval over captions.

    Args:
        margins: ``(n_captions, n_layers)``; rows with NaN (skipped captions) are left out.
    """
    from bindlab.eval.metrics import bootstrap_ci

    m = _valid_rows(margins)
    cis = [bootstrap_ci(m[:, layer], n_boot=n_boot, seed=seed) for layer in range(m.shape[1])]
    return {
        "n_captions": int(m.shape[0]),
        "layers": list(range(m.shape[1])),
        "margin_mean": [_num(x) for x in (m.mean(axis=0) if len(m) else np.full(m.shape[1], np.nan))],
        "ci_low": [_num(c[0]) for c in cis],
        "ci_high": [_num(c[1]) for c in cis],
    }


def margin_ratio(base: np.ndarray, other: np.ndarray, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Per-layer ratio mean(other) / mean(base) over the captions valid in both, with a paired bootstrap interval.

    Args:
        base, other: ``(n_captions, n_layers)`` margins of two models on the *same* captions (NaN = skipped).
    """
    base, other = np.asarray(base, np.float64), np.asarray(other, np.float64)
    if base.shape != other.shape:
        raise ValueError(
            f"margins to compare must have the same shape (captions x layers); got {base.shape} and "
            f"{other.shape} — the two models need the same number of layers"
        )
    keep = ~(np.isnan(base).any(axis=1) | np.isnan(other).any(axis=1))
    b, o = base[keep], other[keep]
    if not len(b):
        nan = [None] * base.shape[1]
        return {"n_captions": 0, "ratio": nan, "ci_low": nan, "ci_high": nan}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(b), size=(n_boot, len(b)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = o.mean(axis=0) / b.mean(axis=0)
        boots = o[idx].mean(axis=1) / b[idx].mean(axis=1)  # (n_boot, layers), captions resampled jointly
    lo, hi = np.nanquantile(boots, 0.025, axis=0), np.nanquantile(boots, 0.975, axis=0)
    return {
        "n_captions": int(len(b)),
        "ratio": [_num(x) for x in ratio],
        "ci_low": [_num(x) for x in lo],
        "ci_high": [_num(x) for x in hi],
    }


def deep_layers(n_layers: int) -> list[int]:
    """The last third of ``n_layers`` layers (at least one): where SABER sees the margin fade after finetuning."""
    if n_layers < 1:
        raise ValueError(f"need at least one layer, got {n_layers}")
    return list(range(n_layers - max(1, n_layers // 3), n_layers))


def margin_difference(base: np.ndarray, other: np.ndarray, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Paired difference ``other − base`` of two models' margins on the same captions, with bootstrap intervals.

    Only captions valid (no NaN) for both models count. Per layer: mean of the per-caption differences and its
    95 % percentile bootstrap interval; ``last``: the same at the last layer; ``deep``: per caption, the mean over
    :func:`deep_layers` of the difference, then mean and interval over captions.

    Args:
        base, other: ``(n_captions, n_layers)`` margins (NaN = skipped caption).

    Returns:
        ``{"n_captions", "layers", "diff_mean", "ci_low", "ci_high", "last": {"layer", "mean", "ci_low",
        "ci_high"}, "deep": {"layers", "mean", "ci_low", "ci_high"}}`` (None where undefined).

    Raises:
        ValueError: the two arrays differ in shape (e.g. different layer counts).
    """
    from bindlab.eval.metrics import bootstrap_ci

    base, other = np.asarray(base, np.float64), np.asarray(other, np.float64)
    if base.ndim != 2 or base.shape != other.shape:
        raise ValueError(
            f"margins to compare must have the same shape (captions x layers); got {base.shape} and "
            f"{other.shape} — the two models need the same number of layers"
        )
    keep = ~(np.isnan(base).any(axis=1) | np.isnan(other).any(axis=1))
    d = other[keep] - base[keep]  # (n_valid, layers): per-caption differences, paired
    n_layers, deep = base.shape[1], deep_layers(base.shape[1])

    def stat(v: np.ndarray) -> tuple[float | None, float | None, float | None]:
        if not len(v):
            return None, None, None
        lo, hi = bootstrap_ci(v, n_boot=n_boot, seed=seed)
        return _num(v.mean()), _num(lo), _num(hi)

    per_layer = [stat(d[:, layer]) for layer in range(n_layers)]
    last, deep_stat = stat(d[:, -1]), stat(d[:, deep].mean(axis=1))
    return {
        "n_captions": int(len(d)),
        "layers": list(range(n_layers)),
        "diff_mean": [s[0] for s in per_layer],
        "ci_low": [s[1] for s in per_layer],
        "ci_high": [s[2] for s in per_layer],
        "last": {"layer": n_layers - 1, "mean": last[0], "ci_low": last[1], "ci_high": last[2]},
        "deep": {"layers": deep, "mean": deep_stat[0], "ci_low": deep_stat[1], "ci_high": deep_stat[2]},
    }


def _valid_rows(margins: np.ndarray) -> np.ndarray:
    m = np.asarray(margins, dtype=np.float64)
    return m[~np.isnan(m).any(axis=1)] if m.ndim == 2 else m.reshape(0, 0)


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else round(float(x), 6)


def check_direction(direction: str) -> str:
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; choose one of {list(DIRECTIONS)}")
    return direction


# --- locating bindings in a caption ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """Where a caption's bindings sit, in caption words.

    Attributes:
        units: per unit (attribute or object occurrence), ``(first word index, number of words)``, sorted.
        labels: per unit, its text.
        objects: per object, ``(object unit, own attribute units)``.
    """

    units: tuple[tuple[int, int], ...]
    labels: tuple[str, ...]
    objects: tuple[tuple[int, tuple[int, ...]], ...]

    @property
    def positions(self) -> list[int]:
        return [start for start, _ in self.units]


def phrase_words(phrase: str) -> list[str]:
    """Lower-cased caption words of a binding's attribute or object (``WORD`` pattern)."""
    return [w.lower() for w in WORD.findall(phrase)]


def locate_bindings(words: Sequence[str], bindings: Sequence[Binding]) -> Layout:
    """Find each binding's attribute and object occurrence among a caption's words.

    Args:
        words: the caption's words in order (``WORD`` matches).
        bindings: ``(attribute, object)`` pairs.

    Raises:
        ValueError: a binding word is not in the caption, every occurrence of an attribute is already taken, or a
            word would be both an attribute and an object.
    """
    low = [w.lower() for w in words]
    caption = " ".join(words)

    def occurrences(phrase: str, role: str, b: Binding) -> list[tuple[int, int]]:
        ph = phrase_words(phrase)
        if not ph:
            raise ValueError(f"binding {b[0]}:{b[1]} has an empty {role}")
        found = [(i, len(ph)) for i in range(len(low) - len(ph) + 1) if low[i : i + len(ph)] == ph]
        if not found:
            raise ValueError(f"the {role} {phrase!r} of binding {b[0]}:{b[1]} is not a word of the caption {caption!r}")
        return found

    cands = []
    for k, b in enumerate(bindings):
        for a in occurrences(b[0], "attribute", b):
            for o in occurrences(b[1], "object", b):
                if a[0] < o[0] + o[1] and o[0] < a[0] + a[1]:
                    continue  # overlapping occurrences cannot be two different words
                cands.append((abs(a[0] - o[0]), 0 if a[0] < o[0] else 1, a[0], k, a, o))
    chosen: dict[int, tuple[tuple[int, int], tuple[int, int]]] = {}
    used_attrs: set[tuple[int, int]] = set()
    for *_, k, a, o in sorted(cands):
        if k not in chosen and a not in used_attrs:
            chosen[k] = (a, o)
            used_attrs.add(a)
    for k, b in enumerate(bindings):
        if k not in chosen:
            raise ValueError(
                f"binding {b[0]}:{b[1]}: every occurrence of {b[0]!r} in {caption!r} is already bound to "
                "another object; mark each attribute occurrence once"
            )
    obj_units = {o for a, o in chosen.values()}
    clash = obj_units & used_attrs
    if clash:
        start, n = sorted(clash)[0]
        raise ValueError(f"{' '.join(words[start : start + n])!r} is used both as an attribute and as an object")
    units = sorted(obj_units | used_attrs)
    index = {u: i for i, u in enumerate(units)}
    own: dict[int, list[int]] = {}
    for k in range(len(bindings)):
        a, o = chosen[k]
        own.setdefault(index[o], []).append(index[a])
    objects = tuple((o, tuple(sorted(set(attrs)))) for o, attrs in sorted(own.items()))
    labels = tuple(" ".join(words[s : s + n]) for s, n in units)
    return Layout(tuple(units), labels, objects)


def binding_cells(layout: Layout, direction: str = "later_to_earlier") -> list[tuple[int, int, bool]]:
    """Word-level cells ``(from word, to word, own)`` that the margin reads, for outlining them in a heatmap.

    ``own`` is True for an object and its own attribute, False for an object and another object's attribute.
    """
    check_direction(direction)
    cells: set[tuple[int, int, bool]] = set()
    pos = layout.positions
    for k, (obj, own) in enumerate(layout.objects):
        other = [a for j, (_, attrs) in enumerate(layout.objects) if j != k for a in attrs]
        for attrs, is_own in ((own, True), (other, False)):
            for a in attrs:
                later, earlier = (obj, a) if pos[obj] > pos[a] else (a, obj)
                src, dst = (later, earlier) if direction == "later_to_earlier" else (earlier, later)
                (s0, sn), (d0, dn) = layout.units[src], layout.units[dst]
                cells.update((r, c, is_own) for r in range(s0, s0 + sn) for c in range(d0, d0 + dn))
    return sorted(cells)


def parse_bindings(text: str) -> list[Binding]:
    """Parse free-text bindings such as ``"red:cube, blue:sphere"`` (commas or semicolons between pairs).

    Raises:
        ValueError: empty input or a piece that is not ``attribute:object``, naming the piece.
    """
    pieces = [p.strip() for p in re.split(r"[,;\n]", text or "") if p.strip()]
    if not pieces:
        raise ValueError("no bindings given; write them as attribute:object pairs, e.g. 'red:cube, blue:sphere'")
    out = []
    for i, p in enumerate(pieces, 1):
        parts = [s.strip() for s in p.split(":")]
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"binding #{i} {p!r} is not attribute:object; write e.g. 'red:cube, blue:sphere'")
        out.append((parts[0], parts[1]))
    return out


# --- captions and data files -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Caption:
    """A caption with its known bindings."""

    text: str
    bindings: tuple[Binding, ...]
    id: str = ""


CAPTION_FILES = ("mcq.jsonl", "triplets.jsonl", "captions.jsonl")  # what a data folder may hold, looked for in order


def load_caption_sets(path: str | Path, limit: int = 0) -> dict[str, list[Caption]]:
    """Caption sets of a data file (or of a folder's :data:`CAPTION_FILES`, the first found), by format (sniffed from
    the first record).

    - MCQ JSONL (``query``/``candidates``): ``{"queries": the questions' query texts}``.
    - Triplets JSONL (``query``/``positive``/``negative``): ``{"queries", "positives"}`` (each distinct text once;
      the positives are the longer texts).
    - Captions JSONL (``{"text", "bindings"}``, bindings as ``[[attr, obj], ...]`` or ``"red:cube, blue:sphere"``):
      ``{"captions"}``.

    Args:
        limit: keep the first ``limit`` captions of each set (0 = all).

    Raises:
        DataError: unknown format or malformed records, naming the file.
    """
    from bindlab.data.schema import DataError, load_mcqs, read_jsonl

    p = Path(path)
    if p.is_dir():  # a folder as the generators write it (generate saber / triplets): its data file
        found = next((p / n for n in CAPTION_FILES if (p / n).is_file()), None)
        if found is None:
            raise FileNotFoundError(f"{p}: a folder without {', '.join(CAPTION_FILES)}; pass one of those files")
        p = found
    if not p.is_file():
        raise FileNotFoundError(
            f"{p}: file not found; generate an MCQ file with 'python -m bindlab generate saber "
            "--out DIR' and pass DIR/mcq.jsonl"
        )
    rows = read_jsonl(p)
    first = next((obj for _, obj in rows if isinstance(obj, dict)), None)
    if first is None:
        raise DataError(f"{p}: no JSON records found")
    if "candidates" in first:
        qs, _ = load_mcqs(p)
        sets = {"queries": [Caption(q.query.text, tuple(q.query.bindings), q.id) for q in qs]}
    elif "positive" in first and "negative" in first:
        from bindlab.data.triplets import load_triplets

        trips = load_triplets(p)
        sets = {
            name: _distinct(Caption(t[key], tuple(tuple(b) for b in t["bindings"]), t["id"]) for t in trips)
            for name, key in (("queries", "query"), ("positives", "positive"))
        }
    elif "text" in first and "bindings" in first:
        sets = {"captions": [_caption_row(obj, f"{p}:{n}") for n, obj in rows]}
    else:
        raise DataError(
            f"{p}: not an MCQ, triplets or captions file (first record has keys {sorted(first)}); "
            'captions files hold one {"text", "bindings"} object per line'
        )
    return {k: (v[:limit] if limit else v) for k, v in sets.items()}


def _distinct(captions: Iterable[Caption]) -> list[Caption]:
    seen: set[str] = set()
    out = []
    for c in captions:
        if c.text not in seen:
            seen.add(c.text)
            out.append(c)
    return out


def _caption_row(obj: Any, where: str) -> Caption:
    from bindlab.data.schema import DataError

    if isinstance(obj, Exception):
        raise obj
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or not obj["text"].strip():
        raise DataError(f'{where}: expected {{"text": ..., "bindings": ...}} with a non-empty text')
    b = obj.get("bindings")
    try:
        bindings = parse_bindings(b) if isinstance(b, str) else [(str(x), str(y)) for x, y in b]
    except (TypeError, ValueError) as e:
        raise DataError(f"{where}: bad bindings ({e})") from None
    return Caption(obj["text"], tuple(bindings), str(obj.get("id", where.rsplit(":", 1)[-1])))


# --- running an encoder ----------------------------------------------------------------------------------------
def attention_access(encoder: Any) -> TextAttentionAccess:
    """The encoder's text-transformer attention access, or a clear error when it has none."""
    get = getattr(encoder, "attention_access", None)
    if get is None:
        raise EncoderError(
            f"{encoder.id} has no text transformer to read attention from; pick an encoder with one "
            "(minilm, toy:clip, hf:…, open_clip:…, qwen3vl:…)"
        )
    return get()


@dataclass
class CaptionAttention:
    """One caption's per-layer margins, and optionally its word x word attention per layer.

    Attributes:
        margins: ``(layers,)`` binding margin per layer.
        layout: where the bindings sit (units in caption words).
        words: caption words with their sub-token positions.
        word_attn: ``(layers, W, W)`` word-level attention (row = from word) when asked for, else None; averaged
            over heads, or of head ``word_head`` only when one was asked for.
        head_margins: ``(layers, heads)`` margin per head when asked for (its mean over heads = ``margins``).
    """

    caption: Caption
    margins: np.ndarray
    layout: Layout
    words: list[WordSpan]
    word_attn: np.ndarray | None = None
    head_margins: np.ndarray | None = None


def analyse_caption(
    access: TextAttentionAccess,
    caption: Caption,
    direction: str = "later_to_earlier",
    with_words: bool = False,
    per_head: bool = False,
    word_head: int | None = None,
) -> CaptionAttention:
    """Binding margin per layer of one caption (one forward pass, each layer reduced as it arrives).

    Args:
        with_words: also keep the word x word attention of every layer (for heatmaps).
        per_head: also keep the margin of every head of every layer (:func:`head_margins`).
        word_head: with ``with_words``, keep that head's word x word attention instead of the heads' mean.

    Raises:
        ValueError: bindings not found in the caption, a binding word cut off by truncation, or
            ``earlier_to_later`` asked of a causal model.
    """
    check_direction(direction)
    if direction == "earlier_to_later" and access.causal:
        raise ValueError(
            f"{access.encoder_id} is causal (attention only flows from later to earlier words); "
            "use direction later_to_earlier"
        )
    enc = access.encode(caption.text)
    words = align_words(caption.text, enc.char_spans)
    layout = locate_bindings([w.word for w in words], caption.bindings)
    token_sets = []
    for (start, n), label in zip(layout.units, layout.labels, strict=True):
        toks = sorted({t for w in words[start : start + n] for t in w.token_indices})
        if not toks or any(not w.token_indices for w in words[start : start + n]):
            raise ValueError(f"{label!r} was cut off by the tokenizer's length limit; shorten the caption")
        token_sets.append(toks)
    kept = [w for w in words if w.token_indices]
    weights = margin_weights(layout.positions, layout.objects, direction)
    margins, per_word, per_head_rows = [], [], []
    token_weights = word_pool = None  # built at the first layer, once its sequence length is known
    for attn in access.layer_maps(enc):  # (heads, seq, seq), one layer at a time
        heads = np.asarray(attn, dtype=np.float64)
        a = heads.mean(axis=0)  # heads averaged (the maths is linear)
        if token_weights is None and weights is not None:
            m, s = unit_pooling(token_sets, a.shape[-1])
            token_weights = m.T @ weights @ s.T  # margin = sum(P * M a S) = sum((Mᵀ P Sᵀ) * a)
        margins.append(float("nan") if weights is None else float((token_weights * a).sum()))
        if per_head:
            per_head_rows.append(
                np.full(len(heads), np.nan) if weights is None else np.einsum("st,hst->h", token_weights, heads)
            )  # (heads,)
        if with_words:
            if word_pool is None:
                word_pool = unit_pooling([w.token_indices for w in kept], a.shape[-1])
            shown = a if word_head is None else heads[_head_index(word_head, len(heads))]
            per_word.append(word_pool[0] @ shown @ word_pool[1])  # = unit_attention(attn, word token sets)
    word_attn = np.stack(per_word) if with_words else None
    return CaptionAttention(
        caption,
        np.asarray(margins),
        layout,
        kept if with_words else words,
        word_attn,
        np.stack(per_head_rows) if per_head else None,
    )


def _head_index(head: int, n_heads: int) -> int:
    if not 0 <= int(head) < n_heads:
        raise ValueError(f"head {head} does not exist: this model has heads 0 to {n_heads - 1}")
    return int(head)


@dataclass
class SetMargins:
    """Margins of one model on one caption set.

    Attributes:
        margins: ``(n_captions, layers)``; a row of NaN for a skipped caption.
        skipped: caption index -> reason.
    """

    name: str
    captions: list[Caption]
    margins: np.ndarray
    skipped: dict[int, str] = field(default_factory=dict)

    def summary(self, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
        out = margin_summary(self.margins, n_boot=n_boot, seed=seed)
        out["n_skipped"] = len(self.skipped)
        out["skipped_examples"] = dict(list({str(k): v for k, v in self.skipped.items()}.items())[:5])
        return out


def set_margins(
    access: TextAttentionAccess,
    name: str,
    captions: Sequence[Caption],
    direction: str = "later_to_earlier",
    progress: Callable[[float, str], None] | None = None,
) -> SetMargins:
    """Margins per caption and layer for a caption set; captions whose bindings cannot be located are skipped.

    A direction that the model cannot provide is an error for the whole set, not a skip.
    """
    check_direction(direction)
    if direction == "earlier_to_later" and access.causal:
        raise ValueError(
            f"{access.encoder_id} is causal (attention only flows from later to earlier words); "
            "use direction later_to_earlier"
        )
    if not captions:
        raise ValueError(f"caption set {name!r} is empty")
    out = np.full((len(captions), access.num_layers), np.nan)
    skipped: dict[int, str] = {}
    for i, cap in enumerate(captions):
        if progress and i % 10 == 0:
            progress(i / len(captions), f"{access.encoder_id}: {name} {i}/{len(captions)}")
        admission.charge(1)  # an app request: one caption through the model, in the same fair turns as embeddings
        try:
            with MODEL_TURN.turn():
                m = analyse_caption(access, cap, direction).margins
        except ValueError as e:
            skipped[i] = str(e)
            continue
        if np.isnan(m).all():
            skipped[i] = "fewer than two objects with attributes: nothing to compare"
            continue
        out[i, : len(m)] = m
    return SetMargins(name, list(captions), out, skipped)


def run_attention(
    encoder: Any,
    sets: dict[str, list[Caption]],
    direction: str = "later_to_earlier",
    progress: Callable[[float, str], None] | None = None,
) -> dict[str, SetMargins]:
    """Margins of one encoder on every caption set.

    Raises:
        ValueError: no caption of any set could be measured (every one skipped, e.g. bindings whose words are not in
            their captions): a curve of NaN is not a result.
    """
    access = attention_access(encoder)
    runs = {name: set_margins(access, name, caps, direction, progress) for name, caps in sets.items()}
    if runs and all(len(r.skipped) == len(r.captions) for r in runs.values()):
        first, n = next(iter(runs.values())), sum(len(r.captions) for r in runs.values())
        i = min(first.skipped)
        raise ValueError(
            f"no caption could be measured: all {n} captions of {', '.join(runs)} were skipped (e.g. "
            f"{first.captions[i].id}: {first.skipped[i]}); each binding's attribute and object words must "
            "occur in its caption"
        )
    return runs


def results_json(
    model: Any,
    runs: dict[str, SetMargins],
    direction: str,
    compare: tuple[Any, dict[str, SetMargins]] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The result document: the first caption set's curve at top level, every set under ``sets``.

    With ``compare=(encoder, runs)``: the second model's sets and the per-layer ratio (second / first) per set.
    """
    sets = {name: r.summary(n_boot, seed) for name, r in runs.items()}
    main = next(iter(sets))
    out: dict[str, Any] = {
        "model": model.id,
        "direction": direction,
        "caption_set": main,
        **{k: sets[main][k] for k in ("n_captions", "layers", "margin_mean", "ci_low", "ci_high")},
        "sets": sets,
    }
    if compare is not None:
        enc2, runs2 = compare
        ratio = {}
        for name in runs:
            a, b = runs[name].margins, runs2[name].margins
            ratio[name] = (
                margin_ratio(a, b, n_boot, seed)
                if a.shape == b.shape
                else {"n_captions": 0, "ratio": None, "note": f"layer counts differ ({a.shape[1]} vs {b.shape[1]})"}
            )
        out["compare"] = {
            "model": enc2.id,
            "sets": {n: r.summary(n_boot, seed) for n, r in runs2.items()},
            "ratio": ratio,
        }
        out["ratio"] = ratio[main].get("ratio")
    return out


def per_item_rows(runs: dict[str, SetMargins]) -> list[dict[str, Any]]:
    """One JSON row per caption: set, id, text, bindings, margins per layer (null when skipped) and skip reason."""
    rows = []
    for name, r in runs.items():
        for i, c in enumerate(r.captions):
            rows.append(
                {
                    "set": name,
                    "id": c.id,
                    "text": c.text,
                    "bindings": [list(b) for b in c.bindings],
                    "margins": None if i in r.skipped else [_num(x) for x in r.margins[i]],
                    "skipped": r.skipped.get(i),
                }
            )
    return rows
