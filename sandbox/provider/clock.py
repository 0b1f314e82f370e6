"""The sandbox clock: real time plus an offset that tests and demos can advance."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from sandbox.provider.models import SandboxState


def now() -> datetime:
    offset = (
        SandboxState.objects.filter(pk=1).values_list("clock_offset_seconds", flat=True).first()
        or 0.0
    )
    return timezone.now() + timedelta(seconds=offset)


def advance(seconds: float) -> datetime:
    state = SandboxState.load()
    state.clock_offset_seconds += seconds
    state.save(update_fields=["clock_offset_seconds"])
    return now()


def iso(value: datetime | None) -> str | None:
    """ISO 8601 in UTC with sub-second precision, as the provider writes timestamps."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
