"""The factura's rules: asked while the order is paid and within the merchant's window,
corrected until staff start on it; the CFDI registered only when its XML matches the order
(nothing kept otherwise), recorded in the order's ledger with the buyer's mail queued; a refund
after the invoice flags a credit note."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
import time_machine
from django.utils import timezone

from books.models import FacturaRequest, FacturaState
from books.rules import (
    FacturaRefused,
    factura_deadline,
    factura_refund_check,
    factura_register,
    factura_request_save,
    factura_start,
)
from checkout.models import OrderEvent, OrderEventKind, OrderStatus
from tests.books.helpers import BUYER, PERSON_RFC, UUID, cfdi, charge_of, paid_order, requested

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

MEXICO = timezone.get_fixed_timezone(-360)


def placed(year: int, month: int, day: int, hour: int = 12) -> datetime:
    return datetime(year, month, day, hour, tzinfo=MEXICO)


def test_the_window_is_the_month_of_purchase_plus_the_merchants_days(settings: Any) -> None:
    settings.BOOKS_FACTURA_DAYS_AFTER_MONTH = 5
    order = paid_order(created_at=placed(2026, 10, 20))
    deadline = timezone.localtime(factura_deadline(order))
    assert (deadline.year, deadline.month, deadline.day, deadline.hour) == (2026, 11, 5, 23)
    with time_machine.travel(placed(2026, 11, 5, 22), tick=False):
        assert factura_request_save(order=order, data=BUYER).rfc == PERSON_RFC
    with time_machine.travel(placed(2026, 11, 6, 1), tick=False):
        with pytest.raises(FacturaRefused, match="ended on"):
            factura_request_save(order=order, data={**BUYER, "name": "OTRO"})
    assert FacturaRequest.objects.get(order=order).name == BUYER["name"]


def test_an_order_not_paid_is_refused_and_nothing_is_kept() -> None:
    order = paid_order(status=OrderStatus.AWAITING_PAYMENT)
    with pytest.raises(FacturaRefused, match="once your order is paid"):
        factura_request_save(order=order, data=BUYER)
    assert not FacturaRequest.objects.exists()


def test_the_buyer_corrects_until_staff_start() -> None:
    order = paid_order()
    factura_request_save(order=order, data=BUYER)
    factura_request_save(order=order, data={**BUYER, "postal_code": "06600"})
    factura = FacturaRequest.objects.get(order=order)
    assert factura.postal_code == "06600"

    assert factura_start(factura_ids=[factura.pk], actor=None) == 1
    with pytest.raises(FacturaRefused, match="already started"):
        factura_request_save(order=order, data={**BUYER, "postal_code": "01000"})
    assert FacturaRequest.objects.get(order=order).postal_code == "06600"
    assert OrderEvent.objects.filter(order=order, kind=OrderEventKind.INVOICING).exists()


def test_a_matching_xml_is_kept_in_the_ledger_and_mailed(
    django_capture_on_commit_callbacks: Any, admin_user: Any, monkeypatch: Any
) -> None:
    sent: list[tuple[str, tuple]] = []
    monkeypatch.setattr(
        "core.task_queue.send_now", lambda task, args=(), **kw: sent.append((task, tuple(args)))
    )
    factura = requested(paid_order("1290.00"))
    with django_capture_on_commit_callbacks(execute=True):
        factura_register(
            factura_id=factura.pk,
            uuid=UUID.lower(),
            xml=cfdi("1290.00"),
            pdf=None,
            actor=admin_user,
        )
    factura.refresh_from_db()
    assert (factura.state, factura.uuid, factura.total) == ("issued", UUID, Decimal("1290.00"))
    assert bytes(factura.xml) == cfdi("1290.00")
    event = OrderEvent.objects.get(order=factura.order, kind=OrderEventKind.INVOICED)
    assert UUID in event.message and event.actor == admin_user
    assert sent == [("books.tasks.factura_mail_task", (factura.pk,))]


@pytest.mark.parametrize(
    ("xml", "words"),
    [
        (cfdi("1300.00"), "total"),
        (cfdi("1290.00", rfc="EKU9003173C9"), "RFC"),
        (b"<x>", "not a readable XML"),
    ],
    ids=["total", "rfc", "unreadable"],
)
def test_an_xml_that_does_not_match_changes_nothing(xml: bytes, words: str) -> None:
    factura = requested(paid_order("1290.00"))
    with pytest.raises(FacturaRefused, match=words):
        factura_register(factura_id=factura.pk, uuid=UUID, xml=xml, pdf=None, actor=None)
    factura.refresh_from_db()
    assert (factura.state, factura.uuid, factura.xml) == (FacturaState.REQUESTED, "", None)
    assert not OrderEvent.objects.filter(order=factura.order).exists()


def test_the_total_to_invoice_is_the_charge_net_of_refunds() -> None:
    factura = requested(paid_order("1290.00", refunded="290.00"))
    with pytest.raises(FacturaRefused, match="total"):
        factura_register(
            factura_id=factura.pk, uuid=UUID, xml=cfdi("1290.00"), pdf=None, actor=None
        )
    factura_register(factura_id=factura.pk, uuid=UUID, xml=cfdi("1000.00"), pdf=None, actor=None)
    assert FacturaRequest.objects.get(pk=factura.pk).refunded_at_issue == Decimal("290.00")


def register(factura: FacturaRequest, xml: bytes) -> None:
    factura_register(factura_id=factura.pk, uuid=UUID, xml=xml, pdf=None, actor=None)


def test_a_pdf_that_is_not_one_is_refused() -> None:
    factura = requested(paid_order())
    with pytest.raises(FacturaRefused, match="PDF"):
        factura_register(factura_id=factura.pk, uuid=UUID, xml=cfdi(), pdf=b"MZ", actor=None)


def test_a_refund_after_the_invoice_flags_a_credit_note_once() -> None:
    order = paid_order("1290.00")
    factura = requested(order)
    assert factura_refund_check(reference=order.reference) is False  # not invoiced yet
    factura_register(factura_id=factura.pk, uuid=UUID, xml=cfdi("1290.00"), pdf=None, actor=None)
    assert factura_refund_check(reference=order.reference) is False  # nothing refunded since

    payment = charge_of(order)
    payment.refunded_amount = Decimal("289.00")
    payment.save()
    assert factura_refund_check(reference=order.reference) is True
    assert factura_refund_check(reference=order.reference) is False
    factura.refresh_from_db()
    assert factura.credit_note_due_at is not None
    note = OrderEvent.objects.get(order=order, kind=OrderEventKind.CREDIT_NOTE)
    assert "$289.00" in note.message
