"""Logging helpers: secrets and card numbers never reach a log line."""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"
SECRET_SETTINGS = (
    "PAYMENTS_WEBHOOK_TOKEN",
    "PAYMENTS_SECRET_KEY",
    "PAYMENTS_ACCESS_TOKEN",
    "SECRET_KEY",
)
# 13 to 19 digits, possibly grouped by spaces or dashes: a card number if its Luhn sum is right.
_DIGITS = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")


def luhn_valid(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _mask_cards(text: str) -> str:
    def mask(match: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", match.group())
        return f"[card …{digits[-4:]}]" if luhn_valid(digits) else match.group()

    return _DIGITS.sub(mask, text)


def _secrets() -> list[str]:
    try:
        from django.conf import settings

        values = [str(getattr(settings, name, "") or "") for name in SECRET_SETTINGS]
    except Exception:  # settings not configured yet: nothing to hide
        return []
    return [value for value in values if len(value) >= 8]


class RedactSecrets(logging.Filter):
    """Replace configured secrets (the webhook token, API credentials, the secret key) and
    Luhn-valid card numbers in every record that passes through the handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler's own error path
            return True
        redacted = _mask_cards(message)
        for secret in _secrets():
            redacted = redacted.replace(secret, REDACTED)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True
