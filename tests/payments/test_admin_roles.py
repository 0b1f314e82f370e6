"""Who may do what in the staff admin, over every action address of payments and subscriptions
(the orders' are in tests/checkout/test_order_admin.py), GET and POST: admin may; consulta (view
only) and a clerk who may ship and cancel orders but holds no payment permission get the admin's
own refusal page (403, with the reason), and nothing happens at the provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from payments.models import Payment
from payments.statuses import PaymentStatus
from tests.factories import OrderFactory, PaymentFactory, ProductFactory
from tests.helpers.staff import sign_in_staff

pytestmark = pytest.mark.django_db

ACTIONS: dict[str, Callable[[Payment], str]] = {
    "capture": lambda p: reverse("admin:payments_payment_capture", args=[p.pk]),
    "cancel": lambda p: reverse("admin:payments_payment_cancel", args=[p.pk]),
    "refund": lambda p: reverse("admin:payments_payment_refund", args=[p.pk]),
    "refresh": lambda p: reverse("admin:payments_payment_refresh", args=[p.pk]),
    "close": lambda p: reverse("admin:payments_payment_close", args=[p.pk]),
    "import": lambda p: reverse("admin:payments_subscription_import"),
}


@pytest.fixture
def payment(db: None) -> Payment:
    order = OrderFactory(lines=[(ProductFactory(), 1)])
    return PaymentFactory(order=order, status=PaymentStatus.AUTHORIZED, capture_method="manual")


@pytest.fixture
def clients(admin_client: Client, django_user_model: Any) -> dict[str, Client]:
    call_command("seed_demo", verbosity=0)
    consulta = Client()
    sign_in_staff(consulta, get_user_model().objects.get(username="consulta"))
    clerk_user = get_user_model().objects.create_user(
        "clerk", password="x-long-pass", is_staff=True
    )
    clerk_user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="checkout",
            codename__in=["view_order", "ship_order", "cancel_order"],
        )
    )
    clerk = Client()
    sign_in_staff(clerk, clerk_user)
    return {"admin": admin_client, "consulta": consulta, "clerk": clerk}


@pytest.mark.parametrize("action", sorted(ACTIONS))
@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("who", ["consulta", "clerk"])
def test_view_only_and_order_staff_are_refused_readably(
    clients: dict[str, Client],
    payment: Payment,
    calls: list[Any],
    who: str,
    method: str,
    action: str,
) -> None:
    response = getattr(clients[who], method)(ACTIONS[action](payment))

    assert response.status_code == 403
    page = response.content.decode()
    assert 'id="forbidden-reason"' in page
    assert "permiso" in page  # the reason, in the staff member's language
    assert calls == []
    payment.refresh_from_db()
    assert payment.status == PaymentStatus.AUTHORIZED


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_admin_gets_each_confirmation_page(
    clients: dict[str, Client], payment: Payment, calls: list[Any], action: str
) -> None:
    """Every action asks first: its address answers admin's GET with its page, doing nothing."""
    response = clients["admin"].get(ACTIONS[action](payment))

    assert response.status_code == 200
    assert calls == []


def test_consulta_sees_every_list_and_no_action(
    clients: dict[str, Client], payment: Payment
) -> None:
    """consulta sees orders, payments, subscriptions and notifications, and no action."""
    for name in (
        "checkout_order",
        "payments_payment",
        "payments_subscription",
        "webhooks_webhookevent",
    ):
        response = clients["consulta"].get(reverse(f"admin:{name}_changelist"))
        assert response.status_code == 200, name
        assert response.context.get("action_form") is None, name
    page = clients["consulta"].get(reverse("admin:payments_payment_change", args=[payment.pk]))
    assert page.status_code == 200
    assert 'id="action-' not in page.content.decode().replace('id="action-notifications"', "")
