"""The sale day's admission while the shop runs: how many wait, and the pace new shoppers are let
in at, changed for every process at once (checkout/admission/rules.py).

    manage.py admission                    # the pace and how many wait
    manage.py admission --per-second 20    # open the doors wider (0: no queue)
    manage.py admission --default          # back to SHOP_ADMISSION_PER_SECOND
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from checkout.admission.rules import admission_figures, pace_kind, pace_set, page_p95
from core.cache_redis import cache_is_redis


class Command(BaseCommand):
    help = "Show or change the pace the sale day's admission lets new shoppers in at."

    def add_arguments(self, parser: CommandParser) -> None:
        chosen = parser.add_mutually_exclusive_group()
        chosen.add_argument("--per-second", type=float, help="new shoppers let in a second")
        chosen.add_argument(
            "--default",
            action="store_true",
            help="back to SHOP_ADMISSION_PER_SECOND (auto: the pace the shop measures)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not cache_is_redis():
            raise CommandError("The admission needs Redis (REDIS_URL): there is no queue.")
        if options["per_second"] is not None:
            if options["per_second"] < 0:
                raise CommandError("--per-second must be 0 or more.")
            pace_set(options["per_second"])
        elif options["default"]:
            pace_set(None)
        per_second, waiting = admission_figures()
        p95 = page_p95()
        self.stdout.write(
            f"pace: {per_second:g} new shoppers a second; waiting: {waiting}; "
            f"set by: {pace_kind()}; pages p95: {'-' if p95 is None else f'{p95 * 1000:.0f} ms'}"
        )
