"""The staff admin speaks one language at a time and writes money one way: every page of the
shop's apps (orders, payments, subscriptions, notifications, their action pages and the
refusal page), opened in Spanish, holds no English label of ours, and in English no Spanish one;
every amount reads like $1,290.00."""

from __future__ import annotations

import re
import uuid
from html import unescape
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkout.models import Product
from payments.models import Payment, Subscription
from tests.factories import ProductFactory
from tests.helpers.cache import clear_cache
from tests.helpers.provider import Api
from tests.helpers.servers import free_port
from tests.helpers.shop import paid_order
from webhooks.models import WebhookEvent

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox]

AMOUNT = re.compile(r"\$\d{1,3}(,\d{3})*\.\d{2}")
NUMBER_WITH_CENTS = re.compile(r"\$?\d[\d.,]*[.,]\d{2}\b")
# Where a page names things and links (not the data it shows: provider messages, JSON, typed
# values).
LABELS = re.compile(
    r"<(th|label|legend|h1|h2|h3|caption|button|option|a)\b[^>]*>(.*?)</\1>"
    r'|<(?:p|div|span) class="help"[^>]*>(.*?)</(?:p|div|span)>'
    r'|<li class="(?:success|error|warning|info)"[^>]*>(.*?)</li>'
    r'|<div class="breadcrumbs">(.*?)</div>'
    r'|<ul class="object-tools">(.*?)</ul>'
    r'|<input type="submit" value="([^"]*)"',
    re.S,
)
ENGLISH = {
    "payment", "payments", "order", "orders", "amount", "refund", "refunds", "capture",
    "provider", "status", "card", "shipped", "customer", "subscription", "subscriptions",
    "ledger", "expires", "authorized", "approved", "cancelled", "refunded", "notification",
    "notifications", "reference", "attempts", "received", "installments", "cancel", "shop",
    "the", "of", "from", "selected", "who", "when", "what", "back", "yes",
}  # fmt: skip
SPANISH = {
    "pedido", "pedidos", "pago", "pagos", "monto", "reembolso", "reembolsar", "enviado",
    "cobrar", "proveedor", "estado", "tarjeta", "cliente", "mensualidades", "bitácora",
    "notificaciones", "suscripciones", "cancelar", "sí", "volver",
}  # fmt: skip


@pytest.fixture
def pages(provider: Api, settings: Any, admin_client: Client) -> list[str]:
    """Every admin address of the shop's apps, with something in each."""
    clear_cache()  # the payment attempts' counts
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.PAYMENTS_CAPTURE_METHOD = "manual"
    blusa: Product = ProductFactory(slug="blusa-lang", name="Blusa", price="1290.00", stock=5)
    held = paid_order(provider, (blusa, 1))
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    charged = paid_order(provider, (blusa, 2))
    payment = Payment.objects.get(external_reference=charged.reference)
    subscription = Subscription.objects.create(
        provider_id=str(uuid.uuid4()), price_id="price_cafe", status="active"
    )
    event = WebhookEvent.objects.create(
        provider_payment_id=str(uuid.uuid4()), event_type="UPDATE", state="failed"
    )
    order_url = "admin:checkout_order_{}"
    return [
        reverse("admin:index"),
        reverse("admin:app_list", args=["checkout"]),
        reverse("admin:checkout_order_changelist"),
        reverse("admin:checkout_order_changelist") + "?fulfilment__exact=unfulfilled",
        reverse(order_url.format("change"), args=[held.pk]),
        reverse(order_url.format("change"), args=[charged.pk]),
        reverse(order_url.format("ship"), args=[held.pk]),
        reverse(order_url.format("cancel"), args=[held.pk]),
        reverse(order_url.format("refund"), args=[charged.pk]),
        reverse("admin:checkout_product_changelist"),
        reverse("admin:payments_payment_changelist"),
        reverse("admin:payments_payment_change", args=[payment.pk]),
        reverse("admin:payments_payment_refund", args=[payment.pk]),
        reverse(
            "admin:payments_payment_capture",
            args=[Payment.objects.get(external_reference=held.reference).pk],
        ),
        reverse("admin:payments_subscription_changelist"),
        reverse("admin:payments_subscription_change", args=[subscription.pk]),
        reverse("admin:payments_subscription_import"),
        reverse("admin:webhooks_webhookevent_changelist"),
        reverse("admin:webhooks_webhookevent_change", args=[event.pk]),
    ]


def labels(html: str) -> list[str]:
    found = []
    for match in LABELS.finditer(html):
        text = next(group for group in match.groups()[1:] if group is not None)
        text = unescape(re.sub(r"<[^>]+>", " ", text))
        found.append(" ".join(text.split()))
    return [text for text in found if text]


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-záéíóúñü]+", text.lower()))


@pytest.mark.parametrize(
    ("language", "foreign"), [("es", ENGLISH), ("en", SPANISH)], ids=["es", "en"]
)
def test_every_admin_page_speaks_one_language(
    admin_client: Client, pages: list[str], language: str, foreign: set[str]
) -> None:
    admin_client.cookies["django_language"] = language
    problems = []
    for url in pages:
        response = admin_client.get(url)
        assert response.status_code == 200, url
        for text in labels(response.content.decode()):
            stray = words(text) & foreign
            if stray:
                problems.append(f"{url}: {text!r} ({', '.join(sorted(stray))})")

    assert problems == []


def test_every_amount_in_the_admin_reads_like_pesos(admin_client: Client, pages: list[str]) -> None:
    problems = []
    for url in pages:
        html = admin_client.get(url).content.decode()
        html = re.sub(r"<(pre|script|style)\b.*?</\1>", " ", html, flags=re.S)
        text = unescape(re.sub(r"<[^>]+>", " ", html))
        for number in NUMBER_WITH_CENTS.findall(text):
            if not AMOUNT.fullmatch(number):
                problems.append(f"{url}: {number}")

    assert problems == []
