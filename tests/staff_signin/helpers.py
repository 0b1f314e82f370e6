"""The sign-in's two steps as a browser sends them (the Django test client)."""

from __future__ import annotations

from typing import Any

from django.test import Client
from django.urls import reverse

from staff_signin.models import SignInEvent

CODE_PAGE = reverse("admin:staff_signin_code")


def password(client: Client, username: str, secret: str) -> Any:
    return client.post(reverse("admin:login"), {"username": username, "password": secret})


def code(client: Client, typed: str) -> Any:
    return client.post(CODE_PAGE, {"code": typed})


def kinds(user: Any) -> list[str]:
    return list(SignInEvent.objects.filter(user=user).order_by("id").values_list("kind", flat=True))


def logged_in_as(client: Client) -> str | None:
    return client.session.get("_auth_user_id")
