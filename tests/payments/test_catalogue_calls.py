"""The payment methods catalogue's refresh and the provider check (payments/catalogue/calls.py):
Celery tasks that call the provider and store what the pages and `/healthz/deps` read; and the
refresh a worker queues when it starts."""

from __future__ import annotations

from typing import Any

import pytest
from celery.signals import worker_ready
from django.core.cache import cache

from payments.catalogue.rules import CATALOGUE_CACHE_KEY, stored_catalogue
from payments.health import provider_check_read
from payments.task_names import METHODS_REFRESH_TASK as REFRESH_TASK
from payments.tasks import payment_methods_refresh_task, provider_check_task
from tests.helpers.broker import take_queued
from tests.helpers.cache import clear_cache
from tests.helpers.provider import Api
from tests.helpers.servers import free_port

pytestmark = pytest.mark.sandbox


@pytest.fixture(autouse=True)
def _fresh_cache(fresh_cache: None) -> None:
    """Every test starts with no stored catalogue, stamp or marker."""


def test_the_refresh_task_stores_the_catalogue_and_stamps_the_provider(provider: Api) -> None:
    """Given no stored catalogue, when the refresh task runs, then the pages' copy holds the
    provider's four methods and the provider check's stamp says it answered."""
    clear_cache()

    assert payment_methods_refresh_task.apply().get() == 4

    assert {entry.id for entry in stored_catalogue() or []} == {"visa", "master", "amex", "cashpay"}
    stamp = provider_check_read()
    assert stamp is not None and stamp["ok"] is True and stamp["ms"] >= 0


def test_a_failed_refresh_keeps_the_stored_copy_and_stamps_the_failure(
    provider: Api, settings: Any
) -> None:
    """Given a stored catalogue, when the provider cannot be reached, then the refresh keeps the
    copy (the pages go on showing it) and the stamp names the failure by its class."""
    before = cache.get(CATALOGUE_CACHE_KEY)
    assert before is not None
    settings.PAYMENTS_API_BASE_URL = f"http://127.0.0.1:{free_port()}"

    assert payment_methods_refresh_task.apply().get() == 0

    assert cache.get(CATALOGUE_CACHE_KEY) == before
    stamp = provider_check_read()
    assert stamp is not None
    assert (stamp["ok"], stamp.get("error")) == (False, "ProviderUnavailable")


def test_the_provider_check_task_stamps_each_outcome(provider: Api, settings: Any) -> None:
    """The check task stamps whether the provider answered (and accepted the credentials)."""
    assert provider_check_task.apply().get() is True
    assert (provider_check_read() or {}).get("ok") is True

    settings.PAYMENTS_ACCESS_TOKEN = "bm90OnZhbGlk"  # not:valid

    assert provider_check_task.apply().get() is False
    stamp = provider_check_read()
    assert stamp is not None
    assert (stamp["ok"], stamp.get("error")) == (False, "Unauthorized")


def test_a_starting_worker_queues_one_refresh(
    celery_app: Any, empty_broker: None, transactional_db: None
) -> None:
    """When workers start (three at once in the demo), one refresh of the catalogue is queued,
    not one per worker, so that a fresh shop's payment page has it within seconds."""
    take_queued(celery_app)

    for _ in range(3):
        worker_ready.send(sender=None)

    assert [name for name, _args in take_queued(celery_app)] == [REFRESH_TASK]
