"""Logging helpers: secrets and card numbers never reach a log line; every line says which
request it belongs to; `LOG_FORMAT=json` writes one JSON object a line."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from typing import Any

from django.utils.log import AdminEmailHandler
from django.views.debug import SafeExceptionReporterFilter
from django_guid import get_guid
from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

from core.db_errors import database_unavailable
from core.request_id import NO_REQUEST_ID

REDACTED = "[redacted]"
SECRET_SETTINGS = (
    "PAYMENTS_WEBHOOK_TOKEN",
    "PAYMENTS_SECRET_KEY",
    "PAYMENTS_ACCESS_TOKEN",
    "SECRET_KEY",
    "EMAIL_HOST_PASSWORD",
)
# 13 to 19 digits, possibly grouped by spaces or dashes: a card number if its Luhn sum is right.
# Not digits inside a word or an id (a task id `b2557144-9559-42d5-…`), nor the decimals of a
# number (a task's run time, say: `succeeded in 0.0743155899999692s`).
_DIGITS = re.compile(r"(?<![\w-])(?<!\d\.)\d(?:[ -]?\d){12,18}(?![\w-])")
# The webhook receiver's address holds its secret token; whatever stands there (the real token or
# a guess at it) is never written.
_WEBHOOK_PATH = re.compile(r"(/webhooks/payments/)[^/?#\s\"']+")


def redact_webhook_path(text: str) -> str:
    """The text with the token of every webhook receiver address replaced."""
    return _WEBHOOK_PATH.sub(rf"\1{REDACTED}", text)


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


def redact(text: str) -> str:
    """The text with configured secrets and Luhn-valid card numbers replaced."""
    redacted = redact_webhook_path(_mask_cards(text))
    for secret in _secrets():
        redacted = redacted.replace(secret, REDACTED)
    return redacted


class RedactSecrets(logging.Filter):
    """Replace configured secrets (the webhook token, API credentials, the secret key) and
    Luhn-valid card numbers in every record that passes through the handler: in its message,
    and in the traceback and stack it carries (a request path or a value in an exception
    message can hold them too)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler's own error path
            return True
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            # Formatters reuse exc_text when it is set, so the traceback is redacted once here.
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class WebhookRequestRedacted(logging.Filter):
    """Django's request logger attaches the request (path included) to the record of every 4xx;
    for the webhook receiver, whose path holds its secret (or a guess at it), the record keeps
    its message (redacted by `RedactSecrets`) but not the request. Server errors keep it for the
    error report, which `RedactingAdminEmailHandler` redacts."""

    def filter(self, record: logging.LogRecord) -> bool:
        path = str(getattr(getattr(record, "request", None), "path", ""))
        if (getattr(record, "status_code", None) or 500) < 500 and _WEBHOOK_PATH.search(path):
            record.request = None
        return True


class DatabaseUnavailableWarning(logging.Filter):
    """Django's record of a request answered 503 because the database could not be reached
    (core/error_pages.py) becomes one warning line, "database unavailable", naming the
    request and the error's first line: while the database is away every request ends so, and
    a traceback (and an error report by mail) for each would bury the rest of the log. Any
    other record, a server error's traceback included, is left as it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if getattr(record, "status_code", None) != 503 or not database_unavailable(exc):
            return True
        request = getattr(record, "request", None)
        said = next(iter(str(exc).strip().splitlines()), "")
        record.msg = "database unavailable: %s %s answered 503 (%s: %s)"
        record.args = (
            getattr(request, "method", "-"),
            getattr(request, "path", "-"),
            type(exc).__name__,
            said[:300],
        )
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info, record.exc_text = None, None
        return True


_TRACEBACKS = logging.Formatter()

# --- Formats ---------------------------------------------------------------------------------

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


class JsonFormatter(_JsonFormatter):
    """One JSON object a line, with a fixed set of fields: `time` (UTC, ISO 8601), `level`,
    `logger`, `message`, `request_id`, and `exception` / `stack` when the record has them.
    Nothing else from the record is written: `extra` values such as Django's request object
    would carry paths, and the webhook path holds a secret."""

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        log_data["time"] = datetime.fromtimestamp(record.created, tz=UTC).isoformat(
            timespec="milliseconds"
        )
        log_data["level"] = record.levelname
        log_data["logger"] = record.name
        log_data["message"] = record.getMessage() if message_dict else record.message
        log_data["request_id"] = getattr(record, "request_id", None) or get_guid() or NO_REQUEST_ID
        exception = record.exc_text or message_dict.get("exc_info")
        if exception:
            log_data["exception"] = redact(str(exception))
        if record.stack_info:
            log_data["stack"] = redact(str(message_dict.get("stack_info") or record.stack_info))


def console_formatter(log_format: str = "text") -> logging.Formatter:
    """The formatter of the console handler (LOGGING): `text`, one readable line a record, or
    `json`, one JSON object a line for a log collector."""
    if log_format == "json":
        return JsonFormatter()
    if log_format == "text":
        return logging.Formatter(TEXT_FORMAT, defaults={"request_id": NO_REQUEST_ID})
    raise ValueError(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, got {log_format!r}")


class RedactingAdminEmailHandler(AdminEmailHandler):
    """Django's error mail to ADMINS with secrets and card numbers redacted from the subject,
    the text and the HTML report (which shows the request path, where the webhook token is)."""

    def send_mail(self, subject: str, message: str, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("html_message"):
            kwargs["html_message"] = redact(kwargs["html_message"])
        super().send_mail(redact(subject), redact(message), *args, **kwargs)


class AlwaysSafeExceptionReporterFilter(SafeExceptionReporterFilter):
    """Sensitive variables, POST parameters and settings are hidden in every error report,
    Django's DEBUG page included (by default it shows them when DEBUG is on)."""

    def is_active(self, request: Any) -> bool:
        return True
