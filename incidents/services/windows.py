"""Impact windows: what each product (and location) suffered, and when."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core.text import check_time
from incidents.models import ImpactWindow, Incident, Location, Product
from incidents.services._common import horizon_for, markdown_field, touch, validate_window


@transaction.atomic
def impact_window_add(
    *,
    incident: Incident,
    product: Product,
    level: str,
    started_at: datetime,
    ended_at: datetime | None = None,
    location: Location | None = None,
    description: str = "",
) -> ImpactWindow:
    validate_window(
        level=level, started_at=started_at, ended_at=ended_at, product=product, incident_kind=incident.kind
    )
    description, description_html = markdown_field(description, field="description")
    window = ImpactWindow.objects.create(
        incident=incident,
        product=product,
        location=location,
        level=level,
        started_at=started_at,
        ended_at=ended_at,
        description=description,
        description_html=description_html,
    )
    touch(incident)
    return window


@transaction.atomic
def impact_window_close(*, window: ImpactWindow, ended_at: datetime | None = None) -> ImpactWindow:
    window = ImpactWindow.objects.select_for_update().get(pk=window.pk)
    if window.ended_at is not None:
        raise ValidationError("This impact window is already closed.")
    check_time(ended_at, field="ended_at", future=horizon_for(window.incident.kind))
    ended_at = ended_at or timezone.now()
    if ended_at < window.started_at:
        raise ValidationError({"ended_at": "The end must not be before the start."})
    window.ended_at = ended_at
    window.save(update_fields=["ended_at"])
    touch(window.incident)
    return window


@transaction.atomic
def impact_window_edit(
    *,
    window: ImpactWindow,
    product: Product,
    level: str,
    started_at: datetime,
    ended_at: datetime | None = None,
    location: Location | None = None,
    description: str = "",
) -> ImpactWindow:
    """Correct an impact window (scope, level, times); the same rules as adding one."""
    window = ImpactWindow.objects.select_for_update().get(pk=window.pk)
    validate_window(
        level=level,
        started_at=started_at,
        ended_at=ended_at,
        product=product,
        incident_kind=window.incident.kind,
    )
    description, window.description_html = markdown_field(description, field="description")
    window.product = product
    window.location = location
    window.level = level
    window.started_at = started_at
    window.ended_at = ended_at
    window.description = description
    window.save(
        update_fields=[
            "product",
            "location",
            "level",
            "started_at",
            "ended_at",
            "description",
            "description_html",
        ]
    )
    touch(window.incident)
    return window


@transaction.atomic
def impact_window_delete(*, window: ImpactWindow) -> None:
    incident = window.incident
    ImpactWindow.objects.filter(pk=window.pk).delete()
    touch(incident)
