"""The payments admin's actions on one payment, end to end against the live sandbox: capture (in
full or in part), cancel, refund and refresh, each through its form or confirmation page and
recorded in the ledger and the admin log; a bad amount or a provider error changes nothing. The
POST answers at once (the action is queued); its task is run here as a worker would."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.admin.models import CHANGE
from django.test import Client
from django.utils.html import escape

from payments.actions.calls import payment_refund
from payments.models import PaymentEventKind, Refund
from payments.statuses import PaymentStatus
from tests.helpers.provider import Api
from tests.helpers.staff import sign_in_staff
from tests.payments.helpers import (
    action_url,
    approved,
    ask,
    asked_then_done,
    authorized,
    change_url,
    count_calls,
    log_entries,
    messages_of,
    snapshot,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]


def inject_fault(provider: Api, path: str, method: str, status: int = 500) -> Callable[[], int]:
    """Make the provider fail `method path` with `status`; returns a reader of its hits."""
    response = provider.post("/_sandbox/faults", {"path": path, "method": method, "status": status})
    assert response.status_code == 201, response.text
    fault_id = response.json()["id"]

    def hits() -> int:
        faults = provider.get("/_sandbox/faults").json()
        return next(f["hits"] for f in faults if f["id"] == fault_id)

    return hits


def amount_error(response: Any) -> tuple[str, str]:
    """The (code, text) of the amount field's first error on a re-rendered action form."""
    error = response.context["form"].errors.as_data()["amount"][0]
    text = response.context["form"].errors["amount"][0]
    return error.code or "", text


# --- Capture ------------------------------------------------------------------------------------


def test_capture_form_defaults_to_the_full_amount(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """GET shows the form prefilled with the authorized amount; posting it captures it all."""
    payment = authorized(provider, amount="250.00")
    sign_in_staff(client, admin_user)

    page = client.get(action_url("capture", payment))
    assert page.status_code == 200
    match = re.search(r'name="amount" value="([^"]*)"', page.content.decode())
    assert match, page.content.decode()
    assert Decimal(match.group(1)) == Decimal("250.00")

    response = ask(client, action_url("capture", payment), {"amount": match.group(1)})

    assert response.status_code == 302
    assert response.url == change_url(payment)
    page = asked_then_done(client, response, run_queued)
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.APPROVED
    assert payment.captured_amount == Decimal("250.00")
    remote = provider.payment(payment.provider_id)
    assert (remote["status"], remote["captured_amount"]) == ("approved", Decimal("250.00"))
    event = payment.events.get(kind=PaymentEventKind.CAPTURED)
    assert event.actor == admin_user
    assert event.amount == Decimal("250.00")
    entry = log_entries(payment).get()
    assert (entry.user, entry.action_flag) == (admin_user, CHANGE)
    assert "captured $250.00" in entry.get_change_message()
    assert ("success", f"{payment.external_reference}: captured $250.00.") in messages_of(page)


def test_capture_a_partial_amount(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """Posting a smaller amount captures only that amount at the provider."""
    payment = authorized(provider, amount="250.00")
    sign_in_staff(client, admin_user)

    response = ask(client, action_url("capture", payment), {"amount": "100.00"})

    asked_then_done(client, response, run_queued)
    payment.refresh_from_db()
    assert (payment.status, payment.captured_amount) == (PaymentStatus.APPROVED, Decimal("100.00"))
    assert provider.payment(payment.provider_id)["captured_amount"] == Decimal("100.00")
    event = payment.events.get(kind=PaymentEventKind.CAPTURED)
    assert (event.actor, event.amount) == (admin_user, Decimal("100.00"))
    assert "captured $100.00" in log_entries(payment).get().get_change_message()


@pytest.mark.parametrize(
    ("amount", "code", "text"),
    [
        ("250.01", "", "The amount cannot be more than $250.00."),
        ("0", "min_value", "The amount must be greater than zero."),
        ("0.00", "min_value", "The amount must be greater than zero."),
        ("-5.00", "min_value", "The amount must be greater than zero."),
        ("abc", "invalid", None),
        ("10.123", "max_decimal_places", None),
        ("", "required", None),
    ],
    ids=[
        "above-authorized",
        "zero",
        "zero-cents",
        "negative",
        "non-numeric",
        "3-decimals",
        "empty",
    ],
)
def test_capture_form_refuses_bad_amounts_without_calling_the_provider(
    provider: Api, client: Client, admin_user: Any, amount: str, code: str, text: str | None
) -> None:
    """A bad amount re-renders the form with an error: no provider call, ledger or log entry."""
    payment = authorized(provider, amount="250.00")
    version = provider.payment(payment.provider_id)["version"]
    events = payment.events.count()
    before = snapshot(payment)
    calls = count_calls(provider)
    sign_in_staff(client, admin_user)

    response = ask(client, action_url("capture", payment), {"amount": amount})

    assert response.status_code == 200
    error_code, error_text = amount_error(response)
    if code:
        assert error_code == code
    if text:
        assert error_text == text
    assert escape(error_text) in response.content.decode()
    assert 'class="errorlist' in response.content.decode()
    assert calls() == 0
    assert provider.payment(payment.provider_id)["version"] == version
    assert payment.events.count() == events
    assert snapshot(payment) == before
    assert not log_entries(payment).exists()


# --- Cancel -------------------------------------------------------------------------------------


def test_cancel_asks_for_confirmation_then_cancels(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """GET shows a confirmation page and changes nothing; POST cancels at the provider."""
    payment = authorized(provider)
    calls = count_calls(provider)
    sign_in_staff(client, admin_user)

    page = client.get(action_url("cancel", payment))

    assert page.status_code == 200
    assert "Yes, cancel it" in page.content.decode()
    assert calls() == 0
    assert snapshot(payment)[0] == PaymentStatus.AUTHORIZED

    response = ask(client, action_url("cancel", payment))

    asked_then_done(client, response, run_queued)
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.CANCELLED
    assert provider.payment(payment.provider_id)["status"] == "cancelled"
    event = payment.events.get(kind=PaymentEventKind.CANCELLED)
    assert event.actor == admin_user
    entry = log_entries(payment).get()
    assert entry.user == admin_user
    assert "cancelled the authorization" in entry.get_change_message()


# --- Refund -------------------------------------------------------------------------------------


def test_refund_a_partial_amount_with_a_reason(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """The refund form takes an amount and a reason; the refund is made and recorded."""
    payment = approved(provider, amount="300.00")
    sign_in_staff(client, admin_user)

    page = client.get(action_url("refund", payment))
    assert page.status_code == 200
    assert 'name="reason"' in page.content.decode()

    response = ask(
        client, action_url("refund", payment), {"amount": "120.00", "reason": "Llegó rota"}
    )

    asked_then_done(client, response, run_queued)
    payment.refresh_from_db()
    assert payment.refunded_amount == Decimal("120.00")
    assert payment.status == PaymentStatus.APPROVED
    refund = Refund.objects.get(payment=payment)
    assert (refund.amount, refund.reason, refund.actor) == (
        Decimal("120.00"),
        "Llegó rota",
        admin_user,
    )
    assert provider.payment(payment.provider_id)["amount_refunded"] == Decimal("120.00")
    event = payment.events.get(kind=PaymentEventKind.REFUNDED)
    assert (event.actor, event.amount) == (admin_user, Decimal("120.00"))
    assert "refunded $120.00" in log_entries(payment).get().get_change_message()


def test_refund_form_refuses_more_than_is_left_to_refund(
    provider: Api, client: Client, admin_user: Any
) -> None:
    """Above the refundable amount: a form error, no provider call, no ledger or log entry."""
    payment = approved(provider, amount="300.00")
    payment_refund(payment=payment, amount=Decimal("100.00"), actor=admin_user)
    events = payment.events.count()
    before = snapshot(payment)
    calls = count_calls(provider)
    sign_in_staff(client, admin_user)

    page = client.get(action_url("refund", payment))
    prefilled = re.search(r'name="amount" value="([^"]*)"', page.content.decode())
    assert prefilled and Decimal(prefilled.group(1)) == Decimal("200.00")
    response = ask(client, action_url("refund", payment), {"amount": "200.01", "reason": ""})

    assert response.status_code == 200
    assert amount_error(response)[1] == "The amount cannot be more than $200.00."
    assert escape("The amount cannot be more than $200.00.") in response.content.decode()
    assert calls() == 0
    assert payment.events.count() == events
    assert snapshot(payment) == before
    assert Refund.objects.filter(payment=payment).count() == 1
    assert not log_entries(payment).exists()


# --- Refresh ------------------------------------------------------------------------------------


def test_refresh_asks_first(provider: Api, client: Client, admin_user: Any) -> None:
    """GET on the refresh URL is its confirmation page and calls nothing; the page posts to
    the same address."""
    payment = authorized(provider)
    calls = count_calls(provider)
    sign_in_staff(client, admin_user)

    response = client.get(action_url("refresh", payment))

    assert response.status_code == 200
    assert '<form method="post"' in response.content.decode()
    assert calls() == 0


def test_refresh_applies_the_provider_state(
    provider: Api, client: Client, admin_user: Any, run_queued: Any
) -> None:
    """POST refresh fetches the payment and applies what changed at the provider."""
    payment = authorized(provider, amount="250.00")
    captured = provider.patch(
        f"/payments/{payment.provider_id}",
        {"status": "approved", "paid_amount": Decimal("250.00")},
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )
    assert captured.status_code == 200, captured.text
    sign_in_staff(client, admin_user)

    response = ask(client, action_url("refresh", payment))

    asked_then_done(client, response, run_queued)
    payment.refresh_from_db()
    assert (payment.status, payment.captured_amount) == (PaymentStatus.APPROVED, Decimal("250.00"))
    event = payment.events.get(kind=PaymentEventKind.SYNCED)
    assert event.actor == admin_user
    assert "refreshed from the provider" in log_entries(payment).get().get_change_message()


# --- Provider errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "path", "method", "data"),
    [
        ("capture", "/payments", "PATCH", {"amount": "250.00"}),
        ("cancel", "/payments", "PATCH", {}),
        ("refund", "/refunds", "POST", {"amount": "250.00", "reason": ""}),
    ],
)
def test_a_provider_error_shows_a_message_and_changes_nothing(
    provider: Api,
    client: Client,
    admin_user: Any,
    action: str,
    path: str,
    method: str,
    data: dict[str, str],
    run_queued: Any,
) -> None:
    """A 500 from the provider to every attempt: the action is sent 1 + 3 times with its key,
    then an error message that it was not confirmed (never that it was refused or not made),
    the payment unchanged, no admin log entry."""
    payment = approved(provider) if action == "refund" else authorized(provider)
    remote_before = provider.payment(payment.provider_id)
    before = snapshot(payment)
    hits = inject_fault(provider, path, method, 500)
    sign_in_staff(client, admin_user)

    response = ask(client, action_url(action, payment), data)

    page = asked_then_done(client, response, run_queued)
    assert hits() == 4
    shown = messages_of(page)
    assert [level for level, _ in shown] == ["error"]
    noun = {"capture": "the capture", "cancel": "the cancellation", "refund": "the refund"}[action]
    assert shown[0][1].startswith(f"The payment service did not confirm {noun}. "), shown
    assert snapshot(payment) == before
    remote = provider.payment(payment.provider_id)
    assert (remote["status"], remote["version"]) == (
        remote_before["status"],
        remote_before["version"],
    )
    assert not Refund.objects.filter(payment=payment).exists()
    assert not log_entries(payment).exists()
