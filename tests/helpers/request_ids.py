"""A block of code run under a request id, as django-guid runs a request or a task."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django_guid.context import guid


@contextmanager
def request_id_bound(request_id: str) -> Iterator[None]:
    """Run a block under a request id, as django-guid runs a request or a task."""
    token = guid.set(request_id)
    try:
        yield
    finally:
        guid.reset(token)
