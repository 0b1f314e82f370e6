"""Fixtures of the project's tests."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from config.logging import RedactSecrets, console_formatter
from core.request_id import RequestIdFilter


@pytest.fixture
def json_log() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The console handler as production builds it (request id, redaction, JSON), on the root
    logger at INFO; returns a function giving the lines written so far, parsed."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.addFilter(RedactSecrets())
    handler.setFormatter(console_formatter("json"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)

    def lines() -> list[dict[str, Any]]:
        with handler.lock:  # type: ignore[union-attr]
            text = stream.getvalue()
        return [json.loads(line) for line in text.splitlines()]

    yield lines
    root.removeHandler(handler)
    root.setLevel(level)
