"""Exports: every result as files that open in the tools people use. The app's *Download* panels and the CLI's
``--export DIR`` both write through here, so they produce the same files.

Formats (``<stem>`` is ``<view>_<name>``, e.g. ``mcq_accuracy_by_n``):

- ``<stem>.csv`` — a table: one header row, plain columns, no index, no comment lines, so ``pandas.read_csv``
  reads it unchanged. Nested values are flattened: a dict becomes dotted columns (``scores.c0_i0``), a list
  becomes JSON text. The CSV carries no provenance; its JSON twin does.
- ``<stem>.json`` — the same table: ``{"provenance": {...}, "columns": [...], "rows": [{column: value}, ...]}``,
  with the same (flattened) rows as the CSV; NaN is written as null.
- ``<stem>.jsonl`` — per-item results, one JSON object per line, nested as the backend made them (the same rows as
  ``--per-item``).
- ``<stem>.png`` (2x scale), ``<stem>.svg`` — a figure as an image, rendered by kaleido in a headless
  Chrome/Chromium: ``$BROWSER_PATH`` if set (kaleido's own variable), else ``chromium`` / ``google-chrome`` on the
  PATH (Debian: ``apt-get install chromium``). Without one, the HTML is still written and a note says why the
  images are missing.
- ``<stem>.html`` — the interactive figure, standalone: plotly.js is inlined, so it opens offline.
- ``provenance.json`` — in every export folder: the provenance record and the list of files written.
- ``README.txt`` — with ``bundle=True``: one line per file saying what it is (and, for a main-files download, what
  was left out and how to get it).
- ``<view>_all.zip`` — with ``bundle=True`` (the app's *Download* panels): every file above in one zip, offered beside
  the single files, so one click takes the whole download.

Main files (``main=True``, the app panels' default): only the view's main tables, figures and item sets
(:attr:`ResultView.main`), each once — a table as CSV (JSON when CSV is not ticked), a figure as interactive HTML (else
PNG, else SVG), item sets as JSONL — so a first download is a handful of files, not every table in every format.

Links: an export never writes through a symbolic link. Each file is written to a fresh temporary file in its folder
(created exclusively, so never a planted link) and moved onto its name with ``os.replace``, which replaces the name
itself; and a name that already is a link is refused with a message before anything is written
(:func:`check_no_links`), so a link planted in an export folder (``DIR/mcq_summary.csv -> /etc/...``) leaves its
target untouched.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindlab.present.safe_text import plot_text
from bindlab.result import Result

TABLE_FORMATS = ("csv", "json")
FIGURE_FORMATS = ("png", "svg", "html")
ITEM_FORMATS = ("jsonl",)
FORMATS = (*TABLE_FORMATS, *ITEM_FORMATS, *FIGURE_FORMATS)
README = "README.txt"
FORMAT_NOTES = {
    "csv": "a table: one header row, opens in a spreadsheet or pandas.read_csv",
    "json": "the same table as JSON, with the provenance record",
    "jsonl": "per-item rows, one JSON object per line",
    "html": "an interactive chart, standalone: opens offline in a browser",
    "png": "the chart as a PNG image",
    "svg": "the chart as an SVG image",
}
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
IMAGE_TIMEOUT_S = 90  # per image, kaleido's own limit


@dataclass
class ResultView:
    """What one results view exports.

    Attributes:
        name: file prefix, e.g. ``mcq``, ``pairs``.
        tables: ``{name: DataFrame or list of dict rows}`` -> CSV + JSON.
        figures: ``{name: plotly Figure}`` -> PNG + SVG + HTML.
        items: ``{name: per-item rows}`` -> JSONL.
        main: the names (of tables, figures or item sets) a main-files download holds; empty: the first table, the
            first figure and every item set.
        about: ``{name: what it is}``, one line each, for ``README.txt``.
    """

    name: str
    tables: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    main: tuple[str, ...] = ()
    about: dict[str, str] = field(default_factory=dict)


@dataclass
class Written:
    """Files written, and notes on what could not be (e.g. PNG/SVG without a browser)."""

    paths: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def extend(self, other: Written) -> None:
        self.paths += other.paths
        self.notes += other.notes


# --- never through a link -------------------------------------------------------------------------------------------
def check_no_links(paths: Iterable[str | Path]) -> None:
    """Refuse, before anything is written, an output name that is a symbolic link (to anywhere).

    Raises:
        ValueError: naming the link and its target.
    """
    for path in paths:
        if os.path.islink(path):
            raise ValueError(
                f"refusing to write {path}: it is a symbolic link (to {os.readlink(path)}); an export "
                "never writes through a link: remove it or choose another folder"
            )


@contextmanager
def _replacing(path: str | Path) -> Iterator[Path]:
    """A fresh temporary file beside ``path`` to write, moved onto ``path`` when the block succeeds.

    The temporary file is created exclusively (``mkstemp``: never an existing name, never a link) and ``os.replace``
    swaps the name itself, so a link at ``path`` is replaced, never followed; ``path`` being a link already is
    refused (:func:`check_no_links`). A failed block leaves no temporary file behind.
    """
    path = Path(path)
    check_no_links([path])
    tmp = _temp_beside(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _temp_beside(path: Path) -> Path:
    """A new empty file in ``path``'s folder, created exclusively (never an existing name, never a link)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part" + path.suffix)
    os.close(fd)
    return Path(tmp)


# --- plain values -----------------------------------------------------------------------------------------------
def _plain(v: Any) -> Any:
    """JSON-ready copy: numpy scalars/arrays to Python, NaN/inf to None, paths and other objects to str."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):  # numpy scalar or array
        return _plain(v.tolist())
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if v is None or isinstance(v, (bool, int, str)):
        return v
    return str(v)


def flatten_row(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """One flat table row: nested dicts become dotted keys, lists become JSON text, values become plain."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten_row(v, key + "."))
        elif isinstance(v, (list, tuple)) or (hasattr(v, "tolist") and getattr(v, "ndim", 0) > 0):
            out[key] = json.dumps(_plain(v), ensure_ascii=False)
        else:
            out[key] = _plain(v)
    return out


def table_rows(table: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """``(columns, flat rows)`` of a DataFrame or a list of dict rows (columns in first-seen order)."""
    if hasattr(table, "to_dict") and hasattr(table, "columns"):
        table = table.to_dict(orient="records")
    if not isinstance(table, (list, tuple)) or not all(isinstance(r, dict) for r in table):
        raise ValueError(f"a table must be a pandas DataFrame or a list of dict rows, got {type(table).__name__}")
    rows = [flatten_row(r) for r in table]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return columns, rows


# --- one way to write each kind ------------------------------------------------------------------------------
def write_table(table: Any, path_stem: str | Path, provenance: dict[str, Any]) -> list[Path]:
    """Write a table as ``<stem>.csv`` (plain columns) and ``<stem>.json`` (provenance + the same rows).

    Args:
        table: a DataFrame or a list of dict rows; nested values are flattened (see :func:`flatten_row`).
        path_stem: path without suffix.
        provenance: the :func:`bindlab.provenance.provenance` record of the result.

    Returns:
        ``[csv path, json path]``.
    """
    return _write_table(table, path_stem, provenance, TABLE_FORMATS)


def _write_table(table: Any, path_stem: str | Path, provenance: dict[str, Any], formats: Iterable[str]) -> list[Path]:
    import pandas as pd

    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    columns, rows = table_rows(table)
    out = []
    if "csv" in formats:
        csv = stem.with_name(stem.name + ".csv")
        with _replacing(csv) as tmp:
            pd.DataFrame(rows, columns=columns).to_csv(tmp, index=False)
        out.append(csv)
    if "json" in formats:
        js = stem.with_name(stem.name + ".json")
        with _replacing(js) as tmp:
            tmp.write_text(
                json.dumps(
                    {"provenance": _plain(provenance), "columns": columns, "rows": rows}, indent=1, ensure_ascii=False
                ),
                encoding="utf-8",
            )
        out.append(js)
    return out


def write_jsonl(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write per-item rows as JSONL, one JSON object per line (as :func:`bindlab.data.schema.write_jsonl` writes
    them), atomically and never through a link."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _replacing(path) as tmp, tmp.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(_plain(r), ensure_ascii=False) + "\n")
    return path


def write_figure(fig: Any, path_stem: str | Path, formats: Iterable[str] = FIGURE_FORMATS) -> Written:
    """Write a plotly figure as ``<stem>.png``, ``<stem>.svg`` and standalone ``<stem>.html``.

    Returns:
        :class:`Written`; when PNG/SVG cannot be rendered (no Chromium, no kaleido) the HTML is still written and
        ``notes`` says why.
    """
    return write_figures({Path(path_stem): fig}, formats)


def write_figures(figures: dict[Path, Any], formats: Iterable[str] = FIGURE_FORMATS) -> Written:
    """Write several figures (``{path stem: figure}``) with one browser start for all their PNG/SVG files."""
    formats = [f for f in FIGURE_FORMATS if f in set(formats)]
    out = Written()
    images = []
    for stem, fig in figures.items():
        stem.parent.mkdir(parents=True, exist_ok=True)
        if "html" in formats:
            html = stem.with_name(stem.name + ".html")
            with _replacing(html) as tmp:
                fig.write_html(tmp, include_plotlyjs=True, full_html=True, config={"displaylogo": False})
            out.paths.append(html)
        images += [(fig, stem.with_name(f"{stem.name}.{f}"), f) for f in formats if f in ("png", "svg")]
    if images:
        done, note = _render_images(images)
        out.paths += done
        if note:
            out.notes.append(note)
    return out


def find_browser() -> str | None:
    """The Chrome/Chromium that renders PNG/SVG: ``$BROWSER_PATH`` if set, else the first on the PATH."""
    env = os.environ.get("BROWSER_PATH")
    if env:
        return env if Path(env).is_file() else None
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _render_images(jobs: list[tuple[Any, Path, str]]) -> tuple[list[Path], str | None]:
    """Render ``(figure, path, "png"|"svg")`` jobs in one kaleido session; ``(paths written, note or None)``.

    kaleido writes each image to a fresh temporary name beside its path, moved onto the path once rendered (never
    through a link: see :func:`_replacing`)."""
    check_no_links(p for _, p, _ in jobs)
    kinds = "/".join(sorted({f.upper() for _, _, f in jobs}, reverse=True))
    try:
        import kaleido
    except ImportError:
        return [], f"{kinds} not written: the kaleido package is missing (pip install kaleido); HTML written instead"
    browser = find_browser()
    if browser is None:
        where = (
            f"BROWSER_PATH={os.environ['BROWSER_PATH']!r} is not a file"
            if os.environ.get("BROWSER_PATH")
            else "no chromium or google-chrome on the PATH"
        )
        return [], (
            f"{kinds} not written: they need Chromium ({where}; on Debian: apt-get install chromium, or set "
            f"BROWSER_PATH); the interactive HTML was written instead"
        )
    tmps = {path: _temp_beside(path) for _, path, _ in jobs}
    done, failed = [], None
    try:
        specs = [
            {"fig": fig, "path": tmps[path], "opts": {"format": fmt, "scale": 2 if fmt == "png" else 1}}
            for fig, path, fmt in jobs
        ]
        try:
            # mathjax=False: the default loads MathJax from a CDN, and exports must work offline
            kaleido.write_fig_from_object_sync(
                specs, kopts={"path": browser, "mathjax": False, "timeout": IMAGE_TIMEOUT_S}
            )
        except Exception as e:  # noqa: BLE001 - a failed render must not lose the tables already written
            failed = f"{kinds} not written: {browser} failed ({type(e).__name__}: {e})"
        for _, path, _ in jobs:
            if tmps[path].is_file() and tmps[path].stat().st_size > 0:  # rendered (the empty placeholder is not)
                os.replace(tmps[path], path)
                done.append(path)
    finally:
        for t in tmps.values():
            t.unlink(missing_ok=True)
    if failed:
        return done, failed
    missing = [p.name for _, p, _ in jobs if p not in done]
    note = f"{kinds}: {', '.join(missing)} not written by {browser}" if missing else None
    return done, note


def check_formats(formats: Iterable[str] | None) -> list[str]:
    """The chosen formats in :data:`FORMATS` order; ``None`` = all. Raises ValueError naming the choices."""
    if formats is None:
        return list(FORMATS)
    chosen = [str(f).strip().lower().lstrip(".") for f in formats if str(f).strip()]
    bad = [f for f in chosen if f not in FORMATS]
    if bad or not chosen:
        raise ValueError(f"export formats {bad or '(none)'}: choose one or more of {', '.join(FORMATS)}")
    return [f for f in FORMATS if f in chosen]


def parse_formats(spec: str) -> list[str]:
    """``"csv,png"`` or ``"all"`` -> a checked format list."""
    return check_formats(None if spec.strip().lower() == "all" else spec.split(","))


def new_export_dir(prefix: str = "bindlab-export-") -> Path:
    """A fresh folder for one export request (two browser tabs never share one). It lives under the system temp
    folder because Gradio serves downloads only from there or the working folder."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def zip_files(paths: Sequence[str | Path], path: str | Path) -> Path:
    """One zip (deflated) holding ``paths`` under their own names, in the given order.

    Raises:
        ValueError: two of ``paths`` share a name (the zip would keep only one of them).
    """
    names = [Path(p).name for p in paths]
    if len(set(names)) != len(names):
        raise ValueError(f"cannot zip files that share a name: {sorted(n for n in set(names) if names.count(n) > 1)}")
    path = Path(path)
    with _replacing(path) as tmp, zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for p in paths:
            z.write(p, Path(p).name)
    return path


def main_view(view: ResultView) -> ResultView:
    """``view`` with only its main tables, figures and item sets (:attr:`ResultView.main`; when that is empty, the
    first table, the first figure and every item set)."""
    if view.main:
        pick = lambda d: {k: v for k, v in d.items() if k in view.main}  # noqa: E731
        tables, figures, items = pick(view.tables), pick(view.figures), pick(view.items)
    else:
        tables, figures, items = dict(list(view.tables.items())[:1]), dict(list(view.figures.items())[:1]), view.items
    return ResultView(view.name, tables, figures, items, view.main, view.about)


def main_formats(formats: Iterable[str] | None) -> list[str]:
    """One format per kind from the chosen ones: CSV (else JSON) for tables, JSONL for items, HTML (else PNG, else
    SVG) for figures."""
    chosen = check_formats(formats)
    table = [f for f in TABLE_FORMATS if f in chosen][:1]
    figure = [f for f in ("html", "png", "svg") if f in chosen][:1]
    return [f for f in FORMATS if f in (*table, *figure) or (f == "jsonl" and f in chosen)]


def _what(view: ResultView, path: Path) -> str:
    """One README line: the file's name, what it holds and what its format is."""
    if path.name == "provenance.json":
        return f"{path.name} — what was run (bindlab version, models, data, settings) and the list of files"
    stem, fmt = path.stem, path.suffix.lstrip(".")
    name = stem[len(view.name) + 1 :] if stem.startswith(view.name + "_") else stem
    kind = "items" if fmt == "jsonl" else "figure" if fmt in FIGURE_FORMATS else "table"
    about = view.about.get(name) or f"{kind} '{name.replace('_', ' ')}'"
    return f"{path.name} — {about} ({FORMAT_NOTES.get(fmt, fmt)})"


def write_readme(
    view: ResultView, folder: str | Path, paths: Sequence[Path], left_out: ResultView | None = None
) -> Path:
    """``README.txt`` in ``folder``: one line per file of ``paths`` saying what it is; ``left_out``: the parts of
    the full view a main-files download did not write (named, with how to get them)."""
    lines = [f"bindlab download: {view.name}", "", "Files:"]
    lines += [f"- {_what(view, Path(p))}" for p in paths]
    lines.append(f"- {README} — this list")
    lines.append(f"- {view.name}_all.zip (beside these files) — every file above in one zip")
    if left_out is not None:
        rest = [
            *left_out.tables,
            *(f"{k} (chart)" for k in left_out.figures),
            *(f"{k} (items)" for k in left_out.items),
        ]
        lines += [
            "",
            "These are the main files. Also available (tick 'everything' in the Download panel, or use the "
            "command line's --export DIR): " + (", ".join(rest) if rest else "nothing else") + ".",
        ]
    path = Path(folder) / README
    with _replacing(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def planned_files(view: ResultView, folder: str | Path, formats: Iterable[str] | None = None) -> list[Path]:
    """Every file :func:`write_view` may write for ``view`` in ``folder`` (PNG/SVG included, rendered or not), and
    ``provenance.json``."""
    chosen, folder = check_formats(formats), Path(folder)
    out = [folder / f"{view.name}_{n}.{f}" for n in view.tables for f in TABLE_FORMATS if f in chosen]
    out += [folder / f"{view.name}_{n}.jsonl" for n in view.items if "jsonl" in chosen]
    out += [folder / f"{view.name}_{n}.{f}" for n in view.figures for f in FIGURE_FORMATS if f in chosen]
    return [*out, folder / "provenance.json"]


def write_view(
    view: ResultView,
    folder: str | Path,
    provenance: dict[str, Any],
    formats: Iterable[str] | None = None,
    bundle: bool = False,
    main: bool = False,
) -> Written:
    """Write every table, figure and item set of ``view`` into ``folder`` in the chosen formats.

    Args:
        view: what to write.
        folder: output folder (created).
        provenance: the result's provenance record; goes into each table's JSON and into ``provenance.json``.
        formats: subset of :data:`FORMATS` (None = all).
        bundle: also write ``README.txt`` (what each file is) and ``<view>_all.zip`` holding every file written
            (the app's downloads).
        main: only the main files (:func:`main_view`, :func:`main_formats`).

    Returns:
        :class:`Written` with every path (``provenance.json``, then ``README.txt`` and the zip when ``bundle``,
        last) and notes on what could not be written.
    """
    full = view
    if main:
        view, formats = main_view(view), main_formats(formats)
    chosen = check_formats(formats)
    folder = Path(folder)
    planned = planned_files(view, folder, chosen) + ([folder / README] if bundle else [])
    check_no_links(planned)  # before a single file is written (each write checks again)
    folder.mkdir(parents=True, exist_ok=True)
    out = Written()
    for name, table in view.tables.items():
        out.paths += _write_table(table, folder / f"{view.name}_{name}", provenance, chosen)
    if "jsonl" in chosen:
        for name, rows in view.items.items():
            out.paths.append(write_jsonl(rows, folder / f"{view.name}_{name}.jsonl"))
    if view.figures and any(f in chosen for f in FIGURE_FORMATS):
        out.extend(write_figures({folder / f"{view.name}_{k}": fig for k, fig in view.figures.items()}, chosen))
    manifest = folder / "provenance.json"
    with _replacing(manifest) as tmp:
        tmp.write_text(
            json.dumps(
                {
                    "provenance": _plain(provenance),
                    "view": view.name,
                    "files": [p.name for p in out.paths],
                    "notes": out.notes,
                },
                indent=1,
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
    out.paths.append(manifest)
    if bundle:
        left_out = None
        if main:
            left_out = ResultView(
                view.name,
                {k: v for k, v in full.tables.items() if k not in view.tables},
                {k: v for k, v in full.figures.items() if k not in view.figures},
                {k: v for k, v in full.items.items() if k not in view.items},
            )
        out.paths.append(write_readme(view, folder, out.paths, left_out))
        out.paths.append(zip_files(out.paths, folder / f"{view.name}_all.zip"))
    return out


# --- what each kind of result exports (shared by the app and the CLI) ---------------------------------------------
def mcq_export(result: Result) -> ResultView:
    """MCQ accuracy (``eval mcq``, the Browse tab): per-pairing summary (accuracy, interval, chance level and the label
    against it, the share of caption words unknown to the model and the most frequent), accuracy by N and subset
    with the chance of each, per-question scores with one column per candidate role and the question's chance, the
    accuracy-by-N chart per pairing, and the per-item rows.

    Args:
        result: :func:`bindlab.studies.browse.run_mcq`'s result (both faces pass the same one).
    """
    from bindlab.data.schema import ROLES
    from bindlab.present import figures

    summaries, items = result.summary["pairings"], result.rows
    unknown = result.summary.get("unknown_words") or {}
    summary = [
        {
            "pairing": p,
            "accuracy": s["accuracy"],
            "ci95_low": s["ci95"][0],
            "ci95_high": s["ci95"][1],
            "n": s["n"],
            "chance": s.get("chance", 0.25),
            "vs_chance": s.get("vs_chance", ""),
            **{f"accuracy_{k}": v for k, v in s.get("by_subset", {}).items()},
            **(
                {
                    "unknown_word_share": unknown["share"],
                    "unknown_query_word_share": unknown["query_share"],
                    "unknown_words_top": ", ".join(f"{t['word']} ({t['count']})" for t in unknown["top"]) or None,
                }
                if unknown
                else {}
            ),
        }
        for p, s in summaries.items()
    ]
    by_n = result.tables["accuracy_by_n"]
    figs = {}
    for p in summaries:
        rows = [{k: v for k, v in r.items() if k != "pairing"} for r in by_n if r["pairing"] == p]
        figs["accuracy_by_n" if len(summaries) == 1 else f"accuracy_by_n_{p}"] = figures.accuracy_by_n(
            rows, title=f"{plot_text(p)}: accuracy by number of objects"
        )
    roles = [role for role in ROLES if any(role in r["roles"] for r in items)]  # fixed column order
    scores = []
    for r in items:
        by_role = dict(zip(r["roles"], r["scores"], strict=True))
        scores.append(
            {
                **{
                    k: r.get(k)
                    for k in ("id", "pairing", "n_objects", "subset", "answer", "predicted", "credit", "chance")
                },
                **{f"score_{role}": by_role.get(role) for role in roles},
            }
        )
    return ResultView(
        "mcq",
        {"summary": summary, "accuracy_by_n": by_n, "scores": scores},
        figs,
        {"items": items},
        main=("summary", "scores", *figs),
        about={
            "summary": "accuracy per pairing with its 95 % interval and chance",
            "accuracy_by_n": "accuracy by number of objects N and subset",
            "scores": "per question: the answer, the prediction, the credit and each candidate's score",
            "items": "per question, as the backend scored it",
        },
    )


def question_tables(
    view: dict[str, Any] | None,
    model: str,
    topk: list[dict[str, Any]] | None = None,
    other: tuple[str, dict[str, Any]] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """The one question a tab shows (Browse): ``question`` = its query and candidates with the model's scores and
    ranks (and a second model's rows beside them, column ``model``, when ``other`` = ``(model B, its view)``), and
    ``topk`` = its top-k items of the pooled gallery. Empty when no question is shown.

    Args:
        view: :func:`bindlab.studies.browse.question_view` of the question shown.
        topk: :func:`bindlab.studies.browse.retrieval_topk` rows.
    """
    if not view:
        return {}
    rows = _example_rows(view, model)
    if other is not None:
        rows += _example_rows(other[1], other[0])
    tables = {"question": rows}
    if topk:
        tables["topk"] = [{"query": view["id"], **{k: v for k, v in r.items() if k != "image"}} for r in topk]
    return tables


def retrieval_export(result: Result) -> ResultView:
    """Pooled-gallery retrieval (``eval retrieval``): per-pairing summary, mAP by N, per-query rows.

    Args:
        result: :func:`bindlab.studies.browse.run_retrieval`'s result.
    """
    summary = [
        {"pairing": p, **{k: v for k, v in r.items() if k != "map_by_n"}} for p, r in result.summary["pairings"].items()
    ]
    return ResultView(
        "retrieval",
        {"summary": summary, "map_by_n": result.tables["map_by_n"], "queries": result.rows},
        {},
        {"items": result.rows},
    )


def _score_rows(group: str, blocks: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    from bindlab.eval.pairs import METRICS

    rows = []
    for key, b in blocks.items():
        row: dict[str, Any] = {"group_by": group, "key": key, "n": b["n"]}
        for m in METRICS:
            row[m] = b[m]
            row[f"{m}_ci95_low"], row[f"{m}_ci95_high"] = b[f"{m}_ci95"]
        rows.append(row)
    return rows


def pairs_export(result: Result) -> ResultView:
    """Winoground-style pairs (``eval pairs``, the Pairs tab): I2T / T2I / Group overall, by verbosity and category
    with 95 % intervals, the per-edit-type table and bar chart, per-pair rows.

    Args:
        result: :func:`bindlab.studies.pairs.run_pairs`'s result (both faces pass the same one).
    """
    from bindlab.present import figures

    summary, items = result.summary, result.rows
    scores = (
        _score_rows("overall", {"all": summary["overall"]})
        + _score_rows("verbosity", summary.get("by_verbosity", {}))
        + _score_rows("category", summary.get("by_category", {}))
    )
    edit = result.tables["by_edit_type"]
    model = result.provenance.get("encoder", {}).get("id", "")
    title = f"{plot_text(model)}: 2x2 scores by edit type" if model else "2x2 scores by edit type"
    return ResultView(
        "pairs",
        {"scores": scores, "by_edit_type": edit, "pairs": items},
        {"by_edit_type": figures.pairs_by_edit_type(edit, title=title)},
        {"items": items},
        main=("scores", "pairs", "by_edit_type"),
        about={
            "scores": "I2T / T2I / Group scores with 95 % intervals, overall and by group",
            "pairs": "per pair: its scores",
            "by_edit_type": "the scores by edit type",
        },
    )


def grounding_export(
    result: Any,
    shown: dict[str, Any] | None = None,
    chosen: float | None = None,
    sweep: list[dict[str, Any]] | None = None,
    alignment: list[dict[str, Any]] | None = None,
) -> ResultView:
    """Matched visual grounding (``ground``, the Grounding tab): both faces pass the same study result.

    Args:
        result: the :class:`~bindlab.result.Result` of :func:`bindlab.studies.grounding.run_grounding`
            (``summary["factors"]`` = ``{factor: factor_report}``, ``figures_data["curves"]`` = closed-form margin
            curves of every value).
        shown: the tab's ``slider_view`` (adds the margin-curve and 2-D figures of the value on screen and its top
            test images as a table).
        chosen: the validation alpha, if selected (marked on the margin curve).
        sweep: the signal-strength sweep's rows (:func:`bindlab.studies.grounding_sweep.run_grounding_sweep`), if
            run: its table and chart.
        alignment: the global-alignment baseline's rows (readout, macro-mAP, top-1), if run.
    """
    from bindlab.present import grounding_figures as gf

    reports, curves = result.summary["factors"], result.figures_data["curves"]
    summary, per_value, margins, controls, figs = [], [], [], [], {}
    for f, r in reports.items():
        summary.append(
            {
                "factor": f,
                "alpha": r["alpha"],
                "alpha_source": r["alpha_source"],
                "validation_alpha": r["validation"]["alpha"],
                "validation_macro_map": r["validation"]["macro_map"],
                "native_macro_map": r["test"]["native"]["macro_map"],
                "grounded_macro_map": r["test"]["grounded"]["macro_map"],
                "native_top1": r["test"]["native"]["top1"],
                "grounded_top1": r["test"]["grounded"]["top1"],
                **{f"n_{k}": v for k, v in r["n_images"].items()},
            }
        )
        per_value += [{"factor": f, **row} for row in r["per_value"]]
        for readout, d in (r.get("controls") or {}).get("test", {}).items():
            if d is not None:
                controls.append(
                    {
                        "factor": f,
                        "readout": readout,
                        "macro_map": d["macro_map"],
                        "top1": d["top1"],
                        **{f"ap_{v}": ap for v, ap in zip(r["values"], d["ap"], strict=True)},
                    }
                )
        figs[f"ap_{f}"] = gf.ap_bars(
            r["values"],
            [x["ap_native"] for x in r["per_value"]],
            [x["ap_grounded"] for x in r["per_value"]],
            r["alpha"],
        )
    for f, c in curves.items():
        margins += [
            {"factor": f, "value": v, "alpha": a, "margin": row[k]}
            for a, row in zip(c["alphas"], c["margins"], strict=True)
            for k, v in enumerate(c["values"])
        ]
    if shown is not None:
        v = shown["value_index"]
        figs["margin_curve"] = gf.margin_curve(
            shown["curve"]["alphas"],
            shown["curve"]["margin"],
            shown["alpha"],
            shown["alpha_star"][v],
            chosen,
            shown["value"],
        )
        figs["plane"] = gf.grounding_plane(shown["plane"], shown["value"], shown["alpha"])
    tables = {"summary": summary, "per_value": per_value, "margin_curves": margins}
    if controls:
        tables["controls"] = controls
    if shown is not None and shown.get("top"):
        tables["top_images"] = [
            {
                "value": shown["value"],
                "alpha": shown["alpha"],
                "rank": k + 1,
                "image": os.path.basename(t["path"]),
                "label": t["label"],
                "score": t["score"],
                "hit": t["hit"],
            }
            for k, t in enumerate(shown["top"])
        ]
    if sweep:
        tables["sweep"] = sweep
        figs["sweep"] = gf.sweep_figure(sweep)
    if alignment:
        tables["alignment"] = alignment
    return ResultView("grounding", tables, figs)


def attention_export(
    result: Any, heatmap: Any = None, heads: Any = None, caption: dict[str, Any] | None = None
) -> ResultView:
    """Attention binding margins (``attention``, the Attention tab): per-layer margins with 95 % intervals per model
    and caption set, the per-layer ratio with ``--compare``, per-caption margins, the curves figure (and the caption
    on screen, if given: its word x word heatmap, its layer x head margin grid and the grid's numbers).

    Args:
        result: the :class:`~bindlab.result.Result` of :func:`bindlab.studies.attention.run_attention`
            (``summary`` = the margins document, ``rows`` = per-caption rows, ``figures_data["curves"]``).
        heatmap: the tab's word x word figure, if one is on screen.
        heads: the tab's layer x head margin grid figure, if one is on screen.
        caption: :func:`bindlab.studies.attention.caption_view` of the caption on screen (``text``, ``margins``
            per layer, ``head_margins`` layer x head).
    """
    from bindlab.present import attention_figures as af

    res, items = result.summary, result.rows
    margins = []
    for model, sets in [(res["model"], res["sets"])] + (
        [(res["compare"]["model"], res["compare"]["sets"])] if "compare" in res else []
    ):
        for name, s in sets.items():
            margins += [
                {
                    "model": model,
                    "set": name,
                    "layer": layer,
                    "margin_mean": s["margin_mean"][i],
                    "ci_low": s["ci_low"][i],
                    "ci_high": s["ci_high"][i],
                    "n_captions": s["n_captions"],
                }
                for i, layer in enumerate(s["layers"])
            ]
    tables: dict[str, Any] = {"margins": margins}
    if "compare" in res:
        tables["ratio"] = []
        for name, r in res["compare"]["ratio"].items():
            ratio = r.get("ratio") or []  # absent when the two models' layer counts differ (r["note"] says so)
            lo, hi = r.get("ci_low") or [None] * len(ratio), r.get("ci_high") or [None] * len(ratio)
            tables["ratio"] += [
                {
                    "model": res["compare"]["model"],
                    "over": res["model"],
                    "set": name,
                    "layer": i,
                    "ratio": x,
                    "ci_low": lo[i],
                    "ci_high": hi[i],
                    "n_captions": r.get("n_captions"),
                }
                for i, x in enumerate(ratio)
            ]
    tables["captions"] = [
        {
            **{k: r[k] for k in ("set", "id", "text", "skipped")},
            "bindings": ", ".join(f"{a}:{o}" for a, o in r["bindings"]),
            **{f"margin_L{i}": m for i, m in enumerate(r["margins"] or [])},
        }
        for r in items
    ]
    figs = {
        "margins": af.margin_curves(
            result.figures_data["curves"], title=f"Attention binding margin per layer ({plot_text(res['direction'])})"
        )
    }
    if heatmap is not None:
        figs["heatmap"] = heatmap
    if heads is not None:
        figs["heads"] = heads
    if caption is not None:
        hm = caption.get("head_margins")
        tables["caption_heads"] = [
            {"text": caption["text"], "layer": li, "head": h, "margin": m}
            for li, row in enumerate(hm if hm is not None else [])
            for h, m in enumerate(row)
        ]
        tables["caption_layers"] = [
            {"text": caption["text"], "layer": li, "margin": m}
            for li, m in enumerate([] if caption.get("margins") is None else caption["margins"])
        ]
    return ResultView("attention", tables, figs, {"items": items})


def compare_export(
    result: Result | None,
    metrics: list[dict[str, Any]] | None = None,
    job_rows: list[dict[str, Any]] | None = None,
    jobs: list[dict[str, Any]] | None = None,
) -> ResultView:
    """Base vs finetuned (``jobs compare``, the Finetune tab), from the study's result: MCQ accuracy per pairing and N
    (the models named for a reader: ``LiNeS (a=…)``, or only ``unscaled`` when a = 1) and its accuracy-by-N figure, the
    separated report (in-format vs out-of-template / unseen words / held-out construction / controls, each value with
    its 95 % interval, as shown and in long form with numeric bounds), triplet accuracy and the forgetting control,
    the attention section's per-model and per-layer tables and curves, the training curves (if ``metrics``) and the
    job list (if ``jobs``).

    Args:
        result: :func:`bindlab.studies.finetune.run_finetune_compare`'s result (both faces pass the same one); None
            before a comparison (then only the job's own rows, curves and list).
        metrics: the job's training curve events.
        job_rows: the job's triplet / forgetting rows (:func:`bindlab.studies.finetune.result_rows`), used when there
            is no comparison yet.
        jobs: the job list the tab shows (dict rows).
    """
    from bindlab.present import figures
    from bindlab.present.attention_figures import compare_margin_figure
    from bindlab.train.compare import labelled, report_values

    tables: dict[str, Any] = {}
    figs: dict[str, Any] = {}
    if result is not None:
        a = (result.summary.get("lines") or {}).get("a")
        if result.rows:
            tables["mcq"] = labelled(result.rows, a)
            figs["accuracy_by_n"] = finetune_by_n_figure(result)
        if result.tables.get("report"):
            tables["report"] = result.tables["report"]
            tables["report_values"] = report_values(result.summary["report"], a)
        if result.tables.get("triplets"):
            tables["triplets"] = result.tables["triplets"]
        if result.tables.get("attention"):
            tables["attention"] = result.tables["attention"]
        if result.tables.get("attention_per_layer"):
            tables["attention_per_layer"] = result.tables["attention_per_layer"]
        section = result.figures_data.get("attention")
        if section:
            figs["attention"] = compare_margin_figure(section, result.figures_data.get("attention_curves") or [])
    elif job_rows:
        tables["triplets"] = job_rows
    if metrics:
        tables["training"] = metrics
        figs["training"] = figures.training_curves(metrics, title="loss and validation triplet accuracy")
    if jobs:
        tables["jobs"] = jobs
    return ResultView("compare", tables, figs)


def finetune_by_n_figure(
    result: Result, models: Sequence[str] | None = None, pairings: Sequence[str] | None = None
) -> Any:
    """The Finetune compare's accuracy-by-N chart from the study's raw rows, the models named for a reader (LiNeS
    left out when a = 1); the tab and its Download draw this same figure, the tab only the ``models`` (keys
    ``base``, ``unscaled``, ``lines``) and ``pairings`` its pickers show (default: all)."""
    from bindlab.present import figures
    from bindlab.train.compare import display_labels, report_models

    a = (result.summary.get("lines") or {}).get("a")
    first = next(iter((result.summary.get("mcq") or {}).get("base", {}).values()), {})
    labels = [k for k in report_models(a) if models is None or k in models]
    rows = [r for r in result.rows if pairings is None or r["pairing"] in pairings]
    return figures.compare_by_n(
        rows, labels=tuple(labels), names=display_labels(a), chance=float(first.get("chance", 0.25))
    )


def models_compare_export(result: Result) -> ResultView:
    """Several encoders on one suite (``compare``, the Compare tab): the leaderboard with 95 % intervals, scores in
    long form with chance levels, accuracy by N, scores by edit type, the cross-benchmark table, per-scene margins
    and their agreement, the default per-question diff, the words each model does not know (``unknown_words``), every question's per-model credit and margin, and the
    by-N / by-edit-type figures. (:func:`compare_export` is the base-vs-finetuned comparison of a finetune job.)

    Args:
        result: :func:`bindlab.studies.compare.run_compare`'s result (both faces pass the same one).
    """
    from bindlab.present import compare_figures as cf

    t = result.tables
    tables = {
        k: t[k]
        for k in (
            "leaderboard",
            "scores",
            "by_n",
            "by_edit_type",
            "cross_benchmark",
            "per_scene_margin",
            "agreement",
            "question_diff",
            "unknown_words",
        )
        if t.get(k)
    }
    if result.rows:
        tables["questions"] = result.rows
    figs = {}
    if t.get("by_n"):
        figs["by_n"] = cf.by_n_figure(t["by_n"])
    if t.get("by_edit_type"):
        figs["by_edit_type"] = cf.by_edit_type_figure(t["by_edit_type"])
    return ResultView("compare_models", tables, figs, {"items": result.rows} if result.rows else {})


def map_export(
    result: Result,
    layouts: dict[str, Any] | None = None,
    color_by: str | None = None,
    shown: str | None = None,
    marks: dict[str, Any] | None = None,
    neighbours: list[dict[str, Any]] | None = None,
    selection: list[dict[str, Any]] | None = None,
) -> ResultView:
    """Embedding map (``map``, the Map tab): one row per point with its coordinates in every computed layout
    (``pca_x``, ``pca_y``, ``umap_x``, …), the correct share per modality, and the map figure of the layout shown
    (default: UMAP if computed, else PCA). The figure's HTML keeps the hover captions; the ``map`` command's own
    ``map.html`` also carries hover thumbnails.

    Args:
        result: :func:`bindlab.studies.map.run_map`'s result (both faces pass the same one).
        layouts: ``{method: (p, 2) coordinates}`` of the same points (the tab's PCA and UMAP); default: the result's.
        color_by: colour of the figure; default: the result's request.
        shown: the layout drawn in the figure.
        marks: what the tab draws on top of the map (``highlight``: ringed point indices of a caption search and its
            ``highlight_label``; ``joined``: the question whose items are joined by lines), drawn the same here.
        neighbours: the clicked point's nearest neighbours (:func:`bindlab.studies.map.point_neighbours`), as shown.
        selection: the box / lasso selection's rows (:func:`bindlab.studies.map.selected_points`), as shown.
    """
    import numpy as np

    from bindlab.present.map_figure import map_figure

    fd = result.figures_data
    data = fd["map"]
    layouts = layouts or {fd["method"]: fd["xy"]}
    color_by = color_by or fd.get("color", "role")
    shown = shown or ("umap" if "umap" in layouts else next(iter(layouts)))
    points = []
    for k, p in enumerate(data.points):
        row = {
            key: p[key]
            for key in (
                "id",
                "question",
                "item",
                "role",
                "modality",
                "n_objects",
                "subset",
                "correct",
                "caption",
                "image",
            )
        }
        for method, xy in layouts.items():
            row[f"{method}_x"], row[f"{method}_y"] = (float(v) for v in np.asarray(xy)[k])
        points.append(row)
    summary = [
        {
            "model": data.model,
            "modality": m,
            "correct_share": a,
            "n_points": sum(p["modality"] == m for p in data.points),
        }
        for m, a in data.accuracy.items()
    ]
    title = f"{plot_text(data.model)} · {shown.upper()} of {len(data.points)} points (circle = text, square = image)"
    tables: dict[str, Any] = {"points": points, "summary": summary}
    if neighbours:
        tables["neighbours"] = neighbours
    if selection:
        tables["selection"] = selection
    return ResultView("map", tables, {shown: map_figure(data.points, layouts[shown], color_by, title, **(marks or {}))})


def _example_rows(view: dict[str, Any], model: str | None = None) -> list[dict[str, Any]]:
    """One example question's query and candidates as rows (what the step's question card shows)."""
    head = {"question": view["id"], "n_objects": view["n_objects"], **({"model": model} if model else {})}
    rows = [
        {
            **head,
            "item": "query",
            "role": "query",
            "text": view["query"]["text"],
            "bindings": ", ".join(f"{a}:{o}" for a, o in view["query"]["bindings"]),
            "score": None,
            "rank": None,
            "is_answer": None,
        }
    ]
    rows += [
        {
            **head,
            "item": f"candidate {k + 1}",
            "role": c["role"],
            "text": c["text"],
            "bindings": ", ".join(f"{a}:{o}" for a, o in c["bindings"]),
            "score": c["score"],
            "rank": c["rank"],
            "is_answer": c["is_answer"],
        }
        for k, c in enumerate(view["candidates"])
    ]
    return rows


def _split_ci(row: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``row`` with each ``[lo, hi]`` interval under ``keys`` written as two numeric columns ``<key>_low/_high``."""
    out = dict(row)
    for key in keys:
        if key in out:
            lo, hi = out.pop(key) or (None, None)
            out[f"{key}_low"], out[f"{key}_high"] = lo, hi
    return out


def walkthrough_export(results: dict[str, dict[str, Any]]) -> ResultView:
    """The walkthrough's steps run so far (the Walkthrough tab): every table and chart each step showed. ``results``
    maps a step key (``bow``, ``text``, …) to that step's backend dict.

    Per step: 1 the bag-of-words numbers, accuracy by N and the example question; 2 MiniLM's numbers and the same
    example; 3 accuracy per model and pairing with 95 % intervals, the failure-and-fix comparison and its chart, the
    example question; 4 accuracy by N with each point's 95 % interval, small vs large scenes, the chart (error bars);
    5 the grounding numbers, AP per value and its chart, the margin curve and its chart; 6 the attention margins per
    layer and their chart; 7 MCQ accuracy per pairing (all N and by N, the models named for a reader: no LiNeS when
    a = 1), the chart, the separated in-format / general report (as shown, in long form, and which rows moved beyond
    their interval), the job's triplet rows and the image drift. Intervals are written as numeric ``…_low/_high``
    columns."""
    from bindlab.present import walkthrough_figures as wf
    from bindlab.train.compare import report_values

    if not results:
        raise ValueError("run at least one step first; the download holds the steps run in this session")
    tables: dict[str, Any] = {}
    figs: dict[str, Any] = {}
    scalar = lambda r, keys: [_split_ci({k: r[k] for k in keys if k in r}, "ci95", "gain_ci95")]  # noqa: E731
    if "bow" in results:
        r = results["bow"]
        tables["step1_bow"] = scalar(
            r, ("model", "pairing", "n_questions", "accuracy", "ci95", "chance", "tie_share", "n_swaps")
        )
        tables["step1_bow_by_n"] = [{"n_objects": int(n), "accuracy": a} for n, a in r["by_n"].items()]
        if r.get("example"):
            tables["step1_example"] = _example_rows(r["example"], r["model"])
    if "text" in results:
        r = results["text"]
        tables["step2_text"] = scalar(
            r,
            (
                "model",
                "pairing",
                "n_questions",
                "accuracy",
                "ci95",
                "chance",
                "share_correct",
                "median_abs_gap",
                "median_preserve",
                "median_other",
            ),
        )
        if r.get("example"):
            tables["step2_example"] = _example_rows(r["example"], r["model"])
    if "images" in results:
        r = results["images"]
        tables["step3_images"] = [_split_ci(x, "ci95") for x in r["rows"]]
        fix = r.get("fix")
        if fix:
            tables["step3_fix"] = [
                {
                    "before_model": fix["before"],
                    "after_model": fix["after"],
                    **_split_ci(x, "before_ci95", "after_ci95", "change_ci95"),
                }
                for x in fix["rows"]
            ]
            figs["step3_fix"] = wf.fix_chart(r)
        if r.get("example"):
            tables["step3_example"] = _example_rows(r["example"], r.get("example_model"))
    if "objects" in results:
        r = results["objects"]
        tables["step4_objects"] = [
            {"model": r["model"], "pairing": r["pairing"], **_split_ci(row, "ci95")} for row in r["rows"]
        ]
        tables["step4_small_vs_large"] = [
            {"group": g, **_split_ci({**r[g], "sizes": r[g]["sizes"]}, "ci95")} for g in ("small", "large")
        ]
        if r.get("change"):  # large − small, its bootstrap interval and verdict
            c = r["change"]
            tables["step4_small_vs_large"].append(
                {
                    "group": "change (large - small)",
                    "accuracy": c["value"],
                    "ci95_low": c["ci95"][0],
                    "ci95_high": c["ci95"][1],
                    "verdict": c["verdict"],
                }
            )
        figs["step4_accuracy_by_n"] = wf.objects_figure(r)
    if "grounding" in results:
        r = results["grounding"]
        tables["step5_grounding"] = scalar(
            r,
            (
                "model",
                "factor",
                "value",
                "alpha",
                "ap_native",
                "ap_grounded",
                "gain",
                "gain_ci95",
                "margin_native",
                "margin_grounded",
                "alpha_star",
                "map_native",
                "map_grounded",
                "map_prototype",
                "ap_prototype",
                "alpha_validation",
            ),
        )
        tables["step5_ap_per_value"] = [
            {"value": v, "ap_native": a, "ap_grounded": b}
            for v, a, b in zip(r["values"], r["ap_native_all"], r["ap_grounded_all"], strict=True)
        ]
        tables["step5_margin_curve"] = [
            {"alpha": a, "margin": m} for a, m in zip(r["curve"]["alphas"], r["curve"]["margin"], strict=True)
        ]
        figs["step5_margin_curve"] = wf.grounding_curve(r)
        figs["step5_ap_per_value"] = wf.grounding_bars(r)
    if "attention" in results:
        r = results["attention"]
        tables["step6_attention"] = [
            {
                "model": r["model"],
                "layer": layer,
                "margin_mean": m,
                "ci_low": lo,
                "ci_high": hi,
                "n_captions": r["n_captions"],
            }
            for layer, m, lo, hi in zip(r["layers"], r["margin_mean"], r["ci_low"], r["ci_high"], strict=True)
        ]
        figs["step6_attention"] = wf.attention_figure(r)
    if "finetune" in results:
        r = results["finetune"]
        models = wf.finetune_models(r)

        def named(row):
            return {
                **{k: v for k, v in row.items() if k not in ("base", "unscaled", "lines")},
                **{name: row[k] for k, name in models},
            }

        tables["step7_finetune"] = [{"job": r["job"], **named(row)} for row in r["rows"]]
        tables["step7_finetune_by_n"] = [named(row) for row in r["by_n"]]
        if r.get("report_rows"):
            tables["step7_report"] = r["report_rows"]
            tables["step7_report_values"] = report_values(r["report"], r.get("lines_a"))
            tables["step7_report_moves"] = [_split_ci(x, "change_ci95") for x in r["report_moves"]]
        if r.get("triplets"):
            tables["step7_triplets"] = r["triplets"]
        tables["step7_image_drift"] = [
            {
                "job": r["job"],
                **r["image_drift"],
                "steps": r["steps"],
                "train_seconds": r["train_seconds"],
                "lr": r["lr"],
                "lines_a": r["lines_a"],
            }
        ]
        figs["step7_accuracy_by_n"] = wf.finetune_figure(r)
    return ResultView("walkthrough", tables, figs, main=WALKTHROUGH_MAIN, about=WALKTHROUGH_ABOUT)


# a step's headline table and its chart: what a main-files download of the Walkthrough holds
WALKTHROUGH_MAIN = (
    "step1_bow",
    "step2_text",
    "step3_fix",
    "step4_small_vs_large",
    "step4_accuracy_by_n",
    "step5_grounding",
    "step5_ap_per_value",
    "step6_attention",
    "step7_finetune",
    "step7_accuracy_by_n",
)
WALKTHROUGH_ABOUT = {
    "step1_bow": "step 1: the bag of words' accuracy, chance and share of swaps tied with the right answer",
    "step1_bow_by_n": "step 1: the bag of words' accuracy by number of objects N",
    "step1_example": "step 1: the example question, each candidate's score and rank",
    "step2_text": "step 2: MiniLM's accuracy and the median gaps (best swap, another question's answer)",
    "step2_example": "step 2: the same example question scored by MiniLM",
    "step3_images": "step 3: accuracy of each toy model in all four pairings, with 95 % intervals",
    "step3_fix": "step 3: the failure and its fix, toy:clip → toy:negclip per pairing: both accuracies and the "
    "paired change with its 95 % interval",
    "step3_example": "step 3: the example image question, each candidate's score and rank",
    "step4_objects": "step 4: accuracy at each number of objects N with its 95 % interval",
    "step4_small_vs_large": "step 4: small vs large scenes, each with its accuracy and 95 % interval",
    "step4_accuracy_by_n": "step 4: accuracy by number of objects N, with error bars",
    "step5_grounding": "step 5: the pattern's test AP, text query vs grounded at the α shown, and the margins",
    "step5_ap_per_value": "step 5: test AP of every pattern, text query vs grounded",
    "step5_margin_curve": "step 5: the margin M(α) over α",
    "step6_attention": "step 6: the attention binding margin per layer, with its 95 % interval",
    "step7_finetune": "step 7: MCQ accuracy per pairing, base vs finetuned",
    "step7_finetune_by_n": "step 7: MCQ accuracy per pairing and N, base vs finetuned",
    "step7_accuracy_by_n": "step 7: accuracy by N per pairing, base vs finetuned",
    "step7_report": "step 7: the separated report as shown (in-format vs general rows)",
    "step7_report_values": "step 7: the separated report in long form, one value and interval per row",
    "step7_report_moves": "step 7: which rows of the report moved beyond their interval",
    "step7_triplets": "step 7: triplet accuracy of each model",
    "step7_image_drift": "step 7: how far the image embeddings moved, and the job's training settings",
}
