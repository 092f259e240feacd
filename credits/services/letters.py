"""What approving reads: a chunk of notices, locked, as plain values, and the letters
they need (one render per distinct letter; see `emails.CreditNoticeRenderer`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, NamedTuple

from django.db.models import F, QuerySet

from core import bulk
from credits import emails
from credits.models import CreditNotice, CustomerEntitlement, SLAPolicy
from incidents.models import Incident


class NoticeRow(NamedTuple):
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
    downtime_source: str
    measured_minutes: Decimal | None
    versions: list[dict[str, str]]
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
    *NoticeRow._fields[:16],
    "customer__name",
    "customer__billing_emails",
    "customer__language",
    "customer__term_end_date",
    "customer__currency",
    "customer__policy_id",
)

_STARTED = emails.INCIDENT_FIELDS.index("started_at")

_Entitlement = tuple[int, int | None, int | None]  # product, location, policy


@dataclass
class Chunk:
    """A chunk of notices, locked, with what their letters read, as plain values."""

    rows: list[NoticeRow]
    policies: dict[int, SLAPolicy]
    incidents: dict[int, tuple[tuple[Any, ...], ...]]  # notice id -> INCIDENT_FIELDS, by start
    entitlements: dict[int, list[_Entitlement]]  # customer id -> rows


def _incident_links(notice_ids: list[int]) -> dict[int, list[int]]:
    """The ids of the incidents each notice names, by notice id (one query)."""
    links: dict[int, list[int]] = {}
    through = CreditNotice.incidents.through
    for notice_id, incident_id in through.objects.filter(
        bulk.AnyOf(F("creditnotice_id"), notice_ids)
    ).values_list("creditnotice_id", "incident_id"):
        links.setdefault(notice_id, []).append(incident_id)
    return links


def lock_chunk(chunk: list[int]) -> Chunk:
    """The notices of `chunk`, locked, as values: no model instance per notice (building
    them, and reading a letter's facts through them, cost more than everything else)."""
    rows = [
        NoticeRow._make(values)
        for values in CreditNotice.objects.select_for_update(of=("self",))
        .filter(bulk.AnyOf(F("pk"), chunk))
        .order_by("pk")
        .values_list(*_ROW_COLUMNS)
    ]
    policies = SLAPolicy.objects.in_bulk({n.policy_id for n in rows})
    return Chunk(
        rows=rows,
        policies=policies,
        incidents=_incident_facts(_incident_links(chunk)),
        entitlements=_entitlement_rows({n.customer_id for n in rows}),
    )


def _incident_facts(links: dict[int, list[int]]) -> dict[int, tuple[tuple[Any, ...], ...]]:
    """Per notice, the INCIDENT_FIELDS of the incidents it names, by start. Notices naming
    the same incidents share one tuple."""
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
    return incidents


def _entitlement_rows(customer_ids: set[int]) -> dict[int, list[_Entitlement]]:
    entitlements: dict[int, list[_Entitlement]] = {}
    for customer_id, product_id, location_id, policy_id in CustomerEntitlement.objects.filter(
        bulk.AnyOf(F("customer_id"), customer_ids)
    ).values_list("customer_id", "product_id", "location_id", "policy_id"):
        entitlements.setdefault(customer_id, []).append((product_id, location_id, policy_id))
    return entitlements


def _cached(queryset: QuerySet[Any], rows: list[Any]) -> QuerySet[Any]:
    # A queryset that already holds its rows, as prefetch_related leaves one: iterating
    # it costs nothing, and anything else (values_list, filter) queries as it says.
    queryset._result_cache = rows
    queryset._prefetch_done = True  # type: ignore[attr-defined]
    return queryset


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


def _key(n: NoticeRow, chunk: Chunk, policy: tuple[Any, ...], deadline: date) -> tuple[Any, ...]:
    return emails.letter_key(
        policy=policy,
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
        measured=(n.downtime_source, n.measured_minutes, emails.versions_key(n.versions)),
        claim_deadline=deadline,
        term_extended=n.term_extended_at is not None,
        computed_at=n.computed_at,
        incidents=chunk.incidents.get(n.pk, ()),
        entitlements=chunk.entitlements.get(n.customer_id, ()),
    )


def letters(
    chunk: Chunk,
    to_queue: list[NoticeRow],
    deadlines: dict[int, date],
    renderer: emails.CreditNoticeRenderer,
) -> tuple[list[tuple[Any, ...]], dict[int, CreditNotice]]:
    """The letter key of each notice to queue (computed from the chunk's values), with the
    renderer taught every new one; and, loaded, the notices whose letter is rendered per
    notice (none with today's subject)."""
    policy_facts = {
        pk: tuple(getattr(policy, f) for f in emails.POLICY_FIELDS) for pk, policy in chunk.policies.items()
    }
    keys = [_key(n, chunk, policy_facts[n.policy_id], deadlines[n.policy_id]) for n in to_queue]
    first: dict[tuple[Any, ...], int] = {}
    for n, key in zip(to_queue, keys, strict=True):
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
