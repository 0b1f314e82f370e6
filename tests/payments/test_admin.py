"""The staff admin of payments and subscriptions, end to end against the live sandbox.

Action tests create payments through the real services (tests.payments.factories); list tests
write rows directly with Payment.objects.create to stay fast. Provider calls are counted with a
latency-only fault (its `hits`), read back from GET /_sandbox/faults.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from html import unescape
from typing import Any

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape, strip_tags

from payments.models import (
    CaptureMethod,
    Payment,
    PaymentEventKind,
    PaymentStatus,
    Refund,
    Subscription,
)
from payments.services import payment_refund, subscription_sync
from tests.payments.factories import create_payment
from tests.support import Api

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _in_english(settings: Any) -> None:
    """These tests read the staff's English texts (the Spanish admin is checked on its own)."""
    settings.LANGUAGE_CODE = "en"


# sandbox/provider/subscriptions.py SEED_SUBSCRIPTIONS
SEED_MARIA = "6f1c2a8e-3b4d-4e5f-9a7b-1c2d3e4f5a6b"
SEED_JORGE = "7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"
UNKNOWN_SUBSCRIPTION = "00000000-0000-4000-8000-000000000000"

VIEW_PAYMENTS = ("view_payment", "view_paymentevent", "view_refund")
CHANGELIST = "admin:payments_payment_changelist"
SUBSCRIPTIONS = "admin:payments_subscription_changelist"
LOGIN_PATH = "/admin/login/"


# --- Helpers ------------------------------------------------------------------------------------


@pytest.fixture
def make_staff(django_user_model: Any) -> Callable[..., Any]:
    """A user with the given payments permissions (codenames); staff unless told otherwise."""

    def make(username: str, *codenames: str, is_staff: bool = True) -> Any:
        user = django_user_model.objects.create_user(
            username=username, password="a-long-test-password", is_staff=is_staff
        )
        permissions = Permission.objects.filter(
            content_type__app_label="payments", codename__in=codenames
        )
        assert permissions.count() == len(codenames), codenames
        user.user_permissions.set(permissions)
        return user

    return make


def stored_payment(reference: str, **fields: Any) -> Payment:
    """A payment row written directly (no provider), for list tests."""
    values: dict[str, Any] = {
        "external_reference": reference,
        "idempotency_key": uuid.uuid4().hex,
        "capture_method": CaptureMethod.AUTOMATIC,
        "status": PaymentStatus.APPROVED,
        "amount": Decimal("100.00"),
        "captured_amount": Decimal("100.00"),
        "provider_id": str(uuid.uuid4()),
        "customer_email": "cliente@example.com",
        "card_brand": "visa",
        "card_last_digits": "4242",
        **fields,
    }
    return Payment.objects.create(**values)


def count_calls(provider: Api, path: str = "/", method: str | None = None) -> Callable[[], int]:
    """Count the shop's calls to the provider below `path` with a latency-only fault."""
    body: dict[str, Any] = {"path": path, "latency_ms": 1}
    if method:
        body["method"] = method
    response = provider.post("/_sandbox/faults", body)
    assert response.status_code == 201, response.text
    fault_id = response.json()["id"]

    def hits() -> int:
        faults = provider.get("/_sandbox/faults").json()
        return next(f["hits"] for f in faults if f["id"] == fault_id)

    return hits


def inject_fault(provider: Api, path: str, method: str, status: int = 500) -> Callable[[], int]:
    """Make the provider fail `method path` with `status`; returns a reader of its hits."""
    response = provider.post("/_sandbox/faults", {"path": path, "method": method, "status": status})
    assert response.status_code == 201, response.text
    fault_id = response.json()["id"]

    def hits() -> int:
        faults = provider.get("/_sandbox/faults").json()
        return next(f["hits"] for f in faults if f["id"] == fault_id)

    return hits


def messages_of(response: Any) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


def log_entries(obj: Any) -> Any:
    return LogEntry.objects.filter(
        content_type=ContentType.objects.get_for_model(type(obj)), object_id=str(obj.pk)
    )


def action_url(action: str, payment: Payment) -> str:
    return reverse(f"admin:payments_payment_{action}", args=[payment.pk])


def change_url(payment: Payment) -> str:
    return reverse("admin:payments_payment_change", args=[payment.pk])


def snapshot(payment: Payment) -> tuple[Any, ...]:
    payment.refresh_from_db()
    return (
        payment.status,
        payment.captured_amount,
        payment.refunded_amount,
        payment.provider_version,
        payment.intent,
    )


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


def inline_rows(html: str, prefix: str) -> list[dict[str, str]]:
    """The rows of an inline (`events`, `refunds`) on the payment page: cell text by field."""
    rows = re.findall(rf'<tr class="form-row[^"]*"\s+id="{prefix}-\d+">(.*?)</tr>', html, re.S)
    return [
        {
            field: strip_tags(text).strip()
            for field, text in re.findall(r'<td class="field-([a-z_]+)">(.*?)</td>', row, re.S)
        }
        for row in rows
    ]


def money(text: str) -> Decimal:
    """An amount as the admin writes it everywhere: $1,290.00."""
    assert re.fullmatch(r"\$\d{1,3}(,\d{3})*\.\d{2}", text), text
    return Decimal(text.removeprefix("$").replace(",", ""))


def references(response: Any) -> set[str]:
    return {p.external_reference for p in response.context["cl"].result_list}


def action_choices(response: Any) -> set[str]:
    form = response.context.get("action_form")
    if form is None:
        return set()
    return {value for value, _ in form.fields["action"].choices if value}


def amount_error(response: Any) -> tuple[str, str]:
    """The (code, text) of the amount field's first error on a re-rendered action form."""
    error = response.context["form"].errors.as_data()["amount"][0]
    text = response.context["form"].errors["amount"][0]
    return error.code or "", text


def authorized(provider: Api, amount: str = "250.00") -> Payment:
    payment = create_payment(provider, capture_method="manual", amount=amount)
    assert payment.status == PaymentStatus.AUTHORIZED
    return payment


def approved(provider: Api, amount: str = "250.00") -> Payment:
    payment = create_payment(provider, capture_method="automatic", amount=amount)
    assert payment.status == PaymentStatus.APPROVED
    return payment


# --- Payment list -------------------------------------------------------------------------------


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
        ("find01", {"ORD-FIND01"}),
        ("9d1e0c55-aaaa", {"ORD-OTHR02"}),
        ("lupita@", {"ORD-OTHR02"}),
        ("1881", {"ORD-FIND01"}),
    ],
    ids=["reference", "reference-partial", "provider-id", "email", "last-digits"],
)
def test_list_search(admin_client: Client, term: str, expected: set[str]) -> None:
    """Search finds payments by order reference, provider id, customer email or last digits."""
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


def test_list_last_digits_search_is_exact(admin_client: Client) -> None:
    """Last digits match exactly: part of them finds nothing."""
    # (a provider id of its own without those digits: a random one could contain them)
    stored_payment(
        "ORD-DIGI01",
        card_last_digits="1881",
        provider_id="5d5bd8be-ce75-4414-9f23-d1c979f4bc0c",
    )

    response = admin_client.get(reverse(CHANGELIST), {"q": "188"})

    assert references(response) == set()


# Session, user, two counts, the page of rows, the date hierarchy's range and days.
MAX_LIST_QUERIES = 8


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


# --- Payment page -------------------------------------------------------------------------------


def test_payment_page_shows_snapshot_ledger_and_refunds(
    provider: Api, admin_client: Client, admin_user: Any
) -> None:
    """The payment page shows the provider snapshot, every ledger row and the refunds."""
    payment = approved(provider, amount="400.00")
    payment_refund(payment=payment, amount=Decimal("150.00"), reason="Taza rota", actor=admin_user)
    payment.refresh_from_db()
    refund = Refund.objects.get(payment=payment)

    response = admin_client.get(change_url(payment))

    assert response.status_code == 200
    html = response.content.decode()
    shown = re.search(r'class="readonly"><pre[^>]*>(.*?)</pre>', html, re.S)
    assert shown, "no provider snapshot on the page"
    assert json.loads(unescape(shown.group(1))) == payment.snapshot
    assert payment.snapshot["id"] == payment.provider_id
    ledger = inline_rows(html, "events")
    assert [(row["kind"], row["new_status_shown"]) for row in ledger] == [
        ("Created", "Approved"),
        ("Refunded", "Approved"),
    ]
    assert money(ledger[1]["amount_shown"]) == Decimal("150.00")
    assert ledger[1]["actor"] == admin_user.username
    refunds = inline_rows(html, "refunds")
    assert len(refunds) == 1
    assert (refunds[0]["provider_id"], refunds[0]["reason"]) == (refund.provider_id, "Taza rota")
    assert money(refunds[0]["amount_shown"]) == Decimal("150.00")


@pytest.mark.parametrize(
    ("perms", "status", "visible"),
    [
        (
            ("capture_payment", "cancel_payment", "refund_payment"),
            "authorized",
            {"capture", "cancel"},
        ),
        (("capture_payment", "cancel_payment", "refund_payment"), "approved", {"refund"}),
        (("capture_payment",), "authorized", {"capture"}),
        (("cancel_payment",), "authorized", {"cancel"}),
        (("refund_payment",), "authorized", set()),
        (("refund_payment",), "approved", {"refund"}),
        (("capture_payment", "cancel_payment"), "approved", set()),
        ((), "authorized", set()),
        ((), "approved", set()),
        (("refresh_payment",), "approved", {"refresh"}),
    ],
)
def test_payment_page_action_links_follow_permission_and_status(
    provider: Api,
    client: Client,
    make_staff: Callable[..., Any],
    perms: tuple[str, ...],
    status: str,
    visible: set[str],
) -> None:
    """Capture/Cancel/Refund links and the Refresh button appear only with the matching
    permission and status."""
    payment = authorized(provider) if status == "authorized" else approved(provider)
    client.force_login(make_staff("clerk", *VIEW_PAYMENTS, *perms))

    response = client.get(change_url(payment))

    assert response.status_code == 200
    html = response.content.decode()
    shown = {a for a in ("capture", "cancel", "refund", "refresh") if f'id="action-{a}"' in html}
    assert shown == visible
    for action in visible:
        assert action_url(action, payment) in html


def test_superuser_sees_no_links_on_a_final_payment(admin_client: Client) -> None:
    """A cancelled payment offers no capture, cancel or refund, even to a superuser."""
    payment = stored_payment(
        "ORD-CANC01", status=PaymentStatus.CANCELLED, captured_amount=Decimal("0")
    )

    html = admin_client.get(change_url(payment)).content.decode()

    assert not re.search(r'id="action-(capture|cancel|refund)"', html)


# --- Capture ------------------------------------------------------------------------------------


def test_capture_form_defaults_to_the_full_amount(
    provider: Api, client: Client, admin_user: Any
) -> None:
    """GET shows the form prefilled with the authorized amount; posting it captures it all."""
    payment = authorized(provider, amount="250.00")
    client.force_login(admin_user)

    page = client.get(action_url("capture", payment))
    assert page.status_code == 200
    match = re.search(r'name="amount" value="([^"]*)"', page.content.decode())
    assert match, page.content.decode()
    assert Decimal(match.group(1)) == Decimal("250.00")

    response = client.post(action_url("capture", payment), {"amount": match.group(1)})

    assert response.status_code == 302
    assert response.url == change_url(payment)
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
    assert ("success", f"{payment.external_reference}: captured $250.00.") in messages_of(response)


def test_capture_a_partial_amount(provider: Api, client: Client, admin_user: Any) -> None:
    """Posting a smaller amount captures only that amount at the provider."""
    payment = authorized(provider, amount="250.00")
    client.force_login(admin_user)

    response = client.post(action_url("capture", payment), {"amount": "100.00"})

    assert response.status_code == 302
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
    client.force_login(admin_user)

    response = client.post(action_url("capture", payment), {"amount": amount})

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
    provider: Api, client: Client, admin_user: Any
) -> None:
    """GET shows a confirmation page and changes nothing; POST cancels at the provider."""
    payment = authorized(provider)
    calls = count_calls(provider)
    client.force_login(admin_user)

    page = client.get(action_url("cancel", payment))

    assert page.status_code == 200
    assert "Yes, cancel it" in page.content.decode()
    assert calls() == 0
    assert snapshot(payment)[0] == PaymentStatus.AUTHORIZED

    response = client.post(action_url("cancel", payment))

    assert response.status_code == 302
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
    provider: Api, client: Client, admin_user: Any
) -> None:
    """The refund form takes an amount and a reason; the refund is made and recorded."""
    payment = approved(provider, amount="300.00")
    client.force_login(admin_user)

    page = client.get(action_url("refund", payment))
    assert page.status_code == 200
    assert 'name="reason"' in page.content.decode()

    response = client.post(
        action_url("refund", payment), {"amount": "120.00", "reason": "Llegó rota"}
    )

    assert response.status_code == 302
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
    client.force_login(admin_user)

    page = client.get(action_url("refund", payment))
    prefilled = re.search(r'name="amount" value="([^"]*)"', page.content.decode())
    assert prefilled and Decimal(prefilled.group(1)) == Decimal("200.00")
    response = client.post(action_url("refund", payment), {"amount": "200.01", "reason": ""})

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
    client.force_login(admin_user)

    response = client.get(action_url("refresh", payment))

    assert response.status_code == 200
    assert '<form method="post"' in response.content.decode()
    assert calls() == 0


def test_refresh_applies_the_provider_state(provider: Api, client: Client, admin_user: Any) -> None:
    """POST refresh fetches the payment and applies what changed at the provider."""
    payment = authorized(provider, amount="250.00")
    captured = provider.patch(
        f"/payments/{payment.provider_id}",
        {"status": "approved", "paid_amount": Decimal("250.00")},
        headers={"Idempotency-Key": uuid.uuid4().hex},
    )
    assert captured.status_code == 200, captured.text
    client.force_login(admin_user)

    response = client.post(action_url("refresh", payment))

    assert response.status_code == 302
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
) -> None:
    """A 500 from the provider to every attempt: the action is sent 1 + 3 times with its key,
    then an error message that it was not confirmed (never that it was refused or not made),
    the payment unchanged, no admin log entry."""
    payment = approved(provider) if action == "refund" else authorized(provider)
    remote_before = provider.payment(payment.provider_id)
    before = snapshot(payment)
    hits = inject_fault(provider, path, method, 500)
    client.force_login(admin_user)

    response = client.post(action_url(action, payment), data)

    assert response.status_code == 302
    assert hits() == 4
    shown = messages_of(response)
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


# --- Permissions --------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["capture", "cancel", "refund"])
def test_staff_without_the_action_permission_get_403(
    provider: Api, client: Client, make_staff: Callable[..., Any], action: str
) -> None:
    """A staff user with view_payment but not the action's permission: 403 on GET and POST."""
    payment = approved(provider) if action == "refund" else authorized(provider)
    others = {"capture", "cancel", "refund"} - {action}
    client.force_login(make_staff("viewer", *VIEW_PAYMENTS, *(f"{o}_payment" for o in others)))
    before = snapshot(payment)
    calls = count_calls(provider)

    assert client.get(action_url(action, payment)).status_code == 403
    assert client.post(action_url(action, payment), {"amount": "10.00"}).status_code == 403

    assert calls() == 0
    assert snapshot(payment) == before
    assert not log_entries(payment).exists()


@pytest.mark.parametrize("action", ["capture", "cancel", "refund"])
def test_a_user_with_only_the_action_permission_can_do_it(
    provider: Api, client: Client, make_staff: Callable[..., Any], action: str
) -> None:
    """A staff user holding only the action's permission can open the form and run it."""
    payment = approved(provider) if action == "refund" else authorized(provider)
    user = make_staff("operator", f"{action}_payment")
    client.force_login(user)

    assert client.get(action_url(action, payment)).status_code == 200
    response = client.post(action_url(action, payment), {"amount": "50.00", "reason": "x"})

    assert response.status_code == 302
    payment.refresh_from_db()
    expected = {
        "capture": (PaymentStatus.APPROVED, Decimal("50.00"), Decimal("0")),
        "cancel": (PaymentStatus.CANCELLED, Decimal("0"), Decimal("0")),
        "refund": (PaymentStatus.APPROVED, Decimal("250.00"), Decimal("50.00")),
    }[action]
    assert (payment.status, payment.captured_amount, payment.refunded_amount) == expected
    assert payment.events.filter(actor=user).exists()
    assert log_entries(payment).get().user == user


@pytest.mark.parametrize("who", ["anonymous", "non-staff"])
@pytest.mark.parametrize("action", ["capture", "cancel", "refund", "refresh", "change", "list"])
def test_anonymous_and_non_staff_are_sent_to_login(
    client: Client, make_staff: Callable[..., Any], who: str, action: str
) -> None:
    """Without a staff session, every payments admin URL redirects to the admin login."""
    payment = stored_payment("ORD-LOGI01", status=PaymentStatus.AUTHORIZED)
    if who == "non-staff":
        client.force_login(make_staff("shopper", *VIEW_PAYMENTS, "capture_payment", is_staff=False))
    url = {
        "change": change_url(payment),
        "list": reverse(CHANGELIST),
    }.get(action) or action_url(action, payment)

    for response in (client.get(url), client.post(url, {"amount": "10.00"})):
        assert response.status_code == 302
        assert response.url.startswith(LOGIN_PATH)
    assert snapshot(payment)[0] == PaymentStatus.AUTHORIZED


def test_csrf_token_is_required_on_actions(provider: Api, admin_user: Any) -> None:
    """With CSRF checks on: POST without the token is 403; with the form's token it captures."""
    payment = authorized(provider)
    calls = count_calls(provider, "/payments", "PATCH")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)

    page = browser.get(action_url("capture", payment))
    assert page.status_code == 200
    token = browser.cookies["csrftoken"].value

    assert browser.post(action_url("capture", payment), {"amount": "250.00"}).status_code == 403
    assert browser.post(action_url("refresh", payment)).status_code == 403
    assert calls() == 0
    assert snapshot(payment)[0] == PaymentStatus.AUTHORIZED

    response = browser.post(
        action_url("capture", payment), {"amount": "250.00", "csrfmiddlewaretoken": token}
    )

    assert response.status_code == 302
    assert calls() == 1
    assert snapshot(payment)[0] == PaymentStatus.APPROVED


def test_csrf_token_is_required_on_bulk_actions(provider: Api, admin_user: Any) -> None:
    """A bulk action POST to the change list without the CSRF token is 403 and does nothing."""
    payment = authorized(provider)
    calls = count_calls(provider)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)

    response = browser.post(
        reverse(CHANGELIST),
        {"action": "capture_selected", "index": "0", "_selected_action": [payment.pk]},
    )

    assert response.status_code == 403
    assert calls() == 0
    assert snapshot(payment)[0] == PaymentStatus.AUTHORIZED


# --- Bulk actions -------------------------------------------------------------------------------


def _bulk(client: Client, action: str, *payments: Payment) -> Any:
    return client.post(
        reverse(CHANGELIST),
        {"action": action, "index": "0", "_selected_action": [p.pk for p in payments]},
    )


def test_bulk_capture_reports_each_row(provider: Api, client: Client, admin_user: Any) -> None:
    """capture_selected: one success and one failure message, one per selected payment."""
    good = authorized(provider)
    bad = approved(provider)
    client.force_login(admin_user)

    response = _bulk(client, "capture_selected", good, bad)

    assert response.status_code == 302
    shown = messages_of(response)
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


def test_bulk_cancel_reports_each_row(provider: Api, client: Client, admin_user: Any) -> None:
    """cancel_selected: the authorization is cancelled; the captured payment is refused."""
    good = authorized(provider)
    bad = approved(provider)
    client.force_login(admin_user)

    response = _bulk(client, "cancel_selected", good, bad)

    shown = messages_of(response)
    assert ("success", f"{good.external_reference}: cancelled.") in shown
    errors = [text for level, text in shown if level == "error"]
    assert len(errors) == 1 and errors[0].startswith(f"{bad.external_reference}: ")
    assert snapshot(good)[0] == PaymentStatus.CANCELLED
    assert provider.payment(good.provider_id)["status"] == "cancelled"
    assert snapshot(bad)[0] == PaymentStatus.APPROVED
    assert good.events.get(kind=PaymentEventKind.CANCELLED).actor == admin_user
    assert log_entries(good).get().user == admin_user


def test_bulk_refresh_reports_each_row(provider: Api, client: Client, admin_user: Any) -> None:
    """refresh_selected: a payment known to the provider refreshes; one without an id fails."""
    good = authorized(provider)
    bad = stored_payment("ORD-NOID01", status=PaymentStatus.FAILED, provider_id=None)
    client.force_login(admin_user)

    response = _bulk(client, "refresh_selected", good, bad)

    shown = messages_of(response)
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

    client.force_login(admin_user)
    assert all_actions <= action_choices(client.get(url))

    client.force_login(make_staff("viewer", *VIEW_PAYMENTS))
    response = client.get(url)
    assert action_choices(response) & all_actions == set()
    assert 'value="capture_selected"' not in response.content.decode()

    client.force_login(make_staff("reader", *VIEW_PAYMENTS, "refresh_payment"))
    assert action_choices(client.get(url)) & all_actions == {"refresh_selected"}

    client.force_login(make_staff("capturer", *VIEW_PAYMENTS, "capture_payment"))
    assert action_choices(client.get(url)) & all_actions == {"capture_selected"}


@pytest.mark.parametrize("action", ["capture_selected", "cancel_selected"])
def test_posting_a_bulk_action_without_permission_does_nothing(
    provider: Api, client: Client, make_staff: Callable[..., Any], action: str
) -> None:
    """A user without the permission posting the bulk action: no provider call, no change."""
    payment = authorized(provider)
    before = snapshot(payment)
    calls = count_calls(provider)
    client.force_login(make_staff("reader", *VIEW_PAYMENTS, "refresh_payment"))

    response = _bulk(client, action, payment)

    assert response.status_code == 302
    assert response.url == reverse(CHANGELIST)
    assert [level for level, _ in messages_of(response)] == ["warning"]  # no action selected
    assert calls() == 0
    assert snapshot(payment) == before
    assert not [m for m in messages_of(response) if m[0] == "success"]
    assert not log_entries(payment).exists()
    assert not payment.events.exclude(kind=PaymentEventKind.CREATED).exists()


# --- Subscriptions ------------------------------------------------------------------------------


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
    provider: Api, client: Client, admin_user: Any, subscriptions: list[Subscription]
) -> None:
    """The Cancel action first shows a confirmation page; confirmed=yes cancels (PUT)."""
    maria = subscriptions[0]
    puts = count_calls(provider, "/subscriptions", "PUT")
    client.force_login(admin_user)
    data = {"action": "cancel_selected", "index": "0", "_selected_action": [maria.pk]}

    page = client.post(reverse(SUBSCRIPTIONS), data)

    assert page.status_code == 200
    assert "admin/payments/subscription/cancel_confirm.html" in [t.name for t in page.templates]
    assert 'name="confirmed" value="yes"' in page.content.decode()
    assert puts() == 0
    assert _remote_subscription(provider, SEED_MARIA)["status"] == "active"
    maria.refresh_from_db()
    assert maria.status == "active"

    confirmed = {"action": "cancel_selected", "confirmed": "yes", "_selected_action": [maria.pk]}
    response = client.post(reverse(SUBSCRIPTIONS), confirmed)

    assert response.status_code == 302
    assert puts() == 1
    assert _remote_subscription(provider, SEED_MARIA)["status"] == "inactive"
    maria.refresh_from_db()
    assert maria.status == "inactive"
    assert ("success", f"{SEED_MARIA}: cancelled.") in messages_of(response)
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
    provider: Api, admin_user: Any, subscriptions: list[Subscription]
) -> None:
    """With CSRF checks, the confirmation page's own form cancels the selection; no token: 403."""
    maria = subscriptions[0]
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
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

    response = browser.post(url, fields)

    assert response.status_code == 302
    assert _remote_subscription(provider, SEED_MARIA)["status"] == "inactive"
    assert _remote_subscription(provider, SEED_JORGE)["status"] == "active"
    assert log_entries(maria).get().user == admin_user


def test_subscription_import_needs_the_csrf_token(provider: Api, admin_user: Any) -> None:
    """Import by id through a CSRF-checking client: 403 without the token, imports with it."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    url = reverse("admin:payments_subscription_import")
    assert browser.get(url).status_code == 200
    token = browser.cookies["csrftoken"].value

    assert browser.post(url, {"provider_id": SEED_MARIA}).status_code == 403
    assert not Subscription.objects.exists()

    response = browser.post(url, {"provider_id": SEED_MARIA, "csrfmiddlewaretoken": token})

    assert response.status_code == 302
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
    client.force_login(make_staff("viewer", "view_subscription"))

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


def test_subscription_import_by_id(provider: Api, client: Client, admin_user: Any) -> None:
    """Importing a seeded id stores the subscription, logs an addition and opens its page."""
    client.force_login(admin_user)
    url = reverse("admin:payments_subscription_import")

    assert client.get(url).status_code == 200
    response = client.post(url, {"provider_id": SEED_MARIA})

    subscription = Subscription.objects.get(provider_id=SEED_MARIA)
    assert response.status_code == 302
    assert response.url == reverse("admin:payments_subscription_change", args=[subscription.pk])
    assert subscription.price_id == "price_cafe_mensual"
    assert subscription.customer_email == "maria@example.com"
    assert subscription.status == "active"
    entry = log_entries(subscription).get()
    assert (entry.user, entry.action_flag) == (admin_user, ADDITION)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not-a-uuid", None),
        (UNKNOWN_SUBSCRIPTION, "The provider has no subscription with this id."),
    ],
    ids=["invalid", "unknown"],
)
def test_subscription_import_form_errors(
    provider: Api, client: Client, admin_user: Any, value: str, message: str | None
) -> None:
    """An invalid or unknown id re-renders the import form with an error; nothing stored."""
    client.force_login(admin_user)

    response = client.post(reverse("admin:payments_subscription_import"), {"provider_id": value})

    assert response.status_code == 200
    errors = response.context["form"].errors["provider_id"]
    assert errors
    if message:
        assert errors == [message]
    assert escape(errors[0]) in response.content.decode()
    assert not Subscription.objects.exists()
    assert not LogEntry.objects.exists()


def test_subscription_import_needs_add_subscription(
    provider: Api, client: Client, make_staff: Callable[..., Any]
) -> None:
    """Without add_subscription the import page is 403 on GET and POST; nothing is fetched."""
    calls = count_calls(provider, "/subscriptions")
    client.force_login(make_staff("viewer", "view_subscription", "cancel_subscription"))
    url = reverse("admin:payments_subscription_import")

    assert client.get(url).status_code == 403
    assert client.post(url, {"provider_id": SEED_MARIA}).status_code == 403
    assert calls() == 0
    assert not Subscription.objects.exists()

    page = client.get(reverse(SUBSCRIPTIONS))
    assert url not in page.content.decode()


# --- Demo accounts ------------------------------------------------------------------------------


def test_seed_demo_accounts_log_in_and_consulta_only_views(provider: Api) -> None:
    """seed_demo: admin and consulta log in; consulta sees payments but gets 403 on capture."""
    call_command("seed_demo")
    payment = authorized(provider)

    for username, password in (("admin", "tienda-demo-2026"), ("consulta", "consulta-demo-2026")):
        browser = Client()
        response = browser.post(
            LOGIN_PATH,
            {"username": username, "password": password, "next": reverse(CHANGELIST)},
        )
        assert response.status_code == 302, username
        assert response.url == reverse(CHANGELIST)
        assert browser.get(reverse(CHANGELIST)).status_code == 200

    consulta = Client()
    assert consulta.login(username="consulta", password="consulta-demo-2026")
    calls = count_calls(provider)

    page = consulta.get(change_url(payment))
    assert page.status_code == 200
    assert payment.external_reference in page.content.decode()
    assert not re.search(r'id="action-(capture|cancel|refund)"', page.content.decode())
    assert consulta.get(action_url("capture", payment)).status_code == 403
    assert consulta.post(action_url("capture", payment), {"amount": "250.00"}).status_code == 403
    assert calls() == 0
    assert snapshot(payment)[0] == PaymentStatus.AUTHORIZED
