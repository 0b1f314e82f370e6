"""The shipped gunicorn worker notes how long each request waited for a thread (what a web
process's own timing misses once every thread is busy), and the configuration ships it whenever
a worker has threads."""

from __future__ import annotations

import runpy
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
from gunicorn.workers.gthread import ThreadWorker

from config.gunicorn_worker import QueueTimedWorker
from core.request_queue import note_queued, queued_seconds
from tests.helpers.paths import ROOT


def test_a_request_taken_later_by_a_thread_is_noted_with_its_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ThreadWorker, "handle", lambda self, conn: queued_seconds())
    submitted: list[tuple[Any, Any]] = []
    worker = QueueTimedWorker.__new__(QueueTimedWorker)
    worker.tpool = SimpleNamespace(
        submit=lambda fn, conn: (
            submitted.append((fn, conn)) or SimpleNamespace(add_done_callback=lambda callback: None)
        )
    )
    worker.enqueue_req(SimpleNamespace())
    time.sleep(0.05)  # every thread busy meanwhile

    waited: list[float] = []
    handle, conn = submitted[0]
    thread = threading.Thread(target=lambda: waited.append(handle(conn)))
    thread.start()
    thread.join()

    assert 0.05 <= waited[0] < 5
    assert queued_seconds() == 0.0  # noted for the thread that took it, not for this one


def test_the_configuration_ships_the_worker_whenever_it_has_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GUNICORN_THREADS", "4")
    assert runpy.run_path(str(ROOT / "config/gunicorn.py"))["worker_class"] == (
        "config.gunicorn_worker.QueueTimedWorker"
    )
    monkeypatch.setenv("GUNICORN_THREADS", "1")
    assert runpy.run_path(str(ROOT / "config/gunicorn.py"))["worker_class"] == "sync"


def test_a_noted_wait_is_this_threads_until_the_next() -> None:
    note_queued(0.25)
    assert queued_seconds() == 0.25
    note_queued(-1.0)  # a clock that stepped back
    assert queued_seconds() == 0.0
