"""What a staff member asked from the admin, recorded before its task runs it: the action's kind
(declared by the app that owns it, `staff_actions.kinds`), what it is on, the payment whose money
it moves, and how it ended."""

from __future__ import annotations

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class StaffActionState(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("In progress")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")


# An action not finished yet: its target (and its payment) take no other action meanwhile.
OPEN_ACTION_STATES = (StaffActionState.QUEUED, StaffActionState.RUNNING)
FINISHED_ACTION_STATES = (StaffActionState.DONE, StaffActionState.FAILED)


class StaffAction(models.Model):
    """What a staff member asked of the provider from the admin (capture, cancel, ship an
    order…), recorded before its task makes the call: the task and its re-runs send the same
    idempotency key, and the outcome is said once to whoever asked, in their language."""

    kind = models.CharField(_("kind"), max_length=40)
    # What the action is on (a payment, an order, a subscription; none for an import).
    target_type = models.ForeignKey(
        "contenttypes.ContentType",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("on"),
    )
    target_id = models.PositiveBigIntegerField(_("object id"), null=True, blank=True)
    # The payment whose money it moves (claimed when asked), if any.
    payment = models.ForeignKey(
        "payments.Payment",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="staff_actions",
        verbose_name=_("payment"),
    )
    reference = models.CharField(_("reference"), max_length=64, blank=True)
    params = models.JSONField(_("parameters"), default=dict, blank=True, encoder=DjangoJSONEncoder)
    idempotency_key = models.CharField(_("idempotency key"), max_length=64, unique=True)
    language = models.CharField(_("language"), max_length=16)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("who"),
    )
    state = models.CharField(
        _("state"),
        max_length=16,
        choices=StaffActionState.choices,
        default=StaffActionState.QUEUED,
    )
    runs = models.PositiveSmallIntegerField(_("runs"), default=0)
    ok = models.BooleanField(_("succeeded"), null=True, blank=True)
    result = models.TextField(_("result"), blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    queued_at = models.DateTimeField(_("queued at"), default=timezone.now)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    shown_at = models.DateTimeField(_("shown at"), null=True, blank=True)

    class Meta:
        # The table it had when it was part of payments: the running release still writes it.
        db_table = "payments_staffaction"
        ordering = ["created_at", "id"]
        verbose_name = _("staff action")
        verbose_name_plural = _("staff actions")
        constraints = [
            # One action in flight per object and per payment: two staff members pressing
            # capture and cancel at once, one wins.
            models.UniqueConstraint(
                fields=["target_type", "target_id"],
                condition=models.Q(state__in=["queued", "running"]),
                name="one_staff_action_in_flight_per_object",
            ),
            models.UniqueConstraint(
                fields=["payment"],
                condition=models.Q(state__in=["queued", "running"]),
                name="one_staff_action_in_flight_per_payment",
            ),
        ]
        indexes = [
            # The sweep reads the open actions; the pages read what is left to tell each user.
            models.Index(
                fields=["queued_at"],
                condition=models.Q(state__in=["queued", "running"]),
                name="staff_action_open",
            ),
            models.Index(
                fields=["actor", "finished_at"],
                condition=models.Q(shown_at__isnull=True, state__in=["done", "failed"]),
                name="staff_action_untold",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.reference}".strip()

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_ACTION_STATES
