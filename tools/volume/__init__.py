"""A plausible year of a busy shop, written into the configured database for trying the admin
and the schedules on volume (`manage.py fill_volume`, `make volume`, `bench/volume.py`).

The year (`history`) is generated in SQL on the server, a month at a time, from deterministic
hashes of each row's id and the fill's seed: two fills with the same seed into empty databases
are alike. Its rows are settled, as the shop's own services would have left them. The last
hours (`tail`) are a fixed set of work in flight, the same whatever the year's size, so that
every beat schedule has the same things to do on a small fill and on a large one.

A fill refuses a database that holds orders (unless `add`) and settings that may be a
production's (`fill_allowed`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.conf import ENVIRONMENT_VARIABLE, settings
from django.db import connection, transaction
from django.db.models import Model
from django.utils import timezone

from checkout.models import Order
from payments.models import Payment
from payments.rereading.rules import schedule_from_last_change
from tools.volume import facturas, history, tail
from tools.volume.bulk import bulk_load

# Settings modules made for tests and benchmarks: a fill may run there with DEBUG off.
SCRATCH_SETTINGS = frozenset({"config.settings.test", "bench.settings"})
PRODUCTION_SETTINGS = "config.settings.production"
# The reference's five characters give 32**5 orders (checkout.models.new_reference).
MAX_ORDER_ID = 32**5


class FillRefused(Exception):
    """The fill would write where it must not; nothing was written."""


def fill_allowed(settings_module: str, debug: bool) -> bool:
    """Never under the production settings; elsewhere only with DEBUG on (a developer's
    machine) or under the settings made for tests and benchmarks."""
    if settings_module == PRODUCTION_SETTINGS:
        return False
    return debug or settings_module in SCRATCH_SETTINGS


def settings_module() -> str:
    """The settings module in use (the environment's when an override hides it)."""
    return str(getattr(settings, "SETTINGS_MODULE", None) or os.environ.get(ENVIRONMENT_VARIABLE))


@dataclass(frozen=True)
class FillReport:
    orders: int
    seconds: float
    counts: dict[str, int]


def fill(
    *,
    orders: int,
    seed: int = 1,
    add: bool = False,
    now: datetime | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> FillReport:
    """Fill the database with `orders` orders over the 365 days before `now`, plus the fixed
    tail of work in flight. Raises `FillRefused` (nothing written) on a database that holds
    orders unless `add`, or under settings that may be a production's."""
    _refuse_unless_allowed(orders=orders, add=add)
    started = time.monotonic()
    now = now or timezone.now()

    def timed(line: str) -> None:
        progress(f"  {line} ({time.monotonic() - started:.0f} s)")

    with transaction.atomic():
        top = Order.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        if top + orders + tail.ORDERS >= MAX_ORDER_ID:
            raise FillRefused("The shop's references have room for no more orders.")
        with bulk_load([model._meta.db_table for model in filled_models()]):
            actor = _fill_year(seed=seed, orders=orders, now=now, progress=timed)
            timed("indexes")
        tail.fill_tail(seed=seed, now=now, actor=actor)
        history.reset_sequences()
    timed("analyze")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return FillReport(orders=orders, seconds=time.monotonic() - started, counts=counts())


def _refuse_unless_allowed(*, orders: int, add: bool) -> None:
    """Raise `FillRefused` under settings that may be a production's, on a database other than
    PostgreSQL, on one that holds orders (unless `add`), or for a negative count of orders."""
    module = settings_module()
    if not fill_allowed(module, settings.DEBUG):
        raise FillRefused(
            f"fill_volume writes a year of made-up orders: it runs only with DEBUG on or under "
            f"{', '.join(sorted(SCRATCH_SETTINGS))}, never under {PRODUCTION_SETTINGS} "
            f"(settings: {module or 'unknown'}, DEBUG={settings.DEBUG})."
        )
    if connection.vendor != "postgresql":
        raise FillRefused("fill_volume generates its rows in PostgreSQL: set DATABASE_URL.")
    held = Order.objects.count()
    if held and not add:
        raise FillRefused(
            f"The database already holds {held} orders: fill_volume writes only into a database "
            "without orders, or adds to it with --add."
        )
    if orders < 0:
        raise FillRefused("--orders must be 0 or more.")


def _fill_year(
    *, seed: int, orders: int, now: datetime, progress: Callable[[str], None]
) -> history.Context:
    """The year's orders, a month at a time (`progress` told after each), what is not an
    order's, and the year's payments' read schedule; the fill's context."""
    actor = history.prepare(seed=seed, orders=orders, now=now)
    for label, done in history.fill_months(orders=orders, now=now, actor=actor):
        progress(f"{label}: {done:,} orders")
    history.fill_rest(orders=orders, now=now, actor=actor)
    facturas.fill_facturas()
    _schedule_reads(now)
    return actor


def _schedule_reads(now: datetime) -> None:
    """The year's payments' reads as the shop schedules them, from their last change (the
    tail's own are due: the same few at every size)."""
    with connection.cursor() as cursor:
        schedule_from_last_change(cursor, Payment._meta.db_table, now=now)
        # The rest have had their schedule already (the `payments-schedule` task finds
        # none left, as in a shop that has run the schedule for a year).
        cursor.execute(
            f"UPDATE {Payment._meta.db_table} SET checks_from = updated_at"  # noqa: S608
            " WHERE checks_from IS NULL AND provider_id IS NOT NULL"
        )


def filled_models() -> list[type[Model]]:
    """The models whose tables the fill writes."""
    from checkout.models import OrderEvent, OrderItem, OrderMail
    from payments.models import PaymentEvent, Refund, Subscription
    from staff_actions.models import StaffAction
    from webhooks.models import WebhookEvent

    models: list[type[Model]] = [Order, OrderItem, OrderEvent, OrderMail, Payment, PaymentEvent]
    return [*models, Refund, StaffAction, Subscription, WebhookEvent]


def counts() -> dict[str, int]:
    """How many rows each table of the fill holds."""
    return {model._meta.label: model.objects.count() for model in filled_models()}


__all__ = ["MAX_ORDER_ID", "FillRefused", "FillReport", "counts", "fill", "fill_allowed"]
__all__ += ["settings_module"]
