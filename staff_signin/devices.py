"""An account's second factor, on django-otp's devices: one TOTP device (an authenticator app)
and one static device holding its single-use recovery codes. Codes are checked with the
device's row locked, so that a code is accepted once even when sent twice at once, and a TOTP
code already used in its 30 s step is refused (django-otp's `last_t`); every refusal grows the
device's delay before the next try (django-otp's throttling, kept in the database)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone
from django_otp.models import Device
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

RECOVERY_CODES = 10
AUTHENTICATOR_NAME = "authenticator"
RECOVERY_NAME = "recovery codes"
_TOTP = re.compile(r"^\d{6}$")


def totp_device(user: Any, *, confirmed: bool = True) -> TOTPDevice | None:
    return TOTPDevice.objects.filter(user=user, confirmed=confirmed).order_by("id").first()


def has_second_factor(user: Any) -> bool:
    return TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def recovery_codes_left(user: Any) -> int:
    return StaticToken.objects.filter(device__user=user, device__confirmed=True).count()


@dataclass(frozen=True)
class Checked:
    """A code's outcome: the device that accepted it (None: refused), whether it was a
    recovery code, and until when the device refuses any code (too many wrong ones)."""

    device: Device | None
    recovery: bool = False
    wait_until: datetime | None = None

    @property
    def wait_seconds(self) -> int:
        if self.wait_until is None:
            return 0
        return max(int((self.wait_until - timezone.now()).total_seconds()) + 1, 1)


def _checked(device: Device, code: str, *, recovery: bool) -> Checked:
    allowed, why = device.verify_is_allowed()
    if not allowed:
        return Checked(None, recovery, (why or {}).get("locked_until"))
    return Checked(device if device.verify_token(code) else None, recovery)


def code_check(*, user: Any, code: str) -> Checked:
    """Check a code typed on the code page: six digits for the authenticator app, anything
    else for a recovery code."""
    code = re.sub(r"\s+", "", code)
    recovery = not _TOTP.match(code)
    model = StaticDevice if recovery else TOTPDevice
    with transaction.atomic():
        device = (
            model.objects.select_for_update()
            .filter(user=user, confirmed=True)
            .order_by("id")
            .first()
        )
        if device is None:
            return Checked(None, recovery)
        return _checked(device, code.lower() if recovery else code, recovery=recovery)


def enrolment_device(user: Any) -> TOTPDevice:
    """The authenticator being set up (not confirmed yet): the same one on every visit of the
    enrolment page until it is confirmed."""
    with transaction.atomic():
        found = (
            TOTPDevice.objects.select_for_update()
            .filter(user=user, confirmed=False)
            .order_by("id")
            .first()
        )
        return found or TOTPDevice.objects.create(
            user=user, name=AUTHENTICATOR_NAME, confirmed=False
        )


def enrolment_confirm(*, user: Any, code: str) -> tuple[Checked, list[str]]:
    """Confirm the authenticator being set up with its first code: it becomes the account's,
    with ten new recovery codes (returned, to be shown once)."""
    code = re.sub(r"\s+", "", code)
    with transaction.atomic():
        device = (
            TOTPDevice.objects.select_for_update()
            .filter(user=user, confirmed=False)
            .order_by("id")
            .first()
        )
        if device is None or not _TOTP.match(code):
            return Checked(None), []
        checked = _checked(device, code, recovery=False)
        if checked.device is None:
            return checked, []
        TOTPDevice.objects.filter(user=user).exclude(pk=device.pk).delete()
        device.confirmed = True
        device.save(update_fields=["confirmed"])
        return checked, recovery_codes_replace(user=user)


def recovery_codes_replace(*, user: Any) -> list[str]:
    """Ten new single-use recovery codes in place of any the account had."""
    with transaction.atomic():
        StaticDevice.objects.filter(user=user).delete()
        device = StaticDevice.objects.create(user=user, name=RECOVERY_NAME, confirmed=True)
        codes = [StaticToken.random_token() for _ in range(RECOVERY_CODES)]
        StaticToken.objects.bulk_create(StaticToken(device=device, token=c) for c in codes)
    return codes


def devices_remove(*, user: Any) -> int:
    """Remove every device of the account (a lost phone): how many there were. Its sessions
    lose the admin at their next request (django-otp finds their device gone)."""
    with transaction.atomic():
        removed = TOTPDevice.objects.filter(user=user).delete()[1].get(TOTPDevice._meta.label, 0)
        statics = StaticDevice.objects.filter(user=user).delete()[1]
    return removed + statics.get(StaticDevice._meta.label, 0)
