"""The shop's own reads of its payments (payments.rereading.rules): a handful in a payment's life,
decaying with the time since its last change, restarted by the reads a notification or staff
ask for; all within the provider read budget (payments.rereading.rules); and a read that finds
nothing new leaves the payment's `updated_at`."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.core.cache import cache
from django.utils import timezone

from payments.models import Payment
from payments.rereading.calls import payment_refresh, payment_sync
from payments.rereading.rules import RECHECK_AFTER, read_budget_spend, reads_left, spent_this_minute
from payments.statuses import PaymentStatus
from tests.factories import provider_payment
from tests.helpers.provider import Api

pytestmark = [pytest.mark.sandbox, pytest.mark.django_db]


def at(when: datetime) -> Any:
    """The shop's clock at `when` (and moving); the provider's is not moved."""
    return time_machine.travel(when, tick=True)


@pytest.fixture(autouse=True)
def fresh_budget() -> None:
    """Each test starts with this minute's reads uncounted."""
    cache.delete_pattern("*payments:provider-reads:*")


def test_an_approval_is_read_at_each_step_of_its_schedule_and_never_after(
    reconcile: Any, provider: Api, provider_gets: list[str]
) -> None:
    """An approval nobody asks about is read 1 h, 6 h, 1, 3, 7, 14 and 29 days after it was
    made: seven reads, each at its time and not before, then never again."""
    # Given an approval made now
    made = timezone.now()
    payment = provider_payment(provider)
    assert payment.next_check_at == payment.checks_from + RECHECK_AFTER[0]

    for step, offset in enumerate(RECHECK_AFTER):
        # When the schedule runs a minute before the step: nothing is read
        with at(made + offset - timedelta(minutes=1)):
            assert reconcile().checked == 0
        # When it runs a minute after it: the payment is read, once
        with at(made + offset + timedelta(minutes=1)):
            assert reconcile().checked == 1
        assert len(provider_gets) == step + 1
        payment.refresh_from_db()
        assert payment.checks_done == step + 1

    # Then its schedule is over: a year later nothing is read
    assert payment.next_check_at is None
    with at(made + timedelta(days=365)):
        assert reconcile().checked == 0
    assert provider_gets == [payment.provider_id] * len(RECHECK_AFTER)


def test_a_late_read_stands_for_the_steps_it_overtook(
    reconcile: Any, provider: Api, provider_gets: list[str]
) -> None:
    """A read made 4 days late (the budget was spent, the workers were down) is the 3-day
    step's: the next is the 7-day one, not three reads in a row."""
    made = timezone.now()
    payment = provider_payment(provider)

    with at(made + timedelta(days=4)):
        assert reconcile().checked == 1
        assert reconcile().checked == 0

    payment.refresh_from_db()
    assert payment.next_check_at == payment.checks_from + timedelta(days=7)
    assert len(provider_gets) == 1


@pytest.mark.parametrize("asked_by", ["notification", "staff"])
def test_a_read_asked_for_starts_the_schedule_again(
    reconcile: Any, provider: Api, provider_gets: list[str], asked_by: str, admin_user: Any
) -> None:
    """After two scheduled reads, a read for a notification or a staff member's refresh starts
    the count again from then: the next scheduled read is an hour later."""
    made = timezone.now()
    payment = provider_payment(provider)
    for offset in RECHECK_AFTER[:2]:
        with at(made + offset + timedelta(minutes=1)):
            reconcile()
    payment.refresh_from_db()
    assert (payment.checks_done, payment.next_check_at) == (
        2,
        payment.checks_from + RECHECK_AFTER[2],
    )

    # When, 8 hours after it was made, a notification names it or a staff member refreshes it
    asked = made + timedelta(hours=8)
    with at(asked):
        if asked_by == "notification":
            payment_sync(provider_id=payment.provider_id)
        else:
            payment_refresh(payment=payment, actor=admin_user)

    # Then its schedule counts from then
    payment.refresh_from_db()
    assert payment.checks_done == 0
    assert payment.checks_from - asked < timedelta(seconds=5)
    assert payment.next_check_at == payment.checks_from + RECHECK_AFTER[0]


def test_a_change_found_by_a_scheduled_read_starts_the_schedule_again(
    reconcile: Any, provider: Api, provider_gets: list[str]
) -> None:
    """A refund made at the provider and found at the 6-hour read counts the schedule from the
    moment it was found: the next read an hour later, not at the 1-day step."""
    made = timezone.now()
    payment = provider_payment(provider, amount="300.00")
    refunded = provider.post("/refunds", {"payment_id": payment.provider_id, "amount": 100})
    assert refunded.status_code in (200, 201), refunded.text

    found = made + RECHECK_AFTER[0] + timedelta(minutes=1)
    with at(found):
        report = reconcile()

    assert (report.checked, report.changed) == (1, 1)
    payment.refresh_from_db()
    assert payment.refunded_amount == 100
    assert payment.checks_done == 0
    assert payment.next_check_at == payment.checks_from + RECHECK_AFTER[0]
    assert payment.checks_from - found < timedelta(seconds=5)


@pytest.mark.parametrize("scheduled", [True, False])
def test_a_read_that_finds_nothing_new_leaves_updated_at(provider: Api, scheduled: bool) -> None:
    """A read whose answer changes nothing records when it was read (`last_synced_at`) and the
    schedule, and leaves `updated_at`, the time of the payment's last change, which the orders'
    sync looks at."""
    payment = provider_payment(provider)
    changed_at = payment.updated_at

    with at(timezone.now() + timedelta(hours=2)):
        payment_refresh(payment=payment, scheduled=scheduled)

    payment.refresh_from_db()
    assert payment.updated_at == changed_at
    assert payment.last_synced_at > changed_at + timedelta(hours=1)
    assert payment.status == PaymentStatus.APPROVED


def test_settled_payments_have_no_schedule(provider: Api) -> None:
    """A payment refunded in full is settled: never read on a schedule again."""
    approved = provider_payment(provider, amount="100.00")
    refunded = provider.post("/refunds", {"payment_id": approved.provider_id, "amount": 100})
    assert refunded.status_code in (200, 201), refunded.text
    payment_sync(provider_id=approved.provider_id)

    approved.refresh_from_db()
    assert approved.is_final and approved.refunded_amount == 100
    assert approved.next_check_at is None


# --- The read budget ---------------------------------------------------------------------------


def test_the_schedule_reads_no_more_than_the_budget_a_minute(
    reconcile: Any, provider: Api, provider_gets: list[str], settings: Any
) -> None:
    """With a budget of 3 reads a minute and 5 payments due, a run reads 3, a second run in the
    same minute none, and a run the next minute the other 2: the longest due first."""
    settings.PAYMENTS_PROVIDER_READS_PER_MINUTE = 3
    made = timezone.now()
    payments = [provider_payment(provider) for _ in range(5)]
    minute = (made + timedelta(hours=2)).replace(second=5)

    with time_machine.travel(minute, tick=False):
        first = reconcile()
        second = reconcile()
    with time_machine.travel(minute + timedelta(minutes=1), tick=False):
        third = reconcile()

    assert (first.checked, first.left_for_later) == (3, True)
    assert second.checked == 0
    assert (third.checked, third.left_for_later) == (2, False)
    assert provider_gets == [p.provider_id for p in payments]


def test_reads_for_notifications_are_never_held_back_and_count_against_the_budget(
    reconcile: Any, provider: Api, provider_gets: list[str], settings: Any
) -> None:
    """Notifications' reads go even past the budget; the schedule takes what they left of the
    minute, and nothing when they spent it."""
    settings.PAYMENTS_PROVIDER_READS_PER_MINUTE = 3
    payments = [provider_payment(provider) for _ in range(4)]
    minute = (timezone.now() + timedelta(hours=2)).replace(second=5)

    with time_machine.travel(minute, tick=False):
        for payment in payments[:2]:
            payment_sync(provider_id=payment.provider_id)
        assert reconcile().checked == 1  # 3 - 2
        for payment in payments[:2]:
            payment_sync(provider_id=payment.provider_id)  # over the budget: read all the same

    assert len(provider_gets) == 2 + 1 + 2


def test_without_the_cache_the_schedule_takes_half_the_budget(provider: Api, settings: Any) -> None:
    """With the cache unreachable the reads of others cannot be counted: the schedule allows
    itself half the budget."""
    settings.PAYMENTS_PROVIDER_READS_PER_MINUTE = 600
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.2, "SOCKET_TIMEOUT": 0.2},
        },
    }
    assert spent_this_minute() is None
    assert reads_left() == 300
    read_budget_spend()  # best effort: no error


def test_the_schedule_uses_its_index(provider: Api) -> None:
    """The due reads are found through the partial index on `next_check_at`, not by reading
    the table."""
    from django.db import connection

    provider_payment(provider)
    query = Payment.objects.filter(next_check_at__lte=timezone.now()).order_by("next_check_at")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = query[:10].explain()
    assert "payment_check_due" in plan


def test_due_reads_are_handed_out_in_tasks_once_and_again_when_a_task_is_lost(
    provider: Api, provider_gets: list[str], settings: Any, celery_app: Any, empty_broker: None
) -> None:
    """Five due payments with two a task make three check tasks; a second run hands none of
    them out again; when the tasks are lost, the five are handed out again once their lease
    (10 minutes) is over, and read then."""
    settings.PAYMENTS_CHECKS_PER_TASK = 2
    from payments.rereading.calls import payments_check, payments_reconcile
    from payments.task_names import CHECK_TASK
    from tests.helpers.broker import take_queued

    payments = [provider_payment(provider) for _ in range(5)]
    due = timezone.now() + timedelta(hours=2)

    with at(due):
        assert payments_reconcile().queued == 5
        assert payments_reconcile().queued == 0
    tasks = take_queued(celery_app)
    assert [(name, len(args[0])) for name, args in tasks] == [(CHECK_TASK, 2)] * 2 + [
        (CHECK_TASK, 1)
    ]
    assert provider_gets == []  # the tasks are lost

    with at(due + timedelta(minutes=11)):
        assert payments_reconcile().queued == 5
        for _name, args in take_queued(celery_app):
            payments_check(*args)
    assert sorted(provider_gets) == sorted(p.provider_id for p in payments)


def test_payments_written_without_a_schedule_get_their_next_step(provider: Api) -> None:
    """Payments from before the schedule (or generated in bulk) get the next step counted from
    their last change, the steps already past skipped; settled ones and those past their last
    step get none."""
    from django.db import connection

    from payments.rereading.rules import schedule_from_last_change

    approved, old, rejected = (provider_payment(provider) for _ in range(3))
    now = timezone.now()
    Payment.objects.update(checks_from=None, checks_done=0, next_check_at=None)
    Payment.objects.filter(pk=approved.pk).update(updated_at=now - timedelta(days=2))
    Payment.objects.filter(pk=old.pk).update(updated_at=now - timedelta(days=40))
    Payment.objects.filter(pk=rejected.pk).update(status=PaymentStatus.REJECTED)

    with connection.cursor() as cursor:
        schedule_from_last_change(cursor, Payment._meta.db_table)

    approved.refresh_from_db()
    assert approved.checks_done == 3  # 1 h, 6 h and 1 d are past: the next is at 3 days
    assert approved.next_check_at == approved.updated_at + timedelta(days=3)
    assert Payment.objects.get(pk=old.pk).next_check_at is None
    assert Payment.objects.get(pk=rejected.pk).next_check_at is None


def test_payments_written_by_the_previous_release_get_a_schedule_in_batches(
    provider: Api,
) -> None:
    """The release before the schedule writes payments without one: the `payments-schedule`
    beat task gives each the next step from its last change, a batch at a time (a run stopped
    half-way is resumed by the next), and leaves the scheduled ones alone."""
    from payments.rereading.rules import schedule_unscheduled
    from payments.tasks import payments_schedule_task

    recent, older, rejected, scheduled = (provider_payment(provider) for _ in range(4))
    now = timezone.now()
    unscheduled = Payment.objects.exclude(pk=scheduled.pk)
    unscheduled.update(checks_from=None, checks_done=0, next_check_at=None)
    Payment.objects.filter(pk=recent.pk).update(updated_at=now - timedelta(hours=2))
    Payment.objects.filter(pk=older.pk).update(updated_at=now - timedelta(days=2))
    Payment.objects.filter(pk=rejected.pk).update(status=PaymentStatus.REJECTED)
    before = Payment.objects.values_list("checks_from", "next_check_at").get(pk=scheduled.pk)

    assert schedule_unscheduled(batch=2, seconds=0) == 2  # one batch, then the time is up
    assert unscheduled.filter(checks_from__isnull=True).count() == 1
    assert payments_schedule_task() == 1  # the next run takes the rest
    assert schedule_unscheduled() == 0

    recent.refresh_from_db()
    assert recent.checks_done == 1  # 1 h is past: the next read is 6 h after its last change
    assert recent.next_check_at == recent.updated_at + timedelta(hours=6)
    older.refresh_from_db()
    assert older.checks_done == 3
    assert older.next_check_at == older.updated_at + timedelta(days=3)
    rejected.refresh_from_db()
    assert rejected.checks_from == rejected.updated_at and rejected.next_check_at is None
    after = Payment.objects.values_list("checks_from", "next_check_at").get(pk=scheduled.pk)
    assert after == before
