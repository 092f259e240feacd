"""Applying one alert payload: each event is decided (`decide`), then carried out (`apply`).

Design and the rules an event follows: docs/adr/0008-alert-intake.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from alerts import parsers, wording
from alerts.models import Alert, Integration, ReceivedPayload
from alerts.parsers import AlertEvent, PayloadError
from alerts.services.apply import execute, location_text, public_words
from alerts.services.decide import decide
from edge.counters import counter_add
from incidents.models import ImpactLevel


@dataclass
class IntakeResult:
    payload_id: int
    outcomes: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"payload": self.payload_id, "alerts": self.outcomes}


def _escape_nul(text: str) -> str:
    # PostgreSQL text holds no NUL: kept as the JSON escape, so the payload is still there
    # to debug and reads as what was sent.
    return text.replace("\x00", "\\u0000")


def _keep(
    integration: Integration, *, body: bytes, remote_addr: str, status: int, outcome: str, now: datetime
) -> ReceivedPayload:
    # Counted once the payload's row is committed (a rolled-back intake was not received).
    kind = integration.kind
    transaction.on_commit(lambda: counter_add("alert_payloads", kind=kind, status=str(status)))
    return ReceivedPayload.objects.create(
        integration=integration,
        received_at=now,
        remote_addr=_escape_nul(remote_addr[:64]),
        status_code=status,
        body=_escape_nul(body.decode("utf-8", errors="replace")),
        outcome=_escape_nul(outcome),
    )


def _ordered(events: Iterable[AlertEvent]) -> list[AlertEvent]:
    # Earliest first, so the first alert of a group opens its draft (and names it).
    return sorted(events, key=lambda e: (e.starts_at, e.fingerprint))


def alerts_receive(
    *, integration: Integration, body: bytes, remote_addr: str = "", now: datetime | None = None
) -> IntakeResult:
    """Apply one payload. Raises PayloadError (kept, and answered 400) when malformed."""
    now = now or timezone.now()
    try:
        events = parsers.parse_payload(integration.kind, body)
    except PayloadError as exc:
        _keep(integration, body=body, remote_addr=remote_addr, status=400, outcome=str(exc), now=now)
        raise
    try:
        with transaction.atomic():
            locked = Integration.objects.select_for_update().get(pk=integration.pk)
            rules = list(locked.rules.select_related("product", "location"))
            outcomes = []
            for event in _ordered(events):
                # No row yet is fine: the integration lock above already serialises
                # this sender's payloads, so nobody else can insert this fingerprint now.
                alert = (
                    Alert.objects.select_for_update(of=("self",))
                    .select_related("group__incident", "window")
                    .filter(integration=locked, fingerprint=event.fingerprint)
                    .first()
                )
                decision = decide(locked, rules, event, alert)
                saved = execute(locked, event, decision, alert, now)
                outcomes.append(
                    {
                        "fingerprint": event.fingerprint,
                        "status": event.status,
                        "action": decision.action,
                        "reason": decision.reason,
                        "incident": saved.group.incident.public_id
                        if saved.group_id and saved.group
                        else None,
                    }
                )
            kept = _keep(
                locked,
                body=body,
                remote_addr=remote_addr,
                status=200,
                outcome="\n".join(f"{o['fingerprint']}: {o['action']}: {o['reason']}" for o in outcomes),
                now=now,
            )
    except ValidationError as exc:
        message = "; ".join(exc.messages)
        _keep(integration, body=body, remote_addr=remote_addr, status=400, outcome=message, now=now)
        raise PayloadError(f"The alerts could not be applied: {message}") from exc
    return IntakeResult(payload_id=kept.pk, outcomes=outcomes)


def integration_preview(*, integration: Integration, body: bytes) -> list[str]:
    """What a payload would do, in words, without writing anything (the admin's test page)."""
    try:
        events = parsers.parse_payload(integration.kind, body)
    except PayloadError as exc:
        return [f"Refused (400): {exc}"]
    if not events:
        return ["The payload is valid but holds no alerts: nothing would change."]
    rules = list(integration.rules.select_related("product", "location"))
    opened: set[str] = set()
    lines = []
    for event in _ordered(events):
        alert = (
            Alert.objects.select_related("group__incident", "window")
            .filter(integration=integration, fingerprint=event.fingerprint)
            .first()
        )
        decision = decide(integration, rules, event, alert)
        label = event.title or event.fingerprint
        if decision.action == "open" and event.group_key in opened:
            lines.append(f"{label} ({event.status}): would join the draft opened above.")
            continue
        text = f"{label} ({event.status}): would {decision.action}: {decision.reason}"
        mapping = decision.mapping
        if mapping is not None and decision.action in ("open", "join", "reopen", "flap"):
            text += (
                f". Impact: {ImpactLevel(mapping.level).label} on {mapping.product.name}"
                f"{location_text(mapping)} from {event.starts_at:%Y-%m-%d %H:%M:%S} UTC"
            )
        if decision.action == "open":
            opened.add(event.group_key)
            assert mapping is not None
            text += f"; public title “{wording.public_title(**public_words(mapping))}”"
        lines.append(text + ".")
    return lines
