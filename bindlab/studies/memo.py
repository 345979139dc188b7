"""A bounded, least-recently-used memo for the tabs' scored sets (Browse, Pairs): one rule for both."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any


def remember(
    memo: dict[Hashable, Any],
    key: Hashable,
    value: Any,
    max_items: int,
    size: Callable[[Any], int] | None = None,
    max_bytes: int = 0,
) -> list[Hashable]:
    """Store ``value`` under ``key`` as the most recently used entry, then drop the least recently used ones while
    there are more than ``max_items`` or (with ``size``) their sizes add up to more than ``max_bytes``. The newest
    entry always stays.

    Args:
        memo: a dict kept in use order (oldest first); changed in place.
        size: bytes an entry holds (checked on every call: entries may grow after they are stored).

    Returns:
        The keys dropped.
    """
    memo.pop(key, None)
    memo[key] = value
    dropped = []
    while len(memo) > 1 and (
        len(memo) > max_items or (size is not None and sum(size(v) for v in memo.values()) > max_bytes)
    ):
        oldest = next(iter(memo))
        del memo[oldest]
        dropped.append(oldest)
    return dropped


def forget_under(memo: dict[Hashable, Any], folder: str | Path) -> list[Hashable]:
    """Drop the entries whose key starts with the resolved path of a file inside ``folder`` (a browser session's
    upload folder when the session ends: nobody can ask for those files again). Returns the keys dropped."""
    root = Path(folder).resolve()
    gone = [k for k in memo if isinstance(k, tuple) and k and Path(str(k[0])).is_relative_to(root)]
    for k in gone:
        memo.pop(k, None)
    return gone
