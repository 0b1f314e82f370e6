from typing import Any

from django.core.management.base import BaseCommand

from sandbox.provider.seed import sandbox_seed


class Command(BaseCommand):
    help = "Seed the sandbox: payment methods catalogue and demo subscriptions (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        sandbox_seed()
        self.stdout.write("Sandbox seeded: catalogue and demo subscriptions.")
