"""The payments admin's bulk actions (capture, cancel and refresh the selected payments): a
message for each row (a refusal at once, an outcome once its task ran), and only the actions the
staff member may run."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from payments.models import Payment, PaymentEventKind
from payments.statuses import PaymentStatus
from tests.helpers.provider import Api
from tests.helpers.staff import sign_in_staff
from tests.payments.helpers import (
    CHANGELIST,
    VIEW_PAYMENTS,
    action_choices,
    approved,
    ask,
    authorized,
    count_calls,
    log_entries,
    messages_of,
    snapshot,
    stored_payment,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]


def _bulk(client: Client, action: str, *payments: Payment) -> Any:
    return ask(
        client,
        reverse(CHANGELIST),
        {"action": action, "index": "0", "_selected_action": [p.pk for p in payments]},
    )


def _done(client: Client, response: Any, run_queued: Any) -> list[tuple[str, str]]:
    """What the list says once the queued tasks ran: the refusals said at once, and each
    outcome."""
    assert response.status_code == 302
    run_queued()
    return messages_of(client.get(reverse(CHANGELIST)))


def test_bulk_capture_reports_each_row(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """capture_selected: one success and one failure message, one per selected payment."""
    good = authorized(provider)
    bad = approved(provider)
    sign_in_staff(client, admin_user)

    response = _bulk(client, "capture_selected", good, bad)

    assert response.status_code == 302
    shown = _done(client, response, run_queued)
    assert ("success", f"{good.external_reference}: captured.") in shown
    errors = [text for level, text in shown if level == "error"]
    assert len(errors) == 1
    assert errors[0].startswith(f"{bad.external_reference}: ")
    assert "approved" in errors[0]
    good.refresh_from_db()
    assert (good.status, good.captured_amount) == (PaymentStatus.APPROVED, Decimal("250.00"))
    assert good.events.get(kind=PaymentEventKind.CAPTURED).actor == admin_user
    assert log_entries(good).get().user == admin_user
    assert not log_entries(bad).exists()


def test_bulk_cancel_reports_each_row(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """cancel_selected: the authorization is cancelled; the captured payment is refused."""
    good = authorized(provider)
    bad = approved(provider)
    sign_in_staff(client, admin_user)

    response = _bulk(client, "cancel_selected", good, bad)

    shown = _done(client, response, run_queued)
    assert ("success", f"{good.external_reference}: cancelled.") in shown
    errors = [text for level, text in shown if level == "error"]
    assert len(errors) == 1 and errors[0].startswith(f"{bad.external_reference}: ")
    assert snapshot(good)[0] == PaymentStatus.CANCELLED
    assert provider.payment(good.provider_id)["status"] == "cancelled"
    assert snapshot(bad)[0] == PaymentStatus.APPROVED
    assert good.events.get(kind=PaymentEventKind.CANCELLED).actor == admin_user
    assert log_entries(good).get().user == admin_user


def test_bulk_refresh_reports_each_row(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """refresh_selected: a payment known to the provider refreshes; one without an id fails."""
    good = authorized(provider)
    bad = stored_payment("ORD-NOID01", status=PaymentStatus.FAILED, provider_id=None)
    sign_in_staff(client, admin_user)

    response = _bulk(client, "refresh_selected", good, bad)

    shown = _done(client, response, run_queued)
    assert ("success", f"{good.external_reference}: refreshed.") in shown
    errors = [text for level, text in shown if level == "error"]
    assert len(errors) == 1 and errors[0].startswith("ORD-NOID01: ")
    assert log_entries(good).get().user == admin_user
    assert not log_entries(bad).exists()


def test_bulk_actions_offered_follow_permissions(
    client: Client, admin_user: Any, make_staff: Callable[..., Any]
) -> None:
    """Only the bulk actions the user may run are in the action choices."""
    stored_payment("ORD-ACTS01")
    url = reverse(CHANGELIST)
    all_actions = {"capture_selected", "cancel_selected", "refresh_selected"}

    sign_in_staff(client, admin_user)
    assert all_actions <= action_choices(client.get(url))

    sign_in_staff(client, make_staff("viewer", *VIEW_PAYMENTS))
    response = client.get(url)
    assert action_choices(response) & all_actions == set()
    assert 'value="capture_selected"' not in response.content.decode()

    sign_in_staff(client, make_staff("reader", *VIEW_PAYMENTS, "refresh_payment"))
    assert action_choices(client.get(url)) & all_actions == {"refresh_selected"}

    sign_in_staff(client, make_staff("capturer", *VIEW_PAYMENTS, "capture_payment"))
    assert action_choices(client.get(url)) & all_actions == {"capture_selected"}


@pytest.mark.parametrize("action", ["capture_selected", "cancel_selected"])
def test_posting_a_bulk_action_without_permission_does_nothing(
    provider: Api, client: Client, make_staff: Callable[..., Any], action: str
) -> None:
    """A user without the permission posting the bulk action: no provider call, no change."""
    payment = authorized(provider)
    before = snapshot(payment)
    calls = count_calls(provider)
    sign_in_staff(client, make_staff("reader", *VIEW_PAYMENTS, "refresh_payment"))

    response = _bulk(client, action, payment)

    assert response.status_code == 302
    assert response.url == reverse(CHANGELIST)
    assert [level for level, _ in messages_of(response)] == ["warning"]  # no action selected
    assert calls() == 0
    assert snapshot(payment) == before
    assert not [m for m in messages_of(response) if m[0] == "success"]
    assert not log_entries(payment).exists()
    assert not payment.events.exclude(kind=PaymentEventKind.CREATED).exists()
