"""Acceptance (issue 31): the subscribers resource, driven by the client generated from
the live schema (tests/api/flows/subscribers.py), type-checked with the other flows."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from api import services as api_services
from outbox.models import OutboundMessage
from subscriptions.models import Subscriber
from tests.api.test_generated_client import _type_check_flows, generated_client

__all__ = ["generated_client"]  # the fixture, used by name


def test_the_generated_client_manages_subscribers(
    generated_client: Path, live_server: Any, alice: User, settings: Any
) -> None:
    # The flow's webhook is a closed loopback port: allowed here, refused in production.
    settings.WEBHOOK_ALLOW_PRIVATE = True
    settings.WEBHOOK_ALLOW_HTTP = True
    _type_check_flows(generated_client)

    key = api_services.api_key_create(user=alice, name="subscribers flow", scope="write").raw
    importlib.import_module("flows.subscribers").run(live_server.url, key)

    # Both subscribers are gone; the test event was queued, signed with a whsec_ secret.
    assert not Subscriber.objects.exists()
    test_event = OutboundMessage.objects.get(payload__meta__event="test")
    assert test_event.secret.startswith("whsec_")
    assert test_event.url.endswith("/status-hook")
