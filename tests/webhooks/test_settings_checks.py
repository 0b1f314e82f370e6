"""The webhook settings that must agree are checked when any process starts."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from tests.helpers.paths import ROOT
from webhooks.apps import settings_problems


def test_the_defaults_agree() -> None:
    """The shipped defaults pass every check."""
    assert settings_problems() == []


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"WEBHOOKS_COALESCE_SECONDS": 5, "WEBHOOKS_RELAY_AFTER": 14}, "WEBHOOKS_RELAY_AFTER"),
        ({"WEBHOOKS_COALESCE_SECONDS": -1}, "WEBHOOKS_COALESCE_SECONDS"),
        ({"WEBHOOKS_RETRY_BACKOFF_MAX": 3600}, "CELERY_VISIBILITY_TIMEOUT"),
        ({"WEBHOOKS_MAX_BODY_BYTES": 100}, "WEBHOOKS_MAX_BODY_BYTES"),
        ({"WEBHOOKS_RETRY_BACKOFF": 0}, "WEBHOOKS_RETRY_BACKOFF"),
        ({"WEBHOOKS_CLAIM_LEASE": 18}, "WEBHOOKS_CLAIM_LEASE"),
    ],
)
def test_settings_that_disagree_are_named(
    settings: Any, values: dict[str, int], named: str
) -> None:
    """Each disagreement is reported once, naming the variables involved."""
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    for name, value in values.items():
        setattr(settings, name, value)

    problems = settings_problems()

    assert len(problems) == 1, problems
    assert named in problems[0]


def test_a_process_with_disagreeing_settings_refuses_to_start() -> None:
    """Given a relay delay shorter than the coalescing hold plus its margin, when a process of
    the shop starts, then it stops at once, saying which settings disagree."""
    env = {**os.environ, "WEBHOOKS_RELAY_AFTER": "5"}

    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert "WEBHOOKS_RELAY_AFTER must be at least WEBHOOKS_COALESCE_SECONDS + 10" in result.stderr
