"""The old date hierarchy's addresses of a staff list (`?created_at__year=2026&created_at__month=3&
created_at__day=14`, saved links and bookmarks) and the day comparisons (`created_at__date=…`)
are answered by a range of the date column, which its index serves (core.admin_lists), where
Django reads `EXTRACT(…)` or `AT TIME ZONE` of every row: the same rows as before, the day's,
month's or year's in the shop's time zone, its midnights and clock changes included. A date that
no range says, or that is no date, is refused with a message (in the staff's language) and the
list shows every date: a page, never an error.

Rows are written straight to the database (no provider)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.core.test_admin_lists import LISTS, Listing, shown

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

SHOP = ZoneInfo("America/Mexico_City")  # settings.TIME_ZONE
ORDERS = LISTS["orders"]
INSTANT = timedelta(microseconds=1)
ERRORS = re.compile(r'<li class="error">(.*?)</li>', re.S)


def at(*parts: int, zone: ZoneInfo = SHOP) -> datetime:
    """The instant of that wall-clock time in `zone`, in UTC (so that `- INSTANT` is the instant
    before it, not the wall-clock time before it)."""
    return datetime(*parts, tzinfo=zone).astimezone(UTC)  # type: ignore[misc]


def listed(client: Client, listing: Listing, params: dict[str, str]) -> tuple[set[Any], str]:
    """The rows the list shows for `params`, and the SQL of its queries on the listed table."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(listing.url, params)
    rows = {row.pk for row in shown(response)}
    table = f'FROM "{response.context["cl"].model._meta.db_table}"'
    return rows, "\n".join(q["sql"] for q in queries.captured_queries if table in q["sql"])


def assert_ranged(sql: str, column: str, bounds: tuple[str, ...] = (">=", "<")) -> None:
    """The list's count and page compare the column itself (`>=`, `<`: its index serves them),
    never a part of its date computed row by row."""
    assert sql, "the list read no rows"
    assert all(sql.count(f'{column}" {bound} ') >= 2 for bound in bounds), sql
    assert "EXTRACT" not in sql and "AT TIME ZONE" not in sql, sql


def rows_at(listing: Listing, *moments: datetime) -> list[Any]:
    return [listing.add(1, **{listing.date_field: moment})[0].pk for moment in moments]


def errors(response: Any) -> list[str]:
    assert response.status_code == 200, response
    return [unescape(text).strip() for text in ERRORS.findall(response.content.decode())]


# --- The rows of a day, a month, a year -------------------------------------------------------

# The address's parts, the period's first instant in the shop's time zone and the first after it.
PERIODS = {
    "a day": ({"year": "2026", "month": "3", "day": "14"}, at(2026, 3, 14), at(2026, 3, 15)),
    "a month": ({"year": "2026", "month": "2"}, at(2026, 2, 1), at(2026, 3, 1)),
    "December": ({"year": "2025", "month": "12"}, at(2025, 12, 1), at(2026, 1, 1)),
    "a year": ({"year": "2026"}, at(2026, 1, 1), at(2027, 1, 1)),
    # Mexico City's last clock changes: a day of 23 hours, a day of 25 hours.
    "a day clocks go forward": (
        {"year": "2022", "month": "4", "day": "3"},
        at(2022, 4, 3),
        at(2022, 4, 4),
    ),
    "a day clocks go back": (
        {"year": "2022", "month": "10", "day": "30"},
        at(2022, 10, 30),
        at(2022, 10, 31),
    ),
    "a month clocks go back": ({"year": "2022", "month": "10"}, at(2022, 10, 1), at(2022, 11, 1)),
}


@pytest.mark.parametrize("period", PERIODS)
def test_a_dated_address_lists_the_orders_of_its_day_month_or_year(
    admin_client: Client, period: str
) -> None:
    """Given orders at the first and the last instant of a day (a month, a year) in the shop's
    time zone and just outside it, the date hierarchy's address lists the two inside, from a
    range of created_at."""
    parts, start, end = PERIODS[period]
    _, first, last, _ = rows_at(ORDERS, start - INSTANT, start, end - INSTANT, end)

    rows, sql = listed(admin_client, ORDERS, {f"created_at__{k}": v for k, v in parts.items()})

    assert rows == {first, last}
    assert_ranged(sql, "created_at")


@pytest.mark.parametrize("name", LISTS)
def test_every_list_answers_its_dates_by_a_range_of_its_date_column(
    admin_client: Client, name: str
) -> None:
    """Orders, payments, notifications and subscriptions: a day's address lists the day's rows
    of the list's date column (created_at, received_at) through a range of that column."""
    listing = LISTS[name]
    column = listing.date_field
    _, first, last, _ = rows_at(
        listing, at(2026, 3, 13, 23, 59), at(2026, 3, 14), at(2026, 3, 14, 23, 59), at(2026, 3, 15)
    )
    params = {f"{column}__year": "2026", f"{column}__month": "3", f"{column}__day": "14"}

    rows, sql = listed(admin_client, listing, params)

    assert rows == {first, last}
    assert_ranged(sql, column)


def test_a_day_where_the_clock_skips_midnight_starts_at_the_change(
    admin_client: Client, settings: Any
) -> None:
    """In a shop whose time zone skips midnight (Santiago, 11 September 2022: 00:00 is 01:00),
    the day starts at the clock change: an order one instant before is the 10th's."""
    settings.TIME_ZONE = "America/Santiago"
    santiago = ZoneInfo("America/Santiago")
    change = at(2022, 9, 11, 1, zone=santiago)  # the first instant of the 11th
    before, first, last, _ = rows_at(
        ORDERS, change - INSTANT, change, at(2022, 9, 12, zone=santiago) - INSTANT,
        at(2022, 9, 12, zone=santiago),
    )  # fmt: skip

    day, sql = listed(
        admin_client,
        ORDERS,
        {"created_at__year": "2022", "created_at__month": "9", "created_at__day": "11"},
    )
    eve, _ = listed(admin_client, ORDERS, {"created_at__date": "2022-09-10"})

    assert day == {first, last} and before in eve and first not in eve
    assert_ranged(sql, "created_at")


# What the address asks of created_at, which of 4 orders (at 23:30 on 13, 14, 15 and 16 March)
# it lists, and the bounds of created_at that say it.
COMPARISONS = {
    "date": ({"created_at__date": "2026-03-14"}, {14}, (">=", "<")),
    "date exact": ({"created_at__date__exact": "2026-03-14"}, {14}, (">=", "<")),
    "date gte": ({"created_at__date__gte": "2026-03-15"}, {15, 16}, (">=",)),
    "date gt": ({"created_at__date__gt": "2026-03-14"}, {15, 16}, (">=",)),
    "date lt": ({"created_at__date__lt": "2026-03-14"}, {13}, ("<",)),
    "date lte": ({"created_at__date__lte": "2026-03-14"}, {13, 14}, ("<",)),
    "dates between": (
        {"created_at__date__gte": "2026-03-14", "created_at__date__lte": "2026-03-15"},
        {14, 15},
        (">=", "<"),
    ),
    "a year, then before a day": (
        {"created_at__year__gte": "2026", "created_at__date__lt": "2026-03-15"},
        {13, 14},
        (">=", "<"),
    ),
    "a year, a month, a day": (
        {"created_at__year__exact": "2026", "created_at__month": "3", "created_at__day": "16"},
        {16},
        (">=", "<"),
    ),
}


@pytest.mark.parametrize("asked", COMPARISONS)
def test_a_date_comparison_lists_its_days_from_a_range(admin_client: Client, asked: str) -> None:
    """`created_at__date=…` and the comparisons of a day or a year list the same orders as
    Django's, each of them from a range of created_at, in the shop's time zone (an order at
    23:30 on the 13th is the 13th's, though it is the 14th in UTC)."""
    params, days, bounds = COMPARISONS[asked]
    moments = [at(2026, 3, day, 23, 30) for day in (13, 14, 15, 16)]
    orders = dict(zip((13, 14, 15, 16), rows_at(ORDERS, *moments), strict=True))

    rows, sql = listed(admin_client, ORDERS, params)

    assert rows == {orders[day] for day in days}
    assert_ranged(sql, "created_at", bounds)


def test_a_dated_list_runs_the_queries_of_the_whole_list(admin_client: Client) -> None:
    """A day's address adds no query to the list's: its range is one more condition of the
    count and of the page."""
    rows_at(ORDERS, at(2026, 3, 14, 12), at(2026, 3, 15, 12))
    admin_client.get(ORDERS.url)  # the session and permissions warmed up
    day = {"created_at__year": "2026", "created_at__month": "3", "created_at__day": "14"}

    with CaptureQueriesContext(connection) as whole:
        admin_client.get(ORDERS.url)
    with CaptureQueriesContext(connection) as dated:
        response = admin_client.get(ORDERS.url, day)

    assert len(shown(response)) == 1 and errors(response) == []
    assert len(dated) == len(whole)
    assert_ranged("\n".join(q["sql"] for q in dated.captured_queries), "created_at")


# --- Refused ------------------------------------------------------------------------------------

NOT_A_DATE = "is not a date: the list shows every date."
NOT_A_RANGE = "which would read every row"
REFUSED = {
    "month 13": ({"created_at__year": "2026", "created_at__month": "13"}, NOT_A_DATE),
    "31 February": (
        {"created_at__year": "2026", "created_at__month": "2", "created_at__day": "31"},
        NOT_A_DATE,
    ),
    "a year in words": ({"created_at__year": "twenty"}, NOT_A_DATE),
    "a negative year": ({"created_at__year": "-2026"}, NOT_A_DATE),
    "an empty month": ({"created_at__year": "2026", "created_at__month": ""}, NOT_A_DATE),
    "other digits": ({"created_at__year": "٢٠٢٦"}, NOT_A_DATE),
    "30 February": ({"created_at__date": "2026-02-30"}, NOT_A_DATE),
    "a date in words": ({"created_at__date__gte": "yesterday"}, NOT_A_DATE),
    "a day without a month": ({"created_at__year": "2026", "created_at__day": "14"}, NOT_A_RANGE),
    "a month without a year": ({"created_at__month": "3"}, NOT_A_RANGE),
    "a weekday": ({"created_at__week_day": "2"}, NOT_A_RANGE),
    "an hour": ({"created_at__hour": "12"}, NOT_A_RANGE),
    "months after": ({"created_at__year": "2026", "created_at__month__gt": "3"}, NOT_A_RANGE),
    "a time": ({"created_at__time__lt": "12:00"}, NOT_A_RANGE),
}


@pytest.mark.parametrize("asked", REFUSED)
def test_a_date_the_list_cannot_range_is_refused_with_a_message(
    admin_client: Client, asked: str
) -> None:
    """A date that is none, or that no range of created_at says (it would read every row),
    gives the list of every order (200, not an error page) with a message that quotes the
    address and says why; the page's links no longer carry it."""
    params, why = REFUSED[asked]
    orders = set(rows_at(ORDERS, at(2026, 3, 14, 12), at(2025, 7, 1, 9)))

    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(ORDERS.url, {**params, "status__exact": "paid"})

    said = errors(response)
    assert len(said) == 1 and why in said[0], said
    assert all(f"{key}={value}" in said[0] for key, value in params.items()), said
    assert {order.pk for order in shown(response)} == orders
    sql = "\n".join(q["sql"] for q in queries.captured_queries)
    assert "EXTRACT" not in sql and "AT TIME ZONE" not in sql
    links = response.context["cl"].get_query_string()
    assert "status__exact=paid" in links and not any(key in links for key in params)


def test_a_refused_date_leaves_the_other_dates_and_filters(admin_client: Client) -> None:
    """A refused date of one column leaves the list's other filters: the orders paid on the
    day asked, with a message for the weekday."""
    day, _ = rows_at(ORDERS, at(2026, 3, 14, 12), at(2026, 3, 15, 12))

    response = admin_client.get(
        ORDERS.url,
        {"created_at__date": "2026-03-14", "updated_at__week_day": "2", "status__exact": "paid"},
    )

    assert len(errors(response)) == 1 and "updated_at__week_day=2" in errors(response)[0]
    assert {order.pk for order in shown(response)} == {day}


def test_the_refusal_is_said_in_spanish(admin_client: Client, settings: Any) -> None:
    """The staff member's language: Spanish."""
    settings.LANGUAGE_CODE = "es"
    rows_at(ORDERS, at(2026, 3, 14, 12))

    month_13 = {"created_at__year": "2026", "created_at__month": "13"}
    not_a_date = admin_client.get(ORDERS.url, month_13)
    not_a_range = admin_client.get(ORDERS.url, {"created_at__week_day": "2"})

    assert errors(not_a_date) == [
        "«created_at__year=2026&created_at__month=13» no es una fecha: la lista muestra todas "
        "las fechas."
    ]
    (refused,) = errors(not_a_range)
    assert refused.startswith("La lista no filtra por «created_at__week_day=2»"), refused
