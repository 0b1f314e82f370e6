"""Monitoring's addresses: the probes, /metrics, and where browsers report CSP violations."""

from django.urls import path

from monitoring.csp_reports import CspReportView
from monitoring.metrics import metrics_view
from monitoring.probes import DependenciesView, HealthzView, ReadyzView

urlpatterns = [
    path("csp-report/", CspReportView.as_view(), name="csp_report"),
    path("healthz", HealthzView.as_view(), name="healthz"),
    path("healthz/deps", DependenciesView.as_view(), name="healthz_deps"),
    path("readyz", ReadyzView.as_view(), name="readyz"),
    path("metrics", metrics_view, name="metrics"),
]
