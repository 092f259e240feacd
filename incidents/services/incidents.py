"""Incidents and maintenance: file (declare), post updates, resolve, edit, delete."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core import roles
from core.text import CLOCK_SKEW, check_time, clean_single_line, clean_text
from core.timezones import format_local
from incidents import events
from incidents.models import ImpactWindow, Incident, IncidentUpdate
from incidents.selectors import incident_shown_publicly
from incidents.services._common import (
    WindowSpec,
    horizon_for,
    impact_changed,
    markdown_field,
    public_changed,
    recorded,
    require_aware,
    validate_window,
)
from incidents.services.guards import check_not_declared_twice, check_update_not_repeated, record_declared
from incidents.services.windows import (
    OPERATIONAL,
    LevelSpec,
    impact_for_levels,
    impact_levels_set,
    impact_raise,
    impact_worst,
)

Status = Incident.Status


def _timeline_entry(
    *,
    kind: str,
    incident: Incident,
    status: str,
    body: str,
    display_at: datetime,
    author: User | None,
    notify: bool,
) -> IncidentUpdate:
    """Post one timeline entry, tell the rooms above, and mark the public state changed."""
    body, body_html = markdown_field(body, field="body", required=True)
    update = IncidentUpdate.objects.create(
        incident=incident,
        status=status,
        body=body,
        body_html=body_html,
        display_at=display_at,
        author=author,
        notify_subscribers=notify,
    )
    # Subscribers (and any other room that joined) hear of it inside this transaction.
    events.announce(kind=kind, incident=incident, update=update)
    public_changed(incident)
    return update


def _opening_status(*, kind: str, impact: str, status: str | None) -> str:
    """The status a new incident or maintenance starts in (by default the kind's first)."""
    if kind not in Incident.Kind.values:
        raise ValidationError({"kind": f"Unknown kind {kind!r}."})
    if impact not in Incident.Impact.values:
        raise ValidationError({"impact": f"Unknown impact {impact!r}."})
    is_maintenance = kind == Incident.Kind.MAINTENANCE
    allowed = Incident.MAINTENANCE_STATUSES if is_maintenance else Incident.INCIDENT_STATUSES
    status = status or (Status.SCHEDULED if is_maintenance else Status.INVESTIGATING)
    if status not in allowed or status in Incident.CLOSED_STATUSES:
        raise ValidationError({"status": f"A new {kind} cannot start as {status!r}."})
    return status


def _opening_start(
    *,
    kind: str,
    started_at: datetime | None,
    detected_at: datetime | None,
    scheduled_for: datetime | None,
    scheduled_until: datetime | None,
) -> datetime:
    """Check the opening times; the start of impact (a maintenance's: its scheduled start)."""
    ahead = horizon_for(kind)
    for name, value in (("started_at", started_at), ("detected_at", detected_at)):
        check_time(value, field=name, future=ahead)
    for name, value in (("scheduled_for", scheduled_for), ("scheduled_until", scheduled_until)):
        require_aware(value, field=name)
    if kind == Incident.Kind.MAINTENANCE:
        if scheduled_for is None or scheduled_until is None:
            raise ValidationError({"scheduled_for": "Maintenance needs a start and an end."})
        if scheduled_until < scheduled_for:
            raise ValidationError({"scheduled_until": "The end must not be before the start."})
        started_at = started_at or scheduled_for
    started_at = started_at or timezone.now()
    if detected_at is not None and detected_at < started_at:
        raise ValidationError({"detected_at": "Detection cannot precede the start of impact."})
    return started_at


def _first_entry_time(first_update_at: datetime | None, *, started_at: datetime) -> datetime:
    """The shown time of the opening entry: now (when it is posted) unless staff show it
    earlier, never before the impact began (docs/adr/0013-posted-and-shown-times.md)."""
    if first_update_at is None:
        return timezone.now()
    check_time(first_update_at, field="first_update_at", future=CLOCK_SKEW)
    if first_update_at < started_at:
        raise ValidationError(
            {
                "first_update_at": "The first update cannot be shown before the impact began "
                f"({format_local(started_at)})."
            }
        )
    return first_update_at


def check_shown_after_start(
    incident: Incident, display_at: datetime | None, *, field: str = "display_at"
) -> None:
    """An incident's entry is never shown before its impact began. A maintenance may be
    announced and updated before its window starts."""
    if display_at is not None and not incident.is_maintenance and display_at < incident.started_at:
        raise ValidationError(
            {field: f"This time is before the impact began ({format_local(incident.started_at)})."}
        )


def _checked_windows(windows: Sequence[WindowSpec], *, kind: str) -> list[tuple[WindowSpec, tuple[str, str]]]:
    """Each window with its description rendered, once all of them are known to be valid."""
    checked = []
    for spec in windows:
        validate_window(
            level=spec.level,
            started_at=spec.started_at,
            ended_at=spec.ended_at,
            product=spec.product,
            incident_kind=kind,
        )
        checked.append((spec, markdown_field(spec.description, field="description")))
    return checked


def _create_windows(incident: Incident, windows: list[tuple[WindowSpec, tuple[str, str]]]) -> None:
    ImpactWindow.objects.bulk_create(
        [
            ImpactWindow(
                incident=incident,
                product=spec.product,
                location=spec.location,
                level=spec.level,
                started_at=spec.started_at,
                ended_at=spec.ended_at,
                description=description,
                description_html=description_html,
            )
            for spec, (description, description_html) in windows
        ]
    )


@transaction.atomic
def incident_open(
    *,
    title: str,
    impact: str | None = None,
    started_at: datetime | None = None,
    summary: str = "",
    body: str = "",
    status: str | None = None,
    kind: str = Incident.Kind.INCIDENT,
    windows: Sequence[WindowSpec] = (),
    created_by: User | None = None,
    is_public: bool = True,
    detected_at: datetime | None = None,
    scheduled_for: datetime | None = None,
    scheduled_until: datetime | None = None,
    recurrence_of: Incident | None = None,
    internal_notes: str = "",
    notify: bool = True,
    first_update_at: datetime | None = None,
) -> Incident:
    """File an incident (or schedule a maintenance) with its first timeline entry, shown
    at the time it is posted unless `first_update_at` shows it earlier.

    No double-submit guard: the staff interfaces call `incident_declare`; this is also
    the write of alert-fed drafts and of the demo data.

    Without an `impact`, the worst level of the windows sets it (none without windows):
    the one rule of the console and the API.
    """
    roles.check(created_by, "incident.declare")
    title = clean_single_line(title, field="title")
    if impact is None:
        impact = impact_for_levels(spec.level for spec in windows)
    status = _opening_status(kind=kind, impact=impact, status=status)
    started_at = _opening_start(
        kind=kind,
        started_at=started_at,
        detected_at=detected_at,
        scheduled_for=scheduled_for,
        scheduled_until=scheduled_until,
    )
    summary, summary_html = markdown_field(summary, field="summary")
    body = clean_text(body, field="body")
    internal_notes = clean_text(internal_notes, field="internal_notes")
    checked_windows = _checked_windows(windows, kind=kind)
    first_shown_at = _first_entry_time(first_update_at, started_at=started_at)

    incident = Incident.objects.create(
        title=title,
        summary=summary,
        summary_html=summary_html,
        internal_notes=internal_notes,
        kind=kind,
        status=status,
        impact=impact,
        started_at=started_at,
        detected_at=detected_at,
        scheduled_for=scheduled_for,
        scheduled_until=scheduled_until,
        recurrence_of=recurrence_of,
        is_public=is_public,
        created_by=created_by,
    )
    _create_windows(incident, checked_windows)
    if checked_windows:
        impact_changed(incident)
    _timeline_entry(
        kind="opened",
        incident=incident,
        status=status,
        body=body or summary or title,
        display_at=first_shown_at,
        author=created_by,
        notify=notify,
    )
    return incident


@transaction.atomic
def incident_declare(*, title: str, confirm_duplicate_of: str | None = None, **fields: Any) -> Incident:
    """A person files an incident or a maintenance (console, admin): `incident_open`
    behind the duplicate guard. A title declared within minutes raises `DuplicateTitle`
    naming that incident, unless `confirm_duplicate_of` is its public id; even at the
    same instant, one of two identical submits is warned. The API calls `incident_open`
    itself: its retries are made safe by their Idempotency-Key."""
    roles.check(fields.get("created_by"), "incident.declare")
    guard = check_not_declared_twice(title=title, confirm_duplicate_of=confirm_duplicate_of)
    incident = incident_open(title=title, **fields)
    record_declared(guard=guard, incident=incident)
    return incident


@transaction.atomic
def incident_post_update(
    *,
    incident: Incident,
    status: str,
    body: str,
    author: User | None = None,
    display_at: datetime | None = None,
    notify: bool = True,
) -> IncidentUpdate:
    """Add a timeline entry; its status becomes the incident's status.

    Posting a closing status (resolved / completed) resolves the incident, closing its
    open windows. `postmortem` is reached only by publishing the report.
    """
    roles.check(author, "incident.update")
    if not (body or "").strip():
        raise ValidationError({"body": "Say what changed."})
    check_time(display_at, field="display_at", future=horizon_for(incident.kind))
    allowed = Incident.MAINTENANCE_STATUSES if incident.is_maintenance else Incident.INCIDENT_STATUSES
    if status not in allowed:
        raise ValidationError({"status": f"{status!r} is not a status for this {incident.kind}."})
    if status == Status.POSTMORTEM:
        raise ValidationError({"status": "Publish the incident report to move to postmortem."})
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    check_shown_after_start(incident, display_at)
    if status in (Status.RESOLVED, Status.COMPLETED):
        return incident_resolve(
            incident=incident, body=body, author=author, resolved_at=display_at, notify=notify
        )

    display_at = display_at or timezone.now()
    fields = ["status", "updated_at"]
    if incident.is_closed:
        # Reopening: the incident is ongoing again.
        incident.resolved_at = None
        fields.append("resolved_at")
    incident.status = status
    if status == Status.MONITORING and incident.mitigated_at is None and display_at >= incident.started_at:
        incident.mitigated_at = display_at
        fields.append("mitigated_at")
    incident.save(update_fields=fields)
    return _timeline_entry(
        kind="updated",
        incident=incident,
        status=status,
        body=body,
        display_at=display_at,
        author=author,
        notify=notify,
    )


@transaction.atomic
def incident_resolve(
    *,
    incident: Incident,
    body: str = "",
    author: User | None = None,
    resolved_at: datetime | None = None,
    notify: bool = True,
) -> IncidentUpdate:
    """Resolve (or complete, for maintenance): close open windows, record the time."""
    roles.check(author, "incident.resolve")
    # Row lock: two staff pressing "resolve" at once must not post two resolutions.
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    if incident.is_closed:
        raise ValidationError("This incident is already resolved.")
    # An incident's resolution is never in the future: one "in 9999" left the product in
    # major outage for good. A maintenance may be completed on its planned schedule.
    check_time(resolved_at, field="resolved_at", future=horizon_for(incident.kind))
    resolved_at = resolved_at or timezone.now()
    if resolved_at < incident.started_at:
        raise ValidationError(
            {"resolved_at": f"The resolution cannot precede the start ({format_local(incident.started_at)})."}
        )
    closed = 0
    for window in incident.windows.filter(ended_at__isnull=True):
        window.ended_at = max(resolved_at, window.started_at)
        window.save(update_fields=["ended_at"])
        closed += 1
    if closed:
        impact_changed(incident)

    closing = Status.COMPLETED if incident.is_maintenance else Status.RESOLVED
    incident.status = closing
    incident.resolved_at = resolved_at
    fields = ["status", "resolved_at", "updated_at"]
    if incident.mitigated_at is None:
        incident.mitigated_at = resolved_at
        fields.append("mitigated_at")
    incident.save(update_fields=fields)
    default_body = (
        "The maintenance is complete." if incident.is_maintenance else "This incident has been resolved."
    )
    return _timeline_entry(
        kind="resolved",
        incident=incident,
        status=closing,
        body=body.strip() or default_body,
        display_at=resolved_at,
        author=author,
        notify=notify,
    )


# --- Edits from the staff side (admin and API) ---------------------------------------
# Status is deliberately not editable here: it moves only through timeline updates,
# resolution and publishing, so the timeline always explains the current status.

INCIDENT_EDITABLE_FIELDS = frozenset(
    {
        "title",
        "summary",
        "internal_notes",
        "impact",
        "is_public",
        "started_at",
        "detected_at",
        "mitigated_at",
        "scheduled_for",
        "scheduled_until",
        "recurrence_of",
    }
)


def _cleaned_changes(incident: Incident, changes: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The changes with text cleaned and values checked one by one, and the rendered
    fields to save along with them."""
    changes = dict(changes)
    extra: list[str] = []
    if "title" in changes:
        changes["title"] = clean_single_line(changes["title"], field="title")
    if "summary" in changes:
        changes["summary"], incident.summary_html = markdown_field(changes["summary"], field="summary")
        extra.append("summary_html")
    if "internal_notes" in changes:
        changes["internal_notes"] = clean_text(changes["internal_notes"], field="internal_notes")
    if "impact" in changes and changes["impact"] not in Incident.Impact.values:
        raise ValidationError({"impact": f"Unknown impact {changes['impact']!r}."})
    if "started_at" in changes and changes["started_at"] is None:
        raise ValidationError({"started_at": "This field is required."})
    for name in ("started_at", "detected_at", "mitigated_at"):
        if name in changes:
            check_time(changes[name], field=name, future=horizon_for(incident.kind))
    for name in ("scheduled_for", "scheduled_until"):
        if name in changes:
            require_aware(changes[name], field=name)
    recurrence = changes.get("recurrence_of")
    if recurrence is not None and recurrence.pk == incident.pk:
        raise ValidationError({"recurrence_of": "An incident cannot be a recurrence of itself."})
    return changes, extra


def _check_edited_times(incident: Incident, changes: dict[str, Any]) -> None:
    """Checked on the result, so that moving the start and a later time together works."""
    for name in ("detected_at", "mitigated_at", "resolved_at"):
        value = getattr(incident, name)
        if value is not None and value < incident.started_at:
            field = name if name in changes else "started_at"
            raise ValidationError({field: f"{name.replace('_', ' ').capitalize()} precedes the start."})
    if incident.is_maintenance:
        if incident.scheduled_for is None or incident.scheduled_until is None:
            raise ValidationError({"scheduled_for": "Maintenance needs a start and an end."})
        if incident.scheduled_until < incident.scheduled_for:
            raise ValidationError({"scheduled_until": "The end must not be before the start."})


def _move_windows_started_at(incident: Incident, *, old_start: datetime) -> None:
    """Correcting the start of impact moves the windows that began with it, so the
    impact history, uptime and credits follow; one that would end before it starts is
    refused, naming its end."""
    moving = list(incident.windows.select_for_update(of=("self",)).filter(started_at=old_start))
    for window in moving:
        if window.ended_at is not None and window.ended_at < incident.started_at:
            raise ValidationError(
                {
                    "started_at": f"The impact on {window.product} ended at {format_local(window.ended_at)}, "
                    "before this start; correct that window first."
                }
            )
    ImpactWindow.objects.filter(pk__in=[w.pk for w in moving]).update(started_at=incident.started_at)


@transaction.atomic
def incident_edit(*, incident: Incident, changes: dict[str, Any], actor: User | None = None) -> Incident:
    """Edit the descriptive fields and times of an incident (not its kind or status)."""
    roles.check(actor, "incident.edit")
    unknown = set(changes) - INCIDENT_EDITABLE_FIELDS
    if unknown:
        raise ValidationError(f"These fields cannot be edited here: {', '.join(sorted(unknown))}.")
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    was_public = incident.is_public
    was_shown = incident_shown_publicly(incident)
    old_start = incident.started_at
    changes, extra = _cleaned_changes(incident, changes)
    for name, value in changes.items():
        setattr(incident, name, value)
    _check_edited_times(incident, changes)
    if incident.started_at != old_start:
        _move_windows_started_at(incident, old_start=old_start)
    if changes:
        incident.save(update_fields=[*changes, *extra, "updated_at"])
        moved_from = old_start if incident.started_at != old_start else None
        public_changed(incident, was_public=was_public, was_shown=was_shown, moved_from=moved_from)
    if incident.started_at != old_start or incident.is_public != was_public:
        # Windows that began with the incident moved with its start: the days between
        # the old and the new start are recounted too.
        moved = (min(old_start, incident.started_at), max(old_start, incident.started_at))
        impact_changed(incident, was_public=was_public, was_shown=was_shown, moved=[moved])
    elif changes:
        recorded(incident)  # e.g. the detection time: no impact moved, staff figures did
    return incident


@transaction.atomic
def incident_delete(*, incident: Incident, actor: User | None = None) -> None:
    """Remove an incident filed by mistake (with its windows, timeline and report)."""
    roles.check(actor, "incident.edit")
    windows = list(incident.windows.values_list("product_id", "started_at", "ended_at"))
    stored = Incident.objects.filter(pk=incident.pk).first()
    was_public = stored is not None and stored.is_public
    was_shown = stored is not None and incident_shown_publicly(stored)
    Incident.objects.filter(pk=incident.pk).delete()
    public_changed(incident, was_public=was_public, was_shown=was_shown)
    impact_changed(
        incident,
        products={product_id for product_id, _, _ in windows},
        was_public=was_public,
        was_shown=was_shown,
        moved=[(start, end) for _, start, end in windows],
    )


# --- The console's update: words and levels together ----------------------------------------


@transaction.atomic
def incident_post_update_with_levels(
    *,
    incident: Incident,
    status: str,
    body: str,
    levels: Sequence[LevelSpec] = (),
    impact: str | None = None,
    author: User | None = None,
    display_at: datetime | None = None,
    notify: bool = True,
) -> IncidentUpdate:
    """Post a timeline update that also says each product's level from its time on.

    The levels move the windows (`impact_levels_set`) at the update's time, in the same
    transaction as the update, so no reader sees the words without the levels. The
    levels and `impact` raise the incident's recorded impact (its worst), never lower it;
    the public banner follows the current levels. Resolving ends every impact, so a
    closing status refuses levels other than operational, and `impact`, when given with
    it, becomes the incident's final recorded impact.
    """
    # Checked here, not only in incident_post_update: the levels move first.
    roles.check(author, "incident.update")
    if impact is not None and impact not in Incident.Impact.values:
        raise ValidationError({"impact": f"Unknown impact {impact!r}."})
    closing = status in (Status.RESOLVED, Status.COMPLETED)
    if closing and any(spec.level != OPERATIONAL for spec in levels):
        raise ValidationError(
            {
                "levels": "Resolving ends every impact; set every product operational or post a "
                "monitoring update."
            }
        )
    check_shown_after_start(incident, display_at)
    display_at = display_at or timezone.now()
    if levels and not closing:
        impact_levels_set(incident=incident, levels=levels, at=display_at)
    update = incident_post_update(
        incident=incident,
        status=status,
        body=body,
        author=author,
        display_at=display_at,
        notify=notify,
    )
    if closing:
        if impact is not None:
            Incident.objects.filter(pk=incident.pk).exclude(impact=impact).update(
                impact=impact, updated_at=timezone.now()
            )
            public_changed(incident)
    elif levels or impact is not None:
        implied = impact_for_levels(spec.level for spec in levels)
        impact_raise(incident=incident, impact=impact_worst([implied, impact or implied]))
    return update


@transaction.atomic
def incident_post_update_once(*, incident: Incident, status: str, body: str, **fields: Any) -> IncidentUpdate:
    """A person posts an update (console): `incident_post_update_with_levels`, refused when
    it repeats the update just posted (a double submit)."""
    roles.check(fields.get("author"), "incident.update")
    # Row lock: a second submit waits for the first to commit, then sees its update.
    incident = Incident.objects.select_for_update().get(pk=incident.pk)
    check_update_not_repeated(incident=incident, status=status, body=body)
    return incident_post_update_with_levels(incident=incident, status=status, body=body, **fields)
