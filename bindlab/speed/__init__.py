"""The speed benchmarks: ``python -m bindlab bench`` (how fast bindlab embeds, scores, trains and serves).

:mod:`~bindlab.speed.bench` runs the sections and writes ``docs/bench.json``; :mod:`~bindlab.speed.browser` times
the app in Chromium (and starts the app for the browser tests); :mod:`~bindlab.speed.vs_library` runs bindlab's
loops beside the libraries' own. The published benchmark sets (SugarCrepe, Winoground, ...) are a different thing:
:mod:`bindlab.studies.benchmark`.
"""
