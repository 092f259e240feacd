"""Demo data for the postmortem timeline (issue 32): staff entries on the Cloud Storage
2026 incident, marking its 9 October recurrence, and a link between the two Gmail
incidents. The Cloud Storage recurrence stays a second window of the one incident (the
SLA and credit figures of the demo count it as one event); why: docs/adr/0020-timeline.md.
Idempotent: entries and links that exist are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from django.contrib.auth.models import User
from django.db import transaction

from demo import alerts as alerts_demo
from demo.incidents import (
    GCS_RECURRENCE_START,
    GCS_START,
    GCS_TITLE,
    GMAIL_2009_START,
    GMAIL_2009_TITLE,
    GMAIL_2026_START,
    GMAIL_2026_TITLE,
    pacific,
)
from incidents.models import Incident
from postmortems import services
from postmortems.models import IncidentLink, LinkKind, Phase, TimelineEntry, Visibility


class Writer(Protocol):
    def write(self, msg: str, /) -> Any: ...


# (at, phase, visibility, text) for the Cloud Storage 2026 incident.
GCS_ENTRIES = (
    (
        pacific(2026, 10, 8, 3, 52),
        Phase.OTHER,
        Visibility.INTERNAL,
        "Load balancer configuration change (traffic sorting) reaches us-central1.",
    ),
    (
        pacific(2026, 10, 8, 6, 30),
        Phase.MITIGATION,
        Visibility.PUBLIC,
        "Emergency capacity is not available in the region; engineers drain the most overloaded "
        "backends instead.",
    ),
    (
        GCS_RECURRENCE_START,
        Phase.DETECTION,
        Visibility.PUBLIC,
        "**Recurrence** of the 8 October problem: write errors return in zone us-central1-b "
        "after an incomplete rollback.",
    ),
    (
        pacific(2026, 10, 9, 8, 30),
        Phase.MITIGATION,
        Visibility.INTERNAL,
        "Decision: complete the load balancing rollback region-wide rather than per zone.",
    ),
)
GCS_RECURRENCE_TEXT = GCS_ENTRIES[2][3]


@dataclass
class TimelineDemoSummary:
    entries_created: int = 0
    links_created: int = 0


def load(*, stdout: Writer | None = None) -> TimelineDemoSummary:
    summary = TimelineDemoSummary()
    staff = User.objects.filter(username="staff").first()
    gcs = Incident.objects.filter(title=GCS_TITLE, started_at=GCS_START).first()
    if gcs is not None:
        alerts_demo.past_alert(
            gcs,
            title="Cloud Storage write error ratio above 5% in us-central1",
            fingerprint="gcs-write-errors-us-central1",
            labels={"alertname": "GCSWriteErrors", "region": "us-central1", "severity": "page"},
        )
    with transaction.atomic():
        if gcs is not None and not TimelineEntry.objects.filter(incident=gcs).exists():
            for at, phase, visibility, text in GCS_ENTRIES:
                services.timeline_entry_create(
                    incident=gcs, at=at, text=text, phase=phase, visibility=visibility, actor=staff
                )
                summary.entries_created += 1
        old = Incident.objects.filter(title=GMAIL_2009_TITLE, started_at=GMAIL_2009_START).first()
        new = Incident.objects.filter(title=GMAIL_2026_TITLE, started_at=GMAIL_2026_START).first()
        if (
            old is not None
            and new is not None
            and not IncidentLink.objects.filter(from_incident=new).exists()
        ):
            services.incident_link_create(
                from_incident=new, to_incident=old, kind=LinkKind.RELATED_TO, actor=staff
            )
            summary.links_created += 1
    if stdout is not None:
        stdout.write(
            f"Postmortem timelines: {summary.entries_created} entries, {summary.links_created} links created\n"
        )
    return summary
