"""Writes of alert intake: credentials, applying alert events, ticks, integrations and rules.

How an event changes things (decided in `_decide`, carried out in `_execute`):
- firing, new fingerprint (or a new occurrence of a resolved one): opens a draft incident
  (not public) with a window per mapped product and location from `startsAt`, or joins
  the open incident of the same group, or - within `reopen_within_minutes` of an
  automatic resolution - reopens that incident (a recurrence);
- firing again within `flap_debounce_seconds` of resolving: the alert flapped; its window
  is reopened rather than a new one opened;
- resolved: closes its window at `endsAt` once no other firing alert shares it; when every
  alert of the group is resolved and the debounce has passed, the incident resolves itself
  with a generated update - unless a person posted an update, then staff are told;
- the same event twice, an event older than what we already have (out of order), or a
  resolution for an alert never seen firing: recorded, nothing else changes.

Every payload is applied in one transaction holding the integration's row lock (so two
payloads of one sender never race to open two drafts for one group), and each alert row
is read with select_for_update before it is changed.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from alerts import parsers
from alerts.models import Alert, AlertGroup, Integration, MappingRule, ReceivedPayload, new_secret
from alerts.parsers import AlertEvent, PayloadError
from incidents import services as incidents
from incidents.models import ImpactLevel, ImpactWindow, Incident, IncidentImpact, Location, Product
from outbox import services as outbox

FIRING = Alert.Status.FIRING
RESOLVED = Alert.Status.RESOLVED

__all__ = ["IntakeUnauthorized", "PayloadError"]


class IntakeUnauthorized(Exception):
    """Unknown integration, disabled, or wrong credentials (one message for all: no oracle)."""


# --- Credentials --------------------------------------------------------------------------------


def signature_for(*, secret: str, body: bytes) -> str:
    """The generic kind's signature header value: `sha256=<hex HMAC-SHA256 of the body>`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def integration_authenticate(
    *, integration_id: int, authorization: str, signature: str, body: bytes
) -> Integration:
    integration = Integration.objects.filter(pk=integration_id, is_active=True).first()
    if integration is None:
        raise IntakeUnauthorized("Unknown integration or bad credentials.")
    if integration.kind == Integration.Kind.GENERIC:
        ok = hmac.compare_digest(signature.strip(), signature_for(secret=integration.secret, body=body))
    else:
        scheme, _, token = (authorization or "").strip().partition(" ")
        ok = scheme.lower() == "bearer" and hmac.compare_digest(token.strip(), integration.secret)
    if not ok:
        raise IntakeUnauthorized("Unknown integration or bad credentials.")
    return integration


# --- Deciding what an event does ----------------------------------------------------------------


@dataclass(frozen=True)
class Mapping:
    rule: MappingRule
    used_default: bool
    product: Product
    location: Location | None
    level: str


@dataclass(frozen=True)
class Decision:
    action: str  # duplicate | stale | record | open | join | reopen | flap | resolve
    reason: str
    mapping: Mapping | None = None
    group: AlertGroup | None = None
    window: ImpactWindow | None = None
    previous: Incident | None = None


def rule_matches(rule: MappingRule, labels: dict[str, str]) -> bool:
    return all(labels.get(str(k)) == str(v) for k, v in (rule.matchers or {}).items())


def match_rule(rules: Sequence[MappingRule], labels: dict[str, str]) -> tuple[MappingRule | None, bool]:
    """The first matching rule by position, else the default rule (flagged as such)."""
    for rule in rules:
        if not rule.is_default and rule_matches(rule, labels):
            return rule, False
    default = next((rule for rule in rules if rule.is_default), None)
    return default, default is not None


def _map(rules: Sequence[MappingRule], labels: dict[str, str]) -> Mapping | None:
    rule, used_default = match_rule(rules, labels)
    if rule is None:
        return None
    location = rule.location
    for name in (n.strip() for n in rule.location_labels.split(",")):
        value = labels.get(name) if name else None
        if value:
            found = Location.objects.filter(name=value).first()
            if found is not None:
                location = found
                break
    return Mapping(
        rule=rule, used_default=used_default, product=rule.product, location=location, level=rule.level
    )


def _has_human_update(incident: Incident) -> bool:
    # Entries the alert services post have no author; any authored one is a person's.
    return incident.updates.filter(author__isnull=False).exists()


def _latest_group(integration: Integration, group_key: str) -> AlertGroup | None:
    return (
        AlertGroup.objects.filter(integration=integration, group_key=group_key)
        .select_related("incident")
        .order_by("-created_at", "-id")
        .first()
    )


def _open_window(incident: Incident, mapping: Mapping) -> ImpactWindow | None:
    return incident.windows.filter(
        product=mapping.product, location=mapping.location, ended_at__isnull=True
    ).first()


def _decide_firing(
    integration: Integration, rules: Sequence[MappingRule], event: AlertEvent, alert: Alert | None
) -> Decision:
    if (
        alert is not None
        and alert.status == FIRING
        and (alert.group is not None or event.starts_at <= alert.starts_at)
    ):
        return Decision("duplicate", "already firing; nothing changes")
    flapped = False
    if alert is not None and alert.status == RESOLVED:
        assert alert.ends_at is not None
        if event.starts_at < alert.ends_at:
            return Decision("stale", "older than the resolution already recorded (out of order); ignored")
        debounce = timedelta(seconds=integration.flap_debounce_seconds)
        flapped = alert.window is not None and event.starts_at - alert.ends_at <= debounce
    mapping = _map(rules, dict(event.labels))
    if mapping is None:
        return Decision("record", "no rule matches and the integration has no default rule; recorded only")
    why = "default rule (no rule matches these labels)" if mapping.used_default else f"rule {mapping.rule}"
    if flapped and alert is not None and alert.window is not None and alert.group is not None:
        incident = alert.group.incident
        if not incident.is_closed or not _has_human_update(incident):
            return Decision(
                "flap",
                f"fired again within {integration.flap_debounce_seconds} s of resolving; reopens its window",
                mapping=mapping,
                group=alert.group,
                window=alert.window,
            )
    group = _latest_group(integration, event.group_key)
    previous = None
    if group is not None:
        incident = group.incident
        if not incident.is_closed:
            return Decision(
                "join",
                f"joins the open incident of its group ({why})",
                mapping=mapping,
                group=group,
                window=_open_window(incident, mapping),
            )
        assert incident.resolved_at is not None
        recent = event.starts_at - incident.resolved_at <= timedelta(
            minutes=integration.reopen_within_minutes
        )
        if recent and not _has_human_update(incident):
            return Decision(
                "reopen",
                f"its group's incident resolved by itself {_ago(event.starts_at - incident.resolved_at)} "
                f"before; reopens it as a recurrence ({why})",
                mapping=mapping,
                group=group,
            )
        if recent:
            previous = incident
    return Decision("open", f"opens a draft incident ({why})", mapping=mapping, previous=previous)


def _decide_resolved(event: AlertEvent, alert: Alert | None) -> Decision:
    assert event.ends_at is not None
    if alert is None:
        return Decision("record", "resolved before it was ever seen firing; recorded, no incident opened")
    if alert.status == RESOLVED:
        return Decision("duplicate", "already resolved; nothing changes")
    if event.ends_at < alert.starts_at:
        return Decision("stale", "the resolution of an earlier occurrence (out of order); ignored")
    return Decision("resolve", "resolved; closes its window", group=alert.group, window=alert.window)


def _decide(
    integration: Integration, rules: Sequence[MappingRule], event: AlertEvent, alert: Alert | None
) -> Decision:
    if event.status == FIRING:
        return _decide_firing(integration, rules, event, alert)
    return _decide_resolved(event, alert)


def _ago(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


# --- Carrying it out ----------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def suggested_title(event: AlertEvent, mapping: Mapping) -> str:
    """The alert's summary, made one clean line (the incident title rules refuse control
    characters; a sender's text is cleaned, not refused)."""
    title = _CONTROL.sub(" ", event.title or "").strip()
    title = " ".join(title.split())[:200]
    return title or f"Alert on {mapping.product.name}"


def _location_text(mapping: Mapping) -> str:
    return f" in {mapping.location.name}" if mapping.location is not None else ""


def _add_window(incident: Incident, event: AlertEvent, mapping: Mapping) -> ImpactWindow:
    existing = _open_window(incident, mapping)
    if existing is not None:
        return existing
    return incidents.impact_window_add(
        incident=incident,
        product=mapping.product,
        location=mapping.location,
        level=mapping.level,
        started_at=event.starts_at,
        description=f"From the alert: {suggested_title(event, mapping)}",
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
        body=f"The alert “{suggested_title(event, mapping)}” is firing again{_location_text(mapping)}.",
        display_at=event.starts_at,
    )
    group.incident.refresh_from_db()
    group.resolve_due_at = None
    group.save(update_fields=["resolve_due_at"])


def _open_draft(integration: Integration, event: AlertEvent, decision: Decision, now: datetime) -> AlertGroup:
    mapping = decision.mapping
    assert mapping is not None
    title = suggested_title(event, mapping)
    notes = [f"Opened from the {integration.get_kind_display()} integration “{integration.name}”."]
    if mapping.used_default:
        notes.append(
            "These labels matched no rule, so the default rule placed the impact: check the product, "
            "location and level."
        )
    incident = incidents.incident_open(
        title=title,
        impact=mapping.rule.impact,
        started_at=event.starts_at,
        body=f"We are investigating: {title}{_location_text(mapping)}.",
        windows=[
            incidents.WindowSpec(
                product=mapping.product,
                location=mapping.location,
                level=mapping.level,
                started_at=event.starts_at,
                description=f"From the alert: {title}",
            )
        ],
        is_public=False,
        # The opening entry notifies nobody while private (subscriptions skip drafts);
        # incident_publish announces it again when the draft goes public.
        notify=True,
        recurrence_of=decision.previous,
        internal_notes="\n".join(notes),
    )
    minutes = mapping.rule.auto_publish_after_minutes
    return AlertGroup.objects.create(
        integration=integration,
        group_key=event.group_key,
        incident=incident,
        rule=mapping.rule,
        publish_due_at=now + timedelta(minutes=minutes) if minutes is not None else None,
    )


def _execute(
    integration: Integration, event: AlertEvent, decision: Decision, alert: Alert | None, now: datetime
) -> Alert:
    if alert is None:
        alert = Alert(integration=integration, fingerprint=event.fingerprint, starts_at=event.starts_at)
    alert.last_received_at = now
    alert.note = decision.reason[:300]
    if decision.action in ("duplicate", "stale"):
        alert.save(update_fields=["last_received_at", "note"])
        return alert

    if event.status == FIRING:
        alert.status = FIRING
        alert.starts_at = event.starts_at
        alert.ends_at = None
        alert.labels = dict(event.labels)
        alert.annotations = dict(event.annotations)
        alert.url = event.url[:1000]
    mapping = decision.mapping
    if mapping is not None:
        alert.title = suggested_title(event, mapping)
        alert.rule = mapping.rule
        alert.used_default_rule = mapping.used_default

    if decision.action == "record":
        if event.status == RESOLVED:
            alert.status = RESOLVED
            alert.ends_at = event.ends_at
            alert.labels = dict(event.labels)
            alert.title = alert.title or _CONTROL.sub(" ", event.title)[:200]
        alert.save()
        return alert
    if decision.action == "resolve":
        return _resolve(integration, alert, event, now)

    assert mapping is not None
    group = decision.group
    if decision.action == "open":
        opened = _open_draft(integration, event, decision, now)
        alert.group = opened
        alert.window = opened.incident.windows.get()
    elif decision.action == "flap":
        assert group is not None and decision.window is not None
        alert.flaps += 1
        if group.incident.is_closed:
            _reopen_incident(group, event, mapping)
        window = ImpactWindow.objects.get(pk=decision.window.pk)
        alert.window = _reopen_window(window) if window.ended_at is not None else window
        group.resolve_due_at = None
        group.save(update_fields=["resolve_due_at"])
        alert.group = group
    elif decision.action == "reopen":
        assert group is not None
        _reopen_incident(group, event, mapping)
        alert.group = group
        alert.window = _add_window(group.incident, event, mapping)
    elif decision.action == "join":
        assert group is not None
        group.resolve_due_at = None
        group.save(update_fields=["resolve_due_at"])
        alert.group = group
        alert.window = _add_window(group.incident, event, mapping)
    alert.save()
    return alert


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
            _auto_resolve(group)
    return alert


def _staff_addresses() -> list[str]:
    configured = list(getattr(settings, "ALERTS_STAFF_EMAILS", []) or [])
    if configured:
        return configured
    users = get_user_model().objects.filter(is_staff=True, is_active=True).exclude(email="")
    return sorted(set(users.values_list("email", flat=True)))


def _auto_resolve(group: AlertGroup) -> str:
    """Every alert of the group is resolved and quiet: resolve, or tell staff."""
    group.resolve_due_at = None
    incident = Incident.objects.get(pk=group.incident_id)
    alerts = list(group.alerts.all())
    if incident.is_closed or any(a.status == FIRING for a in alerts):
        group.save(update_fields=["resolve_due_at"])
        return "nothing to resolve"
    last_end = max(a.ends_at for a in alerts if a.ends_at is not None)
    when = f"{last_end:%Y-%m-%d %H:%M} UTC"
    if _has_human_update(incident):
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
    names = sorted({a.title for a in alerts if a.title})
    listed = "".join(f"\n- {name}" for name in names[:20])
    incidents.incident_resolve(
        incident=incident,
        body=f"Every alert behind this incident has resolved; it was resolved automatically.{listed}",
        resolved_at=max(last_end, incident.started_at),
    )
    group.save(update_fields=["resolve_due_at"])
    return "resolved"


# --- Intake -------------------------------------------------------------------------------------


@dataclass
class IntakeResult:
    payload_id: int
    outcomes: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"payload": self.payload_id, "alerts": self.outcomes}


def _keep(
    integration: Integration, *, body: bytes, remote_addr: str, status: int, outcome: str, now: datetime
) -> ReceivedPayload:
    return ReceivedPayload.objects.create(
        integration=integration,
        received_at=now,
        remote_addr=remote_addr[:64],
        status_code=status,
        body=body.decode("utf-8", errors="replace"),
        outcome=outcome,
    )


def _ordered(events: Iterable[AlertEvent]) -> list[AlertEvent]:
    # Earliest first, so the first alert of a group opens its draft (and names it).
    return sorted(events, key=lambda e: (e.starts_at, e.fingerprint))


def alerts_receive(
    *, integration: Integration, body: bytes, remote_addr: str = "", now: datetime | None = None
) -> IntakeResult:
    """Apply one payload. Raises PayloadError (kept, and answered 400) when malformed."""
    now = now or timezone.now()
    try:
        events = parsers.parse_payload(integration.kind, body)
    except PayloadError as exc:
        _keep(integration, body=body, remote_addr=remote_addr, status=400, outcome=str(exc), now=now)
        raise
    try:
        with transaction.atomic():
            locked = Integration.objects.select_for_update().get(pk=integration.pk)
            rules = list(locked.rules.select_related("product", "location"))
            outcomes = []
            for event in _ordered(events):
                # No row yet is fine: the integration lock above already serialises
                # this sender's payloads, so nobody else can insert this fingerprint now.
                alert = (
                    Alert.objects.select_for_update(of=("self",))
                    .select_related("group__incident", "window")
                    .filter(integration=locked, fingerprint=event.fingerprint)
                    .first()
                )
                decision = _decide(locked, rules, event, alert)
                saved = _execute(locked, event, decision, alert, now)
                outcomes.append(
                    {
                        "fingerprint": event.fingerprint,
                        "status": event.status,
                        "action": decision.action,
                        "reason": decision.reason,
                        "incident": saved.group.incident.public_id
                        if saved.group_id and saved.group
                        else None,
                    }
                )
            kept = _keep(
                locked,
                body=body,
                remote_addr=remote_addr,
                status=200,
                outcome="\n".join(f"{o['fingerprint']}: {o['action']}: {o['reason']}" for o in outcomes),
                now=now,
            )
    except ValidationError as exc:
        message = "; ".join(exc.messages)
        _keep(integration, body=body, remote_addr=remote_addr, status=400, outcome=message, now=now)
        raise PayloadError(f"The alerts could not be applied: {message}") from exc
    return IntakeResult(payload_id=kept.pk, outcomes=outcomes)


def integration_preview(*, integration: Integration, body: bytes) -> list[str]:
    """What a payload would do, in words, without writing anything (the admin's test page)."""
    try:
        events = parsers.parse_payload(integration.kind, body)
    except PayloadError as exc:
        return [f"Refused (400): {exc}"]
    if not events:
        return ["The payload is valid but holds no alerts: nothing would change."]
    rules = list(integration.rules.select_related("product", "location"))
    opened: set[str] = set()
    lines = []
    for event in _ordered(events):
        alert = (
            Alert.objects.select_related("group__incident", "window")
            .filter(integration=integration, fingerprint=event.fingerprint)
            .first()
        )
        decision = _decide(integration, rules, event, alert)
        label = event.title or event.fingerprint
        if decision.action == "open" and event.group_key in opened:
            lines.append(f"{label} ({event.status}): would join the draft opened above.")
            continue
        text = f"{label} ({event.status}): would {decision.action}: {decision.reason}"
        mapping = decision.mapping
        if mapping is not None and decision.action in ("open", "join", "reopen", "flap"):
            text += (
                f". Impact: {ImpactLevel(mapping.level).label} on {mapping.product.name}"
                f"{_location_text(mapping)} from {event.starts_at:%Y-%m-%d %H:%M:%S} UTC"
            )
        if decision.action == "open":
            opened.add(event.group_key)
            assert mapping is not None
            text += f"; suggested title “{suggested_title(event, mapping)}”"
        lines.append(text + ".")
    return lines


# --- Ticks --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TickResult:
    resolved: int
    published: int


def alerts_tick(*, now: datetime | None = None) -> TickResult:
    """Due automatic resolutions and auto-publications. Idempotent: a late or doubled beat
    only does what is due, once."""
    now = now or timezone.now()
    resolved = published = 0
    for pk, integration_id in AlertGroup.objects.filter(resolve_due_at__lte=now).values_list(
        "pk", "integration_id"
    ):
        with transaction.atomic():
            Integration.objects.select_for_update().get(pk=integration_id)
            group = AlertGroup.objects.filter(pk=pk, resolve_due_at__lte=now).first()
            if group is not None and _auto_resolve(group) == "resolved":
                resolved += 1
    for pk, integration_id in AlertGroup.objects.filter(publish_due_at__lte=now).values_list(
        "pk", "integration_id"
    ):
        with transaction.atomic():
            Integration.objects.select_for_update().get(pk=integration_id)
            group = (
                AlertGroup.objects.select_related("incident").filter(pk=pk, publish_due_at__lte=now).first()
            )
            if group is None:
                continue
            group.publish_due_at = None
            group.save(update_fields=["publish_due_at"])
            incident = group.incident
            still_firing = group.alerts.filter(status=FIRING).exists()
            if not incident.is_public and not incident.is_closed and still_firing:
                incidents.incident_publish(incident=incident)
                published += 1
    return TickResult(resolved=resolved, published=published)


def payloads_purge(*, now: datetime | None = None) -> int:
    """Drop kept payloads older than ALERTS_PAYLOAD_RETENTION_DAYS."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.ALERTS_PAYLOAD_RETENTION_DAYS)
    deleted, _ = ReceivedPayload.objects.filter(received_at__lt=cutoff).delete()
    return deleted


@transaction.atomic
def alert_draft_publish(*, incident: Incident) -> Incident:
    """Staff publish a draft (one click): public now, subscribers told, no auto-publish left."""
    AlertGroup.objects.filter(incident=incident).update(publish_due_at=None)
    return incidents.incident_publish(incident=incident)


# --- Integrations and rules (staff) -------------------------------------------------------------


def _clean_name(name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise ValidationError({"name": "Give the integration a name."})
    if _CONTROL.search(name):
        raise ValidationError({"name": "Control characters are not allowed."})
    return name[:100]


INTEGRATION_EDITABLE_FIELDS = frozenset(
    {"name", "is_active", "flap_debounce_seconds", "reopen_within_minutes"}
)


@transaction.atomic
def integration_create(
    *,
    name: str,
    kind: str,
    default_product: Product,
    default_level: str = ImpactLevel.PARTIAL_OUTAGE,
    default_impact: str = IncidentImpact.MINOR,
    flap_debounce_seconds: int = 300,
    reopen_within_minutes: int = 24 * 60,
    is_active: bool = True,
) -> Integration:
    """A new integration with a fresh secret and its default rule."""
    if kind not in Integration.Kind.values:
        raise ValidationError({"kind": f"Unknown kind {kind!r}."})
    name = _clean_name(name)
    if Integration.objects.filter(name=name).exists():
        raise ValidationError({"name": "An integration with this name exists."})
    integration = Integration.objects.create(
        name=name,
        kind=kind,
        flap_debounce_seconds=flap_debounce_seconds,
        reopen_within_minutes=reopen_within_minutes,
        is_active=is_active,
    )
    rule_save(
        integration=integration,
        is_default=True,
        product=default_product,
        level=default_level,
        impact=default_impact,
    )
    return integration


@transaction.atomic
def integration_update(*, integration: Integration, changes: dict[str, Any]) -> Integration:
    unknown = set(changes) - INTEGRATION_EDITABLE_FIELDS
    if unknown:
        raise ValidationError(f"These fields cannot be edited here: {', '.join(sorted(unknown))}.")
    integration = Integration.objects.select_for_update().get(pk=integration.pk)
    if "name" in changes:
        changes = {**changes, "name": _clean_name(changes["name"])}
        if Integration.objects.filter(name=changes["name"]).exclude(pk=integration.pk).exists():
            raise ValidationError({"name": "An integration with this name exists."})
    for name, value in changes.items():
        setattr(integration, name, value)
    if changes:
        integration.save(update_fields=[*changes, "updated_at"])
    return integration


@transaction.atomic
def integration_rotate_secret(*, integration: Integration) -> Integration:
    integration = Integration.objects.select_for_update().get(pk=integration.pk)
    integration.secret = new_secret()
    integration.save(update_fields=["secret", "updated_at"])
    return integration


_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,99}$")


def clean_matchers(value: Any) -> dict[str, str]:
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise ValidationError(
            {"matchers": 'Give an object of label names to values, e.g. {"service": "storage"}.'}
        )
    cleaned = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _LABEL_NAME.match(key):
            raise ValidationError({"matchers": f"{str(key)[:40]!r} is not a label name."})
        if not isinstance(item, str) or _CONTROL.search(item) or len(item) > 200:
            raise ValidationError({"matchers": f"The value of {key!r} must be one line of text."})
        cleaned[key] = item
    return cleaned


@transaction.atomic
def rule_save(
    *,
    integration: Integration,
    product: Product | None,
    rule: MappingRule | None = None,
    is_default: bool = False,
    matchers: Any = None,
    location: Location | None = None,
    location_labels: str = "zone,region",
    level: str = ImpactLevel.PARTIAL_OUTAGE,
    impact: str = IncidentImpact.MINOR,
    auto_publish_after_minutes: int | None = None,
    position: int = 0,
) -> MappingRule:
    """Create or change a mapping rule; one default per integration, which matches anything."""
    if product is None:
        raise ValidationError({"product": "Choose the product this rule maps to."})
    if level not in ImpactLevel.values:
        raise ValidationError({"level": f"Unknown impact level {level!r}."})
    if impact not in IncidentImpact.values:
        raise ValidationError({"impact": f"Unknown impact {impact!r}."})
    cleaned = clean_matchers(matchers)
    if is_default and cleaned:
        raise ValidationError({"matchers": "The default rule matches every alert: leave its matchers empty."})
    if not is_default and not cleaned:
        raise ValidationError(
            {"matchers": "Say which labels this rule matches (or make it the default rule)."}
        )
    names = [n.strip() for n in (location_labels or "").split(",") if n.strip()]
    for name in names:
        if not _LABEL_NAME.match(name):
            raise ValidationError({"location_labels": f"{name[:40]!r} is not a label name."})
    others = MappingRule.objects.filter(integration=integration, is_default=True)
    if rule is not None:
        others = others.exclude(pk=rule.pk)
    if is_default and others.exists():
        raise ValidationError({"is_default": "This integration already has a default rule."})
    if rule is not None and rule.is_default and not is_default:
        raise ValidationError({"is_default": "Keep a default rule: make another rule the default first."})
    rule = rule or MappingRule(integration=integration)
    rule.is_default = is_default
    rule.matchers = cleaned
    rule.product = product
    rule.location = location
    rule.location_labels = ",".join(names)
    rule.level = level
    rule.impact = impact
    rule.auto_publish_after_minutes = auto_publish_after_minutes
    rule.position = position
    rule.save()
    return rule


@transaction.atomic
def rule_delete(*, rule: MappingRule) -> None:
    if rule.is_default:
        raise ValidationError("The default rule cannot be deleted: every alert needs somewhere to go.")
    MappingRule.objects.filter(pk=rule.pk).delete()
