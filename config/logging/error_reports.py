"""Error reports: Sentry, when SENTRY_DSN is set, from the web processes and the Celery workers.

`error_reports_start` is called by the settings (config/settings/observability.py, "Error
reports"), which both kinds of process load; the sandbox has settings of its own and never
reports. What is sent is scrubbed as the log lines are (config/logging/):

- every text of an event (message, exception, request path and query, breadcrumbs, tags, extra)
  goes through `config.logging.redact`, the logs' own redaction: the configured secrets (the
  provider's keys, the webhook token, the secret key), the webhook receiver's token in its
  address, and Luhn-valid card numbers;
- values under a sensitive name (`sensitive_keys()`: cvv, cvc, card_token, token, authorization,
  cookie, ...) are replaced wherever they are named: the request's body, headers, cookies and
  query string, extra data, breadcrumbs;
- nothing the logs never write: no local variables of the stack frames (they hold whatever the
  code held, a card token under any name), no task arguments, no user, cookies or client address
  (Sentry's defaults without `send_default_pii`);
- no tracing headers are added to the calls to the card payments service.

Each event is tagged with the request id (`request_id`) of the request or task it comes from, as
the log lines are.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode

from django_guid import get_guid

from config.logging import REDACTED, redact

# Sentry's own list (passwords, tokens, sessions, cookies, authorization...) and the names under
# which the shop and the card payments service carry card data and credentials.
SHOP_SENSITIVE_KEYS = (
    "card_token",
    "cvv",
    "cvc",
    "cvv2",
    "security_code",
    "card_number",
    "access_token",
    "secret_key",
    "webhook_token",
    "device_finger_print_token",
    "session_id",
)


def sensitive_keys() -> list[str]:
    from sentry_sdk.scrubber import DEFAULT_DENYLIST

    return [*DEFAULT_DENYLIST, *SHOP_SENSITIVE_KEYS]


def error_reports_start(
    *, dsn: str, environment: str = "", release: str = "", traces_sample_rate: float = 0.0
) -> None:
    """Report errors (and, at `traces_sample_rate` above 0, performance traces) to Sentry."""
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration
    from sentry_sdk.scrubber import EventScrubber

    sentry_sdk.init(
        dsn=dsn,
        environment=environment or None,
        release=release or None,
        traces_sample_rate=traces_sample_rate or None,
        integrations=[DjangoIntegration(), CeleryIntegration()],
        # send_default_pii is left unset: no user, cookies or client address (setting it is
        # deprecated in this version, and its successor, data_collection, turns the
        # event scrubber off).
        include_local_variables=False,
        event_scrubber=EventScrubber(denylist=sensitive_keys(), recursive=True),
        before_send=event_scrubbed,
        before_send_transaction=event_scrubbed,
        trace_propagation_targets=[],
        # gzip, whatever else is installed: with the brotli module present (some packages bring
        # it) the SDK would switch to brotli, and the reports' encoding would depend on the
        # environment rather than on this setting.
        _experiments={"transport_compression_algo": "gzip"},
    )


def event_scrubbed(event: dict[str, Any], hint: object = None) -> dict[str, Any]:
    """The event as it may be sent: sensitive query parameters replaced, every text redacted as
    the logs are, tagged with the request id."""
    request = event.get("request")
    if isinstance(request, dict) and isinstance(request.get("query_string"), str):
        request["query_string"] = _query_scrubbed(request["query_string"])
    request_id = get_guid()
    if request_id:
        tags = event.get("tags")
        event["tags"] = {**(tags if isinstance(tags, dict) else {}), "request_id": request_id}
    return _redacted(event)


def _query_scrubbed(query: str) -> str:
    keys = {key.lower() for key in sensitive_keys()}
    pairs = parse_qsl(query, keep_blank_values=True)
    # Each value redacted decoded: a card number's spaces are '+' or '%20' in a query string.
    return urlencode(
        [(name, REDACTED if name.lower() in keys else redact(value)) for name, value in pairs]
    )


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(item) for item in value]
    return value
