"""The gauges /metrics reads from the database: equal to what the database holds, a fixed
number of queries whatever the rows, each served by an index, and computed at most once per
METRICS_DB_GAUGES_CACHE_SECONDS however many scrapes come."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.db.models import Sum
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from checkout.models import OrderMail
from payments.models import Payment
from tests.factories import OrderFactory, PaymentFactory, WebhookEventFactory
from tests.helpers.cache import clear_cache
from tests.helpers.database import plan_of
from tests.helpers.metrics import TOKEN, scrape, value

pytestmark = pytest.mark.django_db


@pytest.fixture
def metrics_token(settings: Any, fresh_cache: None) -> str:
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


def fill(rows: int) -> None:
    """`rows` of each thing a gauge counts (and finished ones it must not count)."""
    now = timezone.now()
    order = OrderFactory()
    for n in range(rows):
        PaymentFactory(status="unknown", created_at=now - timedelta(minutes=40 + n))
        PaymentFactory(status="creating")
        PaymentFactory(
            held=True,
            amount=Decimal("100.10"),
            authorization_expires_at=now + timedelta(days=1, minutes=n),
        )
        PaymentFactory(
            held=True, amount=Decimal("50.05"), authorization_expires_at=now + timedelta(days=20)
        )
        PaymentFactory(status="approved")
        WebhookEventFactory(state="failed")
        WebhookEventFactory(state="received", received_at=now - timedelta(minutes=5 + n))
        WebhookEventFactory(state="processed")
        OrderMail.objects.create(order=order, kind="received", key=f"k-{n}")
        OrderMail.objects.create(order=order, kind="paid", key=f"s-{n}", sent_at=now)


def test_gauges_equal_what_the_database_holds(client: Client, metrics_token: str) -> None:
    """Attempts in flight and the oldest's age, authorizations held and expiring within three
    days with their amounts (to the cent), notifications by unfinished state, unsent mails."""
    fill(3)
    samples = scrape(client)

    assert value(samples, "shop_payment_attempts_in_flight", status="unknown") == 3
    assert value(samples, "shop_payment_attempts_in_flight", status="creating") == 3
    oldest = value(samples, "shop_payment_attempts_in_flight_oldest_seconds", status="unknown")
    assert 42 * 60 <= oldest < 43 * 60
    authorized = Payment.objects.filter(status="authorized")
    assert value(samples, "shop_authorizations_held") == authorized.count() == 6
    held = authorized.aggregate(total=Sum("amount"))["total"]
    assert held == Decimal("450.45")
    assert value(samples, "shop_authorizations_held_amount") == float(held)
    assert value(samples, "shop_authorizations_expiring") == 3
    assert value(samples, "shop_authorizations_expiring_amount") == float(Decimal("300.30"))
    assert value(samples, "shop_notifications", state="failed") == 3
    assert value(samples, "shop_notifications", state="received") == 3
    assert value(samples, "shop_notifications", state="processing") == 0
    assert 7 * 60 <= value(samples, "shop_notifications_oldest_seconds", state="received") < 8 * 60
    assert value(samples, "shop_mails_unsent") == 3
    assert value(samples, "shop_db_gauges_up") == 1


def _gauge_queries(client: Client) -> list[str]:
    clear_cache()
    with CaptureQueriesContext(connection) as captured:
        scrape(client)
    return [query["sql"] for query in captured.captured_queries]


def test_a_scrape_costs_the_same_queries_with_1_or_60_rows(
    client: Client, metrics_token: str
) -> None:
    """The same number of queries with 60 rows of everything as with one."""
    fill(1)
    one = _gauge_queries(client)
    fill(59)
    sixty = _gauge_queries(client)
    assert len(one) == len(sixty) == 4


def test_gauges_are_read_through_indexes(client: Client, metrics_token: str) -> None:
    """Each of the gauges' queries can be served by an index (never a read of a whole table:
    the database may hold a million orders)."""
    fill(2)
    for sql in _gauge_queries(client):
        plan = plan_of(sql)
        assert "Seq Scan" not in plan, plan
        assert "Index" in plan, plan


def test_gauges_are_computed_once_per_cache_period(
    client: Client, metrics_token: str, settings: Any
) -> None:
    """A second scrape within METRICS_DB_GAUGES_CACHE_SECONDS costs no query and shows the
    same values; with the period at 0, every scrape reads the database."""
    fill(1)
    first = _gauge_queries(client)
    assert first
    PaymentFactory(status="unknown")
    with CaptureQueriesContext(connection) as captured:
        samples = scrape(client)
    assert captured.captured_queries == []
    assert value(samples, "shop_payment_attempts_in_flight", status="unknown") == 1

    settings.METRICS_DB_GAUGES_CACHE_SECONDS = 0
    assert len(_gauge_queries(client)) == len(first)
    samples = scrape(client)
    assert value(samples, "shop_payment_attempts_in_flight", status="unknown") == 2
