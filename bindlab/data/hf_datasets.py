"""bindlab benchmarks as Hugging Face ``datasets`` folders, and back.

:func:`export_dataset` writes any bindlab set — SABER MCQs (with or without images), Pairs, triplets, a factor grid —
as a folder that ``datasets.load_dataset(DIR)`` opens and the Hub hosts: ``data/test-XXXXX-of-YYYYY.parquet`` shards
(images inside, as the ``Image`` feature: ``{bytes, path}``), a ``README.md`` dataset card whose YAML header the Hub
reads (license, task categories, size category, configs and splits, features), and the generator's own side files
(``meta.json``, ``holdout_vocab.json``) under ``bindlab/``. Each row keeps the original bindlab record as JSON in a
``record`` column next to readable columns (texts, answer, images), so the way back is lossless.

:func:`as_bindlab_path` is that way back, used wherever bindlab takes ``--data``: an exported folder (or ``hf:ORG/NAME``
on the Hub, fetched with ``huggingface_hub`` when it is reachable) is written out once as bindlab's own files under
``$BINDLAB_HOME/datasets/<content hash>/`` — the JSONL (or ``index.csv``) and its images at their original relative
paths — and that path is what the studies read, so a folder and its source JSONL give the same numbers.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bindlab.data.files import DataError, read_bytes_bounded, resolve_image_field
from bindlab.data.schema import file_sha256

# kind -> (the bindlab file it is read from / written back to, what it is)
KINDS: dict[str, tuple[str, str]] = {
    "mcq": ("mcq.jsonl", "SABER-style 4-way attribute–object binding multiple-choice questions"),
    "pairs": ("pairs.jsonl", "CompoSET-style single-edit image–caption pairs (Winoground-style 2x2)"),
    "triplets": ("triplets.jsonl", "text triplets (anchor, positive, binding-swapped negative) for finetuning"),
    "grid": ("index.csv", "a factor grid of rendered objects (shape x hue x pattern x context) for grounding"),
}
SIDE_FILES = ("meta.json", "holdout_vocab.json", "README.txt")  # generator files kept under bindlab/ in the export
SHARD_BYTES = 256 << 20  # at most ~256 MB of images per parquet shard
ROWS_PER_GROUP = 64
SPLIT = "test"
CITATION = """@software{bindlab,
  title  = {bindlab: a lab bench for attribute--object binding in vision--language embeddings},
  note   = {bindlab version VERSION},
}"""


# --- what a set is -----------------------------------------------------------------------------------------------------
def detect_kind(path: str | os.PathLike) -> tuple[str, Path]:
    """``(kind, data file)`` of a bindlab set given as its file or its folder.

    Raises:
        DataError: a path that is none of ``mcq.jsonl``, ``pairs.jsonl``, ``triplets.jsonl``, ``index.csv`` (or a
            folder holding one).
    """
    p = Path(path).expanduser()
    if p.is_dir():
        for kind, (name, _) in KINDS.items():
            if (p / name).is_file():
                return kind, p / name
        raise DataError(
            f"{p}: no bindlab set here; give a folder with one of "
            f"{', '.join(n for n, _ in KINDS.values())}, or that file"
        )
    for kind, (name, _) in KINDS.items():
        if p.name == name:
            return kind, p
    if p.suffix == ".jsonl":  # any JSONL: tell MCQs from pairs by their first record
        for _, rec in _records_jsonl(p):
            if "candidates" in rec and "query" in rec:
                return "mcq", p
            if "base" in rec and "foil" in rec:
                return "pairs", p
            if "positive" in rec and "negative" in rec:
                return "triplets", p
            break
    raise DataError(
        f"{p}: not a bindlab set; give an mcq.jsonl, pairs.jsonl, triplets.jsonl or a grid's index.csv "
        "(or the folder holding it)"
    )


def _validate(kind: str, path: Path) -> None:
    """The kind's own loader reads the whole file first, so an export never carries a record bindlab refuses."""
    if kind == "mcq":
        from bindlab.data.schema import load_mcqs

        load_mcqs(path)
    elif kind == "pairs":
        from bindlab.data.pairs_schema import load_pairs

        load_pairs(path)
    elif kind == "triplets":
        from bindlab.data.triplets.io import load_triplets

        load_triplets(path)
    else:
        from bindlab.data.factors import load_index

        load_index(path.parent)


def _records_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    from bindlab.data.files import iter_jsonl_bounded

    for n, rec in iter_jsonl_bounded(path):
        if isinstance(rec, DataError):
            raise rec
        if not isinstance(rec, dict):
            raise DataError(f"{path}:{n}: a record must be a JSON object")
        yield n, rec


def _records(kind: str, path: Path) -> Iterator[dict[str, Any]]:
    if kind == "grid":
        from bindlab.data.files import read_text_bounded

        yield from csv.DictReader(io.StringIO(read_text_bounded(path), newline=""))
        return
    for _, rec in _records_jsonl(path):
        yield rec


def image_fields(record: Any) -> list[str]:
    """Every image path a record names (any ``"image"`` key holding a string, depth-first, in order)."""
    out: list[str] = []
    if isinstance(record, dict):
        for key, value in record.items():
            if key == "image" and isinstance(value, str) and value.strip():
                out.append(value)
            else:
                out.extend(image_fields(value))
    elif isinstance(record, list):
        for value in record:
            out.extend(image_fields(value))
    return out


# --- readable columns per kind ----------------------------------------------------------------------------------------
def _columns(kind: str, rec: dict[str, Any], image: Any) -> dict[str, Any]:
    """The columns a person reads on the Hub (the ``record`` column keeps everything)."""
    if kind == "mcq":
        cands = rec.get("candidates") or []
        row = {
            "id": str(rec.get("id", "")),
            "n_objects": int(rec.get("n_objects") or 0),
            "subset": str(rec.get("subset") or ""),
            "query": str(rec["query"]["text"]),
            "candidates": [str(c["text"]) for c in cands],
            "answer": int(rec.get("answer", 0)),
            "candidate_roles": [str(c.get("role") or "") for c in cands],
        }
        if rec["query"].get("image"):
            row["query_image"] = image(rec["query"]["image"])
            row["candidate_images"] = [image(c["image"]) for c in cands]
        return row
    if kind == "pairs":
        row = {
            "id": str(rec.get("id", "")),
            "scene_id": str(rec.get("scene_id") or ""),
            "edit_type": str(rec.get("edit_type") or ""),
            "edit_category": str(rec.get("edit_category") or ""),
            "n_objects": int(rec.get("n_objects") or 0),
            "edit": str(rec.get("edit") or ""),
        }
        for side in ("base", "foil"):
            caps = rec[side].get("captions") or {}
            for level in ("short", "medium", "long"):
                row[f"{side}_{level}"] = str(caps.get(level) or "")
            row[f"{side}_image"] = image(rec[side]["image"])
        return row
    row = {k: v for k, v in rec.items() if isinstance(v, (str, int, float, bool)) and k != "image"}
    if kind == "grid":
        row["image"] = image(rec["image"])
    return row


# --- export --------------------------------------------------------------------------------------------------------------
def _feature(value: Any) -> dict[str, Any]:
    """The ``datasets`` feature of a column from one value (Image structs, lists, strings, numbers)."""
    if isinstance(value, dict) and set(value) == {"bytes", "path"}:
        return {"_type": "Image"}
    if isinstance(value, list):
        return {"_type": "List", "feature": _feature(value[0]) if value else {"dtype": "string", "_type": "Value"}}
    dtype = (
        "bool"
        if isinstance(value, bool)
        else "int64"
        if isinstance(value, int)
        else "float64"
        if isinstance(value, float)
        else "string"
    )
    return {"dtype": dtype, "_type": "Value"}


def _card_feature(name: str, feat: dict[str, Any]) -> dict[str, Any]:
    """A feature as the dataset card's ``dataset_info`` writes it."""
    if feat["_type"] == "Image":
        return {"name": name, "dtype": "image"}
    if feat["_type"] == "List":
        inner = feat["feature"]
        return {"name": name, "list": "image" if inner["_type"] == "Image" else inner["dtype"]}
    return {"name": name, "dtype": feat["dtype"]}


def _size_category(n: int) -> str:
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < bound:
            return label
    return "1M<n<10M"


def _task_categories(kind: str, has_images: bool) -> list[str]:
    if kind == "mcq":
        return ["multiple-choice", "sentence-similarity"] + (["image-to-text", "text-to-image"] if has_images else [])
    if kind == "pairs":
        return ["image-to-text", "text-to-image"]
    if kind == "triplets":
        return ["sentence-similarity"]
    return ["zero-shot-image-classification", "text-to-image"]


def _yaml(value: Any, indent: int = 0) -> str:
    """A small YAML writer for the card header (dicts, lists, scalars; strings JSON-quoted, which YAML reads)."""
    pad = " " * indent
    if isinstance(value, dict):
        lines = []
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{k}:\n{_yaml(v, indent + 2)}")
            else:
                lines.append(f"{pad}{k}: {_scalar(v)}")
        return "\n".join(lines)
    lines = []
    for item in value:
        if isinstance(item, dict):
            body = _yaml(item, indent + 2).lstrip()
            lines.append(f"{pad}- {body}")
        else:
            lines.append(f"{pad}- {_scalar(item)}")
    return "\n".join(lines)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (dict, list)):
        return "{}" if isinstance(v, dict) else "[]"
    return json.dumps(str(v), ensure_ascii=False)


def _write_parquet(kind: str, path: Path, folder: Path) -> tuple[dict[str, dict[str, Any]], int, int]:
    """Write the set's records as parquet shards of ``folder`` (made here; images embedded as bytes, row groups of
    :data:`ROWS_PER_GROUP`, a new shard past :data:`SHARD_BYTES` of images); returns ``(features, rows, arrow
    bytes)``.

    Raises:
        DataError: records of different shapes, or none.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    base = path.parent

    def image(rel: str) -> dict[str, Any]:
        return {"bytes": read_bytes_bounded(resolve_image_field(base, rel, str(path))), "path": rel}

    features: dict[str, dict[str, Any]] | None = None
    shards: list[Path] = []
    writer: Any = None
    batch: list[dict[str, Any]] = []
    shard_bytes = n_rows = arrow_bytes = 0
    schema: Any = None

    def flush() -> None:
        nonlocal writer, shard_bytes, batch, arrow_bytes
        if not batch:
            return
        if writer is None:
            shards.append(folder / f"shard-{len(shards):05d}.parquet")
            writer = pq.ParquetWriter(shards[-1], schema)
        table = pa.Table.from_pylist(batch, schema=schema)
        arrow_bytes += table.nbytes
        writer.write_table(table)
        batch = []
        if shard_bytes >= SHARD_BYTES:
            writer.close()
            writer, shard_bytes = None, 0

    for rec in _records(kind, path):
        row = {**_columns(kind, rec, image), "record": json.dumps(rec, ensure_ascii=False)}
        if features is None:
            features = {k: _feature(v) for k, v in row.items()}
            hf_meta = {"info": {"features": features}}
            schema = pa.Table.from_pylist([row]).schema.with_metadata({b"huggingface": json.dumps(hf_meta).encode()})
        elif list(row) != list(features):
            raise DataError(
                f"{path}: record {n_rows + 1} has other fields than the first (images on some "
                "records only?); a set's records must share one shape to export"
            )
        shard_bytes += sum(len(x["bytes"]) for x in _image_structs(row))
        batch.append(row)
        n_rows += 1
        if len(batch) >= ROWS_PER_GROUP:
            flush()
    flush()
    if writer is not None:
        writer.close()
    if not n_rows or features is None:
        raise DataError(f"{path}: no records to export")
    for i, shard in enumerate(shards):
        shard.rename(folder / f"{SPLIT}-{i:05d}-of-{len(shards):05d}.parquet")
    return features, n_rows, arrow_bytes


def export_dataset(data: str | os.PathLike, out: str | os.PathLike, name: str | None = None) -> Path:
    """Write the bindlab set ``data`` (file or folder) as a Hugging Face datasets folder ``out`` (see the module).

    Args:
        data: ``mcq.jsonl``, ``pairs.jsonl``, ``triplets.jsonl``, a grid's ``index.csv``, or the folder holding one.
        out: the folder to write (created; an earlier export there is replaced, anything else is refused).
        name: the card's title (default: the set's folder name).

    Returns:
        ``out``.

    Raises:
        DataError: not a bindlab set, a record bindlab's loader refuses, a missing image, or an ``out`` that holds
            other files.
    """

    from bindlab.config import __version__

    kind, path = detect_kind(data)
    _validate(kind, path)
    out = Path(out).expanduser()
    if out.exists() and any(out.iterdir()) and not (out / "README.md").is_file():
        raise DataError(f"{out}: the folder exists and holds other files; give a new or empty folder")
    if out.resolve() == path.parent.resolve() or path.parent.resolve() in out.resolve().parents:
        raise DataError(f"{out}: write the export outside the set's own folder ({path.parent})")
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=_parent(out)))  # renamed into place when complete
    try:
        base = path.parent
        features, n_rows, arrow_bytes = _write_parquet(kind, path, staging / "data")
        (staging / "bindlab").mkdir()
        meta: dict[str, Any] = {}
        for side in SIDE_FILES:
            if (base / side).is_file():
                shutil.copyfile(base / side, staging / "bindlab" / side)
        if (base / "meta.json").is_file():
            from bindlab.data.files import load_json_bounded

            meta = load_json_bounded(base / "meta.json", dict, "meta.json")
        (staging / "bindlab" / "export.json").write_text(
            json.dumps(
                {
                    "kind": kind,
                    "file": KINDS[kind][0],
                    "rows": n_rows,
                    "bindlab_version": __version__,
                    "source_sha256": file_sha256(path),
                },
                indent=2,
            )
        )
        has_images = any(
            f["_type"] == "Image" or f.get("feature", {}).get("_type") == "Image" for f in features.values()
        )
        (staging / "README.md").write_text(
            _card(kind, name or base.name, features, n_rows, arrow_bytes, has_images, meta, __version__),
            encoding="utf-8",
        )
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out


def _image_structs(row: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for value in row.values():
        items = value if isinstance(value, list) else [value]
        for v in items:
            if isinstance(v, dict) and set(v) == {"bytes", "path"}:
                yield v


def _generator_command(kind: str, meta: dict[str, Any]) -> str:
    """The command that regenerates the set, from its ``meta.json`` (empty when the set did not come from one)."""
    if kind == "mcq" and meta.get("generator") == "saber":
        sizes = meta.get("sizes") or [2, 10]
        cmd = (
            f"bindlab generate saber --out DIR --per-size {meta.get('per_size')} --sizes {sizes[0]}-{sizes[-1]} "
            f"--seed {meta.get('seed')} --template {meta.get('template', 'attributive')}"
        )
        if meta.get("images"):
            cmd += f" --images --size {meta['image_size']}" if "image_size" in meta else " --images (size not recorded)"
        return cmd + (" --vocab-from holdout_vocab.json" if meta.get("vocab_from") else "")
    if kind == "pairs" and "scenes" in meta:
        return (
            f"bindlab generate composet --out DIR --scenes {meta.get('scenes')} --foils-per-scene "
            f"{meta.get('foils_per_scene')} --seed {meta.get('seed')} --size {meta.get('size')}"
        )
    if kind == "triplets":
        return f"bindlab generate triplets --out DIR --seed {meta.get('seed')}" if "seed" in meta else ""
    return f"bindlab generate factors --out DIR --seed {meta.get('seed')}" if "seed" in meta else ""


USE = {
    "mcq": "`bindlab eval mcq --data FOLDER --model MODEL` or `bindlab.evaluate_mcq(model, data=FOLDER)`",
    "pairs": "`bindlab eval pairs --data FOLDER --model MODEL` or `bindlab.evaluate_pairs(model, data=FOLDER)`",
    "triplets": "`bindlab finetune --model minilm --data FOLDER` trains on it",
    "grid": "`bindlab ground --data FOLDER --model MODEL` or `bindlab.ground(model, data=FOLDER)`",
}
DESIGN = {
    "mcq": "SABER, *Stuck on Shuffle: On Attribute–Object Binding in Vision–Language Models*",
    "triplets": "SABER, *Stuck on Shuffle: On Attribute–Object Binding in Vision–Language Models* (its appendix B)",
    "pairs": "CompoSET, *CompoSET: A Controlled Single-Edit Benchmark for Vision-Language Compositionality*",
    "grid": "FactorAtlas, *Seeing Is Not Addressing: Auditing linguistic Access to Frozen Visual Geometry*",
}
LIMITS = {
    "mcq": "Synthetic scenes from a fixed template and a closed vocabulary: a model that fails here binds poorly, "
    "one that passes may still fail on natural captions. Accuracy is tie-aware; chance is 1/3 at N = 2 "
    "(three candidates can tie with a bag of words) and 1/4 above.",
    "pairs": "Rendered 2-D scenes, one edit per pair. CompoSET names six edit types (modify_color, swap_color, "
    "modify_material, swap_material, modify_transparency, modify_presence — here add_object / "
    "remove_object); the others are in a category the paper names, under bindlab's name, and each record's "
    "`edit_origin` says which (composet / bindlab). Captions "
    "come from templates.",
    "triplets": "Template sentences over a closed vocabulary; held-out words, templates and combinations are named "
    "by the split column.",
    "grid": "Rendered single objects; hue, pattern and shape are crossed with a nuisance context.",
}


_MD_PUNCT = re.compile(r"([\\`*_\[\]#!|~])")


def _md_plain(value: Any, limit: int = 300) -> str:
    """A value copied from a folder name or ``meta.json`` as plain Markdown text: one line, at most ``limit``
    characters, ``< > &`` as entities and Markdown's marks escaped, so it can never become a heading, a link, an
    image, a table or HTML on the Hub's page."""
    text = " ".join(str(value).split())[:limit]
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_PUNCT.sub(r"\\\1", text)


def _md_code(value: Any, limit: int = 2000) -> str:
    """A value shown in a code span: one line, no backtick (it would close the span), at most ``limit`` characters."""
    return "`" + " ".join(str(value).split())[:limit].replace("`", "'") + "`"


def _card(
    kind: str,
    title: str,
    features: dict[str, dict[str, Any]],
    n: int,
    n_bytes: int,
    has_images: bool,
    meta: dict[str, Any],
    version: str,
) -> str:
    header = {
        "license": "unknown",
        "pretty_name": f"{title} (bindlab {kind})",
        "task_categories": _task_categories(kind, has_images),
        "language": ["en"],
        "size_categories": [_size_category(n)],
        "tags": ["bindlab", "binding", "compositionality", "synthetic"],
        "configs": [{"config_name": "default", "data_files": [{"split": SPLIT, "path": f"data/{SPLIT}-*"}]}],
        "dataset_info": {
            "features": [_card_feature(k, f) for k, f in features.items()],
            "splits": [{"name": SPLIT, "num_bytes": n_bytes, "num_examples": n}],
        },
    }
    command = _generator_command(kind, meta)
    settings = {k: v for k, v in meta.items() if k not in ("bindlab_version",)}
    vocab = (
        "the renderable vocabulary (the words the renderer can draw)"
        if meta.get("images") or kind in ("pairs", "grid")
        else "bindlab's SABER vocabulary"
    )
    lines = [
        "---",
        _yaml(header),
        "---",
        "",
        f"# {_md_plain(title)}",
        "",
        f"{KINDS[kind][1]}: {n} rows, written by bindlab {version} (`bindlab export-dataset`).",
        "",
        "## Use",
        "",
        "```python",
        "import datasets",
        'ds = datasets.load_dataset("PATH_OR_ORG/NAME", split="test")',
        "```",
        "",
        f"bindlab reads the folder as it is: {USE[kind]}. The `record` column holds bindlab's original record "
        "(JSON); the other columns are readable copies.",
        "",
        "## How it was made",
        "",
        f"- Generator command: {_md_code(command)}" if command else "- Generator: not recorded (no meta.json).",
        f"- Seed: {_md_plain(meta.get('seed', 'not recorded'))}; template: "
        f"{_md_plain(meta.get('template', 'attributive' if kind == 'mcq' else 'see the records'))}; "
        f"vocabulary: {vocab}.",
        f"- Generator settings: {_md_code(json.dumps(settings, ensure_ascii=False))}" if settings else "",
        "",
        "## Known limits",
        "",
        LIMITS[kind],
        "",
        "## License",
        "",
        "Generated by bindlab from its own templates, vocabulary and renderer; no third-party text or images. "
        "The card says `license: unknown` until the bindlab repository states a license — set one before "
        "publishing on the Hub.",
        "",
        "## Citation",
        "",
        f"The design follows {DESIGN[kind]} (a preprint; the version bindlab worked from gives no authors, year or "
        "venue). Cite bindlab as:",
        "",
        "```bibtex",
        CITATION.replace("VERSION", version),
        "```",
        "",
    ]
    return "\n".join(x for x in lines if x is not None) + "\n"


# --- import ------------------------------------------------------------------------------------------------------------
def is_dataset_folder(path: str | os.PathLike) -> bool:
    """A folder written by :func:`export_dataset` (``bindlab/export.json`` and parquet under ``data/``)."""
    p = Path(path)
    return p.is_dir() and (p / "bindlab" / "export.json").is_file() and any((p / "data").glob("*.parquet"))


def _hub_folder(ref: str) -> Path:
    """``hf:ORG/NAME`` downloaded through ``huggingface_hub`` (its cache), or one sentence on why not."""
    repo = ref[3:].strip().strip("/")
    if repo.count("/") != 1 or any(not part or part in (".", "..") for part in repo.split("/")):
        raise DataError(f"{ref[:120]!r}: a Hub dataset id is hf:ORG/NAME")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=repo, repo_type="dataset"))
    except Exception as e:  # noqa: BLE001 - offline, unknown repo, no access: one sentence
        kind = type(e).__name__
        raise DataError(
            f"hf:{repo}: could not fetch the dataset from the Hugging Face Hub ({kind}); when this "
            "machine is offline, download the folder elsewhere (bindlab export-dataset or "
            "huggingface-cli download) and pass its path"
        ) from None


def as_bindlab_path(data: str | os.PathLike, kind: str | None = None) -> Path:
    """The path bindlab's loaders read for ``data``: a datasets folder (or ``hf:ORG/NAME``) becomes bindlab's own
    files under ``$BINDLAB_HOME/datasets/<hash>/`` (written once); a bindlab folder becomes its data file; anything
    else is returned as given.

    Args:
        data: a path or ``hf:ORG/NAME``.
        kind: what the caller reads (``mcq``, ``pairs``, ``captions``, ``triplets``, ``grid``); a folder of
            another kind is refused naming both.
    """
    text = os.fspath(data)
    if text.startswith("hf:") and not Path(text).exists():
        folder = _hub_folder(text)
    else:
        folder = Path(text).expanduser()
        if not is_dataset_folder(folder):
            return Path(text)
    return materialise(folder, kind)


IMPORTED = ".imported"  # inside an upload session's folder: the copies unpacked from its datasets folders


def _import_root(folder: Path) -> Path:
    """Where a datasets folder's bindlab copy goes: inside the upload session's own folder when the datasets folder
    was uploaded (so the copy is deleted with the session's uploads and swept with them), else
    ``$BINDLAB_HOME/datasets``."""
    from bindlab.config import home, uploads_root

    uploads = Path(os.path.realpath(uploads_root()))
    real = Path(os.path.realpath(folder))
    if uploads in real.parents:
        return uploads / real.relative_to(uploads).parts[0] / IMPORTED
    return home() / "datasets"


def materialise(folder: Path, kind: str | None = None) -> Path:
    """Write an exported folder back as bindlab files (once per content) and return the data file's path."""

    from bindlab.data.files import load_json_bounded

    info = load_json_bounded(folder / "bindlab" / "export.json", dict, "bindlab/export.json")
    found = str(info.get("kind"))
    if found not in KINDS:
        raise DataError(f"{folder}: bindlab/export.json names an unknown kind {found!r}")
    readable = {"captions": ("mcq", "triplets"), None: tuple(KINDS)}.get(kind, (kind,))
    if found not in readable:
        raise DataError(
            f"{folder}: this dataset holds {found} ({KINDS[found][0]}); here bindlab reads "
            f"{' or '.join(KINDS[k][0] for k in readable if k in KINDS)}"
        )
    shards = sorted((folder / "data").glob("*.parquet"))
    h = hashlib.sha256()
    for shard in shards:
        h.update(shard.name.encode())
        h.update(file_sha256(shard).encode())
    target = _import_root(folder) / h.hexdigest()[:20]
    data_file = target / KINDS[found][0]
    if data_file.is_file():
        return data_file
    budget = _check_shards(shards)  # rows and sizes from the metadata, before a value is decoded
    budget.charge_session(target.parent, folder.name)  # an upload's copy counts against its visitor's quota
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=_parent(target)))
    try:
        records: list[dict[str, Any]] = []
        for shard in shards:
            for row in _bounded_rows(shard, budget):
                rec = _record(row, shard, len(records) + 1, budget)
                structs = {s["path"]: s["bytes"] for s in _image_structs(row) if s.get("bytes") is not None}
                for rel in image_fields(rec):
                    dest = resolve_image_field(staging, rel, f"{shard.name}: record {len(records) + 1}")
                    if rel not in structs:
                        raise DataError(
                            f"{shard}: record {len(records) + 1} names image {rel!r}, which is not in its image columns"
                        )
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(structs[rel])
                records.append(rec)
        if not records:
            raise DataError(
                f"{folder}: its parquet shards hold no rows, so there is nothing to read; export a "
                "non-empty set (bindlab export-dataset)"
            )
        out = staging / KINDS[found][0]
        if found == "grid":
            with open(out, "w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=list(records[0]))
                w.writeheader()
                w.writerows(records)
        else:
            out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        for side in SIDE_FILES:
            if (folder / "bindlab" / side).is_file():
                shutil.copyfile(folder / "bindlab" / side, staging / side)
        (staging / "source.json").write_text(json.dumps({"dataset_folder": str(folder.resolve()), **info}, indent=2))
        try:
            staging.rename(target)
        except OSError:  # another process wrote it first: use theirs
            if not data_file.is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return data_file


class _Budget:
    """What a datasets folder may still decode: rows and bytes (records and images), from :func:`limits`."""

    def __init__(self) -> None:
        from bindlab.config import MIB, limits

        lim = limits()
        self.rows = lim.max_jsonl_lines
        self.bytes = lim.max_dataset_mb * MIB
        self.value = lim.max_value_mb * MIB
        self.images = lim.max_images_per_item
        self.used = 0
        self.quota_mb = lim.upload_quota_mb
        self.left: int | None = None  # bytes the upload's session may still hold (None: not an upload, or no quota)
        self.name = ""

    def charge_session(self, import_root: Path, name: str) -> None:
        """When the copy goes into an upload session's folder (``uploads/<session>/.imported``) and public mode's
        upload quota is on (``BINDLAB_UPLOAD_QUOTA_MB``): what the session's folder holds already (its uploads and
        earlier copies) is taken from the quota, and the copy's decoded bytes must fit in the rest."""
        if import_root.name != IMPORTED or not self.quota_mb:
            return
        self.left = max(0, self.quota_mb * (1 << 20) - folder_bytes(import_root.parent))
        self.name = name

    def spend(self, n: int, where: str) -> None:
        self.used += n
        if self.left is not None and self.used > self.left:
            raise DataError(
                f"{self.name}: unpacking this upload would take your uploads over the {self.quota_mb:,} MiB "
                f"quota (BINDLAB_UPLOAD_QUOTA_MB; {self.left / (1 << 20):,.1f} MiB left, unpacked copies "
                "included); nothing was kept — remove an upload or send a smaller set"
            )
        if self.used > self.bytes:
            raise DataError(
                f"{where}: the dataset decodes to more than {self.bytes // (1 << 20):,} MiB (records and "
                "images; BINDLAB_MAX_DATASET_MB); nothing was kept — split it, or raise the limit on your "
                "own machine"
            )


def folder_bytes(folder: Path) -> int:
    """Bytes of the regular files under ``folder`` (links not followed; 0 when it does not exist)."""
    total, stack = 0, [str(folder)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    total += e.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


BATCH_BYTES = 16 << 20  # decoded bytes one batch of rows may take at most (from the largest column chunk)


def _check_shards(shards: list[Path]) -> _Budget:
    """Refuse a folder whose shards' metadata already break the limits: more rows than ``max_jsonl_lines``, or column
    chunks larger (uncompressed) than ``max_dataset_mb`` in all. Reads no data page."""
    import pyarrow.parquet as pq

    budget = _Budget()
    rows = stored = 0
    for shard in shards:
        try:
            meta = pq.ParquetFile(shard).metadata
        except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds for a damaged file
            raise DataError(f"{shard}: not a readable parquet file ({type(e).__name__}); re-export the set") from None
        rows += meta.num_rows
        stored += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if rows > budget.rows:
        raise DataError(
            f"{shards[0].parent}: {rows:,} rows, more than the {budget.rows:,} a data file may hold "
            "(BINDLAB_MAX_JSONL_LINES)"
        )
    if stored > budget.bytes:
        raise DataError(
            f"{shards[0].parent}: {stored / (1 << 20):,.0f} MiB of column data, more than the "
            f"{budget.bytes // (1 << 20):,} MiB a datasets folder may hold (BINDLAB_MAX_DATASET_MB)"
        )
    return budget


def _bounded_rows(shard: Path, budget: _Budget) -> Iterator[dict[str, Any]]:
    """The shard's rows, decoded a few at a time: a batch is sized from the shard's largest column chunk so that it
    stays under :data:`BATCH_BYTES`, and every batch's decoded bytes are spent from ``budget`` before its rows are
    turned into Python objects (a dictionary-encoded 1 MiB value repeated over 1,000 rows is 1,000 MiB here)."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(shard)
    if "record" not in pf.schema_arrow.names:
        raise DataError(f"{shard}: no 'record' column; bindlab reads datasets it exported (bindlab export-dataset)")
    meta = pf.metadata
    largest = max(
        (
            meta.row_group(i).column(j).total_uncompressed_size
            for i in range(meta.num_row_groups)
            for j in range(meta.num_columns)
        ),
        default=1,
    )
    if largest > budget.bytes:
        raise DataError(
            f"{shard}: one column chunk decodes to {largest / (1 << 20):,.0f} MiB, more than a datasets "
            f"folder may hold ({budget.bytes // (1 << 20):,} MiB, BINDLAB_MAX_DATASET_MB)"
        )
    for batch in pf.iter_batches(batch_size=max(1, min(256, BATCH_BYTES // max(largest, 1)))):
        budget.spend(_decoded_nbytes(batch), str(shard))
        yield from batch.to_pylist()


def _decoded_nbytes(batch: Any) -> int:
    """Bytes ``batch`` takes once its dictionary-encoded columns are decoded (a dictionary array's own ``nbytes``
    counts a value repeated over its rows once; turned into Python objects, every row holds its own copy)."""
    import pyarrow as pa

    return sum((c.dictionary_decode() if pa.types.is_dictionary(c.type) else c).nbytes for c in batch.columns)


def _record(row: dict[str, Any], shard: Path, number: int, budget: _Budget) -> dict[str, Any]:
    """Row ``number``'s ``record`` JSON, within the value and depth limits, naming at most ``max_images_per_item``
    images each within the value limit."""
    from bindlab.data.files import parse_json

    where = f"{shard}: record {number}"
    raw = row.get("record")
    if not isinstance(raw, (str, bytes)):
        raise DataError(f"{where}: 'record' is {type(raw).__name__}, not JSON text; bindlab reads datasets it exported")
    if len(raw) > budget.value:
        raise DataError(
            f"{where}: {len(raw) / (1 << 20):,.1f} MiB of JSON, more than one value may hold "
            f"({budget.value // (1 << 20):,} MiB, BINDLAB_MAX_VALUE_MB)"
        )
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    rec = parse_json(text, where)  # refuses bad JSON, NaN and too deep a nesting, naming the shard and record
    if not isinstance(rec, dict):
        raise DataError(f"{where}: 'record' is a JSON {type(rec).__name__}, not an object")
    images = [s for s in _image_structs(row) if s.get("bytes") is not None]
    if len(images) > budget.images:
        raise DataError(
            f"{where}: {len(images)} images, more than one item may carry ({budget.images}, "
            "BINDLAB_MAX_IMAGES_PER_ITEM)"
        )
    for s in images:
        if len(s["bytes"]) > budget.value:
            raise DataError(
                f"{where}: an image of {len(s['bytes']) / (1 << 20):,.1f} MiB, more than one value may "
                f"hold ({budget.value // (1 << 20):,} MiB, BINDLAB_MAX_VALUE_MB)"
            )
    return rec


def _parent(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    return target.parent
