"""`manage.py fill_volume`: a year of made-up orders that the shop's own rules would have left,
refused where it must not write."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Count, Sum
from django.test import Client, override_settings
from django.utils import timezone

from checkout.mails.selectors import order_mails_due
from checkout.models import Order, OrderItem, OrderMail
from checkout.orders.rules import CLOSED_STATUSES, charges_held, orders_out_of_step, status_given
from checkout.orders.selectors import order_payments
from payments.models import Payment, PaymentEvent, Refund, Subscription
from payments.rereading.selectors import payments_due_for_check, payments_waiting_to_send
from tests.factories import OrderFactory
from tests.helpers.settings import production_env, run
from tests.helpers.staff import sign_in_staff
from tools.volume import fill_allowed, tail
from tools.volume.pages import admin_pages
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db


def fill(orders: int = 300, *args: str) -> None:
    call_command("fill_volume", "--orders", str(orders), *args, stdout=open("/dev/null", "w"))


def test_a_small_fill_has_the_shape_of_a_busy_shop() -> None:
    """Given an empty database, when 300 orders are filled, then payments, ledger entries,
    notifications and mails come in the proportions of a busy shop's year."""
    fill(3000)
    orders = Order.objects.count()
    assert orders == 3000 + tail.ORDERS
    assert 1.05 <= Payment.objects.count() / orders <= 1.3
    assert 1.4 <= PaymentEvent.objects.count() / Payment.objects.count() <= 2.5
    assert 2.3 <= WebhookEvent.objects.count() / orders <= 3.6
    assert 2.4 <= OrderMail.objects.count() / orders <= 3.4
    assert 1 <= OrderItem.objects.count() / orders <= 3
    assert Subscription.objects.exists() and Refund.objects.exists()
    assert Order.objects.values("email").distinct().count() < orders * 0.8  # repeat customers
    statuses = set(Order.objects.values_list("status", flat=True))
    assert statuses >= {"paid", "authorized", "expired", "awaiting_payment", "refunded"}


def test_a_small_fill_has_more_than_a_page_of_subscriptions_and_of_failed_notifications() -> None:
    """The admin's lists of subscriptions and of failed notifications (100 a page) are measured
    full at every size: a small year has more than a page of each."""
    fill(300)

    assert Subscription.objects.count() > 100
    assert WebhookEvent.objects.filter(state="failed").count() > 100


def test_every_order_says_what_its_payments_say_and_has_its_mails() -> None:
    """Given a fill, every order's status is the one the shop's rules give its payments (an
    order the shop closed holds no charge), but for the tail's orders paid a moment ago and
    waiting for their sync; and every mail its state calls for exists."""
    fill(300)
    waiting = []
    for order in Order.objects.all():
        attempts = order_payments(order)
        if order.status in CLOSED_STATUSES:
            assert not charges_held(attempts), order.reference
        elif status_given(order, attempts) != order.status:
            waiting.append((order.status, status_given(order, attempts)))
            continue  # its sync, queued, mails it
        if order.created_at > timezone.now() - timedelta(days=3):
            due = {mail.key for mail in order_mails_due(order)}
            assert due <= set(order.mails.values_list("key", flat=True)), order.reference
    assert waiting == [("awaiting_payment", "paid")] * 4


def test_money_adds_up() -> None:
    """Given a fill, an order's total is its items', and no payment captured more than its
    amount or refunded more than it captured; refunds add up to what was refunded."""
    fill(300)
    for order in Order.objects.annotate(n=Count("items")):
        lines = sum((i.unit_price * i.quantity for i in order.items.all()), Decimal("0"))
        assert order.total == lines and order.total.as_tuple().exponent == -2
    for payment in Payment.objects.annotate(refunds_sum=Sum("refunds__amount")):
        assert 0 <= payment.refunded_amount <= payment.captured_amount <= payment.amount
        assert (payment.refunds_sum or 0) == payment.refunded_amount, payment.pk


def test_no_card_number_or_cvv_is_kept() -> None:
    """Given a fill, no payment, ledger entry or notification holds a card number, a CVV or a
    card token: only brands, BINs and last four digits."""
    fill(300)
    snapshots = json.dumps(list(Payment.objects.values_list("snapshot", flat=True)))
    assert "cvv" not in snapshots and '"token"' not in snapshots and '"number"' not in snapshots
    texts = snapshots + json.dumps(list(PaymentEvent.objects.values_list("message", flat=True)))
    assert not re.search(r"(?<![\w-])\d{13,19}(?![\w-])", texts)
    assert all(len(d) == 4 for d in Payment.objects.exclude(card_last_digits="").values_list(
        "card_last_digits", flat=True))  # fmt: skip


def test_every_schedule_finds_work_in_flight() -> None:
    """Given a fill, the schedules' reads find the tail's work: creates to send, payments to
    reconcile, orders out of step with their payments."""
    fill(30)
    assert len(payments_waiting_to_send()) == 7
    assert len(payments_due_for_check(now=timezone.now(), limit=500)) >= 4
    assert len(orders_out_of_step()) >= 4


def test_every_payment_has_had_its_read_schedule() -> None:
    """As in a shop that has run the schedule for a year: the `payments-schedule` task finds no
    payment written without one."""
    from payments.rereading.rules import schedule_unscheduled

    fill(30)
    assert Payment.objects.exclude(provider_id=None).filter(checks_from=None).count() == 0
    assert schedule_unscheduled() == 0


def test_refuses_a_database_with_orders_unless_added_to() -> None:
    """Given a database with an order, fill_volume refuses it and writes nothing; with --add,
    it adds a year's worth without clashing with what is there."""
    OrderFactory()
    with pytest.raises(CommandError, match="already holds orders"):
        fill(50)
    assert Order.objects.count() == 1 and not Payment.objects.exists()
    fill(50, "--add")
    fill(50, "--add")
    assert Order.objects.count() == 1 + 2 * (50 + tail.ORDERS)
    assert Order.objects.values("reference").distinct().count() == Order.objects.count()


def test_refuses_production_settings() -> None:
    """Under the production settings, or any other with DEBUG off, fill_volume refuses and
    writes nothing."""
    with override_settings(SETTINGS_MODULE="config.settings.production", DEBUG=True):
        with pytest.raises(CommandError, match="never in production"):
            fill(50)
    with override_settings(SETTINGS_MODULE="config.settings.staging", DEBUG=False):
        with pytest.raises(CommandError, match="never in production"):
            fill(50)
    assert not Order.objects.exists() and not get_user_model().objects.exists()
    assert fill_allowed("config.settings.local", True)
    assert fill_allowed("bench.settings", False) and fill_allowed("config.settings.test", False)


def test_the_production_settings_have_no_fill_command(tmp_path: Path) -> None:
    """The command comes with the `tools` app, which only the development, test and bench
    settings install: under the production settings manage.py does not know it."""
    result = run(["manage.py", "fill_volume", "--orders", "1"], production_env(tmp_path))

    assert result.returncode == 1, result.stdout + result.stderr
    assert "Unknown command: 'fill_volume'" in result.stderr


def test_every_admin_page_opens_on_the_filled_data() -> None:
    """Given a fill, staff open every list of orders, payments, notifications and
    subscriptions (by each filter, date, search and column), an order and a payment."""
    fill(100)
    admin = get_user_model().objects.get(username="admin")
    client = Client()
    sign_in_staff(client, admin)
    pages = admin_pages(admin)
    assert len(pages) > 60 and {"order page", "payment page"} <= {label for label, _ in pages}
    failed = [(label, client.get(path).status_code) for label, path in pages]
    assert [(label, status) for label, status in failed if status != 200] == []


def test_a_fill_leaves_every_index_and_check_as_the_migrations_made_them() -> None:
    """The fill drops the secondary indexes of the tables it writes and builds them again: the
    same indexes, valid, after it; and its rows pass the foreign keys' checks it skipped."""
    from django.db import connection

    def indexes() -> set[tuple[str, str, bool]]:
        """Each valid index: its name, its columns, whether it is partial."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT i.relname, x.indkey::text, x.indpred IS NOT NULL FROM pg_index x "
                "JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indisvalid "
                "AND pg_table_is_visible(i.oid)"
            )
            return set(cursor.fetchall())

    before = indexes()
    fill(200)

    assert indexes() == before
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(
            "SELECT count(*) FROM payments_paymentevent e "
            "LEFT JOIN payments_payment p ON p.id = e.payment_id WHERE p.id IS NULL"
        )
        assert cursor.fetchone()[0] == 0
        cursor.execute(
            "SELECT count(*) FROM checkout_orderitem i "
            "LEFT JOIN checkout_order o ON o.id = i.order_id WHERE o.id IS NULL"
        )
        assert cursor.fetchone()[0] == 0
