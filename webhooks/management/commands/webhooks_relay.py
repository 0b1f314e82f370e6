"""Queue again the notifications the broker never got, e.g. after Redis was down."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from webhooks.rules import webhook_relay


class Command(BaseCommand):
    help = (
        "Queue again webhook events left behind (received while the broker was down, or "
        "claimed by a worker that died). Safe to run at any time, and alongside the beat task."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--limit", type=int, default=500, help="most events to relay in one pass"
        )
        parser.add_argument(
            "--all", action="store_true", help="repeat passes until nothing is left behind"
        )
        parser.add_argument(
            "--older-than",
            type=int,
            default=None,
            help="only events waiting at least this many seconds (default: WEBHOOKS_RELAY_AFTER)",
        )

    def handle(
        self, *args: Any, limit: int, all: bool, older_than: int | None, **options: Any
    ) -> None:
        if older_than is None:
            older_than = settings.WEBHOOKS_RELAY_AFTER
        if limit < 1 or older_than < 0:
            raise CommandError("--limit must be at least 1 and --older-than at least 0.")
        total = 0
        now = timezone.now()  # one cutoff for every pass: a relayed row is not left behind again
        while True:
            relayed = webhook_relay(limit=limit, older_than=timedelta(seconds=older_than), now=now)
            total += relayed
            if not relayed or not all:
                break
        self.stdout.write(self.style.SUCCESS(f"{total} webhook event(s) relayed."))
