"""Interest-free monthly installments (meses sin intereses): the plan rules (minimum total, plans
setting, the catalogue's installment_pattern per method, rounding), and the pay attempt that asks
for a plan against the live sandbox: checked again on the server (no provider call for a plan the
order or the card cannot have), sent to the provider, CL2210 shown readably, and the plan shown
on the order page, in the mail and in the admin."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from typing import Any

import pytest
import requests
from django.core import mail
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import reverse

from checkout.installments import (
    InstallmentsRefused,
    check_installments,
    monthly_amount,
    plans_for,
)
from checkout.models import Order, Product
from config.settings.env import env_decimal, env_int_list
from payments.actions.calls import payment_capture, payment_refund
from payments.models import Payment
from payments.provider.client import get_client
from payments.provider.types import PaymentMethodEntry
from tests.helpers.html import html
from tests.helpers.provider import INSTALLMENTS_VISA, VISA, Api
from tests.helpers.servers import free_port
from tests.helpers.shop import creates_sent_here, place_order, shopper

NO_INSTALLMENTS_ES = "Esta tarjeta no tiene meses sin intereses."
NO_INSTALLMENTS_EN = "This card has no interest-free installments."


# --- The plan rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "months", "monthly"),
    [
        ("1500.00", 3, "500.00"),
        ("1000.00", 3, "333.33"),  # 333.333...
        ("2000.00", 3, "666.67"),  # 666.666...
        ("1780.00", 9, "197.78"),  # 197.777...
        ("1000.02", 4, "250.01"),  # 250.005: half a cent rounds up
        ("1000.06", 4, "250.02"),  # 250.015: up, not to the even cent
        ("12500.00", 12, "1041.67"),
    ],
)
def test_each_monthly_payment_is_the_total_divided_rounded_to_cents(
    total: str, months: int, monthly: str
) -> None:
    assert monthly_amount(Decimal(total), months) == Decimal(monthly)


def test_no_plan_below_the_minimum_total(settings: Any) -> None:
    """Below SHOP_INSTALLMENTS_MIN_TOTAL there is no plan; from it on, every configured one."""
    settings.SHOP_INSTALLMENTS_MIN_TOTAL = Decimal("1500.00")
    settings.SHOP_INSTALLMENTS_PLANS = [3, 6, 9, 12]

    assert plans_for(Decimal("1499.99")) == []
    plans = plans_for(Decimal("1500.00"))
    assert [(p.months, p.monthly) for p in plans] == [
        (3, Decimal("500.00")),
        (6, Decimal("250.00")),
        (9, Decimal("166.67")),
        (12, Decimal("125.00")),
    ]


def test_the_plans_and_the_minimum_come_from_the_settings(settings: Any) -> None:
    settings.SHOP_INSTALLMENTS_MIN_TOTAL = Decimal("3000.00")
    settings.SHOP_INSTALLMENTS_PLANS = [6, 18]

    assert plans_for(Decimal("2999.99")) == []
    assert [p.months for p in plans_for(Decimal("3000.00"))] == [6, 18]


def test_a_plan_reads_as_monthly_payments_in_each_language(settings: Any) -> None:
    from django.utils import translation

    settings.SHOP_INSTALLMENTS_PLANS = [6]
    [plan] = plans_for(Decimal("1800.00"))

    with translation.override("es"):
        assert plan.label == "6 meses sin intereses de $300.00"
    with translation.override("en"):
        assert plan.label == "6 interest-free monthly payments of $300.00"


def test_the_settings_are_read_and_checked_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANS", "12, 3,6,3")
    monkeypatch.setenv("MINIMUM", "2,500.5")
    assert env_int_list("PLANS", [1], lowest=2, highest=48) == [3, 6, 12]
    assert env_decimal("MINIMUM", "0") == Decimal("2500.50")
    for bad in ("1", "49", "six", "3;6"):
        monkeypatch.setenv("PLANS", bad)
        with pytest.raises(ImproperlyConfigured):
            env_int_list("PLANS", [1], lowest=2, highest=48)
    for bad in ("-1", "lots", "NaN"):
        monkeypatch.setenv("MINIMUM", bad)
        with pytest.raises(ImproperlyConfigured):
            env_decimal("MINIMUM", "0")


def card_method(
    id_: str, pattern: str, installments: str | None, exclusion: str | None = None
) -> PaymentMethodEntry:
    bin_rule: dict[str, Any] = {"pattern": pattern, "exclusion_pattern": exclusion}
    if installments is not None:
        bin_rule["installment_pattern"] = installments
    return PaymentMethodEntry.from_json(
        {
            "id": id_,
            "name": id_,
            "status": "active",
            "type": "credit_card",
            "validations": [{"name": "bin", "metadata": bin_rule}],
        }
    )


@pytest.mark.parametrize(
    ("bin_", "expected"),
    [
        ("415231", True),  # Visa, named by the installment pattern
        ("424242", False),  # Visa, not named
        ("555555", False),  # not a Visa at all, though the installment pattern is loose
        ("415299", False),  # excluded from the method
    ],
)
def test_installments_follow_the_methods_own_patterns(bin_: str, expected: bool) -> None:
    """A BIN has installments with a method when the method takes the card (its `pattern`, not
    its `exclusion_pattern`) and its `installment_pattern` names the BIN."""
    visa = card_method("visa", r"^4", r"^(4152|5)", exclusion=r"^41529")

    assert visa.installments_for_bin(bin_) is expected


def test_a_method_without_installment_pattern_or_with_a_broken_one_has_none() -> None:
    assert card_method("visa", r"^4", None).installments_for_bin("415231") is False
    assert card_method("visa", r"^4", "").installments_for_bin("415231") is False
    assert card_method("visa", r"^4", "^(41").installments_for_bin("415231") is False


# --- Against the sandbox's catalogue ----------------------------------------------------------


@pytest.fixture
def shop(provider: Api, settings: Any) -> Api:
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    settings.SHOP_INSTALLMENTS_MIN_TOTAL = Decimal("1500.00")
    settings.SHOP_INSTALLMENTS_PLANS = [3, 6, 9, 12]
    return provider


@pytest.mark.django_db
@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("bin_", "total", "months", "refusal"),
    [
        ("415231", "1500.00", 6, None),
        ("520400", "1500.00", 12, None),  # a Mastercard the sandbox names
        ("376700", "1500.00", 3, None),  # an Amex the sandbox names
        ("424242", "1500.00", 6, "This card has no interest-free installments."),
        ("", "1500.00", 6, "This card has no interest-free installments."),
        ("415231", "1499.99", 6, "orders of $1,500.00 or more"),
        ("415231", "1500.00", 5, "in 3, 6, 9, 12 interest-free"),
        ("424242", "100.00", 1, None),  # paying in full is always allowed
    ],
)
def test_the_server_checks_a_plan_against_the_catalogue(
    shop: Api, bin_: str, total: str, months: int, refusal: str | None
) -> None:
    from django.utils import translation

    with translation.override("en"):
        if refusal is None:
            check_installments(total=Decimal(total), installments=months, card_bin=bin_)
            return
        with pytest.raises(InstallmentsRefused) as refused:
            check_installments(total=Decimal(total), installments=months, card_bin=bin_)
    assert refusal in refused.value.message


@pytest.mark.django_db
@pytest.mark.sandbox
def test_without_a_stored_catalogue_a_plan_cannot_be_checked(shop: Api, settings: Any) -> None:
    """Given no stored catalogue (the server checks only the shop's copy, never the provider),
    a plan is refused as not checkable now, not as a card without installments; paying in full
    is still allowed."""
    from django.core.cache import cache
    from django.utils import translation

    from payments.catalogue.rules import CATALOGUE_CACHE_KEY

    cache.delete(CATALOGUE_CACHE_KEY)
    settings.PAYMENTS_API_BASE_URL = f"http://127.0.0.1:{free_port()}"

    with translation.override("en"), pytest.raises(InstallmentsRefused) as refused:
        check_installments(total=Decimal("1500.00"), installments=6, card_bin="415231")
    check_installments(total=Decimal("1500.00"), installments=1, card_bin="415231")

    assert "cannot be checked right now" in refused.value.message


# --- The pay attempt --------------------------------------------------------------------------


@pytest.fixture
def rebozo(make_product: Any) -> Product:
    return make_product("rebozo", price="1780.00", stock=5, name="Rebozo de seda")


@pytest.fixture
def order(browser: Client, rebozo: Product) -> Order:
    return place_order(browser, (rebozo, 1))


@pytest.fixture
def payment_posts(shop: Api) -> Any:
    """Every POST /payments the shop's provider client sends."""
    posts: list[str] = []

    def record(response: requests.Response, *args: Any, **kwargs: Any) -> None:
        if response.request.method == "POST" and response.request.path_url == "/payments":
            posts.append(response.request.path_url)

    client = get_client()
    client.session.hooks["response"].append(record)
    yield posts
    client.session.hooks["response"].remove(record)


def pay(
    browser: Client, order: Order, token: str, installments: Any = None, card_bin: Any = None
) -> Any:
    """One attempt. Taken (202, processing), its create is sent here as its task does, and the
    answer is the status endpoint's then (what the page polls for); refused, the refusal."""
    body: dict[str, Any] = {"card_token": token, "attempt_id": uuid.uuid4().hex}
    if installments is not None:
        body["installments"] = installments
    if card_bin is not None:
        body["card_bin"] = card_bin
    with creates_sent_here():
        taken = browser.post(
            reverse("checkout:pay_attempt", args=[order.reference]),
            json.dumps(body),
            content_type="application/json",
        )
    if taken.status_code != 202:
        return taken
    assert taken.json()["result"] == "processing", taken.json()
    return browser.get(reverse("checkout:payment_status", args=[order.reference]))


@pytest.mark.django_db
@pytest.mark.sandbox
def test_six_months_are_sent_to_the_provider_and_kept(
    shop: Api, browser: Client, order: Order, payment_posts: list[str]
) -> None:
    """Given an order of $1,780.00 and 4152 3100 0000 0001, when the attempt asks for 6 months,
    the provider's payment has 6 installments of $296.67 and the shop keeps them."""
    token = shop.card_token(INSTALLMENTS_VISA)["id"]

    response = pay(browser, order, token, installments=6, card_bin=INSTALLMENTS_VISA[:6])

    assert response.status_code == 200, response.content
    assert response.json()["result"] == "approved"
    [remote] = shop.get("/_sandbox/payments", params={"external_reference": order.reference}).json()
    assert (remote["installments"], remote["installment_amount"]) == (6, 296.67)
    payment = Payment.objects.get(external_reference=order.reference)
    assert (payment.installments, payment.installment_amount) == (6, Decimal("296.67"))
    assert payment_posts == ["/payments"]


@pytest.mark.django_db
@pytest.mark.sandbox
@pytest.mark.parametrize(
    "claimed_bin", [VISA[:6], None, "", "abc"], ids=["own BIN", "no BIN", "empty", "not a BIN"]
)
def test_a_crafted_plan_for_a_card_without_installments_is_refused_before_the_provider(
    shop: Api, browser: Client, order: Order, payment_posts: list[str], claimed_bin: str | None
) -> None:
    """A request for 12 months with 4242 4242 4242 4242 (its own BIN, or none) is refused with
    a readable message; no payment is asked of the provider and nothing is stored."""
    token = shop.card_token(VISA)["id"]

    response = pay(browser, order, token, installments=12, card_bin=claimed_bin)

    assert response.status_code == 400, response.content
    body = response.json()
    if claimed_bin == "abc":
        assert (body["error"], set(body["fields"])) == ("invalid", {"card_bin"})
    else:
        assert body == {"error": "installments_not_available", "message": NO_INSTALLMENTS_ES}
    assert payment_posts == []
    assert Payment.objects.count() == 0
    assert (
        shop.get("/_sandbox/payments", params={"external_reference": order.reference}).json() == []
    )


@pytest.mark.django_db
@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("installments", "price"),
    [(6, "1499.99"), (5, "1780.00"), (0, "1780.00"), ("6x", "1780.00"), (49, "1780.00")],
)
def test_a_plan_the_order_cannot_have_is_refused_before_the_provider(
    shop: Api,
    make_product: Any,
    payment_posts: list[str],
    installments: Any,
    price: str,
) -> None:
    """Below the minimum total, or a number of months that is not a configured plan (or no
    number at all): refused, nothing asked of the provider."""
    browser = shopper()
    order = place_order(browser, (make_product(price=price, stock=2), 1))
    token = shop.card_token(INSTALLMENTS_VISA)["id"]

    response = pay(browser, order, token, installments=installments, card_bin="415231")

    assert response.status_code == 400, response.content
    assert response.json()["message"]
    assert payment_posts == []
    assert Payment.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("language", "message"), [("es", NO_INSTALLMENTS_ES), ("en", NO_INSTALLMENTS_EN)]
)
def test_the_providers_cl2210_is_said_readably_and_paying_in_full_still_works(
    shop: Api, browser: Client, order: Order, language: str, message: str
) -> None:
    """Given a browser that claims an installments BIN for a card without them, the provider
    answers CL2210; the shopper reads "This card has no interest-free installments" (in their
    language), and a new attempt in full pays the order."""
    browser.cookies["django_language"] = language
    refused = pay(browser, order, shop.card_token(VISA)["id"], installments=6, card_bin="415231")

    in_full = pay(browser, order, shop.card_token(VISA)["id"])

    assert refused.status_code == 200, refused.content
    assert (refused.json()["result"], refused.json()["message"]) == ("failed", message)
    failed = Payment.objects.get(external_reference=order.reference, status="failed")
    assert "CL2210" in failed.last_error
    assert in_full.json()["result"] == "approved"


@pytest.mark.django_db
@pytest.mark.sandbox
def test_the_plan_is_shown_on_the_order_page_in_the_mail_and_in_the_admin(
    shop: Api,
    browser: Client,
    order: Order,
    admin_client: Client,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """Once paid in 6 months: the order page reads "6 × $296.67", the confirmation mail says so,
    and the admin's payments list, payment page and order page show it."""
    token = shop.card_token(INSTALLMENTS_VISA)["id"]
    with django_capture_on_commit_callbacks(execute=True):
        assert pay(browser, order, token, 6, "415231").json()["result"] == "approved"
    run_queued()
    payment = Payment.objects.get(external_reference=order.reference)

    page = html(browser.get(reverse("checkout:order", args=[order.reference])))
    listing = admin_client.get(reverse("admin:payments_payment_changelist")).content.decode()
    detail = admin_client.get(reverse("admin:payments_payment_change", args=[payment.pk]))
    order_admin = admin_client.get(reverse("admin:checkout_order_change", args=[order.pk]))

    assert page.one("p", id="order-installments").text == "6 × $296.67, meses sin intereses"
    [confirmation] = mail.outbox
    assert "6 × $296.67" in confirmation.body
    assert "6 × $296.67" in listing
    assert "6 × $296.67" in detail.content.decode()
    assert "6 × $296.67" in order_admin.content.decode()


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("amount", "installments", "monthly"),
    [("1000.02", 4, "250.01"), ("1000.06", 4, "250.02"), ("1780.00", 9, "197.78")],
)
def test_the_sandbox_divides_the_amount_rounded_to_cents_as_the_shop_does(
    provider: Api, amount: str, installments: int, monthly: str
) -> None:
    """The sandbox's `installment_amount` is the amount divided by the installments, rounded to
    cents half up: the monthly amount the payment page showed."""
    payment = provider.create_payment(
        INSTALLMENTS_VISA, amount=Decimal(amount), installments=installments
    )

    expected = Decimal(monthly)
    assert (payment["installments"], payment["installment_amount"]) == (installments, expected)
    assert monthly_amount(Decimal(amount), installments) == expected


@pytest.mark.django_db
@pytest.mark.sandbox
def test_an_installment_authorization_is_captured_in_part_and_refunded(
    shop: Api, browser: Client, order: Order, settings: Any
) -> None:
    """With manual capture, a 6-month authorization of $1,780.00 is captured for $1,200.00 and
    then refunded $200.00, by the provider's usual rules; the plan stays on the payment."""

    settings.PAYMENTS_CAPTURE_METHOD = "manual"
    token = shop.card_token(INSTALLMENTS_VISA)["id"]
    assert pay(browser, order, token, 6, "415231").json()["result"] == "authorized"
    payment = Payment.objects.get(external_reference=order.reference)

    payment_capture(payment=payment, amount=Decimal("1200.00"))
    payment_refund(payment=payment, amount=Decimal("200.00"), reason="one item back")

    payment.refresh_from_db()
    assert (payment.status, payment.captured_amount, payment.refunded_amount) == (
        "approved",
        Decimal("1200.00"),
        Decimal("200.00"),
    )
    assert (payment.installments, payment.installment_amount) == (6, Decimal("296.67"))
    [remote] = shop.get("/_sandbox/payments", params={"external_reference": order.reference}).json()
    assert (remote["installments"], remote["captured_amount"]) == (6, Decimal("1200.00"))
