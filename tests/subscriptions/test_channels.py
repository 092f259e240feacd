"""Slack, Microsoft Teams and Statuspage-shaped webhook subscribers.

Shapes are checked against the published formats:
- Slack Block Kit messages for incoming webhooks (https://api.slack.com/reference/block-kit/blocks):
  a top-level `text` fallback and `blocks`; each block has a known `type`; header text is
  plain_text of at most 150 characters; a section has `text` or `fields` (at most 10, each
  a text object of at most 2000 characters); context elements are text objects; buttons
  carry plain_text and a URL; mrkdwn escapes &, < and >.
- Teams incoming webhooks with an Adaptive Card (Microsoft's "Send Adaptive Cards using
  an Incoming Webhook"): `{"type": "message", "attachments": [{"contentType":
  "application/vnd.microsoft.card.adaptive", "contentUrl": null, "content": <AdaptiveCard>}]}`,
  the card with `$schema`, `type: AdaptiveCard`, a `version` and `body` elements of known types.
- Statuspage's subscriber webhook payload: `meta.unsubscribe`, `page.status_indicator` /
  `status_description`, `incident` with Statuspage's field names and `incident_updates`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client, TestCase

from incidents import services
from incidents.models import ImpactWindow, Incident
from outbox.models import OutboundMessage
from subscriptions.models import Subscriber
from tests.builders import make_location, utc
from tests.subscriptions.builders import make_subscriber
from tests.subscriptions.conftest import WebhookReceiver
from tests.subscriptions.test_webhooks import _verify

pytestmark = pytest.mark.django_db

SLACK_BLOCK_TYPES = {"header", "section", "context", "actions", "divider", "image", "rich_text", "markdown"}
SLACK_TEXT_TYPES = {"plain_text", "mrkdwn"}
CARD_ELEMENT_TYPES = {"TextBlock", "FactSet", "Container", "ColumnSet", "Image", "ActionSet", "RichTextBlock"}


def slack_problems(message: Any) -> list[str]:
    problems: list[str] = []
    if not isinstance(message.get("text"), str) or not message["text"]:
        problems.append("a top-level text fallback is required with blocks")
    blocks = message.get("blocks")
    if not isinstance(blocks, list) or not 0 < len(blocks) <= 50:
        return [*problems, "blocks must be a list of 1 to 50 blocks"]

    def text_object(obj: Any, where: str, *, plain: bool = False, limit: int = 3000) -> None:
        if not isinstance(obj, dict) or obj.get("type") not in SLACK_TEXT_TYPES:
            problems.append(f"{where} is not a text object")
            return
        if plain and obj["type"] != "plain_text":
            problems.append(f"{where} must be plain_text")
        if not isinstance(obj.get("text"), str) or not 0 < len(obj["text"]) <= limit:
            problems.append(f"{where}.text must be 1..{limit} characters")
        if set(obj) - {"type", "text", "emoji", "verbatim"}:
            problems.append(
                f"{where} has unknown keys {sorted(set(obj) - {'type', 'text', 'emoji', 'verbatim'})}"
            )

    for n, block in enumerate(blocks):
        where = f"blocks[{n}]"
        kind = block.get("type")
        if kind not in SLACK_BLOCK_TYPES:
            problems.append(f"{where}: unknown block type {kind!r}")
        elif kind == "header":
            text_object(block.get("text"), f"{where}.text", plain=True, limit=150)
        elif kind == "section":
            if "text" not in block and "fields" not in block:
                problems.append(f"{where}: a section needs text or fields")
            if "text" in block:
                text_object(block["text"], f"{where}.text")
            fields = block.get("fields", [])
            if len(fields) > 10:
                problems.append(f"{where}: at most 10 fields")
            for i, field in enumerate(fields):
                text_object(field, f"{where}.fields[{i}]", limit=2000)
        elif kind == "context":
            elements = block.get("elements") or []
            if not 0 < len(elements) <= 10:
                problems.append(f"{where}: a context has 1..10 elements")
            for i, element in enumerate(elements):
                text_object(element, f"{where}.elements[{i}]")
        elif kind == "actions":
            for i, element in enumerate(block.get("elements") or []):
                if element.get("type") != "button":
                    problems.append(f"{where}.elements[{i}] is not a button")
                text_object(element.get("text"), f"{where}.elements[{i}].text", plain=True, limit=75)
                if not str(element.get("url", "")).startswith(("http://", "https://")):
                    problems.append(f"{where}.elements[{i}] needs a URL")
    return problems


def teams_problems(message: Any) -> list[str]:
    problems: list[str] = []
    if message.get("type") != "message":
        problems.append("type must be 'message'")
    attachments = message.get("attachments")
    if not isinstance(attachments, list) or len(attachments) != 1:
        return [*problems, "one attachment expected"]
    attachment = attachments[0]
    if attachment.get("contentType") != "application/vnd.microsoft.card.adaptive":
        problems.append("contentType must be the Adaptive Card type")
    if "contentUrl" not in attachment or attachment["contentUrl"] is not None:
        problems.append("contentUrl must be null")
    card = attachment.get("content") or {}
    if card.get("type") != "AdaptiveCard":
        problems.append("content.type must be AdaptiveCard")
    if card.get("$schema") != "http://adaptivecards.io/schemas/adaptive-card.json":
        problems.append("content.$schema is the Adaptive Card schema")
    if card.get("version") not in {"1.0", "1.1", "1.2", "1.3", "1.4", "1.5"}:
        problems.append("content.version must be one Teams renders")
    for n, element in enumerate(card.get("body") or []):
        if element.get("type") not in CARD_ELEMENT_TYPES:
            problems.append(f"body[{n}]: unknown element {element.get('type')!r}")
        if element.get("type") == "TextBlock" and not isinstance(element.get("text"), str):
            problems.append(f"body[{n}]: a TextBlock needs text")
        if element.get("type") == "FactSet":
            for fact in element.get("facts") or []:
                if set(fact) != {"title", "value"} or not all(isinstance(v, str) for v in fact.values()):
                    problems.append(f"body[{n}]: facts are {{title, value}} strings")
    for n, action in enumerate(card.get("actions") or []):
        if action.get("type") != "Action.OpenUrl" or not action.get("url") or not action.get("title"):
            problems.append(f"actions[{n}] must be an Action.OpenUrl with title and url")
    return problems


def _open(product: Any, location: Any = None) -> Incident:
    # Subscribers are reached after the commit (one event row, expanded by a task).
    with TestCase.captureOnCommitCallbacks(execute=True):
        return _open_now(product, location)


def _open_now(product: Any, location: Any = None) -> Incident:
    return services.incident_open(
        title="Gmail <delays> & bounces",
        impact=Incident.Impact.MAJOR,
        started_at=utc(2026, 1, 24, 13, 2),
        body="We are investigating *delays* for <some> users.",
        windows=[
            services.WindowSpec(
                product=product,
                level=ImpactWindow.Level.PARTIAL_OUTAGE,
                started_at=utc(2026, 1, 24, 13, 2),
                location=location,
            )
        ],
    )


def _payload(subscriber: Subscriber) -> dict[str, Any]:
    row = OutboundMessage.objects.get(ref=subscriber.outbox_ref)
    assert row.channel == "webhook"
    assert row.secret == subscriber.secret  # signed like every webhook
    payload: dict[str, Any] = row.payload or {}
    return payload


@pytest.fixture
def hooks(gmail: Any) -> dict[str, Subscriber]:
    def hook(kind: str, url: str, **kw: Any) -> Subscriber:
        subscriber = make_subscriber("ops@example.com", kind=kind, url=url)
        for name, value in kw.items():
            setattr(subscriber, name, value)
        subscriber.save()
        return subscriber

    return {
        "slack": hook(Subscriber.Kind.SLACK, "https://hooks.slack.example/services/T0/B0/x"),
        "teams": hook(Subscriber.Kind.TEAMS, "https://example.webhook.office.example/webhookb2/x"),
        "statuspage": hook(
            Subscriber.Kind.WEBHOOK, "https://receiver.example/statuspage", payload_format="statuspage"
        ),
        "native": hook(Subscriber.Kind.WEBHOOK, "https://receiver.example/native"),
    }


def test_it_sends_slack_a_block_kit_message(hooks: dict[str, Subscriber], gmail: Any) -> None:
    incident = _open(gmail, make_location("us-east1"))
    message = _payload(hooks["slack"])
    assert slack_problems(message) == []
    assert message["text"] == "New incident: Gmail <delays> & bounces"
    header, facts, body, actions, context = message["blocks"]
    assert header["text"]["text"] == "New incident: Gmail <delays> & bounces"
    texts = [f["text"] for f in facts["fields"]]
    assert "*Affected products*\nGmail" in texts
    assert "*Regions*\nus-east1" in texts
    # mrkdwn control characters from user text are escaped, so no fake links or mentions.
    assert body["text"]["text"] == "We are investigating *delays* for &lt;some&gt; users."
    assert actions["elements"][0]["url"] == f"http://testserver/incidents/{incident.public_id}/"
    assert "|Unsubscribe>" in context["elements"][0]["text"]
    assert "/unsubscribe/" in context["elements"][0]["text"]


def test_it_sends_teams_an_adaptive_card(hooks: dict[str, Subscriber], gmail: Any) -> None:
    incident = _open(gmail)
    message = _payload(hooks["teams"])
    assert teams_problems(message) == []
    card = message["attachments"][0]["content"]
    assert card["body"][0]["text"] == "New incident: Gmail <delays> & bounces"
    facts = {f["title"]: f["value"] for f in card["body"][1]["facts"]}
    assert facts["Affected products"] == "Gmail" and facts["Impact"] == "Major"
    assert card["actions"][0]["url"] == f"http://testserver/incidents/{incident.public_id}/"
    assert "[Unsubscribe](http://testserver/unsubscribe/" in card["body"][-1]["text"]


def test_it_sends_statuspage_shaped_payloads_on_request(hooks: dict[str, Subscriber], gmail: Any) -> None:
    incident = _open(gmail)
    with TestCase.captureOnCommitCallbacks(execute=True):
        services.incident_post_update(incident=incident, status="monitoring", body="A fix is rolling out.")
    payloads: list[dict[str, Any]] = [
        row.payload or {}
        for row in OutboundMessage.objects.filter(ref=hooks["statuspage"].outbox_ref).order_by("id")
        if "incident" in (row.payload or {})  # not the component updates (test_statuspage_webhooks.py)
    ]
    assert len(payloads) == 2
    latest = payloads[-1]
    assert set(latest) == {"meta", "page", "incident"}
    assert latest["meta"]["unsubscribe"].startswith("http://testserver/unsubscribe/")
    assert latest["page"]["status_indicator"] in {"none", "minor", "major", "critical", "maintenance"}
    assert latest["page"]["status_description"] == "Partial System Outage"
    body = latest["incident"]
    for field in ("id", "name", "status", "impact", "created_at", "updated_at", "monitoring_at",
                  "resolved_at", "shortlink", "incident_updates", "components"):  # fmt: skip
        assert field in body, field
    assert body["status"] == "monitoring" and body["monitoring_at"] is not None
    assert [u["status"] for u in body["incident_updates"]] == ["monitoring", "investigating"]
    assert body["components"] == [{"id": gmail.public_id, "name": "Gmail"}]
    # The native webhook keeps our own document.
    native = OutboundMessage.objects.filter(ref=hooks["native"].outbox_ref).order_by("id").last()
    assert native is not None
    native_payload: dict[str, Any] = native.payload or {}
    assert native_payload["meta"]["event"] == "incident.updated"


def test_it_posts_chat_messages_through_the_signed_outbox_path(
    webhook_receiver: WebhookReceiver, gmail: Any, django_capture_on_commit_callbacks: Any
) -> None:
    slack = make_subscriber("ops@example.com", kind=Subscriber.Kind.SLACK, url=webhook_receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        _open(gmail)
    [request] = webhook_receiver.requests
    assert _verify(slack.secret, request.headers, request.body)
    assert slack_problems(json.loads(request.body)) == []
    assert OutboundMessage.objects.get(ref=slack.outbox_ref).state == "sent"


def test_it_subscribes_a_slack_channel_from_the_form(client: Client, gmail: Any, settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = True
    response = client.post(
        "/subscribe/",
        {
            "kind": "slack",
            "email": "ops@example.com",
            "url": "https://hooks.slack.com/services/T0/B0/x",
            "scope": "all",
        },
    )
    assert response.status_code == 302
    subscriber = Subscriber.objects.get()
    assert subscriber.kind == "slack" and subscriber.url == "https://hooks.slack.com/services/T0/B0/x"
    assert subscriber.payload_format == "native"
    missing = client.post("/subscribe/", {"kind": "teams", "email": "t@example.com", "scope": "all"})
    assert missing.status_code == 400
    assert Subscriber.objects.count() == 1


def test_it_refuses_products_ticked_under_all_products(client: Client, gmail: Any) -> None:
    response = client.post(
        "/subscribe/", {"kind": "email", "email": "a@example.com", "scope": "all", "products": [gmail.pk]}
    )
    assert response.status_code == 400
    assert "Only the products I choose" in response.content.decode()
    assert not Subscriber.objects.exists()
    assert not OutboundMessage.objects.exists()


def test_the_shape_checks_catch_broken_messages() -> None:
    assert slack_problems(
        {"blocks": [{"type": "header", "text": {"type": "mrkdwn", "text": "x" * 151}}]}
    ) == [
        "a top-level text fallback is required with blocks",
        "blocks[0].text must be plain_text",
        "blocks[0].text.text must be 1..150 characters",
    ]
    assert teams_problems({"type": "message", "attachments": [{"contentType": "x", "content": {}}]}) == [
        "contentType must be the Adaptive Card type",
        "contentUrl must be null",
        "content.type must be AdaptiveCard",
        "content.$schema is the Adaptive Card schema",
        "content.version must be one Teams renders",
    ]
