"""Helpers every command shares: JSON/per-item writers, ``--export`` options, the parser groups."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import MISSING, Field, dataclass, fields
from typing import Any

from bindlab.studies.validate import DEVICE_HELP, RunOptions  # noqa: F401 - DEVICE_HELP: the --device help


def _write_json(path: str | None, obj: Any) -> None:
    """``--out FILE``: the result as JSON, written atomically (temp file + rename) after the path is checked."""
    if path:
        from bindlab.studies.validate import output_file

        p = output_file(path, "out", allow_assets=True)  # bindlab/assets/ is refused before work, in cli.main
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(obj, indent=2))
            os.replace(tmp, p)
        finally:
            tmp.unlink(missing_ok=True)
        print(f"wrote {p}")


def _write_per_item(path: str | None, rows: list[dict[str, Any]]) -> None:
    """``--per-item FILE``: one JSON line per item (never onto a device or a folder)."""
    if path:
        from bindlab.data.schema import write_jsonl
        from bindlab.studies.validate import output_file

        write_jsonl(output_file(path, "per_item", allow_assets=True), rows)
        print(f"wrote {len(rows)} per-item rows to {path}")


# --- typed arguments: argparse `type=` functions (a bad value is a usage error naming the flag) --------------------
def _typed(check: Callable[..., Any], *args: Any) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return check(text, "value", *args)
        except ValueError as e:
            msg = str(e)
            for prefix in ("--value: ", "--value "):  # argparse names the flag itself
                msg = msg.removeprefix(prefix)
            raise argparse.ArgumentTypeError(msg) from None

    parse.__name__ = check.__name__
    return parse


def positive_int(text: str) -> int:
    """``type=positive_int``: a whole number >= 1 (batch sizes, counts)."""
    from bindlab.studies.validate import positive_int as check

    return _typed(check)(text)


def nonneg_int(text: str) -> int:
    """``type=nonneg_int``: a whole number >= 0 (limits, where 0 means all)."""
    from bindlab.studies.validate import nonneg_int as check

    return _typed(check)(text)


def finite_float(text: str) -> float:
    """``type=finite_float``: a finite number (no nan/inf)."""
    from bindlab.studies.validate import finite_float as check

    return _typed(check)(text)


def positive_float(text: str) -> float:
    """``type=positive_float``: a finite number > 0 (learning rate, LoRA alpha)."""
    from bindlab.studies.validate import finite_float as check

    return _typed(check, 0.0, None, True)(text)


def out_file(text: str) -> str:
    """``type=out_file``: a regular file or a new one in a folder that exists or can be made (never a device,
    a folder, or a path under bindlab/assets/)."""
    from bindlab.studies.validate import output_file

    _typed(output_file)(text)
    return text


def out_dir(text: str) -> str:
    """``type=out_dir``: an existing folder or a new one (never a file)."""
    from bindlab.studies.validate import output_dir

    _typed(output_dir)(text)
    return text


def _export_formats(spec: str) -> list[str]:
    from bindlab.present.exports import parse_formats

    try:
        return parse_formats(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--export",
        metavar="DIR",
        help="also write the results as files into DIR: tables as CSV + JSON "
        "(with provenance), figures as PNG + SVG + HTML, per-item JSONL",
    )
    p.add_argument(
        "--export-formats",
        type=_export_formats,
        default="all",
        metavar="FORMATS",
        help="with --export: comma-separated subset of csv,json,jsonl,png,svg,html",
    )


def _write_export(a: argparse.Namespace, build: Callable[[], Any], prov: dict[str, Any]) -> None:
    """``--export DIR``: write ``build()`` (a :class:`bindlab.present.exports.ResultView`) through :mod:`bindlab.present.exports`."""
    if getattr(a, "export", None):
        from bindlab.present.exports import write_view

        w = write_view(build(), a.export, prov, a.export_formats)
        print(f"exported {len(w.paths)} files to {a.export}")
        for note in w.notes:
            print(f"note: {note}", file=sys.stderr)


def _fmt(x: float | None, spec: str = "+.4f") -> str:
    return "nan" if x is None else format(x, spec)


# --- parser ------------------------------------------------------------------------------------------------------
class HelpFormatter(argparse.HelpFormatter):
    """Help that ends each option's text with ``[default: X]`` when that tells the reader something (never for an
    unset option (None), a flag (False) or an empty value, nor when the help already says what the default is), and
    keeps a description's or an epilog's line breaks: each line is wrapped on its own, indented lines (examples) as
    they are written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text.lower() or not _informative(action.default):
            return text
        if not (action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE)):
            return text
        return f"{text} [default: %(default)s]"

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(
            indent + line
            if line[:1].isspace() or not line.strip()
            else textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent)
            for line in text.splitlines()
        )


def _informative(default: Any) -> bool:
    if default is None or default is False or default is argparse.SUPPRESS:
        return False
    return not (isinstance(default, (str, list, tuple)) and len(default) == 0)


class Commands(argparse._SubParsersAction):
    """Sub-commands: each one's parser takes its one-line ``help`` as its description, and ``hidden=True`` adds a
    command that parses but is named in no help, usage or error message (``jobs _run DIR``: a job's own process)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden: set[str] = set()
        self._own_metavar = self.metavar is not None

    def add_parser(self, name: str, *, hidden: bool = False, **kwargs: Any) -> argparse.ArgumentParser:
        if hidden:
            kwargs.pop("help", None)  # no help -> no line in the list of commands
            self.hidden.add(name)
        elif kwargs.get("help") and "description" not in kwargs:
            kwargs["description"] = kwargs["help"].replace("%%", "%")
        parser = super().add_parser(name, **kwargs)
        if not self._own_metavar:  # argparse would list every choice, hidden ones too
            self.metavar = "{" + ",".join(self.visible()) + "}"
        return parser

    def visible(self) -> list[str]:
        """The command names that help shows, in the order they were added."""
        return [n for n in self.choices if n not in self.hidden]


class Parser(argparse.ArgumentParser):
    """Every bindlab parser, sub-commands included: :class:`HelpFormatter` and :class:`Commands` all the way down."""

    def __init__(
        self, *args: Any, formatter_class: type[argparse.HelpFormatter] = HelpFormatter, **kwargs: Any
    ) -> None:
        super().__init__(*args, formatter_class=formatter_class, **kwargs)
        self.register("action", "parsers", Commands)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if isinstance(action, Commands) and value not in action.choices:  # name the visible commands only
            choices = ", ".join(map(repr, action.visible()))
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {choices})")
        super()._check_value(action, value)


# --- flags from dataclass fields ------------------------------------------------------------------------------------
FIELD_TYPES: dict[str, type] = {"int": int, "float": float}  # a field's annotation -> argparse `type=`


def field_argument(f: Field, **override: Any) -> tuple[str, dict[str, Any]]:
    """The flag and ``add_argument`` keywords of a dataclass field whose metadata carries its ``help`` (and, where
    the flag needs them, ``flag``, ``metavar``, ``choices``, ``type``, ``required``, ``cli_default``): the field's
    name is the destination, its default the flag's (``cli_default`` where the command line's differs), a ``bool``
    a switch; ``override`` replaces any keyword (a command's own help text of a shared option)."""
    meta = f.metadata
    kw: dict[str, Any] = {"dest": f.name, "help": meta["help"]}
    if meta.get("required"):
        kw["required"] = True
    else:
        kw["default"] = meta.get("cli_default", None if f.default is MISSING else f.default)
    if str(f.type) == "bool":
        kw["action"] = "store_true"
    elif meta.get("type", FIELD_TYPES.get(str(f.type))):
        kw["type"] = meta.get("type", FIELD_TYPES.get(str(f.type)))
    kw.update({k: meta[k] for k in ("metavar", "choices") if k in meta})
    kw.update(override)
    return meta.get("flag") or "--" + f.name.replace("_", "-"), kw


def option_fields(cls: Any, names: Sequence[str] | None = None) -> list[Field]:
    """The fields of dataclass ``cls`` that are flags (a ``help`` in their metadata), in ``names``' order if given."""
    flags = {f.name: f for f in fields(cls) if "help" in f.metadata}
    return [flags[n] for n in names] if names is not None else list(flags.values())


def add_fields(p: argparse.ArgumentParser, cls: Any, names: Sequence[str] | None = None, **overrides: Any) -> None:
    """One flag per option field of ``cls`` (:func:`option_fields`, :func:`field_argument`); ``overrides`` maps a
    field's name to the keywords it replaces."""
    for f in option_fields(cls, names):
        flag, kw = field_argument(f, **overrides.get(f.name, {}))
        p.add_argument(flag, **kw)


# Shared options, added in one order by every command that scores a model: --data, --model, the command's own,
# then add_run_args (--device, --dtype, --batch-size, --limit, --seed, --skip-bad), then add_output_args (--out, --per-item,
# --export, --export-formats). The run options' flags are built from bindlab.studies.validate.RunOptions' fields.
OUT_HELP = "write the results JSON (summary + provenance) here"


def add_run_option(p: argparse.ArgumentParser, name: str, **override: Any) -> None:
    """The flag of one run option (a :class:`bindlab.studies.validate.RunOptions` field); ``override`` replaces a
    keyword of it (a command's own help text or default)."""
    add_fields(p, RunOptions, [name], **{name: override})


def add_data_model(
    p: argparse.ArgumentParser,
    data: str,
    model: str,
    *,
    data_required: bool = True,
    data_default: str | None = None,
    model_flag: str = "--model",
) -> None:
    """``--data`` then ``--model`` (or ``--models``): the first options of a command that scores a model."""
    p.add_argument("--data", required=data_required, default=data_default, help=data)
    if model_flag == "--model":
        add_run_option(p, "model", required=True, default=None, help=model)
    else:
        p.add_argument(model_flag, required=True, help=model)


def add_device(p: argparse.ArgumentParser, default: str | None = "auto") -> None:
    """``--device`` with the one help text every command shares."""
    add_run_option(p, "device", default=default)


def add_run_args(
    p: argparse.ArgumentParser,
    *,
    batch_size: int | None | bool = 64,
    batch_help: str = "",
    limit: str | None = None,
    seed: str | None = None,
    skip_bad: bool = False,
    progress: bool = True,
) -> None:
    """``--device``, ``--dtype``, ``--batch-size`` (``batch_size=False``: none; None: no default of its own), then ``--limit``,
    ``--seed`` and ``--skip-bad`` where the command has them (``limit``/``seed`` are their help texts), and
    ``--no-progress`` where the command draws a progress bar (``progress``)."""
    add_device(p)
    add_run_option(p, "dtype")
    if batch_size is not False:
        add_run_option(p, "batch_size", default=batch_size, **({"help": batch_help} if batch_help else {}))
    if limit:
        add_run_option(p, "limit", help=limit)
    if seed:
        add_run_option(p, "seed", help=seed)
    if skip_bad:
        add_run_option(p, "skip_bad")
    if progress:
        p.add_argument(
            "--no-progress",
            action="store_true",
            help="no progress bar on stderr (by default one appears when the work takes over 2 s)",
        )


def add_output_args(
    p: argparse.ArgumentParser, *, out: str = OUT_HELP, per_item: str | None = None, export: bool = True
) -> None:
    """``--out FILE``, ``--per-item FILE`` (when ``per_item`` is its help text), ``--export DIR`` and its formats."""
    p.add_argument("--out", metavar="FILE", help=out)
    if per_item:
        p.add_argument("--per-item", metavar="FILE", help=per_item)
    if export:
        _export_args(p)


@dataclass
class Groups:
    """Where commands attach: top-level commands, ``generate <kind>`` and ``eval <kind>``."""

    top: Commands
    generate: Commands
    eval: Commands
