"""Carrying out a `Decision` on the alert's row, its group, incident and windows
(docs/adr/0008-alert-intake.md). Called under the integration's row lock by intake.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model

from alerts import wording
from alerts.models import Alert, AlertGroup, Integration
from alerts.parsers import CONTROL_CHARS, AlertEvent
from alerts.services.decide import FIRING, RESOLVED, Decision, Mapping, has_human_update, open_window
from incidents import services as incidents
from incidents.models import ImpactWindow, Incident
from outbox import services as outbox


def alert_summary(event: AlertEvent, mapping: Mapping) -> str:
    """The alert's own summary, made one clean line: for staff only (it may name our
    thresholds), so it goes to the alert's row and the draft's internal notes."""
    title = CONTROL_CHARS.sub(" ", event.title or "").strip()
    title = " ".join(title.split())[:200]
    return title or f"Alert on {mapping.product.name}"


def location_text(mapping: Mapping) -> str:
    return f" in {mapping.location.name}" if mapping.location is not None else ""


def public_words(mapping: Mapping) -> dict[str, str]:
    """What the public text of an alert-fed incident is built from (alerts.wording)."""
    location = mapping.location.label if mapping.location is not None else ""
    return {"level": mapping.level, "product": mapping.product.name, "location": location}


def draft_digest(incident: Incident) -> str:
    """A hash of the draft's title and opening message. A person's edit of either changes
    it: then the draft waits for that person instead of publishing itself."""
    opening = incident.updates.order_by("created_at", "id").first()
    text = f"{incident.title}\n{opening.body if opening is not None else ''}"
    return hashlib.sha256(text.encode()).hexdigest()


def draft_edited(group: AlertGroup) -> bool:
    """Has a person edited the draft (its title or opening message) or posted on it?"""
    incident = group.incident
    if has_human_update(incident):
        return True
    # Groups opened before the digest was kept have none: only an authored post tells.
    return bool(group.draft_digest) and draft_digest(incident) != group.draft_digest


def _add_window(incident: Incident, event: AlertEvent, mapping: Mapping) -> ImpactWindow:
    existing = open_window(incident, mapping)
    if existing is not None:
        return existing
    return incidents.impact_window_add(
        incident=incident,
        product=mapping.product,
        location=mapping.location,
        level=mapping.level,
        started_at=event.starts_at,
    )


def _reopen_window(window: ImpactWindow) -> ImpactWindow:
    return incidents.impact_window_edit(
        window=window,
        product=window.product,
        location=window.location,
        level=window.level,
        started_at=window.started_at,
        ended_at=None,
        description=window.description,
    )


def _reopen_incident(group: AlertGroup, event: AlertEvent, mapping: Mapping) -> None:
    incidents.incident_post_update(
        incident=group.incident,
        status=Incident.Status.INVESTIGATING,
        body=wording.recurrence_body(**public_words(mapping)),
        display_at=event.starts_at,
    )
    group.incident.refresh_from_db()
    group.resolve_due_at = None
    group.save(update_fields=["resolve_due_at"])


def _overflow_text(integration: Integration) -> str:
    return (
        f"{settings.ALERTS_MAX_OPEN_DRAFTS} drafts were open for this integration, so further alert "
        "groups are gathered in this one: review and split or publish them by hand."
    )


def _open_draft(integration: Integration, event: AlertEvent, decision: Decision, now: datetime) -> AlertGroup:
    mapping = decision.mapping
    assert mapping is not None
    title = wording.public_title(**public_words(mapping))
    if decision.overflow:
        title = f"Alerts from {integration.name}"[:200]
    body = wording.opening_body(**public_words(mapping))
    # The alert's own words stay internal: they may name a threshold or an expression.
    notes = [
        f"Opened from the {integration.get_kind_display()} integration “{integration.name}”.",
        f"Alert: “{alert_summary(event, mapping)}” (rule {mapping.rule}).",
    ]
    if decision.overflow:
        notes.append(_overflow_text(integration))
    if mapping.used_default:
        notes.append(
            "These labels matched no rule, so the default rule placed the impact: check the product, "
            "location and level."
        )
    incident = incidents.incident_open(
        title=title,
        impact=mapping.rule.impact,
        started_at=event.starts_at,
        body=body,
        windows=[
            incidents.WindowSpec(
                product=mapping.product,
                location=mapping.location,
                level=mapping.level,
                started_at=event.starts_at,
            )
        ],
        is_public=False,
        # The opening entry notifies nobody while private (subscriptions skip drafts);
        # incident_publish announces it again when the draft goes public.
        notify=True,
        recurrence_of=decision.previous,
        internal_notes="\n".join(notes),
    )
    # A gathered draft mixes groups: a person decides, it never publishes itself.
    minutes = None if decision.overflow else mapping.rule.auto_publish_after_minutes
    return AlertGroup.objects.create(
        integration=integration,
        group_key="overflow" if decision.overflow else event.group_key,
        incident=incident,
        rule=mapping.rule,
        publish_due_at=now + timedelta(minutes=minutes) if minutes is not None else None,
        draft_digest=draft_digest(incident),
        is_overflow=decision.overflow,
        needs_attention=_overflow_text(integration) if decision.overflow else "",
    )


def execute(
    integration: Integration, event: AlertEvent, decision: Decision, alert: Alert | None, now: datetime
) -> Alert:
    if alert is None:
        alert = Alert(integration=integration, fingerprint=event.fingerprint, starts_at=event.starts_at)
    alert.last_received_at = now
    alert.note = decision.reason[:300]
    if decision.action in ("duplicate", "stale"):
        alert.save(update_fields=["last_received_at", "note"])
        return alert
    _copy_event(alert, event, decision.mapping)
    if decision.action == "record":
        _record(alert, event)
        return alert
    if decision.action == "resolve":
        return _resolve(integration, alert, event, now)
    _place(integration, event, decision, alert, now)
    alert.save()
    return alert


def _copy_event(alert: Alert, event: AlertEvent, mapping: Mapping | None) -> None:
    if event.status == FIRING:
        alert.status = FIRING
        alert.starts_at = event.starts_at
        alert.ends_at = None
        alert.labels = dict(event.labels)
        alert.annotations = dict(event.annotations)
        alert.url = event.url[:1000]
    if mapping is not None:
        alert.title = alert_summary(event, mapping)
        alert.rule = mapping.rule
        alert.used_default_rule = mapping.used_default


def _record(alert: Alert, event: AlertEvent) -> None:
    if event.status == RESOLVED:
        alert.status = RESOLVED
        alert.ends_at = event.ends_at
        alert.labels = dict(event.labels)
        alert.title = alert.title or CONTROL_CHARS.sub(" ", event.title)[:200]
    alert.save()


def _place(
    integration: Integration, event: AlertEvent, decision: Decision, alert: Alert, now: datetime
) -> None:
    """Open, flap, reopen or join: give the alert its group and window."""
    mapping = decision.mapping
    assert mapping is not None
    group = decision.group
    if decision.action == "open":
        opened = _open_draft(integration, event, decision, now)
        alert.group = opened
        alert.window = opened.incident.windows.get()
        return
    assert group is not None
    if decision.action == "flap":
        assert decision.window is not None
        alert.flaps += 1
        if group.incident.is_closed:
            _reopen_incident(group, event, mapping)
        window = ImpactWindow.objects.get(pk=decision.window.pk)
        alert.window = _reopen_window(window) if window.ended_at is not None else window
        group.resolve_due_at = None
        group.save(update_fields=["resolve_due_at"])
    elif decision.action == "reopen":
        _reopen_incident(group, event, mapping)
        alert.window = _add_window(group.incident, event, mapping)
    elif decision.action == "join":
        group.resolve_due_at = None
        group.save(update_fields=["resolve_due_at"])
        alert.window = _add_window(group.incident, event, mapping)
    alert.group = group


def _resolve(integration: Integration, alert: Alert, event: AlertEvent, now: datetime) -> Alert:
    assert event.ends_at is not None
    alert.status = RESOLVED
    alert.ends_at = event.ends_at
    alert.save()
    window = ImpactWindow.objects.filter(pk=alert.window_id).first() if alert.window_id else None
    if window is not None and window.ended_at is None:
        sharing = Alert.objects.filter(window=window)
        if not sharing.filter(status=FIRING).exists():
            ends = [a.ends_at for a in sharing if a.ends_at is not None]
            incidents.impact_window_close(window=window, ended_at=max([*ends, window.started_at]))
    group = alert.group
    if group is not None and not group.alerts.filter(status=FIRING).exists():
        last_end = max(a.ends_at for a in group.alerts.all() if a.ends_at is not None)
        group.resolve_due_at = last_end + timedelta(seconds=integration.flap_debounce_seconds)
        group.save(update_fields=["resolve_due_at"])
        if group.resolve_due_at <= now:
            auto_resolve(group)
    return alert


def _staff_addresses() -> list[str]:
    configured = list(settings.ALERTS_STAFF_EMAILS or [])
    if configured:
        return configured
    users = get_user_model().objects.filter(is_staff=True, is_active=True).exclude(email="")
    return sorted(set(users.values_list("email", flat=True)))


def auto_resolve(group: AlertGroup) -> str:
    """Every alert of the group is resolved and quiet: resolve, or tell staff."""
    group.resolve_due_at = None
    incident = Incident.objects.get(pk=group.incident_id)
    alerts = list(group.alerts.all())
    if incident.is_closed or any(a.status == FIRING for a in alerts):
        group.save(update_fields=["resolve_due_at"])
        return "nothing to resolve"
    last_end = max(a.ends_at for a in alerts if a.ends_at is not None)
    when = f"{last_end:%Y-%m-%d %H:%M} UTC"
    if has_human_update(incident):
        group.needs_attention = (
            f"Every alert resolved at {when}, but a person has posted updates: resolve it by hand."
        )
        group.save(update_fields=["resolve_due_at", "needs_attention"])
        to = _staff_addresses()
        if to:
            outbox.email_enqueue(
                key=f"alerts-attention:{group.pk}:{int(last_end.timestamp())}",
                to=to,
                subject=f"Alerts resolved: {incident.title}"[:200],
                text=(
                    f"Every alert behind the incident “{incident.title}” resolved at {when}.\n\n"
                    "Someone has posted updates on it, so it was not resolved automatically. "
                    "Please post the resolution yourself.\n\n"
                    f"{settings.SITE_URL}/admin/incidents/incident/{incident.pk}/change/\n"
                ),
                purpose="alerts-attention",
                ref=f"incident:{incident.pk}",
            )
        return "staff told"
    # The alerts' names stay off the public text; staff see them on the incident's page.
    incidents.incident_resolve(
        incident=incident,
        body=wording.RESOLVED_BODY,
        resolved_at=max(last_end, incident.started_at),
    )
    group.save(update_fields=["resolve_due_at"])
    return "resolved"
