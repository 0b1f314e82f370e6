"""`manage.py staff_demo_code USER`: the code a demo account's authenticator shows now (demo and
development only: the tools app is never installed in production). Only for the demo accounts,
whose secrets are in the README."""

from __future__ import annotations

import base64
import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django_otp.oath import TOTP

from staff_signin.demo import DEMO_SECRETS


def demo_code(username: str, *, at: float | None = None) -> str:
    """The 6-digit code of a demo account's authenticator at `at` (now)."""
    totp = TOTP(base64.b32decode(DEMO_SECRETS[username]))
    totp.time = time.time() if at is None else at
    return f"{totp.token():06d}"


class Command(BaseCommand):
    help = "Print the current second-factor code of a demo staff account (admin, consulta)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("username", choices=sorted(DEMO_SECRETS))

    def handle(self, *args: Any, **options: Any) -> None:
        if options["username"] not in DEMO_SECRETS:
            raise CommandError("Only the demo accounts have a known secret.")
        left = 30 - int(time.time()) % 30
        self.stdout.write(demo_code(options["username"]))
        self.stderr.write(f"(valid for {left} more seconds; each code signs in once)")
