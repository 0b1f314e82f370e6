"""The log handler's redaction: secrets and card numbers never reach a log line."""

from __future__ import annotations

import logging

import pytest

from config.logging import RedactSecrets, luhn_valid


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
