"""The order page of the admin reads its ledger (its payments' entries and its own) in the staff
member's language: statuses and status details as the shop's labels, the shop's sentences
translated (a shipment recorded in Spanish reads in English too), the provider's own words
labelled as such, items, amounts ($1,290.00) and a refund's reason as written. The entries
themselves stay as they were written."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.html import strip_tags

from checkout.models import Order, OrderEvent
from checkout.words import shipment_message
from payments.models import PaymentEvent
from tests.factories import (
    OrderEventFactory,
    OrderFactory,
    PaymentEventFactory,
    PaymentFactory,
    ProductFactory,
)

pytestmark = pytest.mark.django_db

# The payment's entries, one of each kind, as stored: (kind, old, new, amount, message).
PAYMENT_ENTRIES = [
    ("created", "", "pending", None, "PE-3DS01 Waiting 3DS"),
    ("synced", "pending", "authorized", None, "AU-CAP01 Pending capture"),
    (
        "expiring",
        "authorized",
        "authorized",
        None,
        "authorization expires 2026-12-01 10:00 (in 2 d 23 h): capture or cancel it",
    ),
    ("failed", "authorized", "authorized", None, "capture: Capture above the authorized amount"),
    (
        "unknown",
        "authorized",
        "authorized",
        None,
        "cancellation: the card payments service did not answer (ReadTimeout)",
    ),
    ("captured", "authorized", "approved", "1290.00", "AP-PAI01 paid"),
    ("refunded", "approved", "approved", "150.00", "refund rf_9d1e"),
    ("cancelled", "authorized", "cancelled", None, "CA-MER01 Cancelled"),
    ("adopted", "", "approved", None, "AP-PAI01 paid"),
    (
        "anomaly",
        "refunded",
        "approved",
        None,
        "the provider reports 'approved' for a payment that is 'refunded'",
    ),
]
# The order's entries, one of each kind, as stored (the second shipment was recorded by a
# Spanish-speaking staff member before shipments were written in English).
ORDER_ENTRIES = [
    ("shipped", "1 × Blusa bordada · charged $1,290.00, released $578.00"),
    ("shipped", "2 × Taza · cobrado $578.00, liberado $0.00"),
    ("shipped", "1 × Rebozo"),
    ("restocked", "2 × Taza"),
    ("cancelled", ""),
    ("refunded", "$150.00 Taza rota"),
    ("refreshed", ""),
    ("expired", "not paid within 30 minutes"),
    ("reserved", "paid after it expired; items still in stock"),
]
# What staff read: what, amount, details.
LINES = {
    "es": [
        ("Creado", "", "Pendiente (3-D Secure) · En espera de 3-D Secure (PE-3DS01)"),
        (
            "Sincronizado del proveedor",
            "",
            "Pendiente (3-D Secure) → Autorizado · En espera de cobro (AU-CAP01)",
        ),
        (
            "Autorización por vencer",
            "",
            "la autorización vence el 2026-12-01 10:00 (en 2 d 23 h): cóbrala o cancélala",
        ),
        ("Intento fallido", "", "cobro: el proveedor dijo: “Capture above the authorized amount”"),
        (
            "Resultado desconocido",
            "",
            "cancelación: el servicio de pagos con tarjeta no respondió (ReadTimeout)",
        ),
        ("Cobrado", "$1,290.00", "Autorizado → Aprobado · Pagado (AP-PAI01)"),
        ("Reembolsado", "$150.00", "reembolso rf_9d1e"),
        ("Cancelado", "", "Autorizado → Cancelado · Cancelado por la tienda (CA-MER01)"),
        ("Recuperado de una notificación", "", "Aprobado · Pagado (AP-PAI01)"),
        (
            "Anomalía del proveedor",
            "",
            "Reembolsado → Aprobado · el proveedor reporta «Aprobado» para un pago que está "
            "«Reembolsado»",
        ),
        ("Enviado", "", "1 × Blusa bordada · cobrado $1,290.00, liberado $578.00"),
        ("Enviado", "", "2 × Taza · cobrado $578.00, liberado $0.00"),
        ("Enviado", "", "1 × Rebozo"),
        ("Devuelto al inventario", "", "2 × Taza"),
        ("Cancelado", "", ""),
        ("Reembolsado", "", "$150.00 Taza rota"),
        ("Actualizado desde el proveedor", "", ""),
        ("Vencido", "", "no se pagó en 30 minutos"),
        (
            "Productos apartados de nuevo",
            "",
            "pagado después de vencer; los productos seguían en inventario",
        ),
    ],
    "en": [
        ("Created", "", "Pending (3-D Secure) · Waiting for 3-D Secure (PE-3DS01)"),
        (
            "Synced from provider",
            "",
            "Pending (3-D Secure) → Authorized · Waiting to be captured (AU-CAP01)",
        ),
        (
            "Authorization expiring",
            "",
            "authorization expires 2026-12-01 10:00 (in 2 d 23 h): capture or cancel it",
        ),
        (
            "Failed attempt",
            "",
            "capture: the provider said: “Capture above the authorized amount”",
        ),
        (
            "Outcome unknown",
            "",
            "cancellation: the card payments service did not answer (ReadTimeout)",
        ),
        ("Captured", "$1,290.00", "Authorized → Approved · Paid (AP-PAI01)"),
        ("Refunded", "$150.00", "refund rf_9d1e"),
        ("Cancelled", "", "Authorized → Cancelled · Cancelled by the shop (CA-MER01)"),
        ("Recovered from a notification", "", "Approved · Paid (AP-PAI01)"),
        (
            "Provider anomaly",
            "",
            "Refunded → Approved · the provider reports 'Approved' for a payment that is "
            "'Refunded'",
        ),
        ("Shipped", "", "1 × Blusa bordada · charged $1,290.00, released $578.00"),
        ("Shipped", "", "2 × Taza · charged $578.00, released $0.00"),
        ("Shipped", "", "1 × Rebozo"),
        ("Back in stock", "", "2 × Taza"),
        ("Cancelled", "", ""),
        ("Refunded", "", "$150.00 Taza rota"),
        ("Refreshed from the provider", "", ""),
        ("Expired", "", "not paid within 30 minutes"),
        ("Items held again", "", "paid after it expired; items still in stock"),
    ],
}

# English words of statuses, details and the shop's sentences, which a Spanish page must not
# show (but inside the provider's own words, labelled as such).
ENGLISH = re.compile(
    r"\b(approved|authorized|pending|rejected|cancelled|refunded|failed|creating|unknown|"
    r"capture|cancellation|paid|waiting|3ds|expired|expires|refund|refresh|charged|released|"
    r"provider|service|answer|stock|within|minutes|created|synced|anomaly|shipped)\b",
    re.IGNORECASE,
)
PROVIDER_SAID = re.compile(r"el proveedor dijo: “[^”]*”")


def ledger_order() -> Order:
    """An order with a payment, and both ledgers holding an entry of every kind."""
    blusa = ProductFactory(slug="blusa-orden", name="Blusa bordada", price=Decimal("1290.00"))
    order = OrderFactory(lines=[(blusa, 1)])
    payment = PaymentFactory(order=order, status="approved", capture_method="manual")
    start = timezone.now() - timedelta(days=1)
    for i, (kind, old, new, amount, message) in enumerate(PAYMENT_ENTRIES):
        PaymentEventFactory(
            payment=payment,
            kind=kind,
            old_status=old,
            new_status=new,
            amount=Decimal(amount) if amount else None,
            message=message,
            created_at=start + timedelta(minutes=i),
        )
    for i, (kind, message) in enumerate(ORDER_ENTRIES, start=len(PAYMENT_ENTRIES)):
        OrderEventFactory(
            order=order, kind=kind, message=message, created_at=start + timedelta(minutes=i)
        )
    return order


def order_page(client: Client, order: Order, language: str) -> str:
    client.cookies["django_language"] = language
    response = client.get(reverse("admin:checkout_order_change", args=[order.pk]))
    assert response.status_code == 200
    return response.content.decode()


def text_of(html: str) -> str:
    return " ".join(unescape(strip_tags(html)).split())


def ledger_lines(page: str) -> list[tuple[str, str, str]]:
    """The order ledger's rows: what, amount, details."""
    table = re.search(r'<div class="module" id="order-ledger">(.*?)</table>', page, re.S)
    assert table, "no ledger on the order page"
    rows = re.findall(r"<tr><td>(.*?)</tr>", table.group(1), re.S)
    cells = [re.findall(r"<td>(.*?)</td>", "<td>" + row, re.S) for row in rows]
    return [(text_of(c[1]), text_of(c[2]), text_of(c[3])) for c in cells]


@pytest.mark.parametrize("language", ["es", "en"])
def test_the_order_page_reads_every_ledger_entry_in_the_admins_language(
    admin_client: Client, language: str
) -> None:
    """Given an order whose payment's ledger and own ledger have an entry of every kind, then
    its page shows each entry's kind, amount and details in the admin's language."""
    order = ledger_order()

    assert ledger_lines(order_page(admin_client, order, language)) == LINES[language]


def test_the_spanish_order_page_shows_no_english_status_detail_or_sentence(
    admin_client: Client,
) -> None:
    """Given the order page in Spanish, then none of its text is an English status, status
    detail or sentence of the shop; only the provider's own words (labelled) keep English."""
    order = ledger_order()
    page = order_page(admin_client, order, "es")
    content = re.search(r'<div id="content".*', page, re.S).group(0)
    text = text_of(re.sub(r"<(script|style)\b.*?</\1>", "", content, flags=re.S))

    assert len(PROVIDER_SAID.findall(text)) == 1
    assert ENGLISH.findall(PROVIDER_SAID.sub("", text)) == []


def test_reading_the_ledger_changes_nothing_written(admin_client: Client) -> None:
    """The entries are financial records: reading them in either language rewrites none."""
    order = ledger_order()
    payments_before = list(PaymentEvent.objects.order_by("pk").values())
    order_before = list(OrderEvent.objects.order_by("pk").values())

    for language in ("es", "en"):
        order_page(admin_client, order, language)

    assert list(PaymentEvent.objects.order_by("pk").values()) == payments_before
    assert list(OrderEvent.objects.order_by("pk").values()) == order_before
    assert [e["message"] for e in order_before] == [m for _kind, m in ORDER_ENTRIES]


def test_a_shipment_is_recorded_in_english_whatever_the_staff_members_language() -> None:
    """What a shipment charged is written in the record's language (English), so that it
    reads in whichever language staff use later."""
    with translation.override("es"):
        written = shipment_message(["1 × Blusa bordada"], Decimal("1290.00"), Decimal("578.00"))

    assert written == "1 × Blusa bordada · charged $1,290.00, released $578.00"
