"""The one result shape every study returns (as sentence-transformers' evaluators share one with a primary metric)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
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

    def to_pandas(self, table: str | None = None) -> Any:
        """The per-item rows as a ``pandas.DataFrame`` (one row per question, pair, caption …), or with ``table``
        one of :attr:`tables` (e.g. ``"accuracy_by_n"``).

        Raises:
            KeyError: a table name this result does not have, listing the ones it has.
        """
        import pandas as pd

        if table is None:
            return pd.DataFrame(self.rows)
        if table not in self.tables:
            raise KeyError(f"{self.feature} result has no table {table!r}; it has {sorted(self.tables) or 'none'}")
        return pd.DataFrame(self.tables[table])

    def frames(self) -> dict[str, Any]:
        """Every table of :attr:`tables` as a ``pandas.DataFrame``, by name."""
        return {name: self.to_pandas(name) for name in self.tables}

    def to_json(self) -> dict[str, Any]:
        """The result file's content: the summary, the primary metric's name, notes and provenance."""
        return {**self.summary, "primary_metric": self.primary_metric, "notes": self.notes,
                "provenance": self.provenance}
