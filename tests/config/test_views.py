"""The project's own endpoints (config/views.py): health, readiness and dependency probes, and
the pages of refusals."""

from __future__ import annotations

import html

import pytest
from django.test import Client


def test_healthz_answers_ok(client: Client) -> None:
    """/healthz says the process is up."""
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "said", "back"),
    [
        (
            "es",
            "Esta página estuvo abierta demasiado tiempo, o en otra pestaña, así que no se pudo "
            "enviar. Vuelve a cargarla e inténtalo de nuevo.",
            "Volver a la tienda",
        ),
        (
            "en",
            "This page was open for too long, or in another tab, so it could not be sent. Reload "
            "the page and try again.",
            "Back to the shop",
        ),
    ],
)
def test_a_form_refused_by_the_csrf_check_gets_the_shops_own_page(
    language: str, said: str, back: str
) -> None:
    """Given a shopper's form sent without its CSRF token (a page left open past its session,
    or a forged form), then the answer is the shop's 403 page in the shopper's language, saying
    what to do, and not Django's (which speaks as usted and of DEBUG); nothing is added."""
    shopper = Client(enforce_csrf_checks=True)
    shopper.cookies["django_language"] = language

    response = shopper.post("/carrito/agregar/taza-talavera/", {"quantity": "1"})

    assert response.status_code == 403
    page = response.content.decode()
    assert said in html.unescape(page)
    assert back in page
    for django_default in ("CSRF", "DEBUG", "usted", "Prohibido", "Forbidden"):
        assert django_default not in page
    assert "cart" not in shopper.session
