"""The staff admin of webhook events: a read-only list with filters, and the retry and replay
actions, which only staff with `webhooks.process_webhookevent` may run, by POST with CSRF.

Rows are written directly (no provider). The actions queue their tasks after commit, so they
are posted inside `django_capture_on_commit_callbacks(execute=True)`, and the queued tasks are
read back from the real broker; no worker runs here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from celery import Celery
from django.contrib.auth.models import Permission
from django.db import connection
from django.http import HttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from payments.models import CaptureMethod, Payment
from payments.statuses import PaymentStatus
from tests.factories import PaymentFactory
from tests.helpers.broker import take_queued
from tests.helpers.staff import sign_in_staff
from webhooks.models import WebhookEvent, WebhookState
from webhooks.task_names import PROCESS_TASK

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("empty_broker"),
    pytest.mark.usefixtures("in_english"),
]


CHANGELIST = "admin:webhooks_webhookevent_changelist"
PASSWORD = "a-long-test-password"

CaptureOnCommit = Callable[..., AbstractContextManager[list[Callable[[], Any]]]]


# --- Helpers ------------------------------------------------------------------------------------


def stored_payment(**fields: Any) -> Payment:
    """A payment row written directly, for events to point at."""
    values: dict[str, Any] = {
        "external_reference": f"ORD-{uuid.uuid4().hex[:5].upper()}",
        "idempotency_key": uuid.uuid4().hex,
        "capture_method": CaptureMethod.AUTOMATIC,
        "status": PaymentStatus.APPROVED,
        "amount": Decimal("250.00"),
        "provider_id": str(uuid.uuid4()),
        **fields,
    }
    return PaymentFactory(**values)


def stored_event(state: str = WebhookState.RECEIVED, **fields: Any) -> WebhookEvent:
    """A webhook event row written directly, in `state`, with what that state implies."""
    values: dict[str, Any] = {
        "provider_payment_id": str(uuid.uuid4()),
        "event_type": "UPDATE",
        "remote_addr": "203.0.113.5",
        "state": state,
        **fields,
    }
    if state != WebhookState.RECEIVED:
        values.setdefault("attempts", 1)
        values.setdefault("task_id", str(uuid.uuid4()))
        values.setdefault("claimed_at", timezone.now() - timedelta(minutes=5))
    if state in (WebhookState.PROCESSED, WebhookState.UNMATCHED, WebhookState.FAILED):
        values.setdefault("processed_at", timezone.now() - timedelta(minutes=4))
    if state == WebhookState.FAILED:
        values.setdefault("last_error", "Gave up after retries: the provider did not answer.")
    if state == WebhookState.UNMATCHED:
        values.setdefault("last_error", "Unmatched: no order of this shop.")
    return WebhookEvent.objects.create(**values)


@pytest.fixture
def make_staff(django_user_model: Any) -> Callable[..., Any]:
    """A staff user with the given webhooks permissions (codenames)."""

    def make(username: str, *codenames: str) -> Any:
        user = django_user_model.objects.create_user(
            username=username, password=PASSWORD, is_staff=True
        )
        permissions = Permission.objects.filter(
            content_type__app_label="webhooks", codename__in=codenames
        )
        assert permissions.count() == len(codenames), codenames
        user.user_permissions.set(permissions)
        return user

    return make


def logged_in(user: Any, **client_options: Any) -> Client:
    client = Client(**client_options)
    sign_in_staff(client, user)
    return client


def run_action(
    client: Client, action: str, events: list[WebhookEvent], **extra: Any
) -> HttpResponse:
    """POST the changelist's action form for `events`, following the redirect."""
    data = {
        "action": action,
        "_selected_action": [str(event.pk) for event in events],
        "index": "0",
        **extra,
    }
    return client.post(reverse(CHANGELIST), data, follow=True)


def messages_of(response: HttpResponse) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in response.context["messages"]]


def offered_actions(response: HttpResponse) -> set[str]:
    """The actions in the changelist's action menu (none when there is no menu)."""
    form = response.context["action_form"]
    if form is None:
        return set()
    return {name for name, _label in form.fields["action"].choices if name}


def shown(response: HttpResponse) -> set[int]:
    return {event.pk for event in response.context["cl"].result_list}


def states(events: list[WebhookEvent]) -> list[str]:
    return [WebhookEvent.objects.get(pk=event.pk).state for event in events]


def queued_payment_ids(app: Celery) -> set[str]:
    tasks = take_queued(app)
    assert all(name == PROCESS_TASK for name, _ in tasks), tasks
    ids = [args[0] for _, args in tasks]
    assert len(ids) == len(set(ids)), ids
    return set(ids)


# --- The list -----------------------------------------------------------------------------------


def test_the_list_shows_every_event_with_its_payment(admin_client: Client) -> None:
    """Given events in every state, some matched to payments, when a superuser opens the list,
    then every event is shown with its state and a link to its payment."""
    payment = stored_payment()
    matched = stored_event(
        WebhookState.PROCESSED, provider_payment_id=payment.provider_id, payment=payment
    )
    others = [stored_event(state) for state in WebhookState.values if state != "processed"]

    response = admin_client.get(reverse(CHANGELIST))

    assert response.status_code == 200
    assert shown(response) == {matched.pk, *(e.pk for e in others)}
    html = response.content.decode()
    assert reverse("admin:payments_payment_change", args=[payment.pk]) in html
    assert payment.external_reference in html
    for label in WebhookState.labels:
        assert str(label) in html
    assert "Gave up after retries" in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("state=failed", {"failed"}),
        ("state=unmatched", {"unmatched"}),
        ("state=received", {"received-insert", "received"}),
        ("event_type=INSERT", {"received-insert"}),
        ("event_type=UPDATE", {"failed", "unmatched", "processed", "other", "received"}),
        ("payment=PAYMENT", {"processed", "failed"}),
        ("payment=none", {"unmatched", "received-insert", "received"}),
        ("state=failed&payment=PAYMENT", {"failed"}),
    ],
)
def test_the_list_filters_by_state_event_type_and_payment(
    admin_client: Client, query: str, expected: set[str]
) -> None:
    """Given events of several states, types and payments, when the list is filtered by state,
    event type, `?payment=<pk>` (as the payment's page links to it) or `?payment=none`, then it
    shows exactly the matching events and names the payment filter."""
    payment = stored_payment()
    other = stored_payment()
    mine = {"provider_payment_id": payment.provider_id, "payment": payment}
    events = {
        "processed": stored_event(WebhookState.PROCESSED, **mine),
        "failed": stored_event(WebhookState.FAILED, **mine),
        "other": stored_event(
            WebhookState.PROCESSED, provider_payment_id=other.provider_id, payment=other
        ),
        "unmatched": stored_event(WebhookState.UNMATCHED),
        "received-insert": stored_event(event_type="INSERT"),
        "received": stored_event(),
    }

    response = admin_client.get(
        reverse(CHANGELIST) + "?" + query.replace("PAYMENT", str(payment.pk))
    )

    assert response.status_code == 200
    assert shown(response) == {events[name].pk for name in expected}
    if "payment=PAYMENT" in query:
        assert f"Payment #{payment.pk}" in response.content.decode()


def test_an_unusable_payment_filter_is_ignored(admin_client: Client) -> None:
    """Given events, when the list is opened with `?payment=` set to something that is not an
    id, then it still renders (every event shown) rather than failing."""
    events = [stored_event(), stored_event(WebhookState.FAILED)]

    response = admin_client.get(reverse(CHANGELIST) + "?payment=abc")

    assert response.status_code == 200
    assert shown(response) == {e.pk for e in events}


@pytest.mark.parametrize("how", ["id", "upper-case id", "order reference"])
def test_the_list_finds_events_by_payment_id_or_order_reference(
    admin_client: Client, how: str
) -> None:
    """Given events of two payments, when staff search for one payment's provider id (in any
    case, as pasted from the provider's dashboard) or for its order reference, then only that
    payment's events are shown."""
    payment = stored_payment()
    events = [
        stored_event(provider_payment_id=payment.provider_id, payment=payment),
        stored_event(WebhookState.FAILED, provider_payment_id=payment.provider_id),
    ]
    stored_event(WebhookState.PROCESSED, payment=stored_payment())
    term = {
        "id": payment.provider_id,
        "upper-case id": payment.provider_id.upper(),
        "order reference": payment.external_reference,
    }[how]

    response = admin_client.get(reverse(CHANGELIST), {"q": term})

    assert response.status_code == 200
    expected = events if how != "order reference" else events[:1]
    assert shown(response) == {e.pk for e in expected}


def test_the_list_needs_a_bounded_number_of_queries(
    admin_client: Client, django_assert_max_num_queries: Any
) -> None:
    """Given 50 events, each matched to its own payment, when the list is opened, then the
    number of queries is the same as for one event (payments are joined, not fetched per row)."""
    first = stored_payment()
    stored_event(payment=first, provider_payment_id=first.provider_id)
    admin_client.get(reverse(CHANGELIST))  # session, permissions and content types warmed up

    with CaptureQueriesContext(connection) as one_row:
        assert admin_client.get(reverse(CHANGELIST)).status_code == 200
    for _ in range(49):
        payment = stored_payment()
        stored_event(
            WebhookState.PROCESSED, payment=payment, provider_payment_id=payment.provider_id
        )

    with django_assert_max_num_queries(len(one_row.captured_queries)):
        response = admin_client.get(reverse(CHANGELIST))

    assert response.status_code == 200
    assert len(shown(response)) == 50


# --- Read-only ----------------------------------------------------------------------------------


def test_events_cannot_be_added(admin_client: Client) -> None:
    """Given a superuser, when they open or post the add form, then both are refused with 403,
    no row appears, and the list offers no add button."""
    add = reverse("admin:webhooks_webhookevent_add")

    assert admin_client.get(add).status_code == 403
    posted = admin_client.post(
        add, {"provider_payment_id": str(uuid.uuid4()), "event_type": "INSERT"}
    )

    assert posted.status_code == 403
    assert not WebhookEvent.objects.exists()
    assert add not in admin_client.get(reverse(CHANGELIST)).content.decode()


def test_events_cannot_be_changed(admin_client: Client) -> None:
    """Given an event, when a superuser opens it, then it is shown read-only with no save
    buttons, and posting a change to it is refused with 403 and changes nothing."""
    event = stored_event(WebhookState.FAILED)
    change = reverse("admin:webhooks_webhookevent_change", args=[event.pk])

    page = admin_client.get(change)
    posted = admin_client.post(change, {"state": "processed", "last_error": "", "_save": "Save"})

    assert page.status_code == 200
    html = page.content.decode()
    assert event.provider_payment_id in html
    for button in ('name="_save"', 'name="_continue"', 'name="_addanother"'):
        assert button not in html
    assert posted.status_code == 403
    event.refresh_from_db()
    assert event.state == WebhookState.FAILED
    assert event.last_error.startswith("Gave up")


def test_events_cannot_be_deleted(admin_client: Client) -> None:
    """Given an event, when a superuser opens or confirms its delete page, or picks a bulk
    delete from the list, then all are refused and the row stays."""
    event = stored_event(WebhookState.PROCESSED)
    delete = reverse("admin:webhooks_webhookevent_delete", args=[event.pk])

    assert admin_client.get(delete).status_code == 403
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    listing = admin_client.get(reverse(CHANGELIST))
    bulk = run_action(admin_client, "delete_selected", [event], post="yes")

    assert "delete_selected" not in offered_actions(listing)
    assert bulk.status_code == 200
    assert WebhookEvent.objects.filter(pk=event.pk).exists()


# --- Retry and replay ----------------------------------------------------------------------------


@pytest.fixture
def one_of_each() -> dict[str, WebhookEvent]:
    """One event in every state, each for its own payment id."""
    return {state: stored_event(state) for state in WebhookState.values}


def test_retry_requeues_only_failed_and_unmatched_events(
    admin_client: Client,
    celery_app: Celery,
    one_of_each: dict[str, WebhookEvent],
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given one event in every state, when a superuser retries them all, then the failed and
    the unmatched ones are received again (error and processed time cleared) with a task queued
    for each of their payments, and the three others are untouched and reported as skipped."""
    events = list(one_of_each.values())

    with django_capture_on_commit_callbacks(execute=True):
        response = run_action(admin_client, "retry_selected", events)

    assert response.status_code == 200
    retried = [one_of_each["failed"], one_of_each["unmatched"]]
    for event in retried:
        event.refresh_from_db()
        assert (event.state, event.last_error, event.processed_at, event.task_id) == (
            WebhookState.RECEIVED,
            "",
            None,
            "",
        )
    for state in ("received", "processing", "processed"):
        assert WebhookEvent.objects.get(pk=one_of_each[state].pk).state == state
    assert queued_payment_ids(celery_app) == {e.provider_payment_id for e in retried}
    assert messages_of(response) == [
        ("success", "2 notifications queued for retry."),
        (
            "warning",
            "3 notifications skipped: only failed or unmatched notifications can be retried; "
            "replay the others.",
        ),
    ]


def test_replay_also_takes_processed_events(
    admin_client: Client,
    celery_app: Celery,
    one_of_each: dict[str, WebhookEvent],
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given one event in every state, when a superuser replays them all, then the processed,
    failed and unmatched ones are received again with a task queued for each, and the waiting
    and in-progress ones are reported as skipped."""
    events = list(one_of_each.values())

    with django_capture_on_commit_callbacks(execute=True):
        response = run_action(admin_client, "replay_selected", events)

    replayed = [one_of_each[s] for s in ("processed", "failed", "unmatched")]
    assert states(replayed) == [WebhookState.RECEIVED] * 3
    assert states([one_of_each["processing"]]) == [WebhookState.PROCESSING]
    assert queued_payment_ids(celery_app) == {e.provider_payment_id for e in replayed}
    assert messages_of(response) == [
        ("success", "3 notifications replayed."),
        ("warning", "2 notifications skipped: they are still waiting or being processed."),
    ]


def test_retrying_only_skippable_events_says_so_and_queues_nothing(
    admin_client: Client, celery_app: Celery, django_capture_on_commit_callbacks: CaptureOnCommit
) -> None:
    """Given only a processed and a waiting event, when they are retried, then nothing changes,
    no task is queued, and the only message says both were skipped."""
    events = [stored_event(WebhookState.PROCESSED), stored_event()]

    with django_capture_on_commit_callbacks(execute=True):
        response = run_action(admin_client, "retry_selected", events)

    assert states(events) == [WebhookState.PROCESSED, WebhookState.RECEIVED]
    assert take_queued(celery_app) == []
    assert [level for level, _ in messages_of(response)] == ["warning"]
    assert messages_of(response)[0][1].startswith("2 notifications skipped")


def test_events_of_one_payment_are_queued_once(
    admin_client: Client, celery_app: Celery, django_capture_on_commit_callbacks: CaptureOnCommit
) -> None:
    """Given three failed events of the same payment, when they are retried together, then all
    three are received again and a single task is queued for that payment."""
    payment_id = str(uuid.uuid4())
    events = [stored_event(WebhookState.FAILED, provider_payment_id=payment_id) for _ in range(3)]

    with django_capture_on_commit_callbacks(execute=True):
        response = run_action(admin_client, "retry_selected", events)

    assert states(events) == [WebhookState.RECEIVED] * 3
    assert take_queued(celery_app) == [(PROCESS_TASK, [payment_id])]
    assert messages_of(response) == [("success", "3 notifications queued for retry.")]


# --- Who may retry or replay -----------------------------------------------------------------


@pytest.mark.parametrize("action", ["retry_selected", "replay_selected"])
def test_view_only_staff_cannot_retry_or_replay(
    make_staff: Callable[..., Any],
    celery_app: Celery,
    action: str,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given staff who may only view events, when they open the list, then neither action is
    offered, and when they post one anyway, then no event changes and nothing is queued."""
    client = logged_in(make_staff("lector", "view_webhookevent"))
    failed = stored_event(WebhookState.FAILED)
    processed = stored_event(WebhookState.PROCESSED)

    listing = client.get(reverse(CHANGELIST))
    with django_capture_on_commit_callbacks(execute=True):
        forced = run_action(client, action, [failed, processed])

    assert listing.status_code == 200
    assert offered_actions(listing) == set()
    assert forced.status_code in (200, 403)
    assert states([failed, processed]) == [WebhookState.FAILED, WebhookState.PROCESSED]
    assert take_queued(celery_app) == []


def test_staff_with_the_process_permission_can_retry_and_replay(
    make_staff: Callable[..., Any],
    celery_app: Celery,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given staff with view and `process_webhookevent` permissions (not superuser), when they
    open the list, then both actions are offered, and both work."""
    client = logged_in(make_staff("soporte", "view_webhookevent", "process_webhookevent"))
    failed = stored_event(WebhookState.FAILED)
    processed = stored_event(WebhookState.PROCESSED)

    listing = client.get(reverse(CHANGELIST))
    with django_capture_on_commit_callbacks(execute=True):
        retried = run_action(client, "retry_selected", [failed])
        replayed = run_action(client, "replay_selected", [processed])

    assert offered_actions(listing) == {"retry_selected", "replay_selected"}
    assert messages_of(retried) == [("success", "1 notification queued for retry.")]
    assert messages_of(replayed) == [("success", "1 notification replayed.")]
    assert states([failed, processed]) == [WebhookState.RECEIVED] * 2
    assert queued_payment_ids(celery_app) == {
        failed.provider_payment_id,
        processed.provider_payment_id,
    }


def test_the_process_permission_without_view_opens_nothing(
    make_staff: Callable[..., Any], celery_app: Celery
) -> None:
    """Given staff with only `process_webhookevent` (no view permission), when they open the
    list or post an action, then both are refused and nothing changes."""
    client = logged_in(make_staff("sin-vista", "process_webhookevent"))
    failed = stored_event(WebhookState.FAILED)

    listing = client.get(reverse(CHANGELIST))
    forced = client.post(
        reverse(CHANGELIST),
        {"action": "retry_selected", "_selected_action": [str(failed.pk)], "index": "0"},
    )

    assert listing.status_code == 403
    assert forced.status_code == 403
    assert states([failed]) == [WebhookState.FAILED]
    assert take_queued(celery_app) == []


# --- POST with CSRF ------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["retry_selected", "replay_selected"])
def test_actions_need_the_csrf_token(
    admin_user: Any,
    celery_app: Celery,
    action: str,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given a superuser whose browser enforces CSRF, when an action is posted without the CSRF
    token, then it is refused with 403 and nothing changes; when posted with the token from
    the list page, then it runs."""
    client = logged_in(admin_user, enforce_csrf_checks=True)
    failed = stored_event(WebhookState.FAILED)

    with django_capture_on_commit_callbacks(execute=True):
        refused = client.post(
            reverse(CHANGELIST),
            {"action": action, "_selected_action": [str(failed.pk)], "index": "0"},
        )
    assert refused.status_code == 403
    assert states([failed]) == [WebhookState.FAILED]
    assert take_queued(celery_app) == []

    listing = client.get(reverse(CHANGELIST))
    token = listing.context["csrf_token"]
    with django_capture_on_commit_callbacks(execute=True):
        accepted = run_action(client, action, [failed], csrfmiddlewaretoken=str(token))

    assert accepted.status_code == 200
    assert states([failed]) == [WebhookState.RECEIVED]
    assert queued_payment_ids(celery_app) == {failed.provider_payment_id}


@pytest.mark.parametrize("action", ["retry_selected", "replay_selected"])
def test_actions_cannot_be_run_by_get(
    admin_client: Client,
    celery_app: Celery,
    action: str,
    django_capture_on_commit_callbacks: CaptureOnCommit,
) -> None:
    """Given a superuser, when an action is requested with GET parameters (a link, an image tag
    on another site), then it does not run: nothing changes and nothing is queued."""
    failed = stored_event(WebhookState.FAILED)
    query = f"?action={action}&_selected_action={failed.pk}&index=0"

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.get(reverse(CHANGELIST) + query, follow=True)

    assert response.status_code == 200
    assert states([failed]) == [WebhookState.FAILED]
    assert take_queued(celery_app) == []
