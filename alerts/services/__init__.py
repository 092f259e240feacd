"""Writes of alert intake, by responsibility (design: docs/adr/0008-alert-intake.md).

credentials: who may send; intake: apply a payload (decide, then act); ticks: timed
auto-resolution and auto-publication, the staff publish of a draft, the payload purge;
rules: the staff's integrations and mapping rules.
"""

from __future__ import annotations

from alerts.parsers import PayloadError
from alerts.services.credentials import IntakeUnauthorized, integration_authenticate, signature_for
from alerts.services.intake import alerts_receive, integration_preview
from alerts.services.rules import (
    integration_create,
    integration_delete,
    integration_rotate_secret,
    integration_update,
    rule_delete,
    rule_save,
)
from alerts.services.ticks import alert_draft_publish, alerts_tick, payloads_purge

__all__ = [
    "IntakeUnauthorized",
    "PayloadError",
    "alert_draft_publish",
    "alerts_receive",
    "alerts_tick",
    "integration_authenticate",
    "integration_create",
    "integration_delete",
    "integration_preview",
    "integration_rotate_secret",
    "integration_update",
    "payloads_purge",
    "rule_delete",
    "rule_save",
    "signature_for",
]
