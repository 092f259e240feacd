"""Reads of the upstream room: the public "Third-party services" section and the
"affected through" lines. Never part of our uptime or SLA figures."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Prefetch

from upstream.models import IncidentCause, Provider, UpstreamComponent, UpstreamIncident

FEED_NOTICES = 3
FEED_NOTICE_DAYS = 7


@dataclass(frozen=True)
class ProviderView:
    provider: Provider
    unknown: bool
    since: datetime | None  # the last good read
    components: list[UpstreamComponent]
    incidents: list[UpstreamIncident]  # open ones (or a feed's recent notices)

    @property
    def is_feed(self) -> bool:
        return self.provider.kind == Provider.Kind.FEED


def is_unknown(provider: Provider, *, now: datetime) -> bool:
    """Never operational by default: unread, failing, or not read for three intervals."""
    if provider.last_success_at is None or provider.failures > 0:
        return True
    return now - provider.last_success_at > timedelta(seconds=3 * provider.poll_interval_seconds + 60)


def third_party_section(*, now: datetime) -> list[ProviderView]:
    """The providers the operator shows, each with its listed components and what is open."""
    providers = Provider.objects.filter(is_shown=True).prefetch_related(
        Prefetch("components", queryset=UpstreamComponent.objects.filter(is_listed=True)),
        Prefetch("incidents", queryset=UpstreamIncident.objects.order_by("-updated_at", "-pk")),
    )
    views = []
    for provider in providers:
        incidents = list(provider.incidents.all())
        if provider.kind == Provider.Kind.FEED:
            recent = now - timedelta(days=FEED_NOTICE_DAYS)
            shown = [i for i in incidents if i.updated_at and i.updated_at >= recent][:FEED_NOTICES]
        else:
            shown = [i for i in incidents if i.resolved_at is None]
        views.append(
            ProviderView(
                provider=provider,
                unknown=is_unknown(provider, now=now),
                since=provider.last_success_at,
                components=list(provider.components.all()),
                incidents=shown,
            )
        )
    return views


def incident_causes(incident_id: int) -> list[str]:
    """ "Cloud Storage (us-central1)" for each dependency the incident says caused it."""
    return list(
        IncidentCause.objects.filter(incident_id=incident_id)
        .order_by("label")
        .values_list("label", flat=True)
    )
