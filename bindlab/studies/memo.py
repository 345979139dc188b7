"""A bounded, least-recently-used memo for the tabs' scored sets (Browse, Pairs): one rule for both."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any


def remember(memo: dict[Hashable, Any], key: Hashable, value: Any, max_items: int,
             size: Callable[[Any], int] | None = None, max_bytes: int = 0) -> list[Hashable]:
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
    while len(memo) > 1 and (len(memo) > max_items
                             or (size is not None and sum(size(v) for v in memo.values()) > max_bytes)):
        oldest = next(iter(memo))
        del memo[oldest]
        dropped.append(oldest)
    return dropped
