"""Paying while the provider is slow: the shop answers the attempt at once and the page follows
the payment's creation (made by a Celery task) on the shop's status endpoint. Chromium on the
live shop, the in-process worker, a live sandbox told to take its time."""

from __future__ import annotations

import time
from typing import Any

import pytest
from playwright.sync_api import expect

from payments.statuses import PaymentStatus
from tests.e2e.helpers import Shop, Shopper, expect_paid_order_page
from tests.helpers.provider import THREE_DS, VISA

pytestmark = pytest.mark.django_db(transaction=True)


def is_attempt(request: Any) -> bool:
    return request.method == "POST" and "/pagos/" in request.url


def attempts_posted(page: Any) -> list[Any]:
    """The pay attempts the page posts (filled as they go)."""
    posted: list[Any] = []
    page.on("request", lambda request: posted.append(request) if is_attempt(request) else None)
    return posted


def pay_and_answer(shopper: Shopper) -> tuple[int, dict[str, Any], float]:
    """Press Pay; the attempt's answer (status, body) and how long it took from the click."""
    started = time.monotonic()
    with shopper.page.expect_response(lambda response: is_attempt(response.request)) as answer:
        shopper.pay()
    response = answer.value
    return response.status, response.json(), time.monotonic() - started


def test_with_the_provider_taking_3_s_the_page_says_processing_then_paid(
    page: Any, shop: Shop
) -> None:
    """Given the provider answering creates after 3 s, when the shopper pays, the attempt is
    answered at once (202, processing), the page says "Procesando tu pago…" in its status
    region while the worker waits on the provider, then lands on the paid order."""
    shop.api.add_fault(path="/payments", method="POST", latency_ms=3000)
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(VISA)

    code, body, took = pay_and_answer(shopper)

    assert (code, body["result"]) == (202, "processing")
    assert took < 3  # answered before the provider was
    status = page.locator("#pay-status[role=status][aria-live=polite]")
    expect(status).to_have_text("Procesando tu pago…")
    assert [p.status for p in shopper.payments()] == [PaymentStatus.CREATING]
    expect_paid_order_page(shopper)
    assert [p.status for p in shopper.payments()] == [PaymentStatus.APPROVED]
    assert len(shopper.provider_payments()) == 1


def test_the_3_d_secure_challenge_opens_from_the_polled_address(page: Any, shop: Shop) -> None:
    """Given a 3-D Secure card, the attempt's answer has no challenge yet (processing); the page
    opens the bank's modal from the address the status endpoint gives once the create is
    back, and the code passed there pays the order."""
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    shopper.type_card(THREE_DS)
    code, body, _ = pay_and_answer(shopper)

    assert (code, body["result"], body["three_ds_url"]) == (202, "processing", "")
    shopper.wait_for_challenge()
    (payment,) = shopper.payments()
    frame_url = page.locator("#threeds-frame iframe").get_attribute("src")
    assert frame_url == payment.three_ds_url
    shopper.answer_challenge("123456")

    expect_paid_order_page(shopper)
    assert [p.status for p in shopper.payments()] == [PaymentStatus.APPROVED]


def test_a_double_click_on_pay_is_one_payment(page: Any, shop: Shop) -> None:
    """Given a slow provider, when the shopper double-clicks Pay, and the page's request is
    sent again besides (a browser retrying a request whose answer it lost), the order has one
    attempt and the provider one payment."""
    shop.api.add_fault(path="/payments", method="POST", latency_ms=1500)
    shopper = Shopper(page, shop)
    shopper.reach_payment_page()
    posted = attempts_posted(page)
    shopper.type_card(VISA)

    with page.expect_response(lambda response: is_attempt(response.request)):
        page.locator("#pay-button").dblclick()
    expect(page.locator("#pay-status")).to_have_text("Procesando tu pago…")
    (first,) = posted
    again = page.request.post(
        first.url,
        data=first.post_data,
        headers={
            k: v for k, v in first.headers.items() if k.lower() in ("content-type", "x-csrftoken")
        },
    )

    assert again.status in (200, 202), again.text()
    expect_paid_order_page(shopper)
    assert len(posted) == 1
    (payment,) = shopper.payments()
    assert payment.status == PaymentStatus.APPROVED
    assert len(shopper.provider_payments()) == 1
