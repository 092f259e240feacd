"""Staff writes of alert intake's configuration: integrations (name, secret, debounce) and
their mapping rules from labels to product, location and impact.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from alerts.models import (
    Alert,
    AlertGroup,
    Integration,
    MappingRule,
    ReceivedPayload,
    new_secret,
    secret_hash,
)
from alerts.parsers import CONTROL_CHARS
from core import roles
from core.errors import InUse
from incidents.models import ImpactLevel, IncidentImpact, Location, Product


def _clean_name(name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise ValidationError({"name": "Give the integration a name."})
    if CONTROL_CHARS.search(name):
        raise ValidationError({"name": "Control characters are not allowed."})
    return name[:100]


# A secret a caller chooses: one line of visible ASCII, long enough not to be guessed at once.
_GIVEN_SECRET = re.compile(r"^[\x21-\x7e]{16,128}$")

INTEGRATION_EDITABLE_FIELDS = frozenset(
    {"name", "is_active", "flap_debounce_seconds", "reopen_within_minutes"}
)


@transaction.atomic
def integration_create(
    *,
    name: str,
    kind: str,
    default_product: Product,
    default_level: str = ImpactLevel.PARTIAL_OUTAGE,
    default_impact: str = IncidentImpact.MINOR,
    flap_debounce_seconds: int = 300,
    reopen_within_minutes: int = 24 * 60,
    is_active: bool = True,
    secret: str = "",
    actor: User | None = None,
) -> Integration:
    """A new integration with a fresh secret (shown once, as `issued_secret`) and its default
    rule. `secret` gives the secret instead (the demo's published token): no form offers it."""
    roles.check(actor, "alerts.manage")
    if kind not in Integration.Kind.values:
        raise ValidationError({"kind": f"Unknown kind {kind!r}."})
    if secret and not _GIVEN_SECRET.match(secret):
        raise ValidationError({"secret": "A given secret is 16 to 128 visible characters."})
    name = _clean_name(name)
    if Integration.objects.filter(name=name).exists():
        raise ValidationError({"name": "An integration with this name exists."})
    integration = Integration(
        name=name,
        kind=kind,
        flap_debounce_seconds=flap_debounce_seconds,
        reopen_within_minutes=reopen_within_minutes,
        is_active=is_active,
    )
    _issue_secret(integration, given=secret)
    integration.save()
    rule_save(
        integration=integration,
        is_default=True,
        product=default_product,
        level=default_level,
        impact=default_impact,
        actor=actor,
    )
    return integration


@transaction.atomic
def integration_update(
    *, integration: Integration, changes: dict[str, Any], actor: User | None = None
) -> Integration:
    roles.check(actor, "alerts.manage")
    unknown = set(changes) - INTEGRATION_EDITABLE_FIELDS
    if unknown:
        raise ValidationError(f"These fields cannot be edited here: {', '.join(sorted(unknown))}.")
    integration = Integration.objects.select_for_update().get(pk=integration.pk)
    if "name" in changes:
        changes = {**changes, "name": _clean_name(changes["name"])}
        if Integration.objects.filter(name=changes["name"]).exclude(pk=integration.pk).exists():
            raise ValidationError({"name": "An integration with this name exists."})
    for name, value in changes.items():
        setattr(integration, name, value)
    if changes:
        integration.save(update_fields=[*changes, "updated_at"])
    return integration


@transaction.atomic
def integration_delete(*, integration: Integration, actor: User | None = None) -> None:
    """Delete an integration that never sent anything (its rules go with it). One with
    alerts, alert groups (their incidents) or kept payloads is refused (InUse):
    deactivate it instead (`is_active` false), which stops its intake and keeps its history."""
    roles.check(actor, "alerts.manage")
    integration = Integration.objects.select_for_update().get(pk=integration.pk)
    history = (
        Alert.objects.filter(integration=integration).exists()
        or AlertGroup.objects.filter(integration=integration).exists()
        or ReceivedPayload.objects.filter(integration=integration).exists()
    )
    if history:
        raise InUse(
            f"The integration {integration.name!r} has received alerts, which its incidents refer to: "
            "it cannot be deleted. Set is_active to false to stop its intake."
        )
    integration.delete()


def _issue_secret(integration: Integration, *, given: str = "") -> None:
    """A fresh secret (or the one given), readable once as `issued_secret`: only a bearer
    token's hash is kept."""
    issued = given or new_secret()
    if integration.kind == Integration.Kind.GENERIC:
        integration.secret, integration.secret_hash = issued, ""
    else:
        integration.secret, integration.secret_hash = "", secret_hash(issued)
    integration.issued_secret = issued


@transaction.atomic
def integration_rotate_secret(*, integration: Integration, actor: User | None = None) -> Integration:
    """A new secret, shown once (as `issued_secret` on the result); the old one stops working."""
    roles.check(actor, "alerts.manage")
    integration = Integration.objects.select_for_update().get(pk=integration.pk)
    _issue_secret(integration)
    integration.save(update_fields=["secret", "secret_hash", "updated_at"])
    return integration


_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,99}$")


def clean_matchers(value: Any) -> dict[str, str]:
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise ValidationError(
            {"matchers": 'Give an object of label names to values, e.g. {"service": "storage"}.'}
        )
    cleaned = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _LABEL_NAME.match(key):
            raise ValidationError({"matchers": f"{str(key)[:40]!r} is not a label name."})
        if not isinstance(item, str) or CONTROL_CHARS.search(item) or len(item) > 200:
            raise ValidationError({"matchers": f"The value of {key!r} must be one line of text."})
        cleaned[key] = item
    return cleaned


def _clean_rule_matchers(matchers: Any, *, is_default: bool) -> dict[str, str]:
    cleaned = clean_matchers(matchers)
    if is_default and cleaned:
        raise ValidationError({"matchers": "The default rule matches every alert: leave its matchers empty."})
    if not is_default and not cleaned:
        raise ValidationError(
            {"matchers": "Say which labels this rule matches (or make it the default rule)."}
        )
    return cleaned


def _clean_location_labels(location_labels: str) -> list[str]:
    names = [n.strip() for n in (location_labels or "").split(",") if n.strip()]
    for name in names:
        if not _LABEL_NAME.match(name):
            raise ValidationError({"location_labels": f"{name[:40]!r} is not a label name."})
    return names


def _check_default(integration: Integration, rule: MappingRule | None, *, is_default: bool) -> None:
    """Exactly one default rule per integration: no second one, and none taken away."""
    others = MappingRule.objects.filter(integration=integration, is_default=True)
    if rule is not None:
        others = others.exclude(pk=rule.pk)
    if is_default and others.exists():
        raise ValidationError({"is_default": "This integration already has a default rule."})
    if rule is not None and rule.is_default and not is_default:
        raise ValidationError({"is_default": "Keep a default rule: make another rule the default first."})


@transaction.atomic
def rule_save(
    *,
    integration: Integration,
    product: Product | None,
    rule: MappingRule | None = None,
    is_default: bool = False,
    matchers: Any = None,
    location: Location | None = None,
    location_labels: str = "zone,region",
    level: str = ImpactLevel.PARTIAL_OUTAGE,
    impact: str = IncidentImpact.MINOR,
    auto_publish_after_minutes: int | None = None,
    position: int = 0,
    actor: User | None = None,
) -> MappingRule:
    """Create or change a mapping rule; one default per integration, which matches anything."""
    roles.check(actor, "alerts.manage")
    if product is None:
        raise ValidationError({"product": "Choose the product this rule maps to."})
    if level not in ImpactLevel.values:
        raise ValidationError({"level": f"Unknown impact level {level!r}."})
    if impact not in IncidentImpact.values:
        raise ValidationError({"impact": f"Unknown impact {impact!r}."})
    cleaned = _clean_rule_matchers(matchers, is_default=is_default)
    names = _clean_location_labels(location_labels)
    _check_default(integration, rule, is_default=is_default)
    rule = rule or MappingRule(integration=integration)
    rule.is_default = is_default
    rule.matchers = cleaned
    rule.product = product
    rule.location = location
    rule.location_labels = ",".join(names)
    rule.level = level
    rule.impact = impact
    rule.auto_publish_after_minutes = auto_publish_after_minutes
    rule.position = position
    rule.save()
    return rule


@transaction.atomic
def rule_delete(*, rule: MappingRule, actor: User | None = None) -> None:
    roles.check(actor, "alerts.manage")
    if rule.is_default:
        raise ValidationError("The default rule cannot be deleted: every alert needs somewhere to go.")
    MappingRule.objects.filter(pk=rule.pk).delete()
