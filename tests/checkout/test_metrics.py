"""Order mails are counted: a mail the server refused as failed (by kind), once taken as sent;
the mails still unsent are a gauge of /metrics (tests/monitoring/test_gauges.py)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY

from checkout.mails.calls import order_mail_deliver
from checkout.models import OrderMail
from tests.checkout.helpers import FailsOnce
from tests.factories import OrderFactory

pytestmark = pytest.mark.django_db


def counted(name: str, kind: str) -> float:
    return REGISTRY.get_sample_value(name, {"kind": kind}) or 0.0


def test_a_refused_mail_counts_as_failed_and_its_retry_as_sent(settings: Any) -> None:
    settings.EMAIL_BACKEND = "tests.checkout.helpers.FailsOnce"
    FailsOnce.failed = False
    sent = OrderMail.objects.create(order=OrderFactory(), kind="received", key="placed")
    failed_before = counted("shop_mails_failed_total", "received")
    sent_before = counted("shop_mails_sent_total", "received")

    with pytest.raises(ConnectionRefusedError):
        order_mail_deliver(mail_id=sent.pk)
    assert counted("shop_mails_failed_total", "received") == failed_before + 1
    assert counted("shop_mails_sent_total", "received") == sent_before

    assert order_mail_deliver(mail_id=sent.pk) is True
    assert order_mail_deliver(mail_id=sent.pk) is False  # already sent: nothing counted
    assert counted("shop_mails_failed_total", "received") == failed_before + 1
    assert counted("shop_mails_sent_total", "received") == sent_before + 1
