"""Seed the shop's demo data: a staff account for the admin (idempotent)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

DEMO_ADMIN_USERNAME = "admin"
DEMO_ADMIN_PASSWORD = "tienda-demo-2026"  # documented in the README; demo only


class Command(BaseCommand):
    help = "Create the demo staff account (admin / tienda-demo-2026) if it does not exist."

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(
            username=DEMO_ADMIN_USERNAME,
            defaults={"email": "admin@tienda.example", "is_staff": True, "is_superuser": True},
        )
        if created:
            user.set_password(DEMO_ADMIN_PASSWORD)
            user.save(update_fields=["password"])
            self.stdout.write(f"Created the demo staff account '{DEMO_ADMIN_USERNAME}'.")
        else:
            self.stdout.write(f"The demo staff account '{DEMO_ADMIN_USERNAME}' already exists.")
