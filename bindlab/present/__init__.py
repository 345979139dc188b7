"""Presentation: pure figure builders (plotly) and the one export writer.

Nothing below ``bindlab.ui`` and ``bindlab.cli`` imports this package: studies return plain data
(:class:`bindlab.studies.Result`), and the two faces turn it into figures, tables and files here.
"""
