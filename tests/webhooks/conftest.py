"""Fixtures of the webhook tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse

from tests.helpers.broker import take_queued
from tests.helpers.cache import clear_cache
from tests.helpers.provider import Api
from tests.webhooks.helpers import Shop


@pytest.fixture
def empty_redis(celery_app: Any) -> Iterator[None]:
    """No queued marker, lookup budget or queued task left over from another test."""
    clear_cache()
    yield
    take_queued(celery_app)
    clear_cache()


@pytest.fixture
def shop(live_server: Any, provider: Api, settings: Any) -> Shop:
    """Payments are created with no webhook address: every notification is sent by the test."""
    settings.PAYMENTS_WEBHOOK_TOKEN = "worker-" + uuid.uuid4().hex
    path = reverse("webhooks:payments", kwargs={"token": settings.PAYMENTS_WEBHOOK_TOKEN})
    return Shop(provider, f"{live_server.url}{path}")
