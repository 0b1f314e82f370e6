"""The payment page of the admin reads its ledger in the staff member's language: statuses and
status details as the shop's labels, the sentences the shop writes into an entry translated,
the provider's own words left as it said them but labelled as the provider's, and money written
$1,290.00. The entries themselves stay as they were written (financial records)."""

from __future__ import annotations

import re
from decimal import Decimal
from html import unescape
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import strip_tags

from payments.actions.calls import payment_cancel, payment_capture, payment_refund
from payments.models import Payment, PaymentEvent
from payments.provider.errors import PaymentError
from tests.factories import (
    OrderFactory,
    PaymentEventFactory,
    PaymentFactory,
    ProductFactory,
    RefundFactory,
    provider_payment,
)
from tests.helpers.provider import DECLINED, PROVIDER_ERROR, THREE_DS, Api

pytestmark = pytest.mark.django_db

REFUND_ID = "rf_5f0c2a"
# Every kind of entry, with each shape of message the shop writes (as stored), in order:
# (kind, old status, new status, amount, message, error code).
ENTRIES = [
    ("created", "", "pending", None, "PE-3DS01 Waiting 3DS", ""),
    ("synced", "pending", "authorized", None, "AU-CAP01 Pending capture", ""),
    (
        "expiring",
        "authorized",
        "authorized",
        None,
        "authorization expires 2026-12-01 10:00 (in 2 d 23 h): capture or cancel it",
        "",
    ),
    (
        "failed",
        "authorized",
        "authorized",
        None,
        "capture: Capture above the authorized amount",
        "CL2205",
    ),
    (
        "unknown",
        "authorized",
        "authorized",
        None,
        "capture: the card payments service did not answer (ReadTimeout)",
        "",
    ),
    ("captured", "authorized", "approved", "1290.00", "AP-PAI01 paid", ""),
    (
        "refunded",
        "approved",
        "approved",
        "150.00",
        f"refund {REFUND_ID}; refresh failed: the card payments service did not answer "
        "(ConnectTimeout)",
        "",
    ),
    ("refunded", "approved", "refunded", "1140.00", "RF-REF01 Refunded", ""),
    (
        "anomaly",
        "refunded",
        "approved",
        None,
        "the provider reports 'approved' for a payment that is 'refunded'",
        "",
    ),
    ("anomaly", "refunded", "weird", None, "unknown provider status 'weird' (XX-ODD01)", ""),
    ("synced", "refunded", "refunded", None, "ZZ-NEW01 Something new", ""),
    ("adopted", "", "approved", None, "AP-PAI01 paid", ""),
    ("cancelled", "authorized", "cancelled", None, "CA-EXP01 Authorization expired", ""),
    ("created", "", "rejected", None, "RE-FUN01 Insufficient funds", ""),
    ("failed", "creating", "failed", None, "Card token expired or unknown", "CL2201"),
    (
        "unknown",
        "creating",
        "unknown",
        None,
        "the card payments service answered with invalid JSON",
        "",
    ),
    ("failed", "unknown", "failed", None, "Closed by staff: the provider has no such payment.", ""),
    ("refunded", "approved", "approved", "100.00", f"refund {REFUND_ID}", ""),
    ("failed", "approved", "approved", None, "refund: no such resource", "BR1301"),
    ("synced", "approved", "approved", None, "", ""),
]

# What staff read in each row: kind, old status, new status, amount, message, error code.
ROWS = {
    "es": [
        ("Creado", "—", "Pendiente (3-D Secure)", "—", "En espera de 3-D Secure (PE-3DS01)", ""),
        (
            "Sincronizado del proveedor",
            "Pendiente (3-D Secure)",
            "Autorizado",
            "—",
            "En espera de cobro (AU-CAP01)",
            "",
        ),
        (
            "Autorización por vencer",
            "Autorizado",
            "Autorizado",
            "—",
            "la autorización vence el 2026-12-01 10:00 (en 2 d 23 h): cóbrala o cancélala",
            "",
        ),
        (
            "Intento fallido",
            "Autorizado",
            "Autorizado",
            "—",
            "cobro: el proveedor dijo: “Capture above the authorized amount”",
            "CL2205",
        ),
        (
            "Resultado desconocido",
            "Autorizado",
            "Autorizado",
            "—",
            "cobro: el servicio de pagos con tarjeta no respondió (ReadTimeout)",
            "",
        ),
        ("Cobrado", "Autorizado", "Aprobado", "$1,290.00", "Pagado (AP-PAI01)", ""),
        (
            "Reembolsado",
            "Aprobado",
            "Aprobado",
            "$150.00",
            f"reembolso {REFUND_ID}; no se pudo volver a leer el pago: el servicio de pagos con "
            "tarjeta no respondió (ConnectTimeout)",
            "",
        ),
        (
            "Reembolsado",
            "Aprobado",
            "Reembolsado",
            "$1,140.00",
            "Reembolsado por completo (RF-REF01)",
            "",
        ),
        (
            "Anomalía del proveedor",
            "Reembolsado",
            "Aprobado",
            "—",
            "el proveedor reporta «Aprobado» para un pago que está «Reembolsado»",
            "",
        ),
        (
            "Anomalía del proveedor",
            "Reembolsado",
            "weird",
            "—",
            "estado desconocido del proveedor: 'weird' (XX-ODD01)",
            "",
        ),
        (
            "Sincronizado del proveedor",
            "Reembolsado",
            "Reembolsado",
            "—",
            "ZZ-NEW01 · el proveedor dijo: “Something new”",
            "",
        ),
        ("Recuperado de una notificación", "—", "Aprobado", "—", "Pagado (AP-PAI01)", ""),
        ("Cancelado", "Autorizado", "Cancelado", "—", "Autorización vencida (CA-EXP01)", ""),
        ("Creado", "—", "Rechazado", "—", "Fondos insuficientes (RE-FUN01)", ""),
        (
            "Intento fallido",
            "Creándose",
            "No creado",
            "—",
            "el proveedor dijo: “Card token expired or unknown”",
            "CL2201",
        ),
        (
            "Resultado desconocido",
            "Creándose",
            "Resultado desconocido",
            "—",
            "el servicio de pagos con tarjeta respondió con un JSON no válido",
            "",
        ),
        (
            "Intento fallido",
            "Resultado desconocido",
            "No creado",
            "—",
            "Cerrado por el personal: el proveedor no tiene este pago.",
            "",
        ),
        ("Reembolsado", "Aprobado", "Aprobado", "$100.00", f"reembolso {REFUND_ID}", ""),
        (
            "Intento fallido",
            "Aprobado",
            "Aprobado",
            "—",
            "reembolso: ese recurso no existe",
            "BR1301",
        ),
        ("Sincronizado del proveedor", "Aprobado", "Aprobado", "—", "—", ""),
    ],
    "en": [
        ("Created", "—", "Pending (3-D Secure)", "—", "Waiting for 3-D Secure (PE-3DS01)", ""),
        (
            "Synced from provider",
            "Pending (3-D Secure)",
            "Authorized",
            "—",
            "Waiting to be captured (AU-CAP01)",
            "",
        ),
        (
            "Authorization expiring",
            "Authorized",
            "Authorized",
            "—",
            "authorization expires 2026-12-01 10:00 (in 2 d 23 h): capture or cancel it",
            "",
        ),
        (
            "Failed attempt",
            "Authorized",
            "Authorized",
            "—",
            "capture: the provider said: “Capture above the authorized amount”",
            "CL2205",
        ),
        (
            "Outcome unknown",
            "Authorized",
            "Authorized",
            "—",
            "capture: the card payments service did not answer (ReadTimeout)",
            "",
        ),
        ("Captured", "Authorized", "Approved", "$1,290.00", "Paid (AP-PAI01)", ""),
        (
            "Refunded",
            "Approved",
            "Approved",
            "$150.00",
            f"refund {REFUND_ID}; refresh failed: the card payments service did not answer "
            "(ConnectTimeout)",
            "",
        ),
        ("Refunded", "Approved", "Refunded", "$1,140.00", "Refunded in full (RF-REF01)", ""),
        (
            "Provider anomaly",
            "Refunded",
            "Approved",
            "—",
            "the provider reports 'Approved' for a payment that is 'Refunded'",
            "",
        ),
        (
            "Provider anomaly",
            "Refunded",
            "weird",
            "—",
            "unknown provider status 'weird' (XX-ODD01)",
            "",
        ),
        (
            "Synced from provider",
            "Refunded",
            "Refunded",
            "—",
            "ZZ-NEW01 · the provider said: “Something new”",
            "",
        ),
        ("Recovered from a notification", "—", "Approved", "—", "Paid (AP-PAI01)", ""),
        ("Cancelled", "Authorized", "Cancelled", "—", "Authorization expired (CA-EXP01)", ""),
        ("Created", "—", "Rejected", "—", "Insufficient funds (RE-FUN01)", ""),
        (
            "Failed attempt",
            "Creating",
            "Not created",
            "—",
            "the provider said: “Card token expired or unknown”",
            "CL2201",
        ),
        (
            "Outcome unknown",
            "Creating",
            "Outcome unknown",
            "—",
            "the card payments service answered with invalid JSON",
            "",
        ),
        (
            "Failed attempt",
            "Outcome unknown",
            "Not created",
            "—",
            "Closed by staff: the provider has no such payment.",
            "",
        ),
        ("Refunded", "Approved", "Approved", "$100.00", f"refund {REFUND_ID}", ""),
        ("Failed attempt", "Approved", "Approved", "—", "refund: no such resource", "BR1301"),
        ("Synced from provider", "Approved", "Approved", "—", "—", ""),
    ],
}
COLUMNS = ["kind", "old_status_shown", "new_status_shown", "amount_shown", "message_shown"]

# What the provider and the shop write in English, which a Spanish page must not show (but
# inside the provider's own words, labelled as such, and its raw snapshot).
ENGLISH = re.compile(
    r"\b(approved|authorized|pending|rejected|cancelled|refunded|failed|creating|unknown|"
    r"capture|paid|waiting|3ds|declined|insufficient|voided|expired|expires|refund|refresh|"
    r"provider|service|answer|answered|staff|created|synced|anomaly|amount|status)\b",
    re.IGNORECASE,
)
PROVIDER_SAID = re.compile(r"(el proveedor dijo|the provider said): “[^”]*”")


def ledger_payment(**fields: Any) -> Payment:
    """A payment of an order, with a refund and a ledger of every kind of entry (ENTRIES)."""
    product = ProductFactory(slug="blusa-ledger", name="Blusa bordada", price=Decimal("1290.00"))
    order = OrderFactory(lines=[(product, 1)])
    payment = PaymentFactory(order=order, **fields)
    RefundFactory(payment=payment, provider_id=REFUND_ID, amount=Decimal("150.00"))
    for kind, old, new, amount, message, error_code in ENTRIES:
        PaymentEventFactory(
            payment=payment,
            kind=kind,
            old_status=old,
            new_status=new,
            amount=Decimal(amount) if amount else None,
            message=message,
            error_code=error_code,
        )
    return payment


def payment_page(client: Client, payment: Payment, language: str) -> str:
    client.cookies["django_language"] = language
    response = client.get(reverse("admin:payments_payment_change", args=[payment.pk]))
    assert response.status_code == 200
    return response.content.decode()


def inline_rows(page: str, prefix: str) -> list[dict[str, str]]:
    """The rows of an inline (`events`, `refunds`): each cell's text by field."""
    rows = re.findall(rf'<tr class="form-row[^"]*"\s+id="{prefix}-\d+">(.*?)</tr>', page, re.S)
    return [
        {
            field: unescape(strip_tags(text)).strip()
            for field, text in re.findall(r'<td class="field-([a-z_]+)">(.*?)</td>', row, re.S)
        }
        for row in rows
    ]


def readonly(page: str, field: str) -> str:
    """A read-only field's text on the payment page."""
    found = re.search(
        rf'<div class="form-row field-{field}">.*?<div class="readonly">(.*?)</div>', page, re.S
    )
    assert found, field
    return unescape(strip_tags(found.group(1))).strip()


@pytest.mark.parametrize("language", ["es", "en"])
def test_the_payment_page_reads_every_ledger_entry_in_the_admins_language(
    admin_client: Client, language: str
) -> None:
    """Given a payment whose ledger has an entry of every kind, with each message the shop
    writes, then its page shows each entry's kind, statuses, amount and message in the admin's
    language, the provider's own words labelled as the provider's, and the error code as it
    came."""
    payment = ledger_payment(status="refunded", status_code="RF-REF01", status_message="Refunded")

    rows = inline_rows(payment_page(admin_client, payment, language), "events")

    assert [tuple(row[c] for c in COLUMNS) for row in rows] == [r[:5] for r in ROWS[language]]
    assert [row["error_code"] for row in rows] == [r[5] or "-" for r in ROWS[language]]


@pytest.mark.parametrize(
    ("language", "detail", "refund_status"),
    [
        ("es", "Reembolsado por completo (RF-REF01)", "Aprobado"),
        ("en", "Refunded in full (RF-REF01)", "Approved"),
    ],
)
def test_the_payment_pages_status_detail_and_refunds_read_in_the_admins_language(
    admin_client: Client, language: str, detail: str, refund_status: str
) -> None:
    """The payment's status detail is the shop's label with its code (not the provider's
    "Refunded"), and a refund's status the shop's label."""
    payment = ledger_payment(status="refunded", status_code="RF-REF01", status_message="Refunded")

    page = payment_page(admin_client, payment, language)

    assert readonly(page, "status_detail") == detail
    [refund] = inline_rows(page, "refunds")
    assert (refund["status_shown"], refund["amount_shown"]) == (refund_status, "$150.00")


# Every status detail code the shop knows, with the provider's words, and what staff read.
DETAILS = {
    "AU-CAP01": ("Pending capture", "En espera de cobro", "Waiting to be captured"),
    "PE-3DS01": ("Waiting 3DS", "En espera de 3-D Secure", "Waiting for 3-D Secure"),
    "AP-PAI01": ("paid", "Pagado", "Paid"),
    "CA-MER01": ("Cancelled", "Cancelado por la tienda", "Cancelled by the shop"),
    "CA-EXP01": ("Authorization expired", "Autorización vencida", "Authorization expired"),
    "CA-3DS01": (
        "3-D Secure not completed",
        "3-D Secure no completado a tiempo",
        "3-D Secure not completed in time",
    ),
    "CA-VOI01": (
        "Voided",
        "Anulado: reembolsado por completo el día de la aprobación",
        "Voided: refunded in full on the day of approval",
    ),
    "RF-REF01": ("Refunded", "Reembolsado por completo", "Refunded in full"),
    "RE-DEC01": ("Declined", "Rechazado por el banco", "Declined by the bank"),
    "RE-FUN01": ("Insufficient funds", "Fondos insuficientes", "Insufficient funds"),
    "RE-3DS01": (
        "3-D Secure failed",
        "3-D Secure fallido o cancelado",
        "3-D Secure failed or cancelled",
    ),
    "RE-BIN01": (
        "Rejected in binary mode: 3-D Secure required",
        "Requería 3-D Secure (modo binario)",
        "Would need 3-D Secure (binary mode)",
    ),
}


@pytest.mark.parametrize("language", ["es", "en"])
@pytest.mark.parametrize("code", DETAILS)
def test_every_status_detail_reads_as_the_shops_label(
    admin_client: Client, code: str, language: str
) -> None:
    """Each status detail code the shop knows reads as its label with the code, never as the
    provider's words, on the payment page and in its ledger."""
    said, *labels = DETAILS[code]
    label = f"{labels[0 if language == 'es' else 1]} ({code})"
    payment = PaymentFactory(
        order=OrderFactory(total=Decimal("250.00")), status_code=code, status_message=said
    )
    PaymentEventFactory(payment=payment, kind="synced", message=f"{code} {said}")

    page = payment_page(admin_client, payment, language)

    assert readonly(page, "status_detail") == label
    assert [row["message_shown"] for row in inline_rows(page, "events")] == [label]


@pytest.mark.parametrize(
    ("language", "detail"),
    [
        ("es", "ZZ-NEW01 · el proveedor dijo: “Something new”"),
        ("en", "ZZ-NEW01 · the provider said: “Something new”"),
    ],
)
def test_a_detail_the_shop_does_not_know_is_the_providers_words_labelled(
    admin_client: Client, language: str, detail: str
) -> None:
    payment = ledger_payment(
        status="approved", status_code="ZZ-NEW01", status_message="Something new"
    )

    assert readonly(payment_page(admin_client, payment, language), "status_detail") == detail


def spanish_text(client: Client, payment: Payment) -> str:
    """The payment page's text in Spanish, but the provider's raw snapshot and addresses."""
    page = payment_page(client, payment, "es")
    content = re.search(r'<div id="content".*', page, re.S).group(0)
    content = re.sub(r"<pre\b.*?</pre>", "", content, flags=re.S)  # the provider's snapshot
    text = unescape(strip_tags(re.sub(r"<(script|style)\b.*?</\1>", "", content, flags=re.S)))
    return re.sub(r"https?://\S+", "", text)  # the 3-D Secure page's address


def test_the_spanish_payment_page_shows_no_english_status_or_detail(admin_client: Client) -> None:
    """Given the payment page in Spanish, then none of its text is an English status, status
    detail or sentence of the shop: only the provider's own words (labelled) and its raw
    snapshot keep the provider's English."""
    payment = ledger_payment(
        status="refunded",
        status_code="RF-REF01",
        status_message="Refunded",
        capture_method="manual",
        card_brand="visa",
        card_last_digits="4242",
    )

    text = spanish_text(admin_client, payment)

    assert len(PROVIDER_SAID.findall(text)) == 3
    assert ENGLISH.findall(PROVIDER_SAID.sub("", text)) == []


@pytest.mark.sandbox
def test_payments_made_through_the_services_read_in_spanish(
    provider: Api, admin_client: Client, admin_user: Any
) -> None:
    """Given payments made through the services against the live sandbox (captured in part,
    refunded in part then in full, cancelled, declined, waiting for 3-D Secure, and one whose
    outcome the provider's failure left unknown), then no Spanish payment page shows an
    English status, detail or sentence: what the services write is what the ledger reads."""
    held = provider_payment(provider, capture_method="manual", amount="400.00")
    payment_capture(payment=held, amount=Decimal("300.00"), actor=admin_user)
    charged = provider_payment(provider, amount="500.00")
    payment_refund(payment=charged, amount=Decimal("100.00"), reason="Taza rota", actor=admin_user)
    payment_refund(payment=charged, actor=admin_user)
    payment_cancel(payment=provider_payment(provider, capture_method="manual"), actor=admin_user)
    provider_payment(provider, number=DECLINED)
    provider_payment(provider, number=THREE_DS)
    with pytest.raises(PaymentError):
        provider_payment(provider, number=PROVIDER_ERROR)
    statuses = {"approved", "refunded", "cancelled", "rejected", "pending", "unknown"}
    assert {p.status for p in Payment.objects.all()} | {"refunded"} >= statuses

    said = {}
    for payment in Payment.objects.all():
        text = spanish_text(admin_client, payment)
        assert ENGLISH.findall(PROVIDER_SAID.sub("", text)) == [], payment
        said[payment.status] = PROVIDER_SAID.findall(text)
    # The provider's words only where it said something the shop has no label for.
    assert {status: words for status, words in said.items() if words} == {
        "unknown": ["el proveedor dijo"]
    }


def test_the_entries_are_kept_as_written(admin_client: Client) -> None:
    """Reading the ledger in either language changes nothing of what was written."""
    payment = ledger_payment()
    before = list(PaymentEvent.objects.filter(payment=payment).values())

    payment_page(admin_client, payment, "es")
    payment_page(admin_client, payment, "en")

    assert list(PaymentEvent.objects.filter(payment=payment).values()) == before
    assert [e["message"] for e in before] == [entry[4] for entry in ENTRIES]
