"""The payments app's Prometheus metrics: provider calls, payment outcomes, reconciliation
corrections, and the gauges read from the database when /metrics is scraped.

Counters and histograms live in each process (in PROMETHEUS_MULTIPROC_DIR's files when it is
set, summed over the processes at scrape time). The call sites hold one line each; the names
and the label values, always from short fixed sets, are decided here.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import Count, Min, Q, Sum
from prometheus_client import Counter, Histogram

from core.metrics import GaugeValues, counts_by_state
from payments.models import EXPIRY_WARNING_DAYS, Payment
from payments.statuses import IN_FLIGHT, PaymentStatus

# Up to the read timeout (15 s) and past it: a call that retried runs up to a minute.
CALL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0)

PROVIDER_CALLS = Counter(
    "shop_provider_calls_total",
    "Calls to the payment provider, by endpoint (ids templated), method and outcome "
    "(ok, client_error, throttled, server_error, no_answer); a call retried on the way counts "
    "once.",
    ["endpoint", "method", "outcome"],
)
PROVIDER_CALL_SECONDS = Histogram(
    "shop_provider_call_duration_seconds",
    "How long a call to the payment provider took, retries included.",
    ["endpoint", "method"],
    buckets=CALL_BUCKETS,
)
PAYMENT_OUTCOMES = Counter(
    "shop_payment_outcomes_total",
    "Payments whose outcome the shop learnt, once per change of status: approved, declined "
    "(reason: the decline's family), unknown (no answer to the create), not_created.",
    ["outcome", "reason"],
)
THREE_DS = Counter(
    "shop_payment_three_ds_total",
    "3-D Secure challenges: required (a payment went pending), passed, failed.",
    ["result"],
)
PROVIDER_WRITES_PACED = Counter(
    "shop_provider_writes_paced_total",
    "Writes to the provider that waited for the shop's own pace "
    "(PAYMENTS_PROVIDER_WRITES_PER_SECOND): sent after the wait, or not sent (tried later).",
    ["outcome"],
)
PROVIDER_WRITES_PACED_SECONDS = Counter(
    "shop_provider_writes_paced_seconds_total",
    "Seconds writes to the provider waited for the shop's own pace.",
)
RECONCILIATION_CORRECTIONS = Counter(
    "shop_reconciliation_corrections_total",
    "Payments the scheduled reconciliation found different at the provider and corrected.",
)

# Decline detail codes, grouped (payments.statuses.DETAILS says what each means).
DECLINE_REASONS = {
    "RE-DEC01": "card_declined",
    "RE-FUN01": "insufficient_funds",
    "RE-3DS01": "three_ds_failed",
    "RE-BIN01": "three_ds_required",
}
_OPEN = frozenset({PaymentStatus.CREATING, PaymentStatus.UNKNOWN, PaymentStatus.PENDING})
_HELD = frozenset({PaymentStatus.AUTHORIZED, PaymentStatus.APPROVED})


def provider_endpoint(path: str) -> str:
    """The endpoint of a request path, its ids templated: `/payments/{id}` (few values)."""
    first, *rest = path.strip("/").split("/")
    return "/" + "/".join([first, *("{id}" for _ in rest)])


def provider_call_observed(method: str, path: str, status: int | None, seconds: float) -> None:
    """Count one call to the provider: `status` None when no answer came."""
    if status is None:
        outcome = "no_answer"
    elif status == 429:
        outcome = "throttled"
    elif status >= 500:
        outcome = "server_error"
    elif status >= 400:
        outcome = "client_error"
    else:
        outcome = "ok"
    endpoint = provider_endpoint(path)
    PROVIDER_CALLS.labels(endpoint, method, outcome).inc()
    PROVIDER_CALL_SECONDS.labels(endpoint, method).observe(seconds)


def provider_write_paced(seconds: float, *, sent: bool = True) -> None:
    """Count a write that waited `seconds` for the shop's pace (`sent` False: not sent)."""
    PROVIDER_WRITES_PACED.labels("sent" if sent else "later").inc()
    PROVIDER_WRITES_PACED_SECONDS.inc(seconds)


def payment_transition_counted(*, old: str, new: str, code: str) -> None:
    """Count what a committed change of a payment's status says about its outcome (a change
    that says nothing new, such as a capture or a refund, counts nothing)."""
    if old == new:
        return
    if new == PaymentStatus.UNKNOWN:
        PAYMENT_OUTCOMES.labels("unknown", "").inc()
    elif new == PaymentStatus.FAILED:
        PAYMENT_OUTCOMES.labels("not_created", "").inc()
    elif new == PaymentStatus.PENDING and old != PaymentStatus.PENDING:
        THREE_DS.labels("required").inc()
    elif new in _HELD and old in _OPEN:
        PAYMENT_OUTCOMES.labels("approved", "").inc()
        if old == PaymentStatus.PENDING:
            THREE_DS.labels("passed").inc()
    elif new == PaymentStatus.REJECTED:
        reason = DECLINE_REASONS.get(code.strip().upper(), "other")
        PAYMENT_OUTCOMES.labels("declined", reason).inc()
        if old == PaymentStatus.PENDING:
            THREE_DS.labels("failed").inc()
    elif new == PaymentStatus.CANCELLED and old == PaymentStatus.PENDING:
        THREE_DS.labels("failed").inc()  # the challenge not completed in time (CA-3DS01)


def reconciliation_corrected() -> None:
    RECONCILIATION_CORRECTIONS.inc()


# --- Gauges read from the database at scrape time ---------------------------------------------

DB_GAUGES = {
    "shop_payment_attempts_in_flight": "Attempts without an answer to their create yet, by "
    "status (creating: queued or being sent; unknown: the answer was lost).",
    "shop_payment_attempts_in_flight_oldest_seconds": "Age of the oldest attempt without an "
    "answer to its create, by status (0 when there is none).",
    "shop_authorizations_held": "Authorizations holding money on cards, not yet captured.",
    "shop_authorizations_held_amount": "Money held on cards by uncaptured authorizations (MXN).",
    "shop_authorizations_expiring": f"Uncaptured authorizations that expire within "
    f"{EXPIRY_WARNING_DAYS} days.",
    "shop_authorizations_expiring_amount": f"Money held by authorizations that expire within "
    f"{EXPIRY_WARNING_DAYS} days (MXN).",
}


def db_gauge_values(*, now: datetime) -> GaugeValues:
    """Two queries, each read from an index whose rows are only those of live payments (in
    flight; authorized), however many payments the shop holds."""
    in_flight = (
        Payment.objects.filter(status__in=IN_FLIGHT)
        .values("status")
        .annotate(count=Count("id"), oldest=Min("created_at"))
        .order_by()
    )
    expiring = Q(authorization_expires_at__lte=now + timedelta(days=EXPIRY_WARNING_DAYS))
    held = Payment.objects.filter(status=PaymentStatus.AUTHORIZED).aggregate(
        held_count=Count("id"),
        held_amount=Sum("amount"),
        expiring_count=Count("id", filter=expiring),
        expiring_amount=Sum("amount", filter=expiring),
    )
    values = counts_by_state(
        in_flight, label="status", states=IN_FLIGHT, now=now,
        count="shop_payment_attempts_in_flight",
        oldest="shop_payment_attempts_in_flight_oldest_seconds",
    )  # fmt: skip
    values["shop_authorizations_held"] = [({}, held["held_count"])]
    values["shop_authorizations_held_amount"] = [({}, held["held_amount"] or Decimal("0"))]
    values["shop_authorizations_expiring"] = [({}, held["expiring_count"])]
    values["shop_authorizations_expiring_amount"] = [({}, held["expiring_amount"] or Decimal("0"))]
    return values
