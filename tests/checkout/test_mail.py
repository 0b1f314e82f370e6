"""Mails to the shopper: one per event of the order, worked out from its state and its payments'
ledger, sent once each by a task after the change commits, as HTML and plain text in the
order's language, each with the order's own link and the amounts of the ledger."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core import mail
from django.core.mail import EmailMultiAlternatives
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from checkout.fulfilment.calls import order_ship
from checkout.links import order_link
from checkout.mails.calls import order_mail_deliver, orders_list_send
from checkout.mails.rules import queue_order_mails
from checkout.models import Order, OrderEventKind, OrderMail, OrderMailKind, OrderStatus, Product
from checkout.records import order_event_record
from checkout.tasks import order_mail_deliver_task, order_mails_sweep_task, orders_list_mail_task
from payments.models import Payment, PaymentEvent, PaymentEventKind
from tests.checkout.helpers import FailsOnce
from tests.factories import OrderFactory, PaymentFactory
from tests.helpers.provider import Api
from tests.helpers.servers import free_port
from tests.helpers.shop import creates_sent_here, place_order, shopper
from tests.helpers.waiting import wait_until

pytestmark = pytest.mark.django_db

SEND_TASK = "checkout.tasks.order_mail_send_task"


@pytest.fixture
def blusa(make_product: Any) -> Product:
    return make_product(
        price="1290.00", stock=10, name="Blusa bordada", name_en="Embroidered blouse"
    )


@pytest.fixture
def taza(make_product: Any) -> Product:
    return make_product(price="289.00", stock=10, name="Taza de talavera", name_en="Talavera mug")


# --- Building an order's state as the services leave it -------------------------------------------


def event(payment: Payment, kind: str, old: str, new: str, amount: str | None = None) -> None:
    PaymentEvent.objects.create(
        payment=payment,
        kind=kind,
        old_status=old,
        new_status=new,
        amount=Decimal(amount) if amount else None,
    )


def paid(order: Order) -> Payment:
    """Approved at once (automatic capture)."""
    payment = PaymentFactory(order=order, charged=True)
    event(payment, PaymentEventKind.CREATED, "creating", "approved")
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.PAID)
    return payment


def held(order: Order) -> Payment:
    """Authorized (manual capture)."""
    payment = PaymentFactory(order=order, held=True)
    event(payment, PaymentEventKind.CREATED, "creating", "authorized")
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.AUTHORIZED)
    return payment


def captured(order: Order, amount: str) -> Payment:
    payment = held(order)
    Payment.objects.filter(pk=payment.pk).update(status="approved", captured_amount=Decimal(amount))
    event(payment, PaymentEventKind.CAPTURED, "authorized", "approved", amount)
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.PAID)
    return payment


def ship_all(order: Order) -> None:
    """Recorded as the fulfilment records a shipment."""
    for item in order.items.all():
        item.quantity_shipped = item.quantity
        item.save(update_fields=["quantity_shipped"])
    order_event_record(order, OrderEventKind.SHIPPED, "", None)


def expired(order: Order) -> None:
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.EXPIRED)
    order_event_record(order, OrderEventKind.EXPIRED, "not paid in time", None)


def late_refunded(order: Order) -> None:
    expired(order)
    payment = PaymentFactory(order=order, status="refunded", captured_amount=order.total)
    Payment.objects.filter(pk=payment.pk).update(refunded_amount=order.total)
    event(payment, PaymentEventKind.SYNCED, "pending", "approved")
    event(payment, PaymentEventKind.REFUNDED, "approved", "refunded", str(order.total))


def late_cancelled(order: Order) -> None:
    expired(order)
    payment = PaymentFactory(
        order=order, status="cancelled", capture_method="manual", status_code="CA-MER01"
    )
    event(payment, PaymentEventKind.SYNCED, "pending", "authorized")
    event(payment, PaymentEventKind.CANCELLED, "authorized", "cancelled")


# kind -> (how the order gets there, the amount in the mail)
SCENARIOS: dict[str, tuple[Callable[[Order], Any], str]] = {
    "received": (lambda order: None, "$1,868.00"),
    "paid": (paid, "$1,868.00"),
    "held": (held, "$1,868.00"),
    "charged": (lambda order: captured(order, "1290.00"), "$1,290.00"),
    "shipped": (lambda order: (paid(order), ship_all(order)), ""),  # no money moves
    "cancelled": (
        lambda order: (
            held(order),
            Payment.objects.filter(external_reference=order.reference).update(
                status="cancelled", status_code="CA-MER01"
            ),
            Order.objects.filter(pk=order.pk).update(status=OrderStatus.CANCELLED),
            order_event_record(order, OrderEventKind.CANCELLED, "", None),
        ),
        "$1,868.00",
    ),
    "refunded": (
        lambda order: event(
            paid(order), PaymentEventKind.REFUNDED, "approved", "approved", "289.00"
        ),
        "$289.00",
    ),
    "expired": (expired, "$1,868.00"),
    "payment_returned": (late_refunded, "$1,868.00"),
}

# kind -> words the mail says, in Spanish and in English
WORDS: dict[str, dict[str, str]] = {
    "received": {"es": "Gracias por tu pedido", "en": "Thank you for your order"},
    "paid": {"es": "Recibimos tu pago de $1,868.00", "en": "We received your payment of $1,868.00"},
    "held": {"es": "Retuvimos $1,868.00 MXN en tu tarjeta", "en": "We are holding $1,868.00 MXN"},
    "charged": {"es": "cobramos $1,290.00 MXN", "en": "charged $1,290.00 MXN"},
    "shipped": {"es": "Ya estaba pagado", "en": "It was already paid"},
    "cancelled": {"es": "No se cobró nada", "en": "Nothing was charged"},
    "refunded": {"es": "Te reembolsamos $289.00 MXN", "en": "We refunded $289.00 MXN"},
    "expired": {"es": "volvieron a estar disponibles", "en": "went back to stock"},
    "payment_returned": {
        "es": "Te reembolsamos completos los $1,868.00 MXN",
        "en": "We refunded the $1,868.00 MXN",
    },
}


def order_of(blusa: Product, taza: Product, language: str = "es") -> Order:
    """A blusa and two tazas ($1,868.00), its items named in both languages as checkout does."""
    order = OrderFactory(lines=[(blusa, 1), (taza, 2)], language=language)
    for item in order.items.select_related("product"):
        item.name_en = item.product.name_en
        item.save(update_fields=["name_en"])
    return order


def queue(order: Order, capture: Any) -> list[int]:
    """Queue the order's due mails as its sync would: the order locked, tasks sent on commit."""
    with capture(execute=True):
        locked = Order.objects.select_for_update().get(pk=order.pk)
        return queue_order_mails(locked)


def sent_for(order: Order) -> list[EmailMultiAlternatives]:
    return [m for m in mail.outbox if order.reference in m.subject]


def html_of(message: Any) -> str:
    [(content, mimetype)] = message.alternatives
    assert mimetype == "text/html"
    return content


# --- Each mail, in each language ------------------------------------------------------------------


@pytest.mark.parametrize("language", ["es", "en"])
@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_each_mail_is_html_and_text_in_the_orders_language_with_its_link_and_amounts(
    blusa: Product,
    taza: Product,
    kind: str,
    language: str,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """Given an order in `language` whose state calls for the `kind` mail, when its mails are
    queued and their tasks run, then the shopper gets that mail once, in HTML and plain text,
    in the order's language, with the order's own link and the ledger's amounts."""
    order = order_of(blusa, taza, language)
    build, amount = SCENARIOS[kind]
    build(order)
    order.refresh_from_db()

    queue(order, django_capture_on_commit_callbacks)
    ran = run_queued()

    assert ran and set(ran) == {SEND_TASK}
    row = OrderMail.objects.get(order=order, kind=kind)
    assert row.sent_at is not None
    [message] = [
        m
        for m in sent_for(order)
        if m.extra_headers["Message-ID"].startswith(f"<order-mail-{row.pk}.")
    ]
    assert message.to == [order.email]
    link = order_link(order.reference)
    assert link.startswith("http") and link.endswith("/")
    text, page = message.body, html_of(message)
    for body in (text, page):
        assert link in body
        assert amount in body  # "" for the shipped mail: no amount
        assert WORDS[kind][language] in body
        assert WORDS[kind]["en" if language == "es" else "es"] not in body
    assert f'<html lang="{language}">' in page
    assert "<h1" in page
    assert "<style" not in page and "<link" not in page and "<img" not in page
    assert "<" not in text.replace("<=", "")  # plain text, no markup
    names = {"es": "Blusa bordada", "en": "Embroidered blouse"}
    if kind not in ("refunded", "payment_returned", "charged"):
        assert names[language] in text and names[language] in page


@pytest.mark.parametrize("language", ["es", "en"])
def test_a_sent_mail_keeps_the_subject_and_text_it_sent(
    blusa: Product,
    taza: Product,
    language: str,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """When a mail goes out, its row keeps the subject and the plain-text body the customer
    got (for staff, until SHOP_MAIL_KEEP_DAYS); a mail not sent yet keeps nothing."""
    order = order_of(blusa, taza, language)
    paid(order)
    queue(order, django_capture_on_commit_callbacks)
    assert set(OrderMail.objects.filter(order=order).values_list("subject", "body")) == {("", "")}

    run_queued()

    for row in OrderMail.objects.filter(order=order):
        [message] = [
            m
            for m in sent_for(order)
            if m.extra_headers["Message-ID"].startswith(f"<order-mail-{row.pk}.")
        ]
        assert (row.subject, row.body) == (message.subject, message.body)
        assert order.reference in row.subject and WORDS["received"][language] in (
            OrderMail.objects.get(order=order, kind="received").body
        )


def test_spanish_mails_speak_to_the_shopper_as_tu(
    blusa: Product, taza: Product, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """Spanish mails use tú: "tu pedido", never "su pedido" or "usted"."""
    order = order_of(blusa, taza)
    paid(order)
    queue(order, django_capture_on_commit_callbacks)
    run_queued()
    for message in sent_for(order):
        for body in (message.subject, message.body, html_of(message)):
            assert "usted" not in body.lower() and "su pedido" not in body.lower()
    assert any("tu pedido" in m.body.lower() for m in sent_for(order))


def test_a_late_authorization_given_back_says_it_was_released_not_refunded(
    blusa: Product, taza: Product, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """A late payment whose authorization was cancelled says the hold was released and nothing
    was charged (not that it was refunded), and no paid or held mail goes out for it."""
    order = order_of(blusa, taza, "en")
    late_cancelled(order)
    order.refresh_from_db()
    queue(order, django_capture_on_commit_callbacks)
    run_queued()
    kinds = set(OrderMail.objects.filter(order=order).values_list("kind", flat=True))
    assert kinds == {"received", "expired", "payment_returned"}
    [returned] = [m for m in sent_for(order) if "returned" in m.subject]
    assert "was released and nothing was charged" in returned.body
    assert "$1,868.00" in returned.body
    assert "refunded" not in returned.body.lower()


# --- Once, whatever happens -----------------------------------------------------------------------


def test_duplicate_queueing_creates_and_sends_each_mail_once(
    blusa: Product, taza: Product, django_capture_on_commit_callbacks: Any, run_queued: Any
) -> None:
    """Given a paid order, when its mails are queued five times (duplicate notifications, the
    sync's retries), then one row per event exists, one task each was queued, and the shopper
    gets one mail per event."""
    order = order_of(blusa, taza)
    paid(order)

    created = [queue(order, django_capture_on_commit_callbacks) for _ in range(5)]

    assert len(created[0]) == 2 and created[1:] == [[]] * 4
    assert run_queued() == [SEND_TASK] * 2
    assert sorted(OrderMail.objects.filter(order=order).values_list("key", flat=True)) == [
        "paid",
        "received",
    ]
    assert len(sent_for(order)) == 2
    # a redelivered task finds its mail sent
    assert order_mail_deliver_task.apply(args=[created[0][0]]).get() is False
    assert len(sent_for(order)) == 2


@pytest.mark.django_db(transaction=True)
def test_two_transactions_queueing_at_once_create_each_mail_once(
    blusa: Product, taza: Product, empty_broker: None
) -> None:
    """Given a paid order, when two transactions queue its mails at the same moment, the second
    having looked before the first committed (no lock on the order, as a caller that forgot it
    would), then the database's unique (order, event) holds the second's insert until the
    first commits and hands it the first's rows: one mail per event, created by one of them."""
    if connection.vendor != "postgresql":
        pytest.skip("two transactions writing at once need PostgreSQL")
    order = order_of(blusa, taza)
    paid(order)
    first_wrote, release, second_done = threading.Event(), threading.Event(), threading.Event()
    created: dict[str, list[int]] = {}

    def first() -> None:
        try:
            with transaction.atomic():
                created["first"] = queue_order_mails(Order.objects.get(pk=order.pk))
                first_wrote.set()
                release.wait(30)
        finally:
            connection.close()

    def second() -> None:
        first_wrote.wait(30)
        try:
            with transaction.atomic():
                created["second"] = queue_order_mails(Order.objects.get(pk=order.pk))
        finally:
            second_done.set()
            connection.close()

    def second_waits_on_a_lock() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            return cursor.fetchone()[0] > 0

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    # The first commits once the second is either held by the database or done without it.
    wait_until(lambda: second_done.is_set() or second_waits_on_a_lock(), timeout=30)
    release.set()
    for thread in threads:
        thread.join(30)

    assert len(created["first"]) == 2
    assert created["second"] == []
    keys = OrderMail.objects.filter(order=order).values_list("key", flat=True)
    assert sorted(keys) == ["paid", "received"]


def test_paid_by_automatic_capture_is_not_also_mailed_as_charged(
    blusa: Product, taza: Product, django_capture_on_commit_callbacks: Any
) -> None:
    """An approval at once (creating -> approved) is the paid mail only; a held payment's capture
    (authorized -> approved) is the charged one, with no paid mail."""
    order = order_of(blusa, taza)
    paid(order)
    queue(order, django_capture_on_commit_callbacks)
    assert set(OrderMail.objects.filter(order=order).values_list("kind", flat=True)) == {
        "received",
        "paid",
    }
    other = order_of(blusa, taza)
    captured(other, str(other.total))
    queue(other, django_capture_on_commit_callbacks)
    assert set(OrderMail.objects.filter(order=other).values_list("kind", flat=True)) == {
        "received",
        "held",
        "charged",
    }


def test_a_shipment_that_captured_is_not_also_mailed_as_shipped(
    blusa: Product, taza: Product, django_capture_on_commit_callbacks: Any
) -> None:
    """A held order shipped (captured, then its shipment recorded) gets the charged mail only;
    a paid order shipped gets the shipped one."""
    order = order_of(blusa, taza)
    captured(order, str(order.total))
    ship_all(order)
    queue(order, django_capture_on_commit_callbacks)
    kinds = set(OrderMail.objects.filter(order=order).values_list("kind", flat=True))
    assert "charged" in kinds and "shipped" not in kinds
    other = order_of(blusa, taza)
    paid(other)
    ship_all(other)
    queue(other, django_capture_on_commit_callbacks)
    assert "shipped" in set(OrderMail.objects.filter(order=other).values_list("kind", flat=True))


def test_old_events_are_not_mailed(
    blusa: Product, taza: Product, django_capture_on_commit_callbacks: Any
) -> None:
    """An order from long ago synced again (no mails then) is not mailed its old news."""
    order = order_of(blusa, taza)
    paid(order)
    long_ago = timezone.now() - timedelta(days=30)
    Order.objects.filter(pk=order.pk).update(created_at=long_ago)
    PaymentEvent.objects.filter(payment__external_reference=order.reference).update(
        created_at=long_ago
    )
    order.refresh_from_db()
    assert queue(order, django_capture_on_commit_callbacks) == []


def test_a_send_that_fails_is_not_marked_and_the_retry_sends_it_once(
    blusa: Product, taza: Product, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Given a mail server that fails once, when the mail is sent, then the error is raised
    and nothing is marked sent; when its task then meets a failure again, its retry sends the
    mail, once, and a redelivery of the task sends nothing more."""
    settings.EMAIL_BACKEND = "tests.checkout.helpers.FailsOnce"
    order = order_of(blusa, taza)
    [mail_id] = queue(order, django_capture_on_commit_callbacks)
    FailsOnce.failed = False

    with pytest.raises(ConnectionRefusedError):
        order_mail_deliver(mail_id=mail_id)

    assert OrderMail.objects.get(pk=mail_id).sent_at is None
    assert mail.outbox == []
    FailsOnce.failed = False
    assert order_mail_deliver_task.apply(args=[mail_id]).state == "SUCCESS"  # after its retry
    assert FailsOnce.failed
    assert len(mail.outbox) == 1
    assert OrderMail.objects.get(pk=mail_id).sent_at is not None
    assert order_mail_deliver_task.apply(args=[mail_id]).get() is False
    assert len(mail.outbox) == 1


def test_the_task_retries_with_backoff_on_any_error() -> None:
    """The send task is acknowledged late and retried, with backoff and jitter, on any error."""
    assert order_mail_deliver_task.acks_late is True
    assert order_mail_deliver_task.autoretry_for == (Exception,)
    assert order_mail_deliver_task.retry_backoff and order_mail_deliver_task.retry_jitter
    assert order_mail_deliver_task.max_retries and order_mail_deliver_task.max_retries >= 5


def test_the_sweep_sends_a_mail_whose_task_was_lost(
    blusa: Product, taza: Product, celery_app: Any, run_queued: Any, settings: Any
) -> None:
    """Given a mail due eleven minutes ago whose task was lost, and one due a minute ago, when
    the beat's sweep runs, then the old one is sent and the recent one left to its own task;
    a second sweep within the hour queues nothing again."""
    order = order_of(blusa, taza)
    lost = OrderMail.objects.create(
        order=order,
        kind="received",
        key="received",
        created_at=timezone.now() - timedelta(minutes=11),
    )
    recent = OrderMail.objects.create(
        order=order, kind="expired", key="expired", created_at=timezone.now() - timedelta(minutes=1)
    )

    order_mails_sweep_task.delay()
    assert run_queued() == ["checkout.tasks.order_mails_sweep_task", SEND_TASK]

    assert OrderMail.objects.get(pk=lost.pk).sent_at is not None
    assert OrderMail.objects.get(pk=recent.pk).sent_at is None
    assert len(sent_for(order)) == 1
    assert order_mails_sweep_task.apply().get() == 0
    assert "order-mails-sweep" in settings.CELERY_BEAT_SCHEDULE
    assert (
        settings.CELERY_BEAT_SCHEDULE["order-mails-sweep"]["task"]
        == "checkout.tasks.order_mails_sweep_task"
    )


def test_a_mail_being_sent_by_another_worker_is_skipped(
    blusa: Product, taza: Product, django_capture_on_commit_callbacks: Any
) -> None:
    """A mail already sent is not sent again by a second claim."""
    order = order_of(blusa, taza)
    [mail_id] = queue(order, django_capture_on_commit_callbacks)
    assert order_mail_deliver(mail_id=mail_id) is True
    assert order_mail_deliver(mail_id=mail_id) is False
    assert len(mail.outbox) == 1


# --- Through the real flow: a partial shipment of a held order, against the sandbox ---------------


@pytest.mark.sandbox
def test_a_partial_shipment_mails_the_amount_charged_and_the_amount_released(
    provider: Api,
    settings: Any,
    blusa: Product,
    taza: Product,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """Given an order held on the card (blusa + 2 tazas, $1,868.00), when staff ship only the
    blusa, then the shopper gets one "shipped and charged" mail saying $1,290.00 was charged
    and $578.00 released, with the order's link; no shipped mail besides."""
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.PAYMENTS_CAPTURE_METHOD = "manual"
    browser = shopper()
    with django_capture_on_commit_callbacks(execute=True):
        order = place_order(browser, (blusa, 1), (taza, 2))
    body = {"card_token": provider.card_token()["id"], "attempt_id": uuid.uuid4().hex}
    with django_capture_on_commit_callbacks(execute=True), creates_sent_here():
        taken = browser.post(
            reverse("checkout:pay_attempt", args=[order.reference]),
            json.dumps(body),
            content_type="application/json",
        )
    assert (taken.status_code, taken.json()["result"]) == (202, "processing")
    status = browser.get(reverse("checkout:payment_status", args=[order.reference]))
    assert status.json()["result"] == "authorized"
    run_queued()
    blusa_item = order.items.get(product=blusa)

    with django_capture_on_commit_callbacks(execute=True):
        order_ship(order_id=order.pk, quantities={blusa_item.pk: 1}, actor=None)
    run_queued()  # the order's sync, and the mails

    kinds = list(OrderMail.objects.filter(order=order).values_list("kind", flat=True))
    assert sorted(kinds) == ["charged", "held", "received"]
    row = OrderMail.objects.get(order=order, kind=OrderMailKind.CHARGED)
    assert (row.amount, row.released) == (Decimal("1290.00"), Decimal("578.00"))
    [message] = [m for m in sent_for(order) if "va en camino" in m.subject]
    for content in (message.body, html_of(message)):
        assert "$1,290.00" in content and "$578.00" in content
        assert order_link(order.reference) in content
    assert len(sent_for(order)) == 3


@pytest.mark.sandbox
def test_shipping_a_charged_order_mails_what_shipped_with_no_sync(
    provider: Api,
    settings: Any,
    blusa: Product,
    taza: Product,
    django_capture_on_commit_callbacks: Any,
    run_queued: Any,
) -> None:
    """Given an order paid at once (automatic capture), when staff ship the blusa (no money
    moves, so no payment changes and no sync follows), then the shopper gets the "shipped" mail
    listing the blusa as shipped and the tazas as still to ship."""
    settings.SHOP_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.PAYMENTS_CAPTURE_METHOD = "automatic"
    browser = shopper()
    with django_capture_on_commit_callbacks(execute=True):
        order = place_order(browser, (blusa, 1), (taza, 2))
    body = {"card_token": provider.card_token()["id"], "attempt_id": uuid.uuid4().hex}
    with django_capture_on_commit_callbacks(execute=True):
        browser.post(
            reverse("checkout:pay_attempt", args=[order.reference]),
            json.dumps(body),
            content_type="application/json",
        )
    run_queued()
    blusa_item = order.items.get(product=blusa)

    with django_capture_on_commit_callbacks(execute=True):
        order_ship(order_id=order.pk, quantities={blusa_item.pk: 1}, actor=None)
    ran = run_queued()

    assert "checkout.tasks.order_sync_task" not in ran
    row = OrderMail.objects.get(order=order, kind=OrderMailKind.SHIPPED)
    assert row.sent_at is not None
    [message] = [m for m in sent_for(order) if "va en camino" in m.subject]
    assert "1 × Blusa bordada" in message.body and "2 × Taza de talavera" in message.body
    assert message.body.index("Lo que enviamos") < message.body.index("Por enviar")


# --- "My orders" ----------------------------------------------------------------------------------


def test_orders_list_mails_the_address_its_orders_with_their_links(
    blusa: Product, taza: Product
) -> None:
    """An address with orders gets one mail listing them (reference, total, status, link),
    most recent first, in the language asked; another address's orders are not in it."""
    older = order_of(blusa, taza)
    Order.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(days=2))
    newer = OrderFactory(lines=[(blusa, 1)], status=OrderStatus.PAID)
    other = OrderFactory(lines=[(taza, 1)], email="otra@example.com")

    assert orders_list_send(email="ANA@example.com", language="en") == 2

    [message] = mail.outbox
    assert message.to == ["ana@example.com"]
    assert message.subject == "Your orders at Tienda Tlali"
    page = html_of(message)
    for content in (message.body, page):
        assert order_link(older.reference) in content and order_link(newer.reference) in content
        assert other.reference not in content
        assert "$1,868.00" in content and "$1,290.00" in content
        assert "Paid" in content
        assert content.index(newer.reference) < content.index(older.reference)
    assert '<html lang="en">' in page


def test_orders_list_in_spanish(blusa: Product) -> None:
    OrderFactory(lines=[(blusa, 1)])
    assert orders_list_mail_task.apply(args=["ana@example.com", "es"]).get() == 1
    [message] = mail.outbox
    assert message.subject == "Tus pedidos en Tienda Tlali"
    assert "Pediste los pedidos" in message.body


def test_orders_list_sends_nothing_to_an_address_without_orders(blusa: Product) -> None:
    """An address that placed no order gets no mail at all."""
    OrderFactory(lines=[(blusa, 1)])
    assert orders_list_send(email="nadie@example.com", language="es") == 0
    assert mail.outbox == []
