"""Scraping /metrics in tests: the samples of a scrape, by name and labels."""

from __future__ import annotations

from typing import Any

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

TOKEN = "metrics-test-token-4f8a2c9d1e7b"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: Client, token: str = TOKEN) -> Samples:
    """Every sample of a scrape answered 200 (the token given)."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return samples_of(response.content.decode())


def samples_of(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: Any) -> float:
    """The sample's value, 0 when the scrape has none (a counter not counted yet)."""
    return samples.get((name, frozenset((k, str(v)) for k, v in labels.items())), 0.0)


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}
