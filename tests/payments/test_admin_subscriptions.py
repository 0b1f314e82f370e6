"""Subscriptions in the admin, on the live sandbox's seeded ones: the list, cancelling after a
confirmation, importing by id, each behind its permission and the CSRF token. Cancelling and
importing are done by a task (run here as a worker would); the list says the outcome."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from payments.actions.subscription_calls import subscription_sync
from payments.models import Subscription
from tests.helpers.provider import Api
from tests.helpers.staff import sign_in_staff
from tests.payments.helpers import action_choices, ask, count_calls, log_entries, messages_of

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

# sandbox/provider/subscriptions.py SEED_SUBSCRIPTIONS
SEED_MARIA = "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b"
SEED_JORGE = "7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"
UNKNOWN_SUBSCRIPTION = "00000000-0000-4000-8000-000000000000"
SUBSCRIPTIONS = "admin:payments_subscription_changelist"


@pytest.fixture
def subscriptions(provider: Api) -> list[Subscription]:
    """Two seeded sandbox subscriptions imported into the shop."""
    return [subscription_sync(provider_id=SEED_MARIA), subscription_sync(provider_id=SEED_JORGE)]


def _remote_subscription(provider: Api, provider_id: str) -> dict[str, Any]:
    response = provider.get(f"/subscriptions/{provider_id}")
    assert response.status_code == 200, response.text
    return response.json()


def test_subscription_list(admin_client: Client, subscriptions: list[Subscription]) -> None:
    """The subscription list shows each subscription's id, price, customer and status."""
    response = admin_client.get(reverse(SUBSCRIPTIONS))

    assert response.status_code == 200
    html = response.content.decode()
    for provider_id in (SEED_MARIA, SEED_JORGE):
        assert provider_id in html
    assert "price_cafe_mensual" in html
    assert "María González" in html
    assert "Jorge Hernández" in html
    assert reverse("admin:payments_subscription_import") in html


def test_subscription_cancel_confirms_then_cancels(
    provider: Api,
    client: Client,
    admin_user: Any,
    subscriptions: list[Subscription],
    run_queued: Any,
) -> None:
    """The Cancel action first shows a confirmation page; confirmed=yes cancels (PUT)."""
    maria = subscriptions[0]
    puts = count_calls(provider, "/subscriptions", "PUT")
    sign_in_staff(client, admin_user)
    data = {"action": "cancel_selected", "index": "0", "_selected_action": [maria.pk]}

    page = client.post(reverse(SUBSCRIPTIONS), data)

    assert page.status_code == 200
    assert "admin/staff_actions/confirm.html" in [t.name for t in page.templates]
    assert 'name="confirmed" value="yes"' in page.content.decode()
    assert puts() == 0
    assert _remote_subscription(provider, SEED_MARIA)["status"] == "active"
    maria.refresh_from_db()
    assert maria.status == "active"

    confirmed = {"action": "cancel_selected", "confirmed": "yes", "_selected_action": [maria.pk]}
    response = ask(client, reverse(SUBSCRIPTIONS), confirmed)

    assert response.status_code == 302
    assert puts() == 0  # asked: its task calls the provider
    assert run_queued() == ["payments.tasks.staff_action_run_task"]
    assert puts() == 1
    assert _remote_subscription(provider, SEED_MARIA)["status"] == "inactive"
    maria.refresh_from_db()
    assert maria.status == "inactive"
    assert ("success", f"{SEED_MARIA}: cancelled.") in messages_of(client.get(response.url))
    entry = log_entries(maria).get()
    assert (entry.user, entry.action_flag) == (admin_user, CHANGE)
    assert _remote_subscription(provider, SEED_JORGE)["status"] == "active"


def _form_fields(html: str) -> dict[str, list[str]]:
    """The hidden inputs of the page's POST form, as a browser would send them."""
    form = re.search(r'<form method="post"[^>]*>(.*?)</form>', html, re.S)
    assert form, html
    fields: dict[str, list[str]] = {}
    for tag in re.findall(r'<input type="hidden"[^>]*>', form.group(1)):
        name = re.search(r'name="([^"]+)"', tag).group(1)
        value = re.search(r'value="([^"]*)"', tag).group(1)
        fields.setdefault(name, []).append(value)
    return fields


def test_subscription_cancel_confirmation_works_with_csrf_checks(
    provider: Api, admin_user: Any, subscriptions: list[Subscription], run_queued: Any
) -> None:
    """With CSRF checks, the confirmation page's own form cancels the selection; no token: 403."""
    maria = subscriptions[0]
    browser = Client(enforce_csrf_checks=True)
    sign_in_staff(browser, admin_user)
    browser.get(reverse(SUBSCRIPTIONS))
    token = browser.cookies["csrftoken"].value
    url = reverse(SUBSCRIPTIONS)
    selection = {"action": "cancel_selected", "index": "0", "_selected_action": [maria.pk]}

    assert browser.post(url, selection).status_code == 403

    page = browser.post(url, {**selection, "csrfmiddlewaretoken": token})
    assert page.status_code == 200
    fields = _form_fields(page.content.decode())
    assert fields["_selected_action"] == [str(maria.pk)]
    assert fields["confirmed"] == ["yes"]
    assert _remote_subscription(provider, SEED_MARIA)["status"] == "active"

    without_token = {k: v for k, v in fields.items() if k != "csrfmiddlewaretoken"}
    assert browser.post(url, without_token).status_code == 403
    assert _remote_subscription(provider, SEED_MARIA)["status"] == "active"

    response = ask(browser, url, fields)

    assert response.status_code == 302
    run_queued()
    assert _remote_subscription(provider, SEED_MARIA)["status"] == "inactive"
    assert _remote_subscription(provider, SEED_JORGE)["status"] == "active"
    assert log_entries(maria).get().user == admin_user


def test_subscription_import_needs_the_csrf_token(
    provider: Api, admin_user: Any, run_queued: Any
) -> None:
    """Import by id through a CSRF-checking client: 403 without the token, imports with it."""
    browser = Client(enforce_csrf_checks=True)
    sign_in_staff(browser, admin_user)
    url = reverse("admin:payments_subscription_import")
    assert browser.get(url).status_code == 200
    token = browser.cookies["csrftoken"].value

    assert browser.post(url, {"provider_id": SEED_MARIA}).status_code == 403
    assert not Subscription.objects.exists()

    response = ask(browser, url, {"provider_id": SEED_MARIA, "csrfmiddlewaretoken": token})

    assert response.status_code == 302
    run_queued()
    assert Subscription.objects.filter(provider_id=SEED_MARIA).exists()


def test_subscription_cancel_needs_its_permission(
    provider: Api,
    client: Client,
    make_staff: Callable[..., Any],
    subscriptions: list[Subscription],
) -> None:
    """Without cancel_subscription the action is absent and posting it cancels nothing."""
    maria = subscriptions[0]
    puts = count_calls(provider, "/subscriptions", "PUT")
    sign_in_staff(client, make_staff("viewer", "view_subscription"))

    page = client.get(reverse(SUBSCRIPTIONS))
    assert page.status_code == 200
    assert "cancel_selected" not in action_choices(page)
    assert 'value="cancel_selected"' not in page.content.decode()

    for data in (
        {"action": "cancel_selected", "index": "0", "_selected_action": [maria.pk]},
        {"action": "cancel_selected", "confirmed": "yes", "_selected_action": [maria.pk]},
    ):
        client.post(reverse(SUBSCRIPTIONS), data)

    assert puts() == 0
    assert _remote_subscription(provider, SEED_MARIA)["status"] == "active"
    assert not log_entries(maria).exists()


def test_subscription_import_by_id(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """Importing a seeded id: back to the list at once, which says the import is in progress;
    once its task ran, the subscription is stored, an addition logged, and the list says so."""
    sign_in_staff(client, admin_user)
    url = reverse("admin:payments_subscription_import")

    assert client.get(url).status_code == 200
    response = ask(client, url, {"provider_id": SEED_MARIA})

    assert response.status_code == 302
    assert response.url == reverse(SUBSCRIPTIONS)
    assert "in progress" in client.get(response.url).content.decode()
    assert not Subscription.objects.exists()
    run_queued()
    subscription = Subscription.objects.get(provider_id=SEED_MARIA)
    assert subscription.price_id == "price_cafe_mensual"
    assert subscription.customer_email == "maria@example.com"
    assert subscription.status == "active"
    entry = log_entries(subscription).get()
    assert (entry.user, entry.action_flag) == (admin_user, ADDITION)
    assert ("success", f"Imported {subscription}.") in messages_of(client.get(response.url))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not-a-uuid", None),
        (UNKNOWN_SUBSCRIPTION, "The provider has no subscription with this id."),
    ],
    ids=["invalid", "unknown"],
)
def test_subscription_import_form_errors(
    provider: Api, client: Client, admin_user: Any, value: str, message: str | None, run_queued: Any
) -> None:
    """An invalid id re-renders the import form with an error; an unknown one is said as the
    outcome of the import. Nothing is stored or logged."""
    sign_in_staff(client, admin_user)

    response = ask(client, reverse("admin:payments_subscription_import"), {"provider_id": value})

    if message is None:
        assert response.status_code == 200
        errors = response.context["form"].errors["provider_id"]
        assert errors
        assert escape(errors[0]) in response.content.decode()
        assert run_queued() == []
    else:
        assert response.status_code == 302
        run_queued()
        assert ("error", message) in messages_of(client.get(response.url))
    assert not Subscription.objects.exists()
    assert not LogEntry.objects.exists()


def test_subscription_import_needs_add_subscription(
    provider: Api, client: Client, make_staff: Callable[..., Any]
) -> None:
    """Without add_subscription the import page is 403 on GET and POST; nothing is fetched."""
    calls = count_calls(provider, "/subscriptions")
    sign_in_staff(client, make_staff("viewer", "view_subscription", "cancel_subscription"))
    url = reverse("admin:payments_subscription_import")

    assert client.get(url).status_code == 403
    assert client.post(url, {"provider_id": SEED_MARIA}).status_code == 403
    assert calls() == 0
    assert not Subscription.objects.exists()

    page = client.get(reverse(SUBSCRIPTIONS))
    assert url not in page.content.decode()
