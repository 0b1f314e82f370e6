"""Gunicorn's threaded worker (gthread), noting how long each request waited for a thread
(`core/request_queue.py`): from the moment the worker hands the connection to its thread pool
(a new connection, or a kept-alive one with a request arriving) to the moment a thread takes it.
The sale day's queue adds it to the time a page took (`checkout/admission/pace.py`), so that it
sees what shoppers wait, not only what the project spends."""

from __future__ import annotations

import time
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

from core.request_queue import note_queued


class QueueTimedWorker(ThreadWorker):
    def enqueue_req(self, conn: Any) -> None:
        conn.shop_queued_at = time.monotonic()
        super().enqueue_req(conn)

    def handle(self, conn: Any) -> Any:
        queued_at = getattr(conn, "shop_queued_at", None)
        note_queued(time.monotonic() - queued_at if queued_at is not None else 0.0)
        return super().handle(conn)
