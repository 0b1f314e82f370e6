"""The order page of the admin, the staff's main screen: what it shows (items, customer, payments,
ledger, the actions the staff member may take), each action through its confirmation page (ship
in full or in part, cancel, refund, refresh, ship several from the list), and who may do what:
every action URL, GET and POST, for admin, consulta (view only) and a clerk who may ship and
cancel but has no payment permission. An action is done by a task (run here as a worker would)
and its outcome said on the order page."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.test import Client, TestCase
from django.urls import reverse

from checkout.models import Fulfilment, Order, OrderEvent, OrderStatus, Product
from payments.models import Payment
from tests.checkout.helpers import stock
from tests.helpers.provider import Api
from tests.helpers.shop import paid_order, remote_of
from tests.helpers.staff import sign_in_staff

pytestmark = [pytest.mark.django_db, pytest.mark.sandbox, pytest.mark.usefixtures("in_english")]


AMOUNT = re.compile(r"\$\d{1,3}(,\d{3})*\.\d{2}")


def staff(username: str, *permissions: str) -> Client:
    user = get_user_model().objects.create_user(
        username, password="a-long-test-password", is_staff=True
    )
    for dotted in permissions:
        app_label, codename = dotted.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client = Client()
    sign_in_staff(client, user)
    return client


@pytest.fixture
def admin(admin_client: Client) -> Client:
    return admin_client


@pytest.fixture
def consulta(db: None) -> Client:
    call_command("seed_demo", verbosity=0)
    client = Client()
    sign_in_staff(client, get_user_model().objects.get(username="consulta"))
    return client


@pytest.fixture
def clerk(db: None) -> Client:
    return staff("clerk", "checkout.view_order", "checkout.ship_order", "checkout.cancel_order")


def url(name: str, order: Order) -> str:
    return reverse(f"admin:checkout_order_{name}", args=[order.pk])


def said(response: Any) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def act(client: Client, address: str, run_queued: Any, data: dict[str, Any] | None = None) -> Any:
    """POST an action (its task queued on commit), run its task as a worker would, and open
    the page the POST went back to: it says what happened."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = client.post(address, data or {})
    assert response.status_code == 302, response
    run_queued()
    return client.get(response.url)


# --- The page ---------------------------------------------------------------------------------


def test_the_order_page_shows_the_order_its_payments_and_ledger(
    shop: Api, admin: Client, blusa: Product, taza: Product
) -> None:
    order = paid_order(shop, (blusa, 1), (taza, 2))

    page = admin.get(url("change", order)).content.decode()

    for text in ("Blusa bordada", "Taza de talavera", order.email, order.street, "VISA •••• 4242"):
        assert text in page, text
    assert "$1,868.00" in page
    assert 'id="order-payments"' in page and 'id="order-ledger"' in page
    for action in ("action-ship", "action-cancel", "action-refresh"):
        assert f'id="{action}"' in page
    assert 'id="action-refund"' not in page  # nothing is charged yet: held only


def test_consulta_sees_orders_without_any_action(
    shop: Api, consulta: Client, blusa: Product
) -> None:
    order = paid_order(shop, (blusa, 1))

    listing = consulta.get(reverse("admin:checkout_order_changelist"))
    page = consulta.get(url("change", order))

    assert listing.status_code == page.status_code == 200
    assert order.reference in listing.content.decode()
    assert not re.search(r'id="action-', page.content.decode())
    assert 'name="action"' not in listing.content.decode()  # no bulk action either


# --- Ship -------------------------------------------------------------------------------------


def test_shipping_from_the_order_page_captures_and_says_so(
    shop: Api, admin: Client, blusa: Product, taza: Product, run_queued: Any
) -> None:
    order = paid_order(shop, (blusa, 1), (taza, 2))
    items = {i.product_id: i for i in order.items.all()}
    form = admin.get(url("ship", order))
    assert form.status_code == 200
    assert 'value="1"' in form.content.decode() and 'value="2"' in form.content.decode()

    response = act(
        admin,
        url("ship", order),
        run_queued,
        {f"item-{items[blusa.pk].pk}": "1", f"item-{items[taza.pk].pk}": "0"},
    )

    [message] = said(response)
    assert "$1,290.00" in message and "$578.00" in message
    order.refresh_from_db()
    assert order.fulfilment == Fulfilment.PARTIALLY_SHIPPED
    assert remote_of(shop, order)["captured_amount"] == Decimal("1290.00")
    assert stock(taza) == 10
    assert OrderEvent.objects.filter(order=order, kind="shipped").get().actor.username == "admin"


@pytest.mark.parametrize("quantity", ["3", "-1", "x", "1.5"])
def test_a_quantity_out_of_bounds_is_a_form_error_and_changes_nothing(
    shop: Api, admin: Client, taza: Product, quantity: str
) -> None:
    order = paid_order(shop, (taza, 2))
    item = order.items.get()

    response = admin.post(url("ship", order), {f"item-{item.pk}": quantity})

    assert response.status_code == 200
    assert response.context["form"].errors
    assert remote_of(shop, order)["status"] == "authorized"
    order.refresh_from_db()
    assert order.fulfilment == Fulfilment.UNFULFILLED


def test_shipping_nothing_is_a_form_error(shop: Api, admin: Client, taza: Product) -> None:
    order = paid_order(shop, (taza, 2))
    item = order.items.get()

    response = admin.post(url("ship", order), {f"item-{item.pk}": "0"})

    assert response.status_code == 200
    assert response.context["form"].non_field_errors()


def test_a_refusal_of_the_provider_is_said_on_the_order_page(
    shop: Api, admin: Client, blusa: Product, run_queued: Any
) -> None:
    order = paid_order(shop, (blusa, 1))
    payment = Payment.objects.get(external_reference=order.reference)
    shop.patch(f"/payments/{payment.provider_id}", {"status": "cancelled"})
    item = order.items.get()

    response = act(admin, url("ship", order), run_queued, {f"item-{item.pk}": "1"})

    [message] = said(response)
    assert message.startswith(order.reference)
    order.refresh_from_db()
    # Not shipped; the payment read again after the refusal moves the order (cancelled).
    assert order.fulfilment != Fulfilment.SHIPPED
    assert not OrderEvent.objects.filter(order=order, kind="shipped").exists()


def test_shipping_several_from_the_list_confirms_first_and_reports_each(
    shop: Api, admin: Client, blusa: Product, taza: Product, run_queued: Any
) -> None:
    held = paid_order(shop, (blusa, 1))
    unpaid = Order.objects.get(pk=paid_order(shop, (taza, 1)).pk)
    Payment.objects.filter(external_reference=unpaid.reference).update(status="failed")
    changelist = reverse("admin:checkout_order_changelist")
    chosen = {"action": "ship_selected", "_selected_action": [held.pk, unpaid.pk]}

    asked = admin.post(changelist, chosen)
    assert asked.status_code == 200
    assert remote_of(shop, held)["status"] == "authorized"  # nothing done yet

    done = act(admin, changelist, run_queued, {**chosen, "confirmed": "yes"})

    messages = said(done)
    assert any(m.startswith(held.reference) and "$1,290.00" in m for m in messages)
    assert any(m.startswith(unpaid.reference) and "cannot ship" in m for m in messages)
    held.refresh_from_db()
    assert held.fulfilment == Fulfilment.SHIPPED


# --- Cancel, refund, refresh ------------------------------------------------------------------


def test_cancelling_from_the_order_page_restocks(
    shop: Api, admin: Client, blusa: Product, run_queued: Any
) -> None:
    order = paid_order(shop, (blusa, 2))
    assert admin.get(url("cancel", order)).status_code == 200

    response = act(admin, url("cancel", order), run_queued)

    assert response.status_code == 200
    assert stock(blusa) == 5
    assert remote_of(shop, order)["status"] == "cancelled"


def test_refunding_part_from_the_order_page_with_an_item_back(
    shop: Api, settings: Any, admin: Client, blusa: Product, taza: Product, run_queued: Any
) -> None:
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    order = paid_order(shop, (blusa, 1), (taza, 2))
    taza_item = order.items.get(product=taza)
    form = admin.get(url("refund", order)).content.decode()
    assert 'value="1868.00"' in form and "$1,868.00" in form

    act(
        admin,
        url("refund", order),
        run_queued,
        {"amount": "289.00", "reason": "Taza rota", f"item-{taza_item.pk}": "1"},
    )

    assert remote_of(shop, order)["amount_refunded"] == Decimal("289.00")
    assert stock(taza) == 9


@pytest.mark.parametrize("amount", ["1868.01", "0", "-5", "abc"])
def test_a_refund_out_of_bounds_is_a_form_error(
    shop: Api, settings: Any, admin: Client, blusa: Product, taza: Product, amount: str
) -> None:
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    order = paid_order(shop, (blusa, 1), (taza, 2))

    response = admin.post(url("refund", order), {"amount": amount, "reason": ""})

    assert response.status_code == 200
    assert "amount" in response.context["form"].errors
    assert remote_of(shop, order)["amount_refunded"] == Decimal("0")


def test_refresh_from_the_order_page(
    shop: Api, admin: Client, blusa: Product, run_queued: Any
) -> None:
    order = paid_order(shop, (blusa, 1))
    payment = Payment.objects.get(external_reference=order.reference)
    shop.patch(f"/payments/{payment.provider_id}", {"status": "cancelled"})

    response = act(admin, url("refresh", order), run_queued)

    assert response.status_code == 200
    payment.refresh_from_db()
    assert payment.status == "cancelled"


# --- Who may do what --------------------------------------------------------------------------

ACTION_URLS = ["ship", "cancel", "refund", "refresh"]
ALLOWED = {
    "admin": {"ship", "cancel", "refund", "refresh"},
    "consulta": set(),
    "clerk": {"ship", "cancel"},
}


@pytest.mark.parametrize("who", ["admin", "consulta", "clerk"])
@pytest.mark.parametrize("action", ACTION_URLS)
@pytest.mark.parametrize("method", ["get", "post"])
def test_every_action_url_answers_by_permission(
    shop: Api,
    settings: Any,
    request: pytest.FixtureRequest,
    blusa: Product,
    who: str,
    action: str,
    method: str,
) -> None:
    """Without the permission: 403 on the admin's own page with the reason, nothing done. With
    it: the confirmation page (GET) or the action done and back to the order (POST)."""
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"  # so that a refund is possible too
    order = paid_order(shop, (blusa, 1))
    client: Client = request.getfixturevalue(who)
    before = (remote_of(shop, order), stock(blusa))

    response = getattr(client, method)(url(action, order))

    if action not in ALLOWED[who]:
        assert response.status_code == 403
        assert 'id="forbidden-reason"' in response.content.decode()
        assert (remote_of(shop, order), stock(blusa)) == before
    elif method == "get":
        assert response.status_code == 200
        assert 'id="staff-action"' in response.content.decode()
    else:
        assert response.status_code in (200, 302)
    if who == "consulta":
        assert (remote_of(shop, order)["status"], stock(blusa)) == (
            before[0]["status"],
            before[1],
        )


def test_amounts_in_the_order_admin_are_written_one_way(
    shop: Api, admin: Client, blusa: Product, taza: Product
) -> None:
    """Every amount on the order list and page reads like $1,290.00."""
    order = paid_order(shop, (blusa, 1), (taza, 2))
    for page in (
        admin.get(reverse("admin:checkout_order_changelist")),
        admin.get(url("change", order)),
    ):
        text = re.sub(r"<[^>]+>", " ", page.content.decode())
        for number in re.findall(r"\$?\d[\d.,]*\.\d{2}\b", text):
            assert AMOUNT.fullmatch(number), number


def test_status_of_a_cancelled_order_without_payment(
    admin: Client, blusa: Product, run_queued: Any
) -> None:
    """An order nobody paid can be cancelled: its items go back to stock."""
    from tests.helpers.shop import place_order, shopper

    order = place_order(shopper(), (blusa, 2))

    act(admin, url("cancel", order), run_queued)

    order.refresh_from_db()
    assert (order.status, order.fulfilment) == (OrderStatus.CANCELLED, Fulfilment.CANCELLED)
    assert stock(blusa) == 5
