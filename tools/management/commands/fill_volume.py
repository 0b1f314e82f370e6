"""Fill the configured database with a plausible year of a busy shop (tools.volume)."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools import volume


class Command(BaseCommand):
    help = (
        "Fill the database (DATABASE_URL, PostgreSQL) with a year of made-up orders, payments, "
        "notifications and mails, generated in SQL, plus a fixed set of work in flight. Refuses "
        "a database that holds orders (unless --add) and runs only with DEBUG on or under the "
        "test and bench settings, never under config.settings.production."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--orders", type=int, default=1_000_000, help="orders in the year")
        parser.add_argument("--seed", type=int, default=1, help="same seed, same fill")
        parser.add_argument(
            "--add", action="store_true", help="add a year's worth to a database with orders"
        )

    def handle(self, *args: Any, orders: int, seed: int, add: bool, **options: Any) -> None:
        from django.conf import settings

        module = volume.settings_module()
        if not volume.fill_allowed(module, settings.DEBUG):
            raise CommandError(
                f"fill_volume refuses to run under {module or 'these settings'} with "
                f"DEBUG={settings.DEBUG}: it writes made-up orders, so it runs only with DEBUG on "
                "or under config.settings.test or bench.settings, never in production."
            )
        from checkout.models import Order

        if Order.objects.exists() and not add:
            raise CommandError(
                "The database already holds orders: fill_volume fills only a database without "
                "orders; give --add to add a year's worth to it."
            )
        call_command("seed_demo", stdout=self.stdout)  # the catalogue and the staff accounts
        self.stdout.write(f"Filling {orders:,} orders (seed {seed})…")
        try:
            report = volume.fill(orders=orders, seed=seed, add=add, progress=self.stdout.write)
        except volume.FillRefused as exc:
            raise CommandError(str(exc)) from exc
        for label, count in report.counts.items():
            self.stdout.write(f"  {label}: {count:,}")
        self.stdout.write(self.style.SUCCESS(f"Filled in {report.seconds:.0f} s."))
