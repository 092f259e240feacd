"""Writes of the credits domain: customers, computing notices, approving, sending, cancelling.

The flow: `credits_compute` turns recorded impact into notices (state computed) for
review; `credits_approve_and_send` approves them and writes one outbox email per notice in
the same transaction; the outbox delivers it and, in the transaction that records the
delivery, `_on_notice_sent` marks the notice sent and moves a day credit's term end date,
exactly once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, OuterRef, QuerySet, Subquery
from django.utils import timezone

from core import bulk
from core.i18n import clean_language
from core.text import clean_single_line
from credits import emails, selectors, sla
from credits.audit import audit_record
from credits.models import (
    AuditAction,
    CreditNotice,
    CreditTier,
    Customer,
    CustomerEntitlement,
    NoticeState,
    SLAPolicy,
)
from incidents.models import Incident, Location, Product
from outbox import services as outbox
from outbox.models import MessageState, OutboundMessage

logger = logging.getLogger(__name__)

OUTBOX_PURPOSE = "credit_notice"
Progress = Callable[[int, int], None]


# --- Customers and policies ---------------------------------------------------------------------


def clean_time_zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError({"time_zone": f"{value!r} is not a time zone."}) from None
    return value


@transaction.atomic
def policy_create(
    *,
    name: str,
    target: Decimal,
    tiers: Iterable[tuple[Decimal, Decimal]],
    unit: str = SLAPolicy.Unit.DAYS,
    time_zone: str = "US/Pacific",
    cap: Decimal | None = None,
    min_downtime_minutes: int = 0,
    exclude_maintenance: bool = True,
    claim_window_days: int = 30,
    description: str = "",
    weights: dict[str, Decimal] | None = None,
) -> SLAPolicy:
    """A policy and its tiers ((below, credit) pairs)."""
    policy = SLAPolicy(
        name=clean_single_line(name, field="name", max_length=100),
        description=description,
        target=Decimal(target),
        time_zone=clean_time_zone(time_zone),
        unit=unit,
        cap=cap,
        min_downtime_minutes=min_downtime_minutes,
        exclude_maintenance=exclude_maintenance,
        claim_window_days=claim_window_days,
    )
    for level, weight in (weights or {}).items():
        setattr(policy, f"weight_{level}", Decimal(weight))
    policy.full_clean()
    policy.save()
    for below, credit in tiers:
        tier = CreditTier(policy=policy, below=Decimal(below), credit=Decimal(credit))
        tier.full_clean(exclude=["policy"])
        tier.save()
    return policy


POLICY_FIELDS = frozenset(
    {
        "name",
        "description",
        "target",
        "time_zone",
        "unit",
        "cap",
        "claim_window_days",
        "weight_major_outage",
        "weight_partial_outage",
        "weight_degraded_performance",
        "weight_under_maintenance",
        "min_downtime_minutes",
        "exclude_maintenance",
    }
)


@transaction.atomic
def policy_update(*, policy: SLAPolicy, changes: dict[str, Any]) -> SLAPolicy:
    """Edit a policy's terms. Notices already computed keep what they were computed with
    until the period is recomputed."""
    unknown = set(changes) - POLICY_FIELDS
    if unknown:
        raise ValidationError(f"These fields cannot be edited here: {', '.join(sorted(unknown))}.")
    if "name" in changes:
        changes = {**changes, "name": clean_single_line(changes["name"], field="name", max_length=100)}
    if "time_zone" in changes:
        changes = {**changes, "time_zone": clean_time_zone(changes["time_zone"])}
    for key, value in changes.items():
        setattr(policy, key, value)
    policy.full_clean()
    policy.save()
    return policy


@transaction.atomic
def policy_set_tiers(*, policy: SLAPolicy, tiers: Iterable[tuple[Decimal, Decimal]]) -> list[CreditTier]:
    """Replace the policy's credit tiers ((below, credit) pairs) as a whole."""
    new = [CreditTier(policy=policy, below=Decimal(below), credit=Decimal(credit)) for below, credit in tiers]
    if len({t.below for t in new}) != len(new):
        raise ValidationError({"tiers": "Two tiers have the same threshold."})
    for tier in new:
        tier.full_clean(exclude=["policy"])
    CreditTier.objects.filter(policy=policy).delete()
    return CreditTier.objects.bulk_create(new)


def clean_customer_name(name: str) -> str:
    # Names reach email bodies and admin lists; CR/LF would be a header injection waiting
    # for the first template that puts a name in a header.
    return clean_single_line(name, field="name", max_length=200)


@transaction.atomic
def customer_create(
    *,
    name: str,
    billing_emails: list[str],
    policy: SLAPolicy | None = None,
    sla_eligible: bool = True,
    term_end_date: date | None = None,
    monthly_bill: Decimal | None = None,
    currency: str = "USD",
    language: str = "en",
) -> Customer:
    customer = Customer(
        name=clean_customer_name(name),
        billing_emails=outbox.clean_addresses(billing_emails, field="billing_emails"),
        policy=policy,
        sla_eligible=sla_eligible,
        term_end_date=term_end_date,
        monthly_bill=monthly_bill,
        currency=clean_single_line(currency, field="currency", max_length=3).upper(),
        language=clean_language(language),
    )
    customer.full_clean()
    customer.save()
    return customer


@transaction.atomic
def customer_update(*, customer: Customer, **fields: Any) -> Customer:
    if "name" in fields:
        fields["name"] = clean_customer_name(fields["name"])
    if "billing_emails" in fields:
        fields["billing_emails"] = outbox.clean_addresses(fields["billing_emails"], field="billing_emails")
    if "language" in fields:
        # The language of the customer's letters from now on (a queued one keeps its own).
        fields["language"] = clean_language(fields["language"])
    for key, value in fields.items():
        setattr(customer, key, value)
    customer.full_clean()
    customer.save()
    return customer


@transaction.atomic
def customer_entitle(
    *, customer: Customer, product: Product, location: Location | None = None, policy: SLAPolicy | None = None
) -> CustomerEntitlement:
    """Entitle the customer to a product (idempotent)."""
    entitlement, created = CustomerEntitlement.objects.get_or_create(
        customer=customer, product=product, location=location, defaults={"policy": policy}
    )
    if not created and entitlement.policy_id != (policy.pk if policy else None):
        entitlement.policy = policy
        entitlement.save(update_fields=["policy"])
    return entitlement


@transaction.atomic
def customer_unentitle(*, entitlement: CustomerEntitlement) -> None:
    CustomerEntitlement.objects.filter(pk=entitlement.pk).delete()


# --- Computing ------------------------------------------------------------------------------------


@dataclass
class ComputeSummary:
    period: str
    customers_considered: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    kept_final: int = 0  # approved, queued, sent, failed or cancelled: never touched
    notice_ids: list[int] = field(default_factory=list)


def _claim_deadline(period: sla.Period, policy: SLAPolicy) -> date:
    # Provisional, for review: the deadline a letter carries is set when it is approved
    # (claim_deadline_on), counted from the sending day, never from the month.
    last_day = date(period.next().year, period.next().month, 1) - timedelta(days=1)
    return last_day + timedelta(days=policy.claim_window_days)


def claim_deadline_on(policy: SLAPolicy, day: date) -> date:
    """The claim deadline of a letter sent on `day`: the policy's window after it."""
    return sla.claim_deadline(day, policy.claim_window_days)


def _notice_values(
    *, result: sla.SlaResult, policy: SLAPolicy, customer_bill: Decimal | None, period: sla.Period
) -> dict[str, Any]:
    start, end = period.bounds(policy.time_zone)
    return {
        "period_start": start,
        "period_end": end,
        "period_minutes": result.period_minutes.quantize(Decimal("0.01")),
        "downtime_minutes": result.downtime_minutes_rounded,
        "uptime_percent": result.uptime_percent_rounded,
        "credit": result.credit.quantize(Decimal("0.01")),
        "unit": policy.unit,
        "credit_amount": sla.credit_amount(result.credit, policy.unit, customer_bill),
        "claim_deadline": _claim_deadline(period, policy),
    }


_COMPARED = (
    "period_start",
    "period_end",
    "period_minutes",
    "downtime_minutes",
    "uptime_percent",
    "credit",
    "unit",
    "credit_amount",
    "claim_deadline",
)


def credits_compute(
    *,
    period: str | sla.Period,
    now: datetime | None = None,
    progress: Progress | None = None,
    actor: AbstractBaseUser | None = None,
    via: str = "",
) -> ComputeSummary:
    """Compute (or refresh) the notices of every eligible customer owed a credit.

    Idempotent: a second run with the same impact data creates, updates and removes
    nothing. Notices past review (approved, queued, sent, failed, cancelled) are never
    touched. A computed notice whose credit disappeared (impact edited) is removed.
    """
    try:
        period = sla.Period.parse(period) if isinstance(period, str) else period
    except ValueError as exc:
        raise ValidationError({"period": str(exc)}) from None
    now = now or timezone.now()
    # A month that has not begun has no downtime to measure; refusing it also keeps the
    # calendar arithmetic away from the end of the calendar (9998-12 was a traceback).
    if (period.year, period.month) > (now.year, now.month):
        raise ValidationError({"period": f"{period} has not started yet."})
    label = str(period)
    summary = ComputeSummary(period=label)
    policies = selectors.policies_with_tiers()
    pure = {pk: p.as_policy(list(p.tiers.all())) for pk, p in policies.items()}
    if not policies:
        return summary
    bounds = [period.bounds(p.time_zone) for p in pure.values()]
    windows = selectors.windows_for_period(start=min(b[0] for b in bounds), end=max(b[1] for b in bounds))
    by_product: dict[int, list[selectors.WindowRow]] = {}
    for window in windows:
        by_product.setdefault(window.product_id, []).append(window)
    relatives = selectors.location_relatives()
    batch = int(getattr(settings, "CREDITS_COMPUTE_BATCH", 2000))

    # Many customers share an entitlement shape; the maths runs once per distinct
    # (policy, set of windows) and is reused.
    results: dict[tuple[int, frozenset[int]], sla.SlaResult] = {}
    owed: dict[tuple[int, int], sla.SlaResult] = {}

    def flush_customer(customer_id: int, rows: list[selectors.EntitlementRow]) -> None:
        per_policy: dict[int, set[int]] = {}
        for row in rows:
            if row.policy_id is None:
                continue
            ids = per_policy.setdefault(row.policy_id, set())
            for window in by_product.get(row.product_id, ()):
                if selectors.window_affects(window, location_id=row.location_id, relatives=relatives):
                    ids.add(window.id)
        for policy_id, ids in per_policy.items():
            key = (policy_id, frozenset(ids))
            result = results.get(key)
            if result is None:
                outages = [w.outage for w in windows if w.id in ids]
                result = sla.compute(outages, pure[policy_id], period, now=now)
                results[key] = result
            if result.owed:
                owed[(customer_id, policy_id)] = result

    with transaction.atomic():
        # Serialise concurrent runs (a double-clicked admin action) on the policy rows.
        list(SLAPolicy.objects.select_for_update().filter(pk__in=list(policies)).values_list("pk"))
        current: int | None = None
        rows: list[selectors.EntitlementRow] = []
        for row in selectors.eligible_entitlements(product_ids=set(by_product)):
            if row.customer_id != current:
                if current is not None:
                    flush_customer(current, rows)
                    summary.customers_considered += 1
                    if summary.customers_considered % batch == 0:
                        # Bounded memory: write this page of customers and report.
                        _store(owed, period=period, policies=policies, summary=summary, now=now)
                        owed.clear()
                        if progress:
                            progress(summary.customers_considered, 0)
                current, rows = row.customer_id, []
            rows.append(row)
        if current is not None:
            flush_customer(current, rows)
            summary.customers_considered += 1
        _store(owed, period=period, policies=policies, summary=summary, now=now)
        # Computed notices nobody is owed any more (impact edited away). Compared in Python
        # and deleted in chunks: an IN list of every notice would overflow SQLite's limit.
        touched = set(summary.notice_ids)
        stale = [
            pk
            for pk in CreditNotice.objects.filter(period=label, state=NoticeState.COMPUTED).values_list(
                "pk", flat=True
            )
            if pk not in touched
        ]
        for chunk in _chunks(stale):
            CreditNotice.incidents.through.objects.filter(creditnotice_id__in=chunk).delete()
            CreditNotice.objects.filter(pk__in=chunk, state=NoticeState.COMPUTED).delete()
        summary.removed = len(stale)
        audit_record(
            action=AuditAction.COMPUTED,
            actor=actor,
            via=via,
            period=label,
            count=len(summary.notice_ids),
            detail=f"created {summary.created}, updated {summary.updated}, unchanged {summary.unchanged}, "
            f"removed {summary.removed}, past review {summary.kept_final}",
        )
        if progress and summary.customers_considered >= batch:
            progress(summary.customers_considered, summary.customers_considered)
    return summary


def _store(
    owed: dict[tuple[int, int], sla.SlaResult],
    *,
    period: sla.Period,
    policies: dict[int, SLAPolicy],
    summary: ComputeSummary,
    now: datetime,
) -> None:
    """Write one batch of owed results: create, refresh computed ones, keep the rest."""
    if not owed:
        return
    label = str(period)
    customer_ids = {c for c, _ in owed}
    bills = dict(Customer.objects.filter(pk__in=customer_ids).values_list("pk", "monthly_bill"))
    existing = {
        (n.customer_id, n.policy_id): n
        for n in CreditNotice.objects.select_for_update().filter(period=label, customer_id__in=customer_ids)
    }
    through = CreditNotice.incidents.through
    linked: dict[int, set[int]] = {}
    for notice_id, incident_id in through.objects.filter(
        creditnotice_id__in=[n.pk for n in existing.values()]
    ).values_list("creditnotice_id", "incident_id"):
        linked.setdefault(notice_id, set()).add(incident_id)
    to_create: list[tuple[CreditNotice, tuple[int, ...]]] = []
    to_update: list[tuple[CreditNotice, tuple[int, ...]]] = []
    for (customer_id, policy_id), result in owed.items():
        policy = policies[policy_id]
        values = _notice_values(
            result=result, policy=policy, customer_bill=bills.get(customer_id), period=period
        )
        notice = existing.get((customer_id, policy_id))
        if notice is None:
            to_create.append(
                (
                    CreditNotice(
                        customer_id=customer_id, policy_id=policy_id, period=label, computed_at=now, **values
                    ),
                    result.incident_ids,
                )
            )
            continue
        summary.notice_ids.append(notice.pk)
        if notice.state != NoticeState.COMPUTED:
            # Past review: what staff approved (or what went out) is never rewritten.
            summary.kept_final += 1
            continue
        same_incidents = linked.get(notice.pk, set()) == set(result.incident_ids)
        if same_incidents and all(getattr(notice, k) == v for k, v in values.items()):
            summary.unchanged += 1
            continue
        for key, value in values.items():
            setattr(notice, key, value)
        notice.computed_at = now
        to_update.append((notice, result.incident_ids))
    if to_create:
        created = CreditNotice.objects.bulk_create([n for n, _ in to_create], batch_size=1000)
        through.objects.bulk_create(
            [
                through(creditnotice_id=n.pk, incident_id=inc)
                for n, (_, incs) in zip(created, to_create, strict=True)
                for inc in incs
            ],
            batch_size=5000,
        )
        summary.created += len(created)
        summary.notice_ids.extend(n.pk for n in created)
    if to_update:
        CreditNotice.objects.bulk_update([n for n, _ in to_update], [*_COMPARED, "computed_at", "updated_at"])
        through.objects.filter(creditnotice__in=[n for n, _ in to_update]).delete()
        through.objects.bulk_create(
            [through(creditnotice_id=n.pk, incident_id=inc) for n, incs in to_update for inc in incs]
        )
        summary.updated += len(to_update)


# --- Approving, sending, cancelling -------------------------------------------------------------------


@dataclass
class SendSummary:
    queued: int = 0
    retried: int = 0
    skipped: int = 0


def notice_outbox_key(customer_id: int, policy_id: int, period: str) -> str:
    # Per customer, policy and period, not per row: even if a notice were deleted and
    # computed again, its email could not be queued a second time.
    return f"credit-notice:{customer_id}:{policy_id}:{period}"


def credits_approve_and_send(
    *,
    notices: Iterable[CreditNotice],
    actor: AbstractBaseUser | None = None,
    progress: Progress | None = None,
    confirmed: bool = False,
) -> SendSummary:
    """Approve computed notices and queue their emails, atomically per run.

    `confirmed` must be True: callers reach this through credits.confirm (a token from
    the confirmation page or API preview), the command's question or its --yes.

    Each email is an outbox row written in this transaction, so "approved" and "an email
    will go out" are one fact; delivery starts after the commit. Failed notices get a
    fresh delivery budget. Anything else (queued, sent, cancelled) is left alone. Rows are
    written 5,000 at a time (one INSERT for the emails, one UPDATE for the notices, both
    over arrays; alike letters share one stored body), so approving 10,000 notices costs
    a few dozen statements, not 50,000. Approving again queues nothing twice: the notices
    are locked and only computed or approved ones go, and each email's key is unique.
    """
    if isinstance(notices, QuerySet):
        # order_by(): the default ordering joins the customer to sort by name.
        ids = sorted(set(notices.order_by().values_list("pk", flat=True)))
    else:
        ids = sorted({n.pk for n in notices})
    if not confirmed:
        raise ValidationError("Sending credit notices needs a confirmation; nothing was sent.")
    summary = SendSummary()
    now = timezone.now()
    # One render per distinct letter for the whole run, not per chunk.
    renderer = emails.CreditNoticeRenderer()
    with transaction.atomic():
        done = 0
        for chunk in _chunks(ids):
            _approve_chunk(_lock_chunk(chunk), actor=actor, now=now, summary=summary, renderer=renderer)
            done += len(chunk)
            if progress and len(ids) > len(chunk):
                progress(done, len(ids))
    return summary


def _cached(queryset: QuerySet[Any], rows: list[Any]) -> QuerySet[Any]:
    # A queryset that already holds its rows, as prefetch_related leaves one: iterating
    # it costs nothing, and anything else (values_list, filter) queries as it says.
    queryset._result_cache = rows
    queryset._prefetch_done = True  # type: ignore[attr-defined]
    return queryset


class _NoticeRow(NamedTuple):
    """What approving reads of a notice and its customer, as plain values."""

    pk: int
    state: str
    customer_id: int
    policy_id: int
    period: str
    unit: str
    credit: Decimal
    credit_amount: Decimal | None
    downtime_minutes: Decimal
    uptime_percent: Decimal
    term_extended_at: datetime | None
    computed_at: datetime
    message_id: int | None
    name: str
    billing_emails: list[str]
    language: str
    term_end_date: date | None
    currency: str
    customer_policy_id: int | None


_ROW_COLUMNS = (
    *_NoticeRow._fields[:13],
    "customer__name",
    "customer__billing_emails",
    "customer__language",
    "customer__term_end_date",
    "customer__currency",
    "customer__policy_id",
)


_STARTED = emails.INCIDENT_FIELDS.index("started_at")


@dataclass
class _Chunk:
    """A chunk of notices, locked, with what their letters read, as plain values."""

    rows: list[_NoticeRow]
    policies: dict[int, SLAPolicy]
    incidents: dict[int, tuple[tuple[Any, ...], ...]]  # notice id -> INCIDENT_FIELDS, by start
    entitlements: dict[int, list[tuple[int, int | None, int | None]]]  # customer id -> rows


def _incident_links(notice_ids: list[int]) -> dict[int, list[int]]:
    """The ids of the incidents each notice names, by notice id (one query)."""
    links: dict[int, list[int]] = {}
    through = CreditNotice.incidents.through
    for notice_id, incident_id in through.objects.filter(
        bulk.AnyOf(F("creditnotice_id"), notice_ids)
    ).values_list("creditnotice_id", "incident_id"):
        links.setdefault(notice_id, []).append(incident_id)
    return links


def _lock_chunk(chunk: list[int]) -> _Chunk:
    """The notices of `chunk`, locked, as values: no model instance per notice (building
    them, and reading a letter's facts through them, cost more than everything else).
    Notices naming the same incidents share one tuple of the incidents' facts."""
    rows = [
        _NoticeRow._make(values)
        for values in CreditNotice.objects.select_for_update(of=("self",))
        .filter(bulk.AnyOf(F("pk"), chunk))
        .order_by("pk")
        .values_list(*_ROW_COLUMNS)
    ]
    policies = SLAPolicy.objects.in_bulk({n.policy_id for n in rows})
    links = _incident_links(chunk)
    facts = {
        values[0]: values
        for values in Incident.objects.filter(pk__in={i for ids in links.values() for i in ids}).values_list(
            *emails.INCIDENT_FIELDS
        )
    }
    by_set: dict[tuple[int, ...], tuple[tuple[Any, ...], ...]] = {}
    incidents: dict[int, tuple[tuple[Any, ...], ...]] = {}
    for notice_id, ids in links.items():
        named = tuple(sorted(ids))
        if named not in by_set:
            # By start, as the letter lists them.
            by_set[named] = tuple(sorted((facts[i] for i in named), key=lambda f: (f[_STARTED], f[0])))
        incidents[notice_id] = by_set[named]
    entitlements: dict[int, list[tuple[int, int | None, int | None]]] = {}
    for customer_id, product_id, location_id, policy_id in CustomerEntitlement.objects.filter(
        bulk.AnyOf(F("customer_id"), {n.customer_id for n in rows})
    ).values_list("customer_id", "product_id", "location_id", "policy_id"):
        entitlements.setdefault(customer_id, []).append((product_id, location_id, policy_id))
    return _Chunk(rows=rows, policies=policies, incidents=incidents, entitlements=entitlements)


def _load_for_render(pks: list[int], policies: dict[int, SLAPolicy]) -> dict[int, CreditNotice]:
    """Notices as model instances, with their customer, policy, incidents (by start) and the
    customer's entitlements loaded as the renderer reads them: one per distinct letter
    when approving, so a few queries, not a prefetch per notice."""
    rows = list(CreditNotice.objects.filter(pk__in=pks).select_related("customer").order_by("pk"))
    links = _incident_links(pks)
    incidents = Incident.objects.in_bulk({i for ids in links.values() for i in ids})
    entitlements: dict[int, list[CustomerEntitlement]] = {}
    for entitlement in CustomerEntitlement.objects.filter(
        customer_id__in={n.customer_id for n in rows}
    ).order_by("pk"):
        entitlements.setdefault(entitlement.customer_id, []).append(entitlement)
    for notice in rows:
        notice.policy = policies[notice.policy_id]
        ids = sorted(links.get(notice.pk, ()), key=lambda i: (incidents[i].started_at, i))
        notice._prefetched_objects_cache = {  # type: ignore[attr-defined]
            "incidents": _cached(
                Incident.objects.filter(pk__in=ids).order_by("started_at", "id"), [incidents[i] for i in ids]
            )
        }
        # A list, not a queryset: the renderer only iterates `customer.entitlements.all()`;
        # anything else on it fails loudly, never queries the wrong rows.
        customer: Any = notice.customer
        customer._prefetched_objects_cache = {"entitlements": entitlements.get(notice.customer_id, [])}
    return {notice.pk: notice for notice in rows}


# A chunk is a few statements whatever its size (arrays on PostgreSQL); 5,000 keeps the
# rows of one chunk small.
APPROVE_CHUNK = 5000


def _chunks(items: list[int], size: int = APPROVE_CHUNK) -> list[list[int]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _letters(
    chunk: _Chunk,
    to_queue: list[_NoticeRow],
    deadlines: dict[int, date],
    renderer: emails.CreditNoticeRenderer,
) -> tuple[list[tuple[Any, ...]], dict[int, CreditNotice]]:
    """The letter key of each notice to queue (computed from the chunk's values), with the
    renderer taught every new one; and, loaded, the notices whose letter is rendered per
    notice (none with today's subject)."""
    policy_facts = {
        pk: tuple(getattr(policy, f) for f in emails.POLICY_FIELDS) for pk, policy in chunk.policies.items()
    }
    keys = []
    first: dict[tuple[Any, ...], int] = {}
    for n in to_queue:
        key = emails.letter_key(
            policy=policy_facts[n.policy_id],
            language=n.language,
            term_end_date=n.term_end_date,
            currency=n.currency,
            customer_policy_id=n.customer_policy_id,
            period=n.period,
            unit=n.unit,
            credit=n.credit,
            credit_amount=n.credit_amount,
            downtime_minutes=n.downtime_minutes,
            uptime_percent=n.uptime_percent,
            claim_deadline=deadlines[n.policy_id],
            term_extended=n.term_extended_at is not None,
            computed_at=n.computed_at,
            incidents=chunk.incidents.get(n.pk, ()),
            entitlements=chunk.entitlements.get(n.customer_id, ()),
        )
        keys.append(key)
        if key not in first and not renderer.knows(key):
            first[key] = n.pk
    if first:
        loaded = _load_for_render(list(first.values()), chunk.policies)
        for key, pk in first.items():
            notice = loaded[pk]
            notice.claim_deadline = deadlines[notice.policy_id]
            renderer.learn(key, notice)
    personal = [n.pk for n, key in zip(to_queue, keys, strict=True) if renderer.letter(key) is None]
    singles = _load_for_render(personal, chunk.policies) if personal else {}
    for notice in singles.values():
        notice.claim_deadline = deadlines[notice.policy_id]
    return keys, singles


def _approve_chunk(
    chunk: _Chunk,
    *,
    actor: AbstractBaseUser | None,
    now: datetime,
    summary: SendSummary,
    renderer: emails.CreditNoticeRenderer,
) -> None:
    to_queue = [n for n in chunk.rows if n.state in (NoticeState.COMPUTED, NoticeState.APPROVED)]
    # The claim deadline runs from the day the letter goes out, in the policy's zone.
    deadlines = {
        pk: claim_deadline_on(policy, now.astimezone(ZoneInfo(policy.time_zone)).date())
        for pk, policy in chunk.policies.items()
    }
    keys, singles = _letters(chunk, to_queue, deadlines, renderer)
    specs: list[outbox.EmailSpec | outbox.SharedEmailSpec] = []
    bodies: dict[tuple[str, str, str], outbox.SharedBody] = {}
    for n, letter_key in zip(to_queue, keys, strict=True):
        key = notice_outbox_key(n.customer_id, n.policy_id, n.period)
        letter = renderer.letter(letter_key)
        if letter is None:
            subject, text, html = emails.render_credit_notice(singles[n.pk])
            specs.append(
                outbox.EmailSpec(
                    key=key,
                    to=list(n.billing_emails),
                    subject=subject,
                    text=text,
                    html=html,
                    purpose=OUTBOX_PURPOSE,
                    ref=f"notice:{n.pk}",
                )
            )
            continue
        body = bodies.get(letter)
        if body is None:
            body = bodies[letter] = outbox.SharedBody(*letter)
        specs.append(
            outbox.SharedEmailSpec(
                key=key,
                to=list(n.billing_emails),
                body=body,
                fills=renderer.fills(n.name),
                purpose=OUTBOX_PURPOSE,
                ref=f"notice:{n.pk}",
            )
        )
    if to_queue:
        stored = outbox.messages_enqueue_many(specs)
        # Every notice approved, linked and given its deadline in one UPDATE.
        actor_id = actor.pk if actor is not None and getattr(actor, "is_authenticated", False) else None
        updates = []
        sent_before = []
        for n, spec in zip(to_queue, specs, strict=True):
            message_pk, message_id, state = stored[spec.key]
            updates.append(
                (n.pk, NoticeState.QUEUED, now, actor_id, message_pk, message_id, deadlines[n.policy_id], now)
            )
            if state == MessageState.SENT:
                sent_before.append(n.pk)
        bulk.bulk_update(
            CreditNotice,
            (
                "state",
                "approved_at",
                "approved_by_id",
                "message_id",
                "email_message_id",
                "claim_deadline",
                "updated_at",
            ),
            updates,
        )
        summary.queued += len(to_queue)
        # Sent under this key before (the first notice for this customer, policy and month
        # was deleted by hand and computed again): record it, send nothing, and leave the
        # term alone: the first notice already moved it.
        for notice in CreditNotice.objects.filter(pk__in=sent_before).select_related("message"):
            assert notice.message is not None
            _mark_sent(notice, notice.message, extend_term=False)
    failed = {n.pk for n in chunk.rows if n.state == NoticeState.FAILED and n.message_id is not None}
    for notice in CreditNotice.objects.filter(pk__in=failed).select_related("message").order_by("pk"):
        assert notice.message is not None
        outbox.message_retry(message=notice.message)
        notice.state = NoticeState.QUEUED
        notice.last_error = ""
        notice.save(update_fields=["state", "last_error", "updated_at"])
    summary.retried += len(failed)
    summary.skipped += sum(
        1
        for n in chunk.rows
        if n.state not in (NoticeState.COMPUTED, NoticeState.APPROVED) and n.pk not in failed
    )


@transaction.atomic
def credits_cancel(
    *, notice: CreditNotice, actor: AbstractBaseUser | None = None, via: str = ""
) -> CreditNotice:
    """Withdraw a notice before it goes out. A queued one is stopped only if still pending."""
    notice = CreditNotice.objects.select_for_update().get(pk=notice.pk)
    if notice.state in (NoticeState.SENT, NoticeState.CANCELLED):
        raise ValidationError(f"A {notice.get_state_display().lower()} notice cannot be cancelled.")
    if notice.state == NoticeState.QUEUED and notice.message is not None:
        outbox.message_cancel(message=notice.message)  # raises if it is being sent now
    notice.state = NoticeState.CANCELLED
    notice.save(update_fields=["state", "updated_at"])
    audit_record(action=AuditAction.CANCELLED, actor=actor, via=via, notice=notice, count=1)
    return notice


def _mark_sent(notice: CreditNotice, message: OutboundMessage, *, extend_term: bool = True) -> None:
    if notice.state == NoticeState.SENT:
        return
    notice.state = NoticeState.SENT
    notice.sent_at = message.sent_at or timezone.now()
    notice.last_error = ""
    fields = ["state", "sent_at", "last_error", "updated_at"]
    if extend_term and notice.unit == CreditNotice.Unit.DAYS and notice.term_extended_at is None:
        customer = Customer.objects.select_for_update().get(pk=notice.customer_id)
        if customer.term_end_date is not None:
            # term_extended_at is the once-only guard: a redelivered handler call finds
            # it set and leaves the date alone.
            customer.term_end_date = customer.term_end_date + timedelta(days=int(notice.credit))
            customer.save(update_fields=["term_end_date", "updated_at"])
            notice.term_extended_at = timezone.now()
            fields.append("term_extended_at")
    notice.save(update_fields=fields)
    audit_record(action=AuditAction.SENT, via="outbox", notice=notice, count=1)


def _on_notice_sent(message: OutboundMessage) -> None:
    notice = CreditNotice.objects.select_for_update().filter(message=message).first()
    if notice is not None:
        _mark_sent(notice, message)


def _on_notices_sent(messages: list[OutboundMessage]) -> None:
    """Batch form of `_on_notice_sent`: the same rules, a few statements per batch.

    Locks the notices, then their customers (the order `_mark_sent` uses), and moves each
    customer's term once per day-credit notice whose term_extended_at is still empty:
    that field stays the once-only guard.
    """
    by_message = {m.pk: m for m in messages}
    notices = list(
        CreditNotice.objects.select_for_update()
        .filter(message_id__in=by_message)
        .exclude(state=NoticeState.SENT)
        .order_by("pk")
        .only("pk", "customer_id", "unit", "credit", "term_extended_at", "message_id")
    )
    if not notices:
        return
    now = timezone.now()
    day_credits: dict[int, int] = {}
    for notice in notices:
        if notice.unit == CreditNotice.Unit.DAYS and notice.term_extended_at is None:
            day_credits[notice.customer_id] = day_credits.get(notice.customer_id, 0) + int(notice.credit)
    # Lock the customers (after the notices, the order _mark_sent uses), then move each
    # term once: customers owed the same number of days share one UPDATE.
    with_term = set(
        Customer.objects.select_for_update()
        .filter(pk__in=day_credits, term_end_date__isnull=False)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    by_days: dict[int, list[int]] = {}
    for customer_id, days in day_credits.items():
        if customer_id in with_term:
            by_days.setdefault(days, []).append(customer_id)
    for days, customer_ids in by_days.items():
        Customer.objects.filter(pk__in=customer_ids).update(
            term_end_date=F("term_end_date") + timedelta(days=days), updated_at=now
        )
    ids = [n.pk for n in notices]
    CreditNotice.objects.filter(pk__in=ids).update(
        state=NoticeState.SENT,
        sent_at=Subquery(OutboundMessage.objects.filter(pk=OuterRef("message_id")).values("sent_at")[:1]),
        last_error="",
        updated_at=now,
    )
    extended = [
        n.pk
        for n in notices
        if n.unit == CreditNotice.Unit.DAYS and n.term_extended_at is None and n.customer_id in with_term
    ]
    if extended:
        # The once-only guard, set in the same transaction as the move.
        CreditNotice.objects.filter(pk__in=extended).update(term_extended_at=now)


def _on_notice_failed(message: OutboundMessage) -> None:
    notice = CreditNotice.objects.select_for_update().filter(message=message).first()
    if notice is None or notice.state in (NoticeState.SENT, NoticeState.CANCELLED):
        return
    notice.state = NoticeState.FAILED
    notice.last_error = message.last_error
    notice.save(update_fields=["state", "last_error", "updated_at"])


def register_outbox_handlers() -> None:
    outbox.outbox_register_handler(
        OUTBOX_PURPOSE,
        on_sent=_on_notice_sent,
        on_failed=_on_notice_failed,
        on_sent_batch=_on_notices_sent,
    )
