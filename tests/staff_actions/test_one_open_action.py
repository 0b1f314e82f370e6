"""One staff action open at a time on an object and on a payment, each guard shown refusing by
itself: `ActionBusy` (staff_actions/rules.py: the refusal said to staff) and the two unique
constraints on open StaffActions behind it (staff_actions/models.py: one per object, one per
payment).

The actions asked here claim nothing on the payment (a refresh, a subscription's cancellation,
shipping an order already charged), so the open action's guard is the only one that can refuse
them: the claim on the payment (payments.actions.rules.claim_payment), which refuses the second
of two captures or cancels (tests/staff_actions/test_flow.py), is never taken. Asked from the
admin, the second action is told in words, at once, and records nothing: no second action, no
task queued, no ledger entry, no admin log. And the database alone refuses a second open action
when the service that records them is bypassed.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse

from checkout.models import Fulfilment, Order, OrderEvent, OrderStatus
from payments.models import Payment, PaymentEvent, Subscription, SubscriptionStatus
from staff_actions.models import StaffAction, StaffActionState
from tests.factories import OrderFactory, PaymentFactory, ProductFactory, SubscriptionFactory
from tests.helpers.broker import take_queued
from tests.helpers.staff import sign_in_staff
from tests.payments.helpers import action_url, ask, change_url, messages_of, stored_payment

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_broker")]

RUN_TASK = "payments.tasks.staff_action_run_task"
BUSY = {
    "en": "Another action ({action}) is already running on this {object}. Refresh the page in "
    "a moment.",
    "es": "Ya hay otra acción en curso ({action}) sobre este registro ({object}). Actualiza la "
    "página en un momento.",
}
REFRESH = {"en": "refresh", "es": "actualización"}
PAYMENT = {"en": "payment", "es": "pago"}


@pytest.fixture
def staff(client: Client, admin_user: Any) -> Client:
    """A staff member with every permission, signed in with a second factor."""
    return sign_in_staff(client, admin_user)


def queued(celery_app: Any) -> list[str]:
    """The names of the tasks queued since the last look (taken off the broker)."""
    return [name for name, _args in take_queued(celery_app)]


def nothing_logged() -> bool:
    return not LogEntry.objects.exists()


@pytest.mark.parametrize("language", ["es", "en"])
def test_a_second_refresh_while_one_is_open_is_told_and_records_nothing(
    staff: Client, celery_app: Any, language: str
) -> None:
    """Given a refresh of a payment asked and still open (its task queued, not run), a second
    refresh of it asked from the payment's page is refused at once, in the staff member's
    language, saying another action is running; nothing is recorded: still the one action, no
    second task, no entry in the payment's ledger or the admin's log, no claim taken."""
    payment = stored_payment("ORD-RFSH1")
    first = ask(staff, action_url("refresh", payment), HTTP_ACCEPT_LANGUAGE=language)
    assert first.status_code == 302 and messages_of(first) == []
    assert queued(celery_app) == [RUN_TASK]
    [open_action] = StaffAction.objects.all()

    # When staff ask the refresh again while the first is open
    second = ask(staff, action_url("refresh", payment), HTTP_ACCEPT_LANGUAGE=language)

    # Then they are told so in words, on the payment's page
    assert second.status_code == 302 and second.url == change_url(payment)
    told = BUSY[language].format(action=REFRESH[language], object=PAYMENT[language])
    assert messages_of(second) == [("error", told)]
    # And nothing is recorded: the one open action, no task, no ledger entry, no log, no claim
    assert list(StaffAction.objects.all()) == [open_action]
    assert open_action.state == StaffActionState.QUEUED
    assert queued(celery_app) == []
    assert not PaymentEvent.objects.filter(payment=payment).exists()
    assert nothing_logged()
    assert Payment.objects.get(pk=payment.pk).intent == ""


@pytest.mark.usefixtures("in_english")
def test_shipping_an_order_whose_payment_is_being_refreshed_is_told_and_records_nothing(
    staff: Client, celery_app: Any
) -> None:
    """Given an order already charged (shipping it captures nothing: it claims nothing) and a
    refresh of its payment asked and still open, shipping the order is refused at once: the
    two actions are on different objects, and only the one open action per payment refuses
    it. Nothing is recorded: no shipment asked, no task, no order ledger entry, not shipped."""
    order = OrderFactory(lines=[(ProductFactory(stock=5), 1)], status=OrderStatus.PAID)
    payment = PaymentFactory(order=order, charged=True)
    ask(staff, action_url("refresh", payment))
    assert queued(celery_app) == [RUN_TASK]
    [item] = order.items.all()

    # When staff ship the order while its payment's refresh is open
    response = ask(
        staff, reverse("admin:checkout_order_ship", args=[order.pk]), {f"item-{item.pk}": "1"}
    )

    # Then they are told so, the order named
    assert response.status_code == 302
    told = BUSY["en"].format(action="refresh", object="order")
    assert messages_of(response) == [("error", f"{order.reference}: {told}")]
    # And nothing is recorded
    assert [action.kind for action in StaffAction.objects.all()] == ["payments.refresh"]
    assert queued(celery_app) == []
    assert not OrderEvent.objects.filter(order=order).exists()
    assert Order.objects.get(pk=order.pk).fulfilment == Fulfilment.UNFULFILLED
    assert Payment.objects.get(pk=payment.pk).intent == ""
    assert nothing_logged()


@pytest.mark.usefixtures("in_english")
def test_a_second_cancel_of_a_subscription_while_one_is_open_is_told_and_records_nothing(
    staff: Client, celery_app: Any
) -> None:
    """Given a subscription's cancellation asked and still open (an action on no payment: only
    the one open action per object can refuse another), a second cancellation asked from the
    subscriptions' list is refused at once, the subscription named; nothing is recorded: the
    one action, no task, no admin log, the subscription as it was."""
    subscription = SubscriptionFactory()
    changelist = reverse("admin:payments_subscription_changelist")
    confirmed = {
        "action": "cancel_selected",
        "confirmed": "yes",
        "_selected_action": [subscription.pk],
    }
    ask(staff, changelist, confirmed)
    assert queued(celery_app) == [RUN_TASK]
    [open_action] = StaffAction.objects.all()

    # When staff cancel it again while the first cancellation is open
    response = ask(staff, changelist, confirmed)

    # Then they are told so
    assert response.status_code == 302
    told = BUSY["en"].format(action="subscription cancellation", object="subscription")
    assert messages_of(response) == [("error", f"{subscription.provider_id}: {told}")]
    # And nothing is recorded
    assert list(StaffAction.objects.all()) == [open_action]
    assert queued(celery_app) == []
    assert nothing_logged()
    assert Subscription.objects.get(pk=subscription.pk).status == SubscriptionStatus.ACTIVE


# --- The database alone -----------------------------------------------------------------------


def open_action(**fields: Any) -> StaffAction:
    """An action recorded straight into the table, past the service that records them."""
    return StaffAction.objects.create(
        kind="payments.refresh", idempotency_key=f"key-{StaffAction.objects.count()}", **fields
    )


def refused_by_the_database(**fields: Any) -> bool:
    try:
        with transaction.atomic():
            open_action(**fields)
    except IntegrityError:
        return True
    return False


def test_the_database_refuses_a_second_open_action_on_one_object() -> None:
    """Given an open action on a subscription (no payment), a second open action on it
    written past the service is refused by the database itself; once the first is done, the
    next one is taken."""
    subscription = SubscriptionFactory()
    on_it = {
        "target_type": ContentType.objects.get_for_model(subscription),
        "target_id": subscription.pk,
    }
    first = open_action(**on_it)

    assert refused_by_the_database(**on_it)
    assert refused_by_the_database(**on_it, state=StaffActionState.RUNNING)

    StaffAction.objects.filter(pk=first.pk).update(state=StaffActionState.DONE)
    assert not refused_by_the_database(**on_it)


def test_the_database_refuses_a_second_open_action_on_one_payment() -> None:
    """Given an open action on a payment, a second open action moving the same payment but on
    another object (its order), written past the service, is refused by the database itself;
    once the first has failed, the next one is taken."""
    order = OrderFactory()
    payment = PaymentFactory(order=order)
    first = open_action(
        target_type=ContentType.objects.get_for_model(payment),
        target_id=payment.pk,
        payment=payment,
    )
    on_the_order = {
        "target_type": ContentType.objects.get_for_model(order),
        "target_id": order.pk,
        "payment": payment,
    }

    assert refused_by_the_database(**on_the_order)

    StaffAction.objects.filter(pk=first.pk).update(state=StaffActionState.FAILED)
    assert not refused_by_the_database(**on_the_order)
