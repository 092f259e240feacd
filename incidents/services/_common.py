"""What every incident service shares: time checks, window checks, the change stamp."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.utils import timezone

from edge import version as public_cache
from incidents.models import ImpactWindow, Incident, Location, Product


def require_aware(value: datetime | None, *, field: str) -> None:
    if value is not None and timezone.is_naive(value):
        raise ValidationError({field: "A time zone is required."})


@dataclass(frozen=True)
class WindowSpec:
    """An impact window to create along with an incident."""

    product: Product
    level: str
    started_at: datetime
    ended_at: datetime | None = None
    location: Location | None = None
    description: str = ""


def validate_window(
    *, level: str, started_at: datetime, ended_at: datetime | None, product: Product | None
) -> None:
    if product is None:
        raise ValidationError({"product": "Choose the affected product."})
    if level not in ImpactWindow.Level.values:
        raise ValidationError({"level": f"Unknown impact level {level!r}."})
    require_aware(started_at, field="started_at")
    require_aware(ended_at, field="ended_at")
    if ended_at is not None and ended_at < started_at:
        raise ValidationError({"ended_at": "The end must not be before the start."})


def touch(incident: Incident) -> None:
    incident.save(update_fields=["updated_at"])
    public_cache.public_state_changed()
