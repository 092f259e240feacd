"""Shared message bodies: alike emails stored once, each message built with its own fills,
byte for byte what Django builds (but the MIME boundary)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from outbox import delivery, services
from outbox.models import MessageBody, MessageState, OutboundMessage
from tests.outbox.smtp import SmtpSink

pytestmark = pytest.mark.django_db

MARK = "name-mark-0a1b2c"
BODY = services.SharedBody(
    subject="Your SLA credit for September 2009",
    text=f"Dear {MARK},\n\nYou are owed 3 days.\n",
    html=f"<p>Dear {MARK},</p><p>You are owed 3 days.</p>",
)


def _spec(i: int, name: str, **kw: Any) -> services.SharedEmailSpec:
    params: dict[str, Any] = {
        "key": f"shared-{i}",
        "to": [f"billing{i}@example.com"],
        "body": BODY,
        "fills": {MARK: name},
        "purpose": "test",
        "ref": f"ref:{i}",
    }
    params.update(kw)
    return services.SharedEmailSpec(**params)


def _boundaryless(raw: bytes) -> bytes:
    found = re.search(rb'boundary="([^"]+)"', raw)
    assert found is not None
    raw = raw.replace(found.group(1), b"BOUNDARY")
    return re.sub(rb"^Date: [^\r\n]*", b"Date: X", raw, flags=re.MULTILINE)


NAMES = ["Acme", "O'Brien & <Sons>", "Zoë Ltd", 'Quote "and" \\slash']


def test_it_stores_one_body_for_alike_emails_and_fills_each() -> None:
    services.messages_enqueue_many([_spec(i, name) for i, name in enumerate(NAMES)])
    # A later run with the same letter reuses the row.
    services.messages_enqueue_many([_spec(9, "Later")])
    assert MessageBody.objects.count() == 1
    body = MessageBody.objects.get()
    assert (body.subject, body.text, body.html) == (BODY.subject, BODY.text, BODY.html)
    messages = {m.ref: m for m in OutboundMessage.objects.all()}
    assert len(messages) == 5
    subject, text, html = messages["ref:1"].content()
    assert subject == BODY.subject
    assert text == "Dear O'Brien & <Sons>,\n\nYou are owed 3 days.\n"
    assert html == "<p>Dear O&#x27;Brien &amp; &lt;Sons&gt;,</p><p>You are owed 3 days.</p>"
    assert all(m.subject == m.body_text == m.body_html == "" for m in messages.values())


UTF8_BODY = services.SharedBody(
    subject="Votre crédit SLA", text=f"Chère {MARK},\n\nTrois jours.\n", html=f"<p>Chère {MARK},</p>"
)


def test_it_builds_the_same_bytes_as_django_but_the_boundary() -> None:
    services.messages_enqueue_many(
        [_spec(i, name) for i, name in enumerate(NAMES)]
        + [_spec(10 + i, name, body=UTF8_BODY) for i, name in enumerate(NAMES)]
    )
    shortcuts = 0
    for message in OutboundMessage.objects.select_related("body"):
        letter = delivery._letter(message)
        assert letter is not None
        name = message.fills[MARK]
        built = delivery._fill_letter(letter, message)
        # A non-ASCII name in an all-ASCII (7bit) letter would change its encoding:
        # Django builds that one.
        assert (built is not None) == (name.isascii() or message.body.text != BODY.text)  # type: ignore[union-attr]
        shortcuts += built is not None
        fast = delivery.email_bytes(message)
        slow = delivery._envelope(delivery.build_email(message))
        assert fast[0] == slow[0] and fast[1] == slow[1]
        assert _boundaryless(fast[2]) == _boundaryless(slow[2])
        assert message.message_id.encode() in fast[2]
    assert shortcuts == 2 * len(NAMES) - 1


def test_it_falls_back_to_django_where_the_shortcut_would_differ() -> None:
    long_name = "x" * 1200  # a line over 998 characters: Django re-encodes the part
    services.messages_enqueue_many(
        [
            _spec(1, long_name),
            _spec(2, "Acme", headers={"List-Id": "<credits.example.com>"}),
            _spec(3, "Acme", to=[f"{'a' * 70}@example.com"]),  # a To header Django would fold
        ]
    )
    for message in OutboundMessage.objects.select_related("body"):
        sender, rcpts, raw = delivery.email_bytes(message)
        slow = delivery._envelope(delivery.build_email(message))
        assert (sender, rcpts) == slow[:2]
        assert _boundaryless(raw) == _boundaryless(slow[2])


def test_it_refuses_a_bad_shared_email_as_a_whole() -> None:
    with pytest.raises(ValidationError):
        services.messages_enqueue_many([_spec(1, "Acme"), _spec(2, "Bad", to=["not an address"])])
    with pytest.raises(ValidationError):
        services.messages_enqueue_many([_spec(1, "Line\nbreak", body=services.SharedBody(f"Hi {MARK}", "t"))])
    assert OutboundMessage.objects.count() == MessageBody.objects.count() == 0


def test_it_delivers_shared_bodies_once_each(smtp: SmtpSink, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        services.messages_enqueue_many([_spec(i, name) for i, name in enumerate(NAMES)])
    received = smtp.handler.wait_for(len(NAMES))
    assert len(received) == len(NAMES)
    by_rcpt = {r.rcpt_tos[0]: r for r in received}
    for i, name in enumerate(NAMES):
        got = by_rcpt[f"billing{i}@example.com"]
        assert got.message["Subject"] == BODY.subject
        text = got.message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
        assert f"Dear {name}," in text
    assert set(OutboundMessage.objects.values_list("state", flat=True)) == {MessageState.SENT}


def test_enqueue_many_names_the_row_of_each_key_new_or_queued_before() -> None:
    first = services.messages_enqueue_many([_spec(1, "Acme")])
    both = services.messages_enqueue_many([_spec(1, "Acme"), _spec(2, "Zed")])
    assert set(both) == {_spec(1, "Acme").key, _spec(2, "Zed").key}
    for key, queued in both.items():
        row = OutboundMessage.objects.get(idempotency_key=key)
        assert queued == services.Queued(row.pk, row.message_id, row.state)
    assert both[_spec(1, "Acme").key] == first[_spec(1, "Acme").key]
    assert OutboundMessage.objects.count() == 2
