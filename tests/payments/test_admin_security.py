"""Adversarial tests of the staff admin: who may run which payment action, and the rate limit
on admin logins (config/urls.py: per client address and per username, 429 beyond).

Already proven elsewhere, and not repeated here:
- tests/payments/test_admin_permissions.py: capture/cancel/refund are 403 (GET and POST, no
  provider call) for staff with view_payment but not the action's permission, and work with
  only that permission; anonymous and non-staff users are sent to the login; the `consulta`
  demo account cannot capture; CSRF on actions.
- tests/payments/test_admin_bulk_actions.py: capture_selected and cancel_selected posted
  without their permission do nothing; the bulk actions offered follow the permissions.
- tests/payments/test_admin_subscriptions.py: subscription cancel needs cancel_subscription;
  subscription import needs add_subscription.
- tests/webhooks/test_admin.py: retry/replay are not offered to, and do nothing for, staff who
  may only view events; with only `process_webhookevent` (no view) the list and the actions
  are 403; actions never run by GET.

Added here: the refresh URL and refresh_selected (which follow view_payment), staff holding
action permissions but not view, the permission checked before the payment is looked up,
deactivated staff, the delete/add/change routes of the read-only admins (refused even to a
superuser), actions requested by GET, subscription cancel without view, and webhook actions
for staff holding every payments permission. Provider calls are counted by a spy on the
client's transport that never lets a request out (the provider is "down"), so a request that
would have acted shows up as a call.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import django_ratelimit.core
import pytest
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checkout.models import Order
from payments.models import CaptureMethod, Payment, PaymentEvent, Refund, Subscription
from payments.statuses import PaymentStatus
from tests.factories import PaymentFactory
from tests.helpers.staff import authenticator, sign_in_staff
from webhooks.models import WebhookEvent, WebhookState

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]

PASSWORD = "a-long-test-password"
LOGIN = "/admin/login/"
CHANGELIST = "admin:payments_payment_changelist"
SUBSCRIPTIONS = "admin:payments_subscription_changelist"
WEBHOOK_EVENTS = "admin:webhooks_webhookevent_changelist"
PAYMENT_ACTIONS = {
    "capture": "payments.capture_payment",
    "cancel": "payments.cancel_payment",
    "refund": "payments.refund_payment",
    "refresh": "payments.view_payment",
}
ALL_PAYMENTS_PERMISSIONS = (
    "payments.view_payment",
    "payments.capture_payment",
    "payments.cancel_payment",
    "payments.refund_payment",
    "payments.view_subscription",
    "payments.add_subscription",
    "payments.cancel_subscription",
)
TOO_MANY = {
    "es": "Demasiados intentos. Espera unos minutos antes de intentarlo de nuevo.",
    "en": "Too many attempts. Please wait a few minutes before trying again.",
}
FULLWIDTH_ROOT = "\uff52\uff4f\uff4f\uff54"  # NFKC: "root"
# A day boundary: no window of the login limits (minutes) ends while a test runs.
PINNED = 1_900_000_000 - 1_900_000_000 % 86_400


# --- Fixtures and helpers -----------------------------------------------------------------------


class PinnedClock:
    """The rate limiter's clock (django_ratelimit reads `time.time()` for its windows)."""

    def time(self) -> float:
        return PINNED


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(django_ratelimit.core, "time", PinnedClock())


@pytest.fixture
def make_staff(django_user_model: Any) -> Callable[..., Any]:
    """A user with the given permissions ("app_label.codename"); staff unless told otherwise."""

    def make(username: str, *permissions: str, **flags: Any) -> Any:
        flags.setdefault("is_staff", True)
        user = django_user_model.objects.create_user(username=username, password=PASSWORD, **flags)
        found = [
            Permission.objects.get(content_type__app_label=app, codename=codename)
            for app, codename in (p.split(".") for p in permissions)
        ]
        user.user_permissions.set(found)
        return user

    return make


def logged_in(user: Any, **client_options: Any) -> Client:
    client = Client(**client_options)
    sign_in_staff(client, user)
    return client


def stored_payment(status: str = PaymentStatus.AUTHORIZED, **fields: Any) -> Payment:
    """A payment row written directly: an authorization by default, or an approved payment."""
    amount = Decimal("250.00")
    values: dict[str, Any] = {
        "external_reference": f"ORD-{uuid.uuid4().hex[:5].upper()}",
        "idempotency_key": uuid.uuid4().hex,
        "capture_method": CaptureMethod.MANUAL,
        "status": status,
        "amount": amount,
        "captured_amount": amount if status == PaymentStatus.APPROVED else Decimal("0"),
        "provider_id": str(uuid.uuid4()),
        "authorized_at": timezone.now(),
        **fields,
    }
    return PaymentFactory(**values)


def stored_subscription() -> Subscription:
    return Subscription.objects.create(
        provider_id=str(uuid.uuid4()),
        price_id="price_cafe_mensual",
        customer={"first_name": "María", "last_name": "González"},
        customer_email="maria@example.com",
        status="active",
    )


def action_url(action: str, pk: int) -> str:
    return reverse(f"admin:payments_payment_{action}", args=[pk])


def action_data(action: str) -> dict[str, str]:
    return {"amount": "10.00", "reason": "prueba"} if action in ("capture", "refund") else {}


def payment_for(action: str) -> Payment:
    return stored_payment(
        PaymentStatus.APPROVED if action == "refund" else PaymentStatus.AUTHORIZED
    )


def bulk(client: Client, url: str, action: str, *objects: Any, **extra: Any) -> Any:
    data = {"action": action, "index": "0", "_selected_action": [o.pk for o in objects], **extra}
    return client.post(url, data)


def rows(payment: Payment) -> tuple[Any, ...]:
    """What an action would change about a payment: its row, ledger, refunds and admin log."""
    payment.refresh_from_db()
    return (
        payment.status,
        payment.captured_amount,
        payment.refunded_amount,
        payment.intent,
        payment.last_synced_at,
        PaymentEvent.objects.filter(payment=payment).count(),
        Refund.objects.filter(payment=payment).count(),
        LogEntry.objects.count(),
    )


def offered(response: Any) -> set[str]:
    form = response.context.get("action_form") if response.context else None
    if form is None:
        return set()
    return {value for value, _ in form.fields["action"].choices if value}


# --- One payment: refresh, and permissions checked first ----------------------------------------


def test_refresh_needs_the_refresh_permission(
    make_staff: Callable[..., Any],
    calls: list[tuple[str, str]],
    run_queued: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Given staff holding capture, cancel and refund (or only view) but not refresh_payment,
    when they POST the refresh URL, then it is 403 and nothing is fetched; staff with
    refresh_payment do fetch."""
    payment = stored_payment()
    before = rows(payment)
    blind = logged_in(
        make_staff(
            "operator",
            "payments.capture_payment",
            "payments.cancel_payment",
            "payments.refund_payment",
        )
    )

    viewer = logged_in(make_staff("viewer", "payments.view_payment"))

    refused = blind.post(action_url("refresh", payment.pk))
    also_refused = viewer.post(action_url("refresh", payment.pk))

    assert (refused.status_code, also_refused.status_code) == (403, 403)
    assert calls == []
    assert rows(payment) == before

    reader = logged_in(make_staff("reader", "payments.view_payment", "payments.refresh_payment"))
    with django_capture_on_commit_callbacks(execute=True):
        allowed = reader.post(action_url("refresh", payment.pk))

    assert allowed.status_code == 302
    assert calls == []  # asked: its task reads the provider
    assert run_queued() == ["payments.tasks.staff_action_run_task"]
    assert calls == [("GET", f"/payments/{payment.provider_id}")]


@pytest.mark.parametrize("action", ["capture", "cancel", "refund", "refresh"])
def test_the_permission_is_checked_before_the_payment_is_looked_up(
    make_staff: Callable[..., Any], calls: list[tuple[str, str]], action: str
) -> None:
    """Given staff without the action's permission, when they POST the action for an existing
    and for a missing payment id, then both are 403: the answer tells nothing about which ids
    exist, and nothing is called."""
    payment = payment_for(action)
    others = [p for a, p in PAYMENT_ACTIONS.items() if a != action and p != "payments.view_payment"]
    client = logged_in(make_staff("someone", *others))

    existing = client.post(action_url(action, payment.pk), action_data(action))
    missing = client.post(action_url(action, payment.pk + 10_000), action_data(action))

    assert (existing.status_code, missing.status_code) == (403, 403)
    assert calls == []


@pytest.mark.parametrize("action", ["capture", "cancel", "refund", "refresh"])
def test_deactivated_staff_lose_every_action_at_once(
    django_user_model: Any, calls: list[tuple[str, str]], action: str
) -> None:
    """Given a superuser who is logged in and then deactivated, when their open session POSTs
    an action, then they are sent to the login and nothing is done."""
    payment = payment_for(action)
    before = rows(payment)
    user = django_user_model.objects.create_superuser("leaver", "leaver@example.com", PASSWORD)
    client = logged_in(user)
    django_user_model.objects.filter(pk=user.pk).update(is_active=False)

    response = client.post(action_url(action, payment.pk), action_data(action))
    listing = bulk(client, reverse(CHANGELIST), "capture_selected", payment)

    for answer in (response, listing):
        assert answer.status_code == 302
        assert answer.url.startswith(LOGIN)
    assert calls == []
    assert rows(payment) == before


# --- Bulk actions -------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["capture_selected", "cancel_selected", "refresh_selected"])
def test_bulk_actions_without_the_view_permission_are_403(
    make_staff: Callable[..., Any], calls: list[tuple[str, str]], action: str
) -> None:
    """Given staff holding capture, cancel and refund but not view_payment, when they post a
    bulk action to the payment list, then it is 403 and nothing is called or changed (the list
    itself, and so each of its actions, needs view_payment)."""
    payment = stored_payment()
    before = rows(payment)
    client = logged_in(
        make_staff(
            "blind",
            "payments.capture_payment",
            "payments.cancel_payment",
            "payments.refund_payment",
        )
    )

    response = bulk(client, reverse(CHANGELIST), action, payment)

    assert response.status_code == 403
    assert calls == []
    assert rows(payment) == before


def test_refresh_selected_is_what_the_refresh_permission_permits(
    make_staff: Callable[..., Any],
    calls: list[tuple[str, str]],
    run_queued: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Given staff who may view and refresh payments, when they run refresh_selected, then it
    is run (a refresh only reads the provider), while capture_selected posted by them calls
    nothing (already covered for cancel_selected in test_admin_bulk_actions.py)."""
    payment = stored_payment()
    client = logged_in(make_staff("reader", "payments.view_payment", "payments.refresh_payment"))

    capture = bulk(client, reverse(CHANGELIST), "capture_selected", payment)
    assert capture.status_code == 302
    assert calls == []

    with django_capture_on_commit_callbacks(execute=True):
        refresh = bulk(client, reverse(CHANGELIST), "refresh_selected", payment)

    assert refresh.status_code == 302
    assert run_queued() == ["payments.tasks.staff_action_run_task"]
    assert calls == [("GET", f"/payments/{payment.provider_id}")]


@pytest.mark.parametrize(
    ("changelist", "action", "make"),
    [
        (CHANGELIST, "capture_selected", stored_payment),
        (SUBSCRIPTIONS, "cancel_selected", stored_subscription),
    ],
    ids=["payments", "subscriptions"],
)
def test_actions_are_never_run_by_get(
    admin_client: Client,
    calls: list[tuple[str, str]],
    changelist: str,
    action: str,
    make: Callable[[], Any],
) -> None:
    """Given a superuser, when an action is requested with GET parameters (a link or an image
    on another site), then it does not run: nothing is called."""
    obj = make()
    query = f"?action={action}&_selected_action={obj.pk}&index=0&confirmed=yes"

    response = admin_client.get(reverse(changelist) + query)

    assert response.status_code in (200, 302)
    assert calls == []
    assert not LogEntry.objects.exists()


# --- Read-only admins: nothing is added, changed or deleted, even by a superuser ----------------


@pytest.fixture
def read_only_objects() -> dict[str, Any]:
    order = Order.objects.create(
        first_name="Ana",
        last_name="Pérez",
        email="ana@example.com",
        phone="5512345678",
        street="Avenida Juárez",
        number="12",
        colony="Centro",
        city="Puebla",
        state="Puebla",
        postal_code="72000",
        country="MX",
        total=Decimal("250.00"),
    )
    return {
        "payments_payment": stored_payment(),
        "payments_subscription": stored_subscription(),
        "webhooks_webhookevent": WebhookEvent.objects.create(
            provider_payment_id=str(uuid.uuid4()),
            event_type="UPDATE",
            state=WebhookState.FAILED,
            attempts=1,
        ),
        "checkout_order": order,
    }


def _table(objects: dict[str, Any]) -> list[tuple[str, int]]:
    return [(type(o).__name__, type(o).objects.count()) for o in objects.values()]


@pytest.mark.parametrize(
    "model",
    ["payments_payment", "payments_subscription", "webhooks_webhookevent", "checkout_order"],
)
def test_delete_is_neither_offered_nor_done(
    admin_client: Client, read_only_objects: dict[str, Any], model: str
) -> None:
    """Given a superuser, when they open a read-only list, then delete_selected is not offered;
    when they post it (confirmed) or the delete page anyway, then nothing is deleted."""
    obj = read_only_objects[model]
    counts = _table(read_only_objects)
    changelist = reverse(f"admin:{model}_changelist")

    listing = admin_client.get(changelist)
    posted = bulk(admin_client, changelist, "delete_selected", obj, post="yes")
    page = admin_client.post(reverse(f"admin:{model}_delete", args=[obj.pk]), {"post": "yes"})

    assert listing.status_code == 200
    assert "delete_selected" not in offered(listing)
    assert posted.status_code in (200, 302)
    assert page.status_code == 403
    assert _table(read_only_objects) == counts


@pytest.mark.parametrize(
    "model", ["payments_payment", "payments_subscription", "webhooks_webhookevent"]
)
def test_read_only_records_cannot_be_added_or_edited(
    admin_client: Client, read_only_objects: dict[str, Any], model: str
) -> None:
    """Given a superuser, when they POST the add page or the change page of a payment, a
    subscription or a webhook event (trying to set its status), then both are 403 and the row
    is unchanged: these records move only through the services."""
    obj = read_only_objects[model]
    before = type(obj).objects.values().get(pk=obj.pk)
    forged = {"status": "approved", "state": "processed", "captured_amount": "999.00"}

    added = admin_client.post(reverse(f"admin:{model}_add"), forged)
    changed = admin_client.post(reverse(f"admin:{model}_change", args=[obj.pk]), forged)

    assert (added.status_code, changed.status_code) == (403, 403)
    assert type(obj).objects.values().get(pk=obj.pk) == before
    assert type(obj).objects.count() == 1


# --- Subscriptions and webhook events -----------------------------------------------------------


def test_subscription_cancel_without_view_is_403(
    make_staff: Callable[..., Any], calls: list[tuple[str, str]]
) -> None:
    """Given staff holding cancel_subscription but not view_subscription, when they post the
    confirmed cancel action, then it is 403 and nothing is sent to the provider."""
    subscription = stored_subscription()
    client = logged_in(make_staff("canceller", "payments.cancel_subscription"))

    response = bulk(
        client, reverse(SUBSCRIPTIONS), "cancel_selected", subscription, confirmed="yes"
    )

    assert response.status_code == 403
    assert calls == []
    subscription.refresh_from_db()
    assert subscription.status == "active"


def test_webhook_actions_need_the_webhooks_permission_whatever_else_is_held(
    make_staff: Callable[..., Any],
    calls: list[tuple[str, str]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Given staff holding every payments permission and only view_webhookevent, when they post
    retry or replay, then neither is offered or run: no event changes, nothing is queued and
    nothing is fetched. Without view_webhookevent at all, the list is 403."""
    failed = WebhookEvent.objects.create(
        provider_payment_id=str(uuid.uuid4()), event_type="UPDATE", state=WebhookState.FAILED
    )
    viewer = logged_in(
        make_staff("payments-lead", *ALL_PAYMENTS_PERMISSIONS, "webhooks.view_webhookevent")
    )
    stranger = logged_in(make_staff("payments-only", *ALL_PAYMENTS_PERMISSIONS))
    url = reverse(WEBHOOK_EVENTS)

    listing = viewer.get(url)
    with django_capture_on_commit_callbacks() as queued:
        answers = [
            bulk(viewer, url, action, failed) for action in ("retry_selected", "replay_selected")
        ]
        refused = bulk(stranger, url, "replay_selected", failed)

    assert offered(listing) == set()
    assert all(a.status_code in (200, 302) for a in answers)  # no actions: the list again
    assert refused.status_code == 403
    assert queued == []
    assert calls == []
    failed.refresh_from_db()
    assert (failed.state, failed.attempts) == (WebhookState.FAILED, 0)


# --- Login rate limits --------------------------------------------------------------------------


def allowed(rate: str) -> int:
    """How many requests a "count/period" rate lets through."""
    return int(rate.split("/")[0])


PER_USER = allowed(settings.ADMIN_LOGIN_RATE_PER_USER)
PER_ADDRESS = allowed(settings.ADMIN_LOGIN_RATE_PER_ADDRESS)


@pytest.fixture
def staff_member(django_user_model: Any) -> Any:
    user = django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)
    authenticator(user)
    return user


@dataclass
class LoginTry:
    """One POST of the admin login form, and whose password its browser had accepted
    afterwards (the account then waits for its code)."""

    response: Any
    user_id: str | None

    @property
    def status(self) -> int:
        return self.response.status_code


def login(address: str, username: str, password: str = "wrong-password", **meta: Any) -> LoginTry:
    """POST the admin login form from a fresh browser at `address`."""
    client = Client(REMOTE_ADDR=address, **meta)
    response = client.post(LOGIN, {"username": username, "password": password, "next": "/admin/"})
    pending = client.session.get("staff_signin_pending") or {}
    accepted = pending.get("user")
    assert client.session.get("_auth_user_id") is None  # never logged in on a password alone
    return LoginTry(response, str(accepted) if accepted is not None else None)


def assert_logged_in(attempt: LoginTry, user: Any) -> None:
    """The password was accepted: on to the code page."""
    assert attempt.status == 302, attempt.status
    assert attempt.response.url.startswith("/admin/sign-in/code/")
    assert attempt.user_id == str(user.pk)


def assert_too_many(attempt: LoginTry, language: str = "es") -> None:
    """The 429 page: readable, in the visitor's language, and nobody logged in."""
    assert attempt.status == 429
    assert "429.html" in [t.name for t in attempt.response.templates]
    assert TOO_MANY[language] in attempt.response.content.decode()
    assert attempt.user_id is None


def test_the_configured_login_limits_are_small() -> None:
    """The limits in force are the settings' (config/urls.py reads them as the URLs load): a
    handful of tries, per username no more than per address (the tests below rely on it)."""
    assert 1 <= PER_USER <= PER_ADDRESS <= 20


def test_logins_before_the_limit_work(staff_member: Any, clock: None) -> None:
    """Given one fewer failed logins than the per-username limit, when the right password
    comes, then the staff member is logged in."""
    for _ in range(PER_USER - 1):
        assert login("198.51.100.1", "root").status == 200

    assert_logged_in(login("198.51.100.1", "root", PASSWORD), staff_member)


def test_failed_logins_for_one_username_are_limited_even_with_the_right_password(
    staff_member: Any, clock: None
) -> None:
    """Given as many failed logins for one username as its limit, from addresses all different
    (a distributed guess), when the right password is sent from yet another address, then the
    answer is the 429 page and nobody is logged in; another username is not affected."""
    for n in range(PER_USER):
        failed = login(f"198.51.100.{n + 1}", "root")
        assert failed.status == 200
        assert failed.user_id is None

    assert_too_many(login("198.51.100.99", "root", PASSWORD))
    assert login("198.51.100.97", "someone-else").status == 200


def test_failed_logins_from_one_address_are_limited_across_usernames(
    staff_member: Any, clock: None
) -> None:
    """Given as many failed logins from one address as its limit, each for a different username,
    when that address sends a real username and password, then it is the 429 page; from
    another address the same login works."""
    for n in range(PER_ADDRESS):
        assert login("203.0.113.5", f"guess-{n}").status == 200

    assert_too_many(login("203.0.113.5", "root", PASSWORD))
    assert_logged_in(login("203.0.113.6", "root", PASSWORD), staff_member)


@pytest.mark.parametrize("language", ["es", "en"])
def test_the_429_page_speaks_the_visitors_language(
    staff_member: Any, clock: None, language: str
) -> None:
    """Given a visitor whose browser asks for `language`, when they are over the limit, then the
    429 page explains it in that language."""
    for _ in range(PER_USER):
        login("198.51.100.1", "root", HTTP_ACCEPT_LANGUAGE=language)

    assert_too_many(
        login("198.51.100.1", "root", PASSWORD, HTTP_ACCEPT_LANGUAGE=language), language
    )


def test_the_login_page_itself_is_never_limited(staff_member: Any, clock: None) -> None:
    """Given an address and a username both over their limits, when the login page is opened
    (GET), any number of times, then it is shown; and the GETs counted for nothing before."""
    browser = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(PER_ADDRESS * 2):
        assert browser.get(LOGIN).status_code == 200
    for _ in range(PER_USER - 1):
        assert login("203.0.113.9", "root").status == 200
    assert_logged_in(login("203.0.113.9", "root", PASSWORD), staff_member)

    for n in range(PER_ADDRESS):
        login("203.0.113.9", f"guess-{n}")
    assert_too_many(login("203.0.113.9", "root", PASSWORD))

    for _ in range(PER_ADDRESS * 2):
        page = browser.get(LOGIN)
        assert page.status_code == 200
        assert 'name="password"' in page.content.decode()


@pytest.mark.parametrize(
    "spelling", [" root", "root ", FULLWIDTH_ROOT], ids=["lead", "trail", "nfkc"]
)
def test_the_username_limit_is_not_escaped_by_spelling_it_differently(
    staff_member: Any, clock: None, spelling: str
) -> None:
    """Given a username over its limit, when the same account is tried under a spelling the
    login form reads as that username, then it is limited too."""
    for n in range(PER_USER):
        login(f"198.51.100.{n + 1}", "root")

    assert_too_many(login("198.51.100.200", spelling, PASSWORD))
