"""The owner's dashboard on the admin's home page (dashboard.figures): its figures are the
database's (charges from the payments' ledger, refunds from the refunds, held money from the
authorizations), its days are the shop's (America/Mexico_City, weeks from Monday), each link of
"needs attention" opens the admin's list of exactly the rows counted, a staff member sees only
the parts of the models they may view, and the page costs the same queries, each served by an
index, with few rows or many."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from checkout.models import Order, OrderMail
from dashboard.figures import owner_dashboard
from payments.models import Payment, PaymentEvent, Refund
from tests.factories import (
    OrderFactory,
    PaymentEventFactory,
    PaymentFactory,
    RefundFactory,
    WebhookEventFactory,
)
from tests.helpers.database import plan_of
from tests.helpers.html import Node, html
from tests.helpers.staff import sign_in_staff
from webhooks.models import GAVE_UP, WebhookEvent

pytestmark = pytest.mark.django_db

SHOP = ZoneInfo("America/Mexico_City")
# A Wednesday, mid-morning in Mexico City (16:00 UTC): the week started on Monday the 23rd.
NOW = datetime(2026, 11, 25, 10, 0, tzinfo=SHOP)
INDEX = reverse("admin:index")


@pytest.fixture
def frozen() -> Iterator[None]:
    """The clock stopped at NOW, for the fixtures after it as for the test."""
    with time_machine.travel(NOW, tick=False):
        yield


def local(text: str) -> datetime:
    """A moment written as the shop's wall clock reads it ("2026-11-25 09:00")."""
    return datetime.fromisoformat(text).replace(tzinfo=SHOP)


def charge(at: datetime, amount: str, *, captured: str | None = None, **entry: Any) -> Payment:
    """A payment approved at `at`, as its ledger records it (created, then approved)."""
    payment = PaymentFactory(
        amount=Decimal(amount),
        captured_amount=Decimal(captured or amount),
        status="approved",
        created_at=at - timedelta(minutes=1),
    )
    entry.setdefault("kind", "synced")
    entry.setdefault("old_status", "creating")
    PaymentEventFactory(payment=payment, new_status="approved", created_at=at, **entry)
    return payment


def page_in(client: Client, language: str) -> Node:
    response = client.get(INDEX, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return html(response)


def cells(tree: Node, row_id: str) -> list[str]:
    return [cell.text for cell in tree.one("tr", id=row_id).find_all("td")]


def expected_sales(since: datetime, until: datetime) -> tuple[Decimal, int, Decimal, int]:
    """The oracle: every ledger entry and refund of the database read one by one in Python
    (no query of the dashboard's), kept when it falls in [since, until)."""
    charged, charges = Decimal("0.00"), 0
    for entry in PaymentEvent.objects.select_related("payment"):
        moved = entry.new_status == "approved" and entry.old_status != "approved"
        if moved and entry.kind != "anomaly" and since <= entry.created_at < until:
            charged += entry.payment.captured_amount
            charges += 1
    refunded, refunds = Decimal("0.00"), 0
    for refund in Refund.objects.all():
        if since <= refund.created_at < until:
            refunded += refund.amount
            refunds += 1
    return charged, charges, refunded, refunds


@pytest.fixture
def sales_rows(db: None) -> None:
    """Charges and refunds today, earlier this week, last week, 29 and 30 days ago."""
    charge(local("2026-11-25 09:00"), "1290.00")  # today
    charge(local("2026-11-25 00:00"), "289.00")  # today, its first instant
    # A hold captured in part today: the capture is the charge (800 of 1000).
    held = PaymentFactory(
        held=True, amount=Decimal("1000.00"), created_at=local("2026-11-20 12:00")
    )
    PaymentEventFactory(
        payment=held, kind="created", new_status="authorized", created_at=local("2026-11-20 12:00")
    )
    Payment.objects.filter(pk=held.pk).update(status="approved", captured_amount=Decimal("800.00"))
    PaymentEventFactory(
        payment=held,
        kind="captured",
        old_status="authorized",
        new_status="approved",
        amount=Decimal("800.00"),
        created_at=local("2026-11-25 08:00"),
    )
    charge(local("2026-11-24 23:59:59"), "100.00")  # yesterday (Tuesday)
    monday = charge(local("2026-11-23 00:00"), "2000.00")  # this week's first instant
    # Later entries of a charged payment are not charges: refunded, re-read, an anomaly.
    PaymentEventFactory(
        payment=monday,
        kind="refunded",
        old_status="approved",
        new_status="approved",
        amount=Decimal("500.00"),
        created_at=local("2026-11-24 10:00"),
    )
    PaymentEventFactory(
        payment=monday,
        kind="anomaly",
        old_status="refunded",
        new_status="approved",
        created_at=local("2026-11-25 09:30"),
    )
    charge(local("2026-11-22 23:59:59"), "350.00")  # Sunday: last week
    charge(local("2026-10-27 00:00"), "999.00")  # 29 days ago: the 30 days' first day
    charge(local("2026-10-26 23:59:59"), "5000.00")  # 30 days ago: out
    charge(local("2026-11-26 00:00"), "7777.00")  # tomorrow (a clock ahead): not counted
    RefundFactory(payment=monday, amount=Decimal("500.00"), created_at=local("2026-11-24 10:00"))
    RefundFactory(payment=monday, amount=Decimal("120.50"), created_at=local("2026-11-25 07:00"))
    RefundFactory(payment=monday, amount=Decimal("60.00"), created_at=local("2026-11-20 07:00"))
    RefundFactory(payment=monday, amount=Decimal("9.00"), created_at=local("2026-10-01 07:00"))


@time_machine.travel(NOW, tick=False)
@pytest.mark.parametrize("language", ["es", "en"])
def test_sales_are_the_ledgers_today_this_week_and_30_days(
    sales_rows: None, admin_client: Client, language: str
) -> None:
    """Today, this week (from Monday) and the last 30 days, in the shop's time zone: the
    charges the payments' ledger recorded (the captured amount, once per payment) and the
    refunds made, equal to the database's rows counted one by one, in either language."""
    tree = page_in(admin_client, language)
    today, monday = local("2026-11-25 00:00"), local("2026-11-23 00:00")
    first, tomorrow = local("2026-10-27 00:00"), local("2026-11-26 00:00")
    for row_id, since in (("sales-today", today), ("sales-week", monday), ("sales-30-days", first)):
        charged, charges, refunded, refunds = expected_sales(since, tomorrow)
        assert cells(tree, row_id) == [
            f"${charged:,.2f}",
            str(charges),
            f"${refunded:,.2f}",
            str(refunds),
        ]
    # The same figures, written out: what a reader of the test checks by eye.
    assert cells(tree, "sales-today") == ["$2,379.00", "3", "$120.50", "1"]
    assert cells(tree, "sales-week") == ["$4,479.00", "5", "$620.50", "2"]
    assert cells(tree, "sales-30-days") == ["$5,828.00", "7", "$680.50", "3"]
    week_label = tree.one("tr", id="sales-week").one("th").text
    assert (
        week_label
        == {"es": "Esta semana (desde el lunes)", "en": "This week (since Monday)"}[language]
    )


@time_machine.travel(local("2026-11-23 00:00:30"), tick=False)
def test_today_and_the_week_begin_at_midnight_in_mexico_city(admin_client: Client) -> None:
    """At half a minute past midnight on a Monday in Mexico City (06:00:30 UTC), a charge at
    23:59:59 on Sunday is neither today's nor this week's, though it is Monday in UTC; one at
    midnight is both."""
    charge(local("2026-11-22 23:59:59"), "350.00")  # Monday 05:59:59 UTC
    charge(local("2026-11-23 00:00"), "1290.00")
    tree = page_in(admin_client, "en")
    assert cells(tree, "sales-today")[:2] == ["$1,290.00", "1"]
    assert cells(tree, "sales-week")[:2] == ["$1,290.00", "1"]
    assert cells(tree, "sales-30-days")[:2] == ["$1,640.00", "2"]


@time_machine.travel(NOW, tick=False)
def test_the_chart_draws_each_of_the_30_days(sales_rows: None, admin_client: Client) -> None:
    """The chart has a bar per day, oldest first and today last, each as tall as its amount
    (the highest day is the tallest), and the same figures as a table."""
    tree = page_in(admin_client, "en")
    svg = tree.one("svg", cls="owner-chart-svg")
    assert svg.attrs["role"] == "img"
    bars = svg.find_all("rect", cls="owner-bar")
    assert len(bars) == 30
    heights = [float(bar.attrs["height"]) for bar in bars]
    assert heights[-1] == max(heights) > 0  # today, $2,379.00, the highest day
    assert 0 < heights[-2] < heights[-3]  # Tuesday's $100.00, Monday's $2,000.00
    assert heights[0] > 0  # the 30 days' first day: $999.00
    rows = tree.one("table", id="sales-chart-table").find_all("tr")[1:]
    assert len(rows) == 30
    assert [cell.text for cell in rows[0].find_all("td")] == ["$2,379.00", "3"]


@time_machine.travel(NOW, tick=False)
def test_orders_to_ship_and_money_held(admin_client: Client) -> None:
    """Orders paid or held with items left to send are counted and their link lists exactly
    them; the money held is the authorizations' amount, with the nearest expiries first."""
    to_ship = [
        OrderFactory(status="paid"),
        OrderFactory(status="authorized"),
        OrderFactory(status="partially_refunded", fulfilment="partially_shipped"),
    ]
    OrderFactory(status="paid", fulfilment="shipped")
    OrderFactory(status="awaiting_payment")
    OrderFactory(status="cancelled", fulfilment="cancelled")
    soon = PaymentFactory(
        held=True,
        amount=Decimal("1290.00"),
        authorization_expires_at=NOW + timedelta(days=1, hours=2),
    )
    later = PaymentFactory(
        held=True,
        amount=Decimal("2000.00"),
        authorization_expires_at=NOW + timedelta(days=20),
    )
    PaymentFactory(status="approved", captured_amount=Decimal("250.00"))
    tree = page_in(admin_client, "en")
    link = tree.one("a", id="to-ship-link")
    assert link.text == "3 orders waiting to be shipped"
    assert listed(admin_client, link.attrs["href"]) == {o.pk for o in to_ship}
    assert tree.one(id="held-amount").text == "$3,290.00"
    held_link = tree.one("a", id="held-link")
    assert held_link.text == "in 2 authorizations not captured yet"
    assert listed(admin_client, held_link.attrs["href"]) == {soon.pk, later.pk}
    expiries = tree.one("table", id="held-expiries").one("tbody").find_all("tr")
    assert [row.one("a").attrs["href"] for row in expiries] == [
        reverse("admin:payments_payment_change", args=[p.pk]) for p in (soon, later)
    ]
    assert "1 day left" in expiries[0].text
    assert [row.classes for row in expiries] == [{"owner-urgent"}, set()]  # within 3 days
    assert "20 days left" in expiries[1].text


CHANGE_PAGE = re.compile(r"/admin/\w+/\w+/(\d+)/change/")


def listed(client: Client, href: str) -> set[int]:
    """The rows an admin list shows at `href` (their ids, from each row's link to its page)."""
    response = client.get(href)
    assert response.status_code == 200
    table = html(response).find("table", id="result_list")
    if table is None:
        return set()
    rows = table.one("tbody").find_all("tr")
    ids = [CHANGE_PAGE.search(row.find_all("a")[0].attrs["href"]) for row in rows]
    assert all(ids)
    return {int(match.group(1)) for match in ids if match}


@pytest.fixture
def needs_attention(db: None) -> dict[str, set[int]]:
    """Two attempts of unknown outcome, notifications failed both ways, orders with mails
    not sent in time; and rows of each kind that need nothing."""
    unknown = {PaymentFactory(status="unknown").pk for _ in range(2)}
    PaymentFactory(status="creating")
    PaymentFactory(status="failed")
    given_up = {WebhookEventFactory(state="failed", last_error=f"{GAVE_UP}timeout").pk}
    staff = {
        WebhookEventFactory(state="failed", last_error="unknown payment").pk,
        WebhookEventFactory(state="failed", last_error="").pk,
    }
    WebhookEventFactory(state="processed")
    WebhookEventFactory(state="received", last_error=f"{GAVE_UP}before")
    late = OrderFactory(status="paid")
    long_ago = timezone.now() - timedelta(hours=2)
    OrderMail.objects.create(order=late, kind="received", key="received", created_at=long_ago)
    OrderMail.objects.create(order=late, kind="paid", key="paid", created_at=long_ago)
    other = OrderFactory(status="paid")
    OrderMail.objects.create(order=other, kind="received", key="received", created_at=long_ago)
    just_due = OrderFactory(status="paid")  # its task has not had its chance yet
    OrderMail.objects.create(order=just_due, kind="received", key="received")
    sent = OrderFactory(status="paid")
    OrderMail.objects.create(
        order=sent, kind="received", key="received", created_at=long_ago, sent_at=long_ago
    )
    return {
        "attention-unknown": unknown,
        "attention-notifications-given-up": given_up,
        "attention-notifications-failed": staff,
        "attention-mails": {late.pk, other.pk},
    }


@pytest.mark.parametrize("language", ["es", "en"])
def test_each_attention_link_lists_exactly_what_it_counts(
    needs_attention: dict[str, set[int]], admin_client: Client, language: str
) -> None:
    """Attempts of unknown outcome, notifications given up on and left for staff, orders with
    a mail not sent in time: each counted, and its link opens the admin's list of exactly
    those rows."""
    tree = page_in(admin_client, language)
    for link_id, rows in needs_attention.items():
        link = tree.one("a", id=link_id)
        assert link.text.split()[0] == str(len(rows)), link.text
        assert listed(admin_client, link.attrs["href"]) == rows, link_id


def test_spanish_and_english_texts(
    needs_attention: dict[str, set[int]], admin_client: Client
) -> None:
    """The dashboard speaks the staff member's language."""
    spanish = page_in(admin_client, "es").one(id="owner-dashboard").text
    english = page_in(admin_client, "en").one(id="owner-dashboard").text
    assert "La tienda de un vistazo" in spanish
    assert "Necesita atención" in spanish
    assert "2 intentos de pago cuyo resultado se desconoce" in spanish
    assert "The shop at a glance" in english
    assert "2 payment attempts whose outcome is unknown" in english
    assert "Needs attention" not in spanish and "Necesita atención" not in english


def staff(*permissions: str) -> Client:
    user = get_user_model().objects.create_user("staff-" + "-".join(permissions), is_staff=True)
    for name in permissions:
        app_label, codename = name.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client = Client()
    sign_in_staff(client, user)
    return client


def test_consulta_sees_the_dashboard(
    frozen: None, sales_rows: None, needs_attention: dict[str, set[int]]
) -> None:
    """The demo's read-only account sees every part of the dashboard and may open its links."""
    call_command("seed_demo", verbosity=0)
    client = Client()
    sign_in_staff(client, get_user_model().objects.get(username="consulta"))
    tree = page_in(client, "es")
    assert cells(tree, "sales-today") == ["$2,379.00", "3", "$120.50", "1"]
    for link_id, rows in needs_attention.items():
        assert listed(client, tree.one("a", id=link_id).attrs["href"]) == rows
    assert tree.find("a", id="to-ship-link") is not None
    assert tree.find(id="held-amount") is not None


def test_staff_without_permissions_see_no_figures(
    frozen: None, sales_rows: None, needs_attention: Any
) -> None:
    """A staff member who may view nothing sees no dashboard at all: no amount, no count, no
    link; one who may view orders only sees the orders' parts, and no money."""
    nothing = page_in(staff(), "en")
    assert nothing.find(id="owner-dashboard") is None
    text = nothing.text
    assert "$" not in text
    orders_only = page_in(staff("checkout.view_order", "checkout.view_ordermail"), "en")
    dashboard = orders_only.one(id="owner-dashboard")
    assert "$" not in dashboard.text
    assert dashboard.find(id="owner-sales") is None and dashboard.find(id="owner-held") is None
    hrefs = [a.attrs["href"] for a in dashboard.find_all("a")]
    assert hrefs and all(
        href.startswith(reverse("admin:checkout_order_changelist")) for href in hrefs
    )
    payments_without_refunds = page_in(staff("payments.view_payment"), "en")
    assert cells(payments_without_refunds, "sales-today") == ["$2,379.00", "3"]
    assert payments_without_refunds.find(id="attention-mails") is None
    assert payments_without_refunds.find(id="to-ship-link") is None


def many_rows() -> None:
    """A few more of every kind of row the dashboard reads."""
    for n in range(15):
        at = timezone.now() - timedelta(days=n * 2, hours=1)
        payment = charge(at, "100.00")
        RefundFactory(payment=payment, created_at=at)
        PaymentFactory(held=True, authorization_expires_at=at + timedelta(days=30))
        PaymentFactory(status="unknown")
        OrderFactory(status="paid")
        WebhookEventFactory(state="failed", last_error=f"{GAVE_UP}timeout")
        order = OrderFactory(status="paid")
        OrderMail.objects.create(
            order=order, kind="received", key="k", created_at=at - timedelta(hours=1)
        )


def queries_of_the_page(client: Client) -> list[str]:
    """The page's queries, with nothing kept in the cache (the past days' charges)."""
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        assert client.get(INDEX).status_code == 200
    return [query["sql"] for query in queries.captured_queries]


def test_the_page_costs_the_same_queries_with_few_rows_or_many(admin_client: Client) -> None:
    """The home page runs as many queries with a month of rows as with none (and fewer when the
    past days' charges are in the cache)."""
    admin_client.get(INDEX)  # the session and the user, as any later request has them
    empty = queries_of_the_page(admin_client)
    many_rows()
    full = queries_of_the_page(admin_client)
    assert len(full) == len(empty)
    assert Payment.objects.count() > 40 and WebhookEvent.objects.count() == 15
    assert Order.objects.count() == 30


def test_every_query_of_the_dashboard_is_served_by_an_index(admin_user: Any) -> None:
    """No query of the dashboard reads a whole table: each is a range or an aggregate that an
    index serves (PostgreSQL's plans with sequential scans off)."""
    many_rows()
    with CaptureQueriesContext(connection) as queries:
        owner_dashboard(user=admin_user)
    assert len(queries.captured_queries) == 10
    for query in queries.captured_queries:
        plan = plan_of(query["sql"])
        assert "Seq Scan" not in plan, f"{query['sql']}\n{plan}"


def test_the_past_days_charges_are_kept_until_one_more_is_dated_before_today(
    admin_user: Any,
) -> None:
    """The past days' charges are summed once and then read from the cache; a charge entry
    dated before today that comes later is counted at once."""
    many_rows()
    cache.clear()
    first = owner_dashboard(user=admin_user)
    with CaptureQueriesContext(connection) as queries:
        again = owner_dashboard(user=admin_user)
    assert len(queries.captured_queries) == 9  # the past days' sum not run again
    assert again.sales == first.sales

    charge(timezone.now() - timedelta(days=3), "250.00")
    later = owner_dashboard(user=admin_user)

    assert first.sales is not None and later.sales is not None
    assert later.sales.month.charged.amount == first.sales.month.charged.amount + Decimal("250")
