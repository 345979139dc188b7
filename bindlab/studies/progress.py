"""Progress of long work: one callback shape, ``progress(fraction, message)``, and a terminal bar that draws it.

Every study reports through a ``(fraction, message)`` callback (the app hands in Gradio's ``gr.Progress``); the CLI
and the Python API hand in a :class:`Bar`, a tqdm bar in percent of the work with its rate and the remaining time
tqdm estimates from the rate so far. A bar shows only once the work has run for :data:`DELAY_S` seconds, so a quick
call prints nothing; ``progress=False`` (API) or ``--no-progress`` (CLI) turns it off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Progress = Callable[[float, str], None]

DELAY_S = 2.0  # seconds of work before a bar appears
STEPS = 1000  # the bar's resolution: fractions are drawn in steps of 0.1 %
BACKWARDS = 0.05  # a fraction this far below the last one starts a new phase (e.g. rendering, then embedding)


class Bar:
    """``(fraction, message)`` calls drawn as one tqdm bar on stderr.

    Args:
        desc: the bar's label, e.g. ``"eval mcq"``.
        delay: seconds before the bar appears (tqdm's ``delay``; default :data:`DELAY_S`).
        file: where to draw (default: stderr).
    """

    def __init__(self, desc: str, delay: float | None = None, file: Any = None) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
            total=STEPS,
            desc=desc,
            delay=DELAY_S if delay is None else delay,
            file=file,
            leave=True,
            dynamic_ncols=True,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]",
        )

    def __call__(self, fraction: float, message: str = "") -> None:
        step = int(round(min(max(float(fraction), 0.0), 1.0) * STEPS))
        if step < self.bar.n - BACKWARDS * STEPS:  # a new phase: its own rate and estimate
            self.bar.reset(total=STEPS)
        if message:
            self.bar.set_postfix_str(str(message)[:80], refresh=False)
        if step > self.bar.n:
            self.bar.update(step - self.bar.n)

    def close(self) -> None:
        self.bar.close()


@contextmanager
def progress_for(progress: bool | Progress | None, desc: str) -> Iterator[Progress | None]:
    """The callback a face hands to a study: a :class:`Bar` for ``True``, nothing for ``False``/``None``, the
    caller's own callable as it is. A bar is closed when the block ends (also on an error).

    Raises:
        TypeError: ``progress`` is none of these.
    """
    if progress is None or progress is False:
        yield None
        return
    if progress is True:
        bar = Bar(desc)
        try:
            yield bar
        finally:
            bar.close()
        return
    if not callable(progress):
        raise TypeError(
            f"progress must be True, False or a callable (fraction, message), got {type(progress).__name__}"
        )
    yield progress
