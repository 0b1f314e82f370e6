"""Scheduled work on payments: thin tasks over the reconciliation services."""

from __future__ import annotations

from celery import shared_task

from payments.reconciliation import authorizations_watch, payments_reconcile


@shared_task(acks_late=True, ignore_result=True)
def payments_reconcile_task() -> int:
    """Refresh payments that are not final and may have moved without a notification."""
    return payments_reconcile().checked


@shared_task(acks_late=True, ignore_result=True)
def authorizations_watch_task() -> int:
    """Warn staff about authorizations about to expire; refresh the expired ones."""
    report = authorizations_watch()
    return report.warned + report.refreshed
