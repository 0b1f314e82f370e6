"""The probes (monitoring/probes.py): health, readiness and dependency probes. (The page of a
refusal by the CSRF check: tests/core/test_error_pages.py.)"""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from payments.health import PROVIDER_CHECK_KEY, provider_check_record
from tests.helpers.provider import refuse_provider_calls


def test_healthz_answers_ok(client: Client) -> None:
    """/healthz says the process is up."""
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


# --- /healthz/deps: the provider as the provider check task last found it ------------------


@pytest.fixture
def deps(fresh_cache: None, monkeypatch: pytest.MonkeyPatch, settings: Any) -> Any:
    """GET /healthz/deps with the provider check every 60 s; any call the shop tries to send to
    the provider is recorded (and none gets out) in `deps.calls`."""
    settings.PAYMENTS_PROVIDER_CHECK_EVERY = 60
    calls = refuse_provider_calls(monkeypatch)

    def get() -> Any:
        return Client().get("/healthz/deps")

    get.calls = calls  # type: ignore[attr-defined]
    return get


def stamp(*, ok: bool, age: float, ms: float = 12.5, error: str = "") -> None:
    provider_check_record(ok=ok, ms=ms, error=error)
    value = cache.get(PROVIDER_CHECK_KEY)
    cache.set(PROVIDER_CHECK_KEY, {**value, "checked_at": time.time() - age})


def test_deps_reports_a_recent_successful_check_without_calling_the_provider(deps: Any) -> None:
    """Given the check task's stamp of a success 30 s ago, then the provider is ok, with the
    check's time and its age, and the probe itself made no provider call."""
    stamp(ok=True, age=30)

    response = deps()

    provider = response.json()["checks"]["provider"]
    assert (response.status_code, response.json()["status"]) == (200, "ok")
    assert provider["ok"] is True and provider["ms"] == 12.5
    assert 30 <= provider["age"] < 40
    assert "error" not in provider
    assert deps.calls == []


@pytest.mark.parametrize(
    ("given", "error"),
    [
        (None, "NotChecked"),  # no worker or beat has run the check yet
        ({"ok": True, "age": 181}, "Stale"),  # older than three intervals of 60 s
        ({"ok": False, "age": 5, "error": "Unauthorized"}, "Unauthorized"),
    ],
)
def test_deps_is_degraded_without_a_recent_successful_check(
    deps: Any, given: dict[str, Any] | None, error: str
) -> None:
    """No check stored, a successful check older than three intervals, or a recent failed
    check: the provider is not ok, named by `error`, and the probe answers 503 (still without
    calling the provider)."""
    if given is not None:
        stamp(**given)

    response = deps()

    provider = response.json()["checks"]["provider"]
    assert (response.status_code, response.json()["status"]) == (503, "degraded")
    assert (provider["ok"], provider["error"]) == (False, error)
    if given is not None:
        assert provider["age"] >= given["age"]
    assert deps.calls == []
