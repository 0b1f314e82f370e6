"""Serve the sandbox: migrate and seed, start the webhook delivery worker, serve HTTP."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from waitress import serve

from sandbox.provider.seed import sandbox_seed
from sandbox.provider.webhook_delivery import DeliveryWorker
from sandbox.wsgi import application


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


class Command(BaseCommand):
    help = "Run the card payments service sandbox (API, pages, webhook delivery)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=settings.SANDBOX_PORT)
        parser.add_argument("--threads", type=int, default=8)
        parser.add_argument("--skip-setup", action="store_true", help="do not migrate and seed")

    def handle(self, *args: Any, **options: Any) -> None:
        Path(settings.VAR_DIR).mkdir(parents=True, exist_ok=True)
        if not options["skip_setup"]:
            call_command("migrate", interactive=False, verbosity=0)
            sandbox_seed()
        # Ctrl-C and SIGTERM stop the sandbox whatever handling it inherited (a shell or CI runner
        # that ignores SIGINT would otherwise leave it running).
        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        worker = DeliveryWorker()
        worker.start()
        host, port = options["host"], options["port"]
        self.stdout.write(
            f"Sandbox listening on http://{host}:{port} (public key {settings.SANDBOX_PUBLIC_KEY})",
        )
        self.stdout.flush()
        try:
            serve(
                application,
                host=host,
                port=port,
                threads=options["threads"],
                ident="payments-sandbox",
                clear_untrusted_proxy_headers=True,
            )
        finally:
            worker.stop()
