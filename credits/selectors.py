"""Reads of the credits domain: who is affected by which impact, and notice lists.

Which customers a location-scoped window affects (the location tree rule, in
`window_affects`) is described in docs/adr/0007-sla-credits.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Q, QuerySet
from django.utils import timezone

from core import roles
from credits import explain, sla, sla_measured
from credits.models import (
    POLICY_EPOCH,
    CreditAuditEntry,
    CreditNotice,
    CustomerEntitlement,
    NoticeState,
    SLAPolicy,
    SLAPolicyVersion,
)
from incidents.intervals import Interval, merge
from incidents.models import Incident, Location, Product
from incidents.selectors import windows_counted, windows_overlapping, worst_level


@dataclass(frozen=True)
class WindowRow:
    id: int
    product_id: int
    location_id: int | None
    outage: sla.Outage


def location_relatives() -> dict[int, frozenset[int]]:
    """For each location: itself, its ancestors and its descendants."""
    parent: dict[int, int | None] = dict(Location.objects.values_list("id", "parent_id"))
    children: dict[int, list[int]] = defaultdict(list)
    for child, par in parent.items():
        if par is not None:
            children[par].append(child)
    related: dict[int, frozenset[int]] = {}
    for loc in parent:
        found = {loc}
        up = parent.get(loc)
        while up is not None and up not in found:
            found.add(up)
            up = parent.get(up)
        stack = list(children.get(loc, ()))
        while stack:
            node = stack.pop()
            if node not in found:
                found.add(node)
                stack.extend(children.get(node, ()))
        related[loc] = frozenset(found)
    return related


def windows_for_period(*, start: datetime, end: datetime) -> list[WindowRow]:
    """Impact windows near [start, end): a day of margin either side, so that the
    minimum-downtime rule sees whole outage stretches across the month boundary. Only
    counted windows (`incidents.selectors.counted_window`): a draft owes nothing."""
    lo, hi = start - timedelta(days=1), end + timedelta(days=1)
    rows = (
        windows_counted()
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=lo), started_at__lt=hi)
        .values_list(
            "id",
            "product_id",
            "location_id",
            "level",
            "started_at",
            "ended_at",
            "incident_id",
            "incident__kind",
        )
        .order_by("started_at", "id")
    )
    return [
        WindowRow(
            id=wid,
            product_id=product_id,
            location_id=location_id,
            outage=sla.Outage(
                start=started,
                end=ended,
                level=level,
                maintenance=kind == Incident.Kind.MAINTENANCE,
                incident_id=incident_id,
            ),
        )
        for wid, product_id, location_id, level, started, ended, incident_id, kind in rows
    ]


def window_affects(
    window: WindowRow, *, location_id: int | None, relatives: dict[int, frozenset[int]]
) -> bool:
    """Does `window` affect an entitlement at `location_id` (same product)? A window with
    no location, or an entitlement to the product everywhere, always; otherwise when the
    entitlement is in the window's location, inside it or containing it, never in a
    sibling (a us-central1-b outage does not touch a us-central1-a customer)."""
    if window.location_id is None or location_id is None:
        return True
    return location_id in relatives.get(window.location_id, frozenset({window.location_id}))


@dataclass(frozen=True)
class EntitlementRow:
    customer_id: int
    product_id: int
    location_id: int | None
    policy_id: int | None


def eligible_entitlements(*, product_ids: set[int], chunk_size: int = 2000) -> Iterator[EntitlementRow]:
    """Entitlements of SLA-eligible customers to the given products, ordered by customer."""
    rows = (
        CustomerEntitlement.objects.filter(product_id__in=product_ids, customer__sla_eligible=True)
        .values_list("customer_id", "product_id", "location_id", "policy_id", "customer__policy_id")
        .order_by("customer_id", "id")
    )
    for customer_id, product_id, location_id, own_policy, customer_policy in rows.iterator(
        chunk_size=chunk_size
    ):
        yield EntitlementRow(customer_id, product_id, location_id, own_policy or customer_policy)


def windows_by_policy(
    rows: Iterable[EntitlementRow],
    *,
    by_product: dict[int, list[WindowRow]],
    relatives: dict[int, frozenset[int]],
) -> dict[int, set[int]]:
    """Per policy: the ids of the windows that affect one customer's entitlements under
    it (the monthly computation and the customer portal both measure through this)."""
    per_policy: dict[int, set[int]] = {}
    for row in rows:
        if row.policy_id is None:
            continue
        ids = per_policy.setdefault(row.policy_id, set())
        for window in by_product.get(row.product_id, ()):
            if window_affects(window, location_id=row.location_id, relatives=relatives):
                ids.add(window.id)
    return per_policy


@dataclass(frozen=True)
class CustomerMeasure:
    policy: SLAPolicy
    result: sla.SlaResult


def customer_measures(customer: Any, period: sla.Period, *, now: datetime) -> list[CustomerMeasure]:
    """`customer` measured under each of its policies for `period`, as
    `credits.services.credits_compute` measures it for the notices (the same windows, the
    same `sla.compute`): the figures a letter for that month carries."""
    policies = policies_with_tiers()
    rows = [
        EntitlementRow(customer.pk, product_id, location_id, own or customer.policy_id)
        for product_id, location_id, own in CustomerEntitlement.objects.filter(customer=customer)
        .order_by("id")
        .values_list("product_id", "location_id", "policy_id")
    ]
    used = {r.policy_id for r in rows if r.policy_id in policies}
    if not used:
        return []
    bounds = [period.bounds(policies[pk].time_zone) for pk in used]
    windows = windows_for_period(start=min(b[0] for b in bounds), end=max(b[1] for b in bounds))
    by_product: dict[int, list[WindowRow]] = defaultdict(list)
    for window in windows:
        by_product[window.product_id].append(window)
    versions = policy_versions({pk: policies[pk] for pk in used if pk in policies})
    measures = []
    for policy_id, ids in windows_by_policy(
        rows, by_product=by_product, relatives=location_relatives()
    ).items():
        if policy_id not in policies:
            continue
        policy = policies[policy_id]
        outages = [w.outage for w in windows if w.id in ids]
        result = month_result(outages, policy, period, now=now, versions=versions.get(policy_id))
        measures.append(CustomerMeasure(policy=policy, result=result))
    return sorted(measures, key=lambda m: m.policy.name)


def policies_with_tiers() -> dict[int, SLAPolicy]:
    return {p.pk: p for p in SLAPolicy.objects.prefetch_related("tiers")}


def policy_versions(policies: dict[int, SLAPolicy]) -> dict[int, list[sla_measured.Version]]:
    """Each policy's versions as pure maths, oldest first (one query). A policy without
    version rows reads as one version from the epoch: its row's terms."""
    found: dict[int, list[sla_measured.Version]] = {pk: [] for pk in policies}
    for row in SLAPolicyVersion.objects.filter(policy_id__in=list(policies)).order_by(
        "policy_id", "effective_from"
    ):
        found[row.policy_id].append(row.as_version(policies[row.policy_id]))
    for pk, versions in found.items():
        if not versions:
            policy = policies[pk]
            versions.append(
                sla_measured.Version(
                    POLICY_EPOCH, policy.as_policy(), policy.downtime_source, policy.measured_definition()
                )
            )
    return found


def month_result(
    outages: list[sla.Outage],
    policy: SLAPolicy,
    period: sla.Period,
    *,
    now: datetime | None = None,
    versions: list[sla_measured.Version] | None = None,
) -> sla.SlaResult:
    """A month's declared result under `policy`, each version for its days."""
    found = versions if versions is not None else policy_versions({policy.pk: policy})[policy.pk]
    return sla_measured.compute_versioned(outages, found, period, now=now).as_result()


@dataclass(frozen=True)
class VersionRow:
    version: SLAPolicyVersion
    until: date | None  # the last day it rules; None: the newest
    in_force: bool  # the version ruling today


def policy_version_rows(policy: SLAPolicy, *, today: date | None = None) -> list[VersionRow]:
    """A policy's versions, newest first, with the last day each rules."""
    versions = list(SLAPolicyVersion.objects.filter(policy=policy).order_by("effective_from"))
    today = today or timezone.localdate(timezone=ZoneInfo(policy.time_zone))
    rows = []
    for index, version in enumerate(versions):
        nxt = versions[index + 1].effective_from if index + 1 < len(versions) else None
        until = nxt - timedelta(days=1) if nxt is not None else None
        ruling = version.effective_from <= today and (nxt is None or today < nxt)
        rows.append(VersionRow(version, until, ruling))
    return rows[::-1]


def notices_for_period(*, period: str, states: list[str] | None = None) -> QuerySet[CreditNotice]:
    qs = CreditNotice.objects.filter(period=period).select_related("customer", "policy")
    if states:
        qs = qs.filter(state__in=states)
    return qs.order_by("customer__name", "customer_id", "policy_id")


def statements_readable(*, actor: Any) -> None:
    """Refuse unless `actor` may read statements and exports (every door calls this
    before it builds one; reads have no service to hold the check)."""
    roles.check(actor, "credits.statement")


def notice_periods(limit: int = 36) -> list[str]:
    """The months that have notices, latest first."""
    return list(CreditNotice.objects.order_by("-period").values_list("period", flat=True).distinct()[:limit])


def policies_by_name() -> list[SLAPolicy]:
    return list(SLAPolicy.objects.order_by("name"))


def audit_entries(
    *, period: str = "", notice: CreditNotice | None = None, limit: int = 30
) -> list[CreditAuditEntry]:
    """The latest audit entries of a month (with each entry's notice and customer), or of one notice."""
    if notice is not None:
        return list(notice.audit_entries.all()[:limit])
    return list(CreditAuditEntry.objects.filter(period=period).select_related("notice__customer")[:limit])


def notice_ids_selected(*, period: str = "", ids: Iterable[int] = ()) -> tuple[int, ...]:
    """The ids of the notices of `period` and among `ids` (each only when given)."""
    queryset = CreditNotice.objects.all()
    if period:
        queryset = queryset.filter(period=period)
    if ids:
        queryset = queryset.filter(pk__in=ids)
    return tuple(queryset.values_list("pk", flat=True))


def notice_breakdown(notice: CreditNotice) -> explain.Breakdown:
    """The window-by-window explanation of `notice` (see credits.explain).

    Looks at the windows of the products the customer has under this notice's policy, and
    at every window of the incidents the notice names (so a product the customer does not
    have shows up as "not entitled" rather than silently missing).
    """
    policy = notice.policy
    period = sla.Period.parse(notice.period)
    start, end = period.bounds(policy.time_zone)
    entitlements = [
        e
        for e in CustomerEntitlement.objects.filter(customer_id=notice.customer_id).select_related("customer")
        if (e.policy_id or e.customer.policy_id) == policy.pk
    ]
    products = {e.product_id for e in entitlements}
    incident_ids = set(notice.incidents.values_list("pk", flat=True))
    relatives = location_relatives()
    rows = [
        w
        for w in windows_for_period(start=start, end=end)
        if w.product_id in products or w.outage.incident_id in incident_ids
    ]
    names = dict(Product.objects.filter(pk__in={w.product_id for w in rows}).values_list("pk", "name"))
    places = dict(Location.objects.values_list("pk", "name"))
    inputs = []
    for w in rows:
        entitled = any(
            e.product_id == w.product_id and window_affects(w, location_id=e.location_id, relatives=relatives)
            for e in entitlements
        )
        inputs.append(
            explain.WindowInput(
                id=w.id,
                product=names.get(w.product_id, ""),
                location=places.get(w.location_id, "") if w.location_id else "",
                entitled=entitled,
                outage=w.outage,
            )
        )
    # The terms in force at the month's end (a month spanning a change lists each
    # version's figures on the notice itself).
    terms = sla_measured.in_force(policy_versions({policy.pk: policy})[policy.pk], period, policy.time_zone)[
        -1
    ]
    return explain.explain(inputs, terms.policy, period, now=notice.computed_at)


def notices_filtered(
    *, period: str = "", policy_id: int | None = None, state: str = ""
) -> QuerySet[CreditNotice]:
    qs = CreditNotice.objects.select_related("customer", "policy").order_by(
        "-period", "customer__name", "customer_id", "policy_id"
    )
    if period:
        qs = qs.filter(period=period)
    if policy_id:
        qs = qs.filter(policy_id=policy_id)
    if state:
        qs = qs.filter(state=state)
    return qs


@dataclass(frozen=True)
class Total:
    """One line of the review totals. Day credits add up (days of service granted in
    all); percent credits do not (10 % of one bill and 10 % of another are not 20 % of
    anything), so a percent line gives the money per currency and how many have no
    known bill instead."""

    policy: str
    unit: str
    currency: str  # empty on a line of day credits
    count: int
    days: Decimal | None
    amount: Decimal | None
    without_amount: int


def notice_totals(notices: Iterable[CreditNotice]) -> list[Total]:
    """Totals per policy: days for day credits; money per currency for percent credits."""
    acc: dict[tuple[str, str, str], list[Any]] = {}
    for n in notices:
        is_days = n.unit == CreditNotice.Unit.DAYS
        key = (n.policy.name, n.unit, "" if is_days else n.customer.currency)
        row = acc.setdefault(key, [0, Decimal(0) if is_days else None, None, 0])
        row[0] += 1
        if is_days:
            row[1] += n.credit
        elif n.credit_amount is None:
            row[3] += 1
        else:
            row[2] = (row[2] or Decimal(0)) + n.credit_amount
    return [Total(p, u, c, *acc[(p, u, c)]) for p, u, c in sorted(acc)]


def letter_claim_deadline(notice: CreditNotice, *, today: date | None = None) -> date | None:
    """The claim deadline the notice's letter carries, or would carry if it went out
    `today` (by default today in the policy's zone, as the approval counts it).

    Queued, sent and failed notices keep the deadline their letter was written with (a
    failed one is retried with the same letter); computed and approved ones have no
    letter yet, so theirs runs from the day it would go out (the stored value is only
    provisional); a cancelled notice has none.
    """
    if notice.state == NoticeState.CANCELLED:
        return None
    if notice.state in (NoticeState.COMPUTED, NoticeState.APPROVED):
        policy = notice.policy
        day = today or timezone.now().astimezone(ZoneInfo(policy.time_zone)).date()
        return sla.claim_deadline(day, policy.claim_window_days)
    return notice.claim_deadline


def notice_entitlements(notice: CreditNotice) -> list[CustomerEntitlement]:
    return [
        e
        for e in CustomerEntitlement.objects.filter(customer_id=notice.customer_id).select_related(
            "product", "location", "customer"
        )
        if (e.policy_id or e.customer.policy_id) == notice.policy_id
    ]


def notice_entitlements_for_customer(
    customer: Any, period: sla.Period
) -> list[tuple[CustomerEntitlement, SLAPolicy, sla.SlaResult]]:
    """Each entitlement of `customer` measured alone for `period` under its policy: the
    rows of the monthly statement (uptime per product and location)."""
    policies = policies_with_tiers()
    entitlements = list(
        CustomerEntitlement.objects.filter(customer=customer).select_related("product", "location")
    )
    relatives = location_relatives()
    out = []
    for e in entitlements:
        policy_id = e.policy_id or customer.policy_id
        if policy_id is None or policy_id not in policies:
            continue
        policy = policies[policy_id]
        start, end = period.bounds(policy.time_zone)
        outages = [
            w.outage
            for w in windows_for_period(start=start, end=end)
            if w.product_id == e.product_id
            and window_affects(w, location_id=e.location_id, relatives=relatives)
        ]
        out.append((e, policy, month_result(outages, policy, period)))
    return out


def entitlement_labels(notices: Iterable[CreditNotice]) -> dict[int, str]:
    """Per notice: what the customer has under its policy, e.g. "Cloud Storage in us-central1"."""
    notices = list(notices)
    by_customer: dict[int, list[CustomerEntitlement]] = defaultdict(list)
    for e in CustomerEntitlement.objects.filter(
        customer_id__in={n.customer_id for n in notices}
    ).select_related("product", "location", "customer"):
        by_customer[e.customer_id].append(e)
    labels = {}
    for n in notices:
        parts = [
            f"{e.product.name} in {e.location.name}" if e.location else f"{e.product.name} (everywhere)"
            for e in by_customer.get(n.customer_id, [])
            if (e.policy_id or e.customer.policy_id) == n.policy_id
        ]
        labels[n.pk] = "; ".join(parts)
    return labels


@dataclass(frozen=True)
class CustomerIncident:
    """How long one incident (or maintenance) touched one customer: the union of its
    windows on the customer's entitlements (`window_affects`), an ongoing one to `now`."""

    incident_id: int
    affected: timedelta
    start: datetime
    end: datetime | None  # None while a window is open


def _customer_rows(customer: Any, windows: QuerySet[Any]) -> Iterator[tuple[WindowRow, int | None]]:
    """The windows of `windows` that affect one of the customer's entitlements."""
    entitlements = list(
        CustomerEntitlement.objects.filter(customer=customer).values_list("product_id", "location_id")
    )
    relatives = location_relatives()
    for row in windows.filter(product_id__in={p for p, _ in entitlements}).values_list(
        "id", "product_id", "location_id", "level", "started_at", "ended_at", "incident_id"
    ):
        wid, product_id, location_id, level, started, ended, incident_id = row
        window = WindowRow(
            wid, product_id, location_id, sla.Outage(started, ended, level, incident_id=incident_id)
        )
        if any(
            p == product_id and window_affects(window, location_id=loc, relatives=relatives)
            for p, loc in entitlements
        ):
            yield window, incident_id


def customer_incidents(customer: Any, *, since: datetime, now: datetime) -> list[CustomerIncident]:
    """The incidents and maintenance that touched `customer` since `since` (or are
    planned), newest first, each with the customer's own affected time."""
    spans: dict[int, list[Interval]] = defaultdict(list)
    open_ids: set[int] = set()
    recent = windows_counted().filter(Q(ended_at__isnull=True) | Q(ended_at__gt=since))
    for window, incident_id in _customer_rows(customer, recent):
        if incident_id is None:
            continue
        end = window.outage.end
        if end is None:
            open_ids.add(incident_id)
        spans[incident_id].append(Interval(window.outage.start, end or max(now, window.outage.start)))
    out = []
    for incident_id, intervals in spans.items():
        merged = merge(intervals)
        total = sum((iv.duration for iv in merged), timedelta())
        end = None if incident_id in open_ids else merged[-1].end
        out.append(CustomerIncident(incident_id, total, merged[0].start, end))
    return sorted(out, key=lambda c: (c.start, c.incident_id), reverse=True)


def customer_statuses(customer: Any, *, now: datetime) -> list[tuple[CustomerEntitlement, str]]:
    """Each entitlement of `customer` with its status now: the worst open window that
    affects it."""
    entitlements = list(
        CustomerEntitlement.objects.filter(customer=customer).select_related("product", "location")
    )
    open_now = list(_customer_rows(customer, windows_overlapping(windows_counted(), since=now, until=now)))
    relatives = location_relatives()
    return [
        (
            e,
            worst_level(
                w.outage.level
                for w, _ in open_now
                if w.product_id == e.product_id
                and window_affects(w, location_id=e.location_id, relatives=relatives)
                and w.outage.start <= now
            ),
        )
        for e in entitlements
    ]


def customer_notices(customer: Any) -> QuerySet[CreditNotice]:
    """The credit notices the customer was sent (what a contact may read)."""
    return CreditNotice.objects.filter(customer=customer, state=NoticeState.SENT).select_related("policy")
