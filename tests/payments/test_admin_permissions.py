"""Who may run the payments admin's actions: the action's permission (and only it) opens them,
staff without it get 403, anonymous and non-staff users are sent to the login, the CSRF token
is required, and seed_demo's consulta account only looks."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from payments.statuses import PaymentStatus
from tests.helpers.provider import Api
from tests.helpers.staff import authenticator, current_code, sign_in_staff
from tests.payments.helpers import (
    CHANGELIST,
    VIEW_PAYMENTS,
    action_url,
    approved,
    ask,
    asked_then_done,
    authorized,
    change_url,
    count_calls,
    log_entries,
    snapshot,
    stored_payment,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

LOGIN_PATH = "/admin/login/"


# --- Permissions --------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["capture", "cancel", "refund"])
def test_staff_without_the_action_permission_get_403(
    provider: Api, client: Client, make_staff: Callable[..., Any], action: str
) -> None:
    """A staff user with view_payment but not the action's permission: 403 on GET and POST."""
    payment = approved(provider) if action == "refund" else authorized(provider)
    others = {"capture", "cancel", "refund"} - {action}
    sign_in_staff(client, make_staff("viewer", *VIEW_PAYMENTS, *(f"{o}_payment" for o in others)))
    before = snapshot(payment)
    calls = count_calls(provider)

    assert client.get(action_url(action, payment)).status_code == 403
    assert client.post(action_url(action, payment), {"amount": "10.00"}).status_code == 403

    assert calls() == 0
    assert snapshot(payment) == before
    assert not log_entries(payment).exists()


@pytest.mark.parametrize("action", ["capture", "cancel", "refund"])
def test_a_user_with_only_the_action_permission_can_do_it(
    provider: Api, client: Client, make_staff: Callable[..., Any], action: str, run_queued: Any
) -> None:
    """A staff user holding only the action's permission can open the form and run it."""
    payment = approved(provider) if action == "refund" else authorized(provider)
    user = make_staff("operator", f"{action}_payment")
    sign_in_staff(client, user)

    assert client.get(action_url(action, payment)).status_code == 200
    response = ask(client, action_url(action, payment), {"amount": "50.00", "reason": "x"})

    asked_then_done(client, response, run_queued)
    payment.refresh_from_db()
    expected = {
        "capture": (PaymentStatus.APPROVED, Decimal("50.00"), Decimal("0")),
        "cancel": (PaymentStatus.CANCELLED, Decimal("0"), Decimal("0")),
        "refund": (PaymentStatus.APPROVED, Decimal("250.00"), Decimal("50.00")),
    }[action]
    assert (payment.status, payment.captured_amount, payment.refunded_amount) == expected
    assert payment.events.filter(actor=user).exists()
    assert log_entries(payment).get().user == user


@pytest.mark.parametrize("who", ["anonymous", "non-staff"])
@pytest.mark.parametrize("action", ["capture", "cancel", "refund", "refresh", "change", "list"])
def test_anonymous_and_non_staff_are_sent_to_login(
    client: Client, make_staff: Callable[..., Any], who: str, action: str
) -> None:
    """Without a staff session, every payments admin URL redirects to the admin login."""
    payment = stored_payment("ORD-LOGI01", status=PaymentStatus.AUTHORIZED)
    if who == "non-staff":
        sign_in_staff(
            client, make_staff("shopper", *VIEW_PAYMENTS, "capture_payment", is_staff=False)
        )
    url = {
        "change": change_url(payment),
        "list": reverse(CHANGELIST),
    }.get(action) or action_url(action, payment)

    for response in (client.get(url), client.post(url, {"amount": "10.00"})):
        assert response.status_code == 302
        assert response.url.startswith(LOGIN_PATH)
    assert snapshot(payment)[0] == PaymentStatus.AUTHORIZED


def test_csrf_token_is_required_on_actions(provider: Api, admin_user: Any, run_queued: Any) -> None:
    """With CSRF checks on: POST without the token is 403; with the form's token it captures."""
    payment = authorized(provider)
    calls = count_calls(provider, "/payments", "PATCH")
    browser = Client(enforce_csrf_checks=True)
    sign_in_staff(browser, admin_user)

    page = browser.get(action_url("capture", payment))
    assert page.status_code == 200
    token = browser.cookies["csrftoken"].value

    assert browser.post(action_url("capture", payment), {"amount": "250.00"}).status_code == 403
    assert browser.post(action_url("refresh", payment)).status_code == 403
    assert calls() == 0
    assert snapshot(payment)[0] == PaymentStatus.AUTHORIZED

    response = ask(
        browser, action_url("capture", payment), {"amount": "250.00", "csrfmiddlewaretoken": token}
    )

    assert response.status_code == 302
    assert run_queued() == ["payments.tasks.staff_action_run_task"]
    assert calls() == 1
    assert snapshot(payment)[0] == PaymentStatus.APPROVED


def test_csrf_token_is_required_on_bulk_actions(provider: Api, admin_user: Any) -> None:
    """A bulk action POST to the change list without the CSRF token is 403 and does nothing."""
    payment = authorized(provider)
    calls = count_calls(provider)
    browser = Client(enforce_csrf_checks=True)
    sign_in_staff(browser, admin_user)

    response = browser.post(
        reverse(CHANGELIST),
        {"action": "capture_selected", "index": "0", "_selected_action": [payment.pk]},
    )

    assert response.status_code == 403
    assert calls() == 0
    assert snapshot(payment)[0] == PaymentStatus.AUTHORIZED


# --- Demo accounts ------------------------------------------------------------------------------


def test_seed_demo_accounts_log_in_and_consulta_only_views(provider: Api) -> None:
    """seed_demo: admin and consulta log in; consulta sees payments but gets 403 on capture."""
    call_command("seed_demo")
    payment = authorized(provider)

    for username, password in (("admin", "tienda-demo-2026"), ("consulta", "consulta-demo-2026")):
        browser = Client()
        response = browser.post(
            LOGIN_PATH,
            {"username": username, "password": password, "next": reverse(CHANGELIST)},
        )
        assert response.status_code == 302, username
        assert response.url.startswith(reverse("admin:staff_signin_code"))
        device = authenticator(get_user_model().objects.get(username=username))
        response = browser.post(response.url, {"code": current_code(device)})
        assert response.status_code == 302, username
        assert response.url == reverse(CHANGELIST)
        assert browser.get(reverse(CHANGELIST)).status_code == 200

    consulta = Client()
    sign_in_staff(consulta, get_user_model().objects.get(username="consulta"), "consulta-demo-2026")
    calls = count_calls(provider)

    page = consulta.get(change_url(payment))
    assert page.status_code == 200
    assert payment.external_reference in page.content.decode()
    assert not re.search(r'id="action-(capture|cancel|refund)"', page.content.decode())
    assert consulta.get(action_url("capture", payment)).status_code == 403
    assert consulta.post(action_url("capture", payment), {"amount": "250.00"}).status_code == 403
    assert calls() == 0
    assert snapshot(payment)[0] == PaymentStatus.AUTHORIZED
