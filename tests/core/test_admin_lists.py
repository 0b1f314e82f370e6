"""The four staff lists (orders, payments, notifications, subscriptions) cost the same on a year
of rows as on a day's (core.admin_lists): as many queries for 60 rows as for 1, whatever is
asked (a filter, a search, a sort); a count that stops at its limit and says "more than"; date
ranges instead of the date hierarchy; searches by whole keys, each routed by its shape.

Rows are written straight to the database (no provider)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from checkout.models import Order
from core.admin_lists import BoundedPaginator
from payments.models import Payment
from tests.factories import OrderFactory, PaymentFactory, SubscriptionFactory, WebhookEventFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

PROVIDER_ID = "9d1e0c55-aaaa-4bbb-8ccc-000000000002"
EMAIL = "lupita@example.com"


def add_orders(count: int, **fields: Any) -> list[Any]:
    """Paid orders, each with its charge in 6 installments on a card ending in 1881 (what the
    list's charged and installments columns read)."""
    orders = []
    for _ in range(count):
        order = OrderFactory(total=Decimal("600.00"), status="paid", email=EMAIL, **fields)
        PaymentFactory(
            external_reference=order.reference,
            amount=order.total,
            captured_amount=order.total,
            installments=6,
            installment_amount=Decimal("100.00"),
            card_last_digits="1881",
            customer_email=EMAIL,
        )
        orders.append(order)
    return orders


def add_payments(count: int, **fields: Any) -> list[Any]:
    return [
        PaymentFactory(
            card_last_digits="1881",
            customer_email=EMAIL,
            captured_amount=Decimal("250.00"),
            **fields,
        )
        for _ in range(count)
    ]


def add_notifications(count: int, **fields: Any) -> list[Any]:
    """Notifications of one payment (matched to it), as its provider id and its order's
    reference find them."""
    payment = Payment.objects.filter(provider_id=PROVIDER_ID).first() or PaymentFactory(
        provider_id=PROVIDER_ID, external_reference="ORD-NOTI01"
    )
    return [
        WebhookEventFactory(provider_payment_id=PROVIDER_ID, payment=payment, **fields)
        for _ in range(count)
    ]


def add_subscriptions(count: int, **fields: Any) -> list[Any]:
    return [SubscriptionFactory(customer_email=EMAIL, **fields) for _ in range(count)]


@dataclass(frozen=True)
class Listing:
    changelist: str
    add: Callable[..., list[Any]]
    per_page: int
    date_field: str
    asked: dict[str, dict[str, str]]  # what staff ask of the list, by what it is
    named: str  # how the count names the rows

    @property
    def url(self) -> str:
        return reverse(self.changelist)


LISTS = {
    "orders": Listing(
        "admin:checkout_order_changelist",
        add_orders,
        100,
        "created_at",
        {
            "default": {},
            "filter": {"status__exact": "paid"},
            "search": {"q": "1881"},  # through the orders' payments
            "sort": {"o": "4"},  # total
        },
        "orders",
    ),
    "payments": Listing(
        "admin:payments_payment_changelist",
        add_payments,
        50,
        "created_at",
        {
            "default": {},
            "filter": {"status__exact": "approved"},
            "search": {"q": EMAIL.upper()},
            "sort": {"o": "-3"},  # amount
        },
        "payments",
    ),
    "notifications": Listing(
        "admin:webhooks_webhookevent_changelist",
        add_notifications,
        100,
        "received_at",
        {
            "default": {},
            "filter": {"state__exact": "processed"},
            "search": {"q": "ord-noti01"},  # the payments first, then their events
            "sort": {"o": "1"},  # received
        },
        "notifications",
    ),
    "subscriptions": Listing(
        "admin:payments_subscription_changelist",
        add_subscriptions,
        100,
        "created_at",
        {
            "default": {},
            "filter": {"status__exact": "active"},
            "search": {"q": EMAIL},
            "sort": {"o": "1"},  # provider id
        },
        "subscriptions",
    ),
}


def shown(response: Any) -> list[Any]:
    assert response.status_code == 200, response
    return list(response.context["cl"].result_list)


def queries_for(client: Client, listing: Listing, params: dict[str, str], rows: int) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(listing.url, params)
    assert len(shown(response)) == rows
    return len(queries)


# --- Queries ------------------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["default", "filter", "search", "sort"])
@pytest.mark.parametrize("name", LISTS)
def test_a_list_runs_as_many_queries_for_60_rows_as_for_1(
    admin_client: Client, name: str, what: str
) -> None:
    """Given one row, then 60, when staff open the list (as it is, filtered, searched or
    sorted), then the page runs the same number of queries: nothing is read row by row."""
    listing = LISTS[name]
    params = listing.asked[what]
    listing.add(1)
    admin_client.get(listing.url, params)  # the session and permissions warmed up

    one = queries_for(admin_client, listing, params, rows=1)
    listing.add(59)
    sixty = queries_for(admin_client, listing, params, rows=min(60, listing.per_page))

    assert sixty == one


# --- The bounded count ----------------------------------------------------------------------


@pytest.mark.parametrize("name", LISTS)
def test_the_count_stops_at_its_limit_and_says_more_than(
    admin_client: Client, settings: Any, name: str
) -> None:
    """Given more rows than the count's limit, the list says "more than <limit>" (in the
    paginator and beside the search) and its pages stop at the limit; at the limit, it says
    how many."""
    settings.ADMIN_LIST_COUNT_LIMIT = 3
    listing = LISTS[name]
    listing.add(3)
    exact = admin_client.get(listing.url).content.decode()
    listing.add(2)

    more = admin_client.get(listing.url, {"q": listing.asked["search"]["q"]})
    html = more.content.decode()

    assert f"3 {listing.named}" in exact and "more than" not in exact
    assert f"more than 3 {listing.named}" in html
    assert "more than 3 results" in html


def test_the_pages_stop_at_the_count_limit(settings: Any) -> None:
    """Beyond the limit the rows are not counted: the last page is the one that holds the
    limit's row (a filter or a search reaches the others)."""
    settings.ADMIN_LIST_COUNT_LIMIT = 3
    add_payments(5)

    paginator = BoundedPaginator(Payment.objects.order_by("pk"), 2)

    assert (paginator.count, paginator.more, paginator.num_pages) == (4, True, 2)
    assert len(paginator.page(2).object_list) == 2


def test_the_count_is_said_in_spanish(admin_client: Client, settings: Any) -> None:
    """The "more than" of the count is the staff member's language."""
    settings.ADMIN_LIST_COUNT_LIMIT = 3
    settings.LANGUAGE_CODE = "es"
    add_payments(4)

    html = admin_client.get(LISTS["payments"].url).content.decode()

    assert "más de 3 pagos" in html


# --- Date ranges --------------------------------------------------------------------------------

NOW = datetime(2026, 3, 15, 12, 0, tzinfo=ZoneInfo("America/Mexico_City"))
AGES = {
    "today": timedelta(hours=3),
    "3 days": timedelta(days=3),
    "10 days": timedelta(days=10),  # this month
    "20 days": timedelta(days=20),  # last month, within 30 days
    "40 days": timedelta(days=40),  # this year
    "last year": timedelta(days=90),
}
EXPECTED = {
    "Any date": set(AGES),
    "Today": {"today"},
    "Last 7 days": {"today", "3 days"},
    "This month": {"today", "3 days", "10 days"},
    "Last 30 days": {"today", "3 days", "10 days", "20 days"},
    "This year": {"today", "3 days", "10 days", "20 days", "40 days"},
}


@pytest.mark.parametrize("name", LISTS)
def test_the_date_ranges_list_the_rows_of_each_range(admin_client: Client, name: str) -> None:
    """Given rows of today, 3, 10, 20, 40 and 90 days ago (on 15 March), when staff choose
    each date range, then the list shows the rows of that range, in the shop's time zone."""
    listing = LISTS[name]
    with time_machine.travel(NOW, tick=False):
        rows = {
            age: listing.add(1, **{listing.date_field: NOW - ago})[0].pk
            for age, ago in AGES.items()
        }
        cl = admin_client.get(listing.url).context["cl"]
        spec = next(
            s for s in cl.filter_specs if getattr(s, "field_path", "") == listing.date_field
        )
        choices = {str(c["display"]): c["query_string"] for c in spec.choices(cl)}

        assert set(choices) == set(EXPECTED)
        for title, ages in EXPECTED.items():
            response = admin_client.get(listing.url + choices[title])
            assert {row.pk for row in shown(response)} == {rows[a] for a in ages}, title


# --- Searches -----------------------------------------------------------------------------------


def orders_found(client: Client, term: str) -> set[str]:
    response = client.get(LISTS["orders"].url, {"q": term})
    return {order.reference for order in shown(response)}


@pytest.fixture
def two_orders() -> tuple[Order, Order]:
    """Two orders, each with its payment: the first is the one searched for."""
    wanted = OrderFactory(reference="ORD-FIND1", email="Lupita@Example.com", total=Decimal("50.00"))
    PaymentFactory(
        external_reference=wanted.reference,
        provider_id=PROVIDER_ID,
        card_last_digits="1881",
    )
    other = OrderFactory(reference="ORD-OTHR2", email="ana@example.com", total=Decimal("50.00"))
    PaymentFactory(external_reference=other.reference, card_last_digits="4242")
    return wanted, other


@pytest.mark.parametrize(
    "term",
    ["ORD-FIND1", "ord-find1", "lupita@example.com", PROVIDER_ID, PROVIDER_ID.upper(), "1881"],
)
def test_orders_are_found_by_reference_email_provider_id_and_last_digits(
    admin_client: Client, two_orders: tuple[Order, Order], term: str
) -> None:
    """An order is found by its reference or the shopper's email (in any case), and through
    its payments by the provider's payment id or the card's last 4 digits."""
    assert orders_found(admin_client, term) == {"ORD-FIND1"}


@pytest.mark.parametrize(
    "term", ["FIND1", "ORD-FIND", "lupita", "lupita@", "9d1e0c55-aaaa", "188", "Pérez"]
)
def test_orders_are_not_found_by_part_of_a_key(
    admin_client: Client, two_orders: tuple[Order, Order], term: str
) -> None:
    """Part of a reference, an email, a provider id or the last digits finds no order."""
    assert orders_found(admin_client, term) == set()


def test_a_subscription_is_found_by_provider_id_or_email(admin_client: Client) -> None:
    """A subscription is found by the provider's id or its customer's email (in any case), not
    by part of either."""
    wanted = SubscriptionFactory(provider_id=PROVIDER_ID, customer_email="Lupita@Example.com")
    SubscriptionFactory(customer_email="ana@example.com")
    url = LISTS["subscriptions"].url

    def found(term: str) -> set[int]:
        return {s.pk for s in shown(admin_client.get(url, {"q": term}))}

    assert found(PROVIDER_ID.upper()) == found("lupita@example.com") == {wanted.pk}
    assert found("9d1e0c55") == found("lupita@") == found("example.com") == set()


def test_a_notification_is_not_found_by_part_of_a_key(admin_client: Client) -> None:
    """Part of a provider payment id or of an order reference finds no notification."""
    add_notifications(1)
    url = LISTS["notifications"].url

    for term in ("9d1e0c55-aaaa", "ORD-NOTI", "NOTI01"):
        assert shown(admin_client.get(url, {"q": term})) == [], term


@pytest.mark.parametrize("name", LISTS)
def test_the_search_box_says_what_it_finds(admin_client: Client, name: str) -> None:
    """The help under the search box names the keys it finds rows by."""
    html = admin_client.get(LISTS[name].url).content.decode()

    help_text = re.search(r'id="searchbar_helptext">(.*?)</div>', html, re.S)
    assert help_text is not None
    assert help_text.group(1).startswith("Exact")


# --- Sorts --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sort", "expected"), [("4", ["total", "pk"]), ("-4", ["-total", "-pk"])])
def test_a_sort_ends_on_the_primary_key_in_the_column_direction(
    admin_client: Client, sort: str, expected: list[str]
) -> None:
    """A sort by a column that is not unique ends on the primary key in the column's own
    direction, so that the column's index on (column, id) serves it, both ways; the rows
    read in that order."""
    orders = add_orders(3)

    response = admin_client.get(LISTS["orders"].url, {"o": sort})

    assert list(response.context["cl"].queryset.query.order_by) == expected
    ascending = [order.pk for order in sorted(orders, key=lambda order: order.pk)]
    shown_pks = [order.pk for order in shown(response)]
    assert shown_pks == (ascending if sort == "4" else ascending[::-1])


def test_only_indexed_columns_are_sortable(admin_client: Client) -> None:
    """The orders' charged amount (a sum over their payments) is not offered as a sort."""
    add_orders(1)

    html = admin_client.get(LISTS["orders"].url).content.decode()

    header = re.search(r'<th scope="col" class="([^"]*)column-charged', html)
    assert header is not None and "sortable" not in header.group(1)
    assert 'class="sortable column-amount' in html


@pytest.mark.parametrize(
    ("listing", "column"), [("orders", "status"), ("payments", "status_badge")]
)
def test_a_column_that_is_not_sortable_does_not_sort_when_asked_by_address(
    admin_client: Client, listing: str, column: str
) -> None:
    """`?o=` written by hand for a column outside `sortable_by` (no index serves it) is ignored,
    as Django ignores a column without a sort: the rows come newest first by primary key."""
    (add_orders if listing == "orders" else add_payments)(2)
    display = list(admin_client.get(LISTS[listing].url).context["cl"].list_display)

    response = admin_client.get(LISTS[listing].url, {"o": str(display.index(column))})

    assert list(response.context["cl"].queryset.query.order_by) == ["-pk"]


# --- Read only ----------------------------------------------------------------------------------

# The admins whose rows the shop writes, and the inlines of its ledgers and mails.
READ_ONLY = [
    "payments.Payment",
    "payments.Subscription",
    "checkout.Order",
    "webhooks.WebhookEvent",
    "staff_signin.SignInEvent",
]


@pytest.mark.django_db
@pytest.mark.parametrize("label", READ_ONLY)
def test_a_read_only_admin_lets_nobody_add_change_or_delete(label: str, rf: Any) -> None:
    """Not even a superuser adds, changes or deletes a payment, a subscription, an order, a
    notification or a sign-in from the admin, nor a row of their inlines (ReadOnlyAdmin)."""
    from django.apps import apps
    from django.contrib import admin
    from django.contrib.auth import get_user_model

    request = rf.get("/")
    request.user = get_user_model()(is_superuser=True, is_staff=True, is_active=True)
    model_admin = admin.site._registry[apps.get_model(label)]

    for each in [model_admin, *model_admin.get_inline_instances(request)]:
        assert not each.has_add_permission(request), each
        assert not each.has_change_permission(request), each
        assert not each.has_delete_permission(request), each
    assert model_admin.has_view_permission(request)
