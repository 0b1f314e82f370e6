"""Fixtures of the webhook tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import clear_cache
from tests.webhooks.support import take_queued


@pytest.fixture
def empty_redis(celery_app: Any) -> Iterator[None]:
    """No queued marker, lookup budget or queued task left over from another test."""
    clear_cache()
    yield
    take_queued(celery_app)
    clear_cache()
