"""The webhooks app's Prometheus metrics: notifications received and finished, the lag from
receipt to processing, and the gauges read from the database when /metrics is scraped."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Count, Min
from prometheus_client import Counter, Histogram

from core.metrics import GaugeValues, age_seconds, counts_by_state
from webhooks.models import WebhookEvent, WebhookState

# From a coalesced refetch (seconds) to retries over an outage (many minutes).
LAG_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)

RECEIVED = Counter(
    "shop_notifications_received_total",
    "Notifications from the provider stored by the receiver, by event type.",
    ["event_type"],
)
FINISHED = Counter(
    "shop_notifications_finished_total",
    "Notifications whose processing ended, by state: processed (applied), unmatched (no "
    "payment of this shop), failed (an error, or retries ran out).",
    ["state"],
)
LAG = Histogram(
    "shop_notification_lag_seconds",
    "From a notification's receipt to the end of its processing (processed or unmatched).",
    buckets=LAG_BUCKETS,
)
_EVENT_TYPES = frozenset({"INSERT", "UPDATE"})


def notification_received(event_type: str) -> None:
    RECEIVED.labels(event_type if event_type in _EVENT_TYPES else "other").inc()


def notifications_finished(received: Iterable[datetime], state: str, *, now: datetime) -> None:
    """Count notifications (when each was received) as finished in `state`, each with its lag
    when applied."""
    received = list(received)
    if not received:
        return
    FINISHED.labels(state).inc(len(received))
    if state != WebhookState.FAILED:
        for received_at in received:
            LAG.observe(age_seconds(now, received_at))


def notifications_given_up(count: int) -> None:
    if count:
        FINISHED.labels(WebhookState.FAILED).inc(count)


# --- Gauges read from the database at scrape time ---------------------------------------------

_LIVE = (WebhookState.RECEIVED, WebhookState.PROCESSING, WebhookState.FAILED)
DB_GAUGES = {
    "shop_notifications": "Notifications not finished, by state (received: waiting for a "
    "task; processing: claimed by one; failed: given up on, retried by the relay or by staff).",
    "shop_notifications_oldest_seconds": "Age of the oldest notification in each unfinished "
    "state (0 when there is none).",
}


def db_gauge_values(*, now: datetime) -> GaugeValues:
    """One query, read from the (state, received_at) index over the unfinished states only."""
    rows = (
        WebhookEvent.objects.filter(state__in=_LIVE)
        .values("state")
        .annotate(count=Count("id"), oldest=Min("received_at"))
        .order_by()
    )
    return counts_by_state(
        rows, label="state", states=_LIVE, now=now,
        count="shop_notifications", oldest="shop_notifications_oldest_seconds",
    )  # fmt: skip
