"""The shop's own pages and commands that exist from the start."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client


@pytest.mark.django_db
def test_home_page_names_the_shop(client: Client) -> None:
    """The home page answers in Spanish by default with the shop's name."""
    response = client.get("/")
    assert response.status_code == 200
    assert "Tienda Tlali" in response.content.decode()
    assert response["Content-Language"] == "es"


def test_healthz_answers_ok(client: Client) -> None:
    """/healthz says the process is up."""
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_seed_demo_creates_the_documented_staff_account_once(client: Client) -> None:
    """seed_demo creates admin / tienda-demo-2026, can run twice, and the account logs in."""
    call_command("seed_demo")
    call_command("seed_demo")
    assert get_user_model().objects.filter(username="admin", is_staff=True).count() == 1
    assert client.login(username="admin", password="tienda-demo-2026")
    assert client.get("/admin/").status_code == 200


def test_home_refuses_other_methods(client: Client) -> None:
    """A POST to a read-only page is a 405, not an error."""
    assert client.post("/").status_code in (403, 405)
