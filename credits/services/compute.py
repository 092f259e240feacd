"""Computing a month's credit notices for review: measure every eligible customer against
its policy (`credits.sla`), then create, refresh or remove computed notices. See
docs/adr/0007-sla-credits.md."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from itertools import groupby
from operator import attrgetter
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from core import roles
from credits import measured, selectors, sla, sla_measured
from credits.models import AuditAction, CreditAuditEntry, CreditNotice, Customer, NoticeState, SLAPolicy
from credits.services._common import Progress, chunks
from credits.services.audit import audit_record
from measurements import selectors as measured_selectors


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
    roles.check(actor, "credits.compute")
    month = _month(period)
    now = now or timezone.now()
    # A month that has not begun has no downtime to measure; refusing it also keeps the
    # calendar arithmetic away from the end of the calendar (9998-12 was a traceback).
    if (month.year, month.month) > (now.year, now.month):
        raise ValidationError({"period": f"{month} has not started yet."})
    summary = ComputeSummary(period=str(month))
    measure = _Measure.load(month, now)
    if measure is None:
        return summary
    batch = int(settings.CREDITS_COMPUTE_BATCH)
    with transaction.atomic():
        # Serialise concurrent runs (a double-clicked admin action) on the policy rows.
        list(SLAPolicy.objects.select_for_update().filter(pk__in=list(measure.policies)).values_list("pk"))
        _measure_all(measure, summary, batch=batch, progress=progress)
        summary.removed = _remove_stale(summary)
        audit_record(
            action=AuditAction.COMPUTED,
            actor=actor,
            via=via,
            period=summary.period,
            count=len(summary.notice_ids),
            detail=f"created {summary.created}, updated {summary.updated}, unchanged {summary.unchanged}, "
            f"removed {summary.removed}, past review {summary.kept_final}",
        )
        if progress and summary.customers_considered >= batch:
            progress(summary.customers_considered, summary.customers_considered)
    return summary


def credits_compute_closed_month(*, now: datetime | None = None) -> ComputeSummary | None:
    """The monthly automatic run (Celery beat, `run_periodic`): compute the month before
    `now`'s, as the system, for review. Nothing is approved or sent.

    Runs only once that month has ended in every policy's time zone (before that its
    figures would stop at `now`), and only if nobody computed it since it ended: a second
    run, or a run after Finance recomputed by hand, changes nothing and logs nothing.
    None when it did not run.
    """
    now = now or timezone.now()
    month = sla.Period.containing(now.astimezone(UTC).date()).previous()
    zones = set(SLAPolicy.objects.values_list("time_zone", flat=True))
    if not zones:
        return None
    ended = max(month.bounds(zone)[1] for zone in zones)
    if now < ended:
        return None
    if CreditAuditEntry.objects.filter(
        period=str(month), action=AuditAction.COMPUTED, at__gte=ended
    ).exists():
        return None
    return credits_compute(period=month, now=now, via="beat")


def _month(period: str | sla.Period) -> sla.Period:
    try:
        return sla.Period.parse(period) if isinstance(period, str) else period
    except ValueError as exc:
        raise ValidationError({"period": str(exc)}) from None


@dataclass
class _Measure:
    """The month's inputs, read once, and the results owed so far by (customer, policy)."""

    period: sla.Period
    now: datetime
    policies: dict[int, SLAPolicy]
    versions: dict[int, list[sla_measured.Version]]  # the versions ruling some day of the month
    windows: list[selectors.WindowRow]
    by_product: dict[int, list[selectors.WindowRow]]
    relatives: dict[int, frozenset[int]]
    # Many customers share an entitlement shape; the maths runs once per distinct
    # (policy, set of windows) and is reused.
    results: dict[tuple[int, frozenset[int]], sla_measured.VersionedResult] = field(default_factory=dict)
    owed: dict[tuple[int, int], sla_measured.VersionedResult] = field(default_factory=dict)
    # For policies counting measured downtime: (source, measured minutes, note) by
    # (customer, policy), and the month's Prometheus reads, shared.
    sources: dict[tuple[int, int], tuple[str, Decimal | None, str]] = field(default_factory=dict)
    measurer: measured.MonthMeasurer | None = None

    @classmethod
    def load(cls, period: sla.Period, now: datetime) -> _Measure | None:
        policies = selectors.policies_with_tiers()
        if not policies:
            return None
        versions = {
            pk: sla_measured.in_force(found, period, policies[pk].time_zone)
            for pk, found in selectors.policy_versions(policies).items()
        }
        bounds = [period.bounds(p.time_zone) for p in policies.values()]
        windows = selectors.windows_for_period(start=min(b[0] for b in bounds), end=max(b[1] for b in bounds))
        by_product: dict[int, list[selectors.WindowRow]] = {}
        for window in windows:
            by_product.setdefault(window.product_id, []).append(window)
        return cls(period, now, policies, versions, windows, by_product, selectors.location_relatives())

    def customer(self, customer_id: int, rows: Iterable[selectors.EntitlementRow]) -> None:
        """Measure one customer under each of its policies (each version for its days);
        keep what is owed."""
        rows = list(rows)
        for policy_id, ids in self._windows_by_policy(rows).items():
            versions = self.versions[policy_id]
            if any(v.source != sla_measured.SOURCE_DECLARED for v in versions):
                result = self._sourced(customer_id, policy_id, ids, rows)
            else:
                key = (policy_id, frozenset(ids))
                cached = self.results.get(key)
                if cached is None:
                    outages = [w.outage for w in self.windows if w.id in ids]
                    cached = self.results[key] = sla_measured.compute_versioned(
                        outages, versions, self.period, now=self.now
                    )
                result = cached
            if result.credit > 0:
                self.owed[(customer_id, policy_id)] = result

    def _sourced(
        self, customer_id: int, policy_id: int, ids: set[int], rows: list[selectors.EntitlementRow]
    ) -> sla_measured.VersionedResult:
        """The result under a policy counting measured downtime (or the larger of the
        two) on some of its versions' days; gaps in the measurement are filled with the
        declared windows."""
        zone = self.policies[policy_id].time_zone
        self.measurer = self.measurer or measured.MonthMeasurer(self.period, self.now, self.relatives)
        keys = sorted({(r.product_id, r.location_id) for r in rows if r.policy_id == policy_id}, key=str)
        readings: list[sla_measured.MeasuredResult | None] = []
        notes: set[str] = set()
        for version in self.versions[policy_id]:
            if version.source == sla_measured.SOURCE_DECLARED or version.definition is None:
                readings.append(None)
                continue
            reading, note = self.measurer.entitlements(keys, version.definition, zone)
            readings.append(reading)
            notes.update(n for n in note.split("; ") if n)
        result = sla_measured.compute_versioned(
            [w.outage for w in self.windows if w.id in ids],
            self.versions[policy_id],
            self.period,
            now=self.now,
            measured=readings,
        )
        name, minutes, _ = result.source()
        self.sources[(customer_id, policy_id)] = (name, minutes, "; ".join(sorted(notes)))
        return result

    def product_ids(self) -> set[int]:
        """The products whose customers may be owed: those with declared windows, and,
        when a policy counts measured downtime, those with an SLI source (measured
        downtime nobody declared is owed too)."""
        ids = set(self.by_product)
        if any(p.downtime_source != sla_measured.SOURCE_DECLARED for p in self.policies.values()):
            ids |= measured_selectors.measured_product_ids()
        return ids

    def _windows_by_policy(self, rows: Iterable[selectors.EntitlementRow]) -> dict[int, set[int]]:
        return selectors.windows_by_policy(rows, by_product=self.by_product, relatives=self.relatives)

    def store(self, summary: ComputeSummary) -> None:
        _store(
            self.owed,
            period=self.period,
            policies=self.policies,
            summary=summary,
            now=self.now,
            sources=self.sources,
        )
        self.owed.clear()
        self.sources.clear()


def _measure_all(
    measure: _Measure, summary: ComputeSummary, *, batch: int, progress: Progress | None
) -> None:
    entitlements = selectors.eligible_entitlements(product_ids=measure.product_ids())
    for customer_id, rows in groupby(entitlements, key=attrgetter("customer_id")):
        if summary.customers_considered and summary.customers_considered % batch == 0:
            # Bounded memory: write this page of customers and report.
            measure.store(summary)
            if progress:
                progress(summary.customers_considered, 0)
        measure.customer(customer_id, rows)
        summary.customers_considered += 1
    measure.store(summary)


def _remove_stale(summary: ComputeSummary) -> int:
    """Delete the month's computed notices nobody is owed any more (impact edited away).
    Compared in Python and deleted in chunks: an IN list of every notice would overflow
    SQLite's limit."""
    touched = set(summary.notice_ids)
    stale = [
        pk
        for pk in CreditNotice.objects.filter(period=summary.period, state=NoticeState.COMPUTED).values_list(
            "pk", flat=True
        )
        if pk not in touched
    ]
    for chunk in chunks(stale):
        CreditNotice.incidents.through.objects.filter(creditnotice_id__in=chunk).delete()
        CreditNotice.objects.filter(pk__in=chunk, state=NoticeState.COMPUTED).delete()
    return len(stale)


# --- Storing one batch of results -----------------------------------------------------------------

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
    "downtime_source",
    "measured_minutes",
    "measurement_note",
    "versions",
)

_Pending = list[tuple[CreditNotice, tuple[int, ...]]]  # a notice and the incidents it names


def _claim_deadline(period: sla.Period, policy: SLAPolicy) -> date:
    # Provisional, for review: the deadline a letter carries is set when it is approved
    # (claim_deadline_on), counted from the sending day, never from the month.
    last_day = date(period.next().year, period.next().month, 1) - timedelta(days=1)
    return last_day + timedelta(days=policy.claim_window_days)


def _versions_json(versioned: sla_measured.VersionedResult) -> list[dict[str, str]]:
    """The versions that applied: one, or several when the month spans a change."""
    return [
        {
            "effective_from": part.version.effective_from.isoformat(),
            "start": part.start.isoformat(),
            "end": part.end.isoformat(),
            "target": str(part.version.policy.target.normalize()),
            "downtime_minutes": str(part.result.downtime_minutes_rounded),
            "uptime_percent": str(part.result.uptime_percent_rounded),
            "tier_credit": str(part.result.credit.quantize(Decimal("0.01"))),
            "credit": str(part.credit.quantize(Decimal("0.01"))),
        }
        for part in versioned.parts
    ]


def _notice_values(
    *,
    versioned: sla_measured.VersionedResult,
    policy: SLAPolicy,
    customer_bill: Decimal | None,
    period: sla.Period,
    source: tuple[str, Decimal | None, str] | None = None,
) -> dict[str, Any]:
    start, end = period.bounds(policy.time_zone)
    name, measured_minutes, note = source or (sla_measured.SOURCE_DECLARED, None, "")
    result = versioned.as_result()
    return {
        "versions": _versions_json(versioned),
        "downtime_source": name,
        "measured_minutes": None if measured_minutes is None else measured_minutes.quantize(Decimal("0.01")),
        "measurement_note": note[:300],
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


def _store(
    owed: dict[tuple[int, int], sla_measured.VersionedResult],
    *,
    period: sla.Period,
    policies: dict[int, SLAPolicy],
    summary: ComputeSummary,
    now: datetime,
    sources: dict[tuple[int, int], tuple[str, Decimal | None, str]],
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
    linked = _linked_incidents([n.pk for n in existing.values()])
    to_create: _Pending = []
    to_update: _Pending = []
    for (customer_id, policy_id), versioned in owed.items():
        result = versioned.as_result()
        values = _notice_values(
            versioned=versioned,
            policy=policies[policy_id],
            customer_bill=bills.get(customer_id),
            period=period,
            source=sources.get((customer_id, policy_id)),
        )
        notice = existing.get((customer_id, policy_id))
        if notice is None:
            new = CreditNotice(
                customer_id=customer_id, policy_id=policy_id, period=label, computed_at=now, **values
            )
            to_create.append((new, result.incident_ids))
        elif _refresh(notice, values, result, linked=linked, summary=summary, now=now):
            to_update.append((notice, result.incident_ids))
    _insert(to_create, summary)
    _update(to_update, summary)


def _linked_incidents(notice_ids: list[int]) -> dict[int, set[int]]:
    linked: dict[int, set[int]] = {}
    for notice_id, incident_id in CreditNotice.incidents.through.objects.filter(
        creditnotice_id__in=notice_ids
    ).values_list("creditnotice_id", "incident_id"):
        linked.setdefault(notice_id, set()).add(incident_id)
    return linked


def _refresh(
    notice: CreditNotice,
    values: dict[str, Any],
    result: sla.SlaResult,
    *,
    linked: dict[int, set[int]],
    summary: ComputeSummary,
    now: datetime,
) -> bool:
    """Give an existing notice its new figures; False when it is left as it is."""
    summary.notice_ids.append(notice.pk)
    if notice.state != NoticeState.COMPUTED:
        # Past review: what staff approved (or what went out) is never rewritten.
        summary.kept_final += 1
        return False
    same_incidents = linked.get(notice.pk, set()) == set(result.incident_ids)
    if same_incidents and all(getattr(notice, k) == v for k, v in values.items()):
        summary.unchanged += 1
        return False
    for key, value in values.items():
        setattr(notice, key, value)
    notice.computed_at = now
    return True


def _insert(to_create: _Pending, summary: ComputeSummary) -> None:
    if not to_create:
        return
    through = CreditNotice.incidents.through
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


def _update(to_update: _Pending, summary: ComputeSummary) -> None:
    if not to_update:
        return
    through = CreditNotice.incidents.through
    CreditNotice.objects.bulk_update([n for n, _ in to_update], [*_COMPARED, "computed_at", "updated_at"])
    through.objects.filter(creditnotice__in=[n for n, _ in to_update]).delete()
    through.objects.bulk_create(
        [through(creditnotice_id=n.pk, incident_id=inc) for n, incs in to_update for inc in incs]
    )
    summary.updated += len(to_update)
