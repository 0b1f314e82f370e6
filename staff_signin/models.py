"""The sign-in ledger (every sign-in step, accepted or refused, and what operators did) and the
enrolment windows operators open."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core.ledger import LedgerEntry


class SignInEventKind(models.TextChoices):
    PASSWORD_ACCEPTED = "password_accepted", _("password accepted")
    PASSWORD_REFUSED = "password_refused", _("password refused")
    NO_SECOND_FACTOR = "no_second_factor", _("refused: no second factor")
    CODE_ACCEPTED = "code_accepted", _("code accepted")
    CODE_REFUSED = "code_refused", _("code refused")
    RECOVERY_CODE_USED = "recovery_code_used", _("recovery code used")
    RATE_LIMITED = "rate_limited", _("too many attempts")
    ENROLLED = "enrolled", _("enrolled")
    RECOVERY_CODES_MADE = "recovery_codes_made", _("new recovery codes")
    WINDOW_OPENED = "window_opened", _("enrolment window opened")
    RESET = "reset", _("second factor reset")
    SIGNED_OUT = "signed_out", _("signed out")


class SignInEvent(LedgerEntry):
    """One step of a staff sign-in, or an operator's change to an account's second factor: the
    account (when known), the name as typed, the client's address, its user agent and the
    request id. `actor` is whoever did it when that is a staff account (an operator's command
    names them in `message`)."""

    kind = models.CharField(_("what"), max_length=32, choices=SignInEventKind.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("account"),
    )
    username = models.CharField(_("name as typed"), max_length=150, blank=True)
    address = models.CharField(_("address"), max_length=64, blank=True)
    user_agent = models.CharField(_("browser"), max_length=300, blank=True)
    request_id = models.CharField(_("request id"), max_length=64, blank=True)

    class Meta(LedgerEntry.Meta):
        verbose_name = _("sign-in")
        verbose_name_plural = _("sign-ins")
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="signin_event_newest"),
            models.Index(fields=["user", "kind", "created_at"], name="signin_event_user_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} · {self.username}"


class EnrolmentWindow(models.Model):
    """A time an operator allowed an account to enrol a second factor (new staff, a lost phone,
    the rollout of the second factor). Open until `closes_at`, or until the account enrols
    (`used_at`)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("account"),
    )
    opened_at = models.DateTimeField(_("opened"), default=timezone.now)
    closes_at = models.DateTimeField(_("closes"))
    opened_by = models.CharField(_("opened by"), max_length=150)
    reason = models.CharField(_("why"), max_length=300)
    used_at = models.DateTimeField(_("enrolled"), null=True, blank=True)

    class Meta:
        verbose_name = _("enrolment window")
        verbose_name_plural = _("enrolment windows")
        indexes = [models.Index(fields=["user", "closes_at"], name="signin_window_open")]

    def __str__(self) -> str:
        return f"{self.user_id} → {self.closes_at:%Y-%m-%d %H:%M}"
