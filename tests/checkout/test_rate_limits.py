"""Abuse limits of the checkout (checkout/orders/limits.py): card testing is many payment attempts
from one browser session or one client address. Over either limit the attempt is answered 429
with a readable message, before anything is stored or queued for the provider. While the cache
is down attempts are counted per order in the database instead. Status checks are answered from
the shop's records; a check of a payment pending 3-D Secure queues a read of it from the
provider, up to the session's own rate of checks.

Counts live in the real cache (Redis when REDIS_URL is set). The rate limiter's clock is pinned
(`clock`) so that a window never ends in the middle of a test, and moved on to prove that
attempts work again once it has."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import django_ratelimit.core
import pytest
import requests
from django.test import Client, TestCase
from django.urls import reverse
from django.utils import timezone

from checkout.models import Order, OrderStatus, Product
from payments.models import Payment
from payments.provider.client import PaymentsClient
from tests.factories import OrderFactory
from tests.helpers.cache import clear_cache
from tests.helpers.provider import DECLINED, THREE_DS, VISA, Api
from tests.helpers.shop import creates_sent_here, own, send_creates, shopper

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]

REFUSAL = {
    "es": (
        "Demasiados intentos de pago desde este navegador. Espera unos minutos antes de "
        "intentarlo de nuevo."
    ),
    "en": (
        "Too many payment attempts from this browser. Please wait a few minutes before "
        "trying again."
    ),
}
# A day boundary: every window of a minute or an hour starts within the day that follows.
PINNED = 1_900_000_000 - 1_900_000_000 % 86_400


# --- Fixtures and helpers -----------------------------------------------------------------------


class Clock:
    """The rate limiter's idea of now (django_ratelimit reads `time.time()` for its windows)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Windows are computed from a pinned clock: no window ends unless the test moves it."""
    pinned = Clock(PINNED)
    monkeypatch.setattr(django_ratelimit.core, "time", pinned)
    return pinned


@pytest.fixture
def shop(provider: Api, settings: Any, clock: Clock) -> Api:
    """The shop on the live sandbox, with small limits: 3 attempts a minute per session, 5 per
    address."""
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    settings.PAYMENTS_WEBHOOK_TOKEN = ""
    settings.SHOP_PAY_ATTEMPTS_PER_SESSION = "3/m"
    settings.SHOP_PAY_ATTEMPTS_PER_ADDRESS = "5/m"
    settings.RATELIMIT_IP_META_KEY = None
    return provider


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every request the shop sends to the provider, as (method, path); they still go out."""
    sent: list[tuple[str, str]] = []
    original = PaymentsClient._call

    def spy(self: PaymentsClient, method: str, path: str, **kwargs: Any) -> Any:
        sent.append((method, path))
        return original(self, method, path, **kwargs)

    monkeypatch.setattr(PaymentsClient, "_call", spy)
    return sent


@pytest.fixture
def product(make_product: Callable[..., Product]) -> Product:
    return make_product("taza", price="289.00", stock=50, name="Taza de talavera")


def browser_with_order(product: Product, address: str = "198.51.100.10", **meta: Any) -> Client:
    """A browser (own session) at `address` that placed an order of one product."""
    client = shopper(REMOTE_ADDR=address, **meta)
    own(client, OrderFactory(lines=[(product, 1)]))
    return client


def order_of(client: Client) -> Order:
    return Order.objects.get(reference=client.session["orders"][-1])


def post_attempt(client: Client, card_token: str = "tok_not_checked", **headers: Any) -> Any:
    """One payment attempt for the browser's latest order (a complete, well-formed body): the
    endpoint's own answer."""
    body = {
        "card_token": card_token,
        "attempt_id": uuid.uuid4().hex,
        "session_id": "sess_rate_limits",
        "user_agent": "pytest",
    }
    return client.post(
        reverse("checkout:pay_attempt", args=[order_of(client).reference]),
        data=json.dumps(body),
        content_type="application/json",
        **headers,
    )


def attempt(
    client: Client, card_token: str = "tok_not_checked", *, settle: bool = True, **headers: Any
) -> Any:
    """One payment attempt. Taken (202, processing), its create is sent here as its task does
    and, if `settle`, the answer is the status endpoint's then (what the page polls for);
    refused, the refusal."""
    # As in production, where each commit runs its on-commit work at once (the order follows)
    with TestCase.captureOnCommitCallbacks(execute=True), creates_sent_here():
        taken = post_attempt(client, card_token, **headers)
    if taken.status_code != 202:
        return taken
    assert taken.json()["result"] == "processing", taken.json()
    if not settle:
        return taken
    url = reverse("checkout:payment_status", args=[order_of(client).reference])
    return client.get(url)


def outcome(client: Client) -> dict[str, Any]:
    """The outcome of the browser's latest attempt as the shop's records say it (not a status
    check: nothing counted, nothing queued)."""
    from checkout.paying.rules import order_check_payment

    return order_check_payment(order=order_of(client), refresh=False).as_json()


def junk_attempt(client: Client, **headers: Any) -> Any:
    """An attempt whose body is not JSON: refused (400) without the provider, yet counted."""
    response = client.post(
        reverse("checkout:pay_attempt", args=[order_of(client).reference]),
        data="{not json",
        content_type="application/json",
        **headers,
    )
    assert response.status_code == 400, response.content
    return response


def assert_limited(response: Any, language: str = "es") -> None:
    """429 with the readable message in the shopper's language."""
    assert response.status_code == 429, response.content
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {"error": "too_many_attempts", "message": REFUSAL[language]}


def card(provider: Api, number: str = VISA) -> str:
    return provider.card_token(number)["id"]


# --- Per session --------------------------------------------------------------------------------


def test_attempts_over_the_session_limit_are_refused_before_the_provider(
    shop: Api, product: Product, calls: list[tuple[str, str]], run_queued: Any
) -> None:
    """Given a browser that made its 3 attempts (declined cards, each sent to the provider),
    when it attempts again with a good card, then it gets 429 with a readable message, the
    provider is not called, no payment row is written and the order is not paid."""
    browser = browser_with_order(product)
    for _ in range(3):
        response = attempt(browser, card(shop, DECLINED))
        assert response.status_code == 200, response.content
        assert response.json()["result"] == "rejected"
    # The order follows, and its first sync mails that it was received.
    assert run_queued() == ["checkout.tasks.order_sync_task"] * 3 + [
        "checkout.tasks.order_mail_send_task"
    ]
    sent_before = list(calls)
    rows_before = Payment.objects.count()
    status_before = order_of(browser).status
    assert status_before == OrderStatus.PAYMENT_FAILED  # declined, and still payable
    assert sent_before.count(("POST", "/payments")) == 3

    refused = attempt(browser, card(shop, VISA))
    again = attempt(browser, card(shop, VISA))

    assert_limited(refused)
    assert_limited(again)
    assert calls == sent_before
    assert Payment.objects.count() == rows_before
    assert run_queued() == []
    assert order_of(browser).status == status_before
    assert len(shop.payments()) == 3


@pytest.mark.parametrize("language", ["es", "en"])
def test_the_refusal_speaks_the_shoppers_language(
    shop: Api, product: Product, calls: list[tuple[str, str]], language: str
) -> None:
    """Given a browser whose language is `language` and that used up its attempts (with bodies
    that are not even JSON: every attempt counts, so probing costs the same), when it attempts
    again, then the 429 message is in its language and the provider is not called."""
    browser = browser_with_order(product, HTTP_ACCEPT_LANGUAGE=language)
    for _ in range(3):
        junk_attempt(browser)

    response = attempt(browser, card(shop))

    assert_limited(response, language)
    assert calls == []
    assert Payment.objects.count() == 0


@pytest.mark.parametrize(("rate", "allowed"), [("1/m", 1), ("2/h", 2), ("4/10m", 4)])
def test_the_session_limit_is_the_configured_rate(
    shop: Api, product: Product, settings: Any, rate: str, allowed: int
) -> None:
    """Given SHOP_PAY_ATTEMPTS_PER_SESSION = `rate` (the address limit out of the way), when a
    browser attempts repeatedly, then exactly `allowed` attempts pass and the next is 429."""
    settings.SHOP_PAY_ATTEMPTS_PER_SESSION = rate
    settings.SHOP_PAY_ATTEMPTS_PER_ADDRESS = "100/m"
    browser = browser_with_order(product)

    for _ in range(allowed):
        junk_attempt(browser)

    assert_limited(attempt(browser))


def test_another_browser_at_another_address_is_not_limited(
    shop: Api, product: Product, calls: list[tuple[str, str]], run_queued: Any
) -> None:
    """Given a browser that is over its limit, when a different browser from a different
    address pays its own order, then it is not limited: the payment is made."""
    limited = browser_with_order(product, "198.51.100.10")
    for _ in range(3):
        junk_attempt(limited)
    assert_limited(attempt(limited))

    other = browser_with_order(product, "198.51.100.20")
    response = attempt(other, card(shop))

    assert response.status_code == 200, response.content
    assert response.json()["result"] == "approved"
    assert calls.count(("POST", "/payments")) == 1
    assert run_queued() == [
        "checkout.tasks.order_sync_task",
        "checkout.tasks.order_mail_send_task",  # received
        "checkout.tasks.order_mail_send_task",  # paid
    ]
    assert order_of(other).status == OrderStatus.PAID


# --- Per address --------------------------------------------------------------------------------


def test_the_address_limit_spans_browser_sessions(
    shop: Api, product: Product, calls: list[tuple[str, str]]
) -> None:
    """Given one address (REMOTE_ADDR) whose browsers made 5 attempts between them, none over
    its own session limit, when a fresh browser at that address attempts, then it is 429 at
    once and nothing is sent; a browser at another address is unaffected."""
    address = "198.51.100.30"
    first, second = browser_with_order(product, address), browser_with_order(product, address)
    for _ in range(3):
        junk_attempt(first)
    for _ in range(2):
        junk_attempt(second)

    fresh = browser_with_order(product, address)
    refused_fresh = attempt(fresh, card(shop))
    refused_second = attempt(second, card(shop))  # its 3rd: within its session limit

    assert_limited(refused_fresh)
    assert_limited(refused_second)
    assert calls == []
    assert Payment.objects.count() == 0

    elsewhere = browser_with_order(product, "198.51.100.31")
    assert attempt(elsewhere, card(shop)).json()["result"] == "approved"


def test_a_new_session_for_each_attempt_does_not_escape_the_address_limit(
    shop: Api, product: Product, calls: list[tuple[str, str]]
) -> None:
    """Given a card tester who starts a fresh session (and order) for every attempt from one
    address, when the 6th attempt comes, then it is refused: sessions are free, addresses
    are not."""
    address = "198.51.100.40"
    for _ in range(5):
        junk_attempt(browser_with_order(product, address))

    response = attempt(browser_with_order(product, address), card(shop))

    assert_limited(response)
    assert calls == []


def test_addresses_of_one_ipv6_network_share_the_limit(
    shop: Api, product: Product, calls: list[tuple[str, str]]
) -> None:
    """Given attempts from 5 different IPv6 addresses of one /64 (one customer's network, where
    rotating addresses is free), when a 6th address of it attempts, then it is limited; an
    address of another /64 is not."""
    for host in range(1, 6):
        junk_attempt(browser_with_order(product, f"2001:db8:1:2::{host}"))

    refused = attempt(browser_with_order(product, "2001:db8:1:2:ffff::9"), card(shop))
    allowed = attempt(browser_with_order(product, "2001:db8:1:3::1"), card(shop))

    assert_limited(refused)
    assert allowed.json()["result"] == "approved"
    assert calls.count(("POST", "/payments")) == 1


def test_the_address_limit_is_the_configured_rate(
    shop: Api, product: Product, settings: Any
) -> None:
    """Given SHOP_PAY_ATTEMPTS_PER_ADDRESS = "2/m", when two browsers of one address attempt
    once each, then a third browser there is limited at its first attempt."""
    settings.SHOP_PAY_ATTEMPTS_PER_ADDRESS = "2/m"
    for _ in range(2):
        junk_attempt(browser_with_order(product, "198.51.100.50"))

    assert_limited(attempt(browser_with_order(product, "198.51.100.50")))


# --- After the window ---------------------------------------------------------------------------


def test_attempts_work_again_after_the_window(
    shop: Api, product: Product, clock: Clock, calls: list[tuple[str, str]]
) -> None:
    """Given a browser over its limit, when the window (a minute) has passed, then its next
    attempt is taken: the payment is made."""
    browser = browser_with_order(product)
    for _ in range(3):
        junk_attempt(browser)
    assert_limited(attempt(browser))

    clock.advance(60)  # every window of a minute has ended: each count starts again
    response = attempt(browser, card(shop))

    assert response.status_code == 200, response.content
    assert response.json()["result"] == "approved"
    assert calls.count(("POST", "/payments")) == 1


def test_attempts_work_again_once_the_counts_are_gone(
    shop: Api, product: Product, calls: list[tuple[str, str]]
) -> None:
    """Given a browser over its limit, when the counts expire from the cache (cleared here),
    then its next attempt is taken."""
    browser = browser_with_order(product)
    for _ in range(3):
        junk_attempt(browser)
    assert_limited(attempt(browser))

    clear_cache()
    response = attempt(browser, card(shop))

    assert response.json()["result"] == "approved"
    assert calls.count(("POST", "/payments")) == 1


# --- Behind a proxy -----------------------------------------------------------------------------


def test_behind_a_proxy_the_configured_header_is_the_counted_address(
    shop: Api, product: Product, settings: Any, calls: list[tuple[str, str]]
) -> None:
    """Given RATELIMIT_IP_META_KEY = "HTTP_X_REAL_IP" (every request arrives from the proxy),
    when one client (X-Real-IP) attempts 5 times through one proxy, then its next attempt is
    limited even through another proxy, and another client behind the same proxy is not."""
    settings.RATELIMIT_IP_META_KEY = "HTTP_X_REAL_IP"
    proxy, other_proxy = "10.0.0.2", "10.0.0.3"
    for _ in range(5):
        junk_attempt(browser_with_order(product, proxy, HTTP_X_REAL_IP="203.0.113.7"))

    same_client = attempt(
        browser_with_order(product, other_proxy, HTTP_X_REAL_IP="203.0.113.7"), card(shop)
    )
    other_client = attempt(
        browser_with_order(product, proxy, HTTP_X_REAL_IP="203.0.113.8"), card(shop)
    )

    assert_limited(same_client)
    assert other_client.json()["result"] == "approved"
    assert calls.count(("POST", "/payments")) == 1


def test_without_a_proxy_a_forged_header_does_not_escape_the_limit(
    shop: Api, product: Product, calls: list[tuple[str, str]]
) -> None:
    """Given no proxy configured (RATELIMIT_IP_META_KEY unset), when a client at one address
    sends a different X-Real-IP / X-Forwarded-For with every attempt, then REMOTE_ADDR is what
    is counted: its 6th attempt is limited."""
    for n in range(5):
        forged = f"192.0.2.{n + 1}"
        junk_attempt(
            browser_with_order(
                product, "198.51.100.60", HTTP_X_REAL_IP=forged, HTTP_X_FORWARDED_FOR=forged
            )
        )

    response = attempt(
        browser_with_order(
            product,
            "198.51.100.60",
            HTTP_X_REAL_IP="192.0.2.99",
            HTTP_X_FORWARDED_FOR="192.0.2.99",
        ),
        card(shop),
    )

    assert_limited(response)
    assert calls == []


# --- Status checks ------------------------------------------------------------------------------


def status_check(client: Client, payment_id: str) -> Any:
    url = reverse("checkout:payment_status", args=[order_of(client).reference])
    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.get(url, {"payment_id": payment_id})


REFRESH = "payments.tasks.payment_refresh_task"


def pending_payment(client: Client, shop: Api) -> dict[str, Any]:
    """A 3-D Secure attempt of the browser's latest order, its create sent: pending, as the
    shop's records say (no status check made)."""
    assert attempt(client, card(shop, THREE_DS), settle=False).status_code == 202
    created = outcome(client)
    assert created["result"] == "pending", created
    return created


def test_status_checks_past_the_session_rate_queue_no_read_of_the_provider(
    shop: Api,
    product: Product,
    settings: Any,
    clock: Clock,
    calls: list[tuple[str, str]],
    run_queued: Any,
) -> None:
    """Given a browser whose 3-D Secure payment is pending and SHOP_STATUS_CHECKS_PER_SESSION
    = 2/m, when its page asks for the status again and again (each read queued running before
    the next check), then every check is answered (200, still pending) from the shop's records,
    the first two each queue a read of the payment from the provider and the others queue
    nothing; once the window has passed, the next check queues a read again, which sees the
    challenge passed, and the check after it answers approved."""
    settings.SHOP_STATUS_CHECKS_PER_SESSION = "2/m"
    browser = browser_with_order(product)
    created = pending_payment(browser, shop)
    assert run_queued() == ["checkout.tasks.order_sync_task", "checkout.tasks.order_mail_send_task"]
    payment_id = created["payment_id"]
    read = ("GET", f"/payments/{payment_id}")

    answers: list[Any] = []
    ran: list[list[str]] = []
    for _ in range(5):
        answers.append(status_check(browser, payment_id))
        ran.append(run_queued())

    assert [answer.status_code for answer in answers] == [200] * 5
    assert {answer.json()["result"] for answer in answers} == {"pending"}
    assert ran == [[REFRESH], [REFRESH], [], [], []]
    assert calls.count(read) == 2

    passed = requests.post(
        created["three_ds_url"], data={"action": "submit", "code": "123456"}, timeout=10
    )
    assert passed.status_code == 200
    assert status_check(browser, payment_id).json()["result"] == "pending"  # still limited
    assert run_queued() == []
    assert calls.count(read) == 2

    clock.advance(60)
    assert status_check(browser, payment_id).json()["result"] == "pending"  # the records, still
    assert run_queued() == [
        REFRESH,
        "checkout.tasks.order_sync_task",
        "checkout.tasks.order_mail_send_task",
    ]
    assert calls.count(read) == 3
    checked = status_check(browser, payment_id).json()
    assert checked["result"] == "approved"
    assert checked["redirect"] == reverse("checkout:order", args=[order_of(browser).reference])
    assert run_queued() == []
    assert calls.count(read) == 3
    assert order_of(browser).status == OrderStatus.PAID


def test_status_checks_are_counted_per_browser_session(
    shop: Api, product: Product, settings: Any, calls: list[tuple[str, str]], run_queued: Any
) -> None:
    """A browser over its rate of status checks does not hold back another browser's: each
    queues one read of its payment within the rate, and no more."""
    settings.SHOP_STATUS_CHECKS_PER_SESSION = "1/m"
    first, second = browser_with_order(product), browser_with_order(product)
    payments = [pending_payment(b, shop)["payment_id"] for b in (first, second)]
    run_queued()  # the orders follow their payments

    ran: list[list[str]] = []
    for _ in range(3):
        status_check(first, payments[0])
        ran.append(run_queued())
    status_check(second, payments[1])
    ran.append(run_queued())

    assert ran == [[REFRESH], [], [], [REFRESH]]
    assert calls.count(("GET", f"/payments/{payments[0]}")) == 1
    assert calls.count(("GET", f"/payments/{payments[1]}")) == 1


# --- Redis down ---------------------------------------------------------------------------------


def test_with_redis_down_attempts_are_stored_answered_202_and_counted_per_order(
    shop: Api, product: Product, settings: Any, calls: list[tuple[str, str]], run_queued: Any
) -> None:
    """Given a pending 3-D Secure payment, when the cache (Redis) stops answering, then the
    payment page still renders, with the card methods this process read last (their stored
    copy is in the cache, and a page never asks the provider), and a status check is
    answered 200 from the shop's records; a new attempt is stored (its create waiting to be
    sent) and answered 202, with nothing reaching the provider in the request and never a 500.
    Attempts are then counted per order in the database at the session's rate (8 in 10
    minutes): the order's 9th attempt within 10 minutes is refused 429 and stores nothing, and
    once its earlier attempts are 10 minutes old the order may attempt again. Once Redis is
    back, the sweep queues the create left waiting, and its task sends it."""
    from datetime import timedelta

    from payments.tasks import payments_send_waiting_task
    from tests.helpers.servers import free_port

    settings.SHOP_PAY_ATTEMPTS_PER_SESSION = "8/10m"
    browser = browser_with_order(product)
    created = pending_payment(browser, shop)  # the order's 1st attempt
    order = order_of(browser)
    assert "Visa" in browser.get(reverse("checkout:pay", args=[order.reference])).content.decode()
    caches = settings.CACHES
    unreachable = f"redis://127.0.0.1:{free_port()}/0"
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": unreachable,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1},
        },
    }
    calls.clear()

    page = browser.get(reverse("checkout:pay", args=[order.reference]))
    status = status_check(browser, created["payment_id"])

    assert page.status_code == 200
    assert "Visa" in page.content.decode()
    assert 'id="pay-button"' in page.content.decode()
    assert (status.status_code, status.json()["result"]) == (200, "pending")
    assert calls == []

    for made in range(2, 9):  # the order's 2nd to 8th attempts
        with TestCase.captureOnCommitCallbacks(execute=True):
            taken = post_attempt(browser, card(shop, DECLINED))
        assert taken.status_code == 202, (made, taken.content)
        assert taken.json()["result"] == "processing"
        assert calls == []  # nothing reached the provider in the request
        stored = Payment.objects.filter(external_reference=order.reference).latest("pk")
        assert (stored.status, bool(stored.create_request)) == ("creating", True)
        send_creates()  # as the sweep's task does, once it has queued the create
        assert outcome(browser)["result"] == "rejected"
        calls.clear()
    assert Payment.objects.filter(external_reference=order.reference).count() == 8

    refused = post_attempt(browser, card(shop, VISA))

    assert_limited(refused)
    assert Payment.objects.filter(external_reference=order.reference).count() == 8
    assert calls == []

    ten_minutes_ago = timezone.now() - timedelta(minutes=10)
    Payment.objects.filter(external_reference=order.reference).update(created_at=ten_minutes_ago)
    with TestCase.captureOnCommitCallbacks(execute=True):
        taken = post_attempt(browser, card(shop, VISA))
    assert (taken.status_code, taken.json()["result"]) == (202, "processing")
    assert calls == []
    assert "payments.tasks.payment_send_create_task" not in run_queued()  # not queued: Redis down

    settings.CACHES = caches
    waiting = Payment.objects.filter(external_reference=order.reference).latest("pk")
    Payment.objects.filter(pk=waiting.pk).update(updated_at=ten_minutes_ago)
    assert payments_send_waiting_task.apply().get() == 1
    assert "payments.tasks.payment_send_create_task" in run_queued()
    assert calls.count(("POST", "/payments")) == 1
    assert outcome(browser)["result"] == "approved"
