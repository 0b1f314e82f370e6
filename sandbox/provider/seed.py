"""Seed data of a fresh (or reset) sandbox: the catalogue and the demo subscriptions."""

from __future__ import annotations

from sandbox.provider.catalogue import CATALOGUE
from sandbox.provider.models import PaymentMethod, SandboxState
from sandbox.provider.subscriptions import subscriptions_seed


def catalogue_seed() -> None:
    """(Re)write the catalogue entries to their seed values, statuses included."""
    for position, entry in enumerate(CATALOGUE):
        PaymentMethod.objects.update_or_create(
            id=entry["id"],
            defaults={
                "country": "MX",
                "name": entry["name"],
                "type": entry["type"],
                "status": "active",
                "logo_file": entry["logo_file"],
                "validations": entry["validations"],
                "position": position,
            },
        )


def sandbox_seed() -> None:
    catalogue_seed()
    subscriptions_seed()
    SandboxState.load()
