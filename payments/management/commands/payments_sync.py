"""Read payments from the provider by id and bring the shop in line, as a notification would."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, no_translations

from payments.provider.errors import PaymentError
from payments.rereading.calls import payment_sync


class Command(BaseCommand):
    help = (
        "Read payments from the provider by their ids and apply them: update the payments the "
        "shop holds, attach unknown ones to their order (by external_reference), or report them "
        "unmatched. Safe to run at any time."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("provider_ids", nargs="+", help="the provider's payment ids")

    @no_translations  # an operator's tool: its report is in English throughout
    def handle(self, *args: Any, provider_ids: list[str], **options: Any) -> None:
        failed = 0
        for provider_id in provider_ids:
            try:
                result = payment_sync(provider_id=provider_id.strip())
            except PaymentError as exc:
                failed += 1
                self.stderr.write(f"{provider_id}: {exc.message}")
                continue
            where = f" -> payment #{result.payment.pk}" if result.payment else ""
            note = f" ({result.note})" if result.note else ""
            self.stdout.write(f"{provider_id}: {result.outcome}{where}{note}")
        if failed:
            raise CommandError(f"{failed} of {len(provider_ids)} could not be read.")
