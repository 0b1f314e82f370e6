"""The checkout app's Prometheus metrics: order mails sent and failed, and the mails still
unsent, read from the database when /metrics is scraped."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Min
from prometheus_client import Counter

from checkout.models import OrderMail, OrderMailKind
from core.metrics import GaugeValues, age_seconds

MAILS_SENT = Counter(
    "shop_mails_sent_total", "Order mails the mail server took, by kind.", ["kind"]
)
MAILS_FAILED = Counter(
    "shop_mails_failed_total",
    "Order mails the mail server refused or did not answer, by kind (tried again later).",
    ["kind"],
)


def _kind(kind: str) -> str:
    return kind if kind in OrderMailKind.values else "other"


def mail_sent(kind: str) -> None:
    MAILS_SENT.labels(_kind(kind)).inc()


def mail_failed(kind: str) -> None:
    MAILS_FAILED.labels(_kind(kind)).inc()


# --- Gauges read from the database at scrape time ---------------------------------------------

DB_GAUGES = {
    "shop_mails_unsent": "Order mails due and not sent yet.",
    "shop_mails_unsent_oldest_seconds": "Age of the oldest order mail not sent yet (0 when "
    "there is none).",
}


def db_gauge_values(*, now: datetime) -> GaugeValues:
    """One query, read from the index of unsent mails (`order_mail_unsent`)."""
    unsent = OrderMail.objects.filter(sent_at=None).aggregate(
        count=Count("id"), oldest=Min("created_at")
    )
    return {
        "shop_mails_unsent": [({}, unsent["count"])],
        "shop_mails_unsent_oldest_seconds": [({}, age_seconds(now, unsent["oldest"]))],
    }
