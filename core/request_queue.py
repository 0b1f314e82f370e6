"""How long the request this thread serves waited for a thread before the project saw it: a
web process's own timing starts when a thread takes the request, and misses the wait in front
of it, which is most of what a shopper waits once every thread is busy. Gunicorn's worker
(`config/gunicorn_worker.py`) notes it as each request is taken; elsewhere (runserver, tests)
it is 0."""

from __future__ import annotations

import threading

_this_thread = threading.local()


def note_queued(seconds: float) -> None:
    """The request this thread is about to serve waited `seconds` for it."""
    _this_thread.queued = max(0.0, seconds)


def queued_seconds() -> float:
    """How long the request this thread serves waited for a thread (0 when not noted)."""
    return float(getattr(_this_thread, "queued", 0.0))
