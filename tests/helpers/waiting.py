"""Waiting for a condition that another thread or process brings about."""

from __future__ import annotations

import time
from typing import Any


def wait_until(predicate: Any, timeout: float = 15, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")
