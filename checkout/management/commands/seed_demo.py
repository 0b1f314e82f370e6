"""Seed the shop's demo data: the product catalogue and two staff accounts, each with its
authenticator's secret (idempotent)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand

from checkout.management.demo_catalogue import DEMO_PRODUCTS
from checkout.models import Product
from staff_signin.demo import DEMO_SECRETS, demo_authenticator

# Documented in the README; demo only.
DEMO_ADMIN_USERNAME = "admin"
DEMO_ADMIN_PASSWORD = "tienda-demo-2026"
DEMO_VIEWER_USERNAME = "consulta"
DEMO_VIEWER_PASSWORD = "consulta-demo-2026"
# consulta sees orders (and the mails sent to their customers), payments, subscriptions and
# notifications, and may do nothing.
VIEW_ONLY = {
    "checkout": [
        "view_order",
        "view_orderitem",
        "view_orderevent",
        "view_ordermail",
        "view_product",
    ],
    "payments": ["view_payment", "view_paymentevent", "view_refund", "view_subscription"],
    "webhooks": ["view_webhookevent"],
}


class Command(BaseCommand):
    help = (
        "Create the demo staff accounts: admin (every permission) and consulta (may only "
        "view orders, payments, subscriptions and notifications), if they do not exist, each "
        "with an authenticator of a fixed secret (printed, with how to get its code)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        for data in DEMO_PRODUCTS:
            fields = {k: v for k, v in data.items() if k != "slug"}
            _, created = Product.objects.get_or_create(slug=data["slug"], defaults=fields)
            if created:
                self.stdout.write(f"Created the product '{data['slug']}'.")
        admin_user = self._account(DEMO_ADMIN_USERNAME, DEMO_ADMIN_PASSWORD, superuser=True)
        viewer = self._account(DEMO_VIEWER_USERNAME, DEMO_VIEWER_PASSWORD, superuser=False)
        self._second_factor(admin_user)
        self._second_factor(viewer)
        viewer.user_permissions.set(
            [
                permission
                for app_label, codenames in VIEW_ONLY.items()
                for permission in Permission.objects.filter(
                    content_type__app_label=app_label, codename__in=codenames
                )
            ]
        )

    def _second_factor(self, user: Any) -> None:
        username = user.get_username()
        secret = DEMO_SECRETS[username]
        if demo_authenticator(user, secret):
            self.stdout.write(f"Gave '{username}' the demo authenticator.")
        self.stdout.write(
            f"  {username}: second factor: add the secret {secret} to an authenticator app, "
            f"or print the current code with `manage.py staff_demo_code {username}`."
        )

    def _account(self, username: str, password: str, *, superuser: bool) -> Any:
        user, created = get_user_model().objects.get_or_create(
            username=username,
            defaults={
                "email": f"{username}@tienda.example",
                "is_staff": True,
                "is_superuser": superuser,
            },
        )
        if created:
            user.set_password(password)
            user.save(update_fields=["password"])
            self.stdout.write(f"Created the demo staff account '{username}'.")
        else:
            self.stdout.write(f"The demo staff account '{username}' already exists.")
        return user
