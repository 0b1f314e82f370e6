"""The routes exempt from the CSRF check, by design (tests/config/csrf_cases.py,
EXEMPT): the provider's webhook receiver takes a POST without a token (it is a
server; the secret token in the address authenticates it), and so do the browsers'
CSP reports, which are only logged; the probes take GET only, and answer any other
method, token or not, with their own 405. (Every other route: test_urls_csrf.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.config.csrf_cases import (
    CASES,
    CSP_ROUTE,
    PROBE_ROUTES,
    WEBHOOK_ROUTE,
    World,
    snapshot,
)
from webhooks.models import WebhookEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


def test_the_webhook_receiver_takes_a_post_without_a_token(
    world: World, rejections: list[str], django_capture_on_commit_callbacks: Any
) -> None:
    """Given the provider's notification (no cookie, no token: it is a server), when it is
    POSTed to the receiver's secret address, then it is stored (200); at a wrong address,
    nothing is stored (404)."""
    case = CASES[WEBHOOK_ROUTE]
    server = Client(enforce_csrf_checks=True)
    body = json.dumps(case.data(world))

    with django_capture_on_commit_callbacks():
        received = server.post(case.url(world), body, content_type="application/json")
        wrong = server.post(
            reverse("webhooks:payments", args=["not-the-token"]),
            body,
            content_type="application/json",
        )

    assert received.status_code == 200
    assert received.json()["status"] == "received"
    assert wrong.status_code == 404
    assert WebhookEvent.objects.count() == 2  # the one of the fixture, and this one
    assert rejections == []
    assert world.calls == []


def test_csp_reports_are_taken_without_a_token_and_only_logged(
    world: World, rejections: list[str]
) -> None:
    """Given a browser's CSP violation report (sent without cookies or token), when it is
    POSTed, then it is accepted (204) and changes nothing but the log."""
    case = CASES[CSP_ROUTE]
    before = snapshot(world)
    browser = Client(enforce_csrf_checks=True)

    response = browser.post(
        case.url(world), json.dumps(case.data(world)), content_type="application/csp-report"
    )

    assert response.status_code == 204
    assert rejections == []
    assert snapshot(world) == before


@pytest.mark.parametrize("route", PROBE_ROUTES)
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "QUERY"])
def test_a_probe_answers_any_method_but_get_with_its_405(
    world: World, rejections: list[str], route: str, method: str
) -> None:
    """Given a probe (asked by machines, with GET only), when another method comes without a
    CSRF token, then the answer is the probe's own 405 in the API's error shape, with `Allow:
    GET` (not the CSRF check's 403 page), and nothing changes."""
    before = snapshot(world)
    machine = Client(enforce_csrf_checks=True)

    response = machine.generic(method, CASES[route].url(world))

    assert response.status_code == 405
    assert response["Allow"] == "GET"
    assert response.json()["error"] == "method_not_allowed"
    assert rejections == []
    assert snapshot(world) == before
