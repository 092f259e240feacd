"""Every write of the upstream room: providers (staff), polling (the beat), dependencies
and causes (staff). Design: docs/adr/0031-upstream-providers.md."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core import roles
from edge.version import public_state_changed
from incidents.models import Incident
from upstream import dependencies
from upstream.fetch import FetchError, fetch
from upstream.models import Dependency, IncidentCause, Provider, UpstreamComponent, UpstreamIncident
from upstream.parsers import ParseError, Read, parse

MANAGE = "upstream.manage"
BATCH = 50  # providers read per beat tick; the rest on the next one
KEEP_INCIDENTS = 50  # per provider, the most recently updated
_PROVIDER_FIELDS = frozenset({"name", "url", "kind", "poll_interval_seconds", "is_shown", "position"})


def _check_provider(provider: Provider) -> None:
    if provider.poll_interval_seconds < settings.UPSTREAM_MIN_INTERVAL_SECONDS:
        raise ValidationError(
            {
                "poll_interval_seconds": f"Read it at most every {settings.UPSTREAM_MIN_INTERVAL_SECONDS} seconds."
            }
        )
    provider.full_clean()


def provider_save(*, provider: Provider | None = None, actor: Any = None, **fields: Any) -> Provider:
    """Create (no `provider`) or change a provider; the next beat reads it."""
    roles.check(actor, MANAGE)
    unknown = set(fields) - _PROVIDER_FIELDS
    if unknown:
        raise ValidationError(f"Unknown fields: {', '.join(sorted(unknown))}.")
    with transaction.atomic():
        # The row as the poller left it (a stale copy must not undo a read).
        target = Provider.objects.select_for_update().get(pk=provider.pk) if provider else Provider()
        url_changed = provider is not None and "url" in fields and fields["url"] != target.url
        for name, value in fields.items():
            setattr(target, name, value)
        if url_changed:
            target.etag = target.last_modified = ""
        _check_provider(target)
        target.next_poll_at = None  # read it on the next beat
        target.save()
        public_state_changed()
    if provider is not None:
        provider.refresh_from_db()
    return target


def provider_delete(*, provider: Provider, actor: Any = None) -> None:
    roles.check(actor, MANAGE)
    with transaction.atomic():
        provider.delete()
        public_state_changed()


# --- Polling ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PollResult:
    read: int = 0
    unchanged: int = 0
    failed: int = 0


def backoff(provider: Provider) -> timedelta:
    """The wait after the n-th failure in a row: the interval doubled each time, capped."""
    seconds = provider.poll_interval_seconds * 2 ** min(provider.failures, 16)
    return timedelta(
        seconds=min(seconds, max(settings.UPSTREAM_MAX_BACKOFF_SECONDS, provider.poll_interval_seconds))
    )


def _claim(provider_id: int, now: datetime) -> Provider | None:
    """Take the provider for this read unless another worker has it or it is not due: the
    claim pushes `next_poll_at` on, so a second beat tick skips it (idempotent)."""
    with transaction.atomic():
        provider = (
            Provider.objects.select_for_update(skip_locked=True)
            .filter(Q(next_poll_at__isnull=True) | Q(next_poll_at__lte=now), pk=provider_id)
            .first()
        )
        if provider is None:
            return None
        provider.last_attempt_at = now
        provider.next_poll_at = now + timedelta(seconds=provider.poll_interval_seconds)
        provider.save(update_fields=["last_attempt_at", "next_poll_at"])
        return provider


def providers_poll(*, now: datetime | None = None) -> PollResult:
    """Read every provider that is due (the beat task)."""
    now = now or timezone.now()
    due = Provider.objects.filter(Q(next_poll_at__isnull=True) | Q(next_poll_at__lte=now)).values_list(
        "pk", flat=True
    )
    counts = {"read": 0, "unchanged": 0, "failed": 0}
    for provider_id in list(due)[:BATCH]:
        provider = _claim(provider_id, now)
        if provider is None:
            continue
        counts[provider_poll(provider=provider, now=now)] += 1
    return PollResult(**counts)


def provider_poll(*, provider: Provider, now: datetime) -> str:
    """One read: "read", "unchanged" (304) or "failed"."""
    try:
        fetched = fetch(provider.url, etag=provider.etag, last_modified=provider.last_modified)
        read = None if fetched.not_modified else parse(provider.kind, fetched.body, url=provider.url)
    except (FetchError, ParseError) as exc:
        _failed(provider, str(exc), now)
        return "failed"
    provider_record(
        provider=provider, read=read, now=now, etag=fetched.etag, last_modified=fetched.last_modified
    )
    return "unchanged" if read is None else "read"


def provider_record(
    *, provider: Provider, read: Read | None, now: datetime, etag: str = "", last_modified: str = ""
) -> None:
    """Keep a good read (None: the document did not change) as of `now`; the poller's
    path, and the demo's for its recorded documents."""
    with transaction.atomic():
        provider = Provider.objects.select_for_update().get(pk=provider.pk)
        was_unknown = provider.failures > 0 or provider.last_success_at is None
        changed = _apply(provider, read, now) if read is not None else []
        provider.failures = 0
        provider.last_error = ""
        provider.last_success_at = now
        provider.etag, provider.last_modified = etag, last_modified
        provider.next_poll_at = now + timedelta(seconds=provider.poll_interval_seconds)
        provider.save()
        if provider.is_shown and (was_unknown or read is not None):
            public_state_changed()
        dependencies.components_changed(changed, now=now)


def _failed(provider: Provider, error: str, now: datetime) -> None:
    with transaction.atomic():
        provider = Provider.objects.select_for_update().get(pk=provider.pk)
        provider.failures += 1
        provider.last_error = error[:300]
        provider.next_poll_at = now + backoff(provider)
        provider.save(update_fields=["failures", "last_error", "next_poll_at"])
        if provider.failures == 1 and provider.is_shown:
            public_state_changed()  # the section now says "unknown since …"


def _apply(provider: Provider, read: Read, now: datetime) -> list[UpstreamComponent]:
    """Keep what the read says; return the components whose status changed."""
    kept = {c.external_id: c for c in provider.components.all()}
    changed: list[UpstreamComponent] = []
    seen = set()
    for item in read.components:
        seen.add(item.external_id)
        component = kept.get(item.external_id)
        if component is None:
            component = UpstreamComponent(provider=provider, external_id=item.external_id, changed_at=now)
        elif component.status != item.status:
            component.changed_at = now
            changed.append(component)
        component.name, component.status, component.position, component.is_listed = (
            item.name,
            item.status,
            item.position,
            True,
        )
        component.save()
    for external_id, component in kept.items():
        if external_id in seen:
            continue
        if read.components_complete:
            component.is_listed = False
        elif component.status != "operational":
            component.status, component.changed_at = "operational", now
            changed.append(component)
        component.save()
    _apply_incidents(provider, read, now)
    return changed


def _apply_incidents(provider: Provider, read: Read, now: datetime) -> None:
    seen = set()
    for item in read.incidents:
        seen.add(item.external_id)
        UpstreamIncident.objects.update_or_create(
            provider=provider,
            external_id=item.external_id,
            defaults={
                "title": item.title,
                "status": item.status,
                "level": item.level,
                "url": item.url,
                "started_at": item.started_at,
                "updated_at": item.updated_at or now,
                "resolved_at": item.resolved_at,
                "components": item.components,
            },
        )
    if read.incidents_open_only:
        provider.incidents.filter(resolved_at__isnull=True).exclude(external_id__in=seen).update(
            resolved_at=now, status="resolved"
        )
    # Keep a bounded history per provider.
    old = provider.incidents.order_by("-updated_at").values_list("pk", flat=True)[KEEP_INCIDENTS:]
    provider.incidents.filter(pk__in=list(old)).delete()


# --- Dependencies and causes ---------------------------------------------------------------------


def dependency_save(*, dependency: Dependency | None = None, actor: Any = None, **fields: Any) -> Dependency:
    roles.check(actor, MANAGE)
    target = dependency or Dependency()
    for name, value in fields.items():
        setattr(target, name, value)
    if target.on_product_id is not None and target.on_product_id == target.product_id:
        raise ValidationError({"on_product": "A product cannot depend on itself."})
    if (target.on_product_id is None) == (target.on_component_id is None):
        raise ValidationError("Choose one of our products or one upstream component.")
    if target.on_component_id is not None and target.on_location_id is not None:
        raise ValidationError({"on_location": "A location applies to our own products only."})
    target.full_clean()
    same = Dependency.objects.filter(
        product_id=target.product_id,
        on_product_id=target.on_product_id,
        on_location_id=target.on_location_id,
        on_component_id=target.on_component_id,
    ).exclude(pk=target.pk)
    if same.exists():
        raise ValidationError("This dependency is already recorded.")
    with transaction.atomic():
        target.save()
        # Already degraded when recorded: suggest now, not at the next change.
        dependencies.evaluate([target], now=timezone.now())
    return target


def dependency_delete(*, dependency: Dependency, actor: Any = None) -> None:
    roles.check(actor, MANAGE)
    dependency.delete()


def cause_add(*, incident: Incident, dependency: Dependency, actor: Any = None) -> IncidentCause:
    """The incident says it is caused by this dependency ("affected through …")."""
    roles.check(actor, "incident.edit")
    with transaction.atomic():
        cause, _ = IncidentCause.objects.get_or_create(
            incident=incident, label=dependency.target_label[:300], defaults={"dependency": dependency}
        )
        if incident.is_public:
            public_state_changed()
    return cause


def cause_delete(*, cause: IncidentCause, actor: Any = None) -> None:
    roles.check(actor, "incident.edit")
    with transaction.atomic():
        public = cause.incident.is_public
        cause.delete()
        if public:
            public_state_changed()
