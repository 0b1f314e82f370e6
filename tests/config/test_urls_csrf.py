"""CSRF protection of every route, found by walking the URL resolver: a POST without the token
(the CSRF cookie present, as a forged cross-site form would have it) is refused with 403 and
changes nothing; the same POST with the token is accepted. Only the provider's webhook receiver,
the browsers' CSP report endpoint and the probes (GET only) are exempt.

Each route has a case in tests/config/csrf_cases.py (who posts, where, with what, and what
the accepted POST does). A route added without a case fails `test_every_route_has_a_case`,
so none is left unexamined.
Browsers are `Client(enforce_csrf_checks=True)`; the provider is "down" (a spy on the client's
transport records each call and lets none out), so a request that would have acted on the
provider shows up as a call.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.urls import reverse

from tests.config.csrf_cases import (
    CASES,
    EXEMPT,
    PROTECTED,
    World,
    csrf_browser,
    post,
    routes,
    snapshot,
    token_of,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


def test_every_route_has_a_case() -> None:
    """Every route the resolver knows has a case here (a new route must be examined), and every
    case is a route that exists."""
    assert {route.route for route in routes()} == set(CASES)


def test_only_the_webhook_receiver_csp_reports_and_probes_are_exempt() -> None:
    """Walking the resolver, the views marked csrf_exempt are exactly the provider's webhook
    receiver, the CSP report endpoint and the three probes."""
    exempt = {route.route for route in routes() if getattr(route.view, "csrf_exempt", False)}

    assert exempt == EXEMPT


def test_the_csrf_middleware_is_installed() -> None:
    """CSRF is enforced for every view by the middleware, not view by view."""
    assert "django.middleware.csrf.CsrfViewMiddleware" in settings.MIDDLEWARE


@pytest.mark.parametrize("route", PROTECTED, ids=lambda route: route or "(home)")
def test_a_post_without_the_token_is_refused_and_with_it_accepted(
    world: World,
    rejections: list[str],
    django_capture_on_commit_callbacks: Any,
    route: str,
) -> None:
    """Given a browser holding the CSRF cookie (a forged cross-site POST carries it), when it
    POSTs the route's request without the token, then the answer is 403 from the CSRF check
    and nothing changes: no row, no session (cart, login), no language cookie, no provider
    call, nothing queued for after the commit. When it POSTs the same request with its token,
    then the CSRF check lets it through: not a 403 (except the admins that refuse every add,
    change or delete, whose 403 is their own PermissionDenied), 405 from GET-only views, and
    the state-changing routes do what they do."""
    case = CASES[route]
    token = token_of(world, case.who)
    before = snapshot(world)

    with django_capture_on_commit_callbacks() as queued:
        refused = post(world, case, token=None)
    after_refusal = snapshot(world)
    refusals = list(rejections)
    with django_capture_on_commit_callbacks():
        accepted = post(world, case, token=token)

    assert refused.status_code == 403
    assert len(refusals) == 1 and "CSRF" in refusals[0], refusals
    assert after_refusal == before
    assert queued == []
    assert rejections == refusals  # nothing more was refused by the CSRF check
    if case.denied:
        assert accepted.status_code == 403
    elif case.get_only:
        assert accepted.status_code == 405
    else:
        assert accepted.status_code != 403
        assert accepted.status_code < 500
    if case.effect is not None:
        case.effect(world, accepted)


@pytest.mark.parametrize(
    "route",
    [
        "pedidos/<str:reference>/pagos/",
        "carrito/agregar/<slug:slug>/",
        "admin/payments/payment/<int:pk>/capture/",
        "admin/payments/subscription/",
        "admin/login/",
    ],
)
def test_a_made_up_or_foreign_token_is_refused(
    world: World, rejections: list[str], route: str
) -> None:
    """Given a token that is made up, or one valid for another browser (the attacker's own),
    when it is sent with the route's POST, then both are 403 and nothing changes."""
    case = CASES[route]
    own_token = token_of(world, case.who)
    attacker = csrf_browser(reverse("admin:login"))
    foreign = attacker.cookies["csrftoken"].value
    assert foreign != own_token
    before = snapshot(world)

    made_up = post(world, case, token="x" * 64)
    borrowed = post(world, case, token=foreign)

    assert (made_up.status_code, borrowed.status_code) == (403, 403)
    assert len(rejections) == 2
    assert snapshot(world) == before
