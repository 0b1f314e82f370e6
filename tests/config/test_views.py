"""The project's own endpoints (config/views.py): health, readiness and dependency probes."""

from __future__ import annotations

from django.test import Client


def test_healthz_answers_ok(client: Client) -> None:
    """/healthz says the process is up."""
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
