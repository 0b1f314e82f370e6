"""Calls raced for real: each in a thread of its own (with its own database connection),
all released at once; and work run in a thread of its own as a worker thread runs it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connection, connections


def run_together(*calls: Callable[[], Any]) -> list[Any]:
    """Run each call in its own thread, all released at once; results or raised exceptions."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def worker(index: int, call: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = call()
        except BaseException as exc:
            results[index] = exc
        finally:
            connection.close()

    threads = [
        threading.Thread(target=worker, args=(i, call), daemon=True) for i, call in enumerate(calls)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a racing call never finished"
    return results


def in_thread(target: Callable[[], Any]) -> Callable[[], Any]:
    """`target`, on its own connections (closed afterwards), as a worker thread runs it."""

    def run() -> Any:
        try:
            return target()
        finally:
            connections.close_all()

    return run
