"""The log handler's redaction (config/logging/): secrets and card numbers never reach a log
line; log lines are JSON objects in production, text in the demo, as the settings say."""

from __future__ import annotations

import json
import logging
import re
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from config.logging import RedactSecrets, luhn_valid
from tests.helpers.request_ids import request_id_bound
from tests.helpers.settings import TOKEN, production_env, run


def _through_filter(msg: str, *args: object) -> str:
    record = logging.LogRecord("test", logging.INFO, __file__, 1, msg, args, None)
    assert RedactSecrets().filter(record) is True
    return record.getMessage()


def test_the_webhook_token_and_credentials_are_redacted(settings: pytest.FixtureRequest) -> None:
    """Given secrets in settings, when a record mentions them (in its format or its arguments),
    then the handler sees [redacted] instead."""
    settings.PAYMENTS_WEBHOOK_TOKEN = "hook-secret-0123456789"
    settings.PAYMENTS_ACCESS_TOKEN = "YWJjOmRlZmdoaWprbG1u"
    line = _through_filter(
        '"POST /webhooks/payments/%s/ HTTP/1.1" 200 (%s)', "hook-secret-0123456789", "x"
    )
    assert "hook-secret-0123456789" not in line
    assert "/webhooks/payments/[redacted]/" in line
    assert "[redacted]" in _through_filter("Authorization: Basic YWJjOmRlZmdoaWprbG1u")


def _with_check_digit(prefix: str) -> str:
    """`prefix` and the digit that makes it Luhn-valid."""
    return next(prefix + digit for digit in "0123456789" if luhn_valid(prefix + digit))


@pytest.mark.parametrize(
    "number",
    [
        "4242424242424242",
        "4242 4242 4242 4242",
        "4000-0000-0000-3220",
        "378282246310005",
        "4222222222222",  # 13 digits (early Visa)
        "30569309025904",  # 14 digits (Diners Club)
        _with_check_digit("62123456789012345"),  # 18 digits
        _with_check_digit("601100099013942312"),  # 19 digits
    ],
)
def test_card_numbers_are_masked_to_their_last_four_digits(number: str) -> None:
    """Given a Luhn-valid card number in a message, when it is logged, then only its last four
    digits remain."""
    line = _through_filter("card %s declined", number)
    assert number not in line
    assert line == f"card [card …{number[-4:]}] declined"


@pytest.mark.parametrize(
    "text",
    [
        "order 1234567890123 total",  # 13 digits, not Luhn-valid
        "request_id=a1b8fb851c2340fd9ef5ca56e2dccbf6",
        "payment 5d5bd8be-ce75-4414-9f23-d1c979f4bc0c",
        "amount 250.00 at 2026-11-22 05:54:22",
        # the decimals of a run time, though Luhn-valid
        "Task webhooks.tasks.webhook_process_task succeeded in 0.4242424242424242s: 'processed'",
        # digits inside an id, though Luhn-valid once its dashes are dropped (2557144955942)
        "Task webhooks.tasks.webhook_process_task[b2557144-9559-42d5-aac8-700845415e31] received",
    ],
)
def test_other_text_is_left_alone(text: str) -> None:
    """Numbers that are not card numbers, ids and dates pass unchanged."""
    assert _through_filter(text) == text


def test_luhn() -> None:
    """The Luhn check accepts the test cards and rejects a changed digit."""
    assert luhn_valid("4242424242424242")
    assert not luhn_valid("4242424242424241")


@pytest.mark.parametrize("template", ["card %s.", "(%s)", "number=%s, cvv hidden", "%s"])
def test_card_numbers_at_the_end_of_a_sentence_or_in_brackets_are_masked(template: str) -> None:
    """A card number followed by a full stop or inside punctuation is still masked."""
    line = _through_filter(template, "4242424242424242")
    assert "4242424242424242" not in line
    assert "[card …4242]" in line


# --- JSON lines -----------------------------------------------------------------------------------


def test_json_lines_parse_and_are_redacted(
    settings: Any, json_log: Callable[[], list[dict[str, Any]]]
) -> None:
    """Given records mentioning the webhook token and a card number, in the message, in an
    exception and in `extra`, then each is one JSON object with time, level, logger, message
    and request_id (and the exception), and neither secret appears anywhere."""
    settings.PAYMENTS_WEBHOOK_TOKEN = TOKEN
    log = logging.getLogger("shop.deploy")
    leaky_request = SimpleNamespace(path=f"/webhooks/payments/{TOKEN}/")

    with request_id_bound("json-lines-0001"):
        log.info("notified at /webhooks/payments/%s/ for card %s", TOKEN, "4242 4242 4242 4242")
        try:
            raise ValueError(f"bad path /webhooks/payments/{TOKEN}/ card 4000000000003220")
        except ValueError:
            log.exception("processing failed")
        log.warning("with extra", extra={"request": leaky_request, "status_code": 400})
    log.info("outside of any request")

    lines = json_log()
    assert [line["message"] for line in lines] == [
        "notified at /webhooks/payments/[redacted]/ for card [card …4242]",
        "processing failed",
        "with extra",
        "outside of any request",
    ]
    for line in lines:
        assert set(line) - {"exception"} == {"time", "level", "logger", "message", "request_id"}
        assert datetime.fromisoformat(line["time"]).utcoffset() == UTC.utcoffset(None)
        assert line["logger"] == "shop.deploy"
    assert [line["level"] for line in lines] == ["INFO", "ERROR", "WARNING", "INFO"]
    assert [line["request_id"] for line in lines] == ["json-lines-0001"] * 3 + ["-"]
    exception = lines[1]["exception"]
    assert exception.startswith("Traceback") and "ValueError" in exception
    assert "/webhooks/payments/[redacted]/ card [card …3220]" in exception
    written = json.dumps(lines)
    assert TOKEN not in written and "4000000000003220" not in written


EMIT = f"""
import logging, django
django.setup()
logging.getLogger("shop.deploy").warning("hook %s", "{TOKEN}")
"""
FORMATS = [
    ("config.settings.production", None, "json"),
    ("config.settings.production", "text", "text"),
    ("config.settings.local", None, "text"),
    ("config.settings.local", "json", "json"),
]


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> dict[Any, subprocess.CompletedProcess]:
    """One warning logged by a process started with each settings module and LOG_FORMAT."""
    tmp = tmp_path_factory.mktemp("emitted")
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            (module, log_format): pool.submit(
                run,
                ["-c", EMIT],
                production_env(tmp, DJANGO_SETTINGS_MODULE=module, LOG_FORMAT=log_format),
            )
            for module, log_format, _ in FORMATS
        }
        return {key: future.result() for key, future in futures.items()}


@pytest.mark.parametrize(("settings_module", "log_format", "written"), FORMATS)
def test_the_log_format_follows_the_settings(
    emitted: dict[Any, subprocess.CompletedProcess],
    settings_module: str,
    log_format: str | None,
    written: str,
) -> None:
    """JSON lines by default in production, plain text in the demo; LOG_FORMAT chooses either
    way, and both are redacted."""
    result = emitted[(settings_module, log_format)]

    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert TOKEN not in line
    if written == "json":
        record = json.loads(line)
        assert (record["level"], record["logger"], record["message"], record["request_id"]) == (
            "WARNING",
            "shop.deploy",
            "hook [redacted]",
            "-",
        )
    else:
        assert re.fullmatch(r"\S+ \S+ WARNING shop\.deploy \[-\] hook \[redacted\]", line), line
