"""Local records of payments: what the shop knows, and everything that happened to each (their
statuses and the moves between them: `payments.statuses`).

`payments` knows nothing about orders: it keeps the order reference in `external_reference`
and sends `payment_status_changed` when a payment's status changes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models.functions import Upper
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy as _

from core.ledger import LedgerEntry
from core.money import pesos
from payments.statuses import (
    CANCELLED_UNCHARGED,
    FINAL_STATUSES,
    IN_FLIGHT,
    PaymentStatus,
    status_label,
)

AUTHORIZATION_VALIDITY = timedelta(days=30)
# Staff are warned this long before an uncaptured authorization expires (at 27 days).
EXPIRY_WARNING_DAYS = 3


class CaptureMethod(models.TextChoices):
    AUTOMATIC = "automatic", _("Automatic")
    MANUAL = "manual", _("Manual (authorize, then capture)")


class PaymentIntent(models.TextChoices):
    """An action in flight on a payment (compare-and-set; no lock held over HTTP)."""

    NONE = "", _("None")
    CAPTURE = "capture", _("Capture")
    CANCEL = "cancel", _("Cancel")
    REFUND = "refund", _("Refund")
    REFRESH = "refresh", _("Refresh")


class Payment(models.Model):
    # Unknown until the provider answers; NULL keeps several such attempts unique-safe.
    provider_id = models.CharField(
        _("provider id"), max_length=64, unique=True, null=True, blank=True
    )
    external_reference = models.CharField(_("order reference"), max_length=64, db_index=True)
    idempotency_key = models.CharField(_("idempotency key"), max_length=64, unique=True)
    capture_method = models.CharField(
        _("capture method"), max_length=16, choices=CaptureMethod.choices
    )
    status = models.CharField(
        _("status"),
        max_length=16,
        choices=PaymentStatus.choices,
        default=PaymentStatus.CREATING,
        db_index=True,
    )
    status_code = models.CharField(_("status detail"), max_length=16, blank=True)
    status_message = models.CharField(_("status message"), max_length=128, blank=True)
    amount = models.DecimalField(_("amount"), max_digits=12, decimal_places=2)
    captured_amount = models.DecimalField(
        _("captured amount"), max_digits=12, decimal_places=2, default=Decimal("0")
    )
    refunded_amount = models.DecimalField(
        _("refunded amount"), max_digits=12, decimal_places=2, default=Decimal("0")
    )
    currency = models.CharField(_("currency"), max_length=3, default="MXN")
    description = models.CharField(_("description"), max_length=255, blank=True)
    customer_email = models.EmailField(_("customer email"), blank=True, db_index=True)
    card_brand = models.CharField(_("card brand"), max_length=16, blank=True)
    card_last_digits = models.CharField(
        _("card last digits"), max_length=4, blank=True, db_index=True
    )
    three_ds_url = models.URLField(_("three ds url"), max_length=500, blank=True)
    provider_version = models.PositiveIntegerField(_("provider version"), default=0)
    snapshot = models.JSONField(_("snapshot"), default=dict, blank=True, encoder=DjangoJSONEncoder)
    last_error = models.CharField(_("last error"), max_length=500, blank=True)
    # The create request, encrypted (payments/attempts/sealed.py), while its outcome is unknown:
    # it is sent again with the same idempotency key until the provider says what happened.
    create_request = models.TextField(_("create request"), blank=True, editable=False)
    intent = models.CharField(_("intent"), max_length=16, choices=PaymentIntent.choices, blank=True)
    intent_started_at = models.DateTimeField(_("intent started at"), null=True, blank=True)
    authorized_at = models.DateTimeField(_("authorized at"), null=True, blank=True)
    authorization_expires_at = models.DateTimeField(
        _("authorization expires at"), null=True, blank=True, db_index=True
    )
    expiry_warned_at = models.DateTimeField(_("expiry warned at"), null=True, blank=True)
    last_synced_at = models.DateTimeField(_("last synced at"), null=True, blank=True)
    # The shop's own reads of the payment, decaying with its age (payments/rereading/rules.py):
    # counted from `checks_from` (its last change, or the last read a notification or staff
    # asked for), `checks_done` of them found nothing new; the next is due at `next_check_at`
    # (none when the schedule is over or the payment is settled).
    checks_from = models.DateTimeField(_("checks counted from"), null=True, blank=True)
    # A database default: the release before the schedule inserts payments without it.
    checks_done = models.PositiveSmallIntegerField(
        _("checks without news"), default=0, db_default=0
    )
    next_check_at = models.DateTimeField(_("next check"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    # Interest-free monthly installments ("meses sin intereses"): 1 is paid in full.
    installments = models.PositiveSmallIntegerField(_("installments"), default=1)
    installment_amount = models.DecimalField(
        _("installment amount"), max_digits=12, decimal_places=2, null=True, blank=True
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("payment")
        verbose_name_plural = _("payments")
        indexes = [
            # The orders' sweep reads the payments changed lately (checkout.tasks).
            models.Index(fields=["updated_at"], name="payment_updated_at"),
            # The admin's list: its order (newest first), its filters and sorts, and its
            # searches by email (in any case) and by the card's last digits (newest first).
            models.Index(fields=["created_at", "id"], name="payment_created"),
            models.Index(fields=["status", "created_at", "id"], name="payment_status_created"),
            models.Index(
                fields=["capture_method", "created_at", "id"], name="payment_capture_created"
            ),
            models.Index(
                fields=["card_last_digits", "created_at", "id"], name="payment_card_created"
            ),
            models.Index(Upper("customer_email"), name="payment_email_upper"),
            models.Index(fields=["amount", "id"], name="payment_amount"),
            models.Index(
                fields=["authorization_expires_at"],
                name="payment_authorized_expiry",
                condition=models.Q(status="authorized"),
            ),
            # The reconciliation reads the checks that are due, soonest first.
            models.Index(
                fields=["next_check_at"],
                name="payment_check_due",
                condition=models.Q(next_check_at__isnull=False),
            ),
            # Payments written without a schedule (by the release before it), newest first.
            models.Index(
                fields=["-updated_at"],
                name="payment_unscheduled",
                condition=models.Q(checks_from__isnull=True, provider_id__isnull=False),
            ),
            # The sweep of creates waiting to be sent (payments.rereading.rules).
            models.Index(
                fields=["created_at"],
                name="payment_waiting_to_send",
                condition=models.Q(status__in=["creating", "unknown"])
                & ~models.Q(create_request=""),
            ),
        ]
        constraints = [
            # One attempt at a time per order until the provider has answered it.
            models.UniqueConstraint(
                fields=["external_reference"],
                condition=models.Q(status__in=["creating", "unknown"]),
                name="one_attempt_in_flight_per_order",
            ),
        ]
        permissions = [
            ("capture_payment", _("Can capture payments")),
            ("cancel_payment", _("Can cancel payment authorizations")),
            ("refund_payment", _("Can refund payments")),
            ("close_payment", _("Can close payment attempts never created at the provider")),
            ("refresh_payment", _("Can read payments again from the provider")),
        ]

    def __str__(self) -> str:
        return f"{self.external_reference} · {self.get_status_display()} · {pesos(self.amount)}"

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
    CREATED = "created", _("Created")
    SYNCED = "synced", _("Synced from provider")
    CAPTURED = "captured", _("Captured")
    CANCELLED = "cancelled", _("Cancelled")
    REFUNDED = "refunded", _("Refunded")
    FAILED = "failed", _("Failed attempt")
    OUTCOME_UNKNOWN = "unknown", _("Outcome unknown")
    ADOPTED = "adopted", _("Recovered from a notification")
    EXPIRY_WARNING = "expiring", _("Authorization expiring")
    ANOMALY = "anomaly", _("Provider anomaly")


# The ledger entry that records a charge: the payment became approved (captured at once, or a
# hold captured). A payment is approved once (its status only moves forward); an anomaly (a
# status the shop refused) is no charge.
CHARGE_ENTRY = (
    models.Q(new_status=PaymentStatus.APPROVED)
    & ~models.Q(old_status=PaymentStatus.APPROVED)
    & ~models.Q(kind=PaymentEventKind.ANOMALY)
)


class PaymentEvent(LedgerEntry):
    """Append-only ledger of everything that happened to a payment."""

    payment = models.ForeignKey(
        Payment, on_delete=models.PROTECT, related_name="events", verbose_name=_("payment")
    )
    kind = models.CharField(_("kind"), max_length=16, choices=PaymentEventKind.choices)
    old_status = models.CharField(_("old status"), max_length=16, blank=True)
    new_status = models.CharField(_("new status"), max_length=16, blank=True)
    amount = models.DecimalField(
        _("amount"), max_digits=12, decimal_places=2, null=True, blank=True
    )
    error_code = models.CharField(_("error code"), max_length=16, blank=True)

    class Meta(LedgerEntry.Meta):
        verbose_name = _("ledger entry")
        verbose_name_plural = _("ledger")
        indexes = [
            # The owner's dashboard: the charges of the last days, by when they were recorded.
            models.Index(
                fields=["created_at"], name="payment_event_charged", condition=CHARGE_ENTRY
            ),
        ]

    def __str__(self) -> str:
        change = "→".join(status_label(s) for s in (self.old_status, self.new_status))
        return f"{self.get_kind_display()} {change}".strip()


class Refund(models.Model):
    payment = models.ForeignKey(
        Payment, on_delete=models.PROTECT, related_name="refunds", verbose_name=_("payment")
    )
    provider_id = models.CharField(_("provider id"), max_length=64, unique=True)
    amount = models.DecimalField(_("amount"), max_digits=12, decimal_places=2)
    status = models.CharField(_("status"), max_length=16)
    reason = models.CharField(_("reason"), max_length=255, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("who"),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now)

    class Meta:
        ordering = ["created_at"]
        # The owner's dashboard: the refunds of the last days.
        indexes = [models.Index(fields=["created_at"], name="refund_created")]
        verbose_name = _("refund")
        verbose_name_plural = _("refunds")

    def __str__(self) -> str:
        return _("Refund %(amount)s of %(reference)s") % {
            "amount": pesos(self.amount),
            "reference": self.payment.external_reference,
        }


class SubscriptionStatus(models.TextChoices):
    ACTIVE = "active", _("Active")
    INACTIVE = "inactive", _("Inactive")


class Subscription(models.Model):
    provider_id = models.CharField(_("provider id"), max_length=64, unique=True)
    price_id = models.CharField(_("price id"), max_length=64)
    customer = models.JSONField(_("customer"), default=dict, blank=True)
    customer_email = models.EmailField(_("customer email"), blank=True, db_index=True)
    status = models.CharField(_("status"), max_length=16, choices=SubscriptionStatus.choices)
    invoices = models.JSONField(_("invoices"), default=list, blank=True, encoder=DjangoJSONEncoder)
    snapshot = models.JSONField(_("snapshot"), default=dict, blank=True, encoder=DjangoJSONEncoder)
    last_synced_at = models.DateTimeField(_("last synced at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        # The admin's list: its order, its filters and its search by email (in any case).
        indexes = [
            models.Index(fields=["created_at", "id"], name="subscription_created"),
            models.Index(fields=["status", "created_at", "id"], name="subscription_status_created"),
            models.Index(
                fields=["price_id", "created_at", "id"], name="subscription_price_created"
            ),
            models.Index(Upper("customer_email"), name="subscription_email_upper"),
        ]
        permissions = [("cancel_subscription", _("Can cancel subscriptions"))]
        verbose_name = _("subscription")
        verbose_name_plural = _("subscriptions")

    def __str__(self) -> str:
        customer = self.customer or {}
        name = " ".join(filter(None, [customer.get("first_name"), customer.get("last_name")]))
        return f"{self.price_id} · {name or self.customer_email or self.provider_id}"
