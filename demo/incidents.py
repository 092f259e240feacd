"""Demo data for `manage.py load_demo`: products, locations, a staff login and incidents.

Three incidents retell public incident reports (Gmail 2009-09-01, Gmail 2026-01-24 and
Cloud Storage 2026-10-08/09) with their real times, durations and regions; the texts
are our own summaries. A handful of small recent incidents fill the last 90 days, and
one maintenance is scheduled a few days ahead.

Everything is written through `incidents.services`, exactly as staff would file it, so
the demo also exercises the real write path. Loading is idempotent: each object has a
natural key (slug, name, username, title + start) and an existing object is left
untouched, field for field, so `make run` can call this on every start.

Other apps add their own demo loaders by calling them from the command after `load`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from functools import partial
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from demo import postmortem_review as review_demo
from demo import roles as demo_roles
from incidents import services
from incidents.models import (
    ActionItem,
    ImpactWindow,
    Incident,
    IncidentReport,
    Location,
    Product,
    ProductGroup,
)
from insights import facts as insights_facts

PACIFIC = ZoneInfo("America/Los_Angeles")

STAFF_USERNAME = "staff"
STAFF_PASSWORD = "staff-demo"  # noqa: S105 - a published demo login, printed by `make run`
STAFF_EMAIL = "staff@example.com"

Level = ImpactWindow.Level
Status = Incident.Status
Impact = Incident.Impact
Action = ActionItem.Type
Priority = ActionItem.Priority
ActionState = ActionItem.Status


class Writer(Protocol):
    def write(self, msg: str, /) -> Any: ...


def pacific(year: int, month: int, day: int, hour: int, minute: int) -> datetime:
    """A US/Pacific wall-clock time (as the seed reports give them) as an aware UTC time."""
    return datetime(year, month, day, hour, minute, tzinfo=PACIFIC).astimezone(UTC)


@dataclass
class DemoSummary:
    """What one run created. A second run reports zeros and lists everything as skipped."""

    staff_user_created: bool = False
    role_users_created: int = 0
    product_groups_created: int = 0
    products_created: int = 0
    locations_created: int = 0
    incidents_created: list[str] = field(default_factory=list)
    incidents_skipped: list[str] = field(default_factory=list)

    @property
    def created_anything(self) -> bool:
        return bool(
            self.staff_user_created
            or self.role_users_created
            or self.product_groups_created
            or self.products_created
            or self.locations_created
            or self.incidents_created
        )


# --- Catalogue ----------------------------------------------------------------------------

GROUPS: Sequence[tuple[str, int]] = (("Google Workspace", 0), ("Google Cloud", 1))

# (group, name, slug, position, public, description)
PRODUCTS: Sequence[tuple[str | None, str, str, int, bool, str]] = (
    ("Google Workspace", "Gmail", "gmail", 0, True, "Email, on the web and over IMAP/POP."),
    ("Google Workspace", "Google Calendar", "calendar", 1, True, "Calendars, events and invitations."),
    ("Google Workspace", "Google Drive", "drive", 2, True, "File storage, sharing and sync."),
    ("Google Workspace", "Google Meet", "meet", 3, True, "Video meetings and calls."),
    ("Google Cloud", "Cloud Storage", "cloud-storage", 0, True, "Object storage: buckets and objects."),
    ("Google Cloud", "Compute Engine", "compute-engine", 1, True, "Virtual machines and disks."),
    ("Google Cloud", "BigQuery", "bigquery", 2, True, "Serverless data warehouse and SQL queries."),
    (
        None,
        "Internal Billing Pipeline",
        "internal-billing-pipeline",
        99,
        False,
        "Usage export into invoicing. Staff only: never shown on public pages.",
    ),
)

# (name, display name, kind, parent name); parents come before their children.
LOCATIONS: Sequence[tuple[str, str, str, str | None]] = (
    ("global", "Global", Location.Kind.GLOBAL, None),
    ("us-central1", "us-central1 (Iowa)", Location.Kind.REGION, "global"),
    ("us-east1", "us-east1 (South Carolina)", Location.Kind.REGION, "global"),
    ("europe-west1", "europe-west1 (Belgium)", Location.Kind.REGION, "global"),
    ("asia-east1", "asia-east1 (Taiwan)", Location.Kind.REGION, "global"),
    ("us-central1-a", "", Location.Kind.ZONE, "us-central1"),
    ("us-central1-b", "", Location.Kind.ZONE, "us-central1"),
    ("us-central1-c", "", Location.Kind.ZONE, "us-central1"),
    ("us-central1-f", "", Location.Kind.ZONE, "us-central1"),
    ("us-east1-b", "", Location.Kind.ZONE, "us-east1"),
    ("us-east1-c", "", Location.Kind.ZONE, "us-east1"),
    ("europe-west1-b", "", Location.Kind.ZONE, "europe-west1"),
    ("europe-west1-c", "", Location.Kind.ZONE, "europe-west1"),
)


@dataclass
class _Context:
    staff: Any
    products: dict[str, Product]
    locations: dict[str, Location]
    summary: DemoSummary
    out: Writer | None
    reviewed: bool = True  # False: reports are written and left as drafts (for tests)

    def say(self, msg: str) -> None:
        if self.out is not None:
            self.out.write(msg + "\n")

    def publish(
        self, incident: Incident, *, published_at: datetime, comment: tuple[str, str] | None = None
    ) -> None:
        if self.reviewed:
            review_demo.publish_reviewed(incident, published_at=published_at, comment=comment)


def _ensure_staff(out: Writer | None, summary: DemoSummary) -> Any:
    user_model = get_user_model()
    user = user_model.objects.filter(username=STAFF_USERNAME).first()
    if user is not None:
        # An existing account keeps its password and flags: someone may have changed them.
        return user
    summary.staff_user_created = True
    if out is not None:
        out.write(f"  created staff user {STAFF_USERNAME!r}\n")
    return user_model.objects.create_superuser(STAFF_USERNAME, STAFF_EMAIL, STAFF_PASSWORD)


def _ensure_catalogue(summary: DemoSummary) -> tuple[dict[str, Product], dict[str, Location]]:
    groups: dict[str, ProductGroup] = {}
    for name, position in GROUPS:
        group, created = ProductGroup.objects.get_or_create(name=name, defaults={"position": position})
        groups[name] = group
        summary.product_groups_created += created

    products: dict[str, Product] = {}
    for group_name, name, slug, position, is_public, description in PRODUCTS:
        product, created = Product.objects.get_or_create(
            slug=slug,
            defaults={
                "name": name,
                "group": groups[group_name] if group_name else None,
                "position": position,
                "is_public": is_public,
                "description": description,
            },
        )
        products[slug] = product
        summary.products_created += created

    locations: dict[str, Location] = {}
    for name, display_name, kind, parent in LOCATIONS:
        location, created = Location.objects.get_or_create(
            name=name,
            defaults={
                "display_name": display_name,
                "kind": kind,
                "parent": locations[parent] if parent else None,
            },
        )
        locations[name] = location
        summary.locations_created += created
    return products, locations


def _build_incident(
    ctx: _Context,
    *,
    key: dict[str, Any],
    label: str,
    build: Callable[[_Context], Incident],
) -> None:
    """Create one incident unless one with the same natural key exists.

    One transaction per incident: a failure half-way leaves nothing behind, so the next
    run does not mistake a half-built incident for a finished one and skip it.
    """
    with transaction.atomic():
        if Incident.objects.filter(**key).exists():
            ctx.summary.incidents_skipped.append(label)
            ctx.say(f"  exists, skipped: {label}")
            return
        incident = build(ctx)
        if not incident.is_maintenance:
            # Retold history: each entry was posted when it is shown, not when the demo
            # loads (insights measure the time to the first post).
            incident.updates.update(created_at=F("display_at"))
            # Written around the services: the insights facts follow by hand.
            insights_facts.incident_facts_refresh([incident.pk])
    ctx.summary.incidents_created.append(label)
    ctx.say(f"  created: {label}")


def _actions(
    ctx: _Context, incident: Incident, items: Sequence[tuple[str, str, str, str, date | None, str]]
) -> None:
    for title, type_, priority, status, due, description in items:
        services.action_item_create(
            incident=incident,
            title=title,
            type=type_,
            priority=priority,
            status=status,
            due_date=due,
            description=description,
            owner=ctx.staff,
            is_public=True,
        )


# --- a) Gmail, 2009-09-01: web interface down for 90 minutes -----------------------------

GMAIL_2009_TITLE = "Gmail web interface unavailable"
GMAIL_2009_START = pacific(2009, 9, 1, 12, 45)
GMAIL_2009_END = pacific(2009, 9, 1, 14, 15)


def _gmail_2009(ctx: _Context) -> Incident:
    incident = services.incident_open(
        title=GMAIL_2009_TITLE,
        impact=Impact.CRITICAL,
        started_at=GMAIL_2009_START,
        # Monitoring paged the team within seconds of the first failures.
        detected_at=GMAIL_2009_START,
        # History: the first entry was posted back then, not when the demo is loaded.
        first_update_at=GMAIL_2009_START,
        summary=(
            "For 90 minutes most users could not reach Gmail in a web browser. Mail kept "
            "flowing and IMAP/POP clients kept working; no messages were lost."
        ),
        body=(
            "We are investigating reports that Gmail cannot be opened in a web browser. "
            "IMAP and POP access appear unaffected."
        ),
        windows=[
            services.WindowSpec(
                product=ctx.products["gmail"],
                location=ctx.locations["global"],
                level=Level.MAJOR_OUTAGE,
                started_at=GMAIL_2009_START,
                description=(
                    "The web interface returned errors for almost everyone. Mail delivery and "
                    "IMAP/POP access carried on normally."
                ),
            )
        ],
        created_by=ctx.staff,
        notify=False,
    )
    services.incident_post_update(
        incident=incident,
        status=Status.IDENTIFIED,
        body=(
            "The servers that route web requests to Gmail are overloaded and turning traffic "
            "away. We are bringing additional routing capacity online."
        ),
        display_at=pacific(2009, 9, 1, 13, 20),
        author=ctx.staff,
        notify=False,
    )
    services.incident_post_update(
        incident=incident,
        status=Status.MONITORING,
        body=(
            "The extra routers are taking traffic and the web interface is loading again for "
            "most users. We are watching it closely."
        ),
        display_at=pacific(2009, 9, 1, 14, 5),
        author=ctx.staff,
        notify=False,
    )
    services.incident_resolve(
        incident=incident,
        body="Gmail's web interface is available to all users again.",
        resolved_at=GMAIL_2009_END,
        author=ctx.staff,
        notify=False,
    )
    services.report_save(
        incident=incident,
        actor=review_demo.author(),
        kind=IncidentReport.Kind.FULL,
        summary=(
            "On Tuesday, 1 September 2009, from 12:45 to 14:15 US/Pacific (90 minutes), "
            "Gmail users could not open their mailboxes on the web. Messages were still "
            "received and sent, and IMAP/POP clients worked throughout; nothing was lost."
        ),
        root_cause=(
            "Part of Gmail's web serving capacity was taken offline for a routine upgrade, "
            "something that normally goes unnoticed because the request routers send users "
            "to the remaining locations. Recent changes had made each request more expensive "
            "for the routers than we had estimated.\n\n"
            "From about 12:30, a few routers became overloaded and reacted by refusing all "
            "new requests. Their traffic moved to the other routers, which overloaded in "
            "turn, and within minutes nearly the whole routing tier was refusing traffic. "
            "With no route to a mail server, the web interface failed. IMAP, POP and mail "
            "processing use a different request path and were not affected."
        ),
        remediation=(
            "Alerts fired within seconds. Once the team established that the routing tier "
            "simply lacked capacity, it brought a large number of additional request routers "
            "online and spread the incoming traffic over them, after which the web interface "
            "recovered.\n\n"
            "To prevent a repeat:\n\n"
            "* Keep request-router capacity well above peak demand, so that taking servers "
            "out for maintenance leaves headroom (done).\n"
            "* Isolate failures between datacenters, so that trouble in one cannot overload "
            "routers in another.\n"
            "* Make overloaded routers slow down instead of refusing traffic, so that load "
            "is not pushed onto their neighbours."
        ),
        impact_description=(
            "Between 12:45 and 14:15 US/Pacific (19:45-21:15 UTC), requests to the Gmail web "
            "interface failed for nearly all users.\n\n"
            "* **Web interface:** unavailable.\n"
            "* **IMAP and POP:** working normally.\n"
            "* **Mail delivery:** messages were received and delivered throughout and were "
            "visible once the web interface returned. No data was lost."
        ),
    )
    ctx.publish(incident, published_at=pacific(2009, 9, 2, 10, 0))
    _actions(
        ctx,
        incident,
        [
            (
                "Keep request-router capacity far above peak load (headroom)",
                Action.PREVENT,
                Priority.P0,
                ActionState.DONE,
                date(2009, 9, 2),
                "Leave enough headroom that routine maintenance cannot push routers into overload.",
            ),
            (
                "Isolate request-router failures between datacenters",
                Action.PREVENT,
                Priority.P1,
                ActionState.DONE,
                date(2009, 9, 30),
                "A routing problem in one datacenter must not spill over into the others.",
            ),
            (
                "Make overloaded request routers degrade gracefully instead of refusing traffic",
                Action.MITIGATE,
                Priority.P1,
                ActionState.DONE,
                date(2009, 9, 30),
                "An overloaded router should answer more slowly, not shed its load onto its peers.",
            ),
        ],
    )
    return incident


# --- b) Gmail, 2026-01-24: spam classification overloaded ---------------------------------

GMAIL_2026_TITLE = "Gmail spam classification failures and delivery delays"
GMAIL_2026_START = pacific(2026, 1, 24, 5, 2)
GMAIL_2026_END = pacific(2026, 1, 24, 9, 55)


def _gmail_2026(ctx: _Context) -> Incident:
    incident = services.incident_open(
        title=GMAIL_2026_TITLE,
        impact=Impact.MAJOR,
        started_at=GMAIL_2026_START,
        detected_at=pacific(2026, 1, 24, 5, 12),
        first_update_at=pacific(2026, 1, 24, 5, 12),
        summary=(
            "Many incoming messages could not be checked for spam, showed a warning banner "
            "and missed their category labels; afterwards some mail arrived up to 10 minutes "
            "late. No mail was lost."
        ),
        body=(
            "Automated monitoring reports elevated error rates in Gmail's spam checking. "
            "Some incoming messages show a 'not scanned for spam' warning. We are investigating."
        ),
        windows=[
            services.WindowSpec(
                product=ctx.products["gmail"],
                location=ctx.locations["global"],
                level=Level.PARTIAL_OUTAGE,
                started_at=GMAIL_2026_START,
                description=(
                    "Incoming mail not fully classified (warning banner, missing Promotions and "
                    "Social labels), then delivery delays of up to 10 minutes."
                ),
            )
        ],
        created_by=ctx.staff,
        notify=False,
    )
    services.incident_post_update(
        incident=incident,
        status=Status.IDENTIFIED,
        body=(
            "A brief error in a backend service triggered a flood of retries that is "
            "overloading the classification pipeline. We are adding capacity and temporarily "
            "switching off non-essential features to shed load."
        ),
        display_at=pacific(2026, 1, 24, 6, 10),
        author=ctx.staff,
        notify=False,
    )
    services.incident_post_update(
        incident=incident,
        status=Status.IDENTIFIED,
        body=(
            "A change to the retry behaviour of mail delivery is rolling out to stop the "
            "retry storm. Error rates are starting to fall."
        ),
        display_at=pacific(2026, 1, 24, 7, 30),
        author=ctx.staff,
        notify=False,
    )
    services.incident_post_update(
        incident=incident,
        status=Status.MONITORING,
        body=(
            "Spam checking has recovered. Some messages are still arriving a few minutes late "
            "while the backlog drains; we are monitoring."
        ),
        display_at=pacific(2026, 1, 24, 9, 10),
        author=ctx.staff,
        notify=False,
    )
    services.incident_resolve(
        incident=incident,
        body="Mail is being classified and delivered normally for almost all users.",
        resolved_at=GMAIL_2026_END,
        author=ctx.staff,
        notify=False,
    )
    services.report_save(
        incident=incident,
        actor=review_demo.author(),
        kind=IncidentReport.Kind.FULL,
        summary=(
            "On Saturday, 24 January 2026, from 05:02 to 09:55 US/Pacific (4 hours 53 minutes), "
            "a large share of incoming Gmail messages failed spam checking. Recipients saw a "
            "warning that the message had not been scanned, and some messages were not sorted "
            "into Promotions or Social. As the systems recovered, some deliveries were delayed "
            "by up to 10 minutes. We apologise for the disruption."
        ),
        root_cause=(
            "A short-lived error in a backend component of the mail processing pipeline set "
            "things off. The error itself would have passed, but the retry mechanism meant to "
            "absorb such errors produced a large and sustained wave of repeated requests. That "
            "wave exceeded the capacity of the spam classification services and several of "
            "their dependencies for hours.\n\n"
            "Because incoming mail could not be fully classified, Gmail marked it with a "
            "warning banner rather than deliver it unchecked, and the backlog delayed delivery."
        ),
        remediation=(
            "Monitoring alerted engineers at 05:12 US/Pacific. They raised capacity for the "
            "classification services, including an emergency increase for an abuse-detection "
            "backend; switched off some functionality for a while to give the pipeline room to "
            "recover; and changed the retry logic in mail delivery to stop the cascade.\n\n"
            "Follow-up work:\n\n"
            "* Stronger emergency controls, including manual traffic overrides, to recover faster.\n"
            "* Load shedding across the spam system that drops the least critical work first.\n"
            "* Retry tuning in mail delivery so retries cannot swamp downstream services.\n"
            "* Deadline propagation through the whole classification stack.\n"
            "* Reshaped processing tasks, with more memory and compute per anti-abuse system, "
            "to absorb spikes."
        ),
        impact_description=(
            "From 05:02 to 09:55 US/Pacific on 24 January 2026:\n\n"
            "* **Warning banners:** many incoming messages were shown with a notice that Gmail "
            "had not scanned them for spam or harmful content.\n"
            "* **Labels:** some messages were not placed in Promotions or Social.\n"
            "* **Delays:** after recovery, some messages arrived up to 10 minutes late. No "
            "message was lost or delivered to the wrong recipient."
        ),
    )
    ctx.publish(incident, published_at=datetime(2026, 2, 9, 5, 3, 28, tzinfo=UTC))
    _actions(
        ctx,
        incident,
        [
            (
                "Strengthen emergency controls and manual traffic overrides",
                Action.MITIGATE,
                Priority.P1,
                ActionState.DONE,
                date(2026, 3, 31),
                "Faster recovery in a similar overload through pre-built manual traffic tuning.",
            ),
            (
                "Shed load by criticality throughout spam checking",
                Action.PREVENT,
                Priority.P1,
                ActionState.DONE,
                date(2026, 5, 29),
                "Under overload, drop the least critical work first to protect the rest.",
            ),
            (
                "Tune message delivery retries",
                Action.PREVENT,
                Priority.P0,
                ActionState.DONE,
                date(2026, 2, 27),
                "Retries from mail delivery must never overwhelm downstream services.",
            ),
            (
                "Propagate deadlines across the spam classification stack",
                Action.PREVENT,
                Priority.P2,
                ActionState.IN_PROGRESS,
                date(2026, 12, 18),
                "Every hop honours the caller's deadline, so abandoned work is not retried.",
            ),
            (
                "Reshape anti-abuse processing tasks",
                Action.REPAIR,
                Priority.P2,
                ActionState.OPEN,
                date(2027, 1, 29),
                "More memory and compute per task so spikes are absorbed gracefully.",
            ),
        ],
    )
    return incident


# --- c) Cloud Storage, 2026-10-08 and its recurrence on 2026-10-09 ------------------------

GCS_TITLE = "Cloud Storage elevated write latency and errors in us-central1"
GCS_START = pacific(2026, 10, 8, 4, 0)
GCS_FIRST_END = pacific(2026, 10, 8, 16, 30)
GCS_RECURRENCE_START = pacific(2026, 10, 9, 4, 5)
GCS_END = pacific(2026, 10, 9, 9, 46)


def _cloud_storage_2026(ctx: _Context) -> Incident:
    gcs = ctx.products["cloud-storage"]
    incident = services.incident_open(
        title=GCS_TITLE,
        impact=Impact.MAJOR,
        started_at=GCS_START,
        detected_at=pacific(2026, 10, 8, 4, 50),
        first_update_at=pacific(2026, 10, 8, 4, 50),
        summary=(
            "Uploads and writes to Cloud Storage were slow or failed in us-central1 on "
            "8 October, and again in zone us-central1-b on 9 October. Other regions and "
            "services were not affected."
        ),
        body=(
            "We are investigating elevated latency and errors for Cloud Storage uploads and "
            "writes in us-central1. Reads and other regions look normal."
        ),
        windows=[
            services.WindowSpec(
                product=gcs,
                location=ctx.locations["us-central1"],
                level=Level.PARTIAL_OUTAGE,
                started_at=GCS_START,
                description="Slow writes, HTTP 503 on WriteObject and client timeouts across the region.",
            )
        ],
        created_by=ctx.staff,
        notify=False,
    )
    services.incident_post_update(
        incident=incident,
        status=Status.IDENTIFIED,
        body=(
            "A small set of storage backends is receiving far more write traffic than it can "
            "serve. We are draining the busiest backends and switching off a recent traffic "
            "sorting optimisation in the load balancer."
        ),
        display_at=pacific(2026, 10, 8, 7, 45),
        author=ctx.staff,
        notify=False,
    )
    services.incident_post_update(
        incident=incident,
        status=Status.IDENTIFIED,
        body=(
            "Write latency is improving. We are also rolling back a recent update to the "
            "metadata database, which is causing a share of the remaining errors."
        ),
        display_at=pacific(2026, 10, 8, 12, 15),
        author=ctx.staff,
        notify=False,
    )
    first = incident.windows.get()
    services.impact_window_close(window=first, ended_at=GCS_FIRST_END)
    services.incident_post_update(
        incident=incident,
        status=Status.MONITORING,
        body="Write latency and error rates are back to normal in us-central1. We are monitoring.",
        display_at=GCS_FIRST_END,
        author=ctx.staff,
        notify=False,
    )
    # The recurrence is a second window of the same incident, not a new incident: the
    # same cause came back, and the report and the SLA maths must see one event.
    services.impact_window_add(
        incident=incident,
        product=gcs,
        location=ctx.locations["us-central1-b"],
        level=Level.PARTIAL_OUTAGE,
        started_at=GCS_RECURRENCE_START,
        description="Write errors and timeouts again, this time confined to zone us-central1-b.",
    )
    services.incident_post_update(
        incident=incident,
        status=Status.IDENTIFIED,
        body=(
            "Write errors have returned in zone us-central1-b. A partial rollback left the load "
            "balancing broken for a few smaller backends; we are redirecting traffic away from "
            "them and completing the rollback."
        ),
        display_at=pacific(2026, 10, 9, 4, 40),
        author=ctx.staff,
        notify=False,
    )
    services.incident_post_update(
        incident=incident,
        status=Status.MONITORING,
        body=(
            "The load balancing change is fully reverted and traffic is spreading evenly across "
            "the region again. Drained backends are returning to service."
        ),
        display_at=pacific(2026, 10, 9, 9, 20),
        author=ctx.staff,
        notify=False,
    )
    services.incident_resolve(
        incident=incident,
        body="Cloud Storage writes are healthy in all us-central1 zones.",
        resolved_at=GCS_END,
        author=ctx.staff,
        notify=False,
    )
    services.report_save(
        incident=incident,
        actor=review_demo.author(),
        kind=IncidentReport.Kind.FULL,
        summary=(
            "On Thursday, 8 October 2026, Cloud Storage uploads and writes in us-central1 saw "
            "high latency and errors for 12 hours 30 minutes (04:00-16:30 US/Pacific). The "
            "problem came back on Friday, 9 October, in zone us-central1-b only, for 5 hours "
            "41 minutes (04:05-09:46). Total impact: 18 hours 11 minutes."
        ),
        root_cause=(
            "A configuration change to the Cloud Storage load balancer, meant to ease local "
            "capacity pressure by sorting traffic, accidentally bypassed the routing logic that "
            "takes each backend's free capacity into account. A few storage backends with "
            "little spare capacity were handed most of the region's write traffic, ran out of "
            "resources, and their data ingestion began to time out, so uploads routed to them "
            "were slow or failed. For part of the window a separate problem in the metadata "
            "database added errors of its own.\n\n"
            "On 9 October, an incomplete rollback of an upload planning feature broke load "
            "balancing again and overloaded a few smaller backends in us-central1-b."
        ),
        remediation=(
            "Engineers spotted the problem in telemetry at 04:50 US/Pacific on 8 October. "
            "Adding emergency capacity was not possible because the region was at its capacity "
            "limit, so they drained the most overloaded backends, disabled the traffic sorting "
            "optimisation and rolled back the metadata database update. After the recurrence "
            "they redirected traffic again and fully reverted the load balancing change, which "
            "restored capacity-aware routing; drained backends rejoined once load was normal.\n\n"
            "Prevention:\n\n"
            "* **Safer rollouts:** validate load balancing changes in smaller regions before "
            "they reach large, busy ones.\n"
            "* **Enforced capacity limits:** traffic distribution can no longer bypass the "
            "safeguards that keep load off backends without spare capacity.\n"
            "* **More resilient scaling:** move data faster inside busy storage cells so "
            "temporary spikes are absorbed."
        ),
        impact_description=(
            "* **8 October, 04:00-16:30 US/Pacific, region us-central1:** uploads and writes "
            "failed with HTTP 503 UNAVAILABLE on WriteObject or timed out in clients; writes "
            "that succeeded were much slower than usual.\n"
            "* **9 October, 04:05-09:46 US/Pacific, zone us-central1-b:** the same symptoms, "
            "limited to one zone.\n\n"
            "Reads, Cloud Storage in other regions, and all other Google Cloud services were "
            "not affected."
        ),
    )
    ctx.publish(incident, published_at=pacific(2026, 10, 16, 10, 0), comment=review_demo.GCS_COMMENT)
    _actions(
        ctx,
        incident,
        [
            (
                "Stage load balancing configuration rollouts through smaller regions first",
                Action.PROCESS,
                Priority.P0,
                ActionState.IN_PROGRESS,
                date(2026, 12, 18),
                "Validate routing logic changes where a mistake hurts least before busy regions.",
            ),
            (
                "Enforce capacity constraints in storage load balancing",
                Action.PREVENT,
                Priority.P1,
                ActionState.OPEN,
                date(2027, 1, 29),
                "No traffic distribution path may skip the safeguards against overloading backends.",
            ),
            (
                "Faster internal data movement in highly utilised storage cells",
                Action.REPAIR,
                Priority.P2,
                ActionState.OPEN,
                date(2027, 3, 31),
                "Scale out of hot cells quickly so temporary load spikes are absorbed.",
            ),
        ],
    )
    return incident


# --- Recent small incidents and an upcoming maintenance -----------------------------------


@dataclass(frozen=True)
class _Recent:
    """A small incident placed `days_ago` days before the first run, at a fixed UTC time."""

    title: str
    product: str
    location: str | None
    level: str
    days_ago: int
    at: time
    minutes: int
    impact: str
    summary: str
    first_update: str
    resolution: str
    is_public: bool = True
    internal_notes: str = ""
    # A mini report: (summary, root cause, remediation), or None for no report.
    report: tuple[str, str, str] | None = None


RECENT: Sequence[_Recent] = (
    _Recent(
        title="Google Meet video freezing for some users in us-east1",
        product="meet",
        location="us-east1",
        level=Level.DEGRADED_PERFORMANCE,
        days_ago=3,
        at=time(15, 10),
        minutes=25,
        impact=Impact.MINOR,
        summary="Some meetings hosted in us-east1 had frozen video and choppy audio.",
        first_update="Some users in meetings hosted in us-east1 report frozen video. We are investigating.",
        resolution="Video quality is back to normal after traffic moved off a faulty media relay.",
        report=(
            "For 25 minutes, part of the Meet calls hosted in us-east1 had frozen video and choppy audio.",
            "A media relay host kept accepting calls while its network card dropped packets.",
            "Traffic was moved away from the host. Relay health checks now include packet loss.",
        ),
    ),
    _Recent(
        title="Compute Engine instance creation failures in us-central1-f",
        product="compute-engine",
        location="us-central1-f",
        level=Level.PARTIAL_OUTAGE,
        days_ago=11,
        at=time(9, 40),
        minutes=40,
        impact=Impact.MAJOR,
        summary="Creating new VMs in us-central1-f failed; running VMs were not affected.",
        first_update="Requests to create instances in us-central1-f are failing. Running instances are fine.",
        resolution="Instance creation in us-central1-f has recovered.",
        report=(
            "For 40 minutes, new VM instances could not be created in zone us-central1-f. "
            "Instances that were already running were not affected.",
            "A scheduler release mis-read zonal quota, so placement requests were rejected.",
            "The release was rolled back. The scheduler canary now exercises zonal quota checks.",
        ),
    ),
    _Recent(
        title="Slow file uploads in Google Drive",
        product="drive",
        location="global",
        level=Level.DEGRADED_PERFORMANCE,
        days_ago=19,
        at=time(13, 5),
        minutes=55,
        impact=Impact.MINOR,
        summary="Uploads to Drive took much longer than usual for some users.",
        first_update="Some users see slow uploads to Google Drive. We are looking into it.",
        resolution="Upload times are back to normal.",
    ),
    _Recent(
        title="BigQuery query failures in europe-west1",
        product="bigquery",
        location="europe-west1",
        level=Level.PARTIAL_OUTAGE,
        days_ago=33,
        at=time(7, 20),
        minutes=80,
        impact=Impact.MAJOR,
        summary="Some queries in europe-west1 failed with internal errors and had to be retried.",
        first_update="A share of BigQuery queries in europe-west1 fail with internal errors. We are investigating.",
        resolution="Queries in europe-west1 complete normally again.",
        report=(
            "For 80 minutes, a share of BigQuery queries in europe-west1 failed with internal "
            "errors. Retried queries usually succeeded.",
            "A metadata cache node ran out of memory after a change to its eviction settings.",
            "The eviction change was reverted and a memory alert added for the cache tier.",
        ),
    ),
    _Recent(
        title="Calendar invitation emails delayed",
        product="calendar",
        location="global",
        level=Level.DEGRADED_PERFORMANCE,
        days_ago=47,
        at=time(18, 30),
        minutes=15,
        impact=Impact.MINOR,
        summary="Invitation emails went out up to 15 minutes late.",
        first_update="Calendar invitation emails are queued and going out late.",
        resolution="The queue has drained.",
        # Staff-only: too small to publish, kept for the record and the trend.
        is_public=False,
        internal_notes="Below the publication threshold; tracked internally only.",
    ),
    _Recent(
        title="Billing usage export delayed",
        product="internal-billing-pipeline",
        location="us-central1",
        level=Level.PARTIAL_OUTAGE,
        days_ago=70,
        at=time(2, 0),
        minutes=90,
        impact=Impact.MINOR,
        summary="The nightly usage export reached invoicing 90 minutes late.",
        first_update="The nightly usage export to invoicing has stalled.",
        resolution="The export has caught up.",
        # Public flag on, but its only window is on a staff-only product, so the public
        # pages still never show it: the visibility rule is by product, too.
        internal_notes="Affects only the internal billing pipeline.",
    ),
)

MAINTENANCE_TITLE = "BigQuery scheduled maintenance in europe-west1"
MAINTENANCE_DAYS_AHEAD = 4


def _recent(ctx: _Context, *, spec: _Recent, today: date) -> Incident:
    start = datetime.combine(today - timedelta(days=spec.days_ago), spec.at, tzinfo=UTC)
    end = start + timedelta(minutes=spec.minutes)
    incident = services.incident_open(
        title=spec.title,
        impact=spec.impact,
        started_at=start,
        detected_at=start + timedelta(minutes=4),
        first_update_at=start + timedelta(minutes=4),
        summary=spec.summary,
        body=spec.first_update,
        is_public=spec.is_public,
        internal_notes=spec.internal_notes,
        windows=[
            services.WindowSpec(
                product=ctx.products[spec.product],
                location=ctx.locations[spec.location] if spec.location else None,
                level=spec.level,
                started_at=start,
            )
        ],
        created_by=ctx.staff,
        notify=False,
    )
    services.incident_resolve(
        incident=incident, body=spec.resolution, resolved_at=end, author=ctx.staff, notify=False
    )
    if spec.report is not None:
        summary, root_cause, remediation = spec.report
        services.report_save(
            incident=incident,
            actor=review_demo.author(),
            kind=IncidentReport.Kind.MINI,
            summary=summary,
            root_cause=root_cause,
            remediation=remediation,
        )
        ctx.publish(incident, published_at=end + timedelta(days=1))
    return incident


def _maintenance(ctx: _Context, *, today: date) -> Incident:
    start = datetime.combine(today + timedelta(days=MAINTENANCE_DAYS_AHEAD), time(6, 0), tzinfo=UTC)
    end = start + timedelta(hours=2)
    return services.incident_open(
        title=MAINTENANCE_TITLE,
        kind=Incident.Kind.MAINTENANCE,
        impact=Impact.NONE,
        scheduled_for=start,
        scheduled_until=end,
        summary=(
            "Planned upgrade of the BigQuery storage layer in europe-west1. Queries keep "
            "running; some may take longer while data is rebalanced."
        ),
        body=(
            "We will upgrade BigQuery storage in europe-west1 during this window. No downtime "
            "is expected; some queries may be slower."
        ),
        windows=[
            services.WindowSpec(
                product=ctx.products["bigquery"],
                location=ctx.locations["europe-west1"],
                level=Level.UNDER_MAINTENANCE,
                started_at=start,
                # Planned end: the product shows as under maintenance only for the window.
                ended_at=end,
                description="Possible slower queries while storage is rebalanced.",
            )
        ],
        created_by=ctx.staff,
        notify=False,
    )


# --- Entry point ------------------------------------------------------------------------


def load(*, stdout: Writer | None = None, now: datetime | None = None, reviewed: bool = True) -> DemoSummary:
    """Create the demo data that is missing; never change what exists.

    `now` places the recent incidents and the upcoming maintenance (defaults to the
    current time). With `reviewed=False` the reports stay drafts, for tests that take
    one through review themselves. They are keyed on their fixed titles, so a later run on another day
    finds them and creates nothing new.
    """
    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    summary = DemoSummary()

    def say(msg: str) -> None:
        if stdout is not None:
            stdout.write(msg + "\n")

    say("Staff accounts")
    staff = _ensure_staff(stdout, summary)
    # The demo writes as `staff`, through the same role checks as everyone else.
    demo_roles.join(staff, "Administrator")
    summary.role_users_created = demo_roles.ensure_role_users(stdout)
    say("Products and locations")
    with transaction.atomic():
        products, locations = _ensure_catalogue(summary)
    say(
        f"  {summary.product_groups_created} groups, {summary.products_created} products, "
        f"{summary.locations_created} locations created"
    )
    ctx = _Context(
        staff=staff, products=products, locations=locations, summary=summary, out=stdout, reviewed=reviewed
    )

    say("Incidents from the published reports")
    _build_incident(
        ctx,
        key={"title": GMAIL_2009_TITLE, "started_at": GMAIL_2009_START},
        label="Gmail, 2009-09-01",
        build=_gmail_2009,
    )
    _build_incident(
        ctx,
        key={"title": GMAIL_2026_TITLE, "started_at": GMAIL_2026_START},
        label="Gmail, 2026-01-24",
        build=_gmail_2026,
    )
    _build_incident(
        ctx,
        key={"title": GCS_TITLE, "started_at": GCS_START},
        label="Cloud Storage, 2026-10-08/09",
        build=_cloud_storage_2026,
    )

    say("Recent incidents and upcoming maintenance")
    for spec in RECENT:
        _build_incident(
            ctx,
            key={"title": spec.title, "kind": Incident.Kind.INCIDENT},
            label=spec.title,
            build=partial(_recent, spec=spec, today=today),
        )
    _build_incident(
        ctx,
        key={"title": MAINTENANCE_TITLE, "kind": Incident.Kind.MAINTENANCE},
        label=MAINTENANCE_TITLE,
        build=partial(_maintenance, today=today),
    )
    return summary
