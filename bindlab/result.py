"""The one result shape every study returns (as sentence-transformers' evaluators share one with a primary metric).

A :class:`Result` prints as a few lines (what it measured, on which model and data, the headline with its 95 %
interval and chance), writes its rows as CSV (:meth:`Result.to_csv`) and travels as one JSON file
(:meth:`Result.save` / :meth:`Result.load`): strict JSON, every field kept, NaN and infinities written as
``{"$float": "NaN"}`` so they come back as floats (JSON itself has no NaN).

Result files (``"format"``: :data:`RESULT_FILE_FORMAT`) are read back by :meth:`Result.load`, which also reads the
two older kinds of file: what ``--out`` writes (:meth:`Result.to_json`: the summary only, loaded with a note saying so)
and the compare cache's entries of before the format (every field, no ``"format"`` key).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The version of a saved result file (Result.save); bumped when its layout changes, with a migration in _from_file.
# 1: {"format", "kind", "feature", "summary", "rows", "figures_data", "provenance", "primary_metric", "tables",
# "notes"}, non-finite floats as {"$float": "NaN" | "Infinity" | "-Infinity"}, numpy arrays as {"$ndarray", "dtype"}.
RESULT_FILE_FORMAT = 1
RESULT_FILE_KIND = "bindlab-result"
SUMMARY_ONLY_NOTE = (
    "loaded from a summary-only file (what --out / Result.to_json writes): no per-item rows, tables "
    "or figure data; save the Result itself (Result.save) to keep them"
)
_FIELDS = ("feature", "summary", "rows", "figures_data", "provenance", "primary_metric", "tables", "notes")
_OUT_KEYS = ("primary_metric", "notes", "provenance")  # the keys to_json adds to the summary's
# The study of an --out file whose provenance does not name it (settings.kind), by its primary metric.
_FEATURE_BY_PRIMARY = {
    "accuracy": "mcq",
    "map": "retrieval",
    "group": "pairs",
    "top_score": "compare",
    "peak_margin": "attention",
    "grounded_macro_map": "grounding",
    "native_value": "benchmark",
    "full_signal_gain": "grounding-sweep",
    "final_loss": "toy-train",
}


@dataclass(repr=False)
class Result:
    """What a study produced, as plain JSON-ready data.

    Attributes:
        feature: the study's name, e.g. ``"browse"``, ``"pairs"`` (selects the figure builders in present/).
        summary: the headline numbers and settings, JSON-ready (what ``--out`` writes besides provenance).
        rows: per-item rows (one per question, pair, caption, point …): what ``--per-item`` writes.
        figures_data: plain data the present/ figure builders draw (no plotly objects here).
        provenance: bindlab version, encoder id + fingerprint, dataset path + sha256, seed, settings.
        primary_metric: the key of ``summary`` that a leaderboard sorts by, e.g. ``"accuracy"``.
        tables: named tables (lists of row dicts) a face shows or exports.
        notes: things the reader should know (skipped lines, conversions, caps hit).
    """

    feature: str
    summary: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    figures_data: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    primary_metric: str = ""
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def primary(self) -> Any:
        """The value of the primary metric (``None`` when the study has none)."""
        return self.summary.get(self.primary_metric) if self.primary_metric else None

    def __repr__(self) -> str:
        """A few lines: the study, the headline with its 95 % interval and chance, the model, the data, the rows and
        tables, the notes (``res.summary`` and the rest hold every number)."""
        return "\n".join(describe(self))

    __str__ = __repr__

    def to_pandas(self, table: str | None = None) -> Any:
        """The per-item rows as a ``pandas.DataFrame`` (one row per question, pair, caption …), or with ``table``
        one of :attr:`tables` (e.g. ``"accuracy_by_n"``).

        Raises:
            KeyError: a table name this result does not have, listing the ones it has.
        """
        import pandas as pd

        return pd.DataFrame(self._table(table))

    def frames(self) -> dict[str, Any]:
        """Every table of :attr:`tables` as a ``pandas.DataFrame``, by name."""
        return {name: self.to_pandas(name) for name in self.tables}

    def to_csv(self, path: str | Path | None = None, table: str | None = None) -> str | Path:
        """The per-item rows (or with ``table`` one of :attr:`tables`) as CSV: a header of every column, one line per
        row; a list or dict cell (a question's scores, a model's credits) is written as JSON, a missing one empty.

        Args:
            path: the file to write (its folder is made); None returns the text instead.
            table: a name of :attr:`tables`; None = :attr:`rows`.

        Returns:
            The CSV text when ``path`` is None, else the path written.

        Raises:
            KeyError: a table name this result does not have, listing the ones it has.
        """
        import pandas as pd

        rows = [{k: _csv_cell(v) for k, v in r.items()} for r in self._table(table)]
        text = pd.DataFrame(rows).to_csv(index=False, lineterminator="\n")
        if path is None:
            return text
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def _table(self, table: str | None) -> list[dict[str, Any]]:
        if table is None:
            return self.rows
        if table not in self.tables:
            raise KeyError(f"{self.feature} result has no table {table!r}; it has {sorted(self.tables) or 'none'}")
        return self.tables[table]

    def to_json(self) -> dict[str, Any]:
        """The ``--out`` file's content: the summary, the primary metric's name, notes and provenance (no rows,
        tables or figure data: :meth:`save` writes everything)."""
        return {
            **self.summary,
            "primary_metric": self.primary_metric,
            "notes": self.notes,
            "provenance": self.provenance,
        }

    def save(self, path: str | Path) -> Path:
        """Write the whole result (every field) to ``path`` as one JSON file that :meth:`load` reads back equal:
        ``{"format": RESULT_FILE_FORMAT, "kind": "bindlab-result", "feature", "summary", "rows", …}``. Written
        atomically (temp file + rename); the folder is made. Tuples come back as lists.

        Raises:
            TypeError: a value JSON cannot hold (neither plain data, a path nor a numpy array), naming where it is.
        """
        path = Path(path)
        doc = {
            "format": RESULT_FILE_FORMAT,
            "kind": RESULT_FILE_KIND,
            **{name: _encode(getattr(self, name), name) for name in _FIELDS},
        }
        text = json.dumps(doc, allow_nan=False, ensure_ascii=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Result:
        """A result from a file :meth:`save` wrote — or from an older kind of file: an ``--out`` file
        (:meth:`to_json`; loaded as a summary-only result with a note saying so) or a compare cache entry.

        Raises:
            FileNotFoundError: no such file.
            ValueError: not JSON, not a bindlab result, or a format newer than this bindlab reads.
        """
        path = Path(path)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"), object_hook=_decode_object)
        except UnicodeDecodeError as e:
            raise ValueError(f"{path} is not a bindlab result file: not UTF-8 text ({e.reason})") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not a bindlab result file: not JSON ({e.msg} at line {e.lineno})") from None
        return _from_file(doc, path)


# --- files ---------------------------------------------------------------------------------------------------------
def _from_file(doc: Any, path: Path) -> Result:
    """The :class:`Result` a decoded file holds, by its kind (see the module docstring)."""
    if not isinstance(doc, dict):
        raise ValueError(f"{path} is not a bindlab result file: it holds a JSON {type(doc).__name__}, not an object")
    if "format" in doc and "feature" in doc:
        fmt = doc["format"]
        if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt < 1:
            raise ValueError(f"{path}: result file format {fmt!r} is not a version number")
        if fmt > RESULT_FILE_FORMAT:
            raise ValueError(
                f"{path} is a result file of format {fmt}, newer than this bindlab reads (up to "
                f"{RESULT_FILE_FORMAT}): upgrade bindlab (pip install -U bindlab) to load it"
            )
        return _checked({name: doc[name] for name in _FIELDS if name in doc}, path)
    if {"feature", "summary", "rows"} <= doc.keys() and set(doc) <= set(_FIELDS):  # a compare cache entry
        return _checked(doc, path)
    if set(_OUT_KEYS) <= doc.keys() and "feature" not in doc:  # an --out file: to_json's summary-only record
        summary = {k: v for k, v in doc.items() if k not in _OUT_KEYS}
        prov = doc["provenance"] if isinstance(doc["provenance"], dict) else {}
        primary = str(doc["primary_metric"] or "")
        settings = prov.get("settings") if isinstance(prov.get("settings"), dict) else {}
        feature = settings.get("kind") or _FEATURE_BY_PRIMARY.get(primary, "")
        notes = [*(doc["notes"] or []), SUMMARY_ONLY_NOTE]
        return Result(str(feature), summary, provenance=prov, primary_metric=primary, notes=notes)
    raise ValueError(
        f"{path} is not a bindlab result file: expected a file from Result.save (keys format, feature, "
        f"summary, …) or from --out (keys primary_metric, notes, provenance); it has keys "
        f"{sorted(doc)[:8]}"
    )


def _checked(fields: dict[str, Any], path: Path) -> Result:
    """``Result(**fields)`` after checking each field's type, so a damaged file fails here and not in a figure."""
    kinds = {
        "feature": str,
        "summary": dict,
        "rows": list,
        "figures_data": dict,
        "provenance": dict,
        "primary_metric": str,
        "tables": dict,
        "notes": list,
    }
    for name, value in fields.items():
        if not isinstance(value, kinds[name]):
            raise ValueError(
                f"{path}: the result's {name} is a {type(value).__name__}, not a "
                f"{kinds[name].__name__}: the file is damaged or not a bindlab result"
            )
    return Result(**fields)


def _encode(value: Any, where: str) -> Any:
    """``value`` as strict-JSON data: non-finite floats and numpy arrays tagged (see :data:`RESULT_FILE_FORMAT`)."""
    if isinstance(value, float):
        return (
            value if math.isfinite(value) else {"$float": repr(value).replace("nan", "NaN").replace("inf", "Infinity")}
        )
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, dict):
        return {str(k): _encode(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encode({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, where)
    kind = type(value).__module__.split(".")[0]
    if kind == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            return {"$ndarray": _encode(value.tolist(), where), "dtype": str(value.dtype)}
        if isinstance(value, np.generic):
            return _encode(value.item(), where)
    raise TypeError(
        f"Result.save: {where} is a {type(value).__name__}, which a result file cannot hold (plain "
        "data, paths and numpy arrays only)"
    )


def _decode_object(obj: dict[str, Any]) -> Any:
    """json's object_hook: the tagged values of :func:`_encode` back as floats and numpy arrays."""
    if len(obj) == 1 and isinstance(obj.get("$float"), str):
        return float(obj["$float"])
    if set(obj) == {"$ndarray", "dtype"}:
        import numpy as np

        return np.asarray(obj["$ndarray"], dtype=obj["dtype"])
    return obj


def _csv_cell(value: Any) -> Any:
    if isinstance(value, dict | list | tuple):
        return json.dumps(_encode(value, "cell"), ensure_ascii=False)
    return value


# --- the short description (repr) ------------------------------------------------------------------------------------
def describe(result: Result, width: int = 100) -> list[str]:
    """The lines of ``repr(result)``: never more than 12, whatever the study (and never an error: a field it cannot
    read is left out)."""
    lines = [f"bindlab.Result: {_study(result)}", f"  {_headline_text(result)}"]
    models = _models(result)
    lines += [
        f"  {label}: {text}"
        for label, text in (("models" if ", " in models else "model", models), ("data", _data(result)))
        if text
    ]
    tables = ", ".join(f"{name} ({len(rows)})" for name, rows in result.tables.items()) or "none"
    lines += textwrap.wrap(
        f"rows: {len(result.rows)} · tables: {tables}",
        width,
        initial_indent="  ",
        subsequent_indent="    ",
        max_lines=3,
        placeholder=" …",
    )
    notes = f"notes: {len(result.notes)}"
    if result.notes:
        notes += f" (res.notes), first: {result.notes[0]}"
    lines += textwrap.wrap(notes, width, initial_indent="  ", max_lines=1, placeholder=" …")
    lines.append("  res.summary · res.to_pandas() · res.frames() · res.to_csv() · res.save(path) · bindlab.plot(res)")
    return lines


def _study(result: Result) -> str:
    s = result.summary
    try:
        if result.feature == "benchmark":
            return f"benchmark {s.get('benchmark', '?')}" + (f", task {s['task']}" if s.get("task") else "")
        if result.feature == "compare":
            return f"compare ({', '.join(map(str, s.get('suite') or []))})"
        if result.feature in ("mcq", "retrieval"):
            return f"{result.feature}, pairings {', '.join(s.get('pairings') or [])}"
    except (TypeError, AttributeError):
        pass
    return result.feature or "(unknown study)"


def _num(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.3f}" if math.isfinite(value) and abs(value) < 1000 else f"{value:.4g}"


def headline(result: Result) -> dict[str, Any]:
    """The result's headline: ``{"label", "value", "ci95": [lo, hi] or None, "chance": float or None, "n", "extra":
    other numbers worth a glance or ""}``, read from where each study keeps them (the primary metric alone when it
    keeps no interval)."""
    s, out = (
        result.summary,
        {
            "label": result.primary_metric or "primary",
            "value": result.primary,
            "ci95": None,
            "chance": None,
            "n": None,
            "extra": "",
        },
    )
    try:
        out.update(_HEADLINES.get(result.feature, _generic)(result, s))
    except (KeyError, TypeError, IndexError, ValueError, AttributeError, StopIteration):
        out.update(_generic(result, s))
    return out


def _generic(result: Result, s: dict[str, Any]) -> dict[str, Any]:
    ci = s.get(f"{result.primary_metric}_ci95") or s.get("ci95")
    chance = s.get("chance")
    return {
        "ci95": ci if isinstance(ci, list) and len(ci) == 2 else None,
        "chance": chance if isinstance(chance, int | float) else None,
        "n": s.get("n"),
    }


def _mcq(result: Result, s: dict[str, Any]) -> dict[str, Any]:
    b = s["pairings"][s["pairing"]]
    return {"label": f"accuracy ({s['pairing']})", "ci95": b["ci95"], "chance": b.get("chance"), "n": b["n"]}


def _retrieval(result: Result, s: dict[str, Any]) -> dict[str, Any]:
    b = s["pairings"][s["pairing"]]
    return {"label": f"mAP ({s['pairing']})", "n": b["n_queries"], "extra": f"R@1 {_num(b['r@1'])}"}


def _pairs(result: Result, s: dict[str, Any]) -> dict[str, Any]:
    o = s["overall"]
    return {
        "label": "Group",
        "ci95": o["group_ci95"],
        "chance": o["chance"]["group"],
        "n": s.get("n_pairs", o["n"]),
        "extra": f"I2T {_num(o['i2t'])}, T2I {_num(o['t2i'])}",
    }


def _compare(result: Result, s: dict[str, Any]) -> dict[str, Any]:
    """The top of the leaderboard, named the leader only when the study names it (a clear lead)."""
    column, top = s["sort_by"], s["leaderboard"][0]
    label = (
        f"{column} of the leader, {top['model']}"
        if s.get("leader") == top["model"]
        else f"{column} of the top model, {top['model']} (no clear leader)"
    )
    row = next(
        (r for r in result.tables.get("scores", []) if r["model"] == top["model"] and r["column"] == column), None
    )
    if row is None:  # a summary-only result: the leaderboard row has the interval
        return {"label": label, "ci95": top.get(f"{column} 95% CI")}
    return {"label": label, "ci95": [row["ci95_low"], row["ci95_high"]], "chance": row.get("chance"), "n": row.get("n")}


def _benchmark(result: Result, s: dict[str, Any]) -> dict[str, Any]:
    return {"label": s["native_metric"]["name"], "ci95": s["native_ci95"], "chance": s["chance"], "n": s["n"]}


def _attention(result: Result, s: dict[str, Any]) -> dict[str, Any]:
    i = s["layers"].index(s["peak_layer"])
    return {
        "label": f"peak margin (layer {s['peak_layer']})",
        "ci95": [s["ci_low"][i], s["ci_high"][i]],
        "n": s["n_captions"],
    }


def _grounding(result: Result, s: dict[str, Any]) -> dict[str, Any]:
    return {
        "label": "grounded macro-mAP",
        "extra": f"native {_num(s['native_macro_map'])}, factors {', '.join(s['factors'])}",
    }


_HEADLINES = {
    "mcq": _mcq,
    "retrieval": _retrieval,
    "pairs": _pairs,
    "compare": _compare,
    "benchmark": _benchmark,
    "attention": _attention,
    "grounding": _grounding,
}


def _headline_text(result: Result) -> str:
    h = headline(result)
    if h["value"] is None:
        return "headline: none (this study has no primary metric; see res.summary)"
    text = f"{h['label']}: {_num(h['value'])}"
    ci = h["ci95"]
    if isinstance(ci, list | tuple) and len(ci) == 2:
        text += f", 95% CI [{_num(ci[0])}, {_num(ci[1])}]"
    if h["chance"] is not None:
        text += f", chance {_num(h['chance'])}"
    if h["n"] is not None:
        text += f", n = {h['n']}"
    return text + (f"; {h['extra']}" if h["extra"] else "")


def _models(result: Result) -> str:
    p, s = result.provenance, result.summary
    encoders = p.get("encoders") or ([p["encoder"]] if isinstance(p.get("encoder"), dict) else [])
    ids = [str(e.get("id")) for e in encoders if isinstance(e, dict)] or [str(m) for m in s.get("models") or []]
    if not ids and s.get("model"):
        ids = [str(s["model"])]
    shown = ", ".join(ids[:4]) + (f" +{len(ids) - 4} more" if len(ids) > 4 else "")
    if len(encoders) == 1 and isinstance(encoders[0], dict) and encoders[0].get("fingerprint"):
        shown += f" (fingerprint {encoders[0]['fingerprint']})"
    return shown


def _data(result: Result) -> str:
    d = result.provenance.get("dataset")
    path = d.get("path") if isinstance(d, dict) else result.summary.get("data")
    if not path:
        return ""
    path = str(path)
    if len(path) > 60:
        path = "…/" + "/".join(Path(path).parts[-2:])
    sha = d.get("sha256") if isinstance(d, dict) else None
    return path + (f" (sha256 {sha[:12]})" if sha else "")
