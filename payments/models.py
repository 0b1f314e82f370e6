"""Local records of payments: what the shop knows, and everything that happened to each.

`payments` knows nothing about orders: it keeps the order reference in `external_reference`
and sends `payment_status_changed` when a payment's status changes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone
from django.utils.dateparse import parse_datetime

AUTHORIZATION_VALIDITY = timedelta(days=30)
# Staff are warned this long before an uncaptured authorization expires (at 27 days).
EXPIRY_WARNING_DAYS = 3


class PaymentStatus(models.TextChoices):
    # Local states, before or without a provider answer.
    CREATING = "creating", "Creating"
    UNKNOWN = "unknown", "Outcome unknown"
    FAILED = "failed", "Not created"
    # The provider's states.
    PENDING = "pending", "Pending (3-D Secure)"
    AUTHORIZED = "authorized", "Authorized"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    CANCELLED = "cancelled", "Cancelled"
    REFUNDED = "refunded", "Refunded"


# An attempt whose create has no answer yet: it may or may not exist at the provider.
IN_FLIGHT = (PaymentStatus.CREATING, PaymentStatus.UNKNOWN)
# Detail codes of a cancelled authorization: by the merchant, or expired (nothing charged).
CANCELLED_UNCHARGED = frozenset({"CA-MER01", "CA-EXP01"})
FINAL_STATUSES = frozenset(
    {
        PaymentStatus.FAILED,
        PaymentStatus.REJECTED,
        PaymentStatus.CANCELLED,
        PaymentStatus.REFUNDED,
    }
)
# Where each status may go next (anything else is an illegal transition).
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    PaymentStatus.CREATING: frozenset(PaymentStatus.values) - {PaymentStatus.CREATING},
    PaymentStatus.UNKNOWN: frozenset(PaymentStatus.values)
    - {PaymentStatus.CREATING, PaymentStatus.UNKNOWN},
    PaymentStatus.PENDING: frozenset(
        {
            PaymentStatus.AUTHORIZED,
            PaymentStatus.APPROVED,
            PaymentStatus.REJECTED,
            PaymentStatus.CANCELLED,
        }
    ),
    PaymentStatus.AUTHORIZED: frozenset({PaymentStatus.APPROVED, PaymentStatus.CANCELLED}),
    PaymentStatus.APPROVED: frozenset({PaymentStatus.REFUNDED, PaymentStatus.CANCELLED}),
    PaymentStatus.FAILED: frozenset(),
    PaymentStatus.REJECTED: frozenset(),
    PaymentStatus.CANCELLED: frozenset(),
    PaymentStatus.REFUNDED: frozenset(),
}


def _reachable(graph: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """Statuses reachable through one or more legal steps (a newer snapshot may skip some)."""
    closure: dict[str, frozenset[str]] = {}
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            status = todo.pop()
            if status not in seen:
                seen.add(status)
                todo.extend(graph[status])
        closure[start] = frozenset(seen)
    return closure


REACHABLE = _reachable(ALLOWED_TRANSITIONS)


class CaptureMethod(models.TextChoices):
    AUTOMATIC = "automatic", "Automatic"
    MANUAL = "manual", "Manual (authorize, then capture)"


class PaymentIntent(models.TextChoices):
    """An action in flight on a payment (compare-and-set; no lock held over HTTP)."""

    NONE = "", "None"
    CAPTURE = "capture", "Capture"
    CANCEL = "cancel", "Cancel"
    REFUND = "refund", "Refund"
    REFRESH = "refresh", "Refresh"


class Payment(models.Model):
    # Unknown until the provider answers; NULL keeps several such attempts unique-safe.
    provider_id = models.CharField(max_length=64, unique=True, null=True, blank=True)
    external_reference = models.CharField("order reference", max_length=64, db_index=True)
    idempotency_key = models.CharField(max_length=64, unique=True)
    capture_method = models.CharField(max_length=16, choices=CaptureMethod.choices)
    status = models.CharField(
        max_length=16, choices=PaymentStatus.choices, default=PaymentStatus.CREATING, db_index=True
    )
    status_code = models.CharField("status detail", max_length=16, blank=True)
    status_message = models.CharField(max_length=128, blank=True)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    captured_amount = models.DecimalField(max_digits=12, decimal_places=2, default=Decimal("0"))
    refunded_amount = models.DecimalField(max_digits=12, decimal_places=2, default=Decimal("0"))
    currency = models.CharField(max_length=3, default="MXN")
    description = models.CharField(max_length=255, blank=True)
    customer_email = models.EmailField(blank=True, db_index=True)
    card_brand = models.CharField(max_length=16, blank=True)
    card_last_digits = models.CharField(max_length=4, blank=True, db_index=True)
    three_ds_url = models.URLField(max_length=500, blank=True)
    provider_version = models.PositiveIntegerField(default=0)
    snapshot = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    last_error = models.CharField(max_length=500, blank=True)
    # The create request, encrypted (payments/sealed.py), while its outcome is unknown: it is
    # sent again with the same idempotency key until the provider says what happened.
    create_request = models.TextField(blank=True, editable=False)
    intent = models.CharField(max_length=16, choices=PaymentIntent.choices, blank=True)
    intent_started_at = models.DateTimeField(null=True, blank=True)
    authorized_at = models.DateTimeField(null=True, blank=True)
    authorization_expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    expiry_warned_at = models.DateTimeField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    # Interest-free monthly installments ("meses sin intereses"): 1 is paid in full.
    installments = models.PositiveSmallIntegerField(default=1)
    installment_amount = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        # The orders' sweep reads the payments changed lately (checkout.tasks).
        indexes = [models.Index(fields=["updated_at"], name="payment_updated_at")]
        constraints = [
            # One attempt at a time per order until the provider has answered it.
            models.UniqueConstraint(
                fields=["external_reference"],
                condition=models.Q(status__in=["creating", "unknown"]),
                name="one_attempt_in_flight_per_order",
            ),
        ]
        permissions = [
            ("capture_payment", "Can capture payments"),
            ("cancel_payment", "Can cancel payment authorizations"),
            ("refund_payment", "Can refund payments"),
            ("close_payment", "Can close payment attempts never created at the provider"),
        ]

    def __str__(self) -> str:
        return f"{self.external_reference} · {self.get_status_display()} · ${self.amount}"

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def refundable_amount(self) -> Decimal:
        return max(self.captured_amount - self.refunded_amount, Decimal("0"))

    def can_capture(self) -> bool:
        return self.status == PaymentStatus.AUTHORIZED and bool(self.provider_id)

    def can_cancel(self) -> bool:
        return self.status == PaymentStatus.AUTHORIZED and bool(self.provider_id)

    def can_refund(self) -> bool:
        return (
            self.status == PaymentStatus.APPROVED
            and bool(self.provider_id)
            and self.refundable_amount > 0
        )

    @property
    def approved_at(self) -> datetime | None:
        """When the provider approved the charge (from its last snapshot), if it did."""
        raw = (self.snapshot or {}).get("approved_at")
        return parse_datetime(raw) if isinstance(raw, str) else None

    @property
    def cancelled_before_capture(self) -> bool:
        """An authorization cancelled by the merchant (staff) or by its expiry: nothing was
        charged, as opposed to a charge given back."""
        return self.status == PaymentStatus.CANCELLED and self.status_code in CANCELLED_UNCHARGED

    def can_close(self) -> bool:
        """An attempt whose outcome is unknown and that no notification has named."""
        return self.status in IN_FLIGHT and not self.provider_id

    def days_to_expiry(self, now: timezone.datetime | None = None) -> int | None:
        if self.status != PaymentStatus.AUTHORIZED or self.authorization_expires_at is None:
            return None
        remaining = self.authorization_expires_at - (now or timezone.now())
        return remaining.days  # negative once the authorization has expired


class PaymentEventKind(models.TextChoices):
    CREATED = "created", "Created"
    SYNCED = "synced", "Synced from provider"
    CAPTURED = "captured", "Captured"
    CANCELLED = "cancelled", "Cancelled"
    REFUNDED = "refunded", "Refunded"
    FAILED = "failed", "Failed attempt"
    OUTCOME_UNKNOWN = "unknown", "Outcome unknown"
    ADOPTED = "adopted", "Recovered from a notification"
    EXPIRY_WARNING = "expiring", "Authorization expiring"
    ANOMALY = "anomaly", "Provider anomaly"


class PaymentEvent(models.Model):
    """Append-only ledger of everything that happened to a payment."""

    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, related_name="events")
    kind = models.CharField(max_length=16, choices=PaymentEventKind.choices)
    old_status = models.CharField(max_length=16, blank=True)
    new_status = models.CharField(max_length=16, blank=True)
    amount = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    message = models.CharField(max_length=500, blank=True)
    error_code = models.CharField(max_length=16, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.old_status}→{self.new_status}".strip()

    def save(self, *args: object, **kwargs: object) -> None:
        if self.pk is not None:
            raise ValueError("payment events are append-only")
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    def delete(self, *args: object, **kwargs: object) -> tuple[int, dict[str, int]]:
        raise ValueError("payment events are append-only")


class Refund(models.Model):
    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, related_name="refunds")
    provider_id = models.CharField(max_length=64, unique=True)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    status = models.CharField(max_length=16)
    reason = models.CharField(max_length=255, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"Refund ${self.amount} of {self.payment.external_reference}"


class SubscriptionStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    INACTIVE = "inactive", "Inactive"


class Subscription(models.Model):
    provider_id = models.CharField(max_length=64, unique=True)
    price_id = models.CharField(max_length=64)
    customer = models.JSONField(default=dict, blank=True)
    customer_email = models.EmailField(blank=True, db_index=True)
    status = models.CharField(max_length=16, choices=SubscriptionStatus.choices)
    invoices = models.JSONField(default=list, blank=True, encoder=DjangoJSONEncoder)
    snapshot = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        permissions = [("cancel_subscription", "Can cancel subscriptions")]

    def __str__(self) -> str:
        customer = self.customer or {}
        name = " ".join(filter(None, [customer.get("first_name"), customer.get("last_name")]))
        return f"{self.price_id} · {name or self.customer_email or self.provider_id}"
