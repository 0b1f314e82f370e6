"""Snapshots stored before they were filtered may hold the card token that paid and the
webhook address (whose path is the webhook token): remove both."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def strip(apps: Any, schema_editor: Any) -> None:
    Payment = apps.get_model("payments", "Payment")
    for payment in Payment.objects.exclude(snapshot={}).only("pk", "snapshot").iterator():
        snapshot = payment.snapshot
        if not isinstance(snapshot, dict):
            continue
        method = snapshot.get("payment_method")
        has_token = isinstance(method, dict) and "token" in method
        if "webhook_url" not in snapshot and not has_token:
            continue
        snapshot.pop("webhook_url", None)
        if has_token:
            method.pop("token", None)
        Payment.objects.filter(pk=payment.pk).update(snapshot=snapshot)


class Migration(migrations.Migration):
    dependencies = [("payments", "0002_authorization_expiry_warning")]

    operations = [migrations.RunPython(strip, migrations.RunPython.noop)]
