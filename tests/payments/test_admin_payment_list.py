"""The payments admin's list, on rows written straight to the database: each payment's
reference, status badge, amounts, card and expiry, the filters and the search, and a number of
queries that does not grow with the rows."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.html import strip_tags

from payments.models import CaptureMethod
from payments.statuses import PaymentStatus
from tests.payments.helpers import CHANGELIST, money, stored_payment

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]


CELLS = {
    "status": "status_badge",
    "amount": "amount_shown",
    "captured": "captured_shown",
    "refunded": "refunded_shown",
    "card": "card",
    "expires": "expires",
}


def row_cells(response: Any, reference: str) -> dict[str, str]:
    """The list row of one order reference: its cells' inner HTML by column."""
    html = response.content.decode()
    row = next(r for r in re.findall(r"<tr>.*?</tr>", html, re.S) if f">{reference}</a>" in r)
    return {
        name: re.search(rf'class="field-{field}[^"]*">(.*?)</td>', row, re.S).group(1).strip()
        for name, field in CELLS.items()
    }


def references(response: Any) -> set[str]:
    return {p.external_reference for p in response.context["cl"].result_list}


def test_list_shows_reference_badge_amounts_card_and_expiry(admin_client: Client) -> None:
    """The list shows the order reference, a status badge, amounts, brand •••• digits, expiry."""
    now = timezone.now()
    stored_payment(
        "ORD-LATER1",
        status=PaymentStatus.AUTHORIZED,
        capture_method=CaptureMethod.MANUAL,
        amount=Decimal("480.50"),
        captured_amount=Decimal("0"),
        card_brand="master",
        card_last_digits="4444",
        authorized_at=now,
        authorization_expires_at=now + timedelta(days=10, hours=1),
    )
    stored_payment(
        "ORD-SOON01",
        status=PaymentStatus.AUTHORIZED,
        capture_method=CaptureMethod.MANUAL,
        amount=Decimal("99.90"),
        captured_amount=Decimal("0"),
        authorized_at=now - timedelta(days=28),
        authorization_expires_at=now + timedelta(days=2, hours=1),
    )
    stored_payment("ORD-PAID01", amount=Decimal("300.00"), refunded_amount=Decimal("120.00"))

    response = admin_client.get(reverse(CHANGELIST))

    assert response.status_code == 200
    later, soon, paid = (row_cells(response, r) for r in ("ORD-LATER1", "ORD-SOON01", "ORD-PAID01"))
    assert re.fullmatch(r'<span style="background:#1d4ed8;[^>]*>Authorized</span>', later["status"])
    assert re.fullmatch(r'<span style="background:#067647;[^>]*>Approved</span>', paid["status"])
    assert [money(later[c]) for c in ("amount", "captured", "refunded")] == [
        Decimal("480.50"),
        Decimal("0"),
        Decimal("0"),
    ]
    assert [money(paid[c]) for c in ("amount", "captured", "refunded")] == [
        Decimal("300.00"),
        Decimal("100.00"),
        Decimal("120.00"),
    ]
    assert strip_tags(later["card"]) == "master •••• 4444"
    assert strip_tags(paid["card"]) == "visa •••• 4242"
    assert later["expires"] == "expires in 10 days"
    assert soon["expires"] == '<strong style="color:#b42318">expires in 2 days</strong>'
    assert paid["expires"] == "—"


@pytest.mark.parametrize(
    ("remaining", "text", "highlighted"),
    [
        (timedelta(hours=-2), "expired", True),
        (timedelta(hours=1), "expires today", True),
        (timedelta(days=1, hours=1), "expires in 1 day", True),
        (timedelta(days=2, hours=1), "expires in 2 days", True),
        (timedelta(days=3, hours=1), "expires in 3 days", False),
        (timedelta(days=29, hours=1), "expires in 29 days", False),
    ],
)
def test_list_expiry_is_highlighted_under_three_days(
    admin_client: Client, remaining: timedelta, text: str, highlighted: bool
) -> None:
    """The expiry column counts whole days left and highlights fewer than 3."""
    stored_payment(
        "ORD-EXPI01",
        status=PaymentStatus.AUTHORIZED,
        capture_method=CaptureMethod.MANUAL,
        captured_amount=Decimal("0"),
        authorization_expires_at=timezone.now() + remaining,
    )

    cell = row_cells(admin_client.get(reverse(CHANGELIST)), "ORD-EXPI01")["expires"]

    expected = f'<strong style="color:#b42318">{text}</strong>' if highlighted else text
    assert cell == expected


def test_list_filters_by_status_capture_method_and_expiring_soon(admin_client: Client) -> None:
    """status, capture method and expiring=soon filters narrow the list to the matching rows."""
    now = timezone.now()
    stored_payment("ORD-APPR01")
    stored_payment("ORD-REJE01", status=PaymentStatus.REJECTED, captured_amount=Decimal("0"))
    stored_payment(
        "ORD-AUTH01",
        status=PaymentStatus.AUTHORIZED,
        capture_method=CaptureMethod.MANUAL,
        captured_amount=Decimal("0"),
        authorization_expires_at=now + timedelta(days=20),
    )
    stored_payment(
        "ORD-AUTH02",
        status=PaymentStatus.AUTHORIZED,
        capture_method=CaptureMethod.MANUAL,
        captured_amount=Decimal("0"),
        authorization_expires_at=now + timedelta(days=1),
    )
    url = reverse(CHANGELIST)

    assert references(admin_client.get(url, {"status__exact": "authorized"})) == {
        "ORD-AUTH01",
        "ORD-AUTH02",
    }
    assert references(admin_client.get(url, {"status__exact": "rejected"})) == {"ORD-REJE01"}
    assert references(admin_client.get(url, {"capture_method__exact": "automatic"})) == {
        "ORD-APPR01",
        "ORD-REJE01",
    }
    assert references(admin_client.get(url, {"expiring": "soon"})) == {"ORD-AUTH02"}
    assert references(admin_client.get(url)) == {
        "ORD-APPR01",
        "ORD-REJE01",
        "ORD-AUTH01",
        "ORD-AUTH02",
    }


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ("ORD-FIND01", {"ORD-FIND01"}),
        ("ord-find01", {"ORD-FIND01"}),
        ("9d1e0c55-aaaa-4bbb-8ccc-000000000002", {"ORD-OTHR02"}),
        ("9D1E0C55-AAAA-4BBB-8CCC-000000000002", {"ORD-OTHR02"}),
        ("Lupita@Example.com", {"ORD-OTHR02"}),
        ("1881", {"ORD-FIND01"}),
    ],
    ids=[
        "reference",
        "reference-any-case",
        "provider-id",
        "provider-id-any-case",
        "email",
        "last-digits",
    ],
)
def test_list_search(admin_client: Client, term: str, expected: set[str]) -> None:
    """Search finds payments by the exact order reference, provider id or customer email (in
    any case), or by the card's last 4 digits."""
    stored_payment(
        "ORD-FIND01",
        provider_id="3f2b8c1e-5d4a-4b6f-9e7d-2a1c0b9e8f7d",  # not random: it must not match
        card_last_digits="1881",
        customer_email="ana@example.com",
    )
    stored_payment(
        "ORD-OTHR02",
        provider_id="9d1e0c55-aaaa-4bbb-8ccc-000000000002",
        customer_email="lupita@example.com",
        card_last_digits="4242",
    )

    response = admin_client.get(reverse(CHANGELIST), {"q": term})

    assert response.status_code == 200
    assert references(response) == expected


@pytest.mark.parametrize(
    "term", ["FIND01", "ORD-FIND0", "9d1e0c55-aaaa", "lupita@", "example.com", "188", "18811"]
)
def test_list_search_needs_a_whole_key(admin_client: Client, term: str) -> None:
    """Part of a reference, a provider id, an email or the last digits finds nothing: each key
    is matched whole (by its index), not as a substring of every column."""
    stored_payment(
        "ORD-FIND01",
        provider_id="9d1e0c55-aaaa-4bbb-8ccc-000000000002",
        card_last_digits="1881",
        customer_email="lupita@example.com",
    )

    response = admin_client.get(reverse(CHANGELIST), {"q": term})

    assert response.status_code == 200
    assert references(response) == set()


# Session, user, the bounded count and the page of rows.
# +2: the staff member's actions finished and not told yet, and those in progress.
# +1: the session's second-factor device (django-otp's OTPMiddleware, by its primary key).
MAX_LIST_QUERIES = 7


def _list_queries(client: Client) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse(CHANGELIST))
    assert response.status_code == 200
    return len(queries)


def test_list_query_count_is_bounded_and_independent_of_rows(
    admin_client: Client, django_assert_max_num_queries: Any
) -> None:
    """The list page runs a bounded number of queries, the same for 3 and for 20 payments."""
    now = timezone.now()

    def add(count: int, start: int) -> None:
        for i in range(start, start + count):
            stored_payment(
                f"ORD-Q{i:05d}",
                status=PaymentStatus.AUTHORIZED if i % 2 else PaymentStatus.APPROVED,
                authorization_expires_at=now + timedelta(days=i % 5),
                card_last_digits=f"{1000 + i}",
            )

    add(3, 0)
    with django_assert_max_num_queries(MAX_LIST_QUERIES):
        response = admin_client.get(reverse(CHANGELIST))
    assert len(response.context["cl"].result_list) == 3
    with_three = _list_queries(admin_client)

    add(17, 3)
    with django_assert_max_num_queries(MAX_LIST_QUERIES):
        response = admin_client.get(reverse(CHANGELIST))
    assert len(response.context["cl"].result_list) == 20
    with_twenty = _list_queries(admin_client)

    assert with_twenty == with_three
