"""Writes of policy versions: a policy's terms changed from a date, and the newest
version kept in step with the policy row when its terms are edited in place. A change
that would reach into a month whose credit was already approved or sent is refused.
See docs/adr/0030-credits-from-measurements.md."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from core import roles
from credits import sla_measured
from credits.models import (
    POLICY_EPOCH,
    VERSIONED_TERMS,
    CreditNotice,
    CreditTier,
    NoticeState,
    SLAPolicy,
    SLAPolicyVersion,
    policy_terms,
)

# A notice in one of these states is the record of what was owed: its month is closed
# to policy changes.
COMMITTED = (NoticeState.APPROVED, NoticeState.QUEUED, NoticeState.SENT, NoticeState.FAILED)

Tiers = list[tuple[Decimal, Decimal]]


def _label(actor: AbstractBaseUser | None) -> str:
    return actor.get_username() if actor is not None else "system"


def _tiers_json(tiers: Tiers) -> list[list[str]]:
    ordered = sorted(tiers, key=lambda t: Decimal(t[0]), reverse=True)
    return [
        [str(Decimal(below).quantize(Decimal("0.001"))), str(Decimal(credit).quantize(Decimal("0.01")))]
        for below, credit in ordered
    ]


def _row_tiers(policy: SLAPolicy) -> Tiers:
    return [(t.below, t.credit) for t in CreditTier.objects.filter(policy=policy)]


def _day_start(policy: SLAPolicy, day: date) -> datetime:
    return sla_measured._day_start(day, policy.time_zone)


def refuse_committed(policy: SLAPolicy, *, start: date, end: date | None, field: str | None) -> None:
    """Refuse a change of terms ruling [start, end) (days in the policy's time zone) when
    a month it reaches already has an approved or sent credit under this policy."""
    lo = _day_start(policy, start)
    committed = CreditNotice.objects.filter(policy=policy, state__in=COMMITTED, period_end__gt=lo)
    if end is not None:
        committed = committed.filter(period_start__lt=_day_start(policy, end))
    last = committed.order_by("-period").values_list("period", flat=True).first()
    if last is None:
        return
    year, month = (int(part) for part in last.split("-"))
    after = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    message = (
        f"The credit for {last} under this policy has already been approved or sent; a change "
        f"from {start.isoformat()} would change it. Choose a day on or after {after.isoformat()}."
    )
    if field is None:
        # An edit in place: the terms as a whole, not one field, reach the month.
        raise ValidationError(message + " Add the new terms from that day on the policy's console page.")
    raise ValidationError({field: message})


def _newest(policy: SLAPolicy) -> SLAPolicyVersion | None:
    return SLAPolicyVersion.objects.filter(policy=policy).order_by("-effective_from").first()


def sync_newest(policy: SLAPolicy, *, actor: AbstractBaseUser | None = None) -> SLAPolicyVersion:
    """Write the row's terms and tiers into its newest version (the first one, from the
    epoch, if it has none). An edit in place amends the terms from that version's day,
    so it is refused where that reaches a month already approved or sent."""
    terms, tiers = policy_terms(policy), _tiers_json(_row_tiers(policy))
    newest = _newest(policy)
    if newest is None:
        return SLAPolicyVersion.objects.create(
            policy=policy, effective_from=POLICY_EPOCH, terms=terms, tiers=tiers, created_by=_label(actor)
        )
    if newest.terms == terms and newest.tiers == tiers:
        return newest
    refuse_committed(policy, start=newest.effective_from, end=None, field=None)
    newest.terms, newest.tiers = terms, tiers
    newest.save(update_fields=["terms", "tiers"])
    return newest


def _clean_terms(policy: SLAPolicy, terms: dict[str, Any], tiers: Tiers) -> None:
    """Check the terms as a policy row would be checked; errors name the fields."""
    shadow = SLAPolicy(name=policy.name, time_zone=policy.time_zone, unit=policy.unit)
    for name, value in terms.items():
        setattr(shadow, name, value)
    shadow.full_clean(exclude=["name"], validate_unique=False)
    if len({Decimal(below) for below, _ in tiers}) != len(tiers):
        raise ValidationError({"tiers": "Two tiers have the same threshold."})
    for below, credit in tiers:
        CreditTier(below=Decimal(below), credit=Decimal(credit)).full_clean(exclude=["policy"])


@transaction.atomic
def policy_add_version(
    *,
    policy: SLAPolicy,
    effective_from: date,
    changes: dict[str, Any],
    tiers: Tiers | None = None,
    actor: AbstractBaseUser | None = None,
) -> SLAPolicyVersion:
    """Change a policy's terms from `effective_from` (a day in its time zone): the
    version in force that day, with `changes` (and `tiers`, when given, as a whole),
    rules from then until the next version's day. Refused when that day already starts
    a version, when nothing changes, or when a month it reaches already has an approved
    or sent credit under this policy."""
    roles.check(actor, "policy.write")
    policy = SLAPolicy.objects.select_for_update().get(pk=policy.pk)
    unknown = set(changes) - set(VERSIONED_TERMS)
    if unknown:
        raise ValidationError(f"These terms do not change from a date: {', '.join(sorted(unknown))}.")
    versions = list(SLAPolicyVersion.objects.filter(policy=policy).order_by("effective_from"))
    if not versions:
        versions = [sync_newest(policy, actor=actor)]
    if effective_from <= POLICY_EPOCH or any(v.effective_from == effective_from for v in versions):
        raise ValidationError({"effective_from": "A version already starts on that day: choose another day."})
    before = [v for v in versions if v.effective_from < effective_from][-1]
    after = next((v for v in versions if v.effective_from > effective_from), None)
    terms = {**policy_terms(_as_row(policy, before)), **changes}
    new_tiers = tiers if tiers is not None else [(Decimal(b), Decimal(c)) for b, c in before.tiers]
    _clean_terms(policy, terms, new_tiers)
    row_terms = policy_terms(_as_row(policy, terms))
    if row_terms == before.terms and _tiers_json(new_tiers) == before.tiers:
        raise ValidationError("These are the terms already in force on that day: nothing would change.")
    refuse_committed(
        policy, start=effective_from, end=after.effective_from if after else None, field="effective_from"
    )
    version = SLAPolicyVersion.objects.create(
        policy=policy,
        effective_from=effective_from,
        terms=row_terms,
        tiers=_tiers_json(new_tiers),
        created_by=_label(actor),
    )
    if after is None:
        _mirror(policy, version)
    return version


def _as_row(policy: SLAPolicy, terms: SLAPolicyVersion | dict[str, Any]) -> SLAPolicy:
    values = terms.terms if isinstance(terms, SLAPolicyVersion) else terms
    row = SLAPolicy(name=policy.name, time_zone=policy.time_zone, unit=policy.unit)
    for name, value in values.items():
        setattr(row, name, _typed(name, value))
    return row


def _typed(name: str, value: Any) -> Any:
    field = SLAPolicy._meta.get_field(name)
    return field.to_python(value)  # type: ignore[union-attr]


def _mirror(policy: SLAPolicy, version: SLAPolicyVersion) -> None:
    """The row takes its newest version's terms and tiers."""
    row = _as_row(policy, version)
    for name in VERSIONED_TERMS:
        setattr(policy, name, getattr(row, name))
    policy.save()
    CreditTier.objects.filter(policy=policy).delete()
    CreditTier.objects.bulk_create(
        [CreditTier(policy=policy, below=Decimal(b), credit=Decimal(c)) for b, c in version.tiers]
    )
