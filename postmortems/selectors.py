"""Reads of the postmortem timeline: the automatic timeline of an incident, merged from
what the system already knows (the first alert, impact windows, detection, declaration,
public updates and the level changes they made, mitigation, resolution, report
publication) with the staff entries; the key durations; the incident links.

Public readers pass `public=True` and get public rows only: never an alert, an internal
entry or a staff-only product. Design: docs/adr/0020-timeline.md.
Also the review reads (a report's log and reviewers, revisions, factors, reflections,
report templates: docs/adr/0021-report-review.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from alerts.selectors import alerts_for_incident
from incidents.intervals import format_duration
from incidents.level_changes import update_level_changes
from incidents.models import ImpactLevel, ImpactWindow, Incident, IncidentReport, IncidentUpdate
from incidents.selectors import OPERATIONAL, incidents_public, window_interval
from postmortems import durations
from postmortems.models import (
    ContributingFactor,
    IncidentLink,
    LinkKind,
    Phase,
    Reflection,
    ReportRevision,
    ReportTemplate,
    ReviewEvent,
    ReviewRequest,
    TimelineEntry,
)

# The phase an update's status belongs to.
_STATUS_PHASE: dict[str, str] = {
    Incident.Status.INVESTIGATING: Phase.DIAGNOSIS,
    Incident.Status.IDENTIFIED: Phase.DIAGNOSIS,
    Incident.Status.MONITORING: Phase.MITIGATION,
    Incident.Status.RESOLVED: Phase.RESOLUTION,
    Incident.Status.POSTMORTEM: Phase.RESOLUTION,
}


@dataclass(frozen=True)
class TimelineRow:
    at: datetime
    kind: str  # alert, impact_start, impact_end, detection, declaration, update, level_change,
    # mitigation, resolution, report, entry
    phase: str
    text: str
    is_public: bool
    html: SafeString | str = ""  # a staff entry's or an update's sanitised Markdown
    entry: TimelineEntry | None = None

    @property
    def phase_label(self) -> str:
        return str(Phase(self.phase).label)

    @property
    def is_automatic(self) -> bool:
        return self.entry is None


def _level_label(level: str) -> str:
    return _("Operational") if level == OPERATIONAL else str(ImpactLevel(level).label)


def _place(window: ImpactWindow) -> str:
    where = window.location.label if window.location is not None else _("all locations")
    return f"{window.product.name}, {where}"


def _window_rows(windows: Sequence[ImpactWindow], now: datetime) -> list[TimelineRow]:
    rows = []
    for w in windows:
        public = w.product.is_public
        rows.append(
            TimelineRow(
                at=w.started_at,
                kind="impact_start",
                phase=Phase.OTHER,
                text=_("Impact starts: %(place)s (%(level)s)")
                % {"place": _place(w), "level": _level_label(w.level)},
                is_public=public,
            )
        )
        if w.ended_at is not None:
            rows.append(
                TimelineRow(
                    at=w.ended_at,
                    kind="impact_end",
                    phase=Phase.RESOLUTION,
                    text=_("Impact ends: %(place)s, after %(duration)s")
                    % {"place": _place(w), "duration": format_duration(window_interval(w, now=now).duration)},
                    is_public=public,
                )
            )
    return rows


def _update_rows(updates: Sequence[IncidentUpdate], windows: Sequence[ImpactWindow]) -> list[TimelineRow]:
    rows = []
    names = {w.product_id: (w.product.name, w.product.is_public) for w in windows}
    changes = update_level_changes(updates=updates, windows=windows)
    for update in updates:
        rows.append(
            TimelineRow(
                at=update.display_at,
                kind="update",
                phase=_STATUS_PHASE.get(update.status, Phase.OTHER),
                text=_("Public update: %(status)s") % {"status": update.get_status_display()},
                is_public=True,
                html=update.body_html,
            )
        )
        for change in changes.get(update.pk, []):
            name, public = names[change.product_id]
            rows.append(
                TimelineRow(
                    at=update.display_at,
                    kind="level_change",
                    phase=Phase.OTHER,
                    text=_("Level change: %(product)s, %(old)s to %(new)s")
                    % {"product": name, "old": _level_label(change.old), "new": _level_label(change.new)},
                    is_public=public,
                )
            )
    return rows


def declared_at(incident: Incident, updates: Sequence[IncidentUpdate]) -> datetime:
    """When the incident was declared: its creation, or its first entry's shown time when
    that is earlier (an incident filed after the fact is backdated to when it was known)."""
    shown = [u.display_at for u in updates]
    return min([incident.created_at, *shown])


def milestones(
    *, incident: Incident, updates: Sequence[IncidentUpdate], windows: Sequence[ImpactWindow]
) -> durations.Milestones:
    start = min([incident.started_at, *(w.started_at for w in windows)])
    first_update = min((u.display_at for u in updates), default=None)
    return durations.Milestones(
        impact_start=start,
        detected_at=incident.detected_at,
        declared_at=declared_at(incident, updates),
        first_public_update_at=first_update,
        mitigated_at=incident.mitigated_at,
        resolved_at=incident.resolved_at,
    )


@dataclass(frozen=True)
class Timeline:
    rows: tuple[TimelineRow, ...]
    durations: tuple[durations.KeyDuration, ...]
    periods: tuple[tuple[ImpactWindow, str], ...]  # each window with its duration text


def _milestone_rows(
    incident: Incident, m: durations.Milestones, report: IncidentReport | None
) -> list[TimelineRow]:
    rows = []
    for at, kind, phase, text in (
        (m.detected_at, "detection", Phase.DETECTION, _("Detected")),
        (m.declared_at, "declaration", Phase.DETECTION, _("Incident declared")),
        (m.mitigated_at, "mitigation", Phase.MITIGATION, _("Mitigated")),
        (m.resolved_at, "resolution", Phase.RESOLUTION, _("Resolved")),
    ):
        if at is not None:
            rows.append(TimelineRow(at=at, kind=kind, phase=phase, text=text, is_public=True))
    if report is not None and report.status == IncidentReport.Status.PUBLISHED and report.published_at:
        rows.append(
            TimelineRow(
                at=report.published_at,
                kind="report",
                phase=Phase.OTHER,
                text=_("Incident report published"),
                is_public=True,
            )
        )
    return rows


_KIND_ORDER = {
    k: i
    for i, k in enumerate(
        (
            "alert",
            "impact_start",
            "detection",
            "declaration",
            "update",
            "level_change",
            "entry",
            "mitigation",
            "impact_end",
            "resolution",
            "report",
        )
    )
}


@dataclass(frozen=True)
class Loaded:
    """What a caller has already read for the incident (the public page has its public
    windows, its updates and its published report), so the timeline need not read them again."""

    windows: Sequence[ImpactWindow]
    updates: Sequence[IncidentUpdate]
    report: IncidentReport | None


def incident_timeline(
    *, incident: Incident, public: bool, now: datetime | None = None, loaded: Loaded | None = None
) -> Timeline:
    """The merged timeline of one incident, earliest first, with its key durations.

    Five reads (windows, updates, report, staff entries, and for staff the first alert);
    one (the staff entries) when the caller passes what it has `loaded`."""
    now = now or timezone.now()
    if loaded is None:
        windows = list(incident.windows.select_related("product", "location").order_by("started_at", "id"))
        updates = list(incident.updates.order_by("display_at", "id"))
        report = IncidentReport.objects.filter(incident=incident).first()
    else:
        windows = sorted(loaded.windows, key=lambda w: (w.started_at, w.pk))
        updates = sorted(loaded.updates, key=lambda u: (u.display_at, u.pk))
        report = loaded.report
    entries = incident.timeline_entries.select_related("author")
    if public:
        entries = entries.filter(visibility=TimelineEntry.Visibility.PUBLIC)
    m = milestones(incident=incident, updates=updates, windows=windows)
    rows = [
        *_window_rows(windows, now),
        *_update_rows(updates, windows),
        *_milestone_rows(incident, m, report),
    ]
    if not public:
        first_alert = alerts_for_incident(incident).first()
        if first_alert is not None:
            rows.append(
                TimelineRow(
                    at=first_alert.starts_at,
                    kind="alert",
                    phase=Phase.DETECTION,
                    text=_("First alert: %(title)s")
                    % {"title": first_alert.title or first_alert.fingerprint},
                    is_public=False,
                )
            )
    rows.extend(
        TimelineRow(
            at=e.at,
            kind="entry",
            phase=e.phase,
            text=e.text,
            is_public=e.is_public,
            html=e.text_html,
            entry=e,
        )
        for e in entries
    )
    if public:
        rows = [r for r in rows if r.is_public]
        windows = [w for w in windows if w.product.is_public]
    rows.sort(key=lambda r: (r.at, _KIND_ORDER[r.kind]))
    return Timeline(
        rows=tuple(rows),
        durations=durations.key_durations(m),
        periods=tuple((w, format_duration(window_interval(w, now=now).duration)) for w in windows),
    )


def timeline_entries(*, incident: Incident) -> QuerySet[TimelineEntry]:
    return incident.timeline_entries.select_related("author").order_by("at", "id")


@dataclass(frozen=True)
class LinkedIncident:
    link: IncidentLink
    other: Incident
    label: str  # how this incident relates to `other`, from this incident's side


def _link_label(kind: str, outgoing: bool) -> str:
    if kind == LinkKind.RECURRENCE_OF:
        return _("This is a recurrence of") if outgoing else _("Recurred as")
    return _("Related to")


def incident_links(*, incident: Incident, public: bool) -> list[LinkedIncident]:
    """Both directions of the incident's links, oldest other incident first (one query;
    the public side sees only links to incidents the public can see)."""
    links = IncidentLink.objects.filter(Q(from_incident=incident) | Q(to_incident=incident)).select_related(
        "from_incident", "to_incident"
    )
    visible: set[int] | None = None
    result = []
    link_list = list(links)
    if public and link_list:
        others = {
            lk.to_incident_id if lk.from_incident_id == incident.pk else lk.from_incident_id
            for lk in link_list
        }
        visible = set(incidents_public().filter(pk__in=others).values_list("pk", flat=True))
    for lk in link_list:
        outgoing = lk.from_incident_id == incident.pk
        other = lk.to_incident if outgoing else lk.from_incident
        if visible is not None and other.pk not in visible:
            continue
        result.append(LinkedIncident(link=lk, other=other, label=_link_label(lk.kind, outgoing)))
    result.sort(key=lambda li: (li.other.started_at, li.other.pk))
    return result


def recurrences_per_product(
    *, since: datetime, until: datetime, product_ids: Sequence[int] | None = None
) -> list[tuple[str, int]]:
    """(product name, recurring incidents) for each product a recurrence touched: how
    often a product's trouble came back. A recurring incident counts in the range it
    started in, once per product it touched (`product_ids` narrows the products: an
    insights scope). One read."""
    # A recurrence is a `recurrence_of` link, or the older `Incident.recurrence_of` field
    # (docs/adr/0020-timeline.md): both count, once per incident.
    windows = ImpactWindow.objects.filter(
        Q(incident__links_out__kind=LinkKind.RECURRENCE_OF) | Q(incident__recurrence_of__isnull=False),
        incident__started_at__gte=since,
        incident__started_at__lt=until,
    )
    if product_ids is not None:
        windows = windows.filter(product_id__in=product_ids)
    pairs = set(windows.values_list("incident_id", "product__name"))
    counts = Counter(name for _incident, name in pairs)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def review_log(*, report_id: int) -> QuerySet[ReviewEvent]:
    return (
        ReviewEvent.objects.filter(report_id=report_id).select_related("actor").order_by("created_at", "pk")
    )


def review_requests(*, report_id: int) -> QuerySet[ReviewRequest]:
    return ReviewRequest.objects.filter(report_id=report_id).select_related("reviewer", "requested_by")


def report_revisions(*, report_id: int) -> QuerySet[ReportRevision]:
    """Newest first: the first is the text the public page shows."""
    return (
        ReportRevision.objects.filter(report_id=report_id).select_related("published_by").order_by("-number")
    )


def report_factors(*, report_id: int, public_only: bool = False) -> QuerySet[ContributingFactor]:
    factors = ContributingFactor.objects.filter(report_id=report_id)
    return factors.filter(is_public=True) if public_only else factors


def report_reflections(*, report_id: int) -> dict[str, Reflection]:
    return {r.section: r for r in Reflection.objects.filter(report_id=report_id)}


def report_templates() -> QuerySet[ReportTemplate]:
    return ReportTemplate.objects.order_by("-is_default", "name")


def report_template_default() -> ReportTemplate | None:
    return report_templates().first()
