"""Every task keeps its name whatever module holds its code: the release that is running while
a new one deploys queues by these names, and its queued messages must find a task."""

from __future__ import annotations

from config.celery import app

# The names of the release of 25 November (CHANGELOG.md), and every name since.
TASK_NAMES = {
    "books.tasks.books_export_task",
    "books.tasks.factura_mail_task",
    "books.tasks.factura_refund_check_task",
    "checkout.tasks.mails_prune_task",
    "checkout.tasks.order_mail_send_task",
    "checkout.tasks.order_mails_sweep_task",
    "checkout.tasks.order_release_duplicates_task",
    "checkout.tasks.order_sync_task",
    "checkout.tasks.orders_follow_payments_task",
    "checkout.tasks.orders_list_mail_task",
    "checkout.tasks.reservations_expire_task",
    "checkout.tasks.sessions_prune_task",
    "config.heartbeats.heartbeat_task",
    "payments.tasks.authorizations_watch_task",
    "payments.tasks.payment_confirm_create_task",
    "payments.tasks.payment_methods_refresh_task",
    "payments.tasks.payment_refresh_task",
    "payments.tasks.payment_send_create_task",
    "payments.tasks.payments_check_task",
    "payments.tasks.payments_reconcile_task",
    "payments.tasks.payments_schedule_task",
    "payments.tasks.payments_send_waiting_task",
    "payments.tasks.provider_check_task",
    "payments.tasks.staff_action_run_task",
    "payments.tasks.staff_actions_requeue_task",
    "staff_signin.tasks.sign_in_mail_task",
    "webhooks.tasks.webhook_process_task",
    "webhooks.tasks.webhook_relay_task",
    "webhooks.tasks.webhooks_prune_task",
}


def registered() -> set[str]:
    app.loader.import_default_modules()
    return {name for name in app.tasks if not name.startswith("celery.")}


def test_every_task_keeps_its_name() -> None:
    assert registered() == TASK_NAMES


def test_beat_and_the_routes_name_registered_tasks() -> None:
    from django.conf import settings

    names = registered()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled <= names, scheduled - names
    routed = set(settings.CELERY_TASK_ROUTES)
    assert routed <= names, routed - names
