"""The alert rules and the Grafana dashboard (docs/monitoring) use only metrics a real /metrics
scrape exposes, so that they cannot drift from the code; each alert has a severity and a
runbook section that exists; the dashboard asks for its data source on import."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.metrics import TOKEN
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.django_db

MONITORING = ROOT / "docs" / "monitoring"
METRIC = re.compile(r"\bshop_[a-z0-9_]+\b")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load((MONITORING / "alerts.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard() -> dict[str, Any]:
    return json.loads((MONITORING / "grafana-dashboard.json").read_text())


def dashboard_exprs() -> list[str]:
    return [t["expr"] for p in dashboard()["panels"] for t in p.get("targets", [])]


def exposed(client: Client) -> set[str]:
    """Every name a scrape shows: its samples', and its families' even without samples yet
    (a counter with labels has none until counted)."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    found: set[str] = set()
    for family in text_string_to_metric_families(response.content.decode()):
        found.add(family.name)
        found.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ()))
        found.update(sample.name for sample in family.samples)
    return found


def test_every_metric_of_the_alerts_and_the_dashboard_is_exposed(
    client: Client, settings: Any, fresh_cache: None
) -> None:
    """Each shop_ name in alerts.yml and grafana-dashboard.json is in a real scrape."""
    if not str(settings.CELERY_BROKER_URL).startswith("redis"):
        pytest.skip("the queue lengths need Redis as the broker (REDIS_URL)")
    settings.METRICS_TOKEN = TOKEN
    used = {name for rule in alert_rules() for name in METRIC.findall(rule["expr"])}
    used |= {name for expr in dashboard_exprs() for name in METRIC.findall(expr)}
    assert len(used) > 20
    assert used - exposed(client) == set()


def test_every_alert_has_a_severity_a_summary_and_a_runbook_section() -> None:
    readme = (MONITORING / "README.md").read_text()
    anchors = {line[4:].strip().lower() for line in readme.splitlines() if line.startswith("### ")}
    for rule in alert_rules():
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        annotations = rule["annotations"]
        assert annotations["summary"] and annotations["description"], rule["alert"]
        page, _, anchor = annotations["runbook_url"].partition("#")
        assert (ROOT / page).exists(), rule["alert"]
        assert anchor in anchors, rule["alert"]


def test_the_dashboard_asks_for_its_prometheus_data_source() -> None:
    board = dashboard()
    assert [i["name"] for i in board["__inputs"]] == ["DS_PROMETHEUS"]
    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert len(panels) >= 20
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
        assert panel["targets"], panel["title"]
