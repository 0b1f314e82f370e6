"""A pytest plugin (pyproject.toml's `addopts`): when the suite runs in several processes
(pytest-xdist, `make test`), each takes a Redis database of its own, so that one's Celery worker
never takes another's tasks and one's cache clear never empties another's counters. (Each gets a
PostgreSQL database of its own from pytest-django, `test_shop_gw0`, and a sandbox database of its
own from `tests/conftest.py`.) It runs before pytest-django loads the settings, and the processes
the tests start inherit it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

REDIS_DATABASES = 16  # Redis' default


def worker_number() -> int | None:
    """This process's number under pytest-xdist (gw0 -> 0), None when it runs alone."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(worker[2:]) if worker.startswith("gw") else None


def redis_url_of_worker(url: str, number: int) -> str:
    """The Redis database after the configured one by the worker's number, plus one (the
    configured one is left to runs in one process)."""
    parts = urlsplit(url)
    configured = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(configured + 1 + number) % REDIS_DATABASES}"))


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests() -> Iterator[None]:
    number = worker_number()
    url = os.environ.get("REDIS_URL", "")
    if number is not None and url.startswith(("redis://", "rediss://")):
        os.environ["REDIS_URL"] = redis_url_of_worker(url, number)
    return (yield)
