"""The books' tasks on a real worker: the buyer's mail with the factura's PDF (made from the XML
when the PAC gave none) and XML, sent once; a refund after the invoice, reported by payments'
signal, flags the credit note."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.core import mail

from books.models import FacturaRequest
from books.rules import factura_register
from books.tasks import factura_mail_task
from checkout.models import OrderEvent, OrderEventKind
from payments.records import notify_status_changed_on_commit
from tests.books.helpers import UUID, cfdi, charge_of, paid_order, requested
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_buyer_gets_the_pdf_and_the_xml_once(worker: Any) -> None:
    factura = requested(paid_order("1290.00"))
    factura_register(factura_id=factura.pk, uuid=UUID, xml=cfdi("1290.00"), pdf=None, actor=None)

    wait_until(lambda: FacturaRequest.objects.get(pk=factura.pk).mailed_at is not None, 60)

    factura.refresh_from_db()
    assert bytes(factura.pdf).startswith(b"%PDF-")
    [sent] = mail.outbox
    assert sent.to == [factura.email] and factura.order.reference in sent.subject
    names = {name for name, _content, _type in sent.attachments}
    assert names == {f"{UUID}.pdf", f"{UUID}.xml"}
    assert factura_mail_task.apply(args=[factura.pk]).result is False  # once
    assert len(mail.outbox) == 1


def test_a_refund_after_the_invoice_flags_a_credit_note(worker: Any) -> None:
    order = paid_order("1290.00")
    factura = requested(order)
    factura_register(
        factura_id=factura.pk, uuid=UUID, xml=cfdi("1290.00"), pdf=b"%PDF-1", actor=None
    )
    payment = charge_of(order)
    payment.refunded_amount = Decimal("290.00")
    payment.save()

    notify_status_changed_on_commit(payment, "approved", "approved")

    wait_until(lambda: FacturaRequest.objects.get(pk=factura.pk).credit_note_due_at is not None, 30)
    assert OrderEvent.objects.filter(order=order, kind=OrderEventKind.CREDIT_NOTE).count() == 1
