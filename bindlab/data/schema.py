"""Interchange formats (docs/architecture.md, "Data formats") as dataclasses, with validating JSONL readers and writers.

A reader never drops data silently: a malformed line either refuses the file (``strict=True``) or is skipped
and reported in :class:`LoadReport` with its line number and reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from itertools import chain
from pathlib import Path
from typing import Any

from bindlab.data.files import (
    DataError,
    gc_paused,
    iter_jsonl_bounded,
    open_regular,
    read_bytes_bounded,
    resolve_image_field,
)

ROLES = ("preserve", "attr_swap", "obj_swap", "joint_swap", "replace")
SUBSETS = ("independent", "nested")


Binding = tuple[str, str]  # (attribute, object)


@dataclass
class Item:
    """One query or candidate: its caption, optional image (path relative to the JSONL folder), bindings."""

    text: str
    bindings: list[Binding]
    image: str | None = None
    role: str | None = None  # candidates only
    gen_text: str | None = None  # generation form (instantiated attributes), used to render images

    def binding_set(self) -> frozenset[Binding]:
        return frozenset(self.bindings)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"text": self.text, "image": self.image, "bindings": [list(b) for b in self.bindings]}
        if self.role is not None:
            d = {"role": self.role, **d}
        if self.gen_text is not None:
            d["gen_text"] = self.gen_text
        return d


@dataclass
class MCQ:
    """A SABER-style 4-way question (docs/architecture.md, "MCQ (SABER-style)")."""

    id: str
    n_objects: int
    subset: str
    query: Item
    candidates: list[Item]
    answer: int
    chain_id: str | None = None
    chain_pos: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the attribute realisations

    def to_json(self) -> dict[str, Any]:
        d = {
            "id": self.id,
            "n_objects": self.n_objects,
            "subset": self.subset,
            "chain_id": self.chain_id,
            "chain_pos": self.chain_pos,
            "query": self.query.to_json(),
            "candidates": [c.to_json() for c in self.candidates],
            "answer": self.answer,
        }
        d.update(self.extra)
        return d


def check_text_size(text: str, where: str, what: str = "text") -> str:
    """A caption or name read from a file, within the caption caps (characters, then words) before any work.

    Raises:
        DataError: naming the place, the size and the cap's variable.
    """
    from bindlab.config import LIMIT_ENV, limits

    lims = limits()
    if len(text) > lims.max_caption_chars:
        raise DataError(
            f"{where}: {what} has {len(text):,} characters, above the cap of {lims.max_caption_chars:,} "
            f"({LIMIT_ENV['max_caption_chars']})"
        )
    words = len(text.split())
    if words > lims.max_caption_words:
        raise DataError(
            f"{where}: {what} has {words:,} words, above the cap of {lims.max_caption_words:,} "
            f"({LIMIT_ENV['max_caption_words']})"
        )
    return text


def _pairs(raw: Any) -> bool:
    """Whether ``raw`` is a list of 2-element lists or tuples (the types and lengths read in C first)."""
    if not isinstance(raw, list):
        return False
    if set(map(type, raw)) <= {list, tuple} and set(map(len, raw)) <= {2}:
        return True
    return all(isinstance(b, (list, tuple)) and len(b) == 2 for b in raw)


def _check_sizes(text: str, bindings: list[Binding], where: str, lims: Any) -> None:
    """:func:`check_text_size` of an item's caption and of each binding's attribute and object, in that order.

    A string of L characters has at most L words, so when no string is longer than both caps nothing can be over
    either, and the per-string checks (which name the first string over a cap) run only when one is longer.
    """
    small = min(lims.max_caption_chars, lims.max_caption_words)
    if len(text) <= small and max(map(len, chain.from_iterable(bindings)), default=0) <= small:
        return
    check_text_size(text, where)
    for a, o in bindings:
        check_text_size(a, where, "a binding's attribute")
        check_text_size(o, where, "a binding's object")


def _item_from_json(obj: Any, where: str, is_candidate: bool) -> Item:
    from bindlab.config import LIMIT_ENV, limits

    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected an object, got {type(obj).__name__}")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{where}: 'text' is missing or empty")
    lims = limits()
    if len(text) > min(lims.max_caption_chars, lims.max_caption_words):
        check_text_size(text, where)  # the caption first, before its bindings are looked at
    raw = obj.get("bindings", [])
    if not _pairs(raw):
        raise DataError(f"{where}: 'bindings' must be a list of [attribute, object] pairs")
    cap = lims.max_n_objects
    if len(raw) > cap:
        raise DataError(
            f"{where}: {len(raw)} bindings, above the cap of {cap} objects per scene ({LIMIT_ENV['max_n_objects']})"
        )
    bindings = [(str(a), str(o)) for a, o in raw]
    _check_sizes(text, bindings, where, lims)
    role = obj.get("role")
    if is_candidate and role is not None and role not in ROLES:
        raise DataError(f"{where}: role {role!r} is not one of {ROLES}")
    image = obj.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        raise DataError(f"{where}: 'image' must be a relative path or null")
    gen_text = obj.get("gen_text")
    if gen_text is not None and not isinstance(gen_text, str):
        raise DataError(f"{where}: 'gen_text' must be a string or absent")
    return Item(text=text, bindings=bindings, image=image, role=role, gen_text=gen_text)


def _check_roles(candidates: list[Item], answer: int, where: str) -> None:
    """With roles given: exactly one ``preserve`` candidate, and the answer must point at it."""
    roles = [c.role for c in candidates]
    if all(r is None for r in roles):
        return
    preserve = [i for i, r in enumerate(roles) if r == "preserve"]
    if len(preserve) != 1:
        raise DataError(
            f"{where}: a question needs exactly one 'preserve' candidate, got {len(preserve)} (roles {roles})"
        )
    if answer != preserve[0]:
        raise DataError(
            f"{where}: answer {answer} points at the {roles[answer]!r} candidate, but the "
            f"binding-preserving candidate is {preserve[0]}; set answer to {preserve[0]}"
        )


def _check_n_objects(n_objects: Any, query: Item, where: str) -> int:
    """``n_objects``: a positive integer, at most the cap, equal to the query's number of bindings when given."""
    from bindlab.config import LIMIT_ENV, limits

    if not isinstance(n_objects, int) or isinstance(n_objects, bool) or n_objects < 1:
        raise DataError(f"{where}: n_objects {n_objects!r} must be a positive integer")
    cap = limits().max_n_objects
    if n_objects > cap:
        raise DataError(
            f"{where}: n_objects {n_objects} is above the cap of {cap} objects per scene ({LIMIT_ENV['max_n_objects']})"
        )
    if query.bindings and n_objects != len(query.bindings):
        raise DataError(f"{where}: n_objects {n_objects} does not match the query's {len(query.bindings)} bindings")
    return n_objects


def _check_chain(obj: dict[str, Any], where: str) -> None:
    chain_id, pos = obj.get("chain_id"), obj.get("chain_pos")
    if chain_id is not None and not isinstance(chain_id, str):
        raise DataError(f"{where}: chain_id must be a string or null, got {chain_id!r}")
    if pos is not None and (not isinstance(pos, int) or isinstance(pos, bool) or pos < 0):
        raise DataError(f"{where}: chain_pos must be a non-negative integer or null, got {pos!r}")


def mcq_from_json(obj: Any, where: str = "question") -> MCQ:
    """Build and validate one :class:`MCQ` from parsed JSON. Raises :class:`DataError` naming the problem."""
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in ("id", "query", "candidates", "answer") if k not in obj]
    if missing:
        raise DataError(f"{where}: missing field(s) {missing}")
    cands = obj["candidates"]
    if not isinstance(cands, list) or len(cands) != 4:
        n = len(cands) if isinstance(cands, list) else type(cands).__name__
        raise DataError(f"{where}: a question needs exactly 4 candidates, got {n}")
    answer = obj["answer"]
    if not isinstance(answer, int) or isinstance(answer, bool) or not 0 <= answer < 4:
        raise DataError(f"{where}: answer index {answer!r} is out of range 0..3")
    subset = obj.get("subset", "independent")
    if subset not in SUBSETS:
        raise DataError(f"{where}: subset {subset!r} is not one of {SUBSETS}")
    query = _item_from_json(obj["query"], f"{where} query", False)
    candidates = [_item_from_json(c, f"{where} candidate {i}", True) for i, c in enumerate(cands)]
    _check_roles(candidates, answer, where)
    n_objects = _check_n_objects(obj.get("n_objects", len(query.bindings)), query, where)
    _check_chain(obj, where)
    if not isinstance(obj["id"], (str, int)) or isinstance(obj["id"], bool):
        raise DataError(f"{where}: id must be a string or an integer, got {obj['id']!r}")
    known = {"id", "n_objects", "subset", "chain_id", "chain_pos", "query", "candidates", "answer"}
    return MCQ(
        id=str(obj["id"]),
        n_objects=n_objects,
        subset=subset,
        chain_id=obj.get("chain_id"),
        chain_pos=obj.get("chain_pos"),
        query=query,
        candidates=candidates,
        answer=answer,
        extra={k: v for k, v in obj.items() if k not in known},
    )


@dataclass
class LoadReport:
    """What a reader kept and what it skipped (line number -> reason)."""

    path: str
    n_lines: int = 0
    n_loaded: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)

    def summary(self) -> str:
        s = f"{self.path}: loaded {self.n_loaded} of {self.n_loaded + len(self.skipped)} items"
        if self.skipped:
            first = "; ".join(f"line {n}: {r}" for n, r in self.skipped[:3])
            s += f", skipped {len(self.skipped)} ({first}{' ...' if len(self.skipped) > 3 else ''})"
        return s


def read_jsonl(path: str | Path) -> list[tuple[int, Any]]:
    """(line number, parsed object or :class:`DataError`) for each non-blank line.

    Reading is bounded (:func:`bindlab.data.files.iter_jsonl_bounded`): only regular files, a size cap and a line
    cap; a line that is not valid JSON, has NaN/Infinity, is nested too deeply or is not UTF-8 becomes a
    :class:`DataError` naming the file and line.
    """
    p = Path(path)
    if p.is_dir():
        raise DataError(f"{p} is a folder; give the .jsonl file inside it (e.g. {p / 'mcq.jsonl'})")
    return list(iter_jsonl_bounded(p))


def check_image_fields(path: str | Path, where: str, images: Iterable[str | None]) -> None:
    """Refuse image paths of one record that escape the folder of the data file ``path``."""
    named = [rel for rel in images if rel is not None]
    if named:
        base = Path(path).parent
        for rel in named:
            resolve_image_field(base, rel, where)


def load_records(
    path: str | Path,
    parse: Callable[[Any, str], Any],
    kind: str,
    strict: bool = True,
    images: Callable[[Any], Iterable[str | None]] | None = None,
) -> tuple[list[Any], LoadReport]:
    """Read a JSONL file of records with unique ``id`` fields, validating each line with ``parse``.

    Args:
        path: the JSONL file.
        parse: ``(parsed JSON, "file:line") -> record``; raises :class:`DataError` for a bad line.
        kind: what a record is called in messages ("question", "pair").
        strict: refuse the whole file on the first bad line (default); otherwise skip bad lines and report them.
        images: ``record -> image paths`` it names; each must stay inside the data file's folder.

    Returns:
        The records and a :class:`LoadReport`. Raises :class:`DataError` when strict and a line is bad, when ids
        repeat, or when nothing could be loaded.
    """
    from bindlab.config import held_limits

    with held_limits(), gc_paused():  # caps read once for the whole file; no GC passes over the rows being built
        return _load_records(path, parse, kind, strict, images)


def _load_records(
    path: str | Path,
    parse: Callable[[Any, str], Any],
    kind: str,
    strict: bool,
    images: Callable[[Any], Iterable[str | None]] | None,
) -> tuple[list[Any], LoadReport]:
    report = LoadReport(str(path))
    records: list[Any] = []
    seen: set[str] = set()
    from bindlab.config import LIMIT_ENV, limits

    cap = limits().max_questions  # the cap applies to what the file holds, not only to what a request asks for
    for n, obj in read_jsonl(path):
        report.n_lines += 1
        if len(records) >= cap:
            raise DataError(
                f"{path}: more than {cap:,} {kind}s, above the cap ({LIMIT_ENV['max_questions']}); "
                "split the file or use a smaller one"
            )
        try:
            if isinstance(obj, DataError):
                raise obj
            rec = parse(obj, f"{path}:{n}")
            if images is not None:
                check_image_fields(path, f"{path}:{n}", images(rec))
            if rec.id in seen:
                raise DataError(f"{path}:{n}: duplicate {kind} id {rec.id!r}")
            seen.add(rec.id)
            records.append(rec)
        except DataError as e:
            if strict:
                raise DataError(
                    f"{e} (refusing the file; fix the line or load with strict=False / --skip-bad)"
                ) from None
            report.skipped.append((n, str(e).split(": ", 1)[-1]))
    report.n_loaded = len(records)
    if not records:
        raise DataError(f"{path}: no valid {kind}s ({report.summary()})")
    return records, report


def load_mcqs(path: str | Path, strict: bool = True) -> tuple[list[MCQ], LoadReport]:
    """Read an MCQ JSONL file (see :func:`load_records` for the error rules)."""
    return load_records(path, mcq_from_json, "question", strict, images=mcq_images)


MEMO_FILES = 2  # MCQ files whose parsed questions load_mcqs_memo keeps (13,500 questions hold ~60 MB)
_MEMO: OrderedDict[tuple[Any, ...], tuple[list[MCQ], LoadReport]] = OrderedDict()
_MEMO_LOCK = threading.Lock()


def load_mcqs_memo(path: str | Path, strict: bool = True) -> tuple[list[MCQ], LoadReport]:
    """:func:`load_mcqs`, remembered in this process by what decides its answer: the file's bytes (sha256), its path
    as given and resolved, ``strict`` and the limits in force. A second run over an unchanged file (the Browse tab
    scoring again, a warm ``evaluate_mcq``) parses and validates nothing; a changed file is read afresh.

    The questions are shared between the calls that get them (each gets its own list and report): read them, never
    change them. The last :data:`MEMO_FILES` files are kept.
    """
    from bindlab.config import limits

    try:
        data = read_bytes_bounded(path)
    except (DataError, OSError):
        return load_mcqs(path, strict)  # a folder, a missing or oversized file: the loader's own message
    key = (str(path), str(Path(path).resolve()), hashlib.sha256(data).hexdigest(), strict, limits())
    del data
    with _MEMO_LOCK:
        hit = _MEMO.get(key)
        if hit is not None:
            _MEMO.move_to_end(key)
    if hit is None:
        hit = load_mcqs(path, strict)
        with _MEMO_LOCK:
            _MEMO[key] = hit
            while len(_MEMO) > MEMO_FILES:
                _MEMO.popitem(last=False)
    questions, report = hit
    return list(questions), replace(report, skipped=list(report.skipped))


def mcq_images(q: MCQ) -> list[str | None]:
    """The image paths a question names (query first, then the candidates)."""
    return [q.query.image] + [c.image for c in q.candidates]


def write_jsonl(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """Write rows as JSONL atomically (a per-process temp file, then rename: concurrent writers never collide)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    tmp.replace(p)


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes (dataset hash for provenance)."""
    h = hashlib.sha256()
    with open_regular(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


__all__ = [
    "MCQ",
    "Item",
    "DataError",
    "LoadReport",
    "load_mcqs",
    "load_mcqs_memo",
    "mcq_from_json",
    "write_jsonl",
    "read_jsonl",
    "file_sha256",
    "asdict",
    "check_image_fields",
    "mcq_images",
]
