"""The one result shape, importable here as before it moved to :mod:`bindlab.result` (below the studies, so the
task layer can return it too). New code imports :mod:`bindlab.result`."""

from __future__ import annotations

from bindlab.result import RESULT_FILE_FORMAT, RESULT_FILE_KIND, SUMMARY_ONLY_NOTE, Result, describe, headline

__all__ = ["RESULT_FILE_FORMAT", "RESULT_FILE_KIND", "SUMMARY_ONLY_NOTE", "Result", "describe", "headline"]
