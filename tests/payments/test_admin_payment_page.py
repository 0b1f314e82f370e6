"""A payment's page in the admin: the provider's snapshot, the ledger and the refunds, and only
the action links that the staff member's permissions and the payment's status allow."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from decimal import Decimal
from html import unescape
from typing import Any

import pytest
from django.test import Client
from django.utils.html import strip_tags

from payments.actions.calls import payment_refund
from payments.models import Refund
from payments.statuses import PaymentStatus
from tests.helpers.provider import Api
from tests.helpers.staff import sign_in_staff
from tests.payments.helpers import (
    VIEW_PAYMENTS,
    action_url,
    approved,
    authorized,
    change_url,
    money,
    stored_payment,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]


def inline_rows(html: str, prefix: str) -> list[dict[str, str]]:
    """The rows of an inline (`events`, `refunds`) on the payment page: cell text by field."""
    rows = re.findall(rf'<tr class="form-row[^"]*"\s+id="{prefix}-\d+">(.*?)</tr>', html, re.S)
    return [
        {
            field: strip_tags(text).strip()
            for field, text in re.findall(r'<td class="field-([a-z_]+)">(.*?)</td>', row, re.S)
        }
        for row in rows
    ]


def test_payment_page_shows_snapshot_ledger_and_refunds(
    provider: Api, admin_client: Client, admin_user: Any
) -> None:
    """The payment page shows the provider snapshot, every ledger row and the refunds."""
    payment = approved(provider, amount="400.00")
    payment_refund(payment=payment, amount=Decimal("150.00"), reason="Taza rota", actor=admin_user)
    payment.refresh_from_db()
    refund = Refund.objects.get(payment=payment)

    response = admin_client.get(change_url(payment))

    assert response.status_code == 200
    html = response.content.decode()
    shown = re.search(r'class="readonly"><pre[^>]*>(.*?)</pre>', html, re.S)
    assert shown, "no provider snapshot on the page"
    assert json.loads(unescape(shown.group(1))) == payment.snapshot
    assert payment.snapshot["id"] == payment.provider_id
    ledger = inline_rows(html, "events")
    assert [(row["kind"], row["new_status_shown"]) for row in ledger] == [
        ("Created", "Approved"),
        ("Refunded", "Approved"),
    ]
    assert money(ledger[1]["amount_shown"]) == Decimal("150.00")
    assert ledger[1]["actor"] == admin_user.username
    refunds = inline_rows(html, "refunds")
    assert len(refunds) == 1
    assert (refunds[0]["provider_id"], refunds[0]["reason"]) == (refund.provider_id, "Taza rota")
    assert money(refunds[0]["amount_shown"]) == Decimal("150.00")


@pytest.mark.parametrize(
    ("perms", "status", "visible"),
    [
        (
            ("capture_payment", "cancel_payment", "refund_payment"),
            "authorized",
            {"capture", "cancel"},
        ),
        (("capture_payment", "cancel_payment", "refund_payment"), "approved", {"refund"}),
        (("capture_payment",), "authorized", {"capture"}),
        (("cancel_payment",), "authorized", {"cancel"}),
        (("refund_payment",), "authorized", set()),
        (("refund_payment",), "approved", {"refund"}),
        (("capture_payment", "cancel_payment"), "approved", set()),
        ((), "authorized", set()),
        ((), "approved", set()),
        (("refresh_payment",), "approved", {"refresh"}),
    ],
)
def test_payment_page_action_links_follow_permission_and_status(
    provider: Api,
    client: Client,
    make_staff: Callable[..., Any],
    perms: tuple[str, ...],
    status: str,
    visible: set[str],
) -> None:
    """Capture/Cancel/Refund links and the Refresh button appear only with the matching
    permission and status."""
    payment = authorized(provider) if status == "authorized" else approved(provider)
    sign_in_staff(client, make_staff("clerk", *VIEW_PAYMENTS, *perms))

    response = client.get(change_url(payment))

    assert response.status_code == 200
    html = response.content.decode()
    shown = {a for a in ("capture", "cancel", "refund", "refresh") if f'id="action-{a}"' in html}
    assert shown == visible
    for action in visible:
        assert action_url(action, payment) in html


def test_superuser_sees_no_links_on_a_final_payment(admin_client: Client) -> None:
    """A cancelled payment offers no capture, cancel or refund, even to a superuser."""
    payment = stored_payment(
        "ORD-CANC01", status=PaymentStatus.CANCELLED, captured_amount=Decimal("0")
    )

    html = admin_client.get(change_url(payment)).content.decode()

    assert not re.search(r'id="action-(capture|cancel|refund)"', html)
