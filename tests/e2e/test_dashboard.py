"""The owner's dashboard in a real browser: staff log in, read the month's figures on the
admin's home page in Spanish and in English, follow each "needs attention" link to the admin's
list of exactly those rows, and the page has no serious axe violation. With
UPDATE_SCREENSHOTS=1, docs/screenshots/dashboard-es.png and dashboard-en.png are taken of it,
on a month of demo data."""

from __future__ import annotations

import os
import random
import re
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from checkout.management.demo_catalogue import DEMO_PRODUCTS
from checkout.models import OrderMail
from dashboard.figures import owner_dashboard
from payments.models import AUTHORIZATION_VALIDITY
from tests.e2e.helpers import Shop, full_page_screenshot, log_in, violations
from tests.factories import (
    OrderFactory,
    PaymentEventFactory,
    PaymentFactory,
    RefundFactory,
    WebhookEventFactory,
)
from tests.helpers.paths import ROOT
from webhooks.models import GAVE_UP

pytestmark = pytest.mark.django_db(transaction=True)

ACCOUNTS = {"es-MX": ("consulta", "consulta-demo-2026"), "en-US": ("admin", "tienda-demo-2026")}
CHANGE_PAGE = re.compile(r"/admin/\w+/\w+/(\d+)/change/")


def charged(at: datetime, amount: Decimal, *, shipped: bool) -> Any:
    """A payment charged at `at` (its ledger's entry), for an order paid then."""
    order = OrderFactory(
        status="paid",
        fulfilment="shipped" if shipped else "unfulfilled",
        total=amount,
        created_at=at - timedelta(minutes=3),
    )
    payment = PaymentFactory(
        order=order,
        amount=amount,
        captured_amount=amount,
        status="approved",
        created_at=at - timedelta(minutes=2),
    )
    PaymentEventFactory(
        payment=payment, kind="created", old_status="", new_status="approved", created_at=at
    )
    return payment


def demo_month() -> dict[str, set[int]]:
    """A month of a small shop: a few charges a day at the catalogue's prices (some refunded,
    a few orders shipped), holds waiting for shipping, and a handful of rows that need
    attention. Returns the ids behind each attention link."""
    rng = random.Random(2026)
    prices = [Decimal(str(product["price"])) for product in DEMO_PRODUCTS]
    now = timezone.now()
    local_now = timezone.localtime(now)
    midnight = local_now.replace(hour=0, minute=0, second=0, microsecond=0)
    for days_ago in range(30, -1, -1):
        for _ in range(rng.randint(1, 5)):
            if days_ago == 0:
                minutes = max((now - midnight).seconds // 60, 2)
                at = max(now - timedelta(minutes=rng.randint(1, minutes)), midnight)
            else:
                hour = timedelta(minutes=rng.randint(8 * 60, 22 * 60))
                at = midnight - timedelta(days=days_ago) + hour
            amount = sum(rng.sample(prices, rng.randint(1, 3)), Decimal("0.00"))
            payment = charged(at, amount, shipped=days_ago > 2)
            if rng.random() < 0.12:
                RefundFactory(
                    payment=payment,
                    amount=(amount / 2).quantize(Decimal("0.01")),
                    created_at=at + timedelta(hours=1),
                )
    for days in (2, 9, 17, 26):
        authorized = now - timedelta(days=days)
        order = OrderFactory(status="authorized", total=prices[days % len(prices)])
        PaymentFactory(
            order=order,
            held=True,
            authorized_at=authorized,
            authorization_expires_at=authorized + AUTHORIZATION_VALIDITY,
        )
    unknown = {PaymentFactory(status="unknown").pk}
    given_up = {WebhookEventFactory(state="failed", last_error=f"{GAVE_UP}timeout").pk}
    failed = {WebhookEventFactory(state="failed", last_error="not found").pk for _ in range(2)}
    late = OrderFactory(status="paid", total=prices[0])
    OrderMail.objects.create(
        order=late, kind="paid", key="paid", created_at=now - timedelta(hours=3)
    )
    return {
        "attention-unknown": unknown,
        "attention-notifications-given-up": given_up,
        "attention-notifications-failed": failed,
        "attention-mails": {late.pk},
    }


def listed_on(page: Any) -> set[int]:
    """The ids of the rows the admin list on screen shows."""
    rows = page.locator("#result_list tbody tr")
    hrefs = [rows.nth(n).locator("a").first.get_attribute("href") for n in range(rows.count())]
    return {int(CHANGE_PAGE.search(href or "").group(1)) for href in hrefs}  # type: ignore[union-attr]


@pytest.mark.parametrize("locale", ["es-MX", "en-US"])
def test_the_dashboard_in_a_browser(
    e2e_browser: Any, live_server: Any, settings: Any, tmp_path: Path, locale: str
) -> None:
    """Logged in (consulta in Spanish, admin in English), staff read today's and the 30 days'
    sales as the database has them, the money held and the orders to ship; each attention
    link lands on the list of exactly its rows; no serious axe violation on the page."""
    settings.SHOP_BASE_URL = live_server.url
    call_command("seed_demo", verbosity=0)
    attention = demo_month()
    username, password = ACCOUNTS[locale]
    expected = owner_dashboard(user=get_user_model().objects.get(username=username))
    assert expected.sales is not None and expected.held is not None
    shop = Shop(url=live_server.url, api=None)  # type: ignore[arg-type]  # no provider needed
    page = log_in(e2e_browser, shop, username, password, locale=locale)

    today = page.locator("#sales-today td")
    expect(today.nth(0)).to_have_text(f"${expected.sales.today.charged.amount:,.2f}")
    expect(today.nth(1)).to_have_text(str(expected.sales.today.charged.count))
    month = page.locator("#sales-30-days td")
    expect(month.nth(0)).to_have_text(f"${expected.sales.month.charged.amount:,.2f}")
    expect(month.nth(2)).to_have_text(f"${expected.sales.month.refunded.amount:,.2f}")  # type: ignore[union-attr]
    expect(page.locator("#held-amount")).to_have_text(f"${expected.held.total.amount:,.2f}")
    expect(page.locator("#sales-chart rect.owner-bar")).to_have_count(30)
    title = {"es-MX": "La tienda de un vistazo", "en-US": "The shop at a glance"}[locale]
    expect(page.locator("#owner-dashboard-title")).to_have_text(title)
    expect(page.locator("#content-main .app-checkout")).to_be_visible()  # the models' list
    assert violations(page) == []

    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        path = ROOT / "docs" / "screenshots" / f"dashboard-{locale[:2]}.png"
        full_page_screenshot(page, path)
        assert path.stat().st_size > 10_000

    index = f"{live_server.url}{reverse('admin:index')}"
    for link_id, rows in attention.items():
        page.locator(f"#{link_id}").click()
        page.wait_for_url(re.compile(r"/admin/\w+/\w+/\?"))
        expect(page.locator("#result_list tbody tr")).to_have_count(len(rows))
        assert listed_on(page) == rows, link_id
        page.goto(index)
    page.locator("#to-ship-link").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(expected.to_ship or 0)
    page.context.close()
