"""What each hook subscriber receives for one event: Slack Block Kit, a Teams Adaptive
Card, our own event document or Statuspage's subscriber payload. Every message goes
through the outbox webhook path and carries the signed unsubscribe link; Slack and Teams
messages are in the subscriber's language, generic documents are data.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from core.site import page_id
from core.text import site_title
from incidents.models import Incident, IncidentUpdate
from incidents.selectors import status_summary
from subscriptions import emails
from subscriptions.models import Subscriber

if TYPE_CHECKING:
    from subscriptions.notifications import EventMessage

# Block Kit limits (https://api.slack.com/reference/block-kit/blocks).
SLACK_HEADER_MAX = 150
SLACK_SECTION_MAX = 3000
SLACK_FIELD_MAX = 2000
SLACK_FIELDS_MAX = 10
ADAPTIVE_CARD_VERSION = "1.4"
ADAPTIVE_CARD_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
STATUSPAGE_DOCUMENTATION = "https://support.atlassian.com/statuspage/docs/enable-webhook-notifications/"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def slack_escape(text: str) -> str:
    """Slack mrkdwn treats &, < and > as control characters (links, mentions)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _facts(message: EventMessage) -> list[tuple[str, str]]:
    ctx = message.context
    # str(): the context's labels and times are lazy, and the message is JSON.
    facts = [(_("Status"), str(ctx["status_label"]))]
    if not ctx["is_maintenance"]:
        facts.append((_("Impact"), str(ctx["impact_label"])))
    if ctx["products"]:
        facts.append((_("Affected products"), ", ".join(p.name for p in ctx["products"])))
    if ctx.get("locations"):
        facts.append((_("Regions"), ", ".join(loc.label for loc in ctx["locations"])))
    if ctx["is_maintenance"]:
        facts.append(
            (
                _("Scheduled"),
                _("%(start)s to %(end)s") % {"start": ctx["scheduled_for"], "end": ctx["scheduled_until"]},
            )
        )
    else:
        facts.append((_("Started"), str(ctx["started"])))
        if ctx["resolved"]:
            facts.append((_("Resolved"), str(ctx["resolved"])))
    return facts


def _body_text(message: EventMessage) -> str:
    ctx = message.context
    update: IncidentUpdate | None = ctx["update"]
    if update is not None:
        return update.body
    if ctx["report"] is not None:
        return ctx["report"].summary
    return ctx["incident"].summary or ""


def _title(message: EventMessage) -> str:
    return _("%(label)s: %(title)s") % {
        "label": message.context["headline"],
        "title": message.context["incident"].title,
    }


def slack_message(message: EventMessage, *, unsubscribe_url: str) -> dict[str, Any]:
    ctx = message.context
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _clip(_title(message), SLACK_HEADER_MAX)}},
        {
            "type": "section",
            "fields": [
                {"type": "mrkdwn", "text": _clip(f"*{label}*\n{slack_escape(value)}", SLACK_FIELD_MAX)}
                for label, value in _facts(message)[:SLACK_FIELDS_MAX]
            ],
        },
    ]
    body = _body_text(message)
    if body:
        blocks.append(
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": _clip(slack_escape(body), SLACK_SECTION_MAX)},
            }
        )
    blocks.append(
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": _("View on the status page")},
                    "url": str(ctx["incident_url"]),  # in the channel's language
                    "action_id": "view-incident",
                }
            ],
        }
    )
    blocks.append(
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": f"{slack_escape(site_title(settings.SITE_NAME))} · <{unsubscribe_url}|{_('Unsubscribe')}>",
                }
            ],
        }
    )
    # `text` is what notifications and screen readers get when blocks are present.
    return {"text": _title(message), "blocks": blocks}


def teams_message(message: EventMessage, *, unsubscribe_url: str) -> dict[str, Any]:
    ctx = message.context
    body: list[dict[str, Any]] = [
        {"type": "TextBlock", "text": _title(message), "size": "Large", "weight": "Bolder", "wrap": True},
        {"type": "FactSet", "facts": [{"title": label, "value": value} for label, value in _facts(message)]},
    ]
    text = _body_text(message)
    if text:
        body.append({"type": "TextBlock", "text": text, "wrap": True})
    body.append(
        {
            "type": "TextBlock",
            "text": f"{site_title(settings.SITE_NAME)} · [{_('Unsubscribe')}]({unsubscribe_url})",
            "size": "Small",
            "isSubtle": True,
            "wrap": True,
        }
    )
    card = {
        "$schema": ADAPTIVE_CARD_SCHEMA,
        "type": "AdaptiveCard",
        "version": ADAPTIVE_CARD_VERSION,
        "body": body,
        "actions": [
            {"type": "Action.OpenUrl", "title": _("View on the status page"), "url": str(ctx["incident_url"])}
        ],
    }
    return {
        "type": "message",
        "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": None, "content": card}
        ],
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _statuspage_base(message: EventMessage) -> dict[str, Any]:
    """The subscriber-independent part, built once per event (not once per recipient)."""
    cached = message.context.get("_statuspage_base")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    incident: Incident = message.context["incident"]
    banner = status_summary(now=timezone.now()).banner
    updates = list(incident.updates.order_by("-display_at", "-id"))
    monitoring = [u for u in updates if u.status == Incident.Status.MONITORING]
    base = {
        "page": {
            "id": page_id(),  # the id /api/v2/ documents carry
            "status_indicator": banner.indicator,
            "status_description": banner.description,
        },
        "incident": {
            "id": incident.public_id,
            "name": incident.title,
            "status": incident.status,
            "impact": incident.impact,
            "created_at": _iso(incident.created_at),
            "updated_at": _iso(incident.updated_at),
            "started_at": _iso(incident.started_at),
            "monitoring_at": _iso(monitoring[-1].display_at if monitoring else None),
            "resolved_at": _iso(incident.resolved_at),
            "scheduled_for": _iso(incident.scheduled_for),
            "scheduled_until": _iso(incident.scheduled_until),
            "shortlink": message.payload["incident"]["shortlink"],
            "incident_updates": [
                {
                    "id": str(u.pk),
                    "incident_id": incident.public_id,
                    "status": u.status,
                    "body": u.body,
                    "created_at": _iso(u.created_at),
                    "updated_at": _iso(u.created_at),
                    "display_at": _iso(u.display_at),
                }
                for u in updates
            ],
            "components": [{"id": p.public_id, "name": p.name} for p in message.context["products"]],
        },
    }
    message.context["_statuspage_base"] = base
    return base


def statuspage_payload(message: EventMessage, *, unsubscribe_url: str) -> dict[str, Any]:
    """Statuspage's incident webhook shape: what its subscribers' receivers parse."""
    base = _statuspage_base(message)
    return {
        "meta": {"unsubscribe": unsubscribe_url, "documentation": STATUSPAGE_DOCUMENTATION},
        "page": base["page"],
        "incident": base["incident"],
    }


def payload_for(subscriber: Subscriber, message: EventMessage) -> dict[str, Any]:
    """The JSON one hook subscriber receives for `message`."""
    unsubscribe_url = emails.subscriber_links(subscriber)["unsubscribe_url"]
    if subscriber.kind == Subscriber.Kind.SLACK:
        with translation.override(subscriber.language):
            return slack_message(message, unsubscribe_url=unsubscribe_url)
    if subscriber.kind == Subscriber.Kind.TEAMS:
        with translation.override(subscriber.language):
            return teams_message(message, unsubscribe_url=unsubscribe_url)
    if subscriber.payload_format == Subscriber.Format.STATUSPAGE:
        return statuspage_payload(message, unsubscribe_url=unsubscribe_url)
    return message.payload
