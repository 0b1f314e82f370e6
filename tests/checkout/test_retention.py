"""What the shop keeps, and for how long: a sent mail keeps its text SHOP_MAIL_KEEP_DAYS (shown
to staff on the order), then only its row; expired sessions are deleted daily; orders,
payments, both ledgers, refunds, staff actions and the admin log are never deleted. All of it
by beat, in small batches through an index."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from html import unescape
from typing import Any

import pytest
import time_machine
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from checkout.models import Order, OrderEvent, OrderItem, OrderMail, Product
from checkout.retention.rules import mails_prune, sessions_prune
from checkout.tasks import mails_prune_task, sessions_prune_task
from payments.models import Payment, PaymentEvent, Refund
from staff_actions.models import StaffAction
from tests.factories import (
    OrderEventFactory,
    OrderFactory,
    PaymentEventFactory,
    PaymentFactory,
    RefundFactory,
)
from tests.helpers.database import plan_of
from webhooks.tasks import webhooks_prune_task

pytestmark = pytest.mark.django_db

TEXT = "Hola Ana:\n\nRecibimos tu pago de $289.00 MXN.\n"


@pytest.fixture
def order(make_product: Callable[..., Product]) -> Order:
    return OrderFactory(lines=[(make_product(price="289.00", stock=5, name="Taza de talavera"), 1)])


def sent_mail(order: Order, key: str, days_ago: float, **fields: Any) -> OrderMail:
    """A mail of `order` sent `days_ago`, with the text it sent."""
    when = timezone.now() - timedelta(days=days_ago)
    fields.setdefault("subject", f"Pago recibido de tu pedido {order.reference}")
    fields.setdefault("body", TEXT)
    return OrderMail.objects.create(
        order=order, kind="paid", key=key, amount=Decimal("289.00"), created_at=when,
        sent_at=when, **fields,
    )  # fmt: skip


def texts() -> dict[str, tuple[str, str]]:
    return {m.key: (m.subject, m.body) for m in OrderMail.objects.all()}


def selects_of(run: Callable[[], int]) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        run()
    return [q["sql"] for q in captured.captured_queries if q["sql"].startswith("SELECT")]


# --- Mails ------------------------------------------------------------------------------------


def test_old_mails_lose_their_text_and_keep_their_row(order: Order, settings: Any) -> None:
    """A mail sent over SHOP_MAIL_KEEP_DAYS ago keeps its row (kind, event, amount, dates) and
    loses its subject and body; a younger one keeps its text; one not sent yet is untouched."""
    settings.SHOP_MAIL_KEEP_DAYS = 90
    old = sent_mail(order, "paid", 91)
    young = sent_mail(order, "held", 89)
    unsent = OrderMail.objects.create(
        order=order, kind="received", key="received", created_at=timezone.now() - timedelta(300)
    )

    blanked = mails_prune_task.apply().get()

    assert blanked == 1
    assert texts() == {"paid": ("", ""), "held": (young.subject, TEXT), "received": ("", "")}
    row = OrderMail.objects.get(pk=old.pk)
    assert (row.kind, row.key, row.amount, row.created_at, row.sent_at) == (
        "paid",
        "paid",
        Decimal("289.00"),
        old.created_at,
        old.sent_at,
    )
    assert OrderMail.objects.get(pk=unsent.pk).sent_at is None


def test_a_mail_keeps_its_text_until_the_keep_days_are_over(order: Order, settings: Any) -> None:
    """Travelling in time: on day 89 the mail still says what it said; after day 90 it is
    blanked, and a second run finds nothing left to do."""
    settings.SHOP_MAIL_KEEP_DAYS = 90
    start = timezone.now()
    sent_mail(order, "paid", 0)

    with time_machine.travel(start + timedelta(days=89), tick=False):
        assert mails_prune() == 0
    assert texts()["paid"][1] == TEXT
    with time_machine.travel(start + timedelta(days=90, minutes=1), tick=False):
        assert mails_prune() == 1
        assert mails_prune() == 0
    assert texts()["paid"] == ("", "")


def test_mails_are_blanked_in_bounded_batches_over_runs(order: Order, settings: Any) -> None:
    """With batches of 2 and a budget of 3 rows a run, each UPDATE changes at most 2 rows, and
    runs go on until every old mail is blanked; each batch is the same two queries."""
    settings.SHOP_RETENTION_BATCH_SIZE = 2
    settings.SHOP_RETENTION_RUN_ROWS = 3
    for n in range(5):
        sent_mail(order, f"old-{n}", 100 + n)
    counts: list[int] = []

    def record(execute: Callable[..., Any], sql: str, params: Any, many: bool, ctx: Any) -> Any:
        result = execute(sql, params, many, ctx)
        if sql.startswith("UPDATE"):
            counts.append(ctx["cursor"].rowcount)
        return result

    with connection.execute_wrapper(record), CaptureQueriesContext(connection) as first:
        assert mails_prune() == 3
    with connection.execute_wrapper(record):
        assert [mails_prune(), mails_prune()] == [2, 0]

    assert counts == [2, 1, 2]
    assert len(first.captured_queries) == 4  # 2 batches of a select and an update
    assert set(texts().values()) == {("", "")}


def test_the_mails_to_blank_are_picked_through_their_index(order: Order) -> None:
    """The select of a batch can be served by the partial index `order_mail_text_kept`."""
    sent_mail(order, "paid", 100)
    [select] = selects_of(mails_prune)[:1]
    assert "order_mail_text_kept" in plan_of(select)


# --- Sessions ---------------------------------------------------------------------------------


def session_expiring_in(days: float) -> str:
    store = SessionStore()
    store["cart"] = {"taza": 1}
    store.set_expiry(timezone.now() + timedelta(days=days))
    store.save()
    assert store.session_key is not None
    return store.session_key


def test_expired_sessions_are_deleted_and_valid_ones_kept(settings: Any) -> None:
    """The daily task deletes the sessions past their expiry, a batch at a time, and leaves
    the ones still valid (a shopper's cart, a staff login)."""
    settings.SHOP_RETENTION_BATCH_SIZE = 2
    expired = {session_expiring_in(-days) for days in (1, 2, 30, 400, 0.01)}
    valid = {session_expiring_in(days) for days in (0.01, 1, 14)}
    assert len(expired | valid) == 8

    deleted = sessions_prune_task.apply().get()

    assert deleted == 5
    assert set(Session.objects.values_list("session_key", flat=True)) == valid


def test_a_session_is_deleted_once_it_expires(settings: Any) -> None:
    """Travelling in time: a session is kept while valid, deleted after its expiry."""
    start = timezone.now()
    key = session_expiring_in(14)
    with time_machine.travel(start + timedelta(days=13), tick=False):
        assert sessions_prune() == 0
    with time_machine.travel(start + timedelta(days=14, minutes=1), tick=False):
        assert sessions_prune() == 1
    assert not Session.objects.filter(session_key=key).exists()


def test_expired_sessions_are_picked_through_their_index() -> None:
    session_expiring_in(-1)
    [select] = selects_of(sessions_prune)[:1]
    assert "expire_date" in plan_of(select)
    assert "Index" in plan_of(select)


# --- What is never deleted ----------------------------------------------------------------------


def test_financial_records_staff_actions_and_the_admin_log_are_never_deleted(
    order: Order, settings: Any
) -> None:
    """Six years later, after every retention task has run: orders and their items, both
    ledgers, payments, refunds, staff actions, the admin log and the mails' rows are all
    still there."""
    settings.WEBHOOKS_KEEP_DAYS = settings.SHOP_MAIL_KEEP_DAYS = 1
    staff = get_user_model().objects.create_user("ana", is_staff=True)
    payment = PaymentFactory(order=order, charged=True)
    PaymentEventFactory(payment=payment)
    OrderEventFactory(order=order)
    RefundFactory(payment=payment)
    StaffAction.objects.create(
        kind="refund", payment=payment, idempotency_key="k-1", language="es", actor=staff,
        state="done", ok=True,
    )  # fmt: skip
    LogEntry.objects.create(
        user=staff, object_id=str(order.pk), object_repr=order.reference, action_flag=ADDITION
    )
    sent_mail(order, "paid", 0)
    models = (
        Order, OrderItem, OrderEvent, OrderMail, Payment, PaymentEvent, Refund, StaffAction,
        LogEntry,
    )  # fmt: skip
    before = {model.__name__: model.objects.count() for model in models}
    assert all(before.values()), before

    with time_machine.travel(timezone.now() + timedelta(days=6 * 366), tick=False):
        for task in (webhooks_prune_task, mails_prune_task, sessions_prune_task):
            task.apply().get()

    assert {model.__name__: model.objects.count() for model in models} == before
    assert texts()["paid"] == ("", "")  # the mail's text went; its row stayed


# --- Beat -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "every"),
    [
        ("checkout.tasks.mails_prune_task", 3600.0),
        ("checkout.tasks.sessions_prune_task", 86400.0),
        ("webhooks.tasks.webhooks_prune_task", 3600.0),
    ],
)
def test_retention_tasks_are_in_the_beat_schedule_on_the_shop_queue(
    settings: Any, celery_app: Any, task: str, every: float
) -> None:
    """Beat runs each retention task (hourly, sessions daily), on the shop's own queue."""
    [entry] = [e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == task]
    assert entry["schedule"] == every
    assert entry["options"]["expires"] < every
    assert celery_app.amqp.router.route({}, task)["queue"].name == settings.CELERY_QUEUE_SHOP


# --- Staff see what the customer was told ------------------------------------------------------

MESSAGE_COLUMN = {"es": "Mensaje", "en": "Message"}
NOT_KEPT = {"es": "texto no conservado", "en": "text not kept"}


def mail_rows(page: str) -> list[dict[str, str]]:
    """The rows of the order's mails inline: cell text by field."""
    rows = re.findall(r'<tr class="form-row[^"]*"\s+id="mails-\d+">(.*?)</tr>', page, re.S)
    return [
        {
            field: " ".join(unescape(re.sub(r"<[^>]+>", " ", text)).split())
            for field, text in re.findall(r'<td class="field-([a-z_]+)">(.*?)</td>', row, re.S)
        }
        for row in rows
    ]


@pytest.mark.parametrize("language", ["es", "en"])
def test_the_order_page_shows_what_each_mail_said_while_it_is_kept(
    order: Order, admin_client: Client, language: str
) -> None:
    """On the order's page, each sent mail shows its subject and its text (read only); a mail
    whose text was blanked says it is not kept; one not sent yet shows nothing. In Spanish and
    in English."""
    sent_mail(order, "paid", 1)
    sent_mail(order, "held", 200, subject="", body="")
    OrderMail.objects.create(order=order, kind="received", key="received")

    admin_client.cookies["django_language"] = language
    response = admin_client.get(reverse("admin:checkout_order_change", args=[order.pk]))

    assert response.status_code == 200
    page = response.content.decode()
    header = re.search(r'<th class="column-text_sent[^"]*">\s*([^<]*?)\s*<', page)
    assert header and header.group(1) == MESSAGE_COLUMN[language]
    shown = [row["text_sent"] for row in mail_rows(page)]  # oldest first
    subject = f"Pago recibido de tu pedido {order.reference}"
    assert shown == [NOT_KEPT[language], f"{subject} {' '.join(TEXT.split())}", "—"]
    assert f"<summary>{subject}</summary>" in page
    assert 'name="mails-0-body"' not in page and "<textarea" not in page  # read only
