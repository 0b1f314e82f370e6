"""Paying while Redis is away, with every part of the shop in a process of its own
(tests/helpers/processes.py): Chromium on the shop under gunicorn, its workers and beat."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest
from playwright.sync_api import expect

from payments.models import Payment
from payments.statuses import PaymentStatus
from tests.e2e.helpers import PRODUCT, Shop, Shopper, expect_paid_order_page
from tests.factories import ProductFactory
from tests.helpers.processes import Processes
from tests.helpers.provider import VISA, Api
from tests.helpers.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]


def test_a_shopper_paying_while_redis_is_down_is_paid_once_it_is_back(
    processes: Processes, provider: Api, e2e_browser: Any
) -> None:
    """Given the payment page open, when Redis goes away and the shopper presses Pay, the
    attempt is stored and answered at once (counted per order in the database) and the page
    keeps saying it is processing, nothing sent; once Redis is back, beat's sweep queues the
    create and the page lands on the order, paid once."""

    shop = processes
    ProductFactory(
        slug=PRODUCT, name="Taza de Talavera", price=Decimal("289.00"), stock=10, active=True,
        image="img/products/taza-talavera.svg",
    )  # fmt: skip
    context = e2e_browser.new_context(locale="es-MX")
    page = context.new_page()
    try:
        shopper = Shopper(page, Shop(url=shop.url, api=provider))
        shopper.reach_payment_page()
        shopper.type_card(VISA)
        shop.redis.close()

        with page.expect_response(
            lambda r: r.request.method == "POST" and "/pagos/" in r.url
        ) as answer:
            shopper.pay()

        assert (answer.value.status, answer.value.json()["result"]) == (202, "processing")
        expect(page.locator("#pay-status")).to_have_text("Procesando tu pago…")
        (stored,) = shopper.payments()
        assert stored.status == PaymentStatus.CREATING and stored.create_request
        time.sleep(3)  # a sweep's worth: nothing can be queued, nothing is sent
        assert shopper.provider_payments() == []
        expect(page.locator("#pay-status")).to_have_text("Procesando tu pago…")
        shop.redis.open()

        wait_until(lambda: shop.supervise() or bool(shopper.provider_payments()), timeout=60)
        expect_paid_order_page(shopper)
        (paid,) = Payment.objects.filter(external_reference=shopper.reference)
        assert paid.status == PaymentStatus.APPROVED
        assert len(shopper.provider_payments()) == 1
    finally:
        shop.redis.open()
        context.close()
