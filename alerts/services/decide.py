"""What one alert event does, decided without writing anything (docs/adr/0008-alert-intake.md).

`decide` returns a `Decision`; `alerts.services.apply` carries it out, and the admin's
preview prints it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet

from alerts.models import Alert, AlertGroup, Integration, MappingRule
from alerts.parsers import AlertEvent
from incidents.models import CLOSED_STATUSES, ImpactWindow, Incident, Location, Product

FIRING = Alert.Status.FIRING
RESOLVED = Alert.Status.RESOLVED


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
    overflow: bool = False  # opens the draft that gathers groups beyond the cap


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


def has_human_update(incident: Incident) -> bool:
    # Entries the alert services post have no author; any authored one is a person's.
    return incident.updates.filter(author__isnull=False).exists()


def _latest_group(integration: Integration, group_key: str) -> AlertGroup | None:
    return (
        AlertGroup.objects.filter(integration=integration, group_key=group_key, is_overflow=False)
        .select_related("incident")
        .order_by("-created_at", "-id")
        .first()
    )


def open_window(incident: Incident, mapping: Mapping) -> ImpactWindow | None:
    return incident.windows.filter(
        product=mapping.product, location=mapping.location, ended_at__isnull=True
    ).first()


def _repeat_of(event: AlertEvent, alert: Alert | None) -> Decision | None:
    """A firing the alert's row already accounts for: a duplicate, or older than its resolution."""
    if alert is None:
        return None
    if alert.status == FIRING and (alert.group is not None or event.starts_at <= alert.starts_at):
        return Decision("duplicate", "already firing; nothing changes")
    if alert.status == RESOLVED:
        assert alert.ends_at is not None
        if event.starts_at < alert.ends_at:
            return Decision("stale", "older than the resolution already recorded (out of order); ignored")
    return None


def _flapped(integration: Integration, event: AlertEvent, alert: Alert | None) -> bool:
    if alert is None or alert.status != RESOLVED or alert.window is None:
        return False
    assert alert.ends_at is not None
    return event.starts_at - alert.ends_at <= timedelta(seconds=integration.flap_debounce_seconds)


def _decide_flap(integration: Integration, alert: Alert, mapping: Mapping) -> Decision | None:
    """Reopen the window of an alert that fired again soon after resolving, unless its
    incident is closed and a person has written on it (then it is treated as new)."""
    if alert.window is None or alert.group is None:
        return None
    incident = alert.group.incident
    if incident.is_closed and has_human_update(incident):
        return None
    return Decision(
        "flap",
        f"fired again within {integration.flap_debounce_seconds} s of resolving; reopens its window",
        mapping=mapping,
        group=alert.group,
        window=alert.window,
    )


def _open_drafts(integration: Integration, *, overflow: bool) -> QuerySet[AlertGroup]:
    return AlertGroup.objects.filter(
        integration=integration, is_overflow=overflow, incident__is_public=False
    ).exclude(incident__status__in=CLOSED_STATUSES)


def _open(integration: Integration, mapping: Mapping, why: str, previous: Incident | None = None) -> Decision:
    """Open a draft, unless the integration has ALERTS_MAX_OPEN_DRAFTS open already: then
    the group joins the one overflow draft, so a flood of groups cannot bury the console."""
    cap = settings.ALERTS_MAX_OPEN_DRAFTS
    if _open_drafts(integration, overflow=False).count() < cap:
        return Decision("open", f"opens a draft incident ({why})", mapping=mapping, previous=previous)
    reason = f"{cap} drafts are open for this integration; gathered into one draft ({why})"
    overflow = _open_drafts(integration, overflow=True).select_related("incident").order_by("-id").first()
    if overflow is None:
        return Decision("open", reason, mapping=mapping, overflow=True)
    window = open_window(overflow.incident, mapping)
    return Decision("join", reason, mapping=mapping, group=overflow, window=window)


def _decide_by_group(integration: Integration, event: AlertEvent, mapping: Mapping, why: str) -> Decision:
    """Join the group's open incident, reopen its recent automatic resolution, or open a draft."""
    group = _latest_group(integration, event.group_key)
    if group is None:
        return _open(integration, mapping, why)
    incident = group.incident
    if not incident.is_closed:
        return Decision(
            "join",
            f"joins the open incident of its group ({why})",
            mapping=mapping,
            group=group,
            window=open_window(incident, mapping),
        )
    assert incident.resolved_at is not None
    since = event.starts_at - incident.resolved_at
    recent = since <= timedelta(minutes=integration.reopen_within_minutes)
    if recent and not has_human_update(incident):
        return Decision(
            "reopen",
            f"its group's incident resolved by itself {_ago(since)} "
            f"before; reopens it as a recurrence ({why})",
            mapping=mapping,
            group=group,
        )
    return _open(integration, mapping, why, previous=incident if recent else None)


def _decide_firing(
    integration: Integration, rules: Sequence[MappingRule], event: AlertEvent, alert: Alert | None
) -> Decision:
    repeat = _repeat_of(event, alert)
    if repeat is not None:
        return repeat
    flapped = _flapped(integration, event, alert)
    mapping = _map(rules, dict(event.labels))
    if mapping is None:
        return Decision("record", "no rule matches and the integration has no default rule; recorded only")
    if flapped:
        assert alert is not None
        flap = _decide_flap(integration, alert, mapping)
        if flap is not None:
            return flap
    why = "default rule (no rule matches these labels)" if mapping.used_default else f"rule {mapping.rule}"
    return _decide_by_group(integration, event, mapping, why)


def _decide_resolved(event: AlertEvent, alert: Alert | None) -> Decision:
    assert event.ends_at is not None
    if alert is None:
        return Decision("record", "resolved before it was ever seen firing; recorded, no incident opened")
    if alert.status == RESOLVED:
        return Decision("duplicate", "already resolved; nothing changes")
    if event.ends_at < alert.starts_at:
        return Decision("stale", "the resolution of an earlier occurrence (out of order); ignored")
    return Decision("resolve", "resolved; closes its window", group=alert.group, window=alert.window)


def decide(
    integration: Integration, rules: Sequence[MappingRule], event: AlertEvent, alert: Alert | None
) -> Decision:
    if event.status == FIRING:
        return _decide_firing(integration, rules, event, alert)
    return _decide_resolved(event, alert)


def _ago(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"
