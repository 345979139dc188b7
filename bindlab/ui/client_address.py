"""Which address a request comes from, trusting ``X-Forwarded-For`` only as far as the deployment says.

A proxy appends the address it received a request from to ``X-Forwarded-For``; anything left of that is whatever
the client sent and can be forged. So the client is the entry the outermost *trusted* proxy appended: with ``h``
trusted hops, the ``h``-th entry from the right. ``$BINDLAB_TRUSTED_PROXY_HOPS`` sets ``h``: by default 1 in public
mode (a Hugging Face Space's own proxy) and 0 locally (no proxy: the connection's address). One forged header no
longer picks a fresh per-address slot (upload quota, heavy requests, jobs): three sessions behind three forged first
hops used to queue eight jobs and fill the job queue for everyone.
"""

from __future__ import annotations

import os

from bindlab.config import public_mode

HOPS_ENV = "BINDLAB_TRUSTED_PROXY_HOPS"


def trusted_hops() -> int:
    """Proxy hops whose ``X-Forwarded-For`` entries are believed (default 1 in public mode, 0 locally).

    Raises:
        ValueError: the setting is not a whole number from 0 to 8.
    """
    raw = os.environ.get(HOPS_ENV, "").strip()
    if not raw:
        return 1 if public_mode() else 0
    if not raw.isdigit() or int(raw) > 8:
        raise ValueError(f"{HOPS_ENV}={raw!r} must be a whole number from 0 to 8 (proxies in front of the app)")
    return int(raw)


def client_address(forwarded: str | None, peer: str | None, hops: int | None = None) -> str | None:
    """The client's address: the entry the outermost trusted proxy appended to ``forwarded`` (the
    ``X-Forwarded-For`` value), else ``peer`` (the connection's address).

    Args:
        forwarded: the header's value ("" or None when absent).
        peer: the address of the connection (the last proxy's, behind one).
        hops: trusted proxy hops (default: :func:`trusted_hops`).
    """
    hops = trusted_hops() if hops is None else hops
    entries = [e.strip() for e in str(forwarded or "").split(",") if e.strip()]
    if hops == 0 or not entries:
        return peer
    return entries[-hops] if len(entries) >= hops else entries[0]
