"""Paying an order: the JSON payment endpoint and the status check, against the live sandbox."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from typing import Any

import pytest
import requests
from django.conf import settings
from django.core import mail
from django.test import Client
from django.urls import reverse

from checkout.models import Order, OrderStatus, Product
from payments.models import Payment
from payments.provider.client import PaymentsClient
from tests.factories import OrderFactory
from tests.helpers.html import html
from tests.helpers.provider import DECLINED, MASTER, THREE_DS, VISA, Api
from tests.helpers.servers import free_port
from tests.helpers.shop import CUSTOMER, creates_sent_here, own, place_order, shopper

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]
WEBHOOK_TOKEN = "checkout-tests-webhook-token"


@pytest.fixture
def shop(provider: Api, settings: Any) -> Api:
    """The shop on the live sandbox; its own address is a closed port, so webhooks go nowhere."""
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.PAYMENTS_WEBHOOK_TOKEN = WEBHOOK_TOKEN
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    return provider


@pytest.fixture
def product(taza: Product) -> Product:
    """The product these tests buy: the taza."""
    return taza


@pytest.fixture
def order(browser: Client, product: Product) -> Order:
    return place_order(browser, (product, 2))


def new_attempt() -> str:
    return uuid.uuid4().hex


def attempt(
    client: Client,
    order: Order,
    token: str | None,
    *,
    attempt_id: str | None = None,
    session_id: str = "sess_checkout_test",
    settle: bool = True,
    **headers: Any,
) -> Any:
    """One attempt. `settle`: an attempt taken (202) has its create sent here, as its task
    does, and the answer is the status endpoint's then (what the page polls for)."""
    body: dict[str, Any] = {
        "attempt_id": attempt_id or new_attempt(),
        "session_id": session_id,
        "user_agent": "pytest",
    }
    if token is not None:
        body["card_token"] = token
    if not settle:
        return post_raw(client, order, json.dumps(body), **headers)
    with creates_sent_here():
        taken = post_raw(client, order, json.dumps(body), **headers)
    if taken.status_code != 202:
        return taken
    assert taken.json()["result"] == "processing", taken.json()
    return status_of(client, order)


def post_raw(client: Client, order: Order, raw: str | bytes, **headers: Any) -> Any:
    return client.post(
        reverse("checkout:pay_attempt", args=[order.reference]),
        data=raw,
        content_type="application/json",
        **headers,
    )


def status_of(client: Client, order: Order, payment_id: str = "") -> Any:
    url = reverse("checkout:payment_status", args=[order.reference])
    return client.get(url, {"payment_id": payment_id} if payment_id else {})


def token(provider: Api, number: str = VISA) -> str:
    return provider.card_token(number)["id"]


def order_url(order: Order) -> str:
    return reverse("checkout:order", args=[order.reference])


def status(order: Order) -> str:
    order.refresh_from_db()
    return order.status


def assert_error(response: Any, code: int, error: str) -> dict[str, Any]:
    """The shop's error shape: a code, a message for people, and what is wrong with each member
    at fault when the body did not validate."""
    assert response.status_code == code, response.content
    body = response.json()
    assert body["error"] == error, body
    assert isinstance(body["message"], str) and body["message"]
    fields = {"fields"} if error == "invalid" else set()
    assert set(body) == {"error", "message", *fields}
    return body


# --- Outcomes -------------------------------------------------------------------------------


def test_approved_card_pays_the_order(
    shop: Api,
    browser: Client,
    order: Order,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """An approved card: result approved, a redirect to the order page, the order paid, and
    its confirmation mailed by a task of its own."""
    with django_capture_on_commit_callbacks(execute=True):
        response = attempt(browser, order, token(shop))
    assert mail.outbox == []  # not inside the shopper's request
    assert run_queued() == [
        "checkout.tasks.order_sync_task",
        "checkout.tasks.order_mail_send_task",
    ]
    assert response.status_code == 200
    body = response.json()
    assert body["result"] == "approved"
    assert body["order_status"] == OrderStatus.PAID
    assert body["redirect"] == order_url(order)
    assert body["payment_id"]
    assert body["three_ds_url"] == ""
    assert isinstance(body["message"], str) and body["message"]
    assert status(order) == OrderStatus.PAID
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [CUSTOMER["email"]]
    (payment,) = Payment.objects.filter(external_reference=order.reference)
    assert payment.provider_id == body["payment_id"]
    assert payment.amount == order.total == Decimal("578.00")
    page = html(browser.get(order_url(order)))
    assert "status-paid" in page.one("p", id="order-status").classes
    assert not page.find_all("a", href=reverse("checkout:pay", args=[order.reference]))


def test_payment_sent_to_the_provider(shop: Api, browser: Client, order: Order) -> None:
    """The provider's payment carries the order's reference, amount, customer and URLs."""
    body = attempt(browser, order, token(shop), session_id="sess_fingerprint_42").json()
    (remote,) = shop.payments()
    assert remote["id"] == body["payment_id"]
    assert remote["external_reference"] == order.reference
    assert Decimal(str(remote["amount"])) == order.total
    assert remote["currency"] == "MXN"
    assert remote["capture_method"] == "automatic"
    customer = remote["customer"]
    assert customer["first_name"] == "Ana"
    assert customer["last_name"] == "Pérez"
    assert customer["email"] == "ana@example.com"
    assert customer["phone"] == "5512345678"
    assert customer["address"]["postal_code"] == "72000"
    assert customer["address"]["state"] == "Puebla"
    assert customer["address"]["country"] == "MX"
    assert remote["return_url"] == f"http://localhost{order_url(order)}"
    assert remote["webhook_url"] == (f"{settings.SHOP_BASE_URL}/webhooks/payments/{WEBHOOK_TOKEN}/")


def test_prevention_data_carries_the_session_id(
    shop: Api, browser: Client, order: Order, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The device fingerprint sent to the provider is the SDK's session id."""
    sent: list[dict[str, Any]] = []
    original = PaymentsClient.create_payment

    def spy(self: PaymentsClient, *, body: dict[str, Any], idempotency_key: str) -> Any:
        sent.append(body)
        return original(self, body=body, idempotency_key=idempotency_key)

    monkeypatch.setattr(PaymentsClient, "create_payment", spy)
    response = attempt(browser, order, token(shop), session_id="sess_fingerprint_42")
    assert response.json()["result"] == "approved"
    (body,) = sent
    prevention = body["prevention_data"]
    assert prevention["device_finger_print_token"] == "sess_fingerprint_42"
    assert prevention["session_id"] == "sess_fingerprint_42"
    assert prevention["user_agent"] == "pytest"
    assert body["external_reference"] == order.reference


def test_manual_capture_holds_the_amount(
    shop: Api,
    browser: Client,
    order: Order,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """With manual capture the card is authorized and the order is authorized (and emailed)."""
    settings.PAYMENTS_CAPTURE_METHOD = "manual"
    with django_capture_on_commit_callbacks(execute=True):
        body = attempt(browser, order, token(shop, MASTER)).json()
    assert run_queued() == [
        "checkout.tasks.order_sync_task",
        "checkout.tasks.order_mail_send_task",
    ]
    assert body["result"] == "authorized"
    assert body["order_status"] == OrderStatus.AUTHORIZED
    assert body["redirect"] == order_url(order)
    assert status(order) == OrderStatus.AUTHORIZED
    assert shop.payments()[0]["capture_method"] == "manual"
    assert len(mail.outbox) == 1
    page = html(browser.get(order_url(order)))
    assert "status-authorized" in page.one("p", id="order-status").classes
    assert status_of(browser, order).json()["result"] == "authorized"


def test_three_ds_card_then_challenge_passed(
    shop: Api,
    browser: Client,
    order: Order,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """A 3-D Secure card is pending with a challenge; once passed, the status check says paid."""
    with django_capture_on_commit_callbacks(execute=True):
        body = attempt(browser, order, token(shop, THREE_DS)).json()
    assert body["result"] == "pending"
    assert body["three_ds_url"].startswith(shop.base_url)
    assert body["payment_id"]
    assert body["redirect"] == ""
    assert run_queued() == [
        "payments.tasks.payment_refresh_task",  # the page asked: still pending at the provider
        "checkout.tasks.order_sync_task",
    ]
    assert status(order) == OrderStatus.AWAITING_AUTHENTICATION
    assert mail.outbox == []

    still = status_of(browser, order, body["payment_id"]).json()
    assert (still["result"], still["order_status"]) == ("pending", "awaiting_authentication")

    answer = requests.post(
        body["three_ds_url"], data={"action": "submit", "code": "123456"}, timeout=10
    )
    assert answer.status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        asked = status_of(browser, order, body["payment_id"])
    assert asked.json()["result"] == "pending"  # the shop's records: a read is queued
    assert run_queued() == [
        "payments.tasks.payment_refresh_task",
        "checkout.tasks.order_sync_task",
        "checkout.tasks.order_mail_send_task",
    ]
    checked = status_of(browser, order, body["payment_id"])
    assert checked.status_code == 200
    result = checked.json()
    assert result["result"] == "approved"
    assert result["order_status"] == OrderStatus.PAID
    assert result["redirect"] == order_url(order)
    assert result["payment_id"] == body["payment_id"]
    assert status(order) == OrderStatus.PAID
    assert len(mail.outbox) == 1


def test_three_ds_challenge_failed_then_retry(
    shop: Api,
    browser: Client,
    order: Order,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """A failed challenge leaves the order payable (payment_failed); a new card then pays it."""
    body = attempt(browser, order, token(shop, THREE_DS)).json()
    requests.post(body["three_ds_url"], data={"action": "submit", "code": "000000"}, timeout=10)
    with django_capture_on_commit_callbacks(execute=True):
        status_of(browser, order, body["payment_id"])
    assert run_queued() == [
        "payments.tasks.payment_refresh_task",
        "checkout.tasks.order_sync_task",
    ]
    result = status_of(browser, order, body["payment_id"]).json()
    assert result["result"] == "rejected"
    assert result["redirect"] == ""
    assert result["message"]
    assert status(order) == OrderStatus.PAYMENT_FAILED
    with django_capture_on_commit_callbacks(execute=True):
        assert attempt(browser, order, token(shop)).json()["result"] == "approved"
    assert run_queued() == [
        "checkout.tasks.order_sync_task",
        "checkout.tasks.order_mail_send_task",
    ]
    assert status(order) == OrderStatus.PAID


def test_declined_card_then_a_new_attempt_pays(
    shop: Api,
    browser: Client,
    order: Order,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """A declined card: rejected with a message, order payment_failed; a new attempt succeeds."""
    with django_capture_on_commit_callbacks(execute=True):
        response = attempt(browser, order, token(shop, DECLINED))
    assert response.status_code == 200
    body = response.json()
    assert body["result"] == "rejected"
    assert body["order_status"] == OrderStatus.PAYMENT_FAILED
    assert isinstance(body["message"], str) and body["message"]
    assert body["redirect"] == ""
    assert run_queued() == ["checkout.tasks.order_sync_task"]
    assert status(order) == OrderStatus.PAYMENT_FAILED
    assert mail.outbox == []
    page = html(browser.get(reverse("checkout:pay", args=[order.reference])))
    page.one("button", id="pay-button")

    with django_capture_on_commit_callbacks(execute=True):
        second = attempt(browser, order, token(shop)).json()
    assert second["result"] == "approved"
    assert second["payment_id"] != body["payment_id"]
    assert run_queued() == [
        "checkout.tasks.order_sync_task",
        "checkout.tasks.order_mail_send_task",
    ]
    assert status(order) == OrderStatus.PAID
    assert len(shop.payments()) == 2
    assert Payment.objects.filter(external_reference=order.reference).count() == 2
    assert len(mail.outbox) == 1


# --- Idempotency and closed orders ---------------------------------------------------------


def test_same_attempt_twice_pays_once(shop: Api, browser: Client, order: Order) -> None:
    """The same attempt_id posted twice makes one provider payment and answers the same."""
    attempt_id = new_attempt()
    card = token(shop)
    first = attempt(browser, order, card, attempt_id=attempt_id)
    second = attempt(browser, order, card, attempt_id=attempt_id)
    assert first.status_code == 200
    assert len(shop.payments()) == 1
    assert Payment.objects.filter(external_reference=order.reference).count() == 1
    assert second.status_code == 200, second.content
    assert second.json()["result"] == first.json()["result"] == "approved"
    assert second.json()["payment_id"] == first.json()["payment_id"]


def test_same_attempt_twice_while_pending(shop: Api, browser: Client, order: Order) -> None:
    """A repeated attempt during 3-D Secure returns the same pending payment, not a new one."""
    attempt_id = new_attempt()
    card = token(shop, THREE_DS)
    first = attempt(browser, order, card, attempt_id=attempt_id).json()
    second = attempt(browser, order, card, attempt_id=attempt_id).json()
    assert first["result"] == second["result"] == "pending"
    assert first["payment_id"] == second["payment_id"]
    assert first["three_ds_url"] == second["three_ds_url"]
    assert len(shop.payments()) == 1


def test_same_declined_attempt_twice(shop: Api, browser: Client, order: Order) -> None:
    """A repeated declined attempt answers the same decline without asking the provider again."""
    attempt_id = new_attempt()
    card = token(shop, DECLINED)
    first = attempt(browser, order, card, attempt_id=attempt_id).json()
    second = attempt(browser, order, card, attempt_id=attempt_id).json()
    assert first["result"] == second["result"] == "rejected"
    assert first["payment_id"] == second["payment_id"]
    assert first["message"] == second["message"]
    assert len(shop.payments()) == 1


def test_paid_order_refuses_a_new_attempt(
    shop: Api,
    browser: Client,
    order: Order,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """Once paid, a new attempt is a 409 and makes no second payment: at once (before the
    order's sync task has run), and after it."""
    with django_capture_on_commit_callbacks(execute=True):
        assert attempt(browser, order, token(shop)).json()["result"] == "approved"
    response = attempt(browser, order, token(shop))
    assert_error(response, 409, "conflict")
    assert run_queued() == [
        "checkout.tasks.order_sync_task",
        "checkout.tasks.order_mail_send_task",
    ]
    assert status(order) == OrderStatus.PAID
    assert_error(attempt(browser, order, token(shop)), 409, "conflict")
    assert len(shop.payments()) == 1


@pytest.mark.parametrize("closed", ["paid", "authorized", "cancelled", "refunded"])
def test_closed_order_refuses_to_pay(shop: Api, product: Product, closed: str) -> None:
    """An order that is paid, held or closed answers 409 and nothing is created."""
    browser = own(shopper(), OrderFactory(lines=[(product, 1)], status=closed))
    order = Order.objects.get()
    assert_error(attempt(browser, order, token(shop)), 409, "conflict")
    assert Payment.objects.count() == 0
    assert shop.payments() == []


# --- Bad requests ---------------------------------------------------------------------------


def _over_4kb() -> str:
    return json.dumps({"card_token": "tok", "attempt_id": new_attempt(), "user_agent": "x" * 4200})


BAD_BODIES = {
    "missing card_token": json.dumps({"attempt_id": "a" * 32}),
    "empty card_token": json.dumps({"card_token": "", "attempt_id": "a" * 32}),
    "missing attempt_id": json.dumps({"card_token": "tok"}),
    "attempt_id too short": json.dumps({"card_token": "tok", "attempt_id": "a" * 31}),
    "attempt_id too long": json.dumps({"card_token": "tok", "attempt_id": "a" * 33}),
    "attempt_id not hex": json.dumps({"card_token": "tok", "attempt_id": "g" * 32}),
    "attempt_id in capitals": json.dumps({"card_token": "tok", "attempt_id": "A" * 32}),
    "attempt_id a number": json.dumps({"card_token": "tok", "attempt_id": 12345}),
    "card_token a number": json.dumps({"card_token": 12, "attempt_id": "a" * 32}),
    "session_id an object": json.dumps(
        {"card_token": "tok", "attempt_id": "a" * 32, "session_id": {"a": 1}}
    ),
    "invalid JSON": "{not json",
    "not UTF-8": b"\xff\xfe{}",
    "NaN": '{"card_token": "tok", "attempt_id": NaN}',
    "JSON array": json.dumps([{"card_token": "tok", "attempt_id": "a" * 32}]),
    "JSON string": json.dumps("card_token"),
    "JSON null": "null",
    "body over 4 KB": _over_4kb(),
}
ERRORS = {
    "invalid JSON": (400, "invalid_json"),
    "not UTF-8": (400, "invalid_json"),
    "NaN": (400, "invalid_json"),
    "JSON array": (400, "invalid_body"),
    "JSON string": (400, "invalid_body"),
    "JSON null": (400, "invalid_body"),
    "body over 4 KB": (413, "too_large"),
}


@pytest.mark.parametrize("name", BAD_BODIES)
def test_bad_request_is_refused_and_creates_nothing(
    shop: Api, browser: Client, order: Order, name: str
) -> None:
    """A malformed payment request answers the shop's error ({error, message}, and `fields`
    naming the members at fault when the body did not validate) and creates nothing."""
    response = post_raw(browser, order, BAD_BODIES[name])

    code, error = ERRORS.get(name, (400, "invalid"))
    body = assert_error(response, code, error)
    if error == "invalid":
        assert body["message"].startswith("La solicitud de pago está incompleta: ")
        assert set(body["fields"]) <= {"card_token", "attempt_id", "session_id"}
    assert Payment.objects.count() == 0
    assert shop.payments() == []
    assert status(order) == OrderStatus.AWAITING_PAYMENT


def test_body_of_exactly_4_kb_is_read(shop: Api, browser: Client, order: Order) -> None:
    """A body of up to 4 KB is accepted (the limit is on the size, not on the content)."""
    body = {"card_token": token(shop), "attempt_id": new_attempt(), "user_agent": ""}
    padding = 4096 - len(json.dumps(body))
    body["user_agent"] = "x" * min(padding, 512)
    raw = json.dumps(body).ljust(4096)
    assert len(raw) == 4096
    taken = post_raw(browser, order, raw)
    assert (taken.status_code, taken.json()["result"]) == (202, "processing")


# --- Who may pay ----------------------------------------------------------------------------


def test_another_sessions_order_is_404(shop: Api, order: Order) -> None:
    """Another browser cannot pay, or check the payment of, someone else's order."""
    stranger = shopper()
    response = attempt(stranger, order, token(shop))
    assert response.status_code == 404
    assert status_of(stranger, order).status_code == 404
    assert Payment.objects.count() == 0
    assert shop.payments() == []


def test_unknown_order_is_404(shop: Api, browser: Client) -> None:
    """Paying a reference that is no order is a 404."""
    ghost = Order(reference="ORD-ZZZZZ")
    assert attempt(browser, ghost, "tok").status_code == 404


def test_pay_endpoint_refuses_get(browser: Client, order: Order) -> None:
    """GET on the payment endpoint is a 405."""
    url = reverse("checkout:pay_attempt", args=[order.reference])
    assert browser.get(url).status_code == 405
    assert Payment.objects.count() == 0


def test_pay_endpoint_needs_the_csrf_token(shop: Api, product: Product) -> None:
    """Without the CSRF token the payment is refused (403); with the page's token it is made."""
    browser = shopper(enforce_csrf_checks=True)
    order = OrderFactory(lines=[(product, 1)])
    own(browser, order)
    card = token(shop)
    assert attempt(browser, order, card).status_code == 403
    assert Payment.objects.count() == 0
    assert shop.payments() == []
    page = html(browser.get(reverse("checkout:pay", args=[order.reference])))
    csrf = page.one("section", id="payment").attrs["data-csrf"]
    response = attempt(browser, order, card, HTTP_X_CSRFTOKEN=csrf)
    assert response.status_code == 200
    assert response.json()["result"] == "approved"


# --- The status check -----------------------------------------------------------------------


def test_status_without_payments_is_unknown(shop: Api, browser: Client, order: Order) -> None:
    """Before any attempt the status check answers unknown, awaiting payment, no redirect."""
    body = status_of(browser, order).json()
    assert body["result"] == "unknown"
    assert body["order_status"] == OrderStatus.AWAITING_PAYMENT
    assert body["redirect"] == ""


def test_status_of_the_latest_attempt(shop: Api, browser: Client, order: Order) -> None:
    """Without payment_id the status check reports the latest attempt."""
    attempt(browser, order, token(shop, DECLINED))
    assert status_of(browser, order).json()["result"] == "rejected"
    paid = attempt(browser, order, token(shop)).json()
    latest = status_of(browser, order).json()
    assert (latest["result"], latest["payment_id"]) == ("approved", paid["payment_id"])


def test_status_of_a_payment_of_another_order(shop: Api, product: Product) -> None:
    """A payment_id of another order is not reported as this order's payment."""
    mine, theirs = shopper(), shopper()
    my_order = place_order(mine, (product, 1))
    their_order = place_order(theirs, (product, 1))
    their_payment = attempt(theirs, their_order, token(shop)).json()["payment_id"]
    body = status_of(mine, my_order, their_payment).json()
    assert body["result"] == "unknown"
    assert body["payment_id"] == ""
    assert body["order_status"] == OrderStatus.AWAITING_PAYMENT
