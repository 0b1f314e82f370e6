"""The payment page's buttons and the lists' actions of payments, subscriptions and notifications,
clicked in Chromium as admin (in English here; the order page's are clicked in Spanish in
test_admin.py): Capture in part, Cancel authorization, Refund in part, Capture from the list,
Cancel a subscription, Retry a failed notification; a slow capture said in progress then done, and
two staff members racing a capture and a cancellation. Checked in the database, at the provider
and on screen."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import expect

from checkout.models import Product
from payments.actions.subscription_calls import subscription_sync
from payments.models import Payment, Subscription
from payments.statuses import PaymentStatus
from staff_actions.models import StaffAction
from tests.e2e.helpers import Shop, log_in, success
from tests.helpers.shop import paid_order, remote_of
from webhooks.models import WebhookEvent, WebhookState

pytestmark = pytest.mark.django_db(transaction=True)
SEED_MARIA = "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b"  # a subscription the sandbox seeds


@pytest.fixture
def page(e2e_browser: Any, staff_shop: Shop) -> Any:
    page = log_in(e2e_browser, staff_shop, "admin", "tienda-demo-2026", locale="en-US")
    yield page
    page.context.close()


def open_payment(page: Any, shop: Shop, payment: Payment) -> None:
    page.goto(f"{shop.url}{reverse('admin:payments_payment_change', args=[payment.pk])}")


def payment_of(order: Any) -> Payment:
    return Payment.objects.get(external_reference=order.reference)


def test_capture_in_part_from_the_payment_page(
    page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    order = paid_order(staff_shop.api, (products["blusa"], 1))
    open_payment(page, staff_shop, payment_of(order))

    page.locator("#action-capture").click()
    expect(page.locator("#id_amount")).to_have_value("1290.00")
    page.locator("#id_amount").fill("1000.00")
    page.locator("input[type=submit]").click()

    expect(success(page)).to_contain_text("$1,000.00")
    assert remote_of(staff_shop.api, order)["captured_amount"] == Decimal("1000.00")
    assert payment_of(order).status == PaymentStatus.APPROVED


def test_cancel_then_refund_from_the_payment_page(
    page: Any, staff_shop: Shop, products: dict[str, Product], settings: Any
) -> None:
    held = paid_order(staff_shop.api, (products["blusa"], 1))
    open_payment(page, staff_shop, payment_of(held))
    page.locator("#action-cancel").click()
    page.locator("input[type=submit]").click()
    expect(success(page)).to_be_visible()
    assert remote_of(staff_shop.api, held)["status"] == "cancelled"

    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    charged = paid_order(staff_shop.api, (products["taza"], 2))
    open_payment(page, staff_shop, payment_of(charged))
    page.locator("#action-refund").click()
    page.locator("#id_amount").fill("289.00")
    page.locator("#id_reason").fill("Taza rota")
    page.locator("input[type=submit]").click()

    expect(success(page)).to_contain_text("$289.00")
    assert remote_of(staff_shop.api, charged)["amount_refunded"] == Decimal("289.00")


def choose_and_go(page: Any, shop: Shop, changelist: str, pk: int, action: str) -> None:
    page.goto(f"{shop.url}{reverse(changelist)}")
    page.locator(f'input.action-select[value="{pk}"]').check()
    page.locator('select[name="action"]').select_option(action)
    page.locator('button[name="index"]').click()


def test_capture_from_the_payments_list(
    page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    order = paid_order(staff_shop.api, (products["blusa"], 1))

    choose_and_go(
        page, staff_shop, "admin:payments_payment_changelist", payment_of(order).pk,
        "capture_selected",
    )  # fmt: skip

    expect(success(page)).to_contain_text(order.reference)
    assert remote_of(staff_shop.api, order)["captured_amount"] == Decimal("1290.00")


def test_cancel_a_subscription_from_its_list(page: Any, staff_shop: Shop) -> None:
    subscription: Subscription = subscription_sync(provider_id=SEED_MARIA)

    choose_and_go(
        page, staff_shop, "admin:payments_subscription_changelist", subscription.pk,
        "cancel_selected",
    )  # fmt: skip
    page.locator("input.deletelink").click()

    expect(success(page)).to_be_visible()
    subscription.refresh_from_db()
    assert subscription.status == "inactive"
    assert staff_shop.api.get(f"/subscriptions/{SEED_MARIA}").json()["status"] == "inactive"


def test_retry_a_failed_notification_from_its_list(
    page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    order = paid_order(staff_shop.api, (products["blusa"], 1))
    event = WebhookEvent.objects.create(
        provider_payment_id=payment_of(order).provider_id,
        event_type="UPDATE",
        state=WebhookState.FAILED,
        attempts=5,
        last_error="Gave up after retries.",
    )

    choose_and_go(
        page, staff_shop, "admin:webhooks_webhookevent_changelist", event.pk, "retry_selected"
    )

    expect(success(page)).to_contain_text("1 notification queued for retry.")

    def processed() -> bool:
        event.refresh_from_db()
        return event.state == WebhookState.PROCESSED

    from tests.helpers.waiting import wait_until

    wait_until(processed, timeout=20)
    assert str(uuid.UUID(event.provider_payment_id)) == payment_of(order).provider_id


def test_cancel_and_refresh_from_the_payments_list(
    page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    held = paid_order(staff_shop.api, (products["blusa"], 1))
    moved = paid_order(staff_shop.api, (products["taza"], 1))
    staff_shop.api.patch(f"/payments/{payment_of(moved).provider_id}", {"status": "cancelled"})

    choose_and_go(
        page, staff_shop, "admin:payments_payment_changelist", payment_of(held).pk,
        "cancel_selected",
    )  # fmt: skip
    expect(success(page)).to_contain_text(held.reference)
    choose_and_go(
        page, staff_shop, "admin:payments_payment_changelist", payment_of(moved).pk,
        "refresh_selected",
    )  # fmt: skip

    expect(success(page)).to_contain_text(moved.reference)
    assert remote_of(staff_shop.api, held)["status"] == "cancelled"
    assert payment_of(held).status == PaymentStatus.CANCELLED
    assert payment_of(moved).status == PaymentStatus.CANCELLED


def test_replay_a_processed_notification_from_its_list(
    page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    order = paid_order(staff_shop.api, (products["blusa"], 1))
    event = WebhookEvent.objects.create(
        provider_payment_id=payment_of(order).provider_id,
        event_type="UPDATE",
        state=WebhookState.PROCESSED,
    )

    choose_and_go(
        page, staff_shop, "admin:webhooks_webhookevent_changelist", event.pk, "replay_selected"
    )

    expect(success(page)).to_contain_text("1 notification replayed.")


def test_import_a_subscription_by_its_id(page: Any, staff_shop: Shop) -> None:
    jorge = "7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"  # seeded by the sandbox
    page.goto(f"{staff_shop.url}{reverse('admin:payments_subscription_changelist')}")
    page.locator(f'a[href="{reverse("admin:payments_subscription_import")}"]').click()

    page.locator("#id_provider_id").fill(jorge)
    page.locator("input[type=submit]").click()

    expect(success(page)).to_be_visible()
    assert Subscription.objects.filter(provider_id=jorge).exists()


def test_a_slow_capture_says_in_progress_then_what_was_charged(
    page: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    """The provider takes 3 s to answer the capture: the admin answers at once, back on the
    payment page, which says the capture is in progress, then (reloading itself) what was
    charged. The payment is captured, once, in the shop and at the provider."""
    order = paid_order(staff_shop.api, (products["blusa"], 1))
    payment = payment_of(order)
    staff_shop.api.add_fault(path="/payments", method="PATCH", latency_ms=3000)
    open_payment(page, staff_shop, payment)

    page.locator("#action-capture").click()
    page.locator("#id_amount").fill("1000.00")
    page.locator("input[type=submit]").click()

    expect(page.locator("#staff-actions")).to_contain_text("capture in progress")
    assert page.url.endswith(reverse("admin:payments_payment_change", args=[payment.pk]))
    assert payment_of(order).status == PaymentStatus.AUTHORIZED  # not yet
    expect(success(page)).to_contain_text(f"{order.reference}: captured $1,000.00.")
    expect(page.locator("#staff-actions")).to_have_count(0)
    assert payment_of(order).captured_amount == Decimal("1000.00")
    assert remote_of(staff_shop.api, order)["captured_amount"] == Decimal("1000.00")


def test_two_staff_capture_and_cancel_at_once_one_wins(
    e2e_browser: Any, staff_shop: Shop, products: dict[str, Product]
) -> None:
    """Two staff members, each in their own browser, confirm a capture and a cancellation of
    one authorization at the same moment: exactly one is done; the other is told at once that
    another action is running. The payment ends either captured or cancelled, never both."""
    order = paid_order(staff_shop.api, (products["blusa"], 1))
    payment = payment_of(order)
    staff_shop.api.add_fault(path="/payments", method="PATCH", latency_ms=1500)
    get_user_model().objects.create_superuser("supervisora", "sup@tienda.example", "otra-2026")
    capturer = log_in(e2e_browser, staff_shop, "admin", "tienda-demo-2026", locale="en-US")
    canceller = log_in(e2e_browser, staff_shop, "supervisora", "otra-2026", locale="en-US")
    try:
        for who, action in ((capturer, "capture"), (canceller, "cancel")):
            who.goto(
                f"{staff_shop.url}{reverse(f'admin:payments_payment_{action}', args=[payment.pk])}"
            )
        capturer.locator("input[type=submit]").click(no_wait_after=True)
        canceller.locator("input[type=submit]").click(no_wait_after=True)

        for who in (capturer, canceller):
            expect(who.locator("ul.messagelist li").first).to_be_visible()
        errors = [who for who in (capturer, canceller) if who.locator("li.error").count()]
        assert len(errors) == 1
        expect(errors[0].locator("li.error")).to_contain_text("Another action (")
        winner = canceller if errors[0] is capturer else capturer
        expect(success(winner)).to_contain_text(order.reference)
    finally:
        capturer.context.close()
        canceller.context.close()

    assert StaffAction.objects.filter(payment=payment).count() == 1
    final = payment_of(order)
    remote = remote_of(staff_shop.api, order)
    if winner is capturer:
        assert (final.status, final.captured_amount) == (PaymentStatus.APPROVED, Decimal("1290.00"))
        assert remote["status"] == "approved"
    else:
        assert (final.status, final.captured_amount) == (PaymentStatus.CANCELLED, Decimal("0"))
        assert remote["status"] == "cancelled"
