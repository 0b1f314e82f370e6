"""The sign-in's mails to people: a recovery code was used (to the staff member and the shop's
managers), and an account's codes are being guessed (to the managers). In the shop's language;
no code or secret in them."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone, translation

from staff_signin import words
from staff_signin.models import SignInEvent, SignInEventKind


def _recipients(event: SignInEvent) -> list[str]:
    managers = [address for _, address in settings.MANAGERS]
    own = [event.user.email] if event.user is not None and event.user.email else []
    if event.kind == SignInEventKind.RECOVERY_CODE_USED:
        return list(dict.fromkeys(own + managers))
    return managers


def sign_in_mail(*, event_id: int) -> int:
    """Send the mail of one ledger row; how many it went to (0 when nobody gets it)."""
    event = SignInEvent.objects.select_related("user").filter(pk=event_id).first()
    if event is None:
        return 0
    recipients = _recipients(event)
    if not recipients:
        return 0
    with translation.override(settings.LANGUAGE_CODE):
        when = f"{timezone.localtime(event.created_at):%Y-%m-%d %H:%M}"
        facts = {"username": event.username, "when": when, "address": event.address or "?"}
        if event.kind == SignInEventKind.RECOVERY_CODE_USED:
            subject, body = words.RECOVERY_USED_SUBJECT % facts, words.RECOVERY_USED_BODY % facts
        else:
            facts["count"] = settings.STAFF_SIGNIN_ALERT_FAILURES
            subject, body = words.GUESSING_SUBJECT % facts, words.GUESSING_BODY % facts
        subject = f"{settings.EMAIL_SUBJECT_PREFIX}{subject}"
    send_mail(subject, str(body), settings.SERVER_EMAIL, recipients)
    return len(recipients)
