"""Writes of SLI sources (the console's /manage/sli/): each checked against the role
action `sli.manage` and validated whole before anything is saved."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from core import roles
from measurements import promql
from measurements.models import SliKind, SliSource

FIELDS = (
    "product",
    "location",
    "base_url",
    "kind",
    "errors_query",
    "valid_query",
    "error_rate_query",
    "label_selector",
    "enabled",
)


def _check(source: SliSource) -> None:
    errors: dict[str, str] = {}
    if not source.base_url.startswith(("http://", "https://")):
        errors["base_url"] = "Prometheus is read over http:// or https://."
    if problem := promql.selector_problem(source.label_selector):
        errors["label_selector"] = problem
    wanted = ("errors_query", "valid_query") if source.kind == SliKind.COUNTS else ("error_rate_query",)
    for name in wanted:
        if problem := promql.query_problem(getattr(source, name), source.label_selector):
            errors[name] = problem
    # The other kind's queries are not used: keep them empty, so what is shown is what runs.
    for name in {"errors_query", "valid_query", "error_rate_query"} - set(wanted):
        setattr(source, name, "")
    twins = SliSource.objects.filter(product_id=source.product_id, location=source.location)
    if source.product_id and twins.exclude(pk=source.pk).exists():
        errors["location"] = "This product already has a source for this location."
    if errors:
        raise ValidationError(errors)
    source.full_clean()


@transaction.atomic
def sli_source_save(
    *, actor: AbstractBaseUser | None, source: SliSource | None = None, **fields: Any
) -> SliSource:
    """Create (`source=None`) or edit a source. Raises ValidationError, saving nothing,
    on a bad URL, label selector or query, or a second source for one product and location."""
    roles.check(actor, "sli.manage")
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ValidationError(f"Unknown fields: {', '.join(sorted(unknown))}.")
    source = SliSource.objects.select_for_update().get(pk=source.pk) if source else SliSource()
    for name, value in fields.items():
        setattr(source, name, value.strip() if isinstance(value, str) else value)
    _check(source)
    try:
        with transaction.atomic():
            source.save()
    except IntegrityError:
        raise ValidationError({"location": "This product already has a source for this location."}) from None
    return source


@transaction.atomic
def sli_source_delete(*, actor: AbstractBaseUser | None, source: SliSource) -> None:
    roles.check(actor, "sli.manage")
    SliSource.objects.filter(pk=source.pk).delete()
