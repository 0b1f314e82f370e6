"""The shop's Celery application: configured from Django settings (CELERY_*)."""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery, Task
from celery.signals import task_postrun, task_prerun, worker_ready
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("shop")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def _make_broker_folders(sender: Celery, **_: object) -> None:
    """The filesystem transport needs its folders to exist before the first message."""
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if folder := options.get(key):
            Path(folder).mkdir(parents=True, exist_ok=True)


@worker_ready.connect(weak=False)
def _refresh_payment_methods(**_: object) -> None:
    """A worker that starts queues one refresh of the stored payment methods catalogue (not
    one per worker: the refresh's marker), so that a fresh shop's payment page has it within
    seconds rather than at beat's next run."""
    from payments.catalogue.rules import payment_methods_refresh_request

    payment_methods_refresh_request()


# --- Database connections ------------------------------------------------------------------------
# As Django does around each request: before and after a task, the slot's connection is closed if
# it is older than CONN_MAX_AGE or unusable (and checked before its next use with
# CONN_HEALTH_CHECKS); otherwise it is kept for the next task (see CELERY_DB_REUSE_MAX). Not for
# a task run eagerly: it runs inside its caller, maybe inside the caller's transaction.


def _recycle_connections(task: Task | None = None, **_: object) -> None:
    if task is not None and getattr(task.request, "is_eager", False):
        return
    close_old_connections()


task_prerun.connect(_recycle_connections, weak=False)
task_postrun.connect(_recycle_connections, weak=False)
